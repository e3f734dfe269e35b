"""Planning from public values: ``mechanism="auto"`` (the smallest expected noise distance,
chosen before the data are read) and ``manifold-dp plan`` (expected error per mechanism and
radius, the n or ε a target error needs)."""

import json
import time

import jsonschema
import numpy as np
import pytest

from manifold_dp import (
    Euclidean,
    Hyperbolic,
    KendallShape2D,
    PrivacyAccountant,
    SPDAffineInvariant,
    SPDLogEuclidean,
    Sphere,
    cli,
    private_frechet_mean,
)
from manifold_dp.manifolds import REGISTRY
from manifold_dp.privacy import CERTIFICATE_SCHEMA
from manifold_dp.privacy.ball_first_stage import first_stage
from manifold_dp.privacy.planning import (
    GAUSSIAN_MECHANISMS,
    RADIUS_AUTO_RULE,
    candidate_mechanisms,
    choose_ball_mechanism,
    choose_mechanism,
    choose_mechanism_over_radii,
    expected_error,
    format_plan,
    plan_table,
    required_epsilon,
    required_n,
    sample_radii,
    supports,
)
from manifold_dp.privacy.private_ball import AutoCenter, ball_grid, expected_auto_ball
from manifold_dp.privacy.radius_selection import default_grid
from manifold_dp.privacy.release import MECHANISMS, calibrate, expected_noise_distance

# --- mechanism="auto" -------------------------------------------------------------------------

def test_auto_chooses_the_same_for_every_dataset_of_the_same_n():
    S = Sphere(2)
    releases = [private_frechet_mean(S.random_point(S.random_point(S.origin, 0.2, rng=seed), 0.3, size=60, rng=seed), S,
                                     center=S.origin, radius=0.4, epsilon=1.0, delta=1e-6, mechanism="auto", rng=seed)
                for seed in range(3)]
    selections = {json.dumps(r.certificate.to_dict()["mechanism_selection"]) for r in releases}
    assert len(selections) == 1 and len({r.mechanism for r in releases}) == 1
    assert releases[0].mechanism == releases[0].certificate.mechanism_selection.chosen


def test_auto_reads_no_record_before_choosing(monkeypatch):
    """The choice sees the public parameters only: it runs with records that cannot be read."""
    from manifold_dp.privacy import planning

    seen = []
    choose = planning.choose_mechanism

    def spy(manifold, **kwargs):
        seen.append(sorted(kwargs))
        return choose(manifold, **kwargs)

    monkeypatch.setattr(planning, "choose_mechanism", spy)
    S = Sphere(2)
    private_frechet_mean(S.random_point(S.origin, 0.3, size=40, rng=1), S, center=S.origin, radius=0.4, epsilon=1.0,
                         mechanism="auto", rng=1)
    assert seen == [["bound", "calibration", "center", "delta", "epsilon", "exclude", "n", "radius", "restrict"]]


def test_auto_picks_the_smallest_expected_distance_among_the_supported():
    S = Sphere(2)
    choice = choose_mechanism(S, n=100, radius=0.4, epsilon=1.0, delta=None)
    assert [c.mechanism for c in choice.candidates] == list(candidate_mechanisms(S, None))
    assert not set(candidate_mechanisms(S, None)) & set(GAUSSIAN_MECHANISMS)  # δ not given: pure ε-DP only
    best = min(c.expected_distance for c in choice.candidates if c.ok)
    assert next(c for c in choice.candidates if c.mechanism == choice.mechanism).expected_distance == best


@pytest.mark.parametrize("name", ["spd-ai", "spd-le"])
def test_at_spd_28_with_delta_a_gaussian_mechanism_wins(name):
    M = REGISTRY[name](28)  # d = 406: the Laplace's d·σ against the Gaussian's σ·√d
    assert M.dim == 406
    choice = choose_mechanism(M, n=86, radius=2.0, epsilon=1.0, delta=1e-6)
    assert choice.mechanism in GAUSSIAN_MECHANISMS
    laplace = next(c for c in choice.candidates if c.mechanism == "laplace")
    winner = next(c for c in choice.candidates if c.mechanism == choice.mechanism)
    assert laplace.expected_distance is None or laplace.expected_distance > 3 * winner.expected_distance


