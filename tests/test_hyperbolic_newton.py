"""The certified mean's Newton steps on hyperbolic space (docs/theory.md §2, "Hyperbolic space"):
each public constant against the quantity it bounds, the passes against the generic ones, and the
certified mean against the exact minimiser on hostile datasets."""

import math

import numpy as np
import pytest

from manifold_dp import Hyperbolic
from manifold_dp.manifolds.kernels.hyperbolic_passes import centroid_gradient_bound, hessian_lipschitz
from manifold_dp.manifolds.kernels.passes import RecordPasses
from manifold_dp.privacy import release
from manifold_dp.stats.frechet import _newton_bound, certified_frechet_mean, certified_schedule, frechet_mean


def _hess_half_sq(p, x):
    """``Hess ½ρ²(·, p)`` at ``x`` as a symmetric form on ``R^(d+1)`` (restricted to ``T_x``)."""
    m = Hyperbolic(len(x) - 1)
    v = m.log(x, p)
    rho = float(m.norm(x, v))
    a = rho / math.tanh(rho) if rho > 1e-12 else 1.0
    J = np.diag([-1.0] + [1.0] * (len(x) - 1))
    u = -(J @ v) / rho if rho > 1e-12 else np.zeros_like(v)
    return a * J + (1.0 - a) * np.outer(u, u)


def _transport(x, y, v):
    """Parallel transport of ``v ∈ T_x`` to ``T_y`` along the geodesic (hyperboloid model)."""
    from manifold_dp.manifolds.hyperbolic import minkowski
    return v + minkowski(y, v) / (1.0 - minkowski(x, y)) * (x + y)


def _tangent_basis(x):
    m = Hyperbolic(len(x) - 1)
    return np.stack([m.from_tangent_coordinates(x, e) for e in np.eye(len(x) - 1)], axis=1)


@pytest.mark.parametrize("D", [0.3, 1.0, 2.0, 3.0])
def test_hessian_lipschitz_bounds_the_third_derivative(D):
    """``‖Π Hess(γ(t)) Π⁻¹ − Hess(γ(0))‖/t ≤ ℓ(D)`` along random geodesics whose points stay
    within ``D`` of ``p``; the largest ratio seen is more than half of ``ℓ(D)`` (so halving the
    bound is caught)."""
    m, rng = Hyperbolic(3), np.random.default_rng(0)
    L, worst = hessian_lipschitz(D), 0.0
    for _ in range(200):
        p = m.origin
        x = m.exp(p, m.random_unit_tangent(p, rng=rng) * rng.uniform(0.05, D - 0.02))
        direction = m.random_unit_tangent(x, rng=rng)
        t = 1e-4
        y = m.exp(x, t * direction)
        if float(m.dist(p, y)) > D:
            continue
        E0, E1 = _tangent_basis(x), np.stack([_transport(x, y, e) for e in _tangent_basis(x).T], axis=1)
        H0, H1 = E0.T @ _hess_half_sq(p, x) @ E0, E1.T @ _hess_half_sq(p, y) @ E1
        worst = max(worst, float(np.linalg.norm(H1 - H0, 2)) / t)
    assert worst <= L * (1 + 1e-3)
    assert worst > 0.5 * L


@pytest.mark.parametrize("D", [1e-3, 1e-2])
def test_centroid_gradient_bound_small_diameters(D):
    """Near 0 the minimax is ``D³/24 + O(D⁵)`` (``c = 1 − k``: the peak ``(2/3)k√(2k)`` balances
    ``D³/6 − kD`` at ``k = D²/8``), where a direct evaluation of ``θ − c sinh θ`` cancels."""
    b = centroid_gradient_bound(D)
    assert D**3 / 24 * (1 - 1e-5) <= b <= D**3 / 24 * (1 + 1e-4)


@pytest.mark.parametrize("D", [0.1, 1.0, 2.0, 4.0, 6.0])
def test_centroid_gradient_bound_is_the_minimax(D):
    """The bound is ``min_c max_θ |θ − c sinh θ|`` (a dense grid of ``θ``, the best ``c`` by a
    bounded scalar search: within 1e-4 of it, never more than 1e-4 below) and at most the midpoint
    bound ``(sinh D − D)/2``."""
    from scipy.optimize import minimize_scalar

    theta = np.linspace(0.0, D, 200001)
    worst = lambda c: float(np.max(np.abs(theta - c * np.sinh(theta))))
    best = minimize_scalar(worst, bounds=(D / math.sinh(D), 1.0), method="bounded", options=dict(xatol=1e-14)).fun
    b = centroid_gradient_bound(D)
    assert best * (1 - 1e-4) <= b <= best * (1 + 1e-4)
    assert b <= (math.sinh(D) - D) / 2 * (1 + 1e-12)


