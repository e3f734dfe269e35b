"""center="auto": the private ball (privacy.private_ball, privacy.ball_first_stage; docs/private_ball.md).

Privacy: the control flow, the shares, the candidates and the charge are functions of public
values; neighbouring datasets (one record replaced: far, antipodal, NaN) give the same outcome
class, warnings and certificate fields; an audit of the first stage's noise on the worst-case
neighbours, with a power check (a σ/2 mechanism is detected). Utility: clusters far from the
origin, the private ball's error against an oracle ball (slow).
"""

import dataclasses
import json
import math
import types
import warnings

import numpy as np
import pytest
from scipy.stats import beta

from manifold_dp import Euclidean, Hyperbolic, KendallShape2D, SPDAffineInvariant, SPDLogEuclidean, Sphere, private_frechet_mean
from manifold_dp.privacy import CERTIFICATE_SCHEMA, AutoRadius, BudgetExceededError, PrivacyAccountant
from manifold_dp.privacy.ball_first_stage import first_stage
from manifold_dp.privacy.ball_refine import clipped_log_mean, noisy_statistic, round_scale, round_sensitivity
from manifold_dp.privacy.calibration import analytic_gaussian_sigma, shared_gaussian_shares
from manifold_dp.privacy.private_ball import BALL_GRID_POINTS, AutoCenter, BallPlan, ball_grid, ball_log_weights
from manifold_dp.privacy.radius_selection import noisy_binary_search, search_steps
from manifold_dp.privacy.release import RecordsWarning, ReleaseWarning, plan_release

SPACES = [Sphere(2), KendallShape2D(5), SPDAffineInvariant(3), SPDLogEuclidean(3), Hyperbolic(3), Euclidean(2)]
IDS = [repr(m) for m in SPACES]


def far_center(M, distance, seed=0):
    v = M.random_unit_tangent(M.origin, rng=seed)
    return M.exp(M.origin, distance * v)


def cluster(M, n, spread=0.2, distance=1.0, seed=1):
    c = far_center(M, distance)
    return c, M.random_point(c, spread, size=n, rng=seed)


def neighbours(M, X):
    """Worst-case neighbours of X: one record replaced by a far point, by the antipode of the
    cluster (sphere) or a far point, and by NaN."""
    far = far_center(M, {Sphere: math.pi - 1e-9, KendallShape2D: 1.5, Hyperbolic: 3.0}.get(type(M), 6.0), seed=7)
    out = []
    for record in (far, -X[0] if isinstance(M, Sphere) else far, np.full(X.shape[1:], np.nan)):
        Y = np.array(X, copy=True)
        Y[0] = record
        out.append(Y)
    return out


def _release(X, M, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rel = private_frechet_mean(X, M, center="auto", radius="auto", epsilon=1.0, rng=5, **kwargs)
            outcome = "ok"
        except Exception as err:  # noqa: BLE001 - the class is what is compared
            rel, outcome = None, type(err).__name__
    return rel, outcome, sorted({w.category.__name__ for w in caught if w.category is not RecordsWarning})


def _public_fields(cert):
    d = cert.to_dict()
    stages = d.pop("center_selection")["stages"]
    keep = ("statistic", "mechanism", "mechanism_title", "theorem", "epsilon", "delta", "manifold", "n", "restriction",
            "sensitivity_bound", "library_version", "schema")
    return {k: d[k] for k in keep}, [(s["stage"], s["mechanism"], s["epsilon"], s["delta"]) for s in stages]


@pytest.mark.parametrize("M", SPACES, ids=IDS)
def test_neighbours_same_outcome_warnings_and_certificate(M):
    _, X = cluster(M, 60)
    base = _release(X, M)
    assert base[1] == "ok"
    for Y in neighbours(M, X):
        other = _release(Y, M)
        assert other[1] == base[1] and other[2] == base[2]
        assert _public_fields(other[0].certificate) == _public_fields(base[0].certificate)


@pytest.mark.parametrize("M", SPACES, ids=IDS)
def test_mechanism_auto_is_chosen_from_public_values(M):
    """``mechanism="auto"``: the same choice, with the same figures, for a dataset and its
    neighbours (a far record, NaN): every record counts in ``n``, whatever its value."""
    _, X = cluster(M, 60)
    selections = set()
    for Y in [X, *neighbours(M, X)]:
        rel, outcome, _ = _release(Y, M, mechanism="auto", delta=1e-6)
        assert outcome == "ok"
        selections.add(json.dumps(rel.certificate.to_dict()["mechanism_selection"], sort_keys=True))
    assert len(selections) == 1


def test_a_swamped_first_stage_warns_before_the_data_are_read():
    """Where the rough centre's expected error is at least half the largest it can be, a public
    ReleaseWarning says the ball can hardly locate the records (the same for any data of that n);
    where the first stage works, no such warning."""
    M = SPDAffineInvariant(28)
    assert first_stage(M, 86, 0.2 * 3.0, 1e-7).swamped and not first_stage(M, 86, 0.2 * 20.0, 1e-7).swamped
    for seed in (0, 1):
        X = M.random_point(M.exp(M.origin, 3.0 * M.random_unit_tangent(M.origin, rng=seed)), 0.3, size=86, rng=seed)
        with pytest.warns(ReleaseWarning, match="can hardly locate the records"):
            private_frechet_mean(X, M, center="auto", radius="auto", epsilon=3.0, delta=1e-6, mechanism="wrapped_gaussian",
                                 rng=seed)
    S = Sphere(2)
    _, X = cluster(S, 300)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        private_frechet_mean(X, S, center="auto", radius="auto", epsilon=1.0, rng=0)
    assert not [w for w in caught if "hardly locate" in str(w.message)]


@pytest.mark.parametrize("M", SPACES, ids=IDS)
def test_plan_is_a_function_of_public_values(M):
    """Candidates, shares, the small-n decision and the first stage's calibration do not depend
    on the records (the same for a dataset and its neighbours, and for unrelated data)."""
    _, X = cluster(M, 40)
    plans = [plan_release(Y, M, center="auto", radius="auto", epsilon=1.0)
             for Y in [X, *neighbours(M, X), M.random_point(M.origin, 0.05, size=40, rng=3)]]
    for plan in plans[1:]:
        assert isinstance(plan, BallPlan)
        assert plan.candidates == plans[0].candidates and plan.shares == plans[0].shares
        assert plan.reliable == plans[0].reliable and plan.first == dataclasses.replace(plans[0].first)


def test_shares_and_certificate_schema():
    M = Sphere(2)
    _, X = cluster(M, 400)
    one = private_frechet_mean(X, M, center="auto", radius="auto", epsilon=2.0, rng=0)
    assert [s.stage for s in one.certificate.center_selection.stages] == ["centre", "radius", "release"]
    assert [s.epsilon for s in one.certificate.center_selection.stages] == pytest.approx([0.4, 0.2, 1.4])
    rel = private_frechet_mean(X, M, center=AutoCenter(rounds=2), radius="auto", epsilon=2.0, rng=0)
    sel = rel.certificate.center_selection
    assert [s.stage for s in sel.stages] == ["centre", "radius", "recentre", "radius", "release"] and sel.rounds == 2
    assert [s.epsilon for s in sel.stages] == pytest.approx([0.3, 0.1, 0.2, 0.1, 1.3])
    assert sum(s.epsilon for s in sel.stages) == pytest.approx(rel.epsilon) and rel.epsilon == 2.0
    assert sel.stages[0].sensitivity == pytest.approx(2.0 / 400) and sel.stages[0].mechanism == "l2_laplace"
    round_ = sel.stages[2]
    assert round_.sensitivity == pytest.approx(2.0 * round_.radius / 400) and round_.mechanism == "l2_laplace"
    assert round_.scale == pytest.approx(round_.sensitivity / 0.2)
    assert sel.stages[4].radius == rel.radius and not sel.small_n_fallback
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.loads(rel.certificate.to_json()), CERTIFICATE_SCHEMA)
    assert rel.certificate.schema == "manifold_dp.certificate/3" and "center_selection" in rel.certificate.summary()


