"""A space declares its Laplace sampler as an object (``manifolds.capabilities.LaplaceSampler``):
the mechanisms, the certificate and the Gaussian calibration ask that object, so a space brings
its own sampler without any edit of ``privacy/``. Here a Euclidean space with a sampler of its own
(the radial one, counting its calls and reporting another name) goes through the whole path."""

from dataclasses import dataclass, field

import numpy as np

from manifold_dp import Euclidean
from manifold_dp.manifolds.capabilities import LaplaceSampler
from manifold_dp.privacy import measurements
from manifold_dp.privacy.mechanisms import RiemannianGaussian, RiemannianLaplace, ball_sampler_applies
from manifold_dp.privacy.radial_sampler import RadialSampler

CALLS: list[str] = []


@dataclass(frozen=True)
class CountingSampler(RadialSampler):
    name: str = "counting"
    description: str = "the radial law, counted"
    ball: bool = field(default=False)

    def supports_ball(self, manifold):
        return self.ball

    def draw(self, manifold, eta, sigma, n, rng, rho_max):
        CALLS.append("draw")
        return super().draw(manifold, eta, sigma, n, rng, rho_max)

    def single_draw(self, manifold, kept, eta, constants, rng):
        CALLS.append("single")
        return super().single_draw(manifold, kept, eta, constants, rng)

    def gaussian_draw(self, manifold, eta, sigma, n, rng):
        CALLS.append("gaussian")
        return super().gaussian_draw(manifold, eta, sigma, n, rng)


COUNTING = CountingSampler()


@dataclass(frozen=True)
class CountedPlane(Euclidean):
    @property
    def laplace_sampler(self):
        return COUNTING


def test_a_declared_sampler_is_the_one_the_mechanisms_use():
    m = CountedPlane(2)
    assert isinstance(m.laplace_sampler, LaplaceSampler)
    CALLS.clear()
    law = RiemannianLaplace(m, 0.5)
    one = law.sample(np.zeros(2), rng=1)
    many = law.sample(np.zeros(2), size=5, rng=2)
    gauss = RiemannianGaussian(m, 0.5).sample(np.zeros(2), size=3, rng=3)
    assert CALLS == ["single", "draw", "gaussian"]
    assert one.shape == (2,) and many.shape == (5, 2) and gauss.shape == (3, 2)
    # the same draws as the default sampler, seed for seed: the object only routes them
    plain = RiemannianLaplace(Euclidean(2), 0.5)
    assert np.array_equal(one, plain.sample(np.zeros(2), rng=1))
    assert np.array_equal(many, plain.sample(np.zeros(2), size=5, rng=2))


def test_the_certificate_and_the_ball_sampler_read_the_object():
    m = CountedPlane(2)
    assert not ball_sampler_applies(m) and ball_sampler_applies(Euclidean(2))
    measurement = measurements.laplace(m, 0.1, 1.0)
    assert "the radial law, counted" in measurement.sampler
