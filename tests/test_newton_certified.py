"""The certified Newton schedule on the sphere, checked independently of its proof.

``certified_frechet_mean`` takes a public number of projected Newton steps on ``Sphere(d, R)``;
its guarantee rests on four claims (``Sphere.newton_constants``, docs/theory.md §2), each
checked here by a computation that does not reuse the code's formulas:

(1) ``‖∇_X Hess(½ρ²_p)‖ ≤ ℓ(θ)/R·|X|``, ``ℓ(θ) = |a′(θ)| + (1 − a(θ)) cot θ``, ``a = θ cot θ``:
    finite differences of the parallel-transported Hessian (written out here in ambient
    coordinates: 1 along the geodesic, ``θ cot θ`` across it) along a great circle, where
    parallel transport is the rotation in the plane of the circle;
(2) one computed Newton step: ``ρ(μ⁺, x̄) ≤ (L d/2 + e) d/(h − e)``;
(3) the extrinsic start: ``m`` in the ball and ``ρ(m, x̄) ≤ d0``;
(4) the whole schedule: ``ρ(μ_K, x̄) ≤ accuracy``.
"""

import dataclasses

import numpy as np
import pytest

from manifold_dp import KendallShape2D, Sphere, frechet_mean
from manifold_dp.privacy.release import prepare_records
from manifold_dp.stats.frechet import _newton_steps, certified_frechet_mean, certified_schedule

FD_STEP = 1e-4  # arc length of the central difference (truncation ~1e-9, rounding ~1e-12)


def _constants(c):
    """``(L, e, d0)`` of the code's ``NewtonConstants``."""
    return c.L, c.e, c.extrinsic


# -- (1) the third derivative of ½ρ², by finite differences --------------------------------------

def _a(theta):
    return theta / np.tan(theta)


def _abs_a_prime(theta):
    return theta / np.sin(theta) ** 2 - 1.0 / np.tan(theta)


def _ell(theta):
    """The claimed bound on ``R‖∇ Hess(½ρ²_p)‖`` at angle ``θ`` from ``p``."""
    return _abs_a_prime(theta) + (1.0 - _a(theta)) / np.tan(theta)


def _ell_bar(theta):
    """``ℓ`` with ``cot θ`` raised to ``1/θ`` in its second term (what the code's ``L`` uses)."""
    return _abs_a_prime(theta) + (1.0 - _a(theta)) / theta


def _hessian(x, p, R):
    """Hess ½ρ²(·, p) at ``x`` as an ambient matrix, zero on the normal ``x``."""
    u, q = x / R, p / R
    w = q - (u @ q) * u
    s = np.linalg.norm(w)
    t = w / s
    theta = np.arctan2(s, u @ q)
    tangent = np.eye(len(x)) - np.outer(u, u)
    return np.outer(t, t) + _a(theta) * (tangent - np.outer(t, t))


def _rotation(x, X, alpha, R):
    """Rotation by ``alpha`` in the plane of ``x/R`` and the unit tangent ``X``: parallel transport
    along the great circle ``t ↦ exp_x(tX)`` from ``x`` to ``exp_x(αR X)``."""
    u = x / R
    return (np.eye(len(x)) + (np.cos(alpha) - 1.0) * (np.outer(u, u) + np.outer(X, X))
            + np.sin(alpha) * (np.outer(X, u) - np.outer(u, X)))


def _covariant_derivative(x, p, X, R):
    """``∇_X Hess(½ρ²_p)`` at ``x``: the transported Hessian differentiated in arc length."""
    out = []
    for t in (FD_STEP, -FD_STEP):
        Q = _rotation(x, X, t / R, R)
        out.append(Q.T @ _hessian(Q @ x, p, R) @ Q)
    return (out[0] - out[1]) / (2.0 * FD_STEP)


def _unit_tangent(x, v, R):
    v = v - (v @ x) * x / R**2
    return v / np.linalg.norm(v)


