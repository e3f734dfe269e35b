"""The geometric bounds behind the certified Newton steps on ``SPDAffineInvariant(k)``, attacked
numerically (``SPDAffineInvariant.newton_constants``, docs/theory.md §2).

Metric ``⟨U, V⟩_P = tr(P⁻¹UP⁻¹V)``, curvature in ``[−1/2, 0]``. Notation: ``V = log_x p``,
``ρ = |V|``, ``φ(t) = t coth t``; at ``x = I`` with ``V = U diag(l) Uᵀ`` the Hessian of ``½ρ²_p``
multiplies ``UᵀXU`` entrywise by ``φ((l_j − l_k)/2)``.

(1) ``‖∇_X Hess(½ρ²_p)‖_op ≤ ℓ(ρ) = (ρ/3)·φ(ρ/√2)`` for unit ``X``: central differences of the
    Hessian at ``exp_x(tX)`` parallel-transported back to ``x`` (``v ↦ E v Eᵀ``,
    ``E = x^½ (x^-½ y x^-½)^½ x^-½``). Tight as ``ρ → 0`` along ``X = V/ρ`` in a traceless
    2 × 2 block, where the ratio is ``1 − ρ²(1/15 + 1/6) + O(ρ⁴)``.
(2) ``Ĥ = I + ad²/12 − ad⁴/720 + ad⁶/30240`` (``newton_terms``: ``φ`` to sixth order, ``ad = ad_V``)
    satisfies ``0 ≤ Ĥ − Hess ≤ ρ⁸/75600``, also for weighted sums with ``ρ = max ρ_i`` (per unit
    weight); tight for ``l = (a, −a, 0, …)``. The cheaper orders: second ``0 ≤ Ĥ − Hess ≤ ρ⁴/180``,
    fourth ``0 ≤ Hess − Ĥ ≤ ρ⁶/3780``.
(3) ``ρ(exp_x s, exp_x v) ≤ E(T)|s − v|`` for ``|s|, |v| ≤ T``, ``E(T) = sinh(T/√2)/(T/√2)``
    (Rauch, curvature ≥ −1/2); tight for nearby ``s, v`` of norm ``T`` in a curvature −1/2 plane.
(4) ``clip_to_ball`` onto ``B_r(c)`` does not increase the distance to any point of the ball.
(5) The logarithms of ``newton_terms`` on prepared records (``matrix.logm_band``, matrix products
    only): within ``LogBandPlan.bound`` on the band, a bound nearly attained at its edges, and the
    gradient within ``NewtonConstants.g`` of the ``eigh`` path when every record is ``2r`` away.

Worst ratios measured while writing these tests (random draws plus Nelder–Mead over ``p``, ``X``
for k = 2, 3 and over diagonal ``V`` and ``X`` for k = 5): (1) 0.99998 at ρ = 0.01, 0.807 at
ρ = 1, 0.536 at ρ = 2, 0.425 at ρ = 3; (2) 0.9991 at ρ = 0.14 (sixth order; 0.995 over random
records), Ĥ − Hess ≥ −1.1e−14 (rounding);
(3) 0.9999999998; (4) ``ρ(πy, z)/ρ(y, z)`` 0.9999994. None exceeded 1.
"""

import numpy as np
import pytest

from manifold_dp import SPDAffineInvariant
from manifold_dp.manifolds.kernels.matrix_log import FLUSH, flush_tiny, logm_band, logm_band_plan
from manifold_dp.manifolds.kernels.spd_passes import LOG_BAND_COARSE, _log_band
from manifold_dp.manifolds.matrix import eig_apply, expm_sym, sqrtm_spd, sym
from manifold_dp.privacy.release import prepare_records

FD_STEP = 1e-3  # Richardson-extrapolated central differences: truncation ~h⁴, rounding ~1e-12
SQRT2 = np.sqrt(2.0)


def _phi(t):
    t = np.asarray(t, float)
    return np.divide(t, np.tanh(t), out=np.ones_like(t), where=t != 0)


