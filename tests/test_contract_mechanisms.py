"""The scale every public release reports, against closed forms written out here.

Nothing below is imported from the package's privacy layer: each expected scale is computed from
the papers' formulas in this file (2021 Thm 1–3, 2022 Thm 1–2, 2023 Thm 3–4, Balle & Wang 2018,
Dwork & Roth 2014 Thm A.1), so a change of any ε → σ rule, factor 2 or sensitivity bound in the
library fails here. The certified sensitivities carry a small public slack (optimisation accuracy
and float error, ≤ 1e-5 relative here): the reported values must be at least the closed form and
within that slack above it.
"""

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from manifold_dp import Euclidean, Hyperbolic, KendallShape2D, Sphere, SPDAffineInvariant, SPDLogEuclidean, private_frechet_mean
from manifold_dp.privacy import private_frechet_variance

SLACK = 1e-5  # relative: the certified slack of these configurations is far below it
EPS = 0.7


def h_of(r, kappa):
    """Strong convexity of F on B_r: 2r√κ cot(2r√κ) (κ > 0), 1 otherwise."""
    if kappa <= 0:
        return 1.0
    a = 2 * r * math.sqrt(kappa)
    return a / math.tan(a)


def tight_L(r, kappa):
    """Rauch: Lipschitz constant of log over B_r, 2r√κ / sin(2r√κ) (κ > 0), 1 otherwise."""
    if kappa <= 0:
        return 1.0
    a = 2 * r * math.sqrt(kappa)
    return a / math.sin(a)


def laplace_delta(r, n, kappa):
    return 2 * r * tight_L(r, kappa) / (n * h_of(r, kappa))


def kng_delta(r, n, kappa):
    return 2 * r * tight_L(r, kappa) / n


def analytic_gaussian(eps, delta, sens):
    """Balle & Wang 2018 Thm 8: the σ with Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) = δ."""
    f = lambda s: norm.cdf(sens / (2 * s) - eps * s / sens) - math.exp(eps) * norm.cdf(-sens / (2 * s) - eps * s / sens) - delta
    return brentq(f, 1e-6 * sens, 1e3 * sens, xtol=1e-15 * sens)


def records(m, n, spread, rng=0):
    return m.random_point(m.origin, spread, size=n, rng=rng)


CERTIFIED_ACCURACY = 1e-6  # README: the mean is certified within max(1e-6·Δ, 1e-10·r) (+ float error) of the minimiser


def check(cert, sens, scale, slack_included=True):
    """``slack_included``: the computed mean's certified error must be in Δ, twice (both datasets)."""
    low = (1 + 2 * CERTIFIED_ACCURACY) if slack_included else 1.0
    assert sens * low <= cert.sensitivity <= sens * (1 + SLACK)
    assert scale * low <= cert.scale <= scale * (1 + SLACK)


# (manifold, radius, κmax for the bound): unrestricted Laplace on homogeneous spaces, σ = Δ/ε
UNRESTRICTED = {
    "sphere": (Sphere(2), 0.4, 1.0),
    "sphere-R2": (Sphere(3, radius=2.0), 0.5, 0.25),
    "kendall": (KendallShape2D(5), 0.3, 4.0),
    "hyperbolic": (Hyperbolic(2), 0.5, -1.0),
    "spd-ai": (SPDAffineInvariant(2), 0.8, 0.0),
    "spd-le": (SPDLogEuclidean(2), 0.8, 0.0),
    "euclidean": (Euclidean(3), 1.0, 0.0),
}


@pytest.mark.parametrize("name", list(UNRESTRICTED))
def test_unrestricted_laplace_scale_is_delta_over_epsilon(name):
    m, r, kappa = UNRESTRICTED[name]
    n = 40
    cert = private_frechet_mean(records(m, n, 0.8 * r), m, center=m.origin, radius=r, epsilon=EPS, rng=0).certificate
    sens = laplace_delta(r, n, kappa)
    check(cert, sens, sens / EPS)
    assert cert.mechanism == "laplace" and cert.delta == 0.0


@pytest.mark.parametrize("name", ["sphere", "hyperbolic", "spd-ai", "euclidean"])
def test_restricted_laplace_scale_is_twice_delta_over_epsilon(name):
    m, r, kappa = UNRESTRICTED[name]
    n = 40
    cert = private_frechet_mean(records(m, n, 0.8 * r), m, center=m.origin, radius=r, epsilon=EPS, restrict=True, rng=0).certificate
    sens = laplace_delta(r, n, kappa)
    check(cert, sens, 2 * sens / EPS)
    assert cert.restriction.startswith("B_r")