def _hostile(m, c, r, rng):
    """Datasets in ``B_r(c)`` that push the centroid and the mean apart: two clusters of unequal
    weight on opposite sides of the boundary, one record far from the rest, a shell."""
    u = m.random_unit_tangent(c, rng=rng)
    far, near = m.exp(c, r * u), m.exp(c, -r * u)
    sets = [np.array([far] * 3 + [near]), np.array([far] + [near] * 9), np.array([far] * 50 + [c]),
            m.exp(c, m.random_unit_tangent(c, size=40, rng=rng) * r)]
    w = m.random_unit_tangent(c, rng=rng)
    sets.append(np.array([m.exp(c, r * u), m.exp(c, r * w), m.exp(c, -r * w)]))
    return sets


@pytest.mark.parametrize("r", [0.05, 0.5, 1.0, 1.5])
def test_centroid_start_within_its_bound(r):
    """The Lorentzian centroid lies in the ball, and its distance to the exact mean is within the
    public bound ``extrinsic`` (``newton_constants``)."""
    m, rng = Hyperbolic(3), np.random.default_rng(1)
    c = m.exp(m.origin, np.array([0.0, 0.4, -0.2, 0.1]))
    for X in _hostile(m, c, r, rng):
        mean = frechet_mean(X, m, tol=1e-14).point
        start = m.mean_start(np.mean(X, axis=0))
        assert float(m.dist(start, c)) <= r * (1 + 1e-12)
        assert float(m.dist(start, mean)) <= m.newton_constants(r, len(X)).extrinsic


def test_exp_stretch_is_bounded_by_the_expansion():
    """``ρ(exp_μ s, exp_μ v) ≤ E(max(|s|, |v|))·|s − v|`` with ``E(T) = sinh(T)/T``: the stretch the
    schedule's recursion assumes (``expansion = 1``), and more than 1 (the sphere's 1-Lipschitz
    ``exp`` would not do here)."""
    m, rng = Hyperbolic(4), np.random.default_rng(2)
    k = m.newton_constants(1.0, 10).expansion
    most = 0.0
    for _ in range(300):
        mu = m.random_point(m.origin, 1.0, rng=rng)
        v = m.random_unit_tangent(mu, rng=rng) * rng.uniform(0.0, 2.0)
        s = v + m.random_unit_tangent(mu, rng=rng) * rng.uniform(0.0, 0.5)
        T = max(float(m.norm(mu, s)), float(m.norm(mu, v)))
        E = math.sinh(math.sqrt(k) * T) / (math.sqrt(k) * T) if k > 0 else 1.0
        ratio = float(m.dist(m.exp(mu, s), m.exp(mu, v))) / float(m.norm(mu, s - v))
        assert ratio <= E * (1 + 1e-9)
        most = max(most, ratio)
    assert most > 1.2


def test_newton_pass_gives_the_gradient_and_hessian():
    """``newton_terms``: the gradient equals the generic ``Σ w log``; at the minimiser the Hessian
    equals a finite-difference Hessian of the gradient field (tangent coordinates)."""
    m = Hyperbolic(5)
    c = m.exp(m.origin, np.r_[0.0, np.full(5, 0.3)])
    X = m.random_point(c, 1.0, size=300, rng=3)
    w = np.full(len(X), 1.0 / len(X))
    x = m.random_point(c, 0.5, rng=4)
    g, _ = m.newton_terms(x, X, w)
    generic = m.to_tangent_coordinates(x, RecordPasses.weighted_log_sum(m, x, X, w))
    np.testing.assert_allclose(g, generic, atol=1e-14)
    mu = frechet_mean(X, m, tol=1e-14).point
    _, A = m.newton_terms(mu, X, w)

    def grad(y):
        return m.to_tangent_coordinates(y, RecordPasses.weighted_log_sum(m, y, X, w))
    h, fd = 1e-5, np.zeros((5, 5))
    for j in range(5):
        e = np.zeros(5)
        e[j] = h
        fd[:, j] = -(grad(m.exp(mu, m.from_tangent_coordinates(mu, e))) - grad(m.exp(mu, m.from_tangent_coordinates(mu, -e)))) / (2 * h)
    np.testing.assert_allclose(A, fd, atol=1e-8)


@pytest.mark.parametrize("r", [0.01, 0.1, 0.5, 1.0, 1.5])
def test_certified_mean_reaches_its_accuracy(r):
    """On hostile datasets the certified mean (Newton schedule) is within the accuracy of the exact
    minimiser, and the schedule takes Newton steps."""
    m, rng = Hyperbolic(3), np.random.default_rng(5)
    c = m.exp(m.origin, np.array([0.0, -0.3, 0.2, 0.5]))
    a = 1e-10 * r
    for X in _hostile(m, c, r, rng):
        plan = certified_schedule(m, r, a, len(X))
        assert plan.newton_steps > 0
        mu = certified_frechet_mean(m, X, c, r, a)
        exact = frechet_mean(X, m, tol=1e-15).point
        assert float(m.dist(mu, exact)) <= a + 1e-13


def test_schedule_bounds_contract_to_the_accuracy():
    """The public recursion from the centroid's bound reaches the accuracy in the schedule's steps
    (r = 1, n = 10⁵: five passes) where the gradient steps alone took 161."""
    m = Hyperbolic(10)
    c = m.newton_constants(1.0, 10**5)
    plan = certified_schedule(m, 1.0, 1e-10, 10**5)
    assert (plan.start, plan.gradient_steps, plan.newton_steps) == ("extrinsic", 0, 5)
    d = c.extrinsic
    for _ in range(plan.newton_steps):
        d = _newton_bound(d, c, 1.0, c.e)
    assert d <= 1e-10