def _dphi(t):
    return 1.0 / np.tanh(t) - t / np.sinh(t) ** 2


def _ell(rho):
    return rho / 3.0 * _phi(rho / SQRT2)


def _expansion(T):
    b = T / SQRT2
    return np.sinh(b) / b if b > 0 else 1.0


def _sym_basis(k):
    """An orthonormal basis of ``(Sym(k), Frobenius)``, shape ``(k(k+1)/2, k, k)``."""
    basis = []
    for i in range(k):
        for j in range(i, k):
            e = np.zeros((k, k))
            e[i, j] = e[j, i] = 1.0 if i == j else 1.0 / SQRT2
            basis.append(e)
    return np.array(basis)


def _random_spd(k, rng, scale=0.7):
    return expm_sym(scale * sym(rng.standard_normal((k, k))))


def _operator_in_frame(spd, x, op):
    """The matrix, on an orthonormal basis of ``T_x`` (``x^½ B x^½``), of an operator ``T_x → T_x``."""
    s, si = sqrtm_spd(x)
    basis = _sym_basis(x.shape[0])
    images = np.array([si @ op(s @ b @ s) @ si for b in basis])
    return np.einsum("aij,bij->ab", basis, images)


def _hessian(spd, x, records, weights):
    return spd.karcher_terms(x, records, weights, hessian=True)[2]


# -- (1) the third derivative of ½ρ² -------------------------------------------------------------

def _transported_hessian(spd, x, p, X, t):
    """``P_t⁻¹ ∘ Hess(½ρ²_p)(y_t) ∘ P_t`` in the frame of ``x``, ``y_t = exp_x(tX)``."""
    s, si = sqrtm_spd(x)
    y = spd.exp(x, t * X)
    root, _ = sqrtm_spd(sym(si @ y @ si))
    E = s @ root @ si
    Ei = np.linalg.inv(E)
    hess = _hessian(spd, y, p[None], np.ones(1))
    return _operator_in_frame(spd, x, lambda v: Ei @ hess(E @ v @ E.T) @ Ei.T)


def _third_derivative_norm(spd, x, p, X):
    diff = lambda h: (_transported_hessian(spd, x, p, X, h) - _transported_hessian(spd, x, p, X, -h)) / (2 * h)
    D = (4 * diff(FD_STEP / 2) - diff(FD_STEP)) / 3
    return np.linalg.norm(sym(D), 2)


def test_hessian_matches_second_differences_of_half_squared_distance():
    """An oracle for ``karcher_terms``' Hessian, which (1) differentiates: ``⟨Hess X, X⟩`` is the
    second derivative of ``½ρ²(exp_x(tX), p)``."""
    rng = np.random.default_rng(10)
    for k in (2, 3):
        spd = SPDAffineInvariant(k)
        for _ in range(5):
            x, p = _random_spd(k, rng), _random_spd(k, rng)
            X = spd.random_unit_tangent(x, rng=rng)
            f = lambda t: 0.5 * spd.dist(spd.exp(x, t * X), p) ** 2
            h = 1e-3
            second = (f(h) - 2 * f(0.0) + f(-h)) / h**2
            assert spd.inner(x, _hessian(spd, x, p[None], np.ones(1))(X), X) == pytest.approx(second, rel=1e-5)


@pytest.mark.parametrize("rho", [0.05, 0.5, 1.0, 2.0])
def test_third_derivative_along_the_geodesic_has_its_closed_form(rho):
    """Along ``X = V/ρ``, ``V ∝ diag(1, −1)``, the transported Hessian's off-diagonal gain is
    ``φ((ρ − t)/√2)``: the harness must find ``φ′(ρ/√2)/√2``, the claim's tight case."""
    spd = SPDAffineInvariant(2)
    direction = np.diag([1.0, -1.0]) / SQRT2
    measured = _third_derivative_norm(spd, np.eye(2), expm_sym(rho * direction), direction)
    assert measured == pytest.approx(_dphi(rho / SQRT2) / SQRT2, rel=1e-7)