def test_auto_release_on_spd_le_28_certifies_its_choice():
    M = SPDLogEuclidean(28)
    X = M.random_point(M.origin, 0.5, size=86, rng=0)
    rel = private_frechet_mean(X, M, center=M.origin, radius=2.0, epsilon=1.0, delta=1e-6, mechanism="auto", rng=0)
    cert = rel.certificate
    assert cert.mechanism in GAUSSIAN_MECHANISMS and cert.delta == 1e-6
    assert cert.mechanism_selection.chosen == cert.mechanism
    jsonschema.validate(json.loads(cert.to_json()), CERTIFICATE_SCHEMA)
    assert "mechanism_selection" in cert.summary()
    named = private_frechet_mean(X, M, center=M.origin, radius=2.0, epsilon=1.0, delta=1e-6, mechanism=cert.mechanism,
                                 rng=0)
    assert np.array_equal(named.point, rel.point) and named.certificate.mechanism_selection is None


def test_the_slow_riemannian_gaussian_is_screened_out_where_it_cannot_win():
    S = Sphere(2)
    start = time.perf_counter()
    choice = choose_mechanism(S, n=100, radius=0.4, epsilon=1.0, delta=1e-6)
    assert time.perf_counter() - start < 5.0
    rg = next(c for c in choice.candidates if c.mechanism == "riemannian_gaussian")
    assert rg.expected_distance is None and rg.note.startswith("not calibrated")
    full = expected_error(S, "riemannian_gaussian", n=100, radius=0.4, epsilon=1.0, delta=1e-6)
    assert full.expected_distance > min(c.expected_distance for c in choice.candidates if c.ok)  # rightly skipped


def test_auto_with_a_private_radius_compares_at_four_radii_of_the_public_grid():
    S = Sphere(2)
    X = S.random_point(S.origin, 0.3, size=300, rng=0)
    rel = private_frechet_mean(X, S, center=S.origin, radius="auto", epsilon=1.0, delta=1e-6, mechanism="auto", rng=0)
    radii = sample_radii(default_grid(S, S.origin))
    expected = choose_mechanism_over_radii(S, n=300, radii=radii, epsilon=0.8, delta=1e-6)
    assert rel.mechanism == expected.mechanism == rel.certificate.mechanism_selection.chosen == "laplace"
    assert rel.certificate.radius_selection is not None and rel.certificate.mechanism_selection.rule == RADIUS_AUTO_RULE
    # the largest ratio to the best over the four radii, from choose_mechanism at each
    per_radius = [{c.mechanism: c.expected_distance for c in choose_mechanism(S, n=300, radius=r, epsilon=0.8,
                                                                              delta=1e-6).candidates if c.ok}
                  for r in radii]
    worst = {m: max(d[m] / min(d.values()) for d in per_radius if m in d) for m in per_radius[0]}
    assert worst[expected.mechanism] == min(worst.values())


def test_auto_says_when_nothing_passes():
    S = Sphere(2)
    X = S.random_point(S.origin, 0.3, size=30, rng=0)
    with pytest.raises(ValueError, match=r"mechanism must be one of .* or 'auto'"):
        private_frechet_mean(X, S, center=S.origin, radius=0.4, epsilon=1.0, mechanism="best")
    M = SPDAffineInvariant(28)
    with pytest.raises(ValueError, match="mechanism='auto': no mechanism passes"):
        choose_mechanism(M, n=86, radius=2.0, epsilon=1.0, delta=None)
    # one reason shared by every mechanism is given once, after all their names
    with pytest.raises(ValueError) as err:
        choose_mechanism(SPDLogEuclidean(28), n=86, radius=12.0, epsilon=1.0, delta=1e-6)
    text = str(err.value)
    assert text.count("condition numbers") == 1 and "laplace, kng, tangent_gaussian" in text and len(text) < 700


