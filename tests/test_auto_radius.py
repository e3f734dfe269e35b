"""radius="auto": the exponential-mechanism quantile (closed-form law, chi-square at α = 1e-6,
fixed seeds), its default grid and candidate filtering, the composition in the accountant and
the certificate, and a release on every registered manifold."""

import json
import math
import warnings

import jsonschema
import numpy as np
import pytest
from scipy.stats import chisquare

from conftest import MANIFOLDS
from manifold_dp import (
    Euclidean,
    Hyperbolic,
    SPDAffineInvariant,
    SPDLogEuclidean,
    Sphere,
    private_frechet_mean,
    private_frechet_variance,
)
from manifold_dp.privacy import CERTIFICATE_SCHEMA, BudgetExceededError, PrivacyAccountant
from manifold_dp.privacy.radius_selection import AutoRadius, default_grid, quantile_counts
from manifold_dp.privacy.release import AutoPlan, ReleaseWarning, plan_release

ALPHA = 1e-6


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the small cases here trigger the public "unreliable"/"noise" notes
        yield


def line_records(distances):
    """Records of Euclidean(1) at the given signed positions (distances from the centre 0)."""
    return np.asarray(distances, dtype=float)[:, None]


def test_selection_law_matches_the_closed_form():
    # 10 records at |x| = 0.1, 0.2, …, 1.0; grid (0.15, 0.45, 0.75, 2); q = 0.5, ε₁ = 0.5·2 = 1
    E = Euclidean(1)
    X = line_records([0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, -0.8, 0.9, -1.0])
    auto = AutoRadius(quantile=0.5, budget=0.5, grid=(0.15, 0.45, 0.75, 2.0))
    plan = plan_release(X, E, center=E.origin, radius=auto, epsilon=2.0)
    assert isinstance(plan, AutoPlan) and plan.candidates == (0.15, 0.45, 0.75, 2.0)
    counts = np.array([1, 4, 7, 10])  # written out: #{|x_i| ≤ g}
    utility = -np.abs(counts - 5)
    grid = np.array([0.15, 0.45, 0.75, 2.0])  # the public base measure favouring larger radii: ∝ g up to the largest
    prior = grid / 2.0
    weights = np.exp(1.0 * utility / 2) * prior
    p = weights / weights.sum()
    draws = plan.select(200_000, rng=0)
    observed = np.bincount(draws, minlength=4)
    assert chisquare(observed, 200_000 * p).pvalue > ALPHA
    # and an under-dispersed law (the mechanism at 2ε₁) is rejected by the same test
    wrong = np.exp(2.0 * utility / 2) * prior
    assert chisquare(observed, 200_000 * wrong / wrong.sum()).pvalue < ALPHA


def test_quantile_counts_match_a_sorted_oracle():
    rng = np.random.default_rng(1)
    d = rng.exponential(size=10_001)
    grid = np.geomspace(1e-3, 10, 48)
    assert np.array_equal(quantile_counts(d, grid), np.searchsorted(np.sort(d), grid, side="right"))


def test_large_epsilon_chooses_the_grid_point_nearest_the_quantile():
    E = Euclidean(1)
    X = line_records((np.arange(100) + 0.5) / 100)  # distances 0.005 … 0.995: the 0.9 quantile is ≈ 0.9
    grid = (0.2, 0.5, 0.85, 0.93, 1.2)
    rel = private_frechet_mean(X, E, center=E.origin, radius=AutoRadius(grid=grid), epsilon=1e4, rng=2)
    assert rel.radius == 0.93 == rel.certificate.radius_selection.chosen_radius
    s = Sphere(2)
    Y = s.random_point(s.origin, 0.5, size=2000, rng=3)
    q = np.quantile(s.dist(s.origin, Y), 0.9)
    rel = private_frechet_mean(Y, s, center=s.origin, radius="auto", epsilon=1e4, rng=4)
    grid = default_grid(s, s.origin)
    assert rel.radius == grid[np.argmin(np.abs(quantile_counts(s.dist(s.origin, Y), grid) - 0.9 * 2000))]
    assert abs(math.log(rel.radius / q)) < math.log(grid[1] / grid[0])  # within one grid step of the quantile


