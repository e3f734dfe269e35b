"""Exponential-wrapped mechanisms: noise in the tangent space at the public centre, mapped back
with exp, on Hadamard manifolds. The tangent noise's radius against its closed-form law (KS,
α = 1e-6, fixed seeds) at d = 2 and d ≥ 50, the 1-Lipschitz property of log_b the sensitivity rests
on, refusals, the pipeline's scale. Their closed-form scales, events and audits (with power checks):
test_contract_mechanisms.py."""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import brentq

from manifold_dp import Hyperbolic, KendallShape2D, SPDAffineInvariant, Sphere, private_frechet_mean
from manifold_dp.privacy import measurements

ALPHA = 1e-6
N_DRAWS = 20_000


def analytic_gaussian(eps, delta, sens):
    """Balle & Wang 2018 Thm 8, solved here: Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) = δ."""
    f = lambda s: (stats.norm.cdf(sens / (2 * s) - eps * s / sens)
                   - math.exp(eps) * stats.norm.cdf(-sens / (2 * s) - eps * s / sens) - delta)
    return brentq(f, 1e-6 * sens, 1e3 * sens, xtol=1e-15 * sens)


SPACES = [Hyperbolic(2), Hyperbolic(60), SPDAffineInvariant(2), SPDAffineInvariant(10)]  # d = 2, 60, 3, 55


@pytest.mark.parametrize("m", SPACES, ids=repr)
@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_tangent_radius_law(m, kind):
    # ‖log_b(x) − log_b(η)‖_b ~ Gamma(d, σ) (ℓ2 K-norm, Laplace) or σ·χ_d (Gaussian), and the
    # direction is uniform: (1 + cos θ)/2 ~ Beta((d−1)/2, (d−1)/2) against a fixed unit tangent
    rng = np.random.default_rng(m.dim + len(kind))
    b = m.exp(m.origin, 0.5 * m.random_unit_tangent(m.origin, rng=rng))
    eta = m.exp(b, 0.4 * m.random_unit_tangent(b, rng=rng))
    meas = measurements.wrapped(m, kind, 0.1, 1.0, 1e-5 if kind == "gaussian" else None, base=b)
    sigma, d = meas.scale, m.dim
    x = meas.sample(eta, N_DRAWS, rng=rng)
    z = m.log(b, x) - m.log(b, eta)
    r = m.norm(b, z)
    law = stats.gamma(d, scale=sigma) if kind == "laplace" else stats.chi(d, scale=sigma)
    assert stats.kstest(r, law.cdf).pvalue > ALPHA
    e = m.random_unit_tangent(b, rng=rng)
    cos = m.inner(b, z, e) / r
    assert stats.kstest((1 + cos) / 2, stats.beta(0.5 * (d - 1), 0.5 * (d - 1)).cdf).pvalue > ALPHA


@pytest.mark.parametrize("m", [Hyperbolic(2), Hyperbolic(20), SPDAffineInvariant(2), SPDAffineInvariant(4)], ids=repr)
def test_log_is_one_lipschitz_on_hadamard_spaces(m):
    # the sensitivity argument: ‖log_b x − log_b y‖_b ≤ ρ(x, y) (exp_b does not shrink distances)
    rng = np.random.default_rng(m.dim)
    b = m.exp(m.origin, 0.7 * m.random_unit_tangent(m.origin, rng=rng))
    lengths = lambda top: rng.uniform(0, top, (500,) + (1,) * len(m.point_shape))
    x = m.exp(b, lengths(3.0) * m.random_unit_tangent(b, size=500, rng=rng))
    y = m.exp(x, lengths(2.0) * m.random_unit_tangent(x, rng=rng))
    gap = m.norm(b, m.log(b, x) - m.log(b, y))
    assert np.all(gap <= m.dist(x, y) * (1 + 1e-9) + 1e-12)
    assert np.any(gap < 0.9 * m.dist(x, y))  # and curvature makes it strictly smaller somewhere


@pytest.mark.parametrize("m", [Sphere(2), Sphere(5, radius=2.0), KendallShape2D(4)], ids=repr)
@pytest.mark.parametrize("mechanism", ["wrapped_laplace", "wrapped_gaussian"])
def test_positive_curvature_is_refused_with_parameters_only(m, mechanism):
    X = m.random_point(m.origin, 0.1, size=10, rng=0)
    with pytest.raises(ValueError, match="non-positively curved") as err:
        private_frechet_mean(X, m, center=m.origin, radius=0.2, epsilon=1.0, delta=1e-5, mechanism=mechanism)
    assert "curvature bounds" in str(err.value) and repr(m) in str(err.value)
    for value in np.asarray(X).ravel()[:5]:
        assert f"{value:.6g}" not in str(err.value)
    with pytest.raises(ValueError, match="non-positively curved"):
        measurements.wrapped(m, mechanism.split("_")[1], 0.1, 1.0, 1e-5, base=m.origin)


@pytest.mark.parametrize("kw, match", [
    (dict(mechanism="wrapped_gaussian", delta=None), "delta is required"),
    (dict(mechanism="wrapped_gaussian", delta=1.5), "delta must be"),
    (dict(mechanism="wrapped_laplace", epsilon=0.0), "epsilon must be"),
    (dict(mechanism="wrapped_gaussian", epsilon=-2.0), "epsilon must be"),
])
def test_bad_budgets_are_refused(kw, match):
    m = Hyperbolic(2)
    X = m.random_point(m.origin, 0.3, size=20, rng=0)
    with pytest.raises(ValueError, match=match):
        private_frechet_mean(X, m, **(dict(center=m.origin, radius=0.5, epsilon=1.0, delta=1e-5) | kw))
    with pytest.raises(ValueError, match="kind must be"):
        measurements.wrapped(m, "cauchy", 0.1, 1.0, base=m.origin)


def test_release_through_the_pipeline():
    # the sensitivity is the certified Fréchet mean's, 2r/n on a Hadamard space (plus its public slack)
    m = SPDAffineInvariant(3)
    X = m.random_point(m.origin, 0.5, size=300, rng=0)
    for mechanism, delta in (("wrapped_laplace", None), ("wrapped_gaussian", 1e-6)):
        rel = private_frechet_mean(X, m, center=m.origin, radius=0.8, epsilon=2.0, delta=delta, mechanism=mechanism, rng=1)
        assert rel.certificate.mechanism == mechanism and m.check_point(rel.point)[0]
        assert rel.delta == (delta or 0.0) and m.dist(rel.point, m.origin) < 1.0
        assert 2 * 0.8 / 300 <= rel.sensitivity <= 2 * 0.8 / 300 * (1 + 1e-5)
        expected = rel.sensitivity / 2.0 if delta is None else analytic_gaussian(2.0, delta, rel.sensitivity)
        assert rel.scale == pytest.approx(expected, rel=2e-8)  # the δ curve is raised by 1e-7 (DELTA_FLOAT_ERROR)