def _adversarial_directions(spd, x, p, rng):
    """Unit tangent vectors at ``x``: random, ``±V``, eigenvectors of the Jacobi operator, and
    mixtures of ``V`` with them (the worst found at ρ ≥ 2 is such a mixture)."""
    k = x.shape[0]
    s, si = sqrtm_spd(x)
    l, U = np.linalg.eigh(sym(si @ spd.log(x, p) @ si))
    V = U @ np.diag(l) @ U.T / np.linalg.norm(l)
    order = np.argsort(l)
    lo, hi = U[:, order[0]], U[:, order[-1]]
    jacobi = (np.outer(lo, hi) + np.outer(hi, lo)) / SQRT2  # the largest eigenvalue (l_max − l_min)²/4
    frame = [V, jacobi, sym(rng.standard_normal((k, k)))]
    frame += [np.cos(a) * V + np.sin(a) * jacobi for a in np.linspace(0, np.pi, 13)[1:-1]]
    frame += [V + 0.3 * sym(rng.standard_normal((k, k)))]
    return [s @ (d / np.linalg.norm(d)) @ s for d in frame]


@pytest.mark.parametrize("k", [2, 3, 5])
def test_third_derivative_bound(k):
    rng = np.random.default_rng(100 + k)
    spd = SPDAffineInvariant(k)
    worst = 0.0
    for rho in (0.01, 0.3, 1.0, 2.0, 3.0):
        x, p = _random_spd(k, rng), _random_spd(k, rng)
        s, _ = sqrtm_spd(x)
        # a random p moved along the geodesic from x to ρ(x, p) = rho, and a two-level V (l = (a, −a, 0, …))
        two_level = s @ expm_sym(_two_level_logs(k, 1, rng)[0] * (rho / SQRT2)) @ s
        for p in (spd.exp(x, spd.log(x, p) * (rho / spd.dist(x, p))), two_level):  # noqa: B020 - built from the last p first
            for X in _adversarial_directions(spd, x, p, rng):
                ratio = _third_derivative_norm(spd, x, p, X) / _ell(rho)
                assert ratio <= 1.0 + 1e-7, (k, rho, ratio)
                worst = max(worst, ratio)
    assert worst > 0.999  # the tight direction was among those tried


def test_third_derivative_constant_of_newton_constants():
    """``L`` is ``ℓ`` at the ball's diameter (the bound increases in ρ)."""
    spd = SPDAffineInvariant(3)
    rhos = np.linspace(0.01, 6.0, 50)
    assert np.all(np.diff(_ell(rhos)) > 0)
    for radius in (0.1, 1.0, 1.5):
        assert spd.newton_constants(radius, 10).L == pytest.approx(_ell(2 * radius), rel=1e-12)


# -- (2) the truncated Hessians of newton_terms (orders 2, 4, 6) --------------------------------

# per order: the Taylor polynomial of φ(t) = t coth t, the bound on |poly − φ| as a power of ρ
# (t ≤ ρ/√2) and the sign of Ĥ − Hess (the series alternates: 2 and 6 above, 4 below)
ORDERS = {2: (lambda t: 1 + t**2 / 3, lambda rho: rho**4 / 180, 1),
          4: (lambda t: 1 + t**2 / 3 - t**4 / 45, lambda rho: rho**6 / 3780, -1),
          6: (lambda t: 1 + t**2 / 3 - t**4 / 45 + 2 * t**6 / 945, lambda rho: rho**8 / 75600, 1)}


def _hessian_gap(spd, x, records, weights, order=6):
    """``Ĥ − Hess F`` at ``x`` in the frame of ``x``, on an orthonormal basis of ``Sym(k)``."""
    k = x.shape[0]
    _, H = spd.newton_terms(x, records, weights, order=order)
    basis = _sym_basis(k).reshape(-1, k * k)  # Ĥ acts on row-major vec of frame matrices
    exact = _operator_in_frame(spd, x, _hessian(spd, x, records, weights))
    return sym(basis @ H @ basis.T - exact)