def _samples(dim, R, max_theta, count, rng):
    """``(x, p, θ, X)``: ``p`` at angle ``θ ≤ max_theta`` from ``x``; a third of the samples at
    ``max_theta`` with ``X`` along the geodesic (where the bound is tightest), the rest random."""
    for k in range(count):
        x = R * _unit_tangent(np.zeros(dim + 1), rng.standard_normal(dim + 1), 1.0)
        z = _unit_tangent(x, rng.standard_normal(dim + 1), R)
        theta = max_theta if k % 3 == 0 else rng.uniform(0.01, max_theta)
        p = R * (np.cos(theta) * x / R + np.sin(theta) * z)
        X = z if k % 3 == 0 else _unit_tangent(x, rng.standard_normal(dim + 1), R)
        yield x, p, theta, X


@pytest.mark.parametrize("dim", [2, 5, 30])
@pytest.mark.parametrize("R", [1.0, 2.5])
def test_third_derivative_is_within_ell(dim, R):
    rng = np.random.default_rng(100 + dim)
    ratios = [np.linalg.norm(_covariant_derivative(x, p, X, R), 2) / (_ell(theta) / R)
              for x, p, theta, X in _samples(dim, R, np.pi / 2 - 1e-3, 60, rng)]
    assert max(ratios) <= 1.0 + 1e-6
    # tight: along the geodesic near θ = π/2 the bound is |a′| + O(π/2 − θ)
    assert max(ratios) > 0.999


def test_third_derivative_closed_form_matches_finite_differences():
    # ∇_X Hess = (1/R)[a′⟨X,t⟩ P⊥ + (1 − a) cot θ (X⊥ tᵀ + t X⊥ᵀ)] up to the sign of t: its norm
    # along the geodesic is |a′|/R and across it (1 − a) cot θ/R, the two terms of ℓ
    rng = np.random.default_rng(7)
    R, theta = 2.5, 1.1
    x = R * _unit_tangent(np.zeros(4), rng.standard_normal(4), 1.0)
    z = _unit_tangent(x, rng.standard_normal(4), R)
    p = R * (np.cos(theta) * x / R + np.sin(theta) * z)
    across = _unit_tangent(x, _unit_tangent(z, rng.standard_normal(4), 1.0), R)
    across = _unit_tangent(x, across - (across @ z) * z, R)
    along = np.linalg.norm(_covariant_derivative(x, p, z, R), 2)
    perpendicular = np.linalg.norm(_covariant_derivative(x, p, across, R), 2)
    assert along == pytest.approx(_abs_a_prime(theta) / R, rel=1e-6)
    assert perpendicular == pytest.approx((1.0 - _a(theta)) / np.tan(theta) / R, rel=1e-6)


def test_ell_is_increasing_and_the_code_L_is_ell_bar():
    theta = np.linspace(1e-3, np.pi / 2 - 1e-9, 200_001)
    assert np.all(np.diff(_ell(theta)) > 0)
    assert np.all(_ell(theta) <= _ell_bar(theta))
    # the code's second term (1 − a)/θ is increasing; (1 − a) cot θ alone is not (it falls to 0 at π/2)
    assert np.all(np.diff(_ell_bar(theta)) > 0)
    assert np.argmax((1.0 - _a(theta)) / np.tan(theta)) < len(theta) - 1000
    for R in (1.0, 2.5):
        for r in (0.01, 0.3, np.pi / 8, 0.7, 0.78):
            L, e, d0 = _constants(Sphere(3, radius=R).newton_constants(r * R, 10))
            D = 2.0 * r
            assert L == pytest.approx(_ell_bar(D) / R, rel=1e-12)
            assert e == 1e-8 + 40 * np.finfo(float).eps
            assert d0 == pytest.approx(R * (D - np.sin(D)) / (2.0 * _a(D)), rel=1e-12)
        # the small-D branch bounds the series D + D³/9 + …
        D = 2e-5
        L, _, _ = _constants(Sphere(3, radius=R).newton_constants(D * R / 2, 10))
        assert D + D**3 / 9 <= L * R <= D * (1.0 + D * D)
    assert Sphere(2).newton_constants(np.pi / 4, 10) is None


