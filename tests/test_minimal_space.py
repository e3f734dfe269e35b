"""A new space writes the geometry (``manifolds.geometry.Geometry``) and claims nothing else: the
defaults of the other layers (capabilities, float64 model, record passes) carry a private release.
Here the plane ``R²`` written from scratch, checked against the library's ``Euclidean(2)``."""

from dataclasses import dataclass

import numpy as np

from manifold_dp import Euclidean, private_frechet_mean
from manifold_dp.manifolds.base import Manifold
from manifold_dp.manifolds.geometry import Geometry


@dataclass(frozen=True)
class Plane(Manifold):
    dim = 2
    point_shape = (2,)
    curvature_bounds = (0.0, 0.0)
    homogeneous = True  # the one capability it claims: translations act transitively
    injectivity_radius = np.inf
    origin = property(lambda self: np.zeros(2))

    def exp(self, x, v):
        return np.asarray(x, float) + np.asarray(v, float)

    def log(self, x, y):
        return np.asarray(y, float) - np.asarray(x, float)

    def inner(self, x, u, v):
        return np.sum(np.asarray(u) * np.asarray(v), axis=-1)

    def _checks(self, x, atol):
        return []

    def project(self, x):
        return np.asarray(x, float)

    def random_unit_tangent(self, x, size=None, *, rng=None):
        g = np.random.default_rng(rng).standard_normal(self._out_shape(x, size) + (2,))
        return g / np.linalg.norm(g, axis=-1, keepdims=True)


def test_the_geometry_alone_releases_a_private_mean():
    m = Plane()
    assert isinstance(m, Geometry) and m.laplace_sampler.radial and m.assumption_radius == np.inf
    X = np.random.default_rng(0).uniform(-0.5, 0.5, size=(200, 2))
    release = private_frechet_mean(X, m, center=np.zeros(2), radius=1.0, epsilon=1.0, rng=7)
    reference = private_frechet_mean(X, Euclidean(2), center=np.zeros(2), radius=1.0, epsilon=1.0, rng=7)
    # the same law and scale as R² (up to the certified mean's slack, which the flat chart spares)
    assert np.isclose(release.certificate.scale, reference.certificate.scale, rtol=1e-9)
    assert np.allclose(release.point, reference.point, atol=1e-6)


def test_a_space_that_does_not_claim_homogeneity_gets_the_footpoint_dependent_scale():
    @dataclass(frozen=True)
    class Unclaimed(Plane):
        homogeneous = False  # the default: a new space that says nothing

    X = np.random.default_rng(0).uniform(-0.5, 0.5, size=(200, 2))
    claimed = private_frechet_mean(X, Plane(), center=np.zeros(2), radius=1.0, epsilon=1.0, rng=7)
    unclaimed = private_frechet_mean(X, Unclaimed(), center=np.zeros(2), radius=1.0, epsilon=1.0, rng=7)
    assert Manifold.homogeneous is False
    assert np.isclose(unclaimed.certificate.scale, 2.0 * claimed.certificate.scale, rtol=1e-9)  # σ = 2Δ/ε