# --- mechanism="auto" with center="auto": whole pipelines compared ---------------------------------

@pytest.mark.parametrize("M,expected", [(Sphere(2), "laplace"), (Sphere(99), "ambient_gaussian"),
                                        (KendallShape2D(18), "ambient_gaussian"), (SPDLogEuclidean(16), "tangent_gaussian")])
def test_the_ball_takes_the_pipeline_whose_worst_case_is_smallest(M, expected):
    """S²: the Laplace pipeline errs less at every spread (3 dimensions: the K-norm's D against the
    Gaussian's √D·z); in 99 or more dimensions the Gaussian ones do."""
    choice = choose_ball_mechanism(M, n=300, epsilon=1.0, delta=1e-6)
    assert choice.mechanism == expected
    worst = {c.mechanism: float(c.note.split("at most ")[1].split("×")[0]) for c in choice.candidates if c.ok}
    assert worst[expected] == 1.0 and all(w >= 1.0 for w in worst.values())
    assert choose_ball_mechanism(M, n=300, epsilon=1.0, delta=None).mechanism not in GAUSSIAN_MECHANISMS


@pytest.mark.parametrize("M,n,eps", [(Hyperbolic(10), 300, 1.0), (Hyperbolic(10), 100, 2.0), (SPDAffineInvariant(5), 100, 0.5),
                                     (Sphere(2), 100, 2.0), (KendallShape2D(5), 300, 1.0)])
def test_the_ball_choice_is_the_minimax_over_every_spread_and_radius(M, n, eps):
    """The rule compares only the two ends of the spread range at four radii: a brute-force
    minimax of the pipelines' expected errors ``a(r)·√(P² + Q²s²)`` over a fine grid of spreads
    at those radii chooses the same."""
    choice = choose_ball_mechanism(M, n=n, epsilon=eps, delta=1e-6)
    reference = first_stage(M, 1, 1.0, None).reference
    radii = sample_radii(ball_grid(M, first_stage(M, 1, 1.0, None)))
    spreads = np.geomspace(1e-6, 1e6, 4001)
    errors = {}
    for c in choice.candidates:
        if c.ok:
            P, Q = expected_auto_ball(M, n=n, epsilon=eps, delta=1e-6, gaussian=c.mechanism in GAUSSIAN_MECHANISMS).limits
            distances = [expected_error(M, c.mechanism, n=n, radius=r, epsilon=eps, delta=1e-6, center=reference,
                                        full=False).expected_distance for r in radii]
            errors[c.mechanism] = [None if d is None else d / r * np.hypot(P, Q * spreads) for d, r in zip(distances, radii)]
    worst = {m: max(float(np.max(e[i] / np.min([o[i] for o in errors.values() if o[i] is not None], axis=0)))
                    for i in range(len(radii)) if e[i] is not None)
             for m, e in errors.items()}
    assert worst[choice.mechanism] == pytest.approx(min(worst.values()), rel=1e-6)