def test_non_integrable_laplace_falls_back_to_twice_delta_over_epsilon():
    """H²: the unrestricted law needs σ < 1/(d − 1) = 1; here Δ/ε = 2·1.5/(2·0.7) > 1."""
    m, r, n = Hyperbolic(2), 1.5, 2
    cert = private_frechet_mean(records(m, n, r), m, center=m.origin, radius=r, epsilon=EPS, rng=0).certificate
    sens = 2 * r / n
    assert sens / EPS >= 1.0
    check(cert, sens, 2 * sens / EPS)


@pytest.mark.parametrize("name", ["sphere", "kendall", "spd-ai", "euclidean"])
def test_kng_scale_is_twice_its_gradient_sensitivity_over_epsilon(name):
    m, r, kappa = UNRESTRICTED[name]
    n = 40
    cert = private_frechet_mean(records(m, n, 0.8 * r), m, center=m.origin, radius=r, epsilon=EPS, mechanism="kng", rng=0).certificate
    sens = kng_delta(r, n, kappa)
    # KNG's density is ∇F itself (no slack), except on a flat space, where it is the Laplace around the mean
    check(cert, sens, 2 * sens / EPS, slack_included=kappa == 0.0 and name == "euclidean")
    assert cert.mechanism == "kng"


@pytest.mark.parametrize("calibration", ["analytic", "classical"])
@pytest.mark.parametrize("m", [SPDLogEuclidean(3), Euclidean(2)])
def test_tangent_gaussian_scale(calibration, m):
    r, n, delta = 1.0, 50, 1e-6
    cert = private_frechet_mean(records(m, n, r), m, center=m.origin, radius=r, epsilon=EPS, delta=delta,
                                mechanism="tangent_gaussian", calibration=calibration, rng=0).certificate
    sens = 2 * r / n
    scale = analytic_gaussian(EPS, delta, sens) if calibration == "analytic" else sens * math.sqrt(2 * math.log(1.25 / delta)) / EPS
    check(cert, sens, scale)
    assert cert.delta == delta


def test_ambient_mechanism_scales():
    s, r, n = Sphere(2), 0.5, 30
    X = records(s, n, r)
    chord = 2 * math.sin(r / 2)
    sens = 2 * chord / n
    lap = private_frechet_mean(X, s, center=s.origin, radius=r, epsilon=EPS, mechanism="ambient_laplace", rng=0).certificate
    assert lap.scale == pytest.approx(sens / EPS, rel=1e-12)
    coord = private_frechet_mean(X, s, center=s.origin, radius=r, epsilon=EPS, mechanism="coordinate_laplace", rng=0).certificate
    assert coord.scale == pytest.approx(math.sqrt(3) * sens / EPS, rel=1e-12)
    gauss = private_frechet_mean(X, s, center=s.origin, radius=r, epsilon=EPS, delta=1e-5, mechanism="ambient_gaussian", rng=0).certificate
    assert gauss.scale == pytest.approx(analytic_gaussian(EPS, 1e-5, sens), rel=1e-9)
    spd = SPDAffineInvariant(2)
    c = np.diag([2.0, 0.5])
    cert = private_frechet_mean(records(spd, n, 0.5) @ np.eye(2), spd, center=c, radius=0.6, epsilon=EPS,
                                mechanism="ambient_laplace", rng=0).certificate
    assert cert.scale == pytest.approx(2 * 2.0 * math.expm1(0.6) / n / EPS, rel=1e-12)  # λmax(c)(e^r − 1), 2021 Prop. 1


def test_pure_release_reports_no_delta():
    s = Sphere(2)
    cert = private_frechet_mean(records(s, 20, 0.3), s, center=s.origin, radius=0.4, epsilon=EPS, delta=1e-5, rng=0).certificate
    assert cert.delta == 0.0 and cert.mechanism == "laplace"


def test_variance_scale_is_four_r_squared_over_n_epsilon():
    s, r, n = Sphere(2), 0.4, 50
    rel = private_frechet_variance(records(s, n, r), s, center=s.origin, radius=r, epsilon=EPS, rng=0)
    sens = 4 * r * r / n
    check(rel.certificate, sens, sens / EPS, slack_included=False)
    assert rel.certificate.sensitivity > sens  # the optimisation slack 2a(4r + a) is in
    assert 0.0 <= rel.value <= r * r
