"""The rotation group ``SO(3)`` with its bi-invariant metric (poses, orientations, crystallography).

With ``⟨A, B⟩ = ½ tr(AᵀB)`` on skew-symmetric generators, ``SO(3)`` is the real projective space
``RP³ = S³(2)/±1``: a rotation is a pair ``±q`` of unit quaternions, the sphere of radius 2 makes
the geodesic distance the rotation angle ``θ ∈ [0, π]`` of ``R(p)R(q)ᵀ``, the curvature is ``1/4``
and the injectivity radius ``π``. Points are unit quaternions ``(..., 4)`` in the order
``(w, x, y, z)`` (scalar first, Hamilton product); tangent vectors at ``q`` are the vectors of
``R⁴`` orthogonal to ``q``, with ``⟨u, v⟩_q = 4 u·v``. Formulas: docs/theory.md §1.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._typing import Array, BoolArray, FloatArray
from .base import POINT_ATOL, Manifold, finite_rows, select, sn_over

__all__ = ["SO3", "quaternion_multiply", "quaternion_to_matrix", "matrix_to_quaternion", "nearest_quaternion",
           "canonical_sign"]

LAYOUTS = ("quaternion", "matrix")
_CONJUGATE = np.array([1.0, -1.0, -1.0, -1.0])


def quaternion_multiply(a: ArrayLike, b: ArrayLike) -> FloatArray:
    """The Hamilton product ``a ⊗ b`` of quaternions ``(..., 4)`` in ``(w, x, y, z)`` order
    (``R(a ⊗ b) = R(a) R(b)``)."""
    aw, ax, ay, az = np.moveaxis(np.asarray(a, float), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b, float), -1, 0)
    return np.stack([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def quaternion_to_matrix(q: ArrayLike) -> FloatArray:
    """The rotation matrices ``(..., 3, 3)`` of unit quaternions ``(..., 4)`` (``q`` and ``−q``
    give the same matrix)."""
    w, x, y, z = np.moveaxis(np.asarray(q, float), -1, 0)
    rows = [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]]
    return np.stack([np.stack(row, axis=-1) for row in rows], axis=-2)


def nearest_quaternion(M: ArrayLike) -> FloatArray:
    """A unit quaternion ``(..., 4)`` of the rotation nearest each finite matrix ``M`` ``(..., 3, 3)``
    in Frobenius norm, i.e. maximising ``tr(Mᵀ R(q)) = qᵀ K(M) q``: the top eigenvector of the
    symmetric ``K(M)`` (Davenport's q-method), which is ``4qqᵀ − I`` for a rotation (Bar-Itzhack
    2000). The same ``eigh`` for every matrix, no branch on the trace; the sign is ``eigh``'s."""
    M = np.asarray(M, float)
    r = [[M[..., i, j] for j in range(3)] for i in range(3)]
    K = np.stack([np.stack(row, axis=-1) for row in [
        [r[0][0] + r[1][1] + r[2][2], r[2][1] - r[1][2], r[0][2] - r[2][0], r[1][0] - r[0][1]],
        [r[2][1] - r[1][2], r[0][0] - r[1][1] - r[2][2], r[0][1] + r[1][0], r[0][2] + r[2][0]],
        [r[0][2] - r[2][0], r[0][1] + r[1][0], r[1][1] - r[0][0] - r[2][2], r[1][2] + r[2][1]],
        [r[1][0] - r[0][1], r[0][2] + r[2][0], r[1][2] + r[2][1], r[2][2] - r[0][0] - r[1][1]]]], axis=-2)
    return np.linalg.eigh(K)[1][..., -1]


def matrix_to_quaternion(R: ArrayLike, atol: float = POINT_ATOL) -> FloatArray:
    """Unit quaternions ``(..., 4)`` of rotation matrices ``(..., 3, 3)`` (``nearest_quaternion``).
    A matrix farther than ``atol·√3`` (Frobenius, relative to ``‖I‖_F``) from the rotation found,
    e.g. a reflection, or any matrix with an entry beyond 2 in absolute value (a rotation's are at
    most 1), becomes a quaternion of norm 2, which the point checks refuse; a non-finite one becomes
    NaN. ``eigh`` only ever sees entries of at most 2 (a finite record of 1e308 would make it fail to
    converge, and with it the release, for that record alone)."""
    R = np.asarray(R, float)
    finite = finite_rows(R, 2)
    with np.errstate(invalid="ignore"):
        bounded = finite & (np.max(np.abs(R), axis=(-2, -1)) <= 2.0)
    R = select(bounded[..., None, None], R, np.eye(3))  # eigh must not meet NaN, inf or huge entries
    q = nearest_quaternion(R)
    off = (np.linalg.norm(quaternion_to_matrix(q) - R, axis=(-2, -1)) > atol * np.sqrt(3.0)) | ~bounded
    q = q * np.where(off, 2.0, 1.0)[..., None]
    return select(finite[..., None], q, np.nan)