def test_the_ball_rule_handles_rounds_huge_epsilon_restricted_laws_and_a_given_radius():
    S = Sphere(2)
    X = S.random_point(S.origin, 0.2, size=200, rng=1)
    for auto in (AutoCenter(rounds=2), AutoCenter(rounds=3)):  # pure K-norm rounds: a positive error per unit radius
        assert expected_auto_ball(S, n=200, epsilon=1.0, auto=auto).round_error > 0
        rel = private_frechet_mean(X, S, center=auto, radius="auto", epsilon=1.0, delta=1e-6, mechanism="auto", rng=0)
        assert rel.mechanism == "laplace"
    assert choose_ball_mechanism(S, n=200, epsilon=1e250, delta=1e-6).mechanism in candidate_mechanisms(S, 1e-6)
    # a restricted law that would win but whose acceptance the release would refuse is passed over
    M = SPDAffineInvariant(6)
    Y = M.random_point(M.origin, 0.5, size=50, rng=1)
    rel = private_frechet_mean(Y, M, center="auto", radius="auto", epsilon=0.1, mechanism="auto", rng=0)
    assert rel.mechanism == rel.certificate.mechanism_selection.chosen
    # a given radius: the release's noise there (Q), whatever the centre's error
    given = choose_ball_mechanism(Hyperbolic(10), n=300, epsilon=1.0, delta=1e-6, radius=0.5)
    assert all("r = 0.5" in c.note for c in given.candidates if c.ok)
    # classical calibration: the Gaussian first stage, outside the shared budget
    classical = expected_auto_ball(SPDLogEuclidean(16), n=300, epsilon=0.9, delta=1e-6, gaussian=True,
                                   calibration="classical")
    assert classical.noise == "gaussian" and not classical.composed
    # ... and where the classical calibration cannot calibrate the Gaussian stages (ε ≥ 1 for the centre), those
    # candidates are refused, the others still compared
    E = Euclidean(2)
    Z = np.asarray(E.random_point(E.origin, 0.2, size=50, rng=0))
    rel = private_frechet_mean(Z, E, center="auto", radius="auto", epsilon=5.0, delta=1e-6, calibration="classical",
                               mechanism="auto", rng=0)
    assert rel.mechanism not in GAUSSIAN_MECHANISMS
    refused = [c for c in rel.certificate.mechanism_selection.candidates if c.mechanism in GAUSSIAN_MECHANISMS]
    assert refused and all(c.expected_noise_distance is None and c.note.startswith("refused") for c in refused)


def test_the_ball_mechanism_is_chosen_before_the_data_and_certified():
    S = Sphere(2)
    releases = []
    for seed in range(3):  # clusters in different places: the same choice, the same candidates
        c = S.exp(S.origin, 2.0 * S.random_unit_tangent(S.origin, rng=seed))
        X = S.random_point(c, 0.3, size=200, rng=seed)
        releases.append(private_frechet_mean(X, S, center="auto", radius="auto", epsilon=1.0, delta=1e-6,
                                             mechanism="auto", rng=seed))
    selections = {json.dumps(r.certificate.to_dict()["mechanism_selection"]) for r in releases}
    assert len(selections) == 1
    rel = releases[0]
    assert rel.mechanism == "laplace" and rel.certificate.delta == 0.0  # the pure pipeline: δ is not spent
    assert "worst-case expected error of the whole private ball" in rel.certificate.summary()
    jsonschema.validate(json.loads(rel.certificate.to_json()), CERTIFICATE_SCHEMA)
    c = S.exp(S.origin, 2.0 * S.random_unit_tangent(S.origin, rng=0))
    X = S.random_point(c, 0.3, size=200, rng=0)
    named = private_frechet_mean(X, S, center="auto", radius="auto", epsilon=1.0, delta=1e-6, mechanism="laplace",
                                 rng=0)
    assert np.array_equal(named.point, rel.point)


def test_the_ball_mechanism_charges_the_accountant_as_the_named_one():
    M = Sphere(99)
    X = M.random_point(M.exp(M.origin, 2.0 * M.random_unit_tangent(M.origin, rng=1)), 0.3, size=300, rng=1)
    spent = []
    for mechanism in ("auto", "ambient_gaussian"):
        acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
        rel = private_frechet_mean(X, M, center="auto", radius="auto", epsilon=1.0, delta=1e-6, mechanism=mechanism,
                                   accountant=acc, rng=3)
        spent.append((rel.mechanism, acc.spent()))
    assert spent[0] == spent[1] and spent[0][0] == "ambient_gaussian"


# --- expected errors and what a target needs -------------------------------------------------------

