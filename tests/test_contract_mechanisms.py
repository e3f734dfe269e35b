"""The mechanism contract. First the scale every public release reports, against closed forms
written out here.

No expected scale below is read from the package's privacy layer: each is computed from
the papers' formulas in this file (2021 Thm 1–3, 2022 Thm 1–2, 2023 Thm 3–4, Balle & Wang 2018,
Dwork & Roth 2014 Thm A.1), so a change of any ε → σ rule, factor 2 or sensitivity bound in the
library fails here. The certified sensitivities carry a small public slack (optimisation accuracy
and float error, ≤ 1e-5 relative here): the reported values must be at least the closed form and
within that slack above it.

The rest of the mechanism contract runs over every name in ``privacy.release.MECHANISMS`` (a new
mechanism fails ``test_every_mechanism_has_a_contract_case`` until it is added to ``CASES``): the
accountant event a release charges, a KS test of the sampler against its closed-form law on a flat
space (α = 1e-6, fixed seeds), and the audit of the public path on every audit scenario — at
reduced size here, with a power check across ten seeds in the slow suite (each ε lower bound holds
with 99 % confidence: Clopper–Pearson, held-out selection).
"""

import json
import math
import zlib
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import brentq
from scipy.stats import norm

import manifold_dp
from manifold_dp import (
    Euclidean,
    Hyperbolic,
    KendallShape2D,
    PrivacyAccountant,
    SPDAffineInvariant,
    SPDLogEuclidean,
    Sphere,
    private_frechet_mean,
)
from manifold_dp.audit import SCENARIOS, Scenario, audit, power_check
from manifold_dp.privacy import measurements, private_frechet_variance
from manifold_dp.privacy.accounting import gaussian_dp_event, pure_dp_event
from manifold_dp.privacy.release import GAUSSIAN_MECHANISMS, MECHANISMS

SLACK = 1e-5  # relative: the certified slack of these configurations is far below it
EPS = 0.7
ALPHA = 1e-6  # significance of every KS test below
N_DRAWS = 20_000


def h_of(r, kappa):
    """Strong convexity of F on B_r: 2r√κ cot(2r√κ) (κ > 0), 1 otherwise."""
    if kappa <= 0:
        return 1.0
    a = 2 * r * math.sqrt(kappa)
    return a / math.tan(a)


SPREAD_TABLE = json.loads((Path(manifold_dp.__file__).parent / "experiments" / "sphere_spread_table.json").read_text())


def proven_spread(r, kappa):
    """The sphere's proven spread constant (docs/theory.md §3): ``min r_j·C_j/(r√κ)`` over the table's
    radii ``r_j ≥ r√κ`` (each proven at ``π·num/den·(1 + 2^-w)``); infinite where there is none."""
    rho, widening = r * math.sqrt(kappa), 1 + 2.0 ** -SPREAD_TABLE["radius_widening_log2"]
    found = []
    for fraction, row in SPREAD_TABLE["radii"].items():
        num, den = (int(v) for v in fraction.split("/"))
        if math.pi * num / den * widening >= rho:
            found.append(math.pi * num / den * widening * float(row["proven_upper_bound"]))
    return min(found) / rho if found else math.inf


def tight_L(r, kappa, sphere=False):
    """Rauch: Lipschitz constant of log over B_r, 2r√κ / sin(2r√κ) (κ > 0), 1 otherwise; on a sphere
    (``sphere``) the proven spread constant where it is smaller."""
    if kappa <= 0:
        return 1.0
    a = 2 * r * math.sqrt(kappa)
    return min(a / math.sin(a), proven_spread(r, kappa)) if sphere else a / math.sin(a)


def laplace_delta(r, n, kappa, sphere=False):
    return 2 * r * tight_L(r, kappa, sphere) / (n * h_of(r, kappa))


def kng_delta(r, n, kappa, sphere=False):
    return 2 * r * tight_L(r, kappa, sphere) / n


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
    sens = laplace_delta(r, n, kappa, isinstance(m, Sphere))
    check(cert, sens, sens / EPS)
    assert cert.mechanism == "laplace" and cert.delta == 0.0


@pytest.mark.parametrize("name", ["sphere", "hyperbolic", "spd-ai", "euclidean"])
def test_restricted_laplace_scale_is_twice_delta_over_epsilon(name):
    m, r, kappa = UNRESTRICTED[name]
    n = 40
    cert = private_frechet_mean(records(m, n, 0.8 * r), m, center=m.origin, radius=r, epsilon=EPS, restrict=True, rng=0).certificate
    sens = laplace_delta(r, n, kappa, isinstance(m, Sphere))
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
    sens = kng_delta(r, n, kappa, isinstance(m, Sphere))
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
    assert gauss.scale == pytest.approx(analytic_gaussian(EPS, 1e-5, sens), rel=2e-8)  # the δ curve is raised by a relative 1e-7 (calibration.DELTA_FLOAT_ERROR): σ by about 5e-9
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