def _worst_code_L_ratio(dim, R, r, rng):
    """Largest ``‖∇_X Hess(½ρ²_p)‖/L`` over points at distance ``≤ 2r`` (records and footpoints in
    a ball of radius ``r``), ``L`` the code's constant."""
    L, _, _ = _constants(Sphere(dim, radius=R).newton_constants(r, 5))
    return max(np.linalg.norm(_covariant_derivative(x, p, X, R), 2) / L
               for x, p, _, X in _samples(dim, R, 2.0 * r / R, 30, rng))


@pytest.mark.parametrize("dim,R,r", [(2, 1.0, 0.05), (2, 1.0, np.pi / 8), (5, 2.5, 1.5), (30, 1.0, 0.78)])
def test_code_L_bounds_the_third_derivative_on_the_ball(dim, R, r):
    assert _worst_code_L_ratio(dim, R, r, np.random.default_rng(3)) <= 1.0 + 1e-6


def test_halving_L_is_caught(monkeypatch):
    original = Sphere.newton_constants

    def halved(self, radius, n):
        c = original(self, radius, n)
        return dataclasses.replace(c, L=c.L / 2.0)

    monkeypatch.setattr(Sphere, "newton_constants", halved)
    assert _worst_code_L_ratio(2, 1.0, np.pi / 8, np.random.default_rng(3)) > 1.0


# -- adversarial layouts in B_r(c) -----------------------------------------------------------------

def _layouts(S, r, rng):
    c = S.origin
    u = S.random_unit_tangent(c, rng=rng)
    w = S.random_unit_tangent(c, rng=rng)
    w = (w - (w @ u) * u) / np.linalg.norm(w - (w @ u) * u)  # needs dim ≥ 2
    ring = np.linspace(0.0, 2.0 * np.pi, 12, endpoint=False)
    return {
        "boundary": S.exp(c, r * S.random_unit_tangent(c, 40, rng=rng)),
        "clusters at 2r": S.exp(c, r * np.array([u] * 7 + [-u] * 2)),
        "one record": S.exp(c, r * u[None]),
        "two records": S.exp(c, r * np.array([u, (0.2 * u + w) / np.hypot(0.2, 1.0)])),
        "three on the boundary": S.exp(c, r * np.array([u, -u, w, w, w])),
        "ring": S.exp(c, r * (np.cos(ring)[:, None] * u + np.sin(ring)[:, None] * w)),
        "arc": S.exp(c, r * (np.cos(ring[:4] / 3)[:, None] * u + np.sin(ring[:4] / 3)[:, None] * w)),
        "inside": S.exp(c, S.random_unit_tangent(c, 60, rng=rng) * r * rng.uniform(0, 1, (60, 1)) ** 2),
    }


def _exact_mean(S, X):
    res = frechet_mean(X, S, init=S.project(X.sum(0)), tol=1e-14, check_assumption=False)
    assert res.converged
    return res.point


# (dim, R, r): r* = πR/4; r = 0.7, 0.78 are near it on the unit sphere
CASES = [(2, 1.0, np.pi / 8), (2, 1.0, 0.7), (2, 1.0, 0.78), (5, 2.5, 1.25), (50, 1.0, 0.6)]


@pytest.mark.parametrize("dim,R,r", CASES)
def test_one_newton_step_obeys_the_recursion(dim, R, r):
    S, rng = Sphere(dim, radius=R), np.random.default_rng(dim)
    c = S.origin
    D = 2.0 * r / R
    h = _a(D)
    for name, X in _layouts(S, r, rng).items():
        n = len(X)
        L, e, _ = _constants(S.newton_constants(r, n))
        mean = _exact_mean(S, X)
        away = S.log(c, mean)
        away = -away / np.linalg.norm(away) if np.linalg.norm(away) > 0 else S.random_unit_tangent(c, rng=rng)
        starts = [c, S.exp(c, r * away), S.project(X.sum(0))]  # the centre, the far boundary, the extrinsic mean
        starts += list(S.exp(c, r * S.random_unit_tangent(c, 8, rng=rng)))
        starts += list(S.exp(c, S.random_unit_tangent(c, 8, rng=rng) * r * rng.uniform(0, 1, (8, 1))))
        for mu in starts:
            d = S.dist(mu, mean)
            g, A = S.newton_terms(mu, X, np.full(n, 1.0 / n))
            s = S.newton_step(mu, g, A)
            step_bound = (L * d * d / 2.0 + e * d) / (h - e)
            assert np.linalg.norm(s - S.log(mu, mean)) <= step_bound + 1e-13, name
            after = S.dist(S.clip_to_ball(S.exp(mu, s), c, r), mean)
            assert after <= (L * d / 2.0 + e) * d / (h - e) + 1e-13, name


