"""The affine-invariant SPD Newton passes without the ``k² × k²`` Hessian (``k ≥ MATRIX_FREE_MIN_K``;
docs/theory.md §2, "(v) Without the dense Hessian"), attacked numerically:

(1) ``chebyshev_error`` bounds the relative error of ``chebyshev_solve`` on any spectrum in the
    interval, and is attained (to 1 %) where the right-hand side sits on the interval's ends;
(2) ``TruncatedHessian.apply`` is the dense ``Ĥ`` of ``newton_terms`` (every order, equal and
    unequal weights, blocks joined by ``+``);
(3) the spectrum of ``Ĥ`` lies in ``[W, κW]``, ``κ = _hessian_ratio(r, k)``, for records on the far
    side of the ball (distances up to ``2r``), and nearly fills it for two-level logs;
(4) every matrix-free level's step is within ``solve·‖s‖`` of the exact solution with its ``Ĥ``,
    and its gradient within its ``g`` of the ``eigh`` path;
(5) the certified mean agrees with the dense path's within the accuracy, both within it of a
    converged reference; the schedule switches at the public threshold;
(6) no subnormal arithmetic on hostile records; memory and block sizes at ``k = 50``.
"""

import math
import tracemalloc
import warnings

import numpy as np
import pytest

from manifold_dp import SPDAffineInvariant, private_frechet_mean
from manifold_dp.data import eigen_spd
from manifold_dp.manifolds.kernels import spd_hessian, spd_passes
from manifold_dp.manifolds.kernels.spd_hessian import TruncatedHessian, chebyshev_error, chebyshev_solve
from manifold_dp.manifolds.kernels.spd_passes import (
    CHEBYSHEV_STEPS,
    LOG_BAND_COARSE,
    LOG_BAND_TOL,
    MATRIX_FREE_MIN_K,
    _band_half_width,
    _hessian_ratio,
    _log_band,
)
from manifold_dp.manifolds.matrix import eig_apply, expm_sym, sqrtm_spd, sym
from manifold_dp.privacy.release import prepare_records
from manifold_dp.stats import frechet
from manifold_dp.stats.frechet import certified_frechet_mean, certified_schedule, frechet_mean

SCALES = (1.0 / 12.0, -1.0 / 720.0, 1.0 / 30240.0)


def _sym_basis(k):
    basis = []
    for i in range(k):
        for j in range(i, k):
            e = np.zeros((k, k))
            e[i, j] = e[j, i] = 1.0 if i == j else 1.0 / np.sqrt(2.0)
            basis.append(e)
    return np.array(basis)


def _far_side(spd, k, radius, n, rng):
    """Prepared records on the far side of ``B_r(I)`` from a footpoint ``x`` on its boundary."""
    v = sym(rng.standard_normal((k, k)))
    v /= np.linalg.norm(v)
    x = expm_sym(radius * v)
    tangents = -v + 0.3 * np.array([sym(rng.standard_normal((k, k))) for _ in range(n)]) / k
    records, _ = prepare_records(spd, expm_sym(2.0 * radius * tangents), np.eye(k), radius)
    return x, records


def _free_spec(spd, radius, order, tol=LOG_BAND_TOL, steps=3):
    return (order, tol, steps, _hessian_ratio(radius, spd.k))


def _matrix(op, k):
    basis = _sym_basis(k)
    return np.einsum("aij,bij->ab", basis, np.array([op(b) for b in basis]))


# -- (1) Chebyshev steps ---------------------------------------------------------------------------

@pytest.mark.parametrize("ratio", [1.05, 1.17, 1.7, 3.0])
def test_chebyshev_error_bounds_the_solve_and_is_attained(ratio):
    rng = np.random.default_rng(700)
    d = 30
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    lo = 0.7
    spectrum = lo * np.concatenate([[1.0, ratio], rng.uniform(1.0, ratio, d - 2)])
    A = Q @ np.diag(spectrum) @ Q.T
    for steps in range(1, 11):
        bound = chebyshev_error(steps, ratio)
        worst = 0.0
        for trial in range(6):
            b = rng.standard_normal(d) if trial else Q[:, 0] + Q[:, 1]  # the interval's two ends
            s = np.linalg.solve(A, b)
            x = chebyshev_solve(lambda y: A @ y, b, steps, lo, lo * ratio)
            worst = max(worst, np.linalg.norm(x - s) / np.linalg.norm(s))
        assert worst <= bound * (1 + 1e-9) + 1e-14, (steps, worst / bound)
        if bound > 1e-10:
            assert worst >= 0.99 * bound, (steps, worst / bound)