def spread_records(m, spread, n, rng):
    """Records at distances uniform on ``[0, spread]`` from the origin, in random directions.
    (Not ``random_point``: its distances pile up near ``spread`` in higher dimensions, and with
    no candidate between the 0.9 quantile and the largest distance every larger candidate has
    the same utility −0.1·n — the selection is then uniform over them; docs/statistics.md.)"""
    rng = np.random.default_rng(rng)
    u = m.random_unit_tangent(m.origin, size=n, rng=rng)
    return m.exp(m.origin, u * m._expand(spread * rng.uniform(size=n)))


@pytest.mark.parametrize("name", list(MANIFOLDS))
def test_auto_radius_releases_on_every_manifold(name):
    m = MANIFOLDS[name]
    X = spread_records(m, 0.5 * min(1.0, m.assumption_radius), 1000, rng=5)
    acc = PrivacyAccountant(2.0)
    rel = private_frechet_mean(X, m, center=m.origin, radius="auto", epsilon=2.0, accountant=acc, rng=6)
    cert, sel = rel.certificate, rel.certificate.radius_selection
    assert m.check_point(rel.point)[0]
    assert cert.radius == sel.chosen_radius and cert.radius in default_grid(m, m.origin)
    # ε₁·n·min(q, 1−q) = 0.4·1000·0.1 = 40: the radius lands near the 0.9 quantile of the distances
    q = np.quantile(m.dist(m.origin, X), 0.9)
    assert 0.5 * q < cert.radius < 2.0 * q
    assert sel.epsilon + sel.release_epsilon == pytest.approx(cert.epsilon, rel=1e-12) and cert.epsilon == 2.0
    assert acc.spent()[0] == pytest.approx(2.0, rel=1e-9)
    jsonschema.validate(json.loads(cert.to_json()), CERTIFICATE_SCHEMA)
    var = private_frechet_variance(X, m, center=m.origin, radius="auto", epsilon=2.0, rng=7)
    assert 0.0 <= var.value <= var.radius**2 and var.certificate.radius_selection.chosen_radius == var.radius


@pytest.mark.parametrize("M", [Sphere(2), Hyperbolic(3), SPDAffineInvariant(3), Euclidean(2)], ids=repr)
def test_mechanism_auto_with_a_private_radius_is_chosen_from_public_values(M):
    """``mechanism="auto"`` with ``radius="auto"``: the same choice, with the same figures, for a
    dataset and its neighbours (a far record, NaN): every record counts in ``n``."""
    X = M.random_point(M.origin, 0.3, size=60, rng=2)
    selections = set()
    for record in (None, M.exp(M.origin, 3.0 * M.random_unit_tangent(M.origin, rng=3)), np.full(X.shape[1:], np.nan)):
        Y = np.array(X, copy=True)
        if record is not None:
            Y[0] = record
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rel = private_frechet_mean(Y, M, center=M.origin, radius="auto", epsilon=1.0, delta=1e-6, mechanism="auto",
                                       rng=0)
        selections.add(json.dumps(rel.certificate.to_dict()["mechanism_selection"], sort_keys=True))
    assert len(selections) == 1


def test_the_accountant_is_charged_both_parts_before_the_data_are_read():
    E = Euclidean(2)
    X = E.random_point(E.origin, 1.0, size=500, rng=8)
    acc = PrivacyAccountant(3.0)
    private_frechet_mean(X, E, center=E.origin, radius="auto", epsilon=1.0, accountant=acc, rng=9)
    assert len(acc.events) == 2 and acc.spent() == (pytest.approx(1.0, rel=1e-12), 0.0)
    # a Gaussian release: pure ε₁ plus the release's Gaussian event, at the accountant's δ
    gacc = PrivacyAccountant(3.0, 1e-6)
    rel = private_frechet_mean(X, E, center=E.origin, radius="auto", epsilon=1.0, delta=1e-6,
                               mechanism="tangent_gaussian", accountant=gacc, rng=10)
    assert rel.certificate.delta == 1e-6 and rel.certificate.epsilon == 1.0
    assert gacc.spent()[0] == pytest.approx(1.0, abs=1e-6)  # 0.2 (pure) + 0.8 at δ (analytic: exact)
    # too small a budget: refused, nothing charged, whatever the records are
    small = PrivacyAccountant(0.9)
    with pytest.raises(BudgetExceededError):
        private_frechet_mean(X, E, center=E.origin, radius="auto", epsilon=1.0, accountant=small)
    assert small.events == ()