@pytest.mark.parametrize("dim,R,r", CASES)
def test_extrinsic_start_is_in_the_ball_and_within_d0(dim, R, r):
    S = Sphere(dim, radius=R)
    for name, X in _layouts(S, r, np.random.default_rng(dim)).items():
        _, _, d0 = _constants(S.newton_constants(r, len(X)))
        m = S.project(X.sum(0))
        assert S.dist(S.origin, m) <= r * (1 + 1e-12), name
        assert S.dist(m, _exact_mean(S, X)) <= d0, name


@pytest.mark.parametrize("r", [0.01, 0.3, np.pi / 8, 0.7])
def test_extrinsic_start_worst_case_two_weighted_points(r):
    # the worst layout found (Nelder–Mead over 2–4 weighted records): two points 2r apart,
    # weights ≈ 0.79/0.21; the ratio ρ(m, x̄)/d0 is then ≈ 0.19 (r → 0), 0.16 (π/8), 0.057 (0.7)
    S = Sphere(2)
    a, b = S.exp(S.origin, np.array([r, 0.0, 0.0])), S.exp(S.origin, np.array([-r, 0.0, 0.0]))
    worst = 0.0
    for heavy in (3, 4, 11):  # weights 3/4, 4/5, 11/14
        X = np.array([a] * heavy + [b])
        _, _, d0 = _constants(S.newton_constants(r, len(X)))
        worst = max(worst, S.dist(S.project(X.sum(0)), _exact_mean(S, X)) / d0)
    assert worst <= 1.0
    assert worst > 0.04  # not vacuous: the start is off the minimiser by a fair share of d0


# -- (4) the schedule, end to end ------------------------------------------------------------------

@pytest.mark.parametrize("dim,R,r", CASES)
def test_certified_mean_reaches_its_accuracy(dim, R, r):
    S = Sphere(dim, radius=R)
    for name, X in _layouts(S, r, np.random.default_rng(dim + 1)).items():
        mean = _exact_mean(S, X)
        for accuracy in (1e-6, 1e-9, 1e-11):
            assert S.dist(certified_frechet_mean(S, X, S.origin, r, accuracy), mean) <= accuracy, (name, accuracy)


@pytest.mark.parametrize("R", [1.0, 2.5])
def test_certified_mean_of_prepared_records_reaches_its_accuracy(R):
    # a release's records are PreparedRecords: the Newton passes read them as prepared
    S, r = Sphere(2, radius=R), np.pi / 8 * R
    for name, X in _layouts(S, r, np.random.default_rng(5)).items():
        mean = _exact_mean(S, X)
        records = prepare_records(S, X, S.origin, r)[0]
        for accuracy in (1e-6, 1e-11):
            assert S.dist(certified_frechet_mean(S, records, S.origin, r, accuracy), mean) <= accuracy, (name, accuracy)


def _guaranteed(plan, S, r, n):
    """The schedule's bound recomputed: ``d`` at the start, then the Newton recursion."""
    L, e, d0 = _constants(S.newton_constants(r, n))
    h, H = plan.h, plan.H
    c = S.newton_constants(r, n)
    if plan.start == "extrinsic":
        d = min(d0, r)
    elif plan.start == "tangent":  # a Newton step with Ĥ = I: ‖I − Hess F(c)‖ ≤ 1 − (r/R) cot(r/R)
        assert c.tangent == pytest.approx(1.0 - _a(r / S.radius), rel=1e-12)
        d = (L * r * r / 2.0 + c.tangent * r)
    else:
        d = min(2.0 * r, np.sqrt((1.0 - h / H) ** plan.gradient_steps * r * r / h)) if plan.gradient_steps else r
    for _ in range(plan.newton_steps):
        d = (L * d / 2.0 + e) * d / (h - e)
    return d


