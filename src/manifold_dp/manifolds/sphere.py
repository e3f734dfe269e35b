"""The sphere ``S^d`` of radius ``R`` in ``R^(d+1)`` (directions, compositions)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._typing import Array, BoolArray, FloatArray
from .base import Manifold, sn_over
from .euclidean import _check_dim
from .kernels.sphere_passes import ROW_BLOCK, SpherePasses

__all__ = ["Sphere"]

RADII = (2.0**-500, 2.0**500)  # supported radii: R², R⁻² and the squares of prepared coordinates stay finite


@dataclass(frozen=True)
class Sphere(SpherePasses, Manifold):
    """``{x ∈ R^(d+1): ‖x‖ = R}`` with the induced metric; curvature ``1/R²``.

    ``exp_x(v) = cos(‖v‖/R) x + R sin(‖v‖/R) v/‖v‖``;
    ``log_x(y) = R θ (y − cos θ x)/‖y − cos θ x‖``, ``θ = ∠(x, y)`` (docs/theory.md §1; the
    2021 paper misplaces ``κ^(−1/2)`` in ``exp``). At the antipode, where ``log`` is not unique,
    a fixed data-independent direction is returned. Distances are ``R·θ`` (radians when
    ``R = 1``); a private release needs a radius below ``r* = πR/4``.

    Parameters
    ----------
    dim : int
        The dimension ``d ≥ 1``; points have ``d + 1`` coordinates.
    radius : float
        The sphere's radius ``R > 0`` (default 1).

    Raises
    ------
    ValueError
        If ``dim`` is not an integer ``≥ 1`` or ``radius`` is not in ``[2^-500, 2^500]``.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp import Sphere
    >>> S2 = Sphere(2)
    >>> S2.origin
    array([0., 0., 1.])
    >>> round(float(S2.dist(S2.origin, np.array([0.0, 1.0, 0.0]))), 6)
    1.570796
    >>> float(S2.assumption_radius) == np.pi / 4
    True
    """

    dim: int
    radius: float = 1.0

    @classmethod
    def from_width(cls, width: int, radius: float = 1.0) -> Sphere:
        if width < 2:
            raise ValueError(f"sphere records need at least 2 coordinates, got {width}")
        return cls(width - 1, radius=radius)

    @classmethod
    def examples(cls) -> tuple[Manifold, ...]:
        return (cls(3), cls(2, radius=2.0))

    def __post_init__(self) -> None:
        _check_dim(self.dim, "dim", 1)
        if not RADII[0] <= self.radius <= RADII[1]:  # False for NaN
            raise ValueError(f"radius must be in [2^-500, 2^500] (R² and 1/R² must stay finite), got {self.radius!r}")

    point_shape = property(lambda self: (self.dim + 1,))
    radius_units = "geodesic distance: radians on the unit sphere (times --sphere-radius)"
    curvature_bounds = property(lambda self: (self.radius**-2, self.radius**-2))
    homogeneous = True  # isometries act transitively: the Laplace constant is footpoint-free
    round_sphere = True  # the proven spread constant applies (privacy.sensitivity.spread_bound)
    injectivity_radius = property(lambda self: np.pi * self.radius)
    radial_range = property(lambda self: (0.0, np.pi * self.radius))

    @property
    def origin(self) -> Array:
        """The north pole ``R·e_(d+1)``."""
        e = np.zeros(self.dim + 1)
        e[-1] = self.radius
        return e

    def _polar(self, x, y):
        """``(θ, w, s)``: angle, the part of ``y/R`` orthogonal to ``x/R`` and its norm ``sin θ``.

        ``θ = atan2(‖w‖, ⟨x,y⟩/R²)`` is accurate near 0 and near π, unlike ``arccos``."""
        u, v = (x, y) if self.radius == 1.0 else (x / self.radius, y / self.radius)
        # one footpoint against many records (the Fréchet-mean passes): a BLAS matrix-vector product
        c = (v @ u if u.ndim == 1 else np.einsum("...i,...i->...", u, v))[..., None]
        w = v - c * u
        s = np.sqrt(np.einsum("...i,...i->...", w, w))[..., None]
        return np.arctan2(s, c), w, s

    def dist(self, x: ArrayLike, y: ArrayLike) -> FloatArray:
        x, y = np.asarray(x, float), np.asarray(y, float)
        if x.ndim == 1 and y.ndim == 2 and len(y) > ROW_BLOCK:  # one point against many: bounded temporaries
            return np.concatenate([self.dist(x, y[i:i + ROW_BLOCK]) for i in range(0, len(y), ROW_BLOCK)])
        theta, _, _ = self._polar(x, y)
        return self.radius * theta[..., 0]

    def inner(self, x: ArrayLike, u: ArrayLike, v: ArrayLike) -> FloatArray:
        return np.sum(np.asarray(u) * np.asarray(v), axis=-1)

    def _householder(self, x, v):
        """``H v`` for the reflection ``H`` (symmetric, orthogonal) taking ``x/R`` to ``∓e0``:
        ``H e1 … H ed`` are an orthonormal basis of ``T_x``."""
        u = np.asarray(x, float) / self.radius
        u = u + np.where(u[..., :1] >= 0, 1.0, -1.0) * np.eye(self.dim + 1)[0]
        return v - 2.0 * u * (np.sum(u * v, axis=-1, keepdims=True) / np.sum(u * u, axis=-1, keepdims=True))

    def to_tangent_coordinates(self, x: ArrayLike, v: ArrayLike) -> FloatArray:
        return self._householder(x, np.asarray(v, float))[..., 1:]

    def from_tangent_coordinates(self, x: ArrayLike, c: ArrayLike) -> Array:
        c = np.asarray(c, float)
        return self._householder(x, np.concatenate([np.zeros(c.shape[:-1] + (1,)), c], axis=-1))

    def exp(self, x: ArrayLike, v: ArrayLike) -> Array:
        x, v = np.asarray(x, float), np.asarray(v, float)
        if x.ndim == 1 and v.ndim == 1:  # one point (single draws): Python floats, the same formulas
            t = math.sqrt(float(v @ v)) / self.radius
            out = math.cos(t) * x + (math.sin(t) / t if t >= 1e-4 else 1.0 - t * t / 6.0) * v
            return out * (self.radius / math.sqrt(float(out @ out)))
        t = np.linalg.norm(v, axis=-1, keepdims=True) / self.radius
        out = np.cos(t) * x + sn_over(t) * v
        return self.radius * out / np.linalg.norm(out, axis=-1, keepdims=True)

    def log(self, x: ArrayLike, y: ArrayLike) -> Array:
        x, y = np.asarray(x, float), np.asarray(y, float)
        theta, w, s = self._polar(x, y)
        # log = R θ w/‖w‖ = R (θ/sin θ) w, with θ/sin θ → 1 at θ = 0
        ratio = np.divide(theta, s, out=np.ones_like(theta), where=s > 1e-300)
        v = ratio * w if self.radius == 1.0 else self.radius * ratio * w
        antipodal = theta[..., 0] > np.pi - 1e-7
        if np.any(antipodal):
            v = np.where(antipodal[..., None], self._fixed_direction(x) * (np.pi * self.radius), v)
        return v

    # -- Newton steps of the certified mean (docs/theory.md §2, "Newton steps with a public count") --
    def enclosing_lift(self, x: ArrayLike, X: ArrayLike) -> tuple[FloatArray, float, bool, Callable[[FloatArray], Array]] | None:
        """The records themselves, scaled to unit vectors: ``ρ = R·∠``, exactly."""
        R = self.radius
        Y = np.asarray(X, float) if R == 1.0 else np.asarray(X, float) / R
        return Y, R, True, (lambda c: R * np.asarray(c, float) / np.linalg.norm(c))

    def float_error(self, center: Array, radius: float) -> float:
        """Distances and clipping err by a few ulps of the coordinates, whose size is ``R``."""
        return 16 * np.finfo(float).eps * (self.radius + radius)

    def _fixed_direction(self, x):
        # the coordinate axis least aligned with x, made tangent: depends on x only
        j = np.argmin(np.abs(x), axis=-1)
        e = np.zeros_like(x)
        np.put_along_axis(e, j[..., None], 1.0, axis=-1)
        t = e - np.sum(e * x, axis=-1, keepdims=True) * x / self.radius**2
        return t / np.linalg.norm(t, axis=-1, keepdims=True)

    def _checks(self, x: Array, atol: float) -> Iterable[tuple[BoolArray, str]]:
        nrm = np.linalg.norm(x, axis=-1)
        return [(np.abs(nrm - self.radius) <= atol * self.radius,
                 f"norm differs from the radius {self.radius} by more than {atol:g} (relative)")]

    def project(self, x: ArrayLike) -> Array:
        x = np.asarray(x, float)
        return self.radius * x / np.linalg.norm(x, axis=-1, keepdims=True)

    def random_unit_tangent(self, x: ArrayLike, size: int | tuple[int, ...] | None = None, *, rng: RngLike = None) -> Array:
        x = np.asarray(x, float)
        g = as_generator(rng).standard_normal(self._out_shape(x, size) + (self.dim + 1,))
        g = g - np.sum(g * x, axis=-1, keepdims=True) * x / self.radius**2
        return g / np.linalg.norm(g, axis=-1, keepdims=True)

    def log_volume_ratio(self, rho: ArrayLike) -> FloatArray:
        """``log(J(ρ)/ρ^(d−1)) = (d−1) log(sin(ρ/R)/(ρ/R))`` on ``[0, πR]`` (≤ 0)."""
        s = sn_over(np.asarray(rho, float) / self.radius)
        with np.errstate(divide="ignore"):
            return (self.dim - 1) * np.log(np.maximum(s, 0.0))

    # -- capabilities: the ambient embedding in R^(d+1) --------------------------------------
    ambient_dim = property(lambda self: self.dim + 1)

    def to_ambient(self, x: ArrayLike) -> FloatArray:
        return np.asarray(x, float)

    def from_ambient(self, z: ArrayLike, floor: float | None = None) -> Array:
        """Normalise back onto the sphere; ``0`` (measure zero) goes to the origin."""
        z = np.asarray(z, float)
        nrm = np.linalg.norm(z, axis=-1, keepdims=True)
        return np.where(nrm > 0, self.radius * z / np.where(nrm > 0, nrm, 1.0), self.origin)

    def ambient_radius(self, center: ArrayLike, radius: float) -> float:
        """The chord ``2R sin(r/2R)``: ``B_r(center)`` lies in the Euclidean ball of that radius."""
        return float(2.0 * self.radius * np.sin(radius / (2.0 * self.radius)))

    def uniform(self, size: int | tuple[int, ...] | None = None, *, rng: RngLike = None) -> FloatArray:
        """Points uniform on the whole sphere (for tests)."""
        g = as_generator(rng).standard_normal(cast("tuple[int, ...]", (size,) if np.isscalar(size) else tuple(size or ()))  # type: ignore[arg-type]
                                              + (self.dim + 1,))
        return self.project(g)