def _gaussian_mu(stage):
    """μ = Δ/σ of a Gaussian stage of the certificate."""
    assert stage.delta > 0 and stage.scale is not None
    return stage.sensitivity / stage.scale


def test_given_radius_and_gaussian_delta_split():
    """With a given radius both stages are Gaussian and share one μ-GDP budget: μ₁² + μ₂² is that of
    a single Gaussian at (ε, δ), to within 1e-8, and a margin below it (the stages' own ε add up to more)."""
    M = SPDLogEuclidean(3)
    _, X = cluster(M, 200)
    rel = private_frechet_mean(X, M, center="auto", radius=1.5, epsilon=1.0, delta=1e-6, mechanism="tangent_gaussian", rng=0)
    stages = rel.certificate.center_selection.stages
    assert [s.stage for s in stages] == ["centre", "radius", "release"] and stages[1].epsilon == 0.0
    assert stages[0].mechanism == "gaussian" and stages[0].delta == pytest.approx(5e-7)
    assert rel.delta == pytest.approx(1e-6) and rel.radius == 1.5
    single = 1.0 / analytic_gaussian_sigma(1.0, 1e-6)
    composed = math.hypot(_gaussian_mu(stages[0]), _gaussian_mu(stages[2]))
    assert single * (1 - 1e-8) < composed <= single * (1 - 1e-9)  # the shared budget's margins: 2⁻³⁰ relative
    assert sum(s.epsilon for s in stages) > 1.2 and "μ-GDP" in rel.certificate.center_selection.composition


def _stage_mu(stage):
    """μ of a Gaussian stage of the certificate: Δ/σ, and for a noisy binary search √K·Δ/σ (K
    count queries of σ each; the default grid of 64 candidates takes K = 6)."""
    mu = _gaussian_mu(stage)
    return math.sqrt(search_steps(BALL_GRID_POINTS)) * mu if stage.stage == "radius" else mu


@pytest.mark.parametrize("M, mechanism, rounds", [(Sphere(2), "ambient_gaussian", 1), (Hyperbolic(3), "wrapped_gaussian", 2),
                                                  (KendallShape2D(5), "ambient_gaussian", 1)])
def test_gaussian_stages_spend_exactly_the_budget(M, mechanism, rounds):
    """Under (ε, δ) with a Gaussian mechanism every stage is Gaussian — the centre, the radius (a
    noisy binary search), a re-centring round where the first stage works in a bounded chart, the
    release — and they share one μ-GDP budget: Σ μᵢ² is that of a single Gaussian at (ε, δ), to
    within 1e-8; the accountant is charged the whole (ε, δ) and no more, and an independent
    privacy-loss-distribution bound of the stages agrees."""
    from dp_accounting import NeighboringRelation, dp_event
    from dp_accounting.pld import PLDAccountant

    _, X = cluster(M, 400)
    acc = PrivacyAccountant(1.0, 1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseWarning)  # the fixed seed's warning
        rel = private_frechet_mean(X, M, center="auto", radius="auto", epsilon=1.0, delta=1e-6, mechanism=mechanism,
                                   accountant=acc, rng=0)
    sel = rel.certificate.center_selection
    stages = sel.stages
    want = ["centre"] + ["radius", "recentre"] * (rounds - 1) + ["radius", "release"]
    assert [s.stage for s in stages] == want and sel.rounds == rounds and all(s.delta > 0 for s in stages)
    assert all(s.mechanism.startswith("noisy binary search") for s in stages if s.stage == "radius")
    spent = acc.spent()
    assert 1.0 - 1e-6 < spent[0] <= 1.0 and spent[1] == 1e-6
    mus = [_stage_mu(s) for s in stages]
    single = 1.0 / analytic_gaussian_sigma(1.0, 1e-6)
    assert single * (1 - 1e-8) < math.sqrt(math.fsum(m * m for m in mus)) <= single
    # the release keeps more than under the basic split (0.2 / 0.1 / 0.7 of ε, δ/2 each)
    assert mus[-1] > 1.1 / analytic_gaussian_sigma(0.7 if rounds == 1 else 0.65, 5e-7)
    assert math.fsum(s.delta for s in stages) <= 1e-6 and "radius searches" in sel.composition
    pld = PLDAccountant(NeighboringRelation.REPLACE_ONE, value_discretization_interval=1e-4)
    for mu in mus:
        pld.compose(dp_event.GaussianDpEvent(2.0 / mu))
    assert pld.get_epsilon(1e-6) <= 1.0 + 1e-3  # the PLD grid's own pessimism: 1e-4 per event or so