def _records_at(spd, x, logs):
    s, _ = sqrtm_spd(x)
    return np.array([s @ expm_sym(v) @ s for v in logs])


def _two_level_logs(k, n, rng):
    """``Q diag(1, −1, 0, …) Qᵀ``: ``|l_j − l_k| = √2 ρ``, the case where the bound is tight."""
    l = np.zeros(k)
    l[:2] = 1.0, -1.0
    qs = [np.linalg.qr(rng.standard_normal((k, k)))[0] for _ in range(n)]
    return np.array([q @ np.diag(l) @ q.T for q in qs])


@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize("k", [2, 3, 5])
def test_truncated_hessian_is_on_its_side_and_close(k, order):
    _, bound_of, sign = ORDERS[order]
    rng = np.random.default_rng(200 + k)
    spd = SPDAffineInvariant(k)
    for trial in range(24):
        x = _random_spd(k, rng, 1.0)
        n = 1 + trial % 5 if trial < 20 else 300  # the last draws: many records
        adversarial = trial % 2 == 1
        logs = _two_level_logs(k, n, rng) if adversarial else np.array([sym(rng.standard_normal((k, k))) for _ in range(n)])
        rho_max = [0.01, 0.3, 1.0, 2.0, 4.0][trial % 5]
        logs *= (rho_max * rng.uniform(0.3, 1.0, n) / np.linalg.norm(logs, axis=(1, 2)))[:, None, None]
        logs[0] *= rho_max / np.linalg.norm(logs[0])
        records = _records_at(spd, x, logs)
        rho = float(spd.dist(x, records).max())
        weights = rng.dirichlet(np.ones(n)) * rng.uniform(0.5, 3.0)
        gap = sign * np.linalg.eigvalsh(_hessian_gap(spd, x, records, weights, order))[::sign]
        bound = weights.sum() * bound_of(rho)
        assert gap[0] >= -1e-12 * (1 + bound), (k, trial, gap[0])  # on its side of Hess, up to rounding
        assert gap[-1] <= bound * (1 + 1e-9) + 1e-12, (k, trial, gap[-1] / bound)


@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize("a", [0.1, 0.2, 0.5, 1.0, 2.0])
def test_truncated_hessian_gap_is_tight_for_two_levels(a, order):
    """One record with ``l = (a, −a, 0)``: the gap is ``poly(a) − φ(a)``, the order's bound to
    leading order."""
    poly, bound_of, sign = ORDERS[order]
    spd = SPDAffineInvariant(3)
    records = expm_sym(np.diag([a, -a, 0.0]))[None]
    gap = sign * np.linalg.eigvalsh(_hessian_gap(spd, np.eye(3), records, np.ones(1), order))[::sign]
    assert sign * gap[-1] == pytest.approx(poly(a) - _phi(a), rel=1e-6, abs=1e-14)
    assert gap[-1] <= bound_of(SQRT2 * a)
    if a <= 0.2:
        assert gap[-1] >= 0.99 * bound_of(SQRT2 * a)


