"""Symmetric positive-definite matrices SPD(k) under two metrics (covariance matrices).

``SPDAffineInvariant``: ``⟨u,v⟩_p = tr(p⁻¹u p⁻¹v)``, curvature in ``[−1/2, 0]``.
``SPDLogEuclidean``: the pull-back of Frobenius through ``Logm``; flat. Tangent vectors of this
metric are kept in log coordinates (symmetric matrices), as docs/theory.md §1 describes.
Points ``(..., k, k)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, lru_cache
from math import comb
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._threads import blas_limited, blas_limited_unless_tiny
from .._typing import Array, BoolArray, FloatArray
from .base import POINT_ATOL, Manifold, NewtonConstants, finite_rows, select
from .capabilities import LaplaceSampler
from .euclidean import _check_dim
from .kernels.arrays import clip_scale as _clip_scale
from .kernels.matrix_log import flush_tiny, logm_band, logm_band_plan
from .matrix import (
    eig_apply,
    eig_weighted_sum,
    expm_sym,
    funm_sym,
    invvecd,
    logm_spd,
    sqrtm_spd,
    sym,
    vecd,
)

NEWTON_BLOCK_BYTES = 1 << 24  # the Newton pass holds V¹…V⁵ of a block of records: about 16 MiB at any k

__all__ = ["SPDAffineInvariant", "SPDLogEuclidean"]

SCALED_FLUSH = 2.0**-100  # _SPD.prepare_block rounds scaled images to the grid 2^-152 near 0 (a + C − C)
CHOLESKY_MARGIN = 64.0  # the fast path of _positive_definite shifts by this × k² ε ‖a‖_F
EPS, SMALLEST = float(np.finfo(float).eps), float(np.finfo(float).tiny)
SCALE_RANGE = (2.0**-450, 2.0**450)  # eigenvalues of a release's ball (``ball_problem``)
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


def _eigenvalues_positive(w, k):
    """The test on eigenvalues ``w`` (ascending) of ``(…, k, k)`` matrices: ``λmin > k·ε·|λmax|``."""
    return w[..., 0] > k * np.finfo(float).eps * np.abs(w[..., -1])


def _t_coth_t(t):
    """``t coth t``, 1 at 0 (``tanh`` is accurate near 0: no cancellation to guard)."""
    t = np.asarray(t, float)
    return np.divide(t, np.tanh(t), out=np.ones_like(t), where=t != 0)


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


@dataclass(frozen=True)
class _Frame:
    """A centre as record preparation sees it (``_SPD.prepare_block``): its eigen-pair in the
    frame where records are decomposed, and what the metric needs to clip there."""
    w: np.ndarray
    u: np.ndarray
    s: np.ndarray | None = None
    si: np.ndarray | None = None
    log: np.ndarray | None = None


@lru_cache(maxsize=64)
def _vech_index(k):
    """``(upper, full)``: the row-major positions of the upper triangle of a ``k × k`` matrix, and
    for every position the index of its entry among them (symmetric matrices)."""
    rows, cols = np.triu_indices(k)
    position = np.empty((k, k), dtype=np.intp)
    position[rows, cols] = position[cols, rows] = np.arange(len(rows))
    return rows * k + cols, position.reshape(-1)


class _SPD(Manifold):
    point_shape = property(lambda self: (self.k, self.k))
    dim = property(lambda self: self.k * (self.k + 1) // 2)
    origin = property(lambda self: np.eye(self.k))
    injectivity_radius = np.inf

    if TYPE_CHECKING:  # the matrix size and the frame helpers each metric defines (its dataclass field and methods)
        k: int

        def __init__(self, k: int) -> None: ...
        @staticmethod
        def _eigen_frame(center: Array) -> Any: ...
        @staticmethod
        def _whiten(frame: Any, x: Array) -> Any: ...
        @staticmethod
        def _clip_eigen(frame: Any, x: Array, u: Array, log_w: Array, radius: float, weight: float | None = None,
                        keep: bool = True) -> Any: ...

    def __post_init__(self) -> None:
        _check_dim(self.k, "k", 1)

    @classmethod
    def from_width(cls, width: int) -> Manifold:
        k = int(round(np.sqrt(width)))
        if k * k != width:
            raise ValueError(f"SPD records must have k*k entries, got {width}")
        return cls(k)

    @classmethod
    def examples(cls) -> tuple[Manifold, ...]:
        return (cls(3),)

    def _checks(self, x: Array, atol: float) -> Iterable[tuple[BoolArray, str]]:
        x = _unit_scaled(x)  # exact: the symmetry ratio and the eigenvalues' signs are unchanged
        return [self._symmetric(x, atol), (_positive_definite(sym(x)), "not positive definite")]

    @staticmethod
    def _symmetric(x, atol):
        scale = np.maximum(np.linalg.norm(x, axis=(-2, -1)), np.finfo(float).tiny)
        asym = np.linalg.norm(x - np.swapaxes(x, -1, -2), axis=(-2, -1))
        return asym <= atol * scale, f"not symmetric to relative tolerance {atol:g}"

    def project(self, x: ArrayLike) -> Array:
        return sym(np.asarray(x, dtype=float))

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
            records, moved, total, _ = self._clip_eigen(frame, base, u, log_w, radius, weight, keep)
        return records, finite, ok, moved, total

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

    # -- capabilities shared by both metrics ---------------------------------------------------
    ambient_dim = property(lambda self: self.dim)

    def to_ambient(self, x: ArrayLike) -> FloatArray:
        """``vecd``: an isometry of ``(Sym(k), Frobenius)`` onto ``R^(k(k+1)/2)``."""
        return vecd(np.asarray(x, float))

    def from_ambient(self, z: ArrayLike, floor: float = 1e-12) -> Array:
        """Back to a matrix, eigenvalues floored at ``floor`` (a projection onto SPD)."""
        return funm_sym(invvecd(z, self.k), lambda w: np.maximum(w, floor))

    def ambient_radius(self, center: ArrayLike, radius: float) -> float:
        """``λmax(center)(e^r − 1)`` bounds ``‖X − center‖_F`` over ``B_r(center)`` in either
        metric (affine-invariant: 2021 Prop. 1; log-Euclidean: Duhamel's formula)."""
        return float(np.linalg.eigvalsh(np.asarray(center, float))[-1]) * float(np.expm1(radius))

    def ambient_floor(self, center: Array, radius: float) -> float:
        """``λmin(center)·e^(−r)``: every matrix of ``B_r(center)`` has eigenvalues above it."""
        return float(np.linalg.eigvalsh(center)[0] * np.exp(-radius))

    def float_error(self, center: Array, radius: float) -> float:
        w = np.linalg.eigvalsh(center)
        return 16 * np.finfo(float).eps * (w[-1] / w[0]) * np.exp(2 * radius)

    @property
    def max_condition(self) -> float:
        """The largest condition number of a ball's matrices (``ball_problem``): ``1/(128 k^2.5 ε)``."""
        return 1.0 / (128.0 * self.k**2.5 * EPS)

    def ball_problem(self, center: Array, radius: float) -> str | None:
        """Why float64 cannot carry ``B_r(center)`` alike for every point, or ``None``. Every ``x`` in
        the ball has its eigenvalues in ``[λmin(c)e^(−r), λmax(c)e^r]`` (affine-invariant: those of
        ``c^-½ x c^-½`` lie in ``[e^(−r), e^r]``, then Ostrowski; log-Euclidean: Weyl on
        ``log x = log c + E``, ``‖E‖₂ ≤ r``), so ``κ(x) ≤ κ(c)e^(2r)``.

        (i) Below ``max_condition = 1/(128 k^2.5 ε)`` the shifted Cholesky of ``_positive_definite``
        (shift ``τ ≤ 64 k^2.5 ε λmax ≤ λmin/2``) factors ``A = x − τI`` of condition ``≤ 2κ``; it runs
        to completion when ``λmin(H) > kγ_(k+1)/(1 − kγ_(k+1))``, ``H`` the unit-diagonal scaling of
        ``A``, ``γ_m = mu/(1 − mu)``, ``u = ε/2`` (Higham 2002, Thm 10.7), and here
        ``λmin(H) ≥ 1/κ(A) ≥ 1/(2κ) ≥ 64 k^2.5 ε``, far above ``kγ_(k+1) ≈ k(k+1)ε/2``: every point of
        the ball passes the same path of the check (so does the released footpoint, a point of the
        ball). (ii) Eigenvalues within ``[2^−450, 2^450]``: the checks square entries and sum
        ``k²`` of them (Frobenius norms, determinants), which then neither overflow nor lose
        precision to subnormals."""
        w = np.linalg.eigvalsh(np.asarray(center, float))
        low, high = w[0] * np.exp(-radius), w[-1] * np.exp(radius)
        if not high / low <= self.max_condition:
            return (f"on {self!r} the ball reaches condition numbers up to κ(center)·e^(2·radius) = {high / low:.3g}, "
                    f"above {self.max_condition:.3g}: there float64 cannot tell every matrix from a singular one the same "
                    "way (the check of the released footpoint would take a path that depends on the data); use a "
                    "better-conditioned center (e.g. shrink the covariances) or a smaller radius")
        if not (SCALE_RANGE[0] <= low and high <= SCALE_RANGE[1]):
            return (f"on {self!r} the ball's eigenvalues reach [{low:.3g}, {high:.3g}], outside [2^-450, 2^450]: there "
                    "squared entries overflow or turn subnormal, and the checks of one matrix would depend on the data; "
                    "rescale the records and the center by one public constant first (an isometry of this metric)")
        return None

    def exp_coordinate_offset(self, center: Array) -> float | None:
        return float(np.max(np.abs(np.log(np.linalg.eigvalsh(center)))))

    def grid_scales(self, center: Array, radius: float, sigma: float) -> tuple[float, float]:
        w = np.linalg.eigvalsh(center)
        return sigma * w[0] * np.exp(-radius), w[-1] * np.exp(radius + min(sigma, 50.0))

    def snap(self, points: ArrayLike, grid: float) -> Array:
        """Symmetrise and floor the eigenvalues at ``grid`` and at ``256 k^2.5 ε λmax`` of the point
        itself: rounding must keep the point SPD, and a heavy-tailed draw of huge condition must
        still pass the membership check, by its Cholesky path (``ball_problem`` (i), with room for the
        rebuild's rounding), instead of failing the release with a probability that depends on the
        footpoint. Post-processing of the snapped draw alone."""
        floor = 4.0 * CHOLESKY_MARGIN * self.k**2.5 * EPS
        return funm_sym(self.project(points), lambda w: np.maximum(w, np.maximum(grid, floor * w[..., -1:])))

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

    def _random_sym_unit(self, shape, rng):
        # sym(G) for a standard Gaussian G has vecd(sym G) ~ N(0, I_dim): isotropic under Frobenius
        s = sym(as_generator(rng).standard_normal(shape + (self.k, self.k)))
        return s / np.linalg.norm(s, axis=(-2, -1), keepdims=True)


@dataclass(frozen=True)
class SPDAffineInvariant(_SPD):
    """SPD(k) with the affine-invariant metric (Pennec et al. 2006).

    ``exp_p(v) = p^½ Expm(p^−½ v p^−½) p^½``, ``log_p(q) = p^½ Logm(p^−½ q p^−½) p^½``,
    ``ρ(p, q) = ‖Logm(p^−½ q p^−½)‖_F``. Invariant under ``p ↦ A p Aᵀ``. Curvature in
    ``[−1/2, 0]``; ``dim = k(k+1)/2``. Its Laplace law is not radial: it is sampled by the
    eigenvalue construction of docs/theory.md §4.

    Parameters
    ----------
    k : int
        The matrix size ``k ≥ 1``; points are symmetric positive-definite ``(..., k, k)`` arrays.

    Raises
    ------
    ValueError
        If ``k`` is not an integer ``≥ 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp import SPDAffineInvariant
    >>> spd = SPDAffineInvariant(2)
    >>> p = np.diag([np.e, 1.0])
    >>> round(float(spd.dist(np.eye(2), p)), 12)
    1.0
    >>> bool(np.allclose(spd.exp(np.eye(2), spd.log(np.eye(2), p)), p))
    True
    """

    k: int
    curvature_bounds = (-0.5, 0.0)
    radial = False  # the Laplace law needs the eigenvalue construction, not a radial sampler

    @property
    def laplace_sampler(self) -> LaplaceSampler:
        """The eigenvalue construction at ``I``, moved to the footpoint (``privacy.spd_sampler``)."""
        from ..privacy.spd_sampler import SPD_LOG_EIGEN  # the sampler's code lives with the privacy layer

        return SPD_LOG_EIGEN

    @property
    def laplace_sigma_limit(self) -> float:
        return 1.0 / self.laplace_integrability_constant if self.k > 1 else np.inf

    @property
    def laplace_integrability_constant(self) -> float:
        """``c_k = ½ √(k(k²−1)/3)``: the Laplace law is integrable iff ``σ < 1/c_k``."""
        k = self.k
        return 0.5 * np.sqrt(k * (k * k - 1) / 3.0)

    def exp(self, p: ArrayLike, v: ArrayLike) -> Array:
        s, si = sqrtm_spd(np.asarray(p, float))
        return sym(s @ expm_sym(sym(si @ v @ si)) @ s)  # type: ignore[operator]  # v: any array-like of floats

    def log(self, p: ArrayLike, q: ArrayLike) -> Array:
        s, si = sqrtm_spd(np.asarray(p, float))
        return sym(s @ logm_spd(sym(si @ q @ si)) @ s)  # type: ignore[operator]  # q: any array-like of floats

    @blas_limited_unless_tiny
    def dist(self, p: ArrayLike, q: ArrayLike) -> FloatArray:
        _, si = sqrtm_spd(np.asarray(p, float))
        w = np.linalg.eigvalsh(self._in_frame(si, q))
        return np.sqrt(np.sum(np.log(w) ** 2, axis=-1))

    @staticmethod
    def _in_frame(si, q, symmetric=False):
        """``sym(p^-½ q p^-½)``: the records seen from ``p`` (callers are BLAS-limited). ``symmetric``:
        ``q`` is exactly symmetric (prepared records) and the product only feeds ``eigh``, which reads
        one triangle: the symmetrising pass is skipped (it would change rounding only)."""
        out = si @ np.asarray(q, float) @ si
        return out if symmetric else sym(out)

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

    checked_start_stats = Manifold.checked_start_stats  # the check's Cholesky and one inverse: no eigh

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
        levels: list[tuple[Any, ...]] = []
        for order in (2, 4, 6):
            if full is not None:  # the same order with coarser logs: fewer products, its own g
                for tol in LOG_BAND_COARSE:
                    plan, g_tol = _log_band(float(radius), self.k, tol)
                    saved = LOG_SHARE * costs[2] * (1.0 - plan.products / full.products)
                    levels.append(((order, tol), truncation[order] + rounding + lift * g_tol, costs[order] - saved, g_tol))
            if order < 6:
                levels.append((order, truncation[order] + rounding + lift * g, costs[order], g))
        return NewtonConstants(
            L=float(D / 3.0 * f(b)), e=truncation[6] + rounding + lift * g, expansion=0.5,
            tangent=f(radius / np.sqrt(2.0)) - 1.0, cost=costs[6], cheaper=tuple(levels), order=6, g=g)

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

    def newton_step(self, x: Array, g: Array, H: Any) -> Array:
        """The tangent vector ``s`` at ``x`` with ``Ĥ[x^-½ s x^-½] = g`` (both in the frame of ``x``)."""
        s_half, _ = sqrtm_spd(np.asarray(x, float))
        S = sym(np.linalg.solve(H, np.asarray(g, float).reshape(-1)).reshape(self.k, self.k))
        return sym(s_half @ S @ s_half)

    @blas_limited
    def clip_to_ball(self, x: ArrayLike, center: ArrayLike, radius: float) -> Array:
        """As ``Manifold.clip_to_ball``, from one ``eigh`` per record of ``c^-½ x c^-½``: its
        eigenvalues ``w`` give ``ρ(c, x) = ‖log w‖``; the records outside the ball become
        ``c^½ U diag(w^(r/ρ)) Uᵀ c^½`` (``exp_c`` of the scaled ``log_c``), built for every record so
        that the work does not depend on how many are clipped."""
        x, center = np.asarray(x, float), np.asarray(center, float)
        if center.ndim != 2 or x.ndim < 2:
            return super().clip_to_ball(x, center, radius)
        return self._clip_in_frame(x, center, radius)[0]

    @blas_limited
    def clip_and_log_sum(self, x: ArrayLike, center: ArrayLike, radius: float,
                         weights: ArrayLike) -> tuple[Array, BoolArray, Array]:
        """As ``Manifold.clip_and_log_sum``, from the one ``eigh`` per record of ``clip_to_ball``:
        ``Σ w_i log_c(x̃_i) = c^½ (Σ w_i U_i diag(min(1, r/ρ_i) log w_i) U_iᵀ) c^½``."""
        x, center = np.asarray(x, float), np.asarray(center, float)
        out, outside, (s, u, log_w, scale) = self._clip_in_frame(x, center, radius)
        values = log_w * (np.asarray(weights, float) * scale)[:, None]
        return out, outside, sym(s @ eig_weighted_sum(u, values) @ s)

    def _clip_in_frame(self, x, center, radius):
        frame = self._eigen_frame(center)
        w, u = np.linalg.eigh(self._whiten(frame, x))
        log_w = np.log(w)
        out, outside, _, scale = self._clip_eigen(frame, x, u, log_w, radius)
        return out, outside, (frame.s, u, log_w, scale)

    @staticmethod
    def _eigen_frame(center):
        """The centre's frame: ``c^½``, ``c^-½`` and the eigen-pair a record equal to the centre
        has there (``w = 1``, ``U = I``)."""
        s, si = sqrtm_spd(center)
        k = len(center)
        return _Frame(s=s, si=si, w=np.ones(k), u=np.eye(k))

    @staticmethod
    def _whiten(frame, x):
        """``c^-½ x c^-½``, not symmetrised: only ``eigh`` reads it, and ``eigh`` reads one triangle."""
        return frame.si @ x @ frame.si

    @staticmethod
    def _clip_eigen(frame, x, u, log_w, radius, weight=None, keep=True):
        """``(clipped, outside, Σ weight·log_c x̃ or None, scale)`` from the records' eigen-pairs in
        the centre's frame: ``ρ = ‖log w‖``, and every record rebuilt as
        ``c^½ U diag(w^min(1, r/ρ)) Uᵀ c^½``, inside the ball or not (the work must not depend on
        how many are clipped); ``x`` where the record was inside."""
        rho = np.sqrt(np.sum(log_w**2, axis=-1))
        outside = ~(rho <= radius)
        scale = _clip_scale(rho, radius)
        s = frame.s
        out = None
        if keep:
            out = select(outside[..., None, None], sym(s @ eig_apply(u, np.exp(log_w * scale[..., None])) @ s), x)
        total = None if weight is None else sym(s @ eig_weighted_sum(u, log_w * (weight * scale)[:, None]) @ s)
        return out, outside, total, scale

    def inner(self, p: ArrayLike, u: ArrayLike, v: ArrayLike) -> FloatArray:
        p = np.asarray(p, float)
        a = np.linalg.solve(p, u)  # type: ignore[arg-type]  # u, v: any array-like of floats
        b = np.linalg.solve(p, v)  # type: ignore[arg-type]
        return np.einsum("...ij,...ji->...", a, b)

    def to_tangent_coordinates(self, p: ArrayLike, v: ArrayLike) -> FloatArray:
        """``vecd(p^-½ v p^-½)``: ``⟨u, v⟩_p = tr(p⁻¹u p⁻¹v)`` is the Frobenius product there."""
        _, si = sqrtm_spd(np.asarray(p, float))
        return vecd(sym(si @ np.asarray(v, float) @ si))

    def from_tangent_coordinates(self, p: ArrayLike, c: ArrayLike) -> Array:
        s, _ = sqrtm_spd(np.asarray(p, float))
        return sym(s @ invvecd(c, self.k) @ s)

    def random_unit_tangent(self, p: ArrayLike, size: int | tuple[int, ...] | None = None, *, rng: RngLike = None) -> Array:
        s, _ = sqrtm_spd(np.asarray(p, float))
        w = self._random_sym_unit(self._out_shape(p, size), rng)
        return sym(s @ w @ s)


@dataclass(frozen=True)
class SPDLogEuclidean(_SPD):
    """SPD(k) with the log-Euclidean metric (Arsigny et al. 2007): ``Logm`` is an isometry onto
    ``(Sym(k), Frobenius)``. ``exp_p(v) = Expm(Logm p + v)``, ``log_p(q) = Logm q − Logm p``
    (tangent vectors in log coordinates). Flat: the Fréchet mean has a closed form and the tangent
    Gaussian mechanism applies (docs/theory.md §4).

    Parameters
    ----------
    k : int
        The matrix size ``k ≥ 1``; points are symmetric positive-definite ``(..., k, k)`` arrays.

    Raises
    ------
    ValueError
        If ``k`` is not an integer ``≥ 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp import SPDLogEuclidean
    >>> le = SPDLogEuclidean(2)
    >>> round(float(le.dist(np.eye(2), np.diag([np.e, np.e]))), 6)  # ‖diag(1, 1)‖_F
    1.414214
    """

    k: int
    curvature_bounds = (0.0, 0.0)
    radial_range = (0.0, np.inf)

    def exp(self, p: ArrayLike, v: ArrayLike) -> Array:
        return expm_sym(logm_spd(np.asarray(p, float)) + sym(np.asarray(v, float)))

    def log(self, p: ArrayLike, q: ArrayLike) -> Array:
        return logm_spd(np.asarray(q, float)) - logm_spd(np.asarray(p, float))

    def inner(self, p: ArrayLike, u: ArrayLike, v: ArrayLike) -> FloatArray:
        return np.sum(np.asarray(u) * np.asarray(v), axis=(-2, -1))

    def dist(self, p: ArrayLike, q: ArrayLike) -> FloatArray:
        return np.linalg.norm(self.log(p, q), axis=(-2, -1))

    def to_tangent_coordinates(self, p: ArrayLike, v: ArrayLike) -> FloatArray:
        return vecd(np.broadcast_to(sym(np.asarray(v, float)), np.broadcast_shapes(np.shape(p), np.shape(v))))

    def from_tangent_coordinates(self, p: ArrayLike, c: ArrayLike) -> Array:
        c = np.asarray(c, float)
        return np.broadcast_to(invvecd(c, self.k), np.broadcast_shapes(np.shape(p), c.shape[:-1] + (self.k, self.k))).copy()

    def random_unit_tangent(self, p: ArrayLike, size: int | tuple[int, ...] | None = None, *, rng: RngLike = None) -> Array:
        return self._random_sym_unit(self._out_shape(p, size), rng)

    def log_volume_ratio(self, rho: ArrayLike) -> FloatArray:
        return np.zeros_like(np.asarray(rho, dtype=float))

    @staticmethod
    def _eigen_frame(center):
        """``Logm c`` and the centre's own eigen-pair (records are decomposed as they are)."""
        w, u = np.linalg.eigh(center)
        return _Frame(log=eig_apply(u, np.log(w)), w=w, u=u)

    @staticmethod
    def _whiten(frame, x):
        return x

    @staticmethod
    def _clip_eigen(frame, x, u, log_w, radius, weight=None, keep=True):
        """As ``SPDAffineInvariant._clip_eigen`` in log coordinates: ``v = Logm x − Logm c``,
        ``ρ = ‖v‖_F``, every record rebuilt as ``Expm(Logm c + min(1, r/ρ) v)`` when ``keep``."""
        v = eig_apply(u, log_w) - frame.log
        rho = np.sqrt(np.sum(v * v, axis=(-2, -1)))
        outside = ~(rho <= radius)
        scale = _clip_scale(rho, radius)
        out = None
        if keep:
            out = select(outside[..., None, None], expm_sym(frame.log + scale[:, None, None] * v), x)
        total = None if weight is None else np.tensordot(weight * scale, v, axes=(0, 0))
        return out, outside, total, scale

    # -- capability: Logm is an isometry onto R^dim -------------------------------------------
    flat_chart = True

    def to_chart(self, x: ArrayLike) -> FloatArray:
        return vecd(logm_spd(np.asarray(x, float)))

    def from_chart(self, z: ArrayLike) -> Array:
        return expm_sym(invvecd(z, self.k))