def test_fused_preparation_matches_the_generic_pass():
    """``prepare_block`` against the generic preparation: invalid records (NaN, off the
    hyperboloid, lower sheet) become the centre, the others are clipped; the log sum agrees."""
    m = Hyperbolic(4)
    c = m.exp(m.origin, np.array([0.0, 0.5, 0.1, -0.2, 0.3]))
    X = m.random_point(c, 2.0, size=500, rng=6)
    X[3] = np.nan
    X[4] *= 1.1
    X[5] = -X[5]
    X[6] = c
    fused = m.prepare_block(X, c, 1.0, 1 / 500)
    generic = release._prepare_chunk(type("Plain", (Hyperbolic,), {"prepare_block": lambda self, *a, **k: None})(4),
                                     X, c, 1.0, 1 / 500)
    for a, b in zip(fused, generic):
        np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), atol=1e-13)
    assert fused[2][[3, 4, 5]].sum() == 0 and fused[3].sum() > 0


@pytest.mark.parametrize("s", [1e100, 1e153, 1.3e154])
@pytest.mark.parametrize("kw", [dict(radius=1.5), dict(radius=2.0, mechanism="kng"), dict(radius="auto"),
                                dict(radius=0.5)])
def test_a_far_valid_record_is_clipped_not_fatal(s, kw):
    """A record on the hyperboloid with coordinates up to ~1e154, beside a centre away from e0:
    its squared tangent coordinates in the centre's frame overflow, yet its neighbour at the
    centre and it both release (the same outcome), and it is clipped to the boundary point
    towards it."""
    from manifold_dp import private_frechet_mean
    from manifold_dp.privacy.accounting import PrivacyAccountant

    m = Hyperbolic(3)
    c = m.exp(m.origin, np.array([0.0, 3.0, 0.0, 0.0]))
    X = np.tile(c, (20, 1))
    Y = X.copy()
    Y[0] = [math.sqrt(1 + s * s), -s, 0.0, 0.0]
    assert m.belongs(Y[0])
    for D in (X, Y):
        acc = PrivacyAccountant(epsilon=100)
        rel = private_frechet_mean(D, m, epsilon=1.0, center=c, rng=0, accountant=acc, **kw)
        assert np.all(np.isfinite(rel.point)) and m.belongs(rel.point)
    records, _, ok, moved, g = m.prepare_block(Y, c, 1.0, 1 / 20)
    assert ok[0] and moved[0] and np.all(np.isfinite(g))
    assert abs(float(m.dist(c, records[0])) - 1.0) < 1e-9
    toward = m.log(c, records[0])
    direction = m.log(c, m.exp(m.origin, np.array([0.0, -1.0, 0.0, 0.0])))  # the record lies along −x1 from c
    assert float(m.inner(c, toward, direction)) > 0


@pytest.mark.parametrize("kappa", [-1.0, -0.5])
@pytest.mark.parametrize("r", [0.05, 0.5, 1.0, 3.0, 8.0])
def test_gradient_step_bound_covers_its_own_step(kappa, r):
    """``H ≥ hessian_upper_bound(2r(1 + 1/H))`` (a step of length ``≤ 2r/H`` keeps every record
    within ``2r(1 + 1/H)``), within 1e-9 of the fixed point, and never above the ``4r`` bound."""
    from manifold_dp.stats.frechet import gradient_step_bound, hessian_upper_bound

    H = gradient_step_bound(r, kappa)
    assert H >= hessian_upper_bound(2 * r * (1 + 1 / H), kappa)
    assert H <= hessian_upper_bound(4 * r, kappa)
    assert hessian_upper_bound(2 * r * (1 + 1 / (H * (1 - 1e-9))), kappa) <= H * (1 + 1e-8) or H == 1.0


def test_a_pass_over_prepared_records_takes_the_plain_norms_with_the_same_bits():
    """``newton_terms(..., ball=r)`` (records prepared into the ball) takes plain row norms; they
    are bit for bit the overflow-safe ones there, so the two passes agree exactly."""
    from manifold_dp.privacy.release import prepare_records

    H = Hyperbolic(10)
    rng = np.random.default_rng(21)
    c = H.exp(H.origin, 2.0 * H.random_unit_tangent(H.origin, rng=rng))
    for r in (1e-6, 0.5, 3.0):
        raw = H.random_point(c, 1.5 * r, size=3000, rng=rng)
        raw[::97] *= 2.0**-40  # coordinates near the flush threshold after the boost
        X, _ = prepare_records(H, raw, c, r, log_mean=False)
        x = H.exp(c, 0.7 * r * H.random_unit_tangent(c, rng=rng))
        plain = H.newton_terms(x, np.asarray(X), 1 / 3000, ball=r)
        safe = H.newton_terms(x, np.asarray(X), 1 / 3000, None)
        assert np.array_equal(plain[0], safe[0]) and np.array_equal(plain[1], safe[1])