@pytest.mark.parametrize("rounds", [2, 3])
def test_gaussian_rounds_join_the_shared_budget(rounds):
    """With (ε, δ) and a Gaussian mechanism the re-centring rounds are Gaussian stages of the same
    μ-GDP budget: each round's σ is its public multiplier times Δ = 2R/n (+ rounding), the
    Gaussian stages' Σ μᵢ² is that of a single Gaussian at the ε the radius stages leave, the
    accountant is charged the whole (ε, δ) and no more, an independent privacy-loss-distribution
    bound of all the events agrees, and the stages' δ's add up to at most δ."""
    from dp_accounting import NeighboringRelation, dp_event
    from dp_accounting.pld import PLDAccountant

    M = Hyperbolic(3)
    _, X = cluster(M, 2000)
    acc = PrivacyAccountant(1.0, 1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseWarning)  # the fixed seed's warning
        rel = private_frechet_mean(X, M, center=AutoCenter(rounds=rounds), radius="auto", epsilon=1.0, delta=1e-6,
                                   mechanism="wrapped_gaussian", accountant=acc, rng=0)
    sel = rel.certificate.center_selection
    stages = sel.stages
    rounds_ = [s for s in stages if s.stage == "recentre"]
    assert len(rounds_) == rounds - 1 and all(s.mechanism == "gaussian" and s.delta > 0 for s in rounds_)
    assert all(s.delta > 0 for s in stages)  # every stage Gaussian, the radius searches too
    assert [s.stage for s in stages] == ["centre"] + ["radius", "recentre"] * (rounds - 1) + ["radius", "release"]
    for s in rounds_:
        assert s.sensitivity == pytest.approx(2.0 * s.radius / 2000) and s.scale / s.sensitivity > 1.0
    mu = math.sqrt(math.fsum(_stage_mu(s) ** 2 for s in stages))
    single = 1.0 / analytic_gaussian_sigma(1.0, 1e-6)
    assert single * (1 - 1e-8) < mu <= single
    assert math.fsum(s.delta for s in stages) <= 1e-6 and rel.delta <= 1e-6
    spent = acc.spent()
    assert 1.0 - 1e-6 < spent[0] <= 1.0 and spent[1] == 1e-6 and len(acc.events) == 2 * rounds + 1
    pld = PLDAccountant(NeighboringRelation.REPLACE_ONE, value_discretization_interval=1e-4)
    for s in stages:
        pld.compose(dp_event.GaussianDpEvent(2.0 / _stage_mu(s)))
    assert pld.get_epsilon(1e-6) <= 1.0 + 2e-3  # the PLD grid's own pessimism: 1e-4 per event or so
    assert "re-centring rounds" in sel.composition


@pytest.mark.parametrize("M", [SPDLogEuclidean(16), SPDAffineInvariant(5)])
def test_a_round_point_that_float64_made_indefinite_is_clamped_into_the_safe_region(M):
    """exp_c of a long tangent vector can leave float64 with an eigenvalue ≤ 0 (condition number past
    1e16; a round on SPD-LE(16), n = 300, made ``eigh`` raise on its log): the clamp clips the
    eigenvalues to [e^−b, e^b] instead, and an overflowed point becomes the public reference."""
    stage = first_stage(M, 300, 1.0, None)
    k = M.k
    q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((k, k)))
    x = (q * np.r_[-7.5e-9, np.geomspace(1e-3, 1e9, k - 1)]) @ q.T
    y = stage.clamp(x)
    w = np.linalg.eigvalsh(y)
    b = stage.bound
    assert np.all(np.isfinite(y)) and w[0] >= math.exp(-b) * (1 - 1e-9) and w[-1] <= math.exp(b) * (1 + 1e-9)
    inside = (q * np.linspace(0.5, 2.0, k)) @ q.T  # a point of the safe region is kept (to rounding)
    assert np.allclose(stage.clamp(inside), inside, rtol=1e-12, atol=1e-12)
    assert np.array_equal(stage.clamp(np.full((k, k), np.inf)), stage.reference)


def test_classical_calibration_keeps_the_basic_split_and_k_norm_rounds():
    """The shared μ-GDP budget needs the analytic calibration; with the classical one the stages
    split (ε, δ) by basic composition (δ/2 to the centre, δ/2 to the release) and the rounds stay
    K-norm (pure), and the shares add up to ε exactly."""
    M = Hyperbolic(3)
    _, X = cluster(M, 2000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseWarning)
        rel = private_frechet_mean(X, M, center=AutoCenter(rounds=2), radius="auto", epsilon=0.5, delta=1e-6,
                                   mechanism="wrapped_gaussian", calibration="classical", rng=0)
    sel = rel.certificate.center_selection
    assert sel.composition.startswith("basic composition")
    assert [s.mechanism for s in sel.stages if s.stage == "recentre"] == ["l2_laplace"]
    assert [s.delta for s in sel.stages] == pytest.approx([5e-7, 0, 0, 0, 5e-7])
    assert math.fsum(s.epsilon for s in sel.stages) == pytest.approx(0.5, rel=1e-12)


def test_radius_auto_aims_at_the_0_8_quantile_and_takes_the_next_candidate():
    """radius="auto" with center="auto": the exponential mechanism at the 0.8-quantile, then one
    candidate up (post-processing; the same draw as an AutoRadius(quantile=0.8) selection); an
    AutoRadius given explicitly is used as given."""
    M = Sphere(2)
    _, X = cluster(M, 1000)
    ours = private_frechet_mean(X, M, center="auto", radius="auto", epsilon=1.0, rng=5)
    plain = private_frechet_mean(X, M, center="auto", radius=AutoRadius(quantile=0.8), epsilon=1.0, rng=5)
    grid = list(ball_grid(M, first_stage(M, 1000, 1.0, None)))
    r_ours, r_plain = ours.certificate.center_selection.stages[1].radius, plain.certificate.center_selection.stages[1].radius
    assert grid.index(r_ours) == grid.index(r_plain) + 1
    assert "then 1 candidate(s) up" in ours.certificate.center_selection.stages[1].statistic
    assert "quantile 0.8 " in plain.certificate.center_selection.stages[1].statistic
    assert "candidate(s) up" not in plain.certificate.center_selection.stages[1].statistic