@pytest.mark.parametrize("m", [Hyperbolic(3), SPDAffineInvariant(3), SPDLogEuclidean(2), Euclidean(4)], ids=repr)
def test_wrapped_scales_and_events(m):
    lap = measurements.wrapped(m, "laplace", 0.2, 0.7, base=m.origin)
    assert lap.scale == pytest.approx(0.2 / 0.7, rel=1e-12) and lap.scale >= 0.2 / 0.7 and lap.delta == 0
    assert lap.event == pure_dp_event(0.7)
    gau = measurements.wrapped(m, "gaussian", 0.2, 0.7, 1e-6, base=m.origin)
    sigma = analytic_gaussian(0.7, 1e-6, 0.2)
    assert sigma <= gau.scale <= sigma * (1 + 2e-8)  # the δ curve is raised by a relative 1e-7 (calibration.DELTA_FLOAT_ERROR): σ by about 5e-9
    assert gau.event == gaussian_dp_event(gau.scale / 0.2)


@pytest.mark.parametrize("d", [1, 3, 50])
def test_riemannian_gaussian_on_a_flat_space_is_the_gaussian_mechanism(d):
    meas = measurements.riemannian_gaussian(Euclidean(d), 0.2, 0.8, 1e-6)
    sigma = analytic_gaussian(0.8, 1e-6, 0.2)
    assert sigma <= meas.scale <= sigma * (1 + 2e-8)  # the δ curve is raised by a relative 1e-7 (calibration.DELTA_FLOAT_ERROR): σ by about 5e-9
    assert meas.gdp_mu == pytest.approx(0.2 / meas.scale, rel=1e-12)
    z = meas.event.noise_multiplier / 2  # dp_accounting's REPLACE_ONE convention: 2σ/Δ
    assert z <= meas.scale / 0.2 and z == pytest.approx(meas.scale / 0.2, rel=1e-14)


# --- every mechanism: its event, its sampler, its audit ----------------------------------------------

DELTA = 1e-5
# mechanism: (manifold, radius) of a public release
CASES = {
    "laplace": (Sphere(2), 0.4),
    "kng": (Sphere(2), 0.4),
    "tangent_gaussian": (SPDLogEuclidean(2), 0.8),
    "ambient_laplace": (Sphere(2), 0.4),
    "ambient_gaussian": (Sphere(2), 0.4),
    "coordinate_laplace": (Euclidean(2), 1.0),
    "riemannian_gaussian": (Sphere(2), 0.4),
    "wrapped_laplace": (Hyperbolic(2), 1.0),
    "wrapped_gaussian": (SPDAffineInvariant(2), 0.8),
}
# audit scenarios of the mechanisms ``manifold_dp.audit.SCENARIOS`` has none for (power factors as its
# ``Scenario`` docstring sets them: 0.3 for a Gaussian, 0.5 for an ambient Laplace in dimension 2)
EXTRA_SCENARIOS = {
    "ambient-gaussian-sphere": Scenario(Sphere(2), np.pi / 8, "ambient_gaussian", delta=DELTA, power_factor=0.3),
    "coordinate-laplace-euclidean": Scenario(Euclidean(2), 1.0, "coordinate_laplace", power_factor=0.5),
}
ALL_SCENARIOS = {**SCENARIOS, **EXTRA_SCENARIOS}
HIGH_DIM = {name for name, sc in ALL_SCENARIOS.items() if sc.manifold.dim >= 50} | {"kng-kendall"}


def test_every_mechanism_has_a_contract_case_and_an_audit_scenario():
    assert set(CASES) == set(MECHANISMS)
    assert {sc.mechanism for sc in ALL_SCENARIOS.values()} == set(MECHANISMS)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_release_charges_the_accountant_at_least_its_guarantee(mechanism):
    """A release through the public path records its event: a pure one charges exactly ε; an (ε, δ)
    one composes (PLD) to at least ε(1 − 1e-3) at its δ — a cheaper event would let a budget run
    over — and to at most ε (an analytic Gaussian is tight; the Riemannian Gaussian's μ-GDP
    envelope within 5 %)."""
    m, r = CASES[mechanism]
    delta = DELTA if mechanism in GAUSSIAN_MECHANISMS else None
    X = m.random_point(m.origin, 0.8 * r, size=40, rng=0)
    acct = PrivacyAccountant(10.0, 1e-3 if delta else 0.0)
    rel = private_frechet_mean(X, m, center=m.origin, radius=r, epsilon=0.7, delta=delta, mechanism=mechanism,
                               accountant=acct, rng=1)
    if delta is None:
        assert acct.events == (pure_dp_event(0.7),) and acct.spent() == (0.7, 0.0)
        return
    spent = PrivacyAccountant(10.0, delta).spent(acct.events)[0]
    tight = 1.05 if mechanism == "riemannian_gaussian" else 1 + 1e-9  # its μ-GDP envelope charges a little more
    assert 0.7 * (1 - 1e-3) <= spent <= 0.7 * tight, spent
    if mechanism != "riemannian_gaussian":  # the Gaussian mechanism's event: multiplier σ/Δ (the Riemannian
        assert acct.events == (gaussian_dp_event(rel.scale / rel.sensitivity),)  # one: μ-GDP and its slack δ)