@pytest.mark.parametrize("name,size,radius", [("sphere", 2, 0.4), ("kendall2d", 5, 0.2), ("hyperbolic", 3, 1.0),
                                              ("spd-le", 3, 1.0), ("euclidean", 3, 1.0)])
def test_the_plan_agrees_with_the_calibration_the_release_uses(name, size, radius):
    M = REGISTRY[name](size)
    for mechanism in candidate_mechanisms(M, 1e-6):
        if mechanism == "riemannian_gaussian":
            continue
        quick = expected_error(M, mechanism, n=200, radius=radius, epsilon=1.0, delta=1e-6, full=False)
        cal = calibrate(M, mechanism, n=200, center=M.origin, radius=radius, epsilon=1.0, delta=1e-6, bound="tight",
                        calibration="analytic", restrict=False)
        assert quick.scale == pytest.approx(cal.sigma, rel=1e-12), mechanism
        assert quick.expected_distance == pytest.approx(expected_noise_distance(M, cal.measurement), rel=1e-12)


def test_supports_agrees_with_the_cli_table():
    for name in REGISTRY:
        M = cli.example_manifold(name)
        assert [supports(M, m) for m in MECHANISMS] == [cli.mechanism_support(M, m) for m in MECHANISMS]


@pytest.mark.parametrize("mechanism,delta", [("laplace", None), ("ambient_gaussian", 1e-6), ("kng", None)])
def test_the_n_and_epsilon_needed_reach_the_target_and_about_no_less(mechanism, delta):
    S = Sphere(2)
    target = 0.02
    n = required_n(S, mechanism, target=target, radius=0.4, epsilon=1.0, delta=delta)
    at = expected_error(S, mechanism, n=n, radius=0.4, epsilon=1.0, delta=delta, full=False).expected_distance
    below = expected_error(S, mechanism, n=int(n * 0.97), radius=0.4, epsilon=1.0, delta=delta,
                           full=False).expected_distance
    assert at <= target < below
    eps = required_epsilon(S, mechanism, target=target, n=50, radius=0.4, delta=delta)
    assert expected_error(S, mechanism, n=50, radius=0.4, epsilon=eps, delta=delta, full=False).expected_distance <= target
    assert expected_error(S, mechanism, n=50, radius=0.4, epsilon=eps * 0.97, delta=delta,
                          full=False).expected_distance > target


def test_plan_table_covers_every_mechanism_and_radius():
    S = Sphere(2)
    rows = plan_table(S, n=86, epsilon=1.0, delta=1e-6, radii=[0.2, 0.5], target_error=0.05)
    assert {(r.radius, r.mechanism) for r in rows} == {(r, m) for r in (0.2, 0.5) for m in candidate_mechanisms(S, 1e-6)}
    text = format_plan(rows, S, n=86, epsilon=1.0, delta=1e-6)
    assert "| 0.5 | laplace |" in text and "(1, 1e-06)-DP" in text
    default = plan_table(S, n=86, epsilon=1.0, solve=False)
    assert len({r.radius for r in default}) >= 3 and all(r.radius < S.assumption_radius for r in default)


# --- the plan command --------------------------------------------------------------------------