def test_gaussian_round_noise_has_its_scale():
    """The round's draw: N(T, σ²I) with σ = z·Δ (the snapped output differs from T by the noise
    alone: its per-coordinate spread matches σ to within 5 % over 400 draws of 4 coordinates, 2.8
    standard errors of the estimate; fixed seed)."""
    from manifold_dp.privacy.ball_refine import clipped_log_mean, round_sensitivity, tangent_round

    M = Hyperbolic(4)
    _, X = cluster(M, 300)
    c = M.origin
    T = clipped_log_mean(M, X, c, 3.0, 300)
    rng = np.random.default_rng(7)
    draws = []
    for _ in range(400):
        point, sigma = tangent_round(M, X, c, 3.0, 300, 1.0, rng, 100.0, multiplier=2.5)
        draws.append(np.asarray(M.to_tangent_coordinates(c, M.log(c, point))) - T)
    assert sigma == pytest.approx(2.5 * round_sensitivity(300, 3.0), rel=1e-15)
    spread = float(np.sqrt(np.mean(np.square(draws))))
    assert abs(spread / sigma - 1.0) < 0.05


def test_gaussian_stages_fall_back_to_basic_composition_where_no_epsilon_calibrates_them():
    """A large δ with a tiny ε: a stage's share of the μ-GDP budget needs more noise than the
    analytic calibration gives at any ε > 0 at δ/2, so the stages split (ε, δ) by basic
    composition (public values only), and the release still runs."""
    assert shared_gaussian_shares(1e-3, 0.0, 0.5, (0.2, 0.8), 0.25) is None  # a given radius: shares 0.2 / 0.8
    M = Sphere(2)
    _, X = cluster(M, 400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = private_frechet_mean(X, M, center="auto", radius=0.5, epsilon=1e-3, delta=0.5,
                                   mechanism="ambient_gaussian", rng=0)
    sel = rel.certificate.center_selection
    assert sel.composition.startswith("basic composition")
    assert sum(s.epsilon for s in sel.stages) == pytest.approx(1e-3)


def test_accountant_charged_once_before_reading():
    M = Sphere(2)
    _, X = cluster(M, 300)
    acc = PrivacyAccountant(1.0)
    calls, charge = [], acc.charge
    acc.charge = lambda event: (calls.append(event), charge(event))[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseWarning)  # the fixed seed's warning
        private_frechet_mean(X, M, center="auto", radius="auto", epsilon=1.0, accountant=acc, rng=0)
        assert len(calls) == 1 and len(acc.events) == 3  # one charge: centre, radius, release
        assert acc.spent()[0] == pytest.approx(1.0, rel=1e-6)
        with pytest.raises(BudgetExceededError):
            private_frechet_mean(X, M, center="auto", radius="auto", epsilon=0.5, accountant=acc, rng=0)
    assert len(acc.events) == 3


def test_rounds_recentre_and_small_n_fallback():
    M = Sphere(2)
    _, X = cluster(M, 2000)
    rel = private_frechet_mean(X, M, center=AutoCenter(rounds=2), radius="auto", epsilon=1.0, rng=0)
    stages = rel.certificate.center_selection.stages
    assert [s.stage for s in stages] == ["centre", "radius", "recentre", "radius", "release"]
    assert sum(s.epsilon for s in stages) == pytest.approx(1.0)
    # n = 30 on a cap of radius 0.35: too few records to choose a radius; the largest candidate, never the bottom
    _, X = cluster(M, 30, spread=0.35)
    rel = private_frechet_mean(X, M, center="auto", radius="auto", epsilon=1.0, rng=0)
    sel = rel.certificate.center_selection
    assert sel.small_n_fallback and rel.radius > 0.45 and sel.stages[0].epsilon == pytest.approx(0.3)


def test_ties_beyond_the_data_go_to_smaller_radii():
    """Every candidate beyond the farthest record has the same utility: the base measure prefers
    the smallest of them (by e^(2/31) per step), never the top of the grid."""
    u = np.concatenate([np.full(20, -270.0), np.full(12, -30.0)])
    w = ball_log_weights(u, 1.0)
    p = np.exp(w - w.max())
    p /= p.sum()
    assert np.argmax(p) == 20 and p[20] > p[31] * np.exp(0.7) and p[:20].sum() < 1e-50


def test_invalid_parameters_refused_before_charge():
    M = Sphere(2)
    _, X = cluster(M, 50)
    acc = PrivacyAccountant(10.0)
    with pytest.raises(ValueError, match="riemannian_gaussian"):
        private_frechet_mean(X, M, center="auto", radius="auto", epsilon=1.0, delta=1e-6, mechanism="riemannian_gaussian",
                             accountant=acc)
    with pytest.raises(ValueError, match="budget"):
        AutoCenter(budget=1.5)
    with pytest.raises(ValueError, match="leave"):
        private_frechet_mean(X, M, center=AutoCenter(budget=0.5, radius_budget=0.49), radius="auto", epsilon=1.0,
                             accountant=acc)
    assert len(acc.events) == 0


def test_first_stage_sensitivity_bounds():
    """The sensitivities are attained (sphere: antipodes) or bounded (Kendall: ‖ww* − vv*‖_F ≤ √2)."""
    assert first_stage(Sphere(2, radius=3.0), 10, 1.0).sensitivity == pytest.approx(0.6)
    assert first_stage(SPDAffineInvariant(4), 10, 1.0, bound=2.0).sensitivity == pytest.approx(0.8)
    K = KendallShape2D(6)
    fs = first_stage(K, 1, 1.0)
    Z = K.random_point(K.origin, 1.5, size=200, rng=0)
    T = np.array([fs.statistic(Z[i:i + 1]) for i in range(len(Z))])
    gaps = np.linalg.norm(T[:, None] - T[None], axis=-1)
    assert gaps.max() <= fs.sensitivity * (1 + 1e-12)


AUDIT_DRAWS = 60_000
AUDIT_ALPHA = 1e-6  # per one-sided Clopper-Pearson bound


def _loss_lower_bound(stage, T, T2, threshold, seed):
    """A lower confidence bound (level 1 − 2α) on ln P[z₃ > t | T]/P[z₃ > t | T'] from draws of the
    first stage's own noisy output on the two statistics."""
    rng_a, rng_b = np.random.default_rng(seed), np.random.default_rng(seed + 1)
    a = np.array([stage.noisy(T, rng_a)[2] for _ in range(AUDIT_DRAWS)])
    b = np.array([stage.noisy(T2, rng_b)[2] for _ in range(AUDIT_DRAWS)])
    ka, kb = int(np.sum(a > threshold)), int(np.sum(b > threshold))
    low = beta.ppf(AUDIT_ALPHA, ka, AUDIT_DRAWS - ka + 1)
    high = beta.ppf(1 - AUDIT_ALPHA, kb + 1, AUDIT_DRAWS - kb)
    return math.log(low / high)


def test_first_stage_audit_with_power():
    """Worst-case neighbours on S² (n = 4): every record at the pole, or one at its antipode, so
    the statistics differ by exactly Δ = 2/n. The event {z₃ > T₃ + 2σ}: its privacy-loss lower
    bound stays below ε for the library's stage, and exceeds it for a stage with σ/2 (power)."""
    M, n = Sphere(2), 4
    X = np.tile(M.origin, (n, 1))
    Y = X.copy()
    Y[0] = -M.origin
    stage = plan_release(X, M, center=AutoCenter(budget=0.5), radius=0.5, epsilon=2.0).first  # ε₁ = 1
    T = stage.statistic(X)
    T2 = stage.statistic(Y)
    assert np.linalg.norm(T - T2) == pytest.approx(2.0 / n) and stage.epsilon == pytest.approx(1.0)
    threshold = T[2] + 2 * 0.5  # 2σ of the correct stage (σ = Δ/ε = 0.5)
    assert _loss_lower_bound(stage, T, T2, threshold, 11) <= stage.epsilon
    weak = dataclasses.replace(stage, scale=stage.scale / 2)
    assert _loss_lower_bound(weak, T, T2, threshold, 11) > stage.epsilon


# --- the re-centring round (ball_refine) ---------------------------------------------------------

ROUND_SPACES = [Sphere(2), Sphere(6, radius=2.0), KendallShape2D(5), SPDAffineInvariant(3), SPDLogEuclidean(3),
                Hyperbolic(4), Euclidean(3)]


@pytest.mark.parametrize("M", ROUND_SPACES, ids=repr)
def test_round_sensitivity_is_attained_and_bounded(M):
    """Rows of norm ``R``: every record on the boundary in one direction against one record in the
    opposite direction moves ``T`` by exactly ``2R/n``; hostile records (NaN, ``±inf``, far, off the
    manifold) never move it by more."""
    n, R = 6, 0.3
    c = M.exp(M.origin, 0.7 * M.random_unit_tangent(M.origin, rng=0))
    u = M.random_unit_tangent(c, rng=1)
    X = np.stack([M.exp(c, R * u)] * n)
    Y = X.copy()
    Y[0] = M.exp(c, -R * u)
    T = clipped_log_mean(M, X, c, R, n)
    assert np.linalg.norm(T - clipped_log_mean(M, Y, c, R, n)) == pytest.approx(round_sensitivity(n, R), rel=1e-9)
    far = M.exp(c, 3.0 * M.random_unit_tangent(c, rng=2)) if np.isinf(M.injectivity_radius) else M.exp(c, -1.2 * u)
    for hostile in (np.full(M.point_shape, np.nan), np.full(M.point_shape, np.inf), np.full(M.point_shape, 1e308),
                    np.zeros(M.point_shape), far):
        Z = X.copy()
        Z[0] = hostile
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RecordsWarning)
            gap = np.linalg.norm(T - clipped_log_mean(M, Z, c, R, n))
        assert gap <= round_sensitivity(n, R) * (1 + 1e-12)