def canonical_sign(q: ArrayLike) -> FloatArray:
    """``±q`` with its first nonzero coordinate positive: a function of the rotation alone, equal
    bit for bit for ``q`` and ``−q`` (negation is exact; ``0.0`` and ``−0.0`` count as zero)."""
    q = np.asarray(q, float)
    first = np.argmax(q != 0, axis=-1)[..., None]
    negative = np.take_along_axis(q, first, axis=-1) < 0
    return q * (1.0 - 2.0 * negative)


@dataclass(frozen=True)
class SO3(Manifold):
    """Rotations of ``R³`` with the bi-invariant metric ``⟨A, B⟩ = ½ tr(AᵀB)``; ``dim = 3``.

    With ``c = q·p``, ``p* = sign(c) p`` (the representative of ``p`` nearer ``q``) and
    ``α = 2 atan2(‖q − p*‖, ‖q + p*‖) ∈ [0, π/2]`` (accurate near 0 and near π/2, unlike
    ``arccos``): ``ρ(q, p) = 2α``, the rotation angle of ``R(p)R(q)ᵀ``;
    ``log_q(p) = α (p* − cos α q)/sin α``; ``exp_q(v) = cos‖v‖ q + sin‖v‖ v/‖v‖`` (Euclidean
    ``‖v‖``, the Riemannian norm being ``2‖v‖``). Curvature ``1/4``, injectivity radius ``π``: a
    private release needs a radius below ``r* = π/2`` (docs/theory.md §3). Outputs carry the
    canonical sign (``canonical_sign``: first nonzero coordinate positive), a function of the
    rotation alone. The ambient embedding (extrinsic baselines) is ``q ↦ R(q) ∈ R^9``.

    Parameters
    ----------
    layout : {"quaternion", "matrix"}
        How users hand in and read points besides unit quaternions ``(..., 4)``: ``"matrix"``
        also takes rotation matrices ``(..., 3, 3)`` (``as_points``); a release's ``point`` is a
        unit quaternion in either layout, and ``to_user(point)`` gives it as a matrix (the command
        line prints that). The geometry is the same.

    Raises
    ------
    ValueError
        If ``layout`` is not one of ``LAYOUTS``.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp.manifolds import SO3
    >>> rotations = SO3()
    >>> half_turn_z = np.array([0.0, 0.0, 0.0, 1.0])
    >>> float(rotations.dist(rotations.origin, half_turn_z)) == np.pi
    True
    >>> float(rotations.dist(half_turn_z, -half_turn_z))
    0.0
    >>> float(rotations.assumption_radius) == np.pi / 2
    True
    """

    layout: Literal["quaternion", "matrix"] = "quaternion"
    dim = 3  # not a field: SO(3) has one size (the command line gives it no size option)
    point_shape = (4,)
    radius_units = "rotation angle of C⁻¹X (radians, at most π)"
    points_hint = ("quaternions are read scalar first, (w, x, y, z); scipy's Rotation.as_quat() is scalar last unless "
                   "called with scalar_first=True")
    curvature_bounds = (0.25, 0.25)
    homogeneous = True  # isometries act transitively: the Laplace constant is footpoint-free
    injectivity_radius = np.pi
    radial_range = (0.0, np.pi)
    round_sphere = True  # a ball of radius < r* = π/2 is isometric to a ball of S³(2) (docs/theory.md §1, Rotations)

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {self.layout!r}")

    @classmethod
    def from_width(cls, width: int) -> Manifold:
        if width not in (4, 9):
            raise ValueError(f"so3 records hold a unit quaternion (4 numbers w, x, y, z) or a rotation matrix (9 "
                             f"numbers, row by row), got {width}")
        return cls(layout="quaternion" if width == 4 else "matrix")

    @classmethod
    def examples(cls) -> tuple[Manifold, ...]:
        return (cls(), cls(layout="matrix"))

    @property
    def origin(self) -> Array:
        """The identity rotation ``(1, 0, 0, 0)``."""
        return np.array([1.0, 0.0, 0.0, 0.0])

    def _aligned(self, q: Array, p: Array) -> tuple[Array, FloatArray]:
        """``(p*, α)``: the representative of ``p`` nearer ``q`` and half the distance."""
        p = p * np.copysign(1.0, np.sum(q * p, axis=-1, keepdims=True))
        alpha = 2.0 * np.arctan2(np.linalg.norm(q - p, axis=-1), np.linalg.norm(q + p, axis=-1))
        return p, alpha

    def dist(self, x: ArrayLike, y: ArrayLike) -> FloatArray:
        return 2.0 * self._aligned(np.asarray(x, float), np.asarray(y, float))[1]

    def inner(self, x: ArrayLike, u: ArrayLike, v: ArrayLike) -> FloatArray:
        return 4.0 * np.sum(np.asarray(u, float) * np.asarray(v, float), axis=-1)

    def log(self, x: ArrayLike, y: ArrayLike) -> Array:
        x = np.asarray(x, float)
        ys, alpha = self._aligned(x, np.asarray(y, float))
        alpha = alpha[..., None]
        v = (ys - np.cos(alpha) * x) / sn_over(alpha)
        return v - np.sum(x * v, axis=-1, keepdims=True) * x  # rounding drift out of T_x

    def exp(self, x: ArrayLike, v: ArrayLike) -> Array:
        x, v = np.asarray(x, float), np.asarray(v, float)
        t = np.linalg.norm(v, axis=-1, keepdims=True)
        return self.project(np.cos(t) * x + sn_over(t) * v)

    def project(self, x: ArrayLike) -> Array:
        x = np.asarray(x, float)
        return canonical_sign(x / np.linalg.norm(x, axis=-1, keepdims=True))

    def _checks(self, x: Array, atol: float) -> Iterable[tuple[BoolArray, str]]:
        return [(np.abs(np.linalg.norm(x, axis=-1) - 1.0) <= atol,
                 f"not a rotation: a unit quaternion's norm differs from 1 (or a matrix lies off SO(3)) by more "
                 f"than {atol:g}")]

    def to_tangent_coordinates(self, x: ArrayLike, v: ArrayLike) -> FloatArray:
        """``2·vec(q̄ ⊗ v)``: the body-frame rotation vector, ``R(exp_q v) = R(q) Exp([c]×)``."""
        return 2.0 * quaternion_multiply(np.asarray(x, float) * _CONJUGATE, v)[..., 1:]

    def from_tangent_coordinates(self, x: ArrayLike, c: ArrayLike) -> Array:
        c = np.asarray(c, float)
        return 0.5 * quaternion_multiply(x, np.concatenate([np.zeros(c.shape[:-1] + (1,)), c], axis=-1))

    def random_unit_tangent(self, x: ArrayLike, size: int | tuple[int, ...] | None = None, *, rng: RngLike = None) -> Array:
        x = np.asarray(x, float)
        g = as_generator(rng).standard_normal(self._out_shape(x, size) + (3,))
        return self.from_tangent_coordinates(x, g / np.linalg.norm(g, axis=-1, keepdims=True))

    # -- capabilities: the canonical sign, rotation matrices as a user layout, the extrinsic start -
    user_point_shapes = property(lambda self: ((3, 3),) if self.layout == "matrix" else ())

    def canonical(self, center: ArrayLike, points: Array) -> Array:
        """``q`` and ``−q`` are one rotation: release the one whose first nonzero coordinate is
        positive — fixed by the released rotation alone, never by the data or the centre."""
        return canonical_sign(points)

    def as_points(self, X: Any) -> Any:
        """Rotation matrices ``(..., 3, 3)`` → unit quaternions (``matrix_to_quaternion``);
        quaternions pass through."""
        X = np.asarray(X)
        if X.ndim >= 2 and X.shape[-2:] == (3, 3):
            return matrix_to_quaternion(X)
        return X

    def to_user(self, points: Array) -> Array:
        return quaternion_to_matrix(points) if self.layout == "matrix" else points

    # -- capabilities: the embedding of rotation matrices in R^9 (extrinsic baselines) -----------
    ambient_dim = 9
    ambient_noise_factor = float(np.sqrt(3.0 / 18.0))  # tangential share √(3/9), over the stretch √2 (chord 2√2 sin(ρ/2))

    def to_ambient(self, x: ArrayLike) -> FloatArray:
        """``R(q)`` as a row of 9 numbers (Frobenius → Euclidean)."""
        R = quaternion_to_matrix(x)
        return R.reshape(R.shape[:-2] + (9,))

    def from_ambient(self, z: ArrayLike, floor: float | None = None) -> Array:
        """The rotation nearest the ``3×3`` matrix ``z`` (``nearest_quaternion``)."""
        z = np.asarray(z, float)
        return self.project(nearest_quaternion(z.reshape(z.shape[:-1] + (3, 3))))

    def ambient_radius(self, center: ArrayLike, radius: float) -> float:
        """The chord ``‖R(p) − R(q)‖_F = 2√2 sin(ρ/2)``, increasing on ``[0, π]``: ``B_r(center)``
        lies in the Euclidean ball of radius ``2√2 sin(r/2)`` about ``R(center)``."""
        return float(2.0 * np.sqrt(2.0) * np.sin(min(radius, np.pi) / 2.0))

    def mean_start_stats(self, block: ArrayLike, weights: Array) -> Any:
        block = np.asarray(block, float)
        return np.einsum("n,ni,nj->ij", weights, block, block)

    def mean_start(self, stats: Any) -> Array:
        """The top eigenvector of ``Σ w_i q_i q_iᵀ``: the extrinsic (chordal L2) mean of the rotations."""
        return self.project(np.linalg.eigh(stats)[1][:, -1])
