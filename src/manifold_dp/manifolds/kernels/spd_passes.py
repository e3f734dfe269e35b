"""The record passes of SPD(k) (``_SPD`` and ``SPDAffineInvariant`` mix them in): record
preparation from one ``eigh`` per record, the one-matrix check with floats, the log-Euclidean
start, and the affine-invariant gradient and Newton passes in the frame of the iterate — the
Hessian's ``t coth t`` truncated at a public order and the records' logarithms by matrix products
on a proven band (``matrix_log.logm_band``). Also the positive-definiteness test with its Cholesky
fast path, which the point checks share. Errors and their bounds: docs/theory.md §2.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache, lru_cache
from math import comb
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike

from ..._threads import blas_limited, blas_limited_unless_tiny
from ..._typing import Array, BoolArray, FloatArray
from ..geometry import POINT_ATOL
from ..matrix import eig_apply, eig_weighted_sum, expm_sym, sqrtm_spd, sym
from .arrays import finite_rows, select
from .matrix_log import flush_tiny, logm_band, logm_band_plan
from .passes import NewtonConstants, RecordPasses
from .spd_hessian import TruncatedHessian, chebyshev_error

__all__ = ["SPDPasses", "AffineInvariantPasses"]

EPS = float(np.finfo(float).eps)
NEWTON_BLOCK_BYTES = 1 << 24  # the Newton pass holds V¹…V⁵ of a block of records: about 16 MiB at any k
SCALED_FLUSH = 2.0**-100  # _SPD.prepare_block rounds scaled images to the grid 2^-152 near 0 (a + C − C)
CHOLESKY_MARGIN = 64.0  # the fast path of _positive_definite shifts by this × k² ε ‖a‖_F
TINY = 2.0**-300  # one-matrix closed forms flush entries this small relative to the largest
# the Gram matrices (a, b) of newton_terms at each order of its Hessian: a ≥ b ≥ 1, a + b even, ≤ order
_NEWTON_SCALES = (1.0 / 12.0, -1.0 / 720.0, 1.0 / 30240.0)  # φ(t) = t coth t = 1 + t²/3 − t⁴/45 + 2t⁶/945 − …, t = ad/2


@cache
def _newton_coefficients(order):
    """``(degrees, (c, Q))`` of ``newton_terms``: the even degrees ``2, 4, …, order`` and the
    eigen-decomposition ``C = Q diag(c) Qᵀ`` of the ``(order − 1)²`` symmetric matrix
    ``C_ab = scale_(a+b) (−1)^b C(a + b, b)`` of the terms ``V^a X V^b`` (``a, b ≥ 1``) of
    ``Σ_d scale_d ad^d``; the terms ``V^d X + X V^d`` are kept apart."""
    if order not in (2, 4, 6):
        raise ValueError(f"the SPD Newton Hessian is kept to order 2, 4 or 6, not {order!r}")
    degrees = tuple(range(2, order + 1, 2))
    C = np.zeros((order - 1, order - 1))
    for degree, scale in zip(degrees, _NEWTON_SCALES):
        for b in range(1, degree):
            C[degree - b - 1, b - 1] = scale * (-1) ** b * comb(degree, b)
    c, Q = np.linalg.eigh(C)
    return degrees, (tuple(float(v) for v in c), np.ascontiguousarray(Q))


LOG_BAND_TOL = 2.0**-50  # the series error of newton_terms' logarithms by matrix products (logm_band)
LOG_BAND_MAX_PRODUCTS = 32  # beyond this many products per record one eigh per record is cheaper
LOG_BAND_BLOCK = 256  # records per logm_band call: its temporaries stay in cache
LOG_BAND_MIN_K = 4  # below, one eigh per record is as fast (measured at k = 2, 3)
# coarser series for the first Newton steps, whose bound is still far above these errors (each a level of
# newton_constants.cheaper with its own g; the planner takes them where they save a pass's products)
LOG_BAND_COARSE = (2.0**-17, 2.0**-27, 2.0**-40)
LOG_SHARE = 0.8  # the logs' share of a second-order pass on the band (measured 0.84 at k = 10): the cost model
# from this k on, a Newton pass keeps the records' logs and applies Ĥ to a matrix record by record, and the step
# solves Ĥ S = G by a public number of Chebyshev steps (spd_hessian): no k² × k² matrix, whose assembly and
# solve grow as k⁴n and k⁶ (at k = 50 they were four fifths of a release)
MATRIX_FREE_MIN_K = 16
CHEBYSHEV_STEPS = (1, 2, 3, 4, 5, 6, 8, 10, 12)  # the solves offered to the schedule, each with its chebyshev_error
LOG_BAND_BYTES = 1 << 18  # matrix-free passes: logm_band's blocks hold temporaries of at most this many bytes each
PREPARE_BYTES = 1 << 20  # and record preparation's blocks (prepare_rows), from k = MATRIX_FREE_MIN_K on
# the matrix-free cost model, in k × k products per record (measured at k = 24…80): a gradient pass (whitening,
# eigh, weighted sum) costs about FREE_GRADIENT_PRODUCTS, a pass its logs' products plus FREE_PASS_PRODUCTS
# (whitening, sums, the step), and each Chebyshev step after the first ``order`` more (ad² is two per record)
FREE_GRADIENT_PRODUCTS = 30.0
FREE_PASS_PRODUCTS = 4.0


@lru_cache(maxsize=256)
def _log_band(radius, k, tol=LOG_BAND_TOL):
    """``(plan, g)`` of the logarithms of ``newton_terms`` for records and a point in a ball of
    radius ``r`` (``(None, 0)``: an ``eigh`` per record instead, for ``k < LOG_BAND_MIN_K`` or
    where the band needs more than ``LOG_BAND_MAX_PRODUCTS`` products). Both within ``r`` of the
    centre, their distance is ``≤ 2r``, so the eigenvalues of ``x^-½ X_i x^-½`` lie in
    ``[e^−t, e^t]`` (``|log λ_j| ≤ ‖log‖_F = ρ ≤ 2r``); ``t`` adds the rounding of the whitening at
    the worst conditioning a release accepts (``max_condition``, in the model of ``float_error``)
    and ``2^−10``. ``g = √k·bound``: the Frobenius error of one log from the series' bound
    (``logm_band_plan`` at ``tol``: ``LOG_BAND_TOL``, or one of ``LOG_BAND_COARSE`` for the first
    Newton steps), hence of the weighted mean of the logs. Whether there is a band at all is
    decided at ``LOG_BAND_TOL`` (the same answer at every ``tol``). The rounding of the products,
    like that of ``eigh`` on the other path, is left to the float model (``float_error`` and the
    ``1e−10·r`` floor of the accuracy); measured, it is ~3e−15 per log at ``k = 10``, ``r = 0.5``."""
    t = 2.0 * radius + 2.0**-10 + np.exp(min(2.0 * radius, 50.0)) / (8.0 * k**1.5)
    full = logm_band_plan(float(t), LOG_BAND_TOL)
    if k < LOG_BAND_MIN_K or full is None or full.products > LOG_BAND_MAX_PRODUCTS:
        return None, 0.0
    plan = logm_band_plan(float(t), float(tol))
    return plan, float(np.sqrt(k) * plan.bound)


def _band_half_width(radius, k):
    """``t`` of ``_log_band``: ``2r``, the whitening's rounding at the worst conditioning a release
    accepts, and ``2^−10``."""
    return 2.0 * radius + (2.0**-10 + np.exp(min(2.0 * radius, 50.0)) / (8.0 * k**1.5))


@lru_cache(maxsize=256)
def _hessian_ratio(radius, k):
    """``κ`` such that ``Ĥ`` (``newton_terms``, any order) has its spectrum in ``[W, κW]``,
    ``W = Σ w_i``, for records and iterate in a ball of radius ``r``; ``None`` where that is not
    proven (``T² > 10``). Per record ``Ĥ`` is ``w_i φ̂(ad_V/2)``, eigenvalues ``w_i φ̂(t)`` with
    ``t = |l_j − l_k|/2 ≤ ‖V‖_F/√2`` (``(l_j − l_k)² ≤ 2(l_j² + l_k²)``), and ``φ̂ = 1 + t²/3``,
    ``1 + t²/3 − t⁴/45`` or ``1 + t²/3 − t⁴/45 + 2t⁶/945`` lies in ``[1, 1 + t²/3]`` for ``t² ≤ 10``.
    The computed logs have ``‖V̂‖_F ≤ 2r + √k(t_band − 2r + 2^−16)`` (each eigenvalue moved by the
    whitening's rounding and ``2^−10``, as ``_log_band``, and by the series' error, at most
    ``2^−17``); ``T² = ‖V̂‖²/2``, and ``κ = (1 + T²/3)(1 + 2^−20)/(1 − 2^−20)`` covers the rounding
    of ``W`` (``nε`` relative, below ``2^−20`` for ``n < 4·10⁹``)."""
    spread = 2.0 * radius + np.sqrt(k) * (_band_half_width(radius, k) - 2.0 * radius + 2.0**-16)
    T2 = float(spread) ** 2 / 2.0
    if not T2 <= 10.0:
        return None
    return (1.0 + T2 / 3.0) * (1.0 + 2.0**-20) / (1.0 - 2.0**-20)


def _free_levels(radius, k, truncation, rounding, lift, ratio):
    """The matrix-free passes a Newton step may take at ``k ≥ MATRIX_FREE_MIN_K``, as
    ``((order, tol, steps, ratio), e, cost, g, solve)``: every order of the truncated Hessian, every
    series of the logs (``tol``; ``None``: an ``eigh`` per record, where there is no band) and every
    count of ``CHEBYSHEV_STEPS``, with ``solve = chebyshev_error(steps, ratio)``. The cost model, in
    gradient passes: the logs' products, ``FREE_PASS_PRODUCTS`` and ``order`` products per record
    for each Chebyshev step after the first, over ``FREE_GRADIENT_PRODUCTS``."""
    full, _ = _log_band(radius, k)
    tols = LOG_BAND_COARSE + (LOG_BAND_TOL,) if full is not None else (None,)
    levels = []
    for order in (2, 4, 6):
        for tol in tols:
            plan, g = _log_band(radius, k, tol) if tol is not None else (None, 0.0)
            products = FREE_GRADIENT_PRODUCTS if plan is None else plan.products
            for steps in CHEBYSHEV_STEPS:
                cost = (products + FREE_PASS_PRODUCTS + (steps - 1) * order) / FREE_GRADIENT_PRODUCTS
                levels.append(((order, tol, steps, ratio), truncation[order] + rounding + lift * g, cost, g,
                               chebyshev_error(steps, ratio)))
    return levels


def _t_coth_t(t):
    """``t coth t``, 1 at 0 (``tanh`` is accurate near 0: no cancellation to guard)."""
    t = np.asarray(t, float)
    return np.divide(t, np.tanh(t), out=np.ones_like(t), where=t != 0)


@lru_cache(maxsize=64)
def _vech_index(k):
    """``(upper, full)``: the row-major positions of the upper triangle of a ``k × k`` matrix, and
    for every position the index of its entry among them (symmetric matrices)."""
    rows, cols = np.triu_indices(k)
    position = np.empty((k, k), dtype=np.intp)
    position[rows, cols] = position[cols, rows] = np.arange(len(rows))
    return rows * k + cols, position.reshape(-1)


def _eigenvalues_positive(w, k):
    """The test on eigenvalues ``w`` (ascending) of ``(…, k, k)`` matrices: ``λmin > k·ε·|λmax|``."""
    return w[..., 0] > k * np.finfo(float).eps * np.abs(w[..., -1])


def _unit_scaled(a):
    """Each matrix times the power of two that puts its largest entry in ``[1/2, 1)`` (exact, so
    the signs of the eigenvalues and the ratio tested are unchanged), with entries below ``2^-100``
    of it set to 0 (far below the test's ``k·ε`` threshold): LAPACK's ``eigvalsh`` does not converge
    on some finite matrices it would otherwise get (``−1e308·I``, entries spanning ``1e-302…1e305``),
    and a check that raises for one record would fail a whole release for that neighbour only."""
    with np.errstate(all="ignore"):
        top = np.max(np.abs(a), axis=(-2, -1))
        exponent = np.where(np.isfinite(top) & (top > 0), np.frexp(np.where(np.isfinite(top), top, 1.0))[1], 0)
        scaled = np.ldexp(a, -exponent[..., None, None])
        return np.where(np.abs(scaled) < 2.0**-100, 0.0, scaled)


@blas_limited_unless_tiny
def _positive_definite(a):
    """Mask of numerically positive-definite symmetric matrices: smallest eigenvalue above
    ``k·ε·`` the largest (ε the float64 machine epsilon). Below that the eigenvalues from ``eigh``,
    on which ``Logm`` and every metric here rest, may come out ≤ 0 and the log is not finite;
    such a matrix is singular as far as float64 can tell. (Of 10⁴ random matrices with condition
    numbers up to 2e17, a Cholesky test passed 4.6 % and ``λ_min > 0`` 1.8 % whose log was not
    finite, and a release holding one could crash; this test passes none.)

    Fast path: a batch whose Cholesky factorisations all succeed after a shift by
    ``τ = 64·k²·ε·‖a‖_F`` passes without eigenvalues. A Cholesky that completes in floating point
    factors ``a − τI + E`` with ``‖E‖₂ ≤ c·k²·ε·‖a‖₂``, ``c`` a small constant (Demmel; Higham 2002,
    Thm 10.5), so ``λmin(a) ≥ (64 − c)·k²·ε·‖a‖₂``, far above the backward error of ``eigvalsh``
    plus ``k·ε·λmax``: the eigenvalue test would pass too. Any failure in the batch sends the
    whole batch to the eigenvalues (about 20 times the cost of a Cholesky at k = 30)."""
    a = _unit_scaled(np.asarray(a, float))
    k = a.shape[-1]
    with np.errstate(all="ignore"):
        shift = CHOLESKY_MARGIN * k * k * np.finfo(float).eps * np.linalg.norm(a, axis=(-2, -1))
        try:
            np.linalg.cholesky(a - shift[..., None, None] * np.eye(k))
            return np.ones(a.shape[:-2], dtype=bool)
        except np.linalg.LinAlgError:
            pass
    return _eigenvalues_positive(np.linalg.eigvalsh(a), k)


class SPDPasses(RecordPasses):
    """The record passes both SPD metrics share (``_SPD``)."""

    if TYPE_CHECKING:  # the matrix size and the frame helpers each metric defines
        k: int
        _eigen_frame: Callable[..., Any]
        _whiten: Callable[..., Any]
        _clip_eigen: Callable[..., Any]
        _frame_distance: Callable[..., Any]
        _symmetric: Callable[..., Any]

    @blas_limited
    def prepare_block(self, X: Array, center: Array, radius: float, weight: float, log_sum: bool = True,
                      keep: bool = True, out: Array | None = None) -> tuple[Any, ...] | None:
        """One block of ``privacy.release.prepare_records`` from one ``eigh`` per record, with the
        same operations for every record: no Cholesky whose failure on one record sends its whole
        block to a second decomposition (the generic check's fast path: one non-positive-definite
        record made a 300-record SPD(10) release 9 % slower, a timing channel). Non-finite records
        become the centre before anything else; the rest are symmetrised, seen in the centre's
        frame (``_eigen_frame``) and decomposed once, scaled by a power of two to entries at most
        1 with those below ``2^−100`` rounded to the grid ``2^−152`` (``eigh`` raised on finite symmetric
        matrices whose entries spanned 10^−302 … 10^281: one record failed the whole release). A
        record whose image is not finite in float64 (``1e308·I``: its symmetrisation overflows) or
        that was not symmetric to ``POINT_ATOL`` (relative) is decomposed as the centre. A record is
        kept when its eigenvalues in the frame are all positive: the matrix whose logarithm is
        taken is then positive definite and its logarithm finite (congruence keeps positive
        definiteness; a record so ill-conditioned there that ``eigh`` cannot resolve its smallest
        eigenvalue is far from the centre and clipped, which needs no accuracy). This is
        ``belongs``' notion (``λmin > k·ε·λmax`` on the record itself) except at float64's edge,
        where the two can differ: records of condition above ~1e15 (in the frame or on their own),
        and images whose entries lie below ~2^−1000, which the floored scale rounds to 0 and
        replaces even when well conditioned (``1e−320·I``). ``strict=True`` refuses by
        ``belongs``. The others take the centre's
        eigen-pair and become the centre, exactly; then the clip, the rebuilt records (every one)
        and the sum of logs as in ``clip_and_log_sum``. ``None`` (the generic path) for a block of
        another shape."""
        decomposed = self._decomposed_block(X, center)
        if decomposed is None:
            return None
        finite, ok, frame, base, u, log_w = decomposed
        with np.errstate(all="ignore"):
            records, moved, total, _ = self._clip_eigen(frame, base, u, log_w, radius, weight, keep)
        return records, finite, ok, moved, total

    @blas_limited
    def prepared_distances(self, X: Array, center: Array, cap: float) -> FloatArray | None:
        """``min(ρ(center, x̃), cap)`` of a block's records ``x̃`` as ``prepare_block`` sees them (invalid
        ones at 0), from the same one ``eigh`` per record: the distances ``prepare_block`` clips by,
        without rebuilding the clipped records and decomposing them again."""
        decomposed = self._decomposed_block(X, center)
        if decomposed is None:
            return None
        _, _, frame, _, u, log_w = decomposed
        with np.errstate(all="ignore"):
            return cast(FloatArray, np.minimum(self._frame_distance(frame, u, log_w), cap))

    def _decomposed_block(self, X: Array, center: Array) -> tuple[Any, ...] | None:
        """``(finite, ok, frame, base, u, log_w)``: ``prepare_block``'s one decomposition of a block, every
        record in the centre's frame (invalid ones as the centre); ``None`` for a block of another shape."""
        k = self.k
        X, center = np.asarray(X), np.asarray(center, float)
        if X.ndim != 3 or X.shape[1:] != (k, k) or center.shape != (k, k):
            return None
        n = len(X)
        with np.errstate(all="ignore"):
            finite = finite_rows(X.reshape(n, k * k), 1)
            x = select(finite[:, None, None], np.asarray(X, float), center)
            symmetric = self._symmetric(x, POINT_ATOL)[0]
            xs = sym(x)
            frame = self._eigen_frame(center)
            y = self._whiten(frame, xs)
            usable = finite_rows(y.reshape(n, k * k), 1) & symmetric  # finite images (1e308·I overflows)
            y = select(usable[:, None, None], y, np.diag(frame.w))
            # each image scaled by a power of two (exact) to a largest entry in [1/2, 1), and entries below
            # 2^-100 rounded to a 2^-152 grid (0 below half of it): eigh failed to converge on symmetric
            # matrices whose entries spanned 1e-302…1e281 (11 in 4000 random ones; 0 in 480,000 after)
            flat = y.reshape(n, k * k)
            # (an exponent below −900, images under 2^-900, is taken as −900: no scale overflows, no flush is subnormal)
            exponent = np.maximum(np.frexp(np.maximum(flat.max(axis=1), -flat.min(axis=1)))[1], -900)
            flush = np.ldexp(SCALED_FLUSH, exponent)[:, None, None]  # rounded before the scaling:
            y += flush  # no entry turns subnormal on the way
            y -= flush
            y *= np.ldexp(1.0, -exponent)[:, None, None]
            w, u = np.linalg.eigh(y)
            ok = finite & usable & (w[:, 0] > 0.0)
            w = select(ok[:, None], w, frame.w)
            u = select(ok[:, None, None], u, frame.u)
            log_w = np.log(w) + select(ok, exponent * math.log(2.0), 0.0)[:, None]
            base = select(ok[:, None, None], xs, center)
        return finite, ok, frame, base, u, log_w

    def _validate_one(self, x: Array) -> Array | None:
        # k = 2 with floats: the checks of ``_checks`` and the Cholesky fast path of
        # ``_positive_definite``; anything it does not pass goes to the general path
        if self.k != 2:
            return None
        (a0, b0), (c0, d0) = x.tolist()
        m0 = 0.5 * (b0 + c0)
        if not math.isfinite(a0 + d0 + m0 + b0 - c0):  # NaN, inf, or entries near float64's end
            return None
        big = max(a0, d0, abs(b0), abs(c0))
        if not big > 0.0:
            return None
        # every test is relative: run them on the entries scaled by a power of two (exact), so that
        # squares do not overflow at any scale; off-diagonals below 2^-300 of it are flushed (their
        # squares would be subnormal, a slow path; a diagonal that small fails the test anyway)
        f = math.ldexp(1.0, -math.frexp(big)[1])
        a, d, b, c, m = a0 * f, d0 * f, b0 * f, c0 * f, m0 * f
        b, c, m = (0.0 if abs(b) < TINY else b), (0.0 if abs(c) < TINY else c), (0.0 if abs(m) < TINY else m)
        if not math.sqrt(2.0) * abs(b - c) <= POINT_ATOL * math.sqrt(a * a + b * b + c * c + d * d):
            return None
        shift = CHOLESKY_MARGIN * 4 * EPS * math.sqrt(a * a + 2.0 * m * m + d * d)
        head = a - shift
        if not head > 0.0 or not (d - shift) - m * m / head > 0.0:
            return None
        return np.array([[a0, m0], [m0, d0]])

    def mean_start_stats(self, block: ArrayLike, weights: Array) -> Any:
        w, u = np.linalg.eigh(np.asarray(block, float))
        return eig_weighted_sum(u, np.log(w) * np.asarray(weights, float)[:, None])

    @blas_limited
    def checked_start_stats(self, block: ArrayLike, weights: Array) -> tuple[tuple[bool, str], Any]:
        """``check_point`` and the log-Euclidean start from one ``eigh`` per record: the
        eigenvalues decide positive-definiteness (the test of ``_positive_definite``) and give
        ``Logm``."""
        x = np.asarray(block)
        if not self._shape_ok(x) or not np.all(np.isfinite(x)):
            return self.check_point(x), None
        symmetric, reason = self._symmetric(x, POINT_ATOL)
        if not np.all(symmetric):
            return (False, reason), None
        w, u = np.linalg.eigh(x)
        if not np.all(_eigenvalues_positive(w, self.k)):
            return (False, "not positive definite"), None
        return (True, ""), eig_weighted_sum(u, np.log(w) * np.asarray(weights, float)[:, None])

    def mean_start(self, stats: Any) -> Array:
        return expm_sym(stats)  # the log-Euclidean mean