def test_round_audit_with_power():
    """Worst-case neighbours for a round on S² at the pole, ``R = 0.3``, ``n = 4`` (statistics
    ``2R/n`` apart): the privacy-loss lower bound of ``{z₁ > T₁ + 2σ}`` stays below ε at the
    library's scale and exceeds it at half of it (power)."""
    M, n, R, eps = Sphere(2), 4, 0.3, 1.0
    c = M.origin
    u = M.from_tangent_coordinates(c, np.array([1.0, 0.0]))
    X = np.stack([M.exp(c, R * u)] * n)
    Y = X.copy()
    Y[0] = M.exp(c, -R * u)
    T, T2 = clipped_log_mean(M, X, c, R, n), clipped_log_mean(M, Y, c, R, n)
    sigma = round_scale(n, R, eps)

    def bound(scale: float) -> float:
        rng_a, rng_b = np.random.default_rng(21), np.random.default_rng(22)
        a = np.array([noisy_statistic(T, scale, rng_a)[0] for _ in range(AUDIT_DRAWS)])
        b = np.array([noisy_statistic(T2, scale, rng_b)[0] for _ in range(AUDIT_DRAWS)])
        ka, kb = int(np.sum(a > T[0] + 2 * sigma)), int(np.sum(b > T[0] + 2 * sigma))
        return math.log(beta.ppf(AUDIT_ALPHA, ka, AUDIT_DRAWS - ka + 1) / beta.ppf(1 - AUDIT_ALPHA, kb + 1, AUDIT_DRAWS - kb))

    assert bound(sigma) <= eps
    assert bound(sigma / 2) > eps


def test_rounds_resolve_their_shares_and_are_charged():
    """``None`` fields take the defaults of the number of rounds; the accountant is charged the
    whole ε, the rounds included."""
    assert AutoCenter().resolved() == AutoCenter(budget=0.2, radius_budget=0.1, rounds=1, recentre_budget=0.1)
    assert AutoCenter(rounds=3, budget=0.1).resolved() == AutoCenter(budget=0.1, radius_budget=0.05, rounds=3,
                                                                    recentre_budget=0.1)
    M = Sphere(2)
    _, X = cluster(M, 400)
    acc = PrivacyAccountant(3.0)
    rel = private_frechet_mean(X, M, center=AutoCenter(rounds=2), radius="auto", epsilon=2.0, accountant=acc)
    assert len(rel.certificate.center_selection.stages) == 5 and acc.spent()[0] == pytest.approx(2.0)