def test_plan_command_prints_every_mechanism_without_data(capsys):
    code = cli.main(["plan", "--manifold", "spd-le", "--k", "5", "--n", "86", "--epsilon", "1", "--delta", "1e-6",
                     "--radius", "2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    for mechanism in candidate_mechanisms(SPDLogEuclidean(5), 1e-6):
        assert f"| 2 | {mechanism} |" in out
    assert "target" in out and "n needed" in out


def test_plan_needs_no_size_for_a_space_of_one_size(capsys):
    code = cli.main(["plan", "--manifold", "so3", "--n", "200", "--epsilon", "1", "--radius", "0.5"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "| 0.5 | laplace |" in out


@pytest.mark.parametrize("args,fragment", [
    (["--manifold", "spd-ai", "--n", "86", "--epsilon", "1"], "give the size of --manifold spd-ai with --k"),
    (["--manifold", "sphere", "--dim", "2", "--n", "86", "--epsilon", "1", "--radius", "0.9"], "radius must be < r*"),
    (["--manifold", "sphere", "--dim", "2", "--n", "86", "--epsilon", "0"], "epsilon"),
    (["--manifold", "sphere", "--dim", "2", "--n", "86", "--epsilon", "1", "--radius", "x"], "--radius"),
])
def test_plan_errors_are_one_line(capsys, args, fragment):
    code = cli.main(["plan", *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and fragment in err, err


def test_release_mechanism_auto_from_the_cli(capsys, tmp_path):
    S = Sphere(2)
    np.save(tmp_path / "x.npy", S.random_point(S.origin, 0.3, size=50, rng=2))
    code = cli.main(["release", str(tmp_path / "x.npy"), "--manifold", "sphere", "--center", "origin", "--radius", "0.4",
                     "--epsilon", "1", "--mechanism", "auto", "--seed", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    cert = json.loads(out)["certificate"]
    assert cert["mechanism"] == cert["mechanism_selection"]["chosen"]


# --- what to expect near r* ------------------------------------------------------------------

def _release_warnings(X, M, **kwargs):
    import warnings

    from manifold_dp.privacy.release import ReleaseWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        private_frechet_mean(X, M, center=M.origin, epsilon=1.0, rng=0, **kwargs)
    return [str(w.message) for w in caught if w.category is ReleaseWarning]


def test_a_radius_near_r_star_warns_from_the_public_calibration():
    from manifold_dp.privacy.planning import STEEP_GROWTH, radius_growth, steep_radius

    S = Sphere(2)
    X = S.random_point(S.origin, 0.2, size=200, rng=0)
    safe = steep_radius(S)
    assert radius_growth(S, safe) == pytest.approx(STEEP_GROWTH) and 0.5 * S.assumption_radius < safe < S.assumption_radius
    assert 1.0 / np.cos(2 * safe) == pytest.approx(2.0 / np.cos(np.pi / 4))  # L/h = 1/cos(2r) on the unit sphere, tight bound
    near = _release_warnings(X, S, radius=0.7)
    assert any("close to r*" in m and "0.605" in m for m in near)
    assert not any("close to r*" in m for m in _release_warnings(X, S, radius=0.39))
    assert not any("close to r*" in m for m in _release_warnings(X, S, radius=0.7, mechanism="ambient_laplace"))
    big = Sphere(2, radius=3.0)  # curvature 1/9: every radius scales by 3
    assert steep_radius(big) == pytest.approx(3 * safe)
    K = REGISTRY["kendall2d"](5)
    assert any("close to r*" in m for m in _release_warnings(K.random_point(K.origin, 0.1, size=100, rng=1), K, radius=0.36))


def test_the_radius_help_figures_are_the_calibrations():
    S = Sphere(2)
    # with the sphere's proven spread constant (bound="tight"; the Rauch constant gave 0.011, 0.034, 0.090, 0.99)
    # at the radii as typed (the spread constant is a step function of r: r*/2 itself gives 0.0106)
    text = cli.RADIUS_GROWTH
    for r, tight, rauch in [(0.39, 0.010, 0.011), (0.6, 0.028, 0.033), (0.7, 0.064, 0.082), (0.75, 0.16, 0.21),
                            (0.77, 0.36, 0.50), (0.78, 1.04, 1.45)]:
        for bound, scale in (("tight", tight), ("rauch", rauch)):
            cal = calibrate(S, "laplace", n=100, center=S.origin, radius=r, epsilon=1.0, delta=None, bound=bound,
                            calibration="analytic", restrict=False)
            assert cal.sigma == pytest.approx(scale, rel=0.05), (r, bound)
            assert f"{scale:.2f}" in text or f"{scale:.3f}" in text
        assert f"{r:g} " in text or f"{r:g}," in text
    assert "grows steeply past r ≈ 0.605" in cli.radius_help() and "past r ≈ 0.302" in cli.radius_help()


def test_reproduce_summarises_the_built_in_datas_records_warnings(monkeypatch, capsys, tmp_path):
    import warnings

    from manifold_dp import experiments
    from manifold_dp.privacy.release import RecordsWarning, ReleaseWarning

    def fake_reproduce(names, profile, out_dir, seed, log=print):
        for ident, count in (("A", 35), ("B", 0), ("C", 35)):
            log(f"[{ident}] an experiment")
            for i in range(count):
                warnings.warn(f"of 50 records, {i} clipped into the ball", RecordsWarning)
            warnings.warn("round_to=None: raw float64", ReleaseWarning)
            warnings.warn("a warning of another kind", UserWarning)
            log(f"[{ident}] done in 0.1 s: ok")
        return [1, 2, 3], (tmp_path / "report.md", tmp_path / "report.html")

    monkeypatch.setattr(cli.importlib.util, "find_spec", lambda name: True)
    monkeypatch.setattr(experiments, "reproduce", fake_reproduce)
    code = cli.main(["reproduce", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "[A] done in 0.1 s: ok; expected, not shown: 35 RecordsWarnings (about the built-in data" in out
    assert "[B] done in 0.1 s: ok; expected, not shown: 1 ReleaseWarning (public" in out
    assert "[C] done in 0.1 s: ok; expected, not shown: 35 RecordsWarnings" in out and "1 ReleaseWarning" in out
    assert "clipped into the ball" not in err and "round_to=None" not in err
    assert err.count("a warning of another kind") == 1  # other warnings: once each, after the run, as before


# --- what center="auto" is expected to do ------------------------------------------------------

@pytest.mark.parametrize("manifold,n", [(Sphere(2), 300), (Sphere(20), 2000), (KendallShape2D(8), 2000),
                                        (Hyperbolic(5), 1000), (SPDLogEuclidean(3), 1000)])
def test_the_planned_first_stage_error_matches_its_draws(manifold, n):
    """``expected_auto_ball``'s first-stage error against 200 draws of the stage on records
    concentrated at the origin (where the flat charts do not stretch): the median within a factor
    1.5 of the public prediction (it fails for a prediction off by the √D between the K-norm and a
    Gaussian, or by the √(k−1) of the Kendall rotation)."""
    expected = expected_auto_ball(manifold, n=n, epsilon=1.0)
    stage = first_stage(manifold, n, expected.centre_share * 1.0)
    rng = np.random.default_rng(5)
    X = manifold.random_point(manifold.origin, 1e-3, size=n, rng=rng)
    T = stage.statistic(X)
    errors = [float(manifold.dist(manifold.origin, stage._stage.to_point(manifold, stage.noisy(T, rng), stage.bound)))
              for _ in range(200)]
    assert expected.centre_error / 1.5 <= float(np.median(errors)) <= 1.5 * expected.centre_error


def test_the_auto_ball_expectation_is_public_and_falls_with_n_epsilon():
    small, large = (expected_auto_ball(Hyperbolic(10), n=n, epsilon=1.0) for n in (1000, 4000))
    assert large.centre_error == pytest.approx(small.centre_error / 4)
    assert small.ratio(small.centre_error) == pytest.approx(np.sqrt(2) / small.release_share)
    tiny = expected_auto_ball(SPDAffineInvariant(28), n=86, epsilon=1.0)
    assert not tiny.reliable and tiny.centre_share == pytest.approx(0.3)
    assert tiny.centre_error <= first_stage(SPDAffineInvariant(28), 86, 0.3).diameter


def test_plan_accepts_center_auto_and_says_when_the_ball_cannot_locate_the_data(capsys):
    code = cli.main(["plan", "--manifold", "spd-ai", "--k", "5", "--n", "100", "--epsilon", "0.5", "--delta", "1e-6",
                     "--center", "auto", "--radius", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "--center auto: the table above is for a ball at the public origin" in out
    assert expected_auto_ball(SPDAffineInvariant(5), n=100, epsilon=0.5, delta=1e-6, gaussian=True).swamped
    assert "can hardly locate the records" in out


def test_plan_command_says_what_center_auto_will_do(capsys):
    code = cli.main(["plan", "--manifold", "hyperbolic", "--dim", "10", "--n", "1000", "--epsilon", "1", "--delta", "1e-6",
                     "--radius", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("center='auto'")]
    expected = expected_auto_ball(Hyperbolic(10), n=1000, epsilon=1.0)
    assert len(lines) == 3 and f"E1 = {expected.centre_error:.3g}." in lines[0] and "Gaussian" in lines[1], out
    assert "AutoCenter(rounds=2)" in lines[0]
    choice = choose_ball_mechanism(Hyperbolic(10), n=1000, epsilon=1.0, delta=1e-6)
    assert lines[2].startswith(f"center='auto' with mechanism='auto' takes {choice.mechanism}:")
    assert choice.mechanism == "wrapped_gaussian" and "laplace about" in lines[2]
    gaussian = expected_auto_ball(Hyperbolic(10), n=1000, epsilon=1.0, delta=1e-6, gaussian=True)
    assert gaussian.rounds == 2 and "Two rounds" in lines[1] and "radius search, re-centring round" in lines[1]
    # a round brings the centre to within a fraction of its radius √(E1² + s²): at a spread below E1 the
    # expected ratio is well under the one round's √(E1² + s²)/(w·s), and the round's error grows like √d/n
    s = 0.25 * gaussian.centre_error
    one_round = np.hypot(gaussian.centre_error, s) / (gaussian.release_strength * s)
    assert 0.0 < gaussian.round_error < 0.25 and gaussian.ratio(s) < 0.5 * one_round
    assert expected_auto_ball(Hyperbolic(10), n=4000, epsilon=1.0, delta=1e-6, gaussian=True).round_error == \
        pytest.approx(gaussian.round_error / 4, rel=1e-12)


def test_plan_does_not_search_a_refused_riemannian_gaussian():
    """On a curved space a refused Riemannian Gaussian's n and ε needed are not searched (each try
    is a quadrature of seconds: the first `plan` on SPD-AI(28) took 22 s, 6 s without); the row says so."""
    rows = plan_table(SPDAffineInvariant(28), n=86, epsilon=1.0, delta=1e-6, radii=[2.0],
                      mechanisms=["riemannian_gaussian"])
    (row,) = rows
    assert row.expected_error is None and row.n_needed is None and row.epsilon_needed is None
    assert "not searched" in row.note


def test_summary_gives_the_fallback_radius_and_its_noise_where_the_radius_stage_cannot_run():
    """At small n·ε the ratio formula does not hold (the radius is public, not fitted to the
    records): the summary gives the fallback radius and the release's noise there instead."""
    from manifold_dp.privacy.planning import auto_ball_summary
    from manifold_dp.privacy.private_ball import expected_fallback

    M = Sphere(2)
    fb = expected_fallback(M, n=100, epsilon=1.0, mechanism="laplace")
    assert fb is not None
    text = auto_ball_summary(M, n=100, epsilon=1.0)
    assert f"public fallback radius {fb.radius:.3g}" in text and f"errs at most about {fb.noise:.3g}" in text
    assert "times a release in a ball of radius s" not in text
    assert "public fallback radius" not in auto_ball_summary(M, n=1000, epsilon=1.0)
    H = Hyperbolic(10)  # every candidate's release mostly noise: the smallest, and the centre's error
    fb = expected_fallback(H, n=20, epsilon=0.1)
    assert fb is not None and not fb.useful and fb.error > fb.centre_error - fb.radius > 0
    assert "the smallest candidate" in auto_ball_summary(H, n=20, epsilon=0.1) and f"about {fb.error:.3g}" in \
        auto_ball_summary(H, n=20, epsilon=0.1)
