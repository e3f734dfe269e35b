"""Shared fixtures: one instance of each of the six manifolds, and points near a base point."""

import pytest

from manifold_dp import Euclidean, Hyperbolic, KendallShape2D, Sphere, SPDAffineInvariant, SPDLogEuclidean

MANIFOLDS = {
    "euclidean": Euclidean(3),
    "sphere": Sphere(3),
    "sphere_r2": Sphere(2, radius=2.0),
    "hyperbolic": Hyperbolic(3),
    "spd_ai": SPDAffineInvariant(3),
    "spd_le": SPDLogEuclidean(3),
    "kendall": KendallShape2D(5),
}


@pytest.fixture(params=list(MANIFOLDS), ids=list(MANIFOLDS))
def manifold(request):
    return MANIFOLDS[request.param]


def base_point(m, rng):
    """A generic (not the origin) point of ``m``."""
    return m.random_point(m.origin, 0.5 * min(1.0, m.assumption_radius), rng=rng)


def near_points(m, center, n, rng, radius=None):
    radius = 0.9 * min(1.0, m.assumption_radius) if radius is None else radius
    return m.random_point(center, radius, size=n, rng=rng)