def test_seeded_release_reproducible():
    M = KendallShape2D(5)
    _, X = cluster(M, 100)
    a = private_frechet_mean(X, M, center="auto", radius="auto", epsilon=1.0, rng=3)
    b = private_frechet_mean(X, M, center="auto", radius="auto", epsilon=1.0, rng=3)
    assert np.array_equal(a.point, b.point) and a.certificate == b.certificate


# --- utility (slow): clusters far from the origin, n = 300, ε = 1 ---------------------------------

# measured ratios (final code, these seeds): S² 1.24, H¹⁰ 6.45, SPD-AI(5) 9.41, SPD-LE(16) 13.1, S⁹⁹ 5.54, Kendall 40;
# the factors leave about 1.5× room: a regression guard, not the 2× target (met on S² only, docs/benchmarks.md)
UTILITY = [(Sphere(2), 0.3, 2.0, 2.0), (Hyperbolic(10), 0.5, 2.5, 10.0), (SPDAffineInvariant(5), 0.5, 2.5, 15.0),
           (SPDLogEuclidean(16), 0.5, 2.5, 20.0), (Sphere(99), 0.3, 2.0, 8.0), (KendallShape2D(18), 0.1, 1.0, 60.0)]


@pytest.mark.slow
@pytest.mark.parametrize("M,spread,distance,factor", UTILITY, ids=[repr(u[0]) for u in UTILITY])
def test_utility_against_oracle(M, spread, distance, factor):
    """Median error (5 seeds) of center="auto", radius="auto" within ``factor`` × an oracle that
    knows the cluster's centre and its 0.9-quantile radius (same ε). The factors are what the
    private ball achieves at n = 300, ε = 1 with some room (docs/private_ball.md): within 2× on S²;
    in higher dimension the pure-ε first stage's noise (∝ D/(nε)) dominates (docs/benchmarks.md)."""
    c, X = cluster(M, 300, spread, distance)
    r90 = float(np.quantile(M.dist(c, X), 0.9))
    auto, oracle = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in range(5):
            auto.append(float(M.dist(c, private_frechet_mean(X, M, center="auto", radius="auto", epsilon=1.0, rng=s).point)))
            oracle.append(float(M.dist(c, private_frechet_mean(X, M, center=c, radius=r90, epsilon=1.0, rng=s).point)))
    assert np.median(auto) <= factor * np.median(oracle)


def test_first_stage_row_float64_cannot_compute_counts_as_zero():
    """A record whose φ is not finite adds φ = 0 (within every bound), never NaN to the statistic."""
    M = SPDAffineInvariant(3)
    fs = first_stage(M, 2, 1.0)
    X = np.stack([np.eye(3), np.eye(3)])
    X[1, 0, 0] = np.inf  # a record the sanitiser would replace; here passed straight to the statistic
    T = fs.statistic(X)
    assert np.all(np.isfinite(T)) and np.allclose(T, 0.0)


def test_cli_center_auto(tmp_path, capsys):
    from manifold_dp.cli import main

    M = Sphere(2)
    _, X = cluster(M, 300)
    np.save(tmp_path / "x.npy", X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main(["release", str(tmp_path / "x.npy"), "--manifold", "sphere", "--center", "auto", "--radius", "auto",
              "--epsilon", "1", "--seed", "0"])
    out = json.loads(capsys.readouterr().out)
    stages = out["certificate"]["center_selection"]["stages"]
    assert [s["stage"] for s in stages] == ["centre", "radius", "release"] and out["certificate"]["epsilon"] == 1.0


def test_center_auto_implies_a_private_radius():
    M = Sphere(2)
    _, X = cluster(M, 300)
    implied = private_frechet_mean(X, M, center="auto", epsilon=1.0, rng=4)
    explicit = private_frechet_mean(X, M, center="auto", radius="auto", epsilon=1.0, rng=4)
    assert np.array_equal(implied.point, explicit.point) and implied.certificate == explicit.certificate
    with pytest.raises(ValueError, match="radius"):
        private_frechet_mean(X, M, center=M.origin, epsilon=1.0)


def test_first_stage_noise_second_moment_and_shrinkage():
    """E‖noise‖² = D(D+1)σ² for the K-norm draws (a 6-SE check, fixed seed); the shrinkage is a
    factor in [0, 1] towards the origin (SPD, hyperbolic, Euclidean), none on the sphere."""
    fs = first_stage(SPDAffineInvariant(3), 50, 1.0)
    rng = np.random.default_rng(0)
    draws = np.array([fs.noisy(np.zeros(fs.dimension), rng) for _ in range(20000)])
    sq = np.sum(draws**2, axis=1)
    assert abs(sq.mean() - fs.noise_second_moment) < 6 * sq.std() / math.sqrt(len(sq))
    z = np.full(fs.dimension, 0.01)
    assert np.allclose(fs.shrunk(z), 0.0)  # noise swamps it: the origin
    big = np.full(fs.dimension, 1e3)
    assert np.allclose(fs.shrunk(big), big, rtol=1e-3)
    sphere = first_stage(Sphere(2), 50, 1.0)
    assert np.array_equal(sphere.shrunk(np.array([0.1, 0.0, 0.0])), np.array([0.1, 0.0, 0.0]))


def test_small_n_fallback_when_every_ball_is_mostly_noise():
    """SPD-LE(16) at n = 40: every candidate's release is mostly noise, so the fallback is the
    smallest candidate (the release stays near the first stage's centre), a public choice."""
    M = SPDLogEuclidean(16)
    X = M.random_point(M.origin, 0.3, size=40, rng=0)
    plan = plan_release(X, M, center="auto", radius="auto", epsilon=1.0)
    assert not plan.reliable and len(plan.candidates) == 1
    assert plan.candidates[0] < 0.1


@pytest.mark.parametrize("cls", [SPDAffineInvariant, SPDLogEuclidean])
@pytest.mark.parametrize("kwargs", [{"center": "auto"}, {"center": "auto", "radius": 0.5}, {"center": "origin", "radius": "auto"}])
@pytest.mark.parametrize("extreme", ["full", "scaled identity", "breaker", "negative identity", "negative full",
                                     "huge off-diagonal", "asymmetric breaker"])
def test_an_extreme_spd_record_is_replaced_not_fatal(cls, kwargs, extreme):
    """A record of 1e308 entries (or ±1e308·I, −maxfloat entries, 1e308 off the diagonal, or entries
    spanning 1e-302…1e305) made LAPACK raise in the private ball's first stage, in its check of the
    records and in the radius selection's distances: a failure for that neighbour only."""
    M = cls(3)
    X = M.random_point(M.origin, 0.4, size=60, rng=1)
    Y = X.copy()
    Y[0] = {"full": np.full((3, 3), 1e308), "scaled identity": 1e308 * np.eye(3),
            "breaker": np.array([[1e305, 1e-302, 3.0], [1e-302, 1e-300, 1e150], [3.0, 1e150, 2.0]]),
            "negative identity": -1e308 * np.eye(3), "negative full": np.full((3, 3), -np.finfo(float).max),
            "huge off-diagonal": np.eye(3) + 1e308 * (1 - np.eye(3)),
            "asymmetric breaker": np.array([[-5e-324, 1e-300, 8.99e307], [1e-300, -1e154, 1e-310], [8.99e307, 1e-310, 1e200]]),
            }[extreme]
    center = M.origin if kwargs["center"] == "origin" else "auto"
    outcomes = []
    for data in (X, Y):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RecordsWarning)
            rel = private_frechet_mean(data, M, **{**kwargs, "center": center}, epsilon=1.0, rng=3)
        assert M.belongs(rel.point)
        outcomes.append(rel.certificate.mechanism)
    assert outcomes[0] == outcomes[1]