class AffineInvariantPasses(RecordPasses):
    """The affine-invariant metric's gradient and Newton passes (``SPDAffineInvariant``)."""

    if TYPE_CHECKING:
        k: int
        _in_frame: Callable[..., Any]
        _eigen_frame: Callable[..., Any]
        _whiten: Callable[..., Any]
        _clip_eigen: Callable[..., Any]
        _clip_in_frame: Callable[..., Any]

    checked_start_stats = RecordPasses.checked_start_stats  # the check's Cholesky and one inverse: no eigh

    def prepare_rows(self, rows: int, n: int, log_sum: bool = True) -> int:
        """From ``k = MATRIX_FREE_MIN_K`` on, blocks of record preparation whose ``(rows, k, k)``
        temporaries hold at most ``PREPARE_BYTES`` each: the release's memory stays a small multiple
        of the records' (256 records of SPD(50) made ten 5 MiB temporaries). Below, ``rows``."""
        if self.k < MATRIX_FREE_MIN_K:
            return rows
        return max(8, min(rows, PREPARE_BYTES // (8 * self.k * self.k)))

    @blas_limited
    def weighted_log_sum(self, p: Array, X: Array, weights: Array) -> Array:
        """``p^½ (Σ w_i Logm(p^-½ X_i p^-½)) p^½``: one ``eigh`` per record, the sum formed in the
        frame of ``p`` by one matrix product (``eig_weighted_sum``), and ``p^½·p^½`` applied once."""
        p = np.asarray(p, float)
        if p.ndim != 2:
            return super().weighted_log_sum(p, X, weights)
        s, si = sqrtm_spd(p)
        w, u = np.linalg.eigh(self._in_frame(si, X))
        return sym(s @ eig_weighted_sum(u, np.log(w) * np.asarray(weights, float)[:, None]) @ s)

    def mean_start_stats(self, block: ArrayLike, weights: Array) -> Any:
        """``Σ w_i X_i`` and ``Σ w_i X_i⁻¹``, stacked: the arithmetic and harmonic means' sums."""
        block, weights = np.asarray(block, float), np.asarray(weights, float)
        return np.stack([np.tensordot(weights, block, axes=(0, 0)), np.tensordot(weights, np.linalg.inv(block), axes=(0, 0))])

    def mean_start(self, stats: Any) -> Array:
        """``A # H = A^½ (A^½ H⁻¹ A^½)^-½ A^½``, the geometric mean of the arithmetic and harmonic means:
        like the log-Euclidean mean, within third order of the affine-invariant one, and cheaper
        (a Cholesky and an inverse per record instead of an ``eigh``)."""
        s, _ = sqrtm_spd(stats[0])
        _, inv_half = sqrtm_spd(sym(s @ stats[1] @ s))
        return sym(s @ inv_half @ s)

    @blas_limited
    def karcher_terms(self, x: Array, X: Array, weights: Array, hessian: bool = False) -> tuple[Array, float, Any]:
        """``weighted_log_sum``, the farthest record (``‖log w_i‖`` from the eigenvalues ``w_i`` of
        ``x^-½ X_i x^-½``) and, with ``hessian=True``, the Hessian of ``Σ w_i ½ρ²(·, X_i)`` at ``x``,
        all from one ``eigh`` per record. In the frame of ``x`` (``v ↦ x^-½ v x^-½``, an isometry onto
        ``T_I``) the Hessian of ``½ρ²(·, y)`` at ``I``, ``y = U diag(e^l) Uᵀ``, is
        ``V ↦ U (Φ ∘ (UᵀVU)) Uᵀ`` with ``Φ_jk = φ((l_j − l_k)/2)``, ``φ(t) = t coth t``: SPD(k) is a
        symmetric space, where the Hessian of ``½ρ²`` is ``φ`` of the Jacobi operator
        ``R(·, log y) log y``, whose eigenvectors are the ``u_j u_kᵀ + u_k u_jᵀ`` with eigenvalues
        ``−(l_j − l_k)²/4`` (docs/theory.md §2)."""
        x = np.asarray(x, float)
        if x.ndim != 2:
            return super().karcher_terms(x, X, weights, hessian)
        s, si = sqrtm_spd(x)
        w, u = np.linalg.eigh(self._in_frame(si, X))
        log_w = np.log(w)
        weights = np.asarray(weights, float)
        g = sym(s @ eig_weighted_sum(u, log_w * weights[:, None]) @ s)
        far = float(np.sqrt(np.max(np.sum(log_w**2, axis=-1)))) if len(w) else 0.0
        if not hessian:
            return g, far, None
        cache: list[Any] = []  # the Hessian's tables, built on its first use (the last pass only checks ‖∇F‖)

        def apply(v):
            if not cache:
                gain = _t_coth_t((log_w[:, :, None] - log_w[:, None, :]) / 2.0)
                cache.extend([gain * weights[:, None, None], np.ascontiguousarray(u.transpose(0, 2, 1))])
            gain, ut = cache
            inner = ut @ sym(si @ v @ si) @ u
            return sym(s @ np.sum((u @ (gain * inner)) @ ut, axis=0) @ s)

        return g, far, apply

    # -- Newton steps of the certified mean (docs/theory.md §2, "Newton steps with a public count") --
    def newton_constants(self, radius: float, n: int) -> NewtonConstants | None:
        """Public constants of the certified mean's Newton steps on ``B_r(c)``: footpoints and
        records in the ball are within ``D = 2r``. SPD(k) is a symmetric space (``∇R = 0``):
        ``Hess ½ρ²_p = f(N)``, ``N = −R(·, V)V``, ``V = log_x p``, ``f(s) = √s coth √s``, so
        ``∇_X Hess = Df(N)[∇_X N]`` with ``∇_X N = −R(·, ∇_X V)V − R(·, V)∇_X V`` and
        ``∇_X V = −Hess[X]``; ``‖R(A, B)C‖ ≤ ½|A||B||C|`` (``R = −¼[[A, B], C]`` at ``I`` and
        Böttcher–Wenzel), ``‖Hess‖ ≤ f(ρ²/2)``; ``f = 1 + Σ_m 2s/(s + m²π²)`` is operator monotone, its
        divided differences a positive Schur multiplier of norm ``≤ f′(0) = 1/3``. Hence
        ``‖∇Hess ½ρ²_p‖ ≤ (ρ/3)·f(ρ²/2)``, increasing in ``ρ``: ``L = (D/3)(D/√2) coth(D/√2)``.
        ``e``: ``newton_terms`` keeps ``φ(t) = t coth t`` to sixth order; with ``x = t²/(mπ)²``,
        ``φ = 1 + Σ_m 2x/(1 + x)`` and ``2x/(1+x) = 2x − 2x² + 2x³ − 2x⁴/(1+x)``, so
        ``0 ≤ (1 + t²/3 − t⁴/45 + 2t⁶/945) − φ ≤ 2t⁸ζ(8)/π⁸ = t⁸/4725``; ``t = |l_j − l_k|/2 ≤ ρ/√2``
        bounds the error by ``D⁸/75600``, plus float; kept to second or fourth order (``cheaper``,
        for the first steps) ``t⁴/45`` or ``2t⁶/945`` (the same series), ``D⁴/180`` or ``D⁶/3780``. ``tangent``:
        ``‖Hess F(c) − I‖ ≤ f(r²/2) − 1``. ``expansion = ½`` (curvature ``≥ −½``). ``g``: the logs
        by matrix products (``_log_band``), whose error ``Δ`` also moves ``Ĥ``, by at most
        ``(2D/3 + 4D³/45 + 4D⁵/315)·g``, added to every ``e`` (``‖ad_V‖ ≤ 2ρ``, ``‖ad_Δ‖ ≤ 2|Δ|``: the
        derivative of ``ad_V^(2m)`` in ``V`` is at most ``2m (2ρ)^(2m−1)·2|Δ|``, over 12, 720, 30240).
        Where the band is used, every order is also offered with coarser logs (``(order, tol)``,
        ``tol`` in ``LOG_BAND_COARSE``), each with the ``g`` of its own series and that ``g``'s share
        of ``e``; its cost is the order's less the products it saves (``LOG_SHARE`` of a pass)."""
        D = 2.0 * radius
        if not D > 0:
            return None
        b = D / np.sqrt(2.0)
        f = lambda a: float(a / np.tanh(a)) if a > 1e-8 else 1.0
        full, g = _log_band(float(radius), self.k)
        k2, lift = self.k**2, 2 * D / 3 + 4 * D**3 / 45 + 4 * D**5 / 315
        rounding = 1e-8 + 4.0 * n * np.finfo(float).eps
        truncation = {2: float(D**4 / 180.0), 4: float(D**6 / 3780.0), 6: float(D**8 / 75600.0)}
        costs = {2: 1.0 + k2 / 5000.0, 4: 1.1 + k2 / 1400.0, 6: 1.3 + k2 / 800.0}
        ratio = _hessian_ratio(float(radius), self.k) if self.k >= MATRIX_FREE_MIN_K else None
        levels: list[tuple[Any, ...]] = []
        own: Any = 6
        if ratio is not None:  # no k² × k² matrix: Ĥ applied record by record, the step by Chebyshev steps
            levels = _free_levels(float(radius), self.k, truncation, rounding, lift, ratio)
            own, e, cost, g, solve = levels.pop()
        else:
            e, cost, solve = truncation[6] + rounding + lift * g, costs[6], 0.0
        for order in (2, 4, 6) if ratio is None else ():
            if full is not None:  # the same order with coarser logs: fewer products, its own g
                for tol in LOG_BAND_COARSE:
                    plan, g_tol = _log_band(float(radius), self.k, tol)
                    saved = LOG_SHARE * costs[2] * (1.0 - plan.products / full.products)
                    levels.append(((order, tol), truncation[order] + rounding + lift * g_tol, costs[order] - saved, g_tol))
            if order < 6:
                levels.append((order, truncation[order] + rounding + lift * g, costs[order], g))
        return NewtonConstants(
            L=float(D / 3.0 * f(b)), e=e, expansion=0.5,
            tangent=f(radius / np.sqrt(2.0)) - 1.0, cost=cost, cheaper=tuple(levels), order=own, g=g, solve=solve)

    @blas_limited
    def newton_terms(self, x: Array, X: Array, weights: Any, ball: Any = None,
                     order: Any = 6) -> tuple[Any, ...]:
        """``(Σ w_i V_i, Ĥ)`` in the frame of ``x`` (``v ↦ x^-½ v x^-½``, an isometry onto
        ``T_I``), ``V_i = Logm(x^-½ X_i x^-½)``: one ``eigh`` per record. The exact Hessian of ``F``
        at ``x`` is ``Σ w_i U_i (Φ_i ∘ U_iᵀXU_i) U_iᵀ``, ``Φ_jk = φ((l_j − l_k)/2)``, ``φ(t) = t coth t``
        (``k⁴`` work per record); ``Ĥ`` keeps ``φ`` to ``order`` 2, 4 or 6,
        ``1 + t²/3 − t⁴/45 + 2t⁶/945``, i.e. ``Ĥ = Σ w_i (I + ad²/12 − ad⁴/720 + ad⁶/30240)`` with
        ``ad = ad_(V_i)`` (``ad^(2m) X = Σ_p (−1)^p C(2m, p) V^(2m−p) X V^p``): as a ``k² × k²`` matrix
        (row-major ``vec``) it needs ``Σ w_i V_i^a ⊗ V_i^b`` (``a + b ≤ order``, ``a, b ≥ 1``), Gram
        matrices of the ``vec V_i^a``. ``weights`` may be one number (equal weights). ``ball``: the
        radius of the ball the records were prepared for, which holds ``x`` too (``None``: records
        as given). Prepared records are exactly symmetric: whitened without the symmetrising pass;
        and where the ball is small enough their logs come from matrix products alone
        (``logm_band`` on the band ``_log_band`` proves, within ``NewtonConstants.g``) instead of
        an ``eigh`` per record; ``order = (order, tol)`` takes a coarser series there, within that
        level's ``g`` (``newton_constants``; records as given take the ``eigh`` path at every level,
        whose error is within all of them). The logs and their powers pass through ``matrix.flush_tiny``: no product
        here is subnormal."""
        if isinstance(order, tuple) and len(order) == 4:  # (order, tol, steps, ratio): matrix-free
            return self._newton_terms_free(x, X, weights, ball, *order)
        x, k = np.asarray(x, float), self.k
        order, tol = order if isinstance(order, tuple) else (order, LOG_BAND_TOL)  # (order, tol): coarser logs
        degrees, (c, Q) = _newton_coefficients(order)
        top = len(c)
        _, si = sqrtm_spd(x)
        X, w = np.asarray(X, float), np.asarray(weights, float)
        # the terms Σ_ab C_ab Σ_i w_i vec V_i^a (vec V_i^b)ᵀ, with C = Q diag(c) Qᵀ, are Σ_j c_j Y_jᵀ Y_j,
        # Y_j = [√w_i Σ_a Q_aj vech V_i^a]_i: one symmetric rank-m update (BLAS syrk) per j, over the
        # k(k+1)/2 distinct entries of the symmetric V^a (vech), expanded afterwards (weights are ≥ 0)
        upper, full = _vech_index(k)
        G: Any
        G, sums, total = 0.0, np.zeros((1 + len(degrees), k, k)), 0.0
        band = _log_band(float(ball), k, float(tol))[0] if ball is not None else None
        rows = LOG_BAND_BLOCK if band is not None else max(64, NEWTON_BLOCK_BYTES // (8 * top * k * k))
        for i in range(0, len(X), rows):
            Y = self._in_frame(si, X[i:i + rows], symmetric=ball is not None)
            m = len(Y)
            wi = np.broadcast_to(w if w.ndim == 0 else w[i:i + rows], (m,))
            V = np.empty((top, m, k, k))  # V^1 … V^top
            if band is not None:
                V[0] = logm_band(Y, band)
            else:
                lam, u = np.linalg.eigh(Y)
                V[0] = eig_apply(u, np.log(lam))
            flush_tiny(V[0])  # powers of tiny entries would turn subnormal (slow: a timing channel)
            for a in range(2, top + 1):
                np.matmul(V[a // 2 - 1], V[a - a // 2 - 1], out=V[a - 1])
                flush_tiny(V[a - 1])
            half = V.reshape(top, m, k * k)[:, :, upper]
            if w.ndim:
                half *= np.sqrt(wi)[:, None]
            Y = (Q.T @ half.reshape(top, -1)).reshape(top, m, -1)
            G = G + sum(cj * (Yj.T @ Yj) for cj, Yj in zip(c, Y))
            # Σ w V^d for d = 1 and the even degrees: V^d at hand, or Σ w (V^(d/2))² as one (k × mk)(mk × k) product
            for j, d in enumerate((1,) + degrees):
                if d <= top:
                    sums[j] += np.tensordot(wi, V[d - 1], axes=(0, 0))
                else:
                    B = V[d // 2 - 1].reshape(-1, k)
                    if w.ndim:
                        B = B * np.repeat(np.sqrt(wi), k)[:, None]
                    sums[j] += (B.T @ B) * (float(w) if w.ndim == 0 else 1.0)
            total += float(np.sum(wi))
        G = (float(w) * G if w.ndim == 0 else G)[np.ix_(full, full)]
        eye = np.eye(k)
        H = total * np.eye(k * k) + G.reshape(k, k, k, k).transpose(0, 2, 1, 3).reshape(k * k, k * k)
        for scale, even in zip(_NEWTON_SCALES, sums[1:]):
            H += scale * (np.kron(even, eye) + np.kron(eye, even))
        return sym(sums[0]), sym(H)

    def _newton_terms_free(self, x: Array, X: Array, weights: Any, ball: Any, order: int, tol: float | None,
                           steps: int, ratio: float) -> tuple[Array, TruncatedHessian]:
        """``newton_terms`` without the ``k² × k²`` matrix: ``(Σ w_i V_i, Ĥ)`` with ``Ĥ`` a
        ``TruncatedHessian`` holding the logs ``V_i`` (the records' size once more), applied record by
        record and solved by ``steps`` Chebyshev steps on ``[W, ratio·W]`` (``_hessian_ratio``). The
        logs as in ``newton_terms`` (``tol``: the series' level; ``None`` or records as given: an
        ``eigh`` per record), in blocks whose temporaries stay under ``LOG_BAND_BYTES`` each."""
        x, k = np.asarray(x, float), self.k
        _, si = sqrtm_spd(x)
        X, w = np.asarray(X, float), np.asarray(weights, float)
        band = _log_band(float(ball), k, float(tol))[0] if ball is not None and tol is not None else None
        rows = min(LOG_BAND_BLOCK, max(8, LOG_BAND_BYTES // (8 * k * k)))
        logs, gradient = np.empty((len(X), k, k)), np.zeros((k, k))
        for i in range(0, len(X), rows):
            Y = self._in_frame(si, X[i:i + rows], symmetric=ball is not None)
            if band is not None:
                V = logm_band(Y, band)
            else:
                lam, u = np.linalg.eigh(Y)
                V = eig_apply(u, np.log(lam))
            logs[i:i + len(V)] = flush_tiny(V)  # powers of tiny entries would turn subnormal (a timing channel)
            gradient += np.tensordot(np.broadcast_to(w if w.ndim == 0 else w[i:i + rows], (len(V),)), V, axes=(0, 0))
        return sym(gradient), TruncatedHessian([logs], [w if w.ndim == 0 else w.copy()], _NEWTON_SCALES[:order // 2], steps,
                                               ratio)

    def newton_step(self, x: Array, g: Array, H: Any) -> Array:
        """The tangent vector ``s`` at ``x`` with ``Ĥ[x^-½ s x^-½] = g`` (both in the frame of ``x``):
        by ``np.linalg.solve`` on the ``k² × k²`` matrix, or by the Chebyshev steps of a
        ``TruncatedHessian`` (``k ≥ MATRIX_FREE_MIN_K``)."""
        s_half, _ = sqrtm_spd(np.asarray(x, float))
        if isinstance(H, TruncatedHessian):
            S = sym(H.solve(np.asarray(g, float)))
        else:
            S = sym(np.linalg.solve(H, np.asarray(g, float).reshape(-1)).reshape(self.k, self.k))
        return sym(s_half @ S @ s_half)

    @blas_limited
    def clip_and_log_sum(self, x: ArrayLike, center: ArrayLike, radius: float,
                         weights: ArrayLike) -> tuple[Array, BoolArray, Array]:
        """As ``Manifold.clip_and_log_sum``, from the one ``eigh`` per record of ``clip_to_ball``:
        ``Σ w_i log_c(x̃_i) = c^½ (Σ w_i U_i diag(min(1, r/ρ_i) log w_i) U_iᵀ) c^½``."""
        x, center = np.asarray(x, float), np.asarray(center, float)
        out, outside, (s, u, log_w, scale) = self._clip_in_frame(x, center, radius)
        values = log_w * (np.asarray(weights, float) * scale)[:, None]
        return out, outside, sym(s @ eig_weighted_sum(u, values) @ s)
