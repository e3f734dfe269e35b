"""Kendall's shape space of planar configurations with ``k`` landmarks, ``CP^(k−2)``.

A configuration ``z ∈ C^k`` (or real ``(k, 2)``) is centred and scaled to a pre-shape ``x``
(``Σ x_j = 0``, ``‖x‖ = 1``); shapes are pre-shapes modulo rotation ``x ~ e^(iφ) x``. Points are
complex arrays ``(..., k)``; tangent vectors are horizontal: ``Σ v_j = 0`` and ``⟨x, v⟩ = 0``
(Hermitian). Fubini–Study metric: curvature in ``[1, 4]``, injectivity radius ``π/2``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import helmert

from .._random import RngLike, as_generator
from .._typing import Array, BoolArray, FloatArray
from .base import Manifold, sn_over
from .euclidean import _check_dim

__all__ = ["hermitian", "hermitian_to_real", "real_to_hermitian", "KendallShape2D"]


def hermitian(x: ArrayLike, y: ArrayLike) -> Array:
    """``⟨x, y⟩ = Σ conj(x_j) y_j`` over the last axis."""
    return np.sum(np.conj(x) * y, axis=-1)


def hermitian_to_real(m: Array) -> FloatArray:
    """Isometry of Hermitian ``(..., p, p)`` matrices (Frobenius norm) onto ``R^(p²)``: the
    diagonal, then ``√2·Re`` and ``√2·Im`` of the upper triangle."""
    p = m.shape[-1]
    iu = np.triu_indices(p, 1)
    up = m[..., iu[0], iu[1]]
    return np.concatenate([np.real(np.diagonal(m, axis1=-2, axis2=-1)), math.sqrt(2.0) * up.real,
                           math.sqrt(2.0) * up.imag], axis=-1)


def real_to_hermitian(v: ArrayLike, p: int) -> Array:
    """The inverse of ``hermitian_to_real``: ``(..., p²)`` → Hermitian ``(..., p, p)``."""
    v = np.asarray(v, float)
    iu = np.triu_indices(p, 1)
    m = np.zeros(v.shape[:-1] + (p, p), complex)
    m[..., np.arange(p), np.arange(p)] = v[..., :p]
    q = len(iu[0])
    up = (v[..., p:p + q] + 1j * v[..., p + q:]) / math.sqrt(2.0)
    m[..., iu[0], iu[1]] = up
    m[..., iu[1], iu[0]] = np.conj(up)
    return m


@lru_cache(maxsize=16)
def _helmert(k: int) -> FloatArray:
    """Helmert's ``(k−1)×k`` rows: orthonormal, orthogonal to ``(1, …, 1)`` (read-only)."""
    h = helmert(k)
    h.flags.writeable = False
    return h