def test_schedule_choices():
    S2, n = Sphere(2), 20
    plan = certified_schedule(S2, np.pi / 8, 1e-9, n)
    assert (plan.start, plan.gradient_steps) == ("extrinsic", 0) and 1 <= plan.newton_steps <= 4
    # near r*, Newton cannot contract from the extrinsic start nor from the centre: gradient steps come first
    c = S2.newton_constants(0.78, n)
    _L, _e, d0 = _constants(c)
    h = _a(1.56)
    assert _newton_steps(min(d0, 1.56), c, h, 1e-9) is None and _newton_steps(0.78, c, h, 1e-9) is None
    plan = certified_schedule(S2, 0.78, 1e-9, n)
    assert plan.start == "center" and plan.gradient_steps > 0
    # in high dimension a Newton pass costs too much: gradient steps only
    plan = certified_schedule(Sphere(50), np.pi / 8, 1e-9, n)
    assert plan.newton_steps == 0 and plan.gradient_steps > 0
    for S, r in [(S2, 0.05), (S2, np.pi / 8), (S2, 0.7), (S2, 0.78), (Sphere(5, radius=2.5), 1.25), (Sphere(50), 0.78)]:
        for accuracy in (1e-6, 1e-9, 1e-11):
            plan = certified_schedule(S, r, accuracy, n)
            if plan.newton_steps:
                assert _guaranteed(plan, S, r, n) <= accuracy
            else:
                assert (1.0 - plan.h / plan.H) ** plan.gradient_steps * r * r / plan.h <= accuracy**2


# -- affine-invariant SPD: the same claims end to end (the geometric bounds: tests/test_newton_spd.py) --

def _spd_layouts(m, r, rng):
    """Adversarial record sets in ``B_r(I)`` on SPD(k): ``exp_I`` of tangent vectors of norm ≤ r."""
    k = m.k

    def unit(a):
        a = (a + a.T) / 2.0
        return a / np.linalg.norm(a)

    u, w = unit(rng.standard_normal((k, k))), unit(rng.standard_normal((k, k)))  # do not commute
    diag = unit(np.diag(rng.standard_normal(k)))
    ring = np.linspace(0.0, 2.0 * np.pi, 10, endpoint=False)
    dirs = {
        "boundary": [unit(rng.standard_normal((k, k))) for _ in range(30)],
        "clusters at 2r": [u] * 7 + [-u] * 2,
        "one record": [u],
        "non-commuting pair": [u, w],
        "ring": [unit(np.cos(a) * u + np.sin(a) * w) for a in ring],
        "commuting ring": [unit(np.cos(a) * diag + np.sin(a) * unit(np.diag(rng.standard_normal(k)))) for a in ring[:4]],
    }
    out = {name: m.exp(np.eye(k), r * np.array(v)) for name, v in dirs.items()}
    inside = [unit(rng.standard_normal((k, k))) * r * rng.uniform() ** 2 for _ in range(40)]
    out["inside"] = m.exp(np.eye(k), np.array(inside))
    return out


SPD_CASES = [(2, 0.5), (3, 0.25), (3, 0.5), (5, 0.5), (4, 1.0)]


@pytest.mark.parametrize("k,r", SPD_CASES)
def test_spd_one_newton_step_obeys_the_recursion(k, r):
    """From the centre, the far boundary and random points of the ball: one computed step (with
    the truncated Hessian) lands within the recursion's bound; the tangent step too (Ĥ = I)."""
    from manifold_dp import SPDAffineInvariant
    from manifold_dp.stats.frechet import _newton_bound

    m, rng = SPDAffineInvariant(k), np.random.default_rng(10 + k)
    c = np.eye(k)
    for name, X in _spd_layouts(m, r, rng).items():
        n = len(X)
        const = m.newton_constants(r, n)
        mean = frechet_mean(X, m, tol=1e-14, max_iter=200).point
        # the tangent step from the centre, the free first step of the schedule
        tangent = m.clip_to_ball(m.exp(c, m.weighted_log_sum(c, X, np.full(n, 1.0 / n))), c, r)
        assert m.dist(tangent, mean) <= _newton_bound(m.dist(c, mean), const, 1.0, const.tangent) + 1e-12, name
        away = m.log(c, mean)
        away = -away / np.linalg.norm(away) if np.linalg.norm(away) > 1e-12 else np.eye(k) / np.sqrt(k)
        starts = [c, m.exp(c, r * away), tangent]
        starts += [m.exp(c, r * rng.uniform() * (a + a.T) / np.linalg.norm(a + a.T)) for a in rng.standard_normal((6, k, k))]
        for mu in starts:
            d = m.dist(mu, mean)
            g, H = m.newton_terms(mu, X, np.full(n, 1.0 / n))
            after = m.dist(m.clip_to_ball(m.exp(mu, m.newton_step(mu, g, H)), c, r), mean)
            assert after <= _newton_bound(d, const, 1.0, const.e) + 1e-12, name