def test_newton_constants_cover_the_hessian_errors():
    """``e`` covers ``Ĥ − Hess F`` for records in ``B_r(c)`` seen from ``x`` in the ball (``ρ ≤ 2r``);
    ``tangent`` covers ``‖Hess F(c) − I‖``."""
    rng = np.random.default_rng(250)
    spd = SPDAffineInvariant(3)
    for radius in (0.2, 1.0):
        c = _random_spd(3, rng)
        n = 40
        records = spd.exp(c, spd.random_unit_tangent(c, size=n, rng=rng) * radius)
        records[: n // 2] = spd.exp(c, -spd.log(c, records[n // 2:]))  # antipodal pairs: ρ up to 2r
        x = records[0]
        weights = np.full(n, 1.0 / n)
        constants = spd.newton_constants(radius, n)
        for order, e, _, _ in constants.levels():
            assert np.abs(np.linalg.eigvalsh(_hessian_gap(spd, x, records, weights, order))).max() <= e, order
        exact = _operator_in_frame(spd, c, _hessian(spd, c, records, weights))
        assert np.linalg.norm(exact - np.eye(len(exact)), 2) <= constants.tangent


# -- (3) exp_x is E(T)-Lipschitz on the T-ball of T_x ---------------------------------------------

def _exp_ratio(spd, x, s, v):
    T = max(spd.norm(x, s), spd.norm(x, v))
    return spd.dist(spd.exp(x, s), spd.exp(x, v)) / (spd.norm(x, s - v) * _expansion(T))


@pytest.mark.parametrize("k", [2, 3, 5])
def test_exp_lipschitz_with_curvature_factor(k):
    rng = np.random.default_rng(300 + k)
    spd = SPDAffineInvariant(k)
    for trial in range(60):
        x = _random_spd(k, rng, 1.0)
        T = rng.uniform(0.05, 3.0)
        s = spd.random_unit_tangent(x, rng=rng) * T
        if trial % 3 == 0:  # nearby
            v = s + 1e-3 * spd.random_unit_tangent(x, rng=rng)
        elif trial % 3 == 1:  # independent
            v = spd.random_unit_tangent(x, rng=rng) * T * rng.uniform(0, 1)
        else:  # commuting with s (a flat: the ratio is 1/E(T))
            root, inv_root = sqrtm_spd(x)
            _, U = np.linalg.eigh(sym(inv_root @ s @ inv_root))
            v = root @ U @ np.diag(rng.standard_normal(k)) @ U.T @ root
        v = v * min(1.0, T / spd.norm(x, v))
        assert _exp_ratio(spd, x, s, v) <= 1.0 + 1e-9, (k, trial)


@pytest.mark.parametrize("T", [0.1, 1.0, 3.0])
def test_exp_lipschitz_is_tight_in_the_most_curved_plane(T):
    """``s, v`` of norm ``T`` at a small angle in span{diag(1, −1), offdiag}, curvature −1/2."""
    spd = SPDAffineInvariant(2)
    a, b = np.diag([1.0, -1.0]) / SQRT2, np.array([[0.0, 1.0], [1.0, 0.0]]) / SQRT2
    for angle in (0.3, 1e-2, 1e-3):
        ratio = _exp_ratio(spd, np.eye(2), T * a, T * (np.cos(angle) * a + np.sin(angle) * b))
        assert ratio <= 1.0 + 1e-9
    assert ratio >= 1.0 - 1e-5
    assert spd.newton_constants(1.0, 10).expansion == 0.5  # E(T) of NewtonConstants is this one


# -- (4) projection onto the ball is non-expansive towards the ball -------------------------------

@pytest.mark.parametrize("k", [2, 3, 5])
def test_clip_to_ball_does_not_increase_distance_to_the_ball(k):
    rng = np.random.default_rng(400 + k)
    spd = SPDAffineInvariant(k)
    for trial in range(60):
        c = _random_spd(k, rng, 1.0)
        r = rng.uniform(0.1, 3.0)
        u = spd.random_unit_tangent(c, rng=rng)
        factor = rng.uniform(1.0, 8.0) if trial % 2 else 1.0 + 10 ** rng.uniform(-6, -1)
        y = spd.exp(c, u * r * factor)
        if trial % 3 == 0:  # on the boundary, anywhere
            z = spd.exp(c, spd.random_unit_tangent(c, rng=rng) * r)
        elif trial % 3 == 1:  # on the boundary, next to the projection
            w = u + 0.05 * spd.random_unit_tangent(c, rng=rng)
            z = spd.exp(c, w * (r / spd.norm(c, w)))
        else:
            z = spd.exp(c, spd.random_unit_tangent(c, rng=rng) * r * rng.uniform(0, 1))
        batched = spd.clip_to_ball(y[None], c, r)[0]
        single = spd.clip_to_ball(y, c, r)  # the generic path of Manifold
        for clipped in (batched, single):
            assert spd.dist(c, clipped) <= r * (1 + 1e-9)
            assert spd.dist(clipped, z) <= spd.dist(y, z) * (1 + 1e-10) + 1e-12, (k, trial)


@pytest.mark.parametrize("order, radius", [(2, 0.1), (2, 0.2), (4, 0.2), (4, 0.3), (6, 0.4), (6, 0.5)])
def test_newton_constants_e_is_nearly_attained(order, radius):
    """A footpoint on the boundary of ``B_r(I)`` and every record at the opposite point, along a
    two-level direction: the truncation error of each order is its bound (``(2r)⁴/180``,
    ``(2r)⁶/3780``, ``(2r)⁸/75600``) to leading order (about 0.95 of it at ``r = 0.5``; asserted ≥ 0.9), so no ``e``
    of ``newton_constants`` can be any smaller (halving its truncation term fails here)."""
    spd = SPDAffineInvariant(3)
    v = np.diag([1.0, -1.0, 0.0]) / SQRT2  # unit, two levels
    x, record = expm_sym(radius * v), expm_sym(-radius * v)  # 2r apart, both on the boundary
    n = 5
    records = np.repeat(record[None], n, axis=0)
    gap = np.abs(np.linalg.eigvalsh(_hessian_gap(spd, x, records, np.full(n, 1.0 / n), order))).max()
    constants = spd.newton_constants(radius, n)
    e = {o: e for o, e, _, _ in constants.levels()}[order]
    truncation = e - (1e-8 + 4.0 * n * np.finfo(float).eps)
    assert truncation > 100 * (e - truncation)  # the truncation term dominates e here
    assert gap <= e
    assert gap >= 0.9 * truncation


# -- (5) the logarithms by matrix products (logm_band) ---------------------------------------------

@pytest.mark.parametrize("t", [0.2, 1.0, 2.0])
@pytest.mark.parametrize("tol", [1e-4, 1e-8, 2.0**-50])
def test_logm_band_bound_holds_and_is_nearly_attained(t, tol):
    """On ``[e^−t, e^t]`` (1 × 1 matrices: every step is a polynomial of ``a``, so this is the
    scalar error on the spectrum) the error is ``≤ bound`` plus rounding, and where the bound is
    above rounding the edges of the band reach nine tenths of it (0.92–0.998 measured): a plan
    that claimed one more term or doubling than it computes fails the first assertion."""
    plan = logm_band_plan(t, tol)
    assert plan.bound <= tol
    lam = np.exp(np.linspace(-t, t, 4001))
    err = np.abs(logm_band(lam[:, None, None], plan)[:, 0, 0] - np.log(lam))
    assert err.max() <= plan.bound + 64 * np.finfo(float).eps * (1 + t)
    if plan.bound > 1e-12:
        assert err.max() >= 0.9 * plan.bound


@pytest.mark.parametrize("k", [2, 3, 10])
def test_logm_band_matches_eigh_on_the_band(k):
    """Spectra at both edges of the band, clustered, and the identity: within the bound plus
    rounding of the ``eigh`` reference, in the spectral norm."""
    rng = np.random.default_rng(300 + k)
    t = 1.0
    plan = logm_band_plan(t, 2.0**-50)
    n = 500
    u = np.linalg.qr(rng.standard_normal((n, k, k)))[0]
    logs = rng.uniform(-t, t, (n, k))
    logs[:, 0], logs[:, -1] = t, -t
    logs[: n // 4] = np.where(rng.random((n // 4, k)) < 0.5, t, -t)  # two clusters at the edges
    logs[-1] = 0.0  # the identity
    a = sym(eig_apply(u, np.exp(logs)))
    err = np.linalg.norm(logm_band(a, plan) - eig_apply(u, logs), 2, axis=(1, 2))
    assert err.max() <= plan.bound + 1e-13


def _far_side(spd, k, radius, n, rng):
    """Prepared records on the far side of ``B_r(I)`` from a footpoint ``x`` on its boundary: ``ρ(x, X_i)``
    up to ``2r``, the edge of the band ``newton_terms`` relies on."""
    v = sym(rng.standard_normal((k, k)))
    v /= np.linalg.norm(v)
    x = expm_sym(radius * v)
    tangents = -v + 0.3 * np.array([sym(rng.standard_normal((k, k))) for _ in range(n)]) / k
    X = expm_sym(2.0 * radius * tangents)  # outside the ball: prepare_records clips them onto it
    records, _ = prepare_records(spd, X, np.eye(k), radius)
    return x, records


@pytest.mark.parametrize("k, radius", [(4, 0.25), (4, 0.5), (10, 0.5), (5, 1.0)])
def test_newton_terms_on_prepared_records_match_the_eigen_path(k, radius):
    """With ``ball`` (prepared records; logs by matrix products in a rotated frame) and without it
    (one ``eigh`` per record): the gradients differ by less than ``NewtonConstants.g`` — the series'
    bound, which must be there since it enters every step's bound — plus rounding, and the
    Hessians by rounding."""
    rng = np.random.default_rng(310 + k)
    spd = SPDAffineInvariant(k)
    n = 300
    x, records = _far_side(spd, k, radius, n, rng)
    assert float(spd.dist(x, records).max()) >= 1.9 * radius  # the band is used to its edge
    plan, g = _log_band(radius, k)
    assert plan is not None and g == spd.newton_constants(radius, n).g
    assert g == pytest.approx(np.sqrt(k) * plan.bound, rel=1e-12) and g > 0
    weights = rng.dirichlet(np.ones(n))
    for order in (2, 4, 6):
        g_band, H_band = spd.newton_terms(x, records, weights, ball=radius, order=order)
        g_eigh, H_eigh = spd.newton_terms(x, records, weights, order=order)
        assert np.linalg.norm(g_band - g_eigh) <= g + 1e-13  # rounding: ~1e-15 measured
        assert np.abs(H_band - H_eigh).max() <= 1e-12


@pytest.mark.parametrize("k, radius", [(4, 0.25), (4, 0.5), (10, 0.5)])
def test_coarse_log_levels_cover_their_errors(k, radius):
    """Every level with coarser logs (``(order, tol)``): on records at the far side of the ball,
    the gradient differs from the exact one (the ``eigh`` path) by at most the level's ``g``, and
    its Hessian from the exact Hessian by at most the level's ``e`` (truncation plus the logs'
    share); the coarse series is really coarser (its error above the full series' ``g``: a level
    that computed the full series would not show it), and a level claiming the full ``g`` fails."""
    rng = np.random.default_rng(330 + k)
    spd = SPDAffineInvariant(k)
    n = 200
    x, records = _far_side(spd, k, radius, n, rng)
    weights = rng.dirichlet(np.ones(n))
    constants = spd.newton_constants(radius, n)
    coarse = [level for level in constants.levels() if isinstance(level[0], tuple)]
    assert len(coarse) == 9 and {level[0][1] for level in coarse} == set(LOG_BAND_COARSE)
    g_exact, _ = spd.newton_terms(x, records, weights)
    basis = _sym_basis(k).reshape(-1, k * k)
    exact = _operator_in_frame(spd, x, _hessian(spd, x, records, weights))
    full_cost = {o: c for o, _, c, _ in constants.levels() if not isinstance(o, tuple)}
    assert sorted(full_cost) == [2, 4, 6]
    for (order, tol), e, cost, g in coarse:
        assert cost < full_cost[order]
        grad, H = spd.newton_terms(x, records, weights, ball=radius, order=(order, tol))
        err = np.linalg.norm(grad - g_exact)
        assert err <= g + 1e-13, (order, tol)
        if tol >= 2.0**-27:
            assert err > 10 * constants.g
        gap = np.abs(np.linalg.eigvalsh(sym(basis @ H @ basis.T - exact))).max()
        assert gap <= e, (order, tol)


def test_log_band_is_left_for_large_balls():
    """Where the band needs more than ``LOG_BAND_MAX_PRODUCTS`` products, or ``k < LOG_BAND_MIN_K``,
    ``eigh`` is cheaper: no band, ``g = 0``, and ``newton_terms`` takes the eigen path."""
    for radius in (2.0, 5.0, 1e6):  # e^(2r) and cosh t overflow far out: still no band, no error
        assert _log_band(radius, 4) == (None, 0.0)
    assert SPDAffineInvariant(4).newton_constants(2.0, 10).g == 0.0
    for k in (1, 2, 3):  # small matrices: eigh is as fast
        assert _log_band(0.5, k) == (None, 0.0)


def _hostile_frames(k, t):
    """Valid in-band whitened records that drove the products into subnormal numbers before
    ``flush_tiny``: ``cosh(t)·I`` (where ``R = I − α(Y + I)`` vanishes, so its powers underflow),
    the same a rounding away, diagonal with ``1e−300`` off the diagonal, a tridiagonal chain of
    ``2^−100`` (its powers multiply them ``k − 1`` times), and ``I``."""
    d = np.exp(np.linspace(-0.5, 0.5, k))
    chain = np.diag(d)
    chain[np.arange(k - 1), np.arange(1, k)] = chain[np.arange(1, k), np.arange(k - 1)] = 2.0**-100
    tiny = np.diag(d)
    tiny[0, 1] = tiny[1, 0] = 1e-300
    return np.array([np.cosh(t) * np.eye(k), np.cosh(t) * (1 + 1e-10) * np.eye(k), tiny, chain, np.eye(k)])


@pytest.mark.parametrize("k", [4, 10])
def test_no_subnormal_arithmetic_on_hostile_records(k):
    """Subnormal arithmetic is slow on most CPUs (found by helper-28: ×5 per pass), so a record
    that reaches it shows in the running time. Every result of ``logm_band`` and of the band pass
    of ``newton_terms`` must stay normal or 0 (numpy raises on any underflow here), and the logs
    still be right."""
    radius = 0.5
    plan, _ = _log_band(radius, k)
    Y = _hostile_frames(k, plan.t)
    assert np.abs(np.log(np.linalg.eigvalsh(Y))).max() <= plan.t
    with np.errstate(under="raise"):
        V = logm_band(Y, plan)
        SPDAffineInvariant(k).newton_terms(np.eye(k), Y, 1.0 / len(Y), ball=radius)  # records = frames at x = I
    w, u = np.linalg.eigh(Y)
    assert np.abs(V - eig_apply(u, np.log(w))).max() <= 1e-13


def test_flush_tiny_moves_only_tiny_entries():
    a = np.array([1.0, -3.5e-200, 2.0**-347 * 1.5, 1e-300, -1e-310, 0.0, -2.0**-460, 7.0e10])
    out = flush_tiny(a.copy())
    assert np.array_equal(out[[0, 7]], a[[0, 7]]) and out[5] == 0.0
    assert np.all(np.abs(out - a) <= 2.0**-452)
    assert np.all((out == 0) | (np.abs(out) >= 2.0**-452))
    assert FLUSH == 2.0**-400


def test_band_only_for_records_prepared_for_this_ball():
    """The band is a promise about the ball: records prepared for a larger ball or another centre,
    and arithmetic on prepared records, do not make it (found by helper-28 through direct calls)."""
    spd = SPDAffineInvariant(4)
    rng = np.random.default_rng(320)
    X = expm_sym(np.array([sym(rng.standard_normal((4, 4))) for _ in range(20)]))
    records, _ = prepare_records(spd, X, np.eye(4), 1.0)
    assert records.in_ball(np.eye(4), 1.0) and records.in_ball(np.eye(4), 1.5)
    assert not records.in_ball(np.eye(4), 0.5)
    assert not records.in_ball(2.0 * np.eye(4), 1.0)
    assert not (records * 1.0).in_ball(np.eye(4), 1.0)


def test_spd_newton_terms_refuse_an_order_they_do_not_keep():
    m = SPDAffineInvariant(3)
    for order in (1, 3, 8):
        with pytest.raises(ValueError, match="order 2, 4 or 6"):
            m.newton_terms(np.eye(3), np.eye(3)[None], 1.0, order=order)
