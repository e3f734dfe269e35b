"""Symmetric positive-definite matrices SPD(k) under two metrics (covariance matrices).

``SPDAffineInvariant``: ``⟨u,v⟩_p = tr(p⁻¹u p⁻¹v)``, curvature in ``[−1/2, 0]``.
``SPDLogEuclidean``: the pull-back of Frobenius through ``Logm``; flat. Tangent vectors of this
metric are kept in log coordinates (symmetric matrices), as docs/theory.md §1 describes.
Points ``(..., k, k)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._threads import blas_limited, blas_limited_unless_tiny
from .._typing import Array, BoolArray, FloatArray
from .base import Manifold, select
from .capabilities import LaplaceSampler
from .euclidean import _check_dim
from .kernels.arrays import clip_scale as _clip_scale
from .kernels.spd_passes import CHOLESKY_MARGIN, AffineInvariantPasses, SPDPasses, _positive_definite, _unit_scaled
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

__all__ = ["SPDAffineInvariant", "SPDLogEuclidean"]

EPS, SMALLEST = float(np.finfo(float).eps), float(np.finfo(float).tiny)
SCALE_RANGE = (2.0**-450, 2.0**450)  # eigenvalues of a release's ball (``ball_problem``)


@dataclass(frozen=True)
class _Frame:
    """A centre as record preparation sees it (``_SPD.prepare_block``): its eigen-pair in the
    frame where records are decomposed, and what the metric needs to clip there."""
    w: np.ndarray
    u: np.ndarray
    s: np.ndarray | None = None
    si: np.ndarray | None = None
    log: np.ndarray | None = None


class _SPD(SPDPasses, Manifold):
    point_shape = property(lambda self: (self.k, self.k))
    homogeneous = True  # GL(k) acts transitively by isometries under both metrics: the Laplace constant is footpoint-free
    dim = property(lambda self: self.k * (self.k + 1) // 2)
    origin = property(lambda self: np.eye(self.k))
    injectivity_radius = np.inf
    points_hint = ("records are full k × k symmetric positive-definite matrices (k² numbers per row in a file); rows of "
                   "k(k+1)/2 numbers are a triangle (the command line's --layout triu or tril)")

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
        @staticmethod
        def _frame_distance(frame: Any, u: Array, log_w: Array) -> FloatArray: ...

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
        # on each matrix scaled by a power of two (exact) to entries at most 1: the norms of 1e200-sized
        # matrices would overflow, and inf ≤ atol·inf would pass any of them as symmetric
        with np.errstate(all="ignore"):
            x = np.ldexp(x, -np.frexp(np.max(np.abs(x), axis=(-2, -1)))[1][..., None, None])
        scale = np.maximum(np.linalg.norm(x, axis=(-2, -1)), np.finfo(float).tiny)
        asym = np.linalg.norm(x - np.swapaxes(x, -1, -2), axis=(-2, -1))
        return asym <= atol * scale, f"not symmetric to relative tolerance {atol:g}"

    def project(self, x: ArrayLike) -> Array:
        return sym(np.asarray(x, dtype=float))

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
        metric (affine-invariant: 2021 Prop. 1; log-Euclidean: Duhamel's formula); ``inf`` past
        float64's range."""
        with np.errstate(over="ignore"):
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

    def _random_sym_unit(self, shape, rng):
        # sym(G) for a standard Gaussian G has vecd(sym G) ~ N(0, I_dim): isotropic under Frobenius
        s = sym(as_generator(rng).standard_normal(shape + (self.k, self.k)))
        return s / np.linalg.norm(s, axis=(-2, -1), keepdims=True)


@dataclass(frozen=True)
class SPDAffineInvariant(AffineInvariantPasses, _SPD):
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
    radius_units = "affine-invariant distance ‖Logm(C^-½ X C^-½)‖_F"
    radial = False  # the Laplace law needs the eigenvalue construction, not a radial sampler

    @property
    def laplace_sampler(self) -> LaplaceSampler:
        """The eigenvalue construction at ``I``, moved to the footpoint (``privacy.spd_sampler``)."""
        return _spd_log_eigen_sampler()

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
    def clip_to_ball(self, x: ArrayLike, center: ArrayLike, radius: float) -> Array:
        """As ``Manifold.clip_to_ball``, from one ``eigh`` per record of ``c^-½ x c^-½``: its
        eigenvalues ``w`` give ``ρ(c, x) = ‖log w‖``; the records outside the ball become
        ``c^½ U diag(w^(r/ρ)) Uᵀ c^½`` (``exp_c`` of the scaled ``log_c``), built for every record so
        that the work does not depend on how many are clipped."""
        x, center = np.asarray(x, float), np.asarray(center, float)
        if center.ndim != 2 or x.ndim < 2:
            return super().clip_to_ball(x, center, radius)
        return self._clip_in_frame(x, center, radius)[0]

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
    def _frame_distance(frame, u, log_w):
        """``ρ(c, x) = ‖log w‖`` from a record's eigenvalues ``w`` in the centre's frame."""
        return np.sqrt(np.sum(log_w**2, axis=-1))

    @classmethod
    def _clip_eigen(cls, frame, x, u, log_w, radius, weight=None, keep=True):
        """``(clipped, outside, Σ weight·log_c x̃ or None, scale)`` from the records' eigen-pairs in
        the centre's frame: ``ρ = ‖log w‖``, and every record rebuilt as
        ``c^½ U diag(w^min(1, r/ρ)) Uᵀ c^½``, inside the ball or not (the work must not depend on
        how many are clipped); ``x`` where the record was inside."""
        rho = cls._frame_distance(frame, u, log_w)
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


@cache
def _spd_log_eigen_sampler() -> LaplaceSampler:
    """``privacy.spd_sampler.SPD_LOG_EIGEN``, imported once (the privacy layer imports this module)."""
    from ..privacy.spd_sampler import SPD_LOG_EIGEN

    return SPD_LOG_EIGEN


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
    radius_units = "log-Euclidean distance ‖Logm X − Logm C‖_F"

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
    def _frame_log(frame, u, log_w):
        """``Logm x − Logm c`` from a record's eigen-pair."""
        return eig_apply(u, log_w) - frame.log

    @classmethod
    def _frame_distance(cls, frame, u, log_w):
        v = cls._frame_log(frame, u, log_w)
        return np.sqrt(np.sum(v * v, axis=(-2, -1)))

    @classmethod
    def _clip_eigen(cls, frame, x, u, log_w, radius, weight=None, keep=True):
        """As ``SPDAffineInvariant._clip_eigen`` in log coordinates: ``v = Logm x − Logm c``,
        ``ρ = ‖v‖_F``, every record rebuilt as ``Expm(Logm c + min(1, r/ρ) v)`` when ``keep``."""
        v = cls._frame_log(frame, u, log_w)
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