def test_chebyshev_error_is_its_formula():
    for ratio in (1.01, 1.2, 2.5):
        sigma = (ratio + 1) / (ratio - 1)
        for steps in (1, 2, 5, 12):
            assert chebyshev_error(steps, ratio) == pytest.approx(1 / math.cosh(steps * math.acosh(sigma)), rel=1e-14)
            assert chebyshev_error(steps, ratio) >= 1 / math.cosh(steps * math.acosh(sigma)) * (1 + 0.9 * 2.0**-40)
    with pytest.raises(ValueError, match="steps >= 1"):
        chebyshev_error(0, 1.2)


def test_chebyshev_solve_takes_steps_minus_one_products():
    calls = []
    A = np.diag([1.0, 1.1, 1.2])
    for steps in (1, 2, 3, 7):
        calls.clear()
        chebyshev_solve(lambda y: calls.append(1) or A @ y, np.ones(3), steps, 1.0, 1.2)
        assert len(calls) == steps - 1


# -- (2) the operator is the dense Ĥ -----------------------------------------------------------------

@pytest.mark.parametrize("order", [2, 4, 6])
def test_apply_is_the_dense_truncated_hessian(order):
    k, n, radius = 16, 90, 0.5
    rng = np.random.default_rng(710 + order)
    spd = SPDAffineInvariant(k)
    x, records = _far_side(spd, k, radius, n, rng)
    for weights in (1.0 / n, rng.dirichlet(np.ones(n))):
        _, H = spd.newton_terms(x, records, weights, ball=radius, order=order)
        g, op = spd.newton_terms(x, records, weights, ball=radius, order=_free_spec(spd, radius, order))
        g_dense, _ = spd.newton_terms(x, records, weights, ball=radius, order=order)
        assert np.abs(g - g_dense).max() <= 1e-14
        X = sym(rng.standard_normal((k, k)))
        dense = (H @ X.reshape(-1)).reshape(k, k)
        assert np.abs(op.apply(X) - dense).max() <= 1e-13 * np.abs(dense).max()
        halves = TruncatedHessian([op.logs[0][:40]], [op.weights[0] if np.ndim(op.weights[0]) == 0 else op.weights[0][:40]],
                                  op.scales, op.steps, op.ratio)
        rest = TruncatedHessian([op.logs[0][40:]], [op.weights[0] if np.ndim(op.weights[0]) == 0 else op.weights[0][40:]],
                                op.scales, op.steps, op.ratio)
        joined = sum([halves, rest])
        assert np.abs(joined.apply(X) - op.apply(X)).max() <= 1e-14 * np.abs(dense).max()
        assert joined.total == pytest.approx(op.total, rel=1e-15)


# -- (3) the spectral interval -----------------------------------------------------------------------

def test_hessian_ratio_is_its_formula():
    for k, radius in ((16, 0.05), (16, 0.5), (50, 0.5), (100, 1.0)):
        spread = 2 * radius + np.sqrt(k) * (_band_half_width(radius, k) - 2 * radius + 2.0**-16)
        t2 = spread**2 / 2
        expected = (1 + t2 / 3) * (1 + 2.0**-20) / (1 - 2.0**-20)
        assert _hessian_ratio(radius, k) == pytest.approx(expected, rel=1e-15)
    assert _band_half_width(0.5, 50) == pytest.approx(1.0 + 2.0**-10 + np.exp(1.0) / (8 * 50**1.5), rel=1e-15)
    assert _hessian_ratio(2.5, 16) is None  # T² > 10: no proven interval, the dense path stays
    assert SPDAffineInvariant(16).newton_constants(2.5, 100).solve == 0.0


@pytest.mark.parametrize("order", [2, 4, 6])
@pytest.mark.parametrize("radius", [0.25, 0.5, 1.0])
def test_spectrum_lies_in_the_public_interval(order, radius):
    k, n = 16, 60
    rng = np.random.default_rng(720 + order)
    spd = SPDAffineInvariant(k)
    x, records = _far_side(spd, k, radius, n, rng)
    assert float(spd.dist(x, records).max()) >= 1.9 * radius
    weights = rng.dirichlet(np.ones(n)) * 1.7
    _, op = spd.newton_terms(x, records, weights, ball=radius, order=_free_spec(spd, radius, order))
    eig = np.linalg.eigvalsh(_matrix(op.apply, k))
    W = weights.sum()
    assert eig[0] >= W * (1 - 1e-12) and eig[-1] <= W * _hessian_ratio(radius, k)