GAUSSIAN_SPACES = [(Sphere(2), "ambient_gaussian"), (KendallShape2D(5), "ambient_gaussian"),
                   (SPDAffineInvariant(3), "wrapped_gaussian"), (SPDLogEuclidean(3), "tangent_gaussian"),
                   (Hyperbolic(3), "wrapped_gaussian")]


@pytest.mark.parametrize("M, mechanism", GAUSSIAN_SPACES, ids=[repr(m) for m, _ in GAUSSIAN_SPACES])
def test_gaussian_ball_neighbours_same_outcome_and_plan(M, mechanism):
    """Under (ε, δ): a dataset and its worst-case neighbours (a far point, an antipode, NaN) get the
    same rounds, shares, search noise, stages (mechanism, ε, δ), outcome and warning categories;
    so does unrelated data."""
    _, X = cluster(M, 400)
    options = {"delta": 1e-6, "mechanism": mechanism}
    data = [X, *neighbours(M, X), M.random_point(M.origin, 0.05, size=400, rng=3)]
    plans = [plan_release(Y, M, center="auto", radius="auto", epsilon=1.0, **options) for Y in data]
    for plan in plans[1:]:
        assert (plan.auto, plan.shares, plan.search_sigmas, plan.round_multipliers, plan.reliable) == \
            (plans[0].auto, plans[0].shares, plans[0].search_sigmas, plans[0].round_multipliers, plans[0].reliable)
    assert plans[0].search_sigmas and plans[0].reliable  # n = 400 at ε = 1: the radius is a noisy binary search
    base = _release(X, M, **options)
    assert base[1] == "ok"
    for Y in data[1:]:
        other = _release(Y, M, **options)
        assert other[1] == base[1] and other[2] == base[2]
        assert _public_fields(other[0].certificate) == _public_fields(base[0].certificate)


def test_noisy_binary_search_draws_its_stated_noise():
    """One step (two candidates): the first is kept when ``count + N(0, σ²) ≥ target``, with
    probability Φ((count − target)/σ) = Φ(0.5) = 0.691 here (Φ(1) = 0.841 if the noise were
    halved); over 4000 draws (fixed seed) the frequency is within 4 standard errors (α ≈ 6e-5).
    Without noise the search finds the first candidate whose count reaches the target, in
    ⌈log₂ G⌉ steps of one normal draw each, whatever the data."""
    from scipy.stats import norm

    d = np.r_[np.zeros(60), np.full(40, 2.0)]  # count(g = 1) = 60
    rng = np.random.default_rng(11)
    kept = np.mean([noisy_binary_search(d, [1.0, 3.0], 50.0, 20.0, rng=rng) == 0 for _ in range(4000)])
    p = float(norm.cdf(0.5))
    assert abs(kept - p) < 4.0 * math.sqrt(p * (1 - p) / 4000)
    grid = np.geomspace(0.01, 10.0, 64)
    dist = np.random.default_rng(3).uniform(0.0, 5.0, 500)
    counts = np.array([np.count_nonzero(dist <= g) for g in grid])
    for target in (0.0, 50.0, 450.0, 500.0, 501.0):
        want = int(np.argmax(counts >= target)) if np.any(counts >= target) else 63
        assert noisy_binary_search(dist, grid, target, 1e-300, rng=np.random.default_rng(0)) == want
    for data in (dist, np.zeros(500), np.full(500, 1e9)):
        a, b = np.random.default_rng(5), np.random.default_rng(5)
        noisy_binary_search(data, grid, 250.0, 3.0, rng=a)
        b.standard_normal(search_steps(64))
        assert a.random() == b.random()  # six draws, whatever the records


def test_two_rounds_where_the_first_stage_is_a_bounded_chart():
    """rounds unset: two rounds under (ε, δ) where the first stage works in a bounded chart
    (hyperbolic, SPD) and the two rounds' noisy binary searches can tell the data's scale; one on
    spheres and Kendall shapes, at small n, with pure ε, or where rounds is given. A function of
    public values (``expected_auto_ball`` says the same before any data)."""
    from manifold_dp.privacy.private_ball import expected_auto_ball

    def rounds(M, n, **kw):
        _, X = cluster(M, n)
        return plan_release(X, M, center=kw.pop("center", "auto"), radius="auto", epsilon=1.0, **kw).auto.rounds

    gauss = {"delta": 1e-6, "mechanism": "wrapped_gaussian"}
    assert rounds(Hyperbolic(3), 400, **gauss) == 2 and rounds(SPDAffineInvariant(3), 400, **gauss) == 2
    assert rounds(Sphere(2), 400, delta=1e-6, mechanism="ambient_gaussian") == 1
    assert rounds(Hyperbolic(3), 100, **gauss) == 1  # 2σ of the two rounds' count noise (≈ 90) > 0.45·n
    assert rounds(Hyperbolic(3), 400) == 1  # pure ε: the radius is the exponential mechanism
    assert rounds(Hyperbolic(3), 400, center=AutoCenter(rounds=1), **gauss) == 1
    assert rounds(Euclidean(2), 400, delta=1e-6, mechanism="ambient_gaussian") == 2
    # shares set by hand are for one round: kept, not stretched over two (these leave nothing for two)
    assert rounds(Hyperbolic(3), 400, center=AutoCenter(budget=0.5, radius_budget=0.2), **gauss) == 1
    assert expected_auto_ball(Hyperbolic(3), n=400, epsilon=1.0, delta=1e-6, gaussian=True).rounds == 2
    assert expected_auto_ball(Hyperbolic(3), n=100, epsilon=1.0, delta=1e-6, gaussian=True).rounds == 1