def test_certificate_parts_add_up():
    E = Euclidean(1)
    X = line_records(np.linspace(-1, 1, 400))
    rel = private_frechet_mean(X, E, center=E.origin, radius=AutoRadius(quantile=0.5, budget=0.3), epsilon=2.0, rng=11)
    cert, sel = rel.certificate, rel.certificate.radius_selection
    assert sel.epsilon == pytest.approx(0.6) and sel.release_epsilon == pytest.approx(1.4)
    assert sel.epsilon + sel.release_epsilon == pytest.approx(cert.epsilon, rel=1e-12)
    assert sel.quantile == 0.5 and sel.candidates == 48 and "McSherry & Talwar 2007" in sel.theorem
    assert "basic composition" in sel.composition and cert.schema == "manifold_dp.certificate/3"
    # the release part is the ordinary release at the chosen radius with ε₂: Δ = 2r/n (+ slack), σ = Δ/ε₂
    assert cert.scale == pytest.approx(2 * cert.radius / 400 / 1.4, rel=1e-5)
    fixed = private_frechet_mean(X, E, center=E.origin, radius=cert.radius, epsilon=1.4, rng=11)
    assert fixed.certificate.radius_selection is None and fixed.scale == cert.scale
    assert "radius_selection" in rel.summary()


def test_candidates_that_would_refuse_are_dropped_before_the_data_are_read():
    # hyperbolic: the float64 reach caps the default grid at max_reach − ρ(origin, centre)
    H = Hyperbolic(2)
    center = H.exp(H.origin, 5.0 * H.random_unit_tangent(H.origin, rng=12))
    grid = default_grid(H, center)
    assert grid[-1] < 3.0 and grid[-1] == pytest.approx(3.0 * (1 - 2.0**-10))
    # an explicit grid mixing refusals (r ≥ r*, past the reach, too noisy) with feasible radii
    S = Sphere(2)
    X = S.random_point(S.origin, 0.3, size=300, rng=13)
    auto = AutoRadius(grid=(1e-9, 0.1, 0.3, 0.6, 0.8, 1.5))  # r* = π/4: 0.8 and 1.5 are not allowed
    plan = plan_release(X, S, center=S.origin, radius=auto, epsilon=1.0)
    assert 0.8 not in plan.candidates and 1.5 not in plan.candidates and 0.3 in plan.candidates
    for i in range(len(plan.candidates)):  # every kept candidate releases without a refusal
        assert S.check_point(plan.plan_at(i).draw(rng=i))[0]
    m = SPDAffineInvariant(2)
    Y = m.random_point(m.origin, 0.5, size=50, rng=14)
    plan = plan_release(Y, m, center=m.origin, radius=AutoRadius(grid=(0.5, 1.0, 800.0)), epsilon=1.0)
    assert plan.candidates == (0.5, 1.0)  # 800 overflows float64 (public check)
    for g in plan.candidates:
        private_frechet_mean(Y, m, center=m.origin, radius=g, epsilon=0.8, rng=15)


def test_no_candidate_left_is_refused_up_front_with_a_public_message():
    H = Hyperbolic(2)
    X = H.random_point(H.origin, 0.5, size=20, rng=16)
    acc = PrivacyAccountant(5.0)
    with pytest.raises(ValueError, match="radius='auto': none of the 2 given candidate radii") as err:
        private_frechet_mean(X, H, center=H.origin, radius=AutoRadius(grid=(9.0, 12.0)), epsilon=1.0, accountant=acc)
    assert acc.events == () and "0.5" not in str(err.value).split("radii")[0]


def test_selected_radius_draws_pairs_for_the_audit():
    E = Euclidean(1)
    X = line_records(np.linspace(-1, 1, 50))
    plan = plan_release(X, E, center=E.origin, radius=AutoRadius(quantile=0.5, grid=(0.25, 0.5, 1.0)), epsilon=1.0)
    radii, points = plan.draw(1000, rng=17)
    assert radii.shape == (1000,) and points.shape == (1000, 1) and set(radii) <= {0.25, 0.5, 1.0}
    for g in set(radii):  # each point came from the release at its own radius
        sigma = plan.stages[plan.candidates.index(g)][0].sigma
        assert np.median(np.abs(points[radii == g, 0] - plan.plan_at(plan.candidates.index(g))._statistic[0])) \
            == pytest.approx(sigma * math.log(2), rel=0.3)