@pytest.mark.parametrize("k,r", SPD_CASES)
def test_spd_certified_mean_reaches_its_accuracy(k, r):
    from manifold_dp import SPDAffineInvariant

    m = SPDAffineInvariant(k)
    for name, X in _spd_layouts(m, r, np.random.default_rng(20 + k)).items():
        records = prepare_records(m, X, m.origin, r)[0]
        assert m.dist(m.origin, np.asarray(records)).max() <= r * (1 + 1e-9)
        mean = frechet_mean(np.asarray(records), m, tol=1e-14, max_iter=200).point
        for accuracy in (1e-6, 1e-9, 5e-11):
            plan = certified_schedule(m, r, accuracy, len(X))
            assert plan.newton_steps > 0 or r >= 1.0
            for given in (records, np.asarray(records)):  # carried log mean, or a pass for it
                assert m.dist(certified_frechet_mean(m, given, m.origin, r, accuracy), mean) <= accuracy, (name, accuracy)


def test_spd_schedule_takes_newton_steps_where_they_pay():
    from manifold_dp import SPDAffineInvariant

    plan = certified_schedule(SPDAffineInvariant(10), 0.5, 5e-11, 10**5)
    assert (plan.start, plan.gradient_steps, plan.newton_steps) == ("tangent", 0, 3)  # five with φ to second order
    # cheaper Hessians and coarser logs while the bound is far above their errors
    assert [o[0] for o in plan.orders] == [2, 4, 6] and [o[1] for o in plan.orders] == sorted(o[1] for o in plan.orders)[::-1]
    assert "Hessians of order 2 (logs to 7.6e-06)/4 (logs to 7.5e-09)/6 (logs to 9.1e-13)" in plan.describe(5e-11)
    # e = D⁸/75600 ≈ 0.87 at D = 4: e/(h − e) > 1, the recursion does not contract
    gradient_only = certified_schedule(SPDAffineInvariant(10), 2.0, 5e-11, 10**5)
    assert gradient_only.newton_steps == 0 and gradient_only.gradient_steps > 50


def test_an_accuracy_that_covers_the_ball_takes_no_step():
    """The exact minimiser lies in the ball, within ``r`` of the centre: an accuracy ``≥ r`` (huge
    sensitivities near ``r*`` with few records) is met by the centre itself, with no pass and no
    refusal (before, the gradient bound ``r²/h`` asked for billions of steps and the release was refused)."""
    S = Sphere(2)
    plan = certified_schedule(S, 0.5, 0.6, 10)
    assert plan.passes == 0 and plan.start == "center" and "centre itself" in plan.describe(0.6)
    X = S.random_point(S.origin, 0.5, size=10, rng=0)
    assert np.array_equal(certified_frechet_mean(S, X, S.origin, 0.5, 0.6), S.origin)
    assert certified_schedule(S, 0.5, 1e-3, 10).passes > 0
    assert certified_schedule(S, np.float64(0.5), np.array(0.6), np.int64(10)) == plan  # numpy scalars are public values too
    K = KendallShape2D(5)  # no Newton constants: the same rule
    assert certified_schedule(K, np.pi / 8 - 1e-9, np.pi / 8, 10).passes == 0
    start = certified_schedule(S, 0.3, 0.05, 10)  # the extrinsic mean's own bound is enough
    assert (start.start, start.passes) == ("extrinsic", 0) and "extrinsic mean, within" in start.describe(0.05)