@pytest.mark.parametrize("order", [2, 4, 6])
def test_interval_is_nearly_filled_by_two_level_logs(order):
    """One record with logs ``(a, −a, 0, …)``, ``a = ρ/√2``: ``t = a`` attains ``ρ/√2`` and the
    top eigenvalue ``φ̂(a)`` is within the order's terms of ``1 + a²/3``; the interval's only slack
    is the logs' public error allowance."""
    k, radius = 16, 0.5
    a = 2 * radius / np.sqrt(2.0)
    logs = np.zeros((1, k, k))
    logs[0, 0, 0], logs[0, 1, 1] = a, -a
    op = TruncatedHessian([logs], [1.0], SCALES[:order // 2], 3, _hessian_ratio(radius, k))
    top = np.linalg.eigvalsh(_matrix(op.apply, k))[-1]
    phi_hat = 1 + a**2 / 3 - (a**4 / 45 if order >= 4 else 0) + (2 * a**6 / 945 if order >= 6 else 0)
    assert top == pytest.approx(phi_hat, rel=1e-12)
    assert (top - 1) >= 0.85 * (_hessian_ratio(radius, k) - 1)


# -- (4) every matrix-free level covers its errors -------------------------------------------------------

@pytest.mark.parametrize("k, radius", [(16, 0.5), (20, 0.3)])
def test_matrix_free_levels_cover_their_errors(k, radius):
    rng = np.random.default_rng(730 + k)
    spd = SPDAffineInvariant(k)
    n = 80
    x, records = _far_side(spd, k, radius, n, rng)
    weights = rng.dirichlet(np.ones(n))
    constants = spd.newton_constants(radius, n)
    passes = constants.passes()
    assert all(isinstance(p[0], tuple) and len(p[0]) == 4 for p in passes)
    assert len(passes) == 3 * (len(LOG_BAND_COARSE) + 1) * len(CHEBYSHEV_STEPS)
    g_exact, _ = spd.newton_terms(x, records, weights)  # eigh path
    s, si = sqrtm_spd(x)
    hess = spd.karcher_terms(x, records, weights, hessian=True)[2]
    exact_hessian = _matrix(lambda v: si @ hess(s @ v @ s) @ si, k)
    costs = {}
    for (order, tol, steps, ratio), e, cost, g, solve in passes:
        assert solve == chebyshev_error(steps, ratio) and g == _log_band(radius, k, tol)[1]
        assert cost > costs.get((order, tol, steps - 1), 0.0)
        costs[(order, tol, steps)] = cost
        if steps not in (1, 3) or tol not in (LOG_BAND_COARSE[0], LOG_BAND_TOL):
            continue
        grad, op = spd.newton_terms(x, records, weights, ball=radius, order=(order, tol, steps, ratio))
        assert np.linalg.norm(grad - g_exact) <= g + 1e-13
        assert np.abs(np.linalg.eigvalsh(sym(_matrix(op.apply, k) - exact_hessian))).max() <= e
        exact = np.linalg.solve(_matrix(op.apply, k), _sym_basis(k).reshape(-1, k * k) @ grad.reshape(-1))
        got = _sym_basis(k).reshape(-1, k * k) @ sym(op.solve(grad)).reshape(-1)
        assert np.linalg.norm(got - exact) <= solve * np.linalg.norm(exact) * (1 + 1e-9) + 1e-15


def test_records_as_given_take_eigh_logs_at_every_level():
    k, radius, n = 16, 0.5, 30
    rng = np.random.default_rng(740)
    spd = SPDAffineInvariant(k)
    x, records = _far_side(spd, k, radius, n, rng)
    plain = np.array(records)
    g_eigh, _ = spd.newton_terms(x, plain, 1.0 / n)
    g_free, op = spd.newton_terms(x, plain, 1.0 / n, order=_free_spec(spd, radius, 4, LOG_BAND_COARSE[0]))
    assert np.abs(g_free - g_eigh).max() <= 1e-15
    w, u = np.linalg.eigh(op.logs[0][0])
    assert np.abs(op.logs[0][0] - eig_apply(u, w)).max() <= 1e-15


# -- (5) the certified mean ------------------------------------------------------------------------------

def _dense(monkeypatch):
    monkeypatch.setattr(spd_passes, "MATRIX_FREE_MIN_K", 10**6)
    frechet._certified_schedule.cache_clear()


@pytest.mark.parametrize("k, radius", [(16, 0.3), (24, 0.8), (16, 1.2)])
def test_certified_mean_agrees_with_the_dense_path(monkeypatch, k, radius):
    rng = np.random.default_rng(750 + k)
    spd = SPDAffineInvariant(k)
    n = 50
    V = np.array([sym(rng.standard_normal((k, k))) for _ in range(n)])
    V *= (radius * rng.uniform(0.5, 1.6, n) / np.linalg.norm(V, axis=(1, 2)))[:, None, None]
    records, _ = prepare_records(spd, expm_sym(V), np.eye(k), radius)
    accuracy = 1e-10 * radius
    frechet._certified_schedule.cache_clear()
    schedule = certified_schedule(spd, radius, accuracy, n)
    assert schedule.newton_steps and all(len(o) == 4 for o in schedule.orders)
    free = certified_frechet_mean(spd, records, np.eye(k), radius, accuracy)
    _dense(monkeypatch)
    dense = certified_frechet_mean(spd, records, np.eye(k), radius, accuracy)
    reference = frechet_mean(records, spd, tol=1e-12).point  # within 1e-12/h of the minimiser
    assert spd.dist(free, reference) <= accuracy and spd.dist(dense, reference) <= accuracy
    assert spd.dist(free, dense) <= 2 * accuracy
    frechet._certified_schedule.cache_clear()


def test_schedule_switches_at_the_public_threshold():
    frechet._certified_schedule.cache_clear()
    below = certified_schedule(SPDAffineInvariant(MATRIX_FREE_MIN_K - 1), 0.5, 2e-9, 500)
    at = certified_schedule(SPDAffineInvariant(MATRIX_FREE_MIN_K), 0.5, 2e-9, 500)
    assert MATRIX_FREE_MIN_K == 16
    assert not any(isinstance(o, tuple) and len(o) == 4 for o in below.orders)
    assert at.orders and all(len(o) == 4 for o in at.orders)


def test_schedules_of_the_cost_model():
    """The cost model (docs/theory.md §2: a pass is its logs' products plus 4, plus ``order`` per
    Chebyshev step after the first, over 30 per gradient pass) and the schedules it picks: public
    values only."""
    costs = {level[0][:3]: level[2] for level in SPDAffineInvariant(50).newton_constants(0.5, 500).passes()}
    assert costs[(4, 2.0**-17, 2)] == pytest.approx((14 + 4 + 4) / 30, rel=1e-15)
    assert costs[(6, LOG_BAND_TOL, 12)] == pytest.approx((20 + 4 + 66) / 30, rel=1e-15)
    costs = {level[0][:3]: level[2] for level in SPDAffineInvariant(16).newton_constants(1.2, 60).passes()}
    assert costs[(6, None, 3)] == pytest.approx((30 + 4 + 12) / 30, rel=1e-15)  # eigh logs: a gradient pass's worth
    frechet._certified_schedule.cache_clear()
    s = certified_schedule(SPDAffineInvariant(50), 0.5, 2e-9, 500)
    assert (s.start, s.gradient_steps) == ("tangent", 0)
    assert [o[:3] for o in s.orders] == [(4, 2.0**-17, 2), (4, 2.0**-27, 2), (4, 2.0**-40, 3)]
    assert "4 (logs to 7.6e-06, 2 Chebyshev steps)" in s.describe(2e-9)
    s = certified_schedule(SPDAffineInvariant(16), 1.3, 1.3e-10, 60)
    assert (s.start, s.gradient_steps, s.newton_steps) == ("center", 4, 9)  # passes in any order: a fourth-order one second
    assert [o[:3] for o in s.orders] == [(6, None, 3), (4, None, 2)] + [(6, None, 3)] * 7
    assert "6 (3 Chebyshev steps)" in s.describe(1.3e-10)


# -- (6) timing, memory, blocks -----------------------------------------------------------------------------

def test_no_subnormal_arithmetic_on_hostile_records():
    """The hostile frames of test_newton_spd (``cosh(t)·I``, 1e−300 off the diagonal, a chain of
    2^−100) through the matrix-free pass and its Chebyshev steps, with a tiny right-hand side too:
    numpy raises on any underflow."""
    k, radius = 16, 0.5
    plan, _ = _log_band(radius, k)
    t = plan.t
    d = np.exp(np.linspace(-0.5, 0.5, k))
    chain = np.diag(d)
    chain[np.arange(k - 1), np.arange(1, k)] = chain[np.arange(1, k), np.arange(k - 1)] = 2.0**-100
    tiny = np.diag(d)
    tiny[0, 1] = tiny[1, 0] = 1e-300
    Y = np.array([np.cosh(t) * np.eye(k), np.cosh(t) * (1 + 1e-10) * np.eye(k), tiny, chain, np.eye(k)])
    spd = SPDAffineInvariant(k)
    with np.errstate(under="raise"):
        for order in (2, 4, 6):
            g, op = spd.newton_terms(np.eye(k), Y, 1.0 / len(Y), ball=radius, order=_free_spec(spd, radius, order, steps=12))
            op.solve(g)
            op.solve(np.full((k, k), 1e-300))
            op.solve(chain - np.diag(d))


def test_block_sizes_at_k_50(monkeypatch):
    """Record preparation in blocks of 52 records at ``k = 50`` (``PREPARE_BYTES``), the pass's logs
    in blocks of 13 (``LOG_BAND_BYTES``), ``Ĥ`` applied 26 records at a time (``APPLY_BLOCK_BYTES``);
    256 below ``MATRIX_FREE_MIN_K``."""
    spd = SPDAffineInvariant(50)
    assert spd.prepare_rows(256, 500) == 52
    assert SPDAffineInvariant(10).prepare_rows(256, 500) == 256
    seen, shapes = [], []
    real, real_ad = spd_passes.logm_band, spd_hessian._ad
    monkeypatch.setattr(spd_passes, "logm_band", lambda a, plan: seen.append(len(a)) or real(a, plan))
    monkeypatch.setattr(spd_hessian, "_ad", lambda V, Y: shapes.append(len(V)) or real_ad(V, Y))
    records, _ = prepare_records(spd, eigen_spd(66, 50, r=0.05, rng=1), np.eye(50), 0.5)
    g, op = spd.newton_terms(np.eye(50), records, 1.0 / 66, ball=0.5, order=_free_spec(spd, 0.5, 4))
    assert seen == [13] * 5 + [1]
    op.apply(g)
    assert shapes == [26, 26, 26, 26, 14, 14]  # two ad per block at order 4 (the inner ad², then the outer)


def test_release_memory_at_k_50():
    """Peak traced memory of a whole SPD-AI(50) release at n = 500 below 3× the records (it was 37×
    with the dense Hessian)."""
    k, n = 50, 500
    X = eigen_spd(n, k, r=0.05, rng=3)
    spd = SPDAffineInvariant(k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        private_frechet_mean(X, spd, epsilon=1.0, center=np.eye(k), radius=0.5, rng=1)  # the public tables, cached
        tracemalloc.start()
        try:
            private_frechet_mean(X, spd, epsilon=1.0, center=np.eye(k), radius=0.5, rng=1)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak <= 3.0 * X.nbytes, peak / X.nbytes


@pytest.mark.slow  # a few seconds: the search's exact phase before the beam
def test_a_long_schedule_search_keeps_a_beam_and_its_run_still_certifies():
    """Affine-invariant SPD(28) at n = 86 near r = 1.75 (a candidate of ``center="auto"``): the
    exact search weighed tens of millions of runs (three minutes); past ``PLAN_WORK`` it keeps
    ``PLAN_BEAM`` runs per step. The run it returns still brings the public bound to the accuracy,
    step by step (the exact search's: 14 gradient and 20 Newton steps)."""
    spd, radius, accuracy, n = SPDAffineInvariant(28), 1.7462434002053169, 4.318232246240874e-08, 86
    s = frechet._search_schedule(spd, radius, accuracy, n)
    assert (s.start, s.gradient_steps) == ("center", 14) and 15 <= s.newton_steps <= 25
    c = spd.newton_constants(radius, n)
    d = min(2.0 * radius, math.sqrt((1.0 - s.h / s.H) ** s.gradient_steps * radius**2 / s.h))
    errors = {level[0]: level[1:] for level in c.passes()}
    for order in s.orders or (c.order,) * s.newton_steps:
        e, _, g, solve = errors[order]
        following = frechet._newton_bound(d, c, s.h, e, g, solve)
        assert following < d
        d = following
    assert d <= accuracy