def test_no_second_round_where_its_noise_is_about_its_radius():
    """rounds unset: the searches of two rounds can run for SPD-LE(16) at n = 300, ε = 1, but the
    re-centring round's noise (√136·2z/n per unit of radius, about 1.04) is as large as its radius,
    so it cannot bring the centre closer even for records at one point (``limits``' ``P`` with two
    rounds above one round's): one round. At ε = 2 (about 0.55) and on H¹⁰ (about 0.28) it can:
    two. Public values only."""
    from manifold_dp.privacy.private_ball import AutoCenter, expected_auto_ball

    def ball(M, eps, rounds=None):
        return expected_auto_ball(M, n=300, epsilon=eps, delta=1e-6, gaussian=True, auto=AutoCenter(rounds=rounds))

    le = SPDLogEuclidean(16)
    assert ball(le, 1.0).rounds == 1 and ball(le, 2.0).rounds == 2 and ball(Hyperbolic(10), 1.0).rounds == 2
    two, one = ball(le, 1.0, rounds=2), ball(le, 1.0, rounds=1)
    assert two.searched and two.round_error > 1.0 and two.limits[0] > one.limits[0]
    _, X = cluster(le, 300)
    assert plan_release(X, le, center="auto", radius="auto", epsilon=1.0, delta=1e-6,
                        mechanism="tangent_gaussian").auto.rounds == 1


def test_gaussian_radius_small_n_falls_back_to_the_public_radius():
    """Where 2σ of the search's count noise exceeds 0.45·n the radius is the public fallback, its
    share goes to the centre, and the centre and release still share one μ-GDP budget."""
    M = Sphere(2)
    _, X = cluster(M, 100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = private_frechet_mean(X, M, center="auto", radius="auto", epsilon=1.0, delta=1e-6,
                                   mechanism="ambient_gaussian", rng=0)
    sel = rel.certificate.center_selection
    assert sel.small_n_fallback and sel.stages[1].mechanism == "none (public)" and sel.stages[1].epsilon == 0.0
    mu = math.hypot(_gaussian_mu(sel.stages[0]), _gaussian_mu(sel.stages[2]))
    single = 1.0 / analytic_gaussian_sigma(1.0, 1e-6)
    assert single * (1 - 1e-8) < mu <= single


def test_fallback_radius_warns_before_the_data():
    """Where n·ε is too small for the radius stage, a public ReleaseWarning names the fallback
    radius; where the stage runs, none."""
    from manifold_dp.privacy.release import ReleaseWarning

    M = Sphere(2)
    for n, expected in ((100, True), (1000, False)):
        _, X = cluster(M, n)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rel = private_frechet_mean(X, M, center="auto", epsilon=1.0, rng=0)
        said = [str(w.message) for w in caught if issubclass(w.category, ReleaseWarning)
                and "too small for the radius stage" in str(w.message)]
        assert bool(said) == expected == rel.certificate.center_selection.small_n_fallback
        assert not said or f"{rel.radius:.4g}" in said[0]
        assert not said or "the largest candidate whose release is not mostly noise" in said[0]
    # where every candidate's release is mostly noise, the fallback is the smallest, and it says so
    H = Hyperbolic(10)
    X = H.random_point(H.origin, 0.3, size=20, rng=np.random.default_rng(0))
    with pytest.warns(ReleaseWarning, match="the smallest candidate: at this n·epsilon every candidate's release"):
        private_frechet_mean(X, H, center="auto", epsilon=0.1, rng=0)


@pytest.mark.parametrize("space,n,epsilon,delta,mechanism", [
    (Sphere(2), 100, 1.0, None, "laplace"), (Sphere(2), 100, 1.0, 1e-6, "ambient_gaussian"),
    (Hyperbolic(10), 20, 0.1, None, "laplace"), (Sphere(2), 1000, 1.0, None, "laplace"),
    (Sphere(2), 1000, 1.0, 1e-6, "ambient_gaussian")], ids=str)
def test_expected_fallback_is_the_release_s_public_fallback(space, n, epsilon, delta, mechanism):
    """``expected_fallback`` (what ``plan`` tells before the data) gives the radius the release then
    takes, and its release's expected noise distance; ``None`` exactly where the radius stage runs."""
    from manifold_dp.privacy.private_ball import expected_fallback
    from manifold_dp.privacy.release import expected_noise_distance

    X = space.random_point(space.origin, 0.3, size=n, rng=np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = private_frechet_mean(X, space, center="auto", epsilon=epsilon, delta=delta, mechanism=mechanism, rng=0)
    fb = expected_fallback(space, n=n, epsilon=epsilon, delta=delta, mechanism=mechanism)
    assert (fb is not None) == rel.certificate.center_selection.small_n_fallback
    if fb is not None:
        assert fb.radius == rel.radius
        law = types.SimpleNamespace(mechanism=rel.mechanism, scale=rel.scale)
        assert fb.noise == pytest.approx(float(expected_noise_distance(space, law)), rel=1e-6)  # the certificate rounds


def test_other_statistics_refuse_center_auto_with_advice():
    """center='auto' is the mean's; the variance and the median say how to reuse the mean's ball."""
    from manifold_dp import private_frechet_median, private_frechet_variance
    from manifold_dp.privacy.private_ball import AutoCenter

    M = Sphere(2)
    _, X = cluster(M, 100)
    for f in (private_frechet_variance, private_frechet_median):
        for center in ("auto", AutoCenter()):
            with pytest.raises(ValueError, match=r"available for private_frechet_mean.*post-processing"):
                f(X, M, center=center, radius=0.5, epsilon=1.0)