@dataclass(frozen=True)
class KendallShape2D(Manifold):
    """Planar shapes of ``k_landmarks ≥ 3`` points; ``dim = 2k − 4``.

    Align ``y* = y e^(−i arg⟨x,y⟩)``; ``θ = arccos|⟨x,y⟩|``;
    ``log_x(y) = θ (y* − cos θ x)/‖y* − cos θ x‖``; ``exp_x(v) = cos‖v‖ x + sin‖v‖ v/‖v‖``.
    Outputs are pre-shapes; two pre-shapes are the same shape when ``dist`` is 0. Curvature in
    ``[1, 4]``: a private release needs a radius below ``r* = π/8`` (docs/theory.md §3).

    Parameters
    ----------
    k_landmarks : int
        The number of landmarks ``k ≥ 3``. Points are complex pre-shapes ``(..., k)``; real
        landmarks ``(..., k, 2)`` are accepted by the releases and converted by ``preshape``.

    Raises
    ------
    ValueError
        If ``k_landmarks`` is not an integer ``≥ 3``.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp import KendallShape2D
    >>> shapes = KendallShape2D(3)
    >>> triangle = shapes.preshape(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    >>> rotated = triangle * np.exp(0.7j)  # the same shape, turned
    >>> float(shapes.dist(triangle, rotated)) < 1e-7
    True
    """

    k_landmarks: int
    dtype = np.complex128
    curvature_bounds = (1.0, 4.0)
    homogeneous = True  # isometries act transitively: the Laplace constant is footpoint-free
    injectivity_radius = np.pi / 2
    radial_range = (0.0, np.pi / 2)

    def __post_init__(self) -> None:
        _check_dim(self.k_landmarks, "k_landmarks", 3)

    @classmethod
    def from_width(cls, width: int) -> Manifold:
        if width % 2 or width < 6:
            raise ValueError(f"kendall2d records must hold 2k >= 6 numbers (x1, y1, x2, y2, ...), got {width}")
        return cls(width // 2)

    @classmethod
    def examples(cls) -> tuple[Manifold, ...]:
        return (cls(5),)

    point_shape = property(lambda self: (self.k_landmarks,))
    radius_units = "Procrustes distance (radians)"
    dim = property(lambda self: 2 * self.k_landmarks - 4)

    @property
    def origin(self) -> Array:
        """The regular ``k``-gon."""
        k = self.k_landmarks
        return np.exp(2j * np.pi * np.arange(k) / k) / np.sqrt(k)

    @staticmethod
    def to_complex(z: ArrayLike) -> Array:
        """Real landmarks ``(..., k, 2)`` → complex ``(..., k)``; complex input passes through."""
        z = np.asarray(z)
        if np.iscomplexobj(z):
            return z.astype(np.complex128)
        if z.ndim < 2 or z.shape[-1] != 2:
            raise ValueError(f"real landmark arrays must have shape (..., k, 2), got {z.shape}")
        return z[..., 0].astype(float) + 1j * z[..., 1].astype(float)

    def preshape(self, z: ArrayLike) -> Array:
        """Centre and scale configurations to pre-shapes. Degenerate ones become NaN. Each
        configuration is first scaled by a power of two (exact) to coordinates below 1, so that
        configurations near float64's end (1e200, 1e-160) keep their shape."""
        z = self.to_complex(z)
        with np.errstate(all="ignore"):
            top = np.max(np.maximum(np.abs(z.real), np.abs(z.imag)), axis=-1, keepdims=True)
            exponent = np.frexp(np.where(np.isfinite(top) & (top > 0), top, 1.0))[1]
            w: Array = np.ldexp(z.real, -exponent) + 1j * np.ldexp(z.imag, -exponent)
            w = w - w.mean(axis=-1, keepdims=True)
            nrm = np.linalg.norm(w, axis=-1, keepdims=True)
            return np.where(nrm > 0, w / np.where(nrm > 0, nrm, 1.0), np.nan)

    def to_landmarks(self, x: ArrayLike) -> FloatArray:
        """Complex ``(..., k)`` → real ``(..., k, 2)``."""
        x = np.asarray(x)
        return np.stack([x.real, x.imag], axis=-1)

    def align(self, x: ArrayLike, y: Array) -> Array:
        """Rotate ``y`` to the optimal position against ``x``: ``⟨x, y*⟩`` real and ≥ 0."""
        c = hermitian(x, y)[..., None]
        return y * np.exp(-1j * np.angle(c))

    def inner(self, x: ArrayLike, u: ArrayLike, v: ArrayLike) -> FloatArray:
        return np.real(hermitian(u, v))

    def dist(self, x: ArrayLike, y: ArrayLike) -> FloatArray:
        x, y = np.asarray(x, complex), np.asarray(y, complex)
        ys = self.align(x, y)
        # 2·atan2(‖x − y*‖, ‖x + y*‖) = arccos⟨x, y*⟩, accurate near 0 and π/2
        return 2.0 * np.arctan2(np.linalg.norm(x - ys, axis=-1), np.linalg.norm(x + ys, axis=-1))

    def log(self, x: ArrayLike, y: ArrayLike) -> Array:
        x, y = np.asarray(x, complex), np.asarray(y, complex)
        ys = self.align(x, y)
        theta = self.dist(x, y)[..., None]
        v = (ys - np.cos(theta) * x) / sn_over(theta)
        # remove rounding drift out of the horizontal space
        v = v - v.mean(axis=-1, keepdims=True)
        return v - hermitian(x, v)[..., None] * x

    def enclosing_lift(self, x: ArrayLike, X: ArrayLike) -> tuple[FloatArray, float, bool, Callable[[FloatArray], Array]] | None:
        """The records rotated against ``x`` (``align``), as real unit vectors of ``R^(2k)``:
        ``ρ([c], [y]) = arccos|⟨c, y⟩| ≤ arccos Re⟨c, y*⟩``, the angle between the lifts, for
        every centred unit ``c`` (a bound, not an equality: the rotation is fixed by ``x``)."""
        Y = np.ascontiguousarray(self.align(np.asarray(x, complex), np.asarray(X, complex))).view(np.float64)
        to_point = lambda c: self.project(np.ascontiguousarray(np.asarray(c, float)).view(np.complex128))
        return Y, 1.0, False, to_point

    def exp(self, x: ArrayLike, v: ArrayLike) -> Array:
        x, v = np.asarray(x, complex), np.asarray(v, complex)
        t = np.linalg.norm(v, axis=-1, keepdims=True)
        return self.project(np.cos(t) * x + sn_over(t) * v)

    def _checks(self, x: Array, atol: float) -> Iterable[tuple[BoolArray, str]]:
        return [
            (np.abs(np.sum(x, axis=-1)) <= atol, f"landmarks not centred to tolerance {atol:g}"),
            (np.abs(np.linalg.norm(x, axis=-1) - 1.0) <= atol, f"norm differs from 1 by more than {atol:g}"),
        ]

    def project(self, x: ArrayLike) -> Array:
        return self.preshape(np.asarray(x, complex))

    def _horizontal_basis(self, x):
        """``(..., k, k − 2)``: a unitary basis of the horizontal space at ``x`` (centred vectors
        Hermitian-orthogonal to ``x``), from a QR of ``[1/√k, x, G]`` with a fixed generic ``G``;
        ``{b_j, i·b_j}`` is then a real orthonormal basis of ``T_x`` for ``inner``."""
        x = np.asarray(x, complex)
        k = self.k_landmarks
        g = np.random.default_rng(20231122).standard_normal((k, 2 * (k - 2))).view(complex)
        a = np.concatenate([np.broadcast_to(np.full((k, 1), k**-0.5, complex), x.shape[:-1] + (k, 1)), x[..., None],
                            np.broadcast_to(g, x.shape[:-1] + g.shape)], axis=-1)
        return np.linalg.qr(a)[0][..., 2:]

    def to_tangent_coordinates(self, x: ArrayLike, v: ArrayLike) -> FloatArray:
        c = np.einsum("...kj,...k->...j", np.conj(self._horizontal_basis(x)), np.asarray(v, complex))
        return np.concatenate([c.real, c.imag], axis=-1)

    def from_tangent_coordinates(self, x: ArrayLike, c: ArrayLike) -> Array:
        c = np.asarray(c, float)
        m = self.k_landmarks - 2
        return np.einsum("...kj,...j->...k", self._horizontal_basis(x), c[..., :m] + 1j * c[..., m:])

    def random_unit_tangent(self, x: ArrayLike, size: int | tuple[int, ...] | None = None, *, rng: RngLike = None) -> Array:
        x = np.asarray(x, complex)
        rng = as_generator(rng)
        shape = self._out_shape(x, size) + (self.k_landmarks,)
        g = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        g = g - g.mean(axis=-1, keepdims=True)
        g = g - hermitian(x, g)[..., None] * x
        return g / np.linalg.norm(g, axis=-1, keepdims=True)

    # -- capabilities: a canonical representative, users' real landmarks, Procrustes start ------
    user_point_shapes = property(lambda self: ((self.k_landmarks, 2),))

    def canonical(self, center: ArrayLike, points: Array) -> Array:
        """A shape is a pre-shape up to rotation: release the one rotated so that
        ``⟨center, y⟩`` is real and ≥ 0 — fixed by the public centre, never by the data."""
        return self.align(center, points)

    def as_points(self, X: Any) -> Any:
        """Real landmarks ``(..., k, 2)`` → pre-shapes; complex pre-shapes pass through."""
        X = np.asarray(X)
        if not np.iscomplexobj(X) and X.ndim >= 2 and X.shape[-2:] == (self.k_landmarks, 2):
            return self.preshape(X)
        return X

    def to_user(self, points: Array) -> Array:
        return self.to_landmarks(points)

    def mean_start_stats(self, block: ArrayLike, weights: Array) -> Any:
        block = np.asarray(block)
        return np.einsum("n,ni,nj->ij", weights, block, np.conj(block))

    def mean_start(self, stats: Any) -> Array:
        _, vecs = np.linalg.eigh(stats)  # full Procrustes mean (Kent 1994)
        return self.project(vecs[:, -1])

    # -- capabilities: the Veronese–Whitney embedding (extrinsic baselines, ``center="auto"``) --
    ambient_dim = property(lambda self: (self.k_landmarks - 1) ** 2)
    # tangential share √(d/D) of the noise, over the stretch √2 of small distances (chord √2 sin ρ)
    ambient_noise_factor = property(lambda self: math.sqrt((2 * self.k_landmarks - 4) / (2.0 * (self.k_landmarks - 1) ** 2)))

    def to_ambient(self, x: ArrayLike) -> FloatArray:
        """``w w*`` with ``w = H x`` (``H``: Helmert's rows, orthonormal and orthogonal to
        ``(1, …, 1)``, so ``‖w‖ = ‖x‖ = 1``) as ``(k−1)²`` real numbers (``hermitian_to_real``,
        an isometry): a function of the shape, the same for every rotation ``e^(iφ) x``."""
        w = np.asarray(x, complex) @ _helmert(self.k_landmarks).T
        return hermitian_to_real(w[..., :, None] * np.conj(w[..., None, :]))

    def from_ambient(self, z: ArrayLike, floor: float | None = None) -> Array:
        """The shape whose embedding is nearest the Hermitian matrix of ``z`` (Frobenius): its
        top eigenvector ``u``, as the pre-shape ``Hᵀu`` (Kent 1994's full Procrustes mean when ``z``
        is the mean of embedded shapes)."""
        vectors = np.linalg.eigh(real_to_hermitian(z, self.k_landmarks - 1))[1]
        return self.project(vectors[..., -1] @ _helmert(self.k_landmarks))

    def ambient_radius(self, center: ArrayLike, radius: float) -> float:
        """The chord ``‖ww* − vv*‖_F = √2 sin ρ`` (``|⟨w, v⟩| = cos ρ``), increasing on
        ``[0, π/2]``: ``B_r(center)`` lies in the Euclidean ball of that radius."""
        return float(math.sqrt(2.0) * math.sin(min(float(radius), math.pi / 2.0)))

    def log_volume_ratio(self, rho: ArrayLike) -> FloatArray:
        """``log(J(ρ)/ρ^(d−1))`` with ``J = sin^(2m−1)ρ cos ρ``, ``m = k−2`` (≤ 0 on ``[0, π/2]``)."""
        rho = np.asarray(rho, float)
        m = self.k_landmarks - 2
        with np.errstate(divide="ignore"):
            return (2 * m - 1) * np.log(np.maximum(sn_over(rho), 0.0)) + np.log(np.maximum(np.cos(rho), 0.0))

    def log_volume(self, rho: ArrayLike) -> FloatArray:
        """``log J(ρ) = (2m−1) log sin ρ + log cos ρ``: concave on ``(0, π/2)``."""
        rho = np.asarray(rho, float)
        with np.errstate(divide="ignore"):
            return (2 * self.k_landmarks - 5) * np.log(np.maximum(np.sin(rho), 0.0)) + np.log(np.maximum(np.cos(rho), 0.0))

    def log_volume_slope(self, rho: ArrayLike) -> FloatArray:
        """``d/dρ log J(ρ) = (2m−1) cot ρ − tan ρ``."""
        rho = np.asarray(rho, float)
        return (2 * self.k_landmarks - 5) / np.tan(rho) - np.tan(rho)