def test_bad_auto_parameters_and_dask_are_refused():
    E = Euclidean(1)
    X = line_records([0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="quantile"):
        AutoRadius(quantile=1.0)
    with pytest.raises(ValueError, match="budget"):
        AutoRadius(budget=0.0)
    with pytest.raises(ValueError, match="grid"):
        AutoRadius(grid=(0.1, -1.0))
    with pytest.raises(ValueError, match="'auto'"):
        private_frechet_mean(X, E, center=E.origin, radius="automatic", epsilon=1.0)
    da = pytest.importorskip("dask.array")
    with pytest.raises(ValueError, match="Dask"):
        private_frechet_mean(da.from_array(X, chunks=(2, 1)), E, center=E.origin, radius="auto", epsilon=1.0)


def test_unreliable_selection_warns_from_public_values_only():
    S = Sphere(2)
    with warnings.catch_warnings(record=True) as small:
        warnings.simplefilter("always")
        private_frechet_mean(S.random_point(S.origin, 0.3, size=30, rng=18), S, center=S.origin, radius="auto",
                             epsilon=1.0, rng=19)
    with warnings.catch_warnings(record=True) as large:
        warnings.simplefilter("always")
        private_frechet_mean(S.random_point(S.origin, 0.3, size=5000, rng=20), S, center=S.origin, radius="auto",
                             epsilon=1.0, rng=21)
    unreliable = lambda rec: [w for w in rec if issubclass(w.category, ReleaseWarning) and "unreliable" in str(w.message)]
    assert len(unreliable(small)) == 1 and unreliable(large) == []


def test_concentrated_records_do_not_send_the_radius_to_the_top_of_the_grid():
    """Every record at distance 1 on SPD-like unbounded grids (1e-3 … 1e3): without the public base
    measure the choice was uniform over the ~16 candidates above 1; now it is the first one above
    in most draws."""
    E = Euclidean(3)
    rng = np.random.default_rng(4)
    u = rng.standard_normal((2000, 3))
    X = u / np.linalg.norm(u, axis=1, keepdims=True)
    plan = plan_release(X, E, center=E.origin, radius="auto", epsilon=1.0)
    chosen = np.asarray(plan.candidates)[plan.select(20_000, rng=1)]
    first_above = min(g for g in plan.candidates if g >= 1.0)
    # halving per grid step: P(first above) ≈ 1/2, P(5 or more steps above, > 4) ≈ 2^-5
    assert np.mean(chosen == first_above) > 0.45 and np.mean(chosen > 4.0) < 0.05


# --- the public base measure, the cached pilots, the dominating charge ------------------------

def test_small_n_chooses_a_radius_that_keeps_the_records_not_the_grid_bottom():
    """S², 30 records in a cap of radius 0.35 around a point 0.15 from the public centre, ε = 1:
    the exact law of the selection (no sampling: the plan's own probabilities, fixed seed 7). The
    former base measure 2^−j put ≈ 94 % of its mass on the bottom four candidates (2e-4 … 3e-4);
    now ≥ 75 % is on radii of at least half the true 0.9-quantile and < 5 % on the bottom half."""
    from manifold_dp.data import sphere_cap
    from manifold_dp.privacy.radius_selection import selection_probabilities

    S = Sphere(2)
    center = S.exp(S.origin, np.array([0.0, 0.15, 0.0]))
    X = sphere_cap(30, radius=0.35, rng=np.random.default_rng(7))
    q = np.quantile(S.dist(center, X), 0.9)
    plan = plan_release(X, S, center=center, radius="auto", epsilon=1.0)
    p, g = selection_probabilities(plan._log_weights), np.asarray(plan.candidates)
    assert p[g >= q / 2].sum() > 0.75 and p[g < g[g.size // 2]].sum() < 0.05


def test_base_measure_is_a_function_of_public_values_only():
    """The same public parameters (space, centre, n, ε, grid) give the same base measure whatever
    the records: here two unrelated record sets and a neighbouring pair."""
    from manifold_dp.privacy.auto_radius import _noise_inflation
    from manifold_dp.privacy.radius_selection import base_log_weights, safe_radius

    S = Sphere(2)
    X = S.random_point(S.origin, 0.1, size=200, rng=30)
    Y = S.random_point(S.exp(S.origin, np.array([0.0, 0.5, 0.0])), 0.05, size=200, rng=31)
    Z = X.copy()
    Z[0] = Y[0]
    plans = [plan_release(D, S, center=S.origin, radius="auto", epsilon=1.0) for D in (X, Y, Z)]
    assert all(np.array_equal(plans[0].log_base, p.log_base) for p in plans[1:])
    assert not np.array_equal(plans[0]._log_weights, plans[1]._log_weights)  # the utility does read the records
    grid, cands = default_grid(S, S.origin), np.asarray(plans[0].candidates)
    inflation = _noise_inflation(cands, plans[0].stages, 1.0)  # σ/r over the smallest: the calibrations'
    safe = safe_radius(S, cands, False, inflation)
    assert np.array_equal(plans[0].log_base, base_log_weights(cands, safe, grid, inflation))
    # ∝ g up to the safe radius, below r* = π/4 where the sphere's L/h (and the noise) blows up; above it
    # halving per step and divided by the noise's growth: the top candidate, 100 times noisier, is all but excluded
    top = int(np.argmax(plans[0].log_base))
    assert cands[top] == safe and 0.4 < safe < 0.7 and plans[0].log_base[top] == 0.0
    assert np.allclose(np.diff(plans[0].log_base[:top + 1]), np.diff(np.log(cands[:top + 1])))
    assert np.all(np.diff(plans[0].log_base[top:]) <= -math.log(2.0) + 1e-12) and plans[0].log_base[-1] < -5.0
    E = Euclidean(2)
    b = base_log_weights(default_grid(E, E.origin), 1.0)
    g = default_grid(E, E.origin)
    assert g[np.argmax(b)] == pytest.approx(1.0, rel=0.2) and b[-1] - b[-2] == pytest.approx(-math.log(2.0))


@pytest.mark.parametrize("k", [6, 16])
def test_spd_auto_computes_each_public_pilot_once_and_never_rejection_samples_to_filter(monkeypatch, k):
    """Affine-invariant SPD(6) and SPD(16) with few records, where the large candidates need the restricted
    law: filtering the grid draws no rejection sample of the law (the restricted acceptance is a
    quadrature bound, then a fixed number of weighted proposals), and a second ``"auto"`` release
    with the same public parameters (other records, same n) computes no pilot at all."""
    from manifold_dp.privacy import mechanisms, spd_sampler

    m = SPDAffineInvariant(k)
    rng = np.random.default_rng(40)
    A = rng.standard_normal((2, 40, k, 3 * k))
    X, Y = A @ np.swapaxes(A, -1, -2) / (3 * k)
    for cached in (spd_sampler.spd_sampler_acceptance, spd_sampler.spd_restricted_acceptance_bound, spd_sampler._pilot_gaps):
        cached.cache_clear()
    monkeypatch.setattr(mechanisms, "_ACCEPTANCE_CACHE", {})

    def no_rejection(*args, **kwargs):
        raise AssertionError("the public checks drew from the law")

    proposals = []
    original = spd_sampler.spd_laplace_proposals
    monkeypatch.setattr(spd_sampler, "spd_laplace_proposals", lambda *a: proposals.append(a[3]) or original(*a))
    monkeypatch.setattr(spd_sampler.SPDLogEigenSampler, "draw", no_rejection)
    plan = plan_release(X, m, center=np.eye(k), radius="auto", epsilon=1.0)
    assert any(cal.restricted for cal, _ in plan.stages) or mechanisms._ACCEPTANCE_CACHE  # the restricted path ran
    restricted = len(mechanisms._ACCEPTANCE_CACHE)
    assert sum(proposals) <= 20_000 * restricted  # a fixed number of proposals per restricted candidate
    pilots = spd_sampler.spd_sampler_acceptance.cache_info().misses
    bounds = spd_sampler.spd_restricted_acceptance_bound.cache_info().misses
    assert pilots <= 2 * len(default_grid(m, np.eye(k)))  # at most one per (σ, ρ_max) of each candidate
    assert spd_sampler._pilot_gaps.cache_info().misses <= 1  # the pilots' directions: once for every σ
    proposals.clear()
    again = plan_release(Y, m, center=np.eye(k), radius="auto", epsilon=1.0)
    assert again.candidates == plan.candidates and proposals == []
    assert spd_sampler.spd_sampler_acceptance.cache_info().misses == pilots
    assert spd_sampler.spd_restricted_acceptance_bound.cache_info().misses == bounds
    assert len(mechanisms._ACCEPTANCE_CACHE) == restricted


def test_spd_restricted_acceptance_bound_is_above_the_monte_carlo_estimate():
    """The CAT(0) quadrature bound against the rejection sampler's own estimate (20,000 accepted
    draws from a boundary footpoint, fixed seed): above it up to 4 binomial standard errors, and
    within 15 % of it (the bound is nearly tight where the Jensen envelope is)."""
    from manifold_dp.privacy.mechanisms import RiemannianLaplace
    from manifold_dp.privacy.spd_sampler import spd_restricted_acceptance_bound

    for k, sigma, r in [(2, 0.3, 1.0), (3, 0.3, 0.5), (5, 0.05, 1.0)]:
        m = SPDAffineInvariant(k)
        law = RiemannianLaplace(m, sigma, restrict_to=(np.eye(k), r))
        rng = np.random.default_rng(20_211)
        edge = m.exp(np.eye(k), r * m.random_unit_tangent(np.eye(k), rng=rng))
        x, inner = law._draw(edge, 20_000, rng, 2 * r)
        estimate = inner * float(np.mean(m.dist(np.eye(k), x) <= r))
        bound = spd_restricted_acceptance_bound(k, sigma, r)
        assert bound >= estimate - 4 * math.sqrt(estimate * (1 - estimate) / 20_000)
        assert bound <= 1.15 * estimate and law.restricted_acceptance() <= bound


def test_dominating_event_charges_at_least_every_candidate():
    from dp_accounting import dp_event

    from manifold_dp.privacy.accounting import gaussian_dp_event, pure_dp_event, slack_dp_event
    from manifold_dp.privacy.auto_radius import _dominating_event

    events = [pure_dp_event(0.5), dp_event.ComposedDpEvent([gaussian_dp_event(2.0), slack_dp_event(1e-12)]),
              dp_event.ComposedDpEvent([gaussian_dp_event(1.5), slack_dp_event(3e-13)]), pure_dp_event(0.8)]
    charged = _dominating_event(events)
    assert charged == dp_event.ComposedDpEvent([pure_dp_event(0.8), gaussian_dp_event(1.5), slack_dp_event(1e-12)])
    for e in events:
        assert PrivacyAccountant(100.0, 1e-6).spent([charged]) >= PrivacyAccountant(100.0, 1e-6).spent([e])
    assert _dominating_event([pure_dp_event(0.3), pure_dp_event(0.7)]) == pure_dp_event(0.7)


def test_riemannian_gaussian_auto_with_an_accountant_charges_a_dominating_event():
    """Before: ``AttributeError`` in the charge (a composed Gaussian-and-slack event has no RR noise
    parameter). Now the charge is the selection's ε₁ and, per kind, the weakest leaf over the
    candidates: no candidate's μ above the charged one, no slack above the charged slack."""
    S = Sphere(2)
    X = S.random_point(S.origin, 0.2, size=300, rng=50)
    acc = PrivacyAccountant(10.0, 1e-3)
    auto = AutoRadius(grid=(0.1, 0.25, 0.5))
    plan = plan_release(X, S, center=S.origin, radius=auto, epsilon=1.0, delta=1e-6, mechanism="riemannian_gaussian",
                        accountant=acc)
    leaves = acc.events  # the charge's leaves: the selection's ε₁, then the release's
    gauss = [e for e in leaves if hasattr(e, "noise_multiplier")]
    slack = [e for e in leaves if hasattr(e, "delta")]
    assert len(plan.candidates) == 3 and len(gauss) == 1 and len(slack) == 1
    for cal, _ in plan.stages:
        g, s = cal.measurement.event.events
        assert gauss[0].noise_multiplier <= g.noise_multiplier and slack[0].delta >= s.delta
    assert S.check_point(plan.release(rng=51).value)[0]


def test_numerical_calibrations_get_a_thinned_default_grid():
    from manifold_dp.privacy.auto_radius import _numerical_calibration
    from manifold_dp.privacy.radius_selection import THINNED_GRID_POINTS, thinned_grid

    grid = default_grid(Sphere(2), Sphere(2).origin)
    thin = thinned_grid(grid)
    assert thin.size <= THINNED_GRID_POINTS and thin[-1] == grid[-1] and set(thin) <= set(grid)
    assert _numerical_calibration(Sphere(2), "riemannian_gaussian")
    assert not _numerical_calibration(Euclidean(2), "riemannian_gaussian") and not _numerical_calibration(Sphere(2), "laplace")


def test_selection_is_epsilon_one_dp_on_neighbouring_datasets_with_the_new_base_measure():
    """The exact law of the selection (no sampling) on neighbouring datasets — one record moved
    from inside to outside every candidate, or between candidates — on a bounded default grid (S²,
    30 records: the base measure decides much of the draw) and the unbounded one (Euclidean, 20
    records): ``|ln P_D(g) − ln P_D'(g)| ≤ ε₁`` for every candidate, and the bound is nearly
    reached (the audit is not vacuous)."""
    from manifold_dp.privacy.radius_selection import selection_probabilities

    worst = 0.0
    for m, spread, far, n in ((Sphere(2), 0.3, 0.7, 30), (Euclidean(2), 2.0, 50.0, 20)):
        rng = np.random.default_rng(60)
        for trial in range(10):
            X = m.random_point(m.origin, spread, size=n, rng=rng)
            Y = X.copy()
            Y[trial] = m.origin if trial % 2 else m.random_point(m.origin, far, size=1, rng=rng)[0]
            plans = [plan_release(D, m, center=m.origin, radius="auto", epsilon=1.0) for D in (X, Y)]
            assert np.array_equal(plans[0].log_base, plans[1].log_base)
            ratio = np.abs(np.log(selection_probabilities(plans[0]._log_weights))
                           - np.log(selection_probabilities(plans[1]._log_weights)))
            eps1 = plans[0].selection_epsilon
            assert np.max(ratio) <= eps1 * (1 + 1e-9)
            worst = max(worst, float(np.max(ratio)) / eps1)
    assert worst > 0.5


def test_spd_acceptance_lower_bound_is_below_the_pilot_and_spares_it_at_small_sigma(monkeypatch):
    """``spd_acceptance_lower_bound`` (a quadrature) never exceeds the Monte Carlo pilot it stands
    in for, and at small σ the public checks pass on it alone."""
    from manifold_dp.privacy import mechanisms, spd_sampler
    from manifold_dp.privacy.spd_sampler import spd_acceptance_lower_bound, spd_sampler_acceptance

    for k in (3, 16):
        c_k = 0.5 * math.sqrt(k * (k * k - 1) / 3.0)
        for fraction in (0.02, 0.1, 0.4, 0.9):
            for rho_max in (np.inf, 2.0):
                pilot = spd_sampler_acceptance(k, fraction / c_k, rho_max)  # 4000 proposals: ± a few 1e-3
                assert spd_acceptance_lower_bound(k, fraction / c_k, rho_max) <= pilot + 3 * math.sqrt(pilot / 4000) + 1e-9
    assert spd_acceptance_lower_bound(16, 0.02 / 18.4, np.inf) > 0.9

    def no_pilot(*args):
        raise AssertionError("the Monte Carlo pilot ran")

    monkeypatch.setattr(spd_sampler, "spd_sampler_acceptance", no_pilot)  # where SPD_LOG_EIGEN.check_samplable reads it
    mechanisms.RiemannianLaplace(SPDAffineInvariant(16), 1e-3).check_samplable()


@pytest.mark.parametrize("space", [SPDAffineInvariant(3), SPDLogEuclidean(3)], ids=repr)
def test_record_distances_of_neighbours_differ_in_the_replaced_record_only(space):
    """The quantile count has sensitivity 1 only if each record's distance depends on that record
    alone: replacing one record (by NaN, a far or a non-positive-definite matrix) changes that
    distance and no other, bit for bit."""
    from manifold_dp.data import eigen_spd
    from manifold_dp.privacy.release import record_distances

    X = eigen_spd(300, 3, r=0.6, rng=3)
    base = record_distances(space, X, np.eye(3), cap=2.0)
    for bad in (np.full((3, 3), np.nan), 1e6 * np.eye(3), -np.eye(3)):
        Y = X.copy()
        Y[17] = bad
        other = record_distances(space, Y, np.eye(3), cap=2.0)
        assert np.array_equal(np.delete(other, 17), np.delete(base, 17))