def _flat_measurement(mechanism, m, sens, epsilon):
    """The mechanism's measurement on a flat space, where its law has a closed form."""
    delta = DELTA if mechanism in GAUSSIAN_MECHANISMS else None
    if mechanism == "laplace":
        return measurements.laplace(m, sens, epsilon)
    if mechanism == "kng":
        return measurements.kng(m, sens, epsilon, center=m.origin, radius=1.0)
    if mechanism == "tangent_gaussian":
        return measurements.tangent_gaussian(m, sens, epsilon, delta)
    if mechanism == "riemannian_gaussian":
        return measurements.riemannian_gaussian(m, sens, epsilon, delta)
    if mechanism.startswith("wrapped"):
        return measurements.wrapped(m, mechanism.split("_")[1], sens, epsilon, delta, base=m.origin)
    return measurements.ambient(m, mechanism, sens, epsilon, delta)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_sampler_follows_its_closed_form_law_on_a_flat_space(mechanism):
    """On R³ every law has a closed form: the ℓ2 Laplace K-norm law ‖x − η‖ ~ Gamma(3, σ) (Riemannian,
    ambient and wrapped Laplace; KNG is the Laplace restricted to the public ball, here around its
    centre: the Gamma law truncated at r), the Gaussian ones ‖x − η‖ ~ σ·χ₃, and the coordinate
    Laplace has independent Laplace(σ) coordinates; directions are uniform (the cosine with a fixed
    axis is uniform on [−1, 1] in R³). KS tests at α = 1e-6, fixed seeds, 20 000 draws."""
    m = Euclidean(3)
    rng = np.random.default_rng(zlib.crc32(mechanism.encode()))
    meas = _flat_measurement(mechanism, m, 0.2, 0.7)
    sigma = meas.scale
    eta = np.zeros(3) if mechanism == "kng" else rng.uniform(-0.5, 0.5, 3)
    statistic = (m.random_point(eta, 0.5, size=20, rng=rng), eta) if meas.statistic == "gradient_field" else eta
    z = meas.sample(statistic, size=N_DRAWS, rng=rng) - eta
    if mechanism == "coordinate_laplace":
        for axis in range(3):
            assert stats.kstest(z[:, axis], stats.laplace(scale=sigma).cdf).pvalue > ALPHA
        return
    rho = np.linalg.norm(z, axis=1)
    if mechanism in GAUSSIAN_MECHANISMS:
        law = stats.chi(3, scale=sigma).cdf
    elif mechanism == "kng":
        gamma = stats.gamma(3, scale=sigma)
        law = lambda t: gamma.cdf(np.minimum(t, 1.0)) / gamma.cdf(1.0)
        assert rho.max() <= 1.0
    else:
        law = stats.gamma(3, scale=sigma).cdf
    assert stats.kstest(rho, law).pvalue > ALPHA
    assert stats.kstest(z[:, 0] / rho, stats.uniform(-1, 2).cdf).pvalue > ALPHA


@pytest.fixture
def scenarios(monkeypatch):
    for name, scenario in EXTRA_SCENARIOS.items():
        monkeypatch.setitem(SCENARIOS, name, scenario)


@pytest.mark.parametrize("name", list(ALL_SCENARIOS))
def test_every_scenario_passes_the_audit(name, scenarios):
    r = audit(name, samples=20_000, rng=1)
    assert r.epsilon_lb <= r.epsilon, r
    assert r.epsilon_lb_bits <= r.epsilon, r  # float bits of the default (gridded) output
    if not ALL_SCENARIOS[name].mechanism.startswith(("ambient", "coordinate")):  # their Δ is chordal, the gap geodesic
        assert 0 < r.slack <= 1 + 1e-9  # the audited pair never exceeds the sensitivity bound


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ALL_SCENARIOS))
def test_under_noised_pipeline_is_caught_across_ten_seeds(name, scenarios):
    # σ × power_factor × slack inside the pipeline (see Scenario): every seed must catch it
    samples = 30_000 if name in HIGH_DIM else 100_000
    lbs = [power_check(name, samples=samples, rng=seed).epsilon_lb for seed in range(10)]
    assert min(lbs) > 1.0, lbs
