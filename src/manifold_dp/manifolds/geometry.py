"""The geometry of a manifold: what a geometer recognises, and what every space supplies first.

``Geometry`` is the protocol (about fifteen members, base point first, broadcasting over leading
batch axes): ``dim``, ``point_shape``, ``origin``, ``curvature_bounds``, ``injectivity_radius``,
``exp(x, v)``, ``log(x, y)``, ``dist(x, y)``, ``inner(x, u, v)``, ``norm(x, v)``, ``belongs(x)``,
``check_point(x)``, ``project(x)``, ``random_unit_tangent(x)``,
``to_tangent_coordinates(x, v)``/``from_tangent_coordinates(x, c)``. ``ManifoldGeometry`` derives
the rest from the few a space must write (``exp``, ``log``, ``inner``, ``_checks``, ``project``,
``random_unit_tangent`` and the attributes): norms and distances, the membership checks, the
clipping map onto a ball, and — where it exists — the polar volume density ``J`` of
``log_volume`` (``(d−1) log sn_κ(ρ)`` on a space of constant curvature κ).

The other layers of a manifold build on this one and sit apart: what the privacy layer may assume
(``capabilities``), how far float64 carries the geometry (``float_model``), and the fast passes
over records (``kernels``). ``base.Manifold`` joins them. Formulas: docs/theory.md §1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._typing import Array, BoolArray, FloatArray
from .kernels.arrays import clip_scale, finite_rows, select

__all__ = ["Geometry", "ManifoldGeometry", "POINT_ATOL", "sn_over", "space_form_log_volume"]

POINT_ATOL = 1e-6  # how far (relative) a record may sit off the manifold and still be projected


@runtime_checkable
class Geometry(Protocol):
    """A Riemannian manifold as the rest of the library sees it. Points have shape
    ``(..., *point_shape)``, tangent vectors the shape of their base point; every method
    broadcasts over the leading batch axes, base point first."""

    @property
    def dim(self) -> int:
        """The manifold's dimension ``d`` (not the ambient one)."""
    @property
    def point_shape(self) -> tuple[int, ...]:
        """The array shape of one point."""
    @property
    def origin(self) -> Array:
        """A fixed reference point (north pole, ``e0``, the identity, the regular ``k``-gon, ``0``)."""
    @property
    def curvature_bounds(self) -> tuple[float, float]:
        """``(κmin, κmax)``, bounds on the sectional curvature."""
    @property
    def injectivity_radius(self) -> float:
        """Below this distance ``log`` is the inverse of ``exp``."""

    def exp(self, x: ArrayLike, v: ArrayLike) -> Array:
        """The point reached at time 1 along the geodesic from ``x`` with initial velocity ``v``."""
    def log(self, x: ArrayLike, y: ArrayLike) -> Array:
        """The tangent vector at ``x`` pointing to ``y`` with length ``ρ(x, y)`` (inverse of ``exp``
        within the injectivity radius)."""
    def dist(self, x: ArrayLike, y: ArrayLike) -> FloatArray:
        """Geodesic distance ``ρ(x, y)``; shape ``(...)``."""
    def inner(self, x: ArrayLike, u: ArrayLike, v: ArrayLike) -> FloatArray:
        """The Riemannian inner product of tangent vectors ``u``, ``v`` at ``x``; shape ``(...)``."""
    def norm(self, x: ArrayLike, v: ArrayLike) -> FloatArray:
        """Riemannian norm ``‖v‖_x``; shape ``(...)``."""
    def belongs(self, x: ArrayLike, atol: float = POINT_ATOL) -> BoolArray:
        """Which entries of the batch are points of the manifold."""
    def check_point(self, x: ArrayLike, atol: float = POINT_ATOL) -> tuple[bool, str]:
        """``(ok, reason)``: whether every entry is a point, and why not (no data values quoted)."""
    def project(self, x: ArrayLike) -> Array:
        """Snap an array that passed the point checks exactly onto the manifold."""
    def random_unit_tangent(self, x: ArrayLike, size: int | tuple[int, ...] | None = None, *,
                            rng: RngLike = None) -> Array:
        """Unit tangent vectors at ``x``, uniform on the unit sphere of ``T_x M``."""
    def to_tangent_coordinates(self, x: ArrayLike, v: ArrayLike) -> FloatArray:
        """Coordinates ``(..., dim)`` of ``v`` in an orthonormal basis of ``T_x M``."""
    def from_tangent_coordinates(self, x: ArrayLike, c: ArrayLike) -> Array:
        """The tangent vector at ``x`` with orthonormal coordinates ``c``."""


class ManifoldGeometry:
    """The geometry layer of ``base.Manifold``: the members of ``Geometry`` a space derives from its
    ``exp``, ``log``, ``inner`` and point checks, the clipping map onto a ball, and the polar volume
    density (optional: a space whose ``J`` is not radial declares ``radial = False`` in its
    capabilities instead)."""

    dtype: type[np.float64] | type[np.complex128] = np.float64

    if TYPE_CHECKING:  # what every space defines (as a field, a property or a method)
        __dataclass_fields__: ClassVar[dict[str, Any]]  # every space is a frozen dataclass
        @property
        def dim(self) -> int: ...
        @property
        def point_shape(self) -> tuple[int, ...]: ...
        @property
        def curvature_bounds(self) -> tuple[float, float]: ...
        @property
        def injectivity_radius(self) -> float: ...
        @property
        def origin(self) -> Array: ...
        def exp(self, x: ArrayLike, v: ArrayLike) -> Array: ...
        def log(self, x: ArrayLike, y: ArrayLike) -> Array: ...
        def inner(self, x: ArrayLike, u: ArrayLike, v: ArrayLike) -> FloatArray: ...
        def _checks(self, x: Array, atol: float) -> Iterable[tuple[BoolArray, str]]: ...
        def project(self, x: ArrayLike) -> Array: ...
        def random_unit_tangent(self, x: ArrayLike, size: int | tuple[int, ...] | None = None, *,
                                rng: RngLike = None) -> Array: ...

    # -- derived geometry ------------------------------------------------------------------
    def norm(self, x: ArrayLike, v: ArrayLike) -> FloatArray:
        """Riemannian norm ``‖v‖_x`` of the tangent vector ``v`` at ``x``; shape ``(...)``."""
        return np.sqrt(np.maximum(self.inner(x, v, v), 0.0))

    def to_tangent_coordinates(self, x: ArrayLike, v: ArrayLike) -> FloatArray:
        """Coordinates ``(..., dim)`` of the tangent vector ``v`` at ``x`` in an orthonormal basis of
        ``T_x M`` (a fixed function of ``x``): ``inner(x, u, v)`` is the dot product of the
        coordinates. Inverse: ``from_tangent_coordinates``."""
        raise NotImplementedError(f"{type(self).__name__} must define to_tangent_coordinates")

    def from_tangent_coordinates(self, x: ArrayLike, c: ArrayLike) -> Array:
        """The tangent vector at ``x`` with orthonormal coordinates ``c`` (``(..., dim)``)."""
        raise NotImplementedError(f"{type(self).__name__} must define from_tangent_coordinates")

    def dist(self, x: ArrayLike, y: ArrayLike) -> FloatArray:
        """Geodesic distance ``ρ(x, y)``.

        Parameters
        ----------
        x, y : array_like
            Points, shape ``(..., *point_shape)``; the batch axes broadcast.

        Returns
        -------
        numpy.ndarray
            Distances, shape ``(...)``: radians on the unit sphere, ``‖Logm(x^-½ y x^-½)‖_F``
            on affine-invariant SPD, and so on (docs/theory.md §1).
        """
        return self.norm(x, self.log(x, y))

    # -- the polar volume density (where it exists) ------------------------------------------
    def log_volume(self, rho: ArrayLike) -> FloatArray:
        """``log J(ρ)`` of the polar volume density: ``(d−1) log sn_κ(ρ)`` on a space of constant
        curvature κ (a space that is not must override it, or declare ``radial = False``)."""
        with np.errstate(divide="ignore"):
            return space_form_log_volume(self.dim, self._constant_curvature())[0](np.asarray(rho, float))

    def log_volume_slope(self, rho: ArrayLike) -> FloatArray:
        """``d/dρ log J(ρ)``."""
        with np.errstate(divide="ignore"):
            return space_form_log_volume(self.dim, self._constant_curvature())[1](np.asarray(rho, float))

    def _constant_curvature(self) -> float:
        lo, hi = self.curvature_bounds
        if lo != hi:
            raise NotImplementedError(f"{self!r} has non-constant curvature: it must define its own log_volume")
        return hi

    # -- points ----------------------------------------------------------------------------
    def _shape_ok(self, x: Array) -> bool:
        nd = len(self.point_shape)
        return x.ndim >= nd and tuple(x.shape[x.ndim - nd:]) == tuple(self.point_shape)

    def batch_shape(self, x: Array) -> tuple[int, ...]:
        return x.shape[: x.ndim - len(self.point_shape)]

    def belongs(self, x: ArrayLike, atol: float = POINT_ATOL) -> BoolArray:
        """Boolean mask over the batch axes: which entries are finite points of the manifold
        (within the relative tolerance ``atol``). Raises ``ValueError`` on a wrong point shape."""
        x = np.asarray(x)
        if not self._shape_ok(x):
            raise ValueError(f"points of {self!r} have shape {self.point_shape}, got an array of shape {x.shape}")
        axes = tuple(range(x.ndim - len(self.point_shape), x.ndim))
        ok = finite_rows(x, len(self.point_shape))
        safe = select(np.expand_dims(ok, axes), x, self._any_point())
        for mask, _ in self._checks(safe, atol):
            ok = ok & mask
        return ok

    def check_point(self, x: ArrayLike, atol: float = POINT_ATOL) -> tuple[bool, str]:
        """Whether every entry of ``x`` is a point of the manifold.

        Parameters
        ----------
        x : array_like
            Points, shape ``(..., *point_shape)``.
        atol : float
            Relative tolerance of the membership checks.

        Returns
        -------
        tuple of (bool, str)
            ``(ok, reason)``; ``reason`` is empty when ``ok`` and never quotes data values.
        """
        x = np.asarray(x)
        if not self._shape_ok(x):
            return False, f"expected shape (..., {', '.join(map(str, self.point_shape))}), got {x.shape}"
        if not np.all(np.isfinite(x)):
            return False, "contains NaN or infinite entries"
        for mask, reason in self._checks(x, atol):
            if not np.all(mask):
                return False, reason
        return True, ""

    def _any_point(self) -> Array:
        """A fixed valid point, used to keep arithmetic on masked-out entries harmless."""
        return self.origin

    # -- balls -----------------------------------------------------------------------------
    def clip_to_ball(self, x: ArrayLike, center: ArrayLike, radius: float) -> Array:
        """Clip every point into the ball ``B_radius(center)``, record by record (docs/theory.md §5):
        ``x ↦ exp_c(min(1, r/ρ(c, x)) log_c x)``; points inside are returned unchanged.

        Parameters
        ----------
        x : array_like
            Points, shape ``(..., *point_shape)``.
        center : array_like
            One point, the ball's centre.
        radius : float
            The ball's radius, in the manifold's geodesic distance.

        Returns
        -------
        numpy.ndarray
            The clipped points, shape of ``x``.
        """
        return self._clip_with_logs(np.asarray(x), center, radius)[0]

    def _clip_with_logs(self, x: Array, center: ArrayLike, radius: float) -> tuple[Array, Array, FloatArray, BoolArray]:
        """``(clipped, log_center(x), min(1, r/ρ), outside)``. Every record is rebuilt by ``exp``,
        inside the ball or not: the work must not depend on how many records were clipped (an
        adversarial review measured ε_LB ≈ 4.5 from wall-clock time when only the clipped ones
        were rebuilt)."""
        v = self.log(center, x)
        rho = self.norm(center, v)
        outside = ~(rho <= radius)
        scale = clip_scale(rho, radius)
        rebuilt = self.exp(center, v * self._expand(scale))
        out = select(self._expand(outside), rebuilt, x)
        return out, v, scale, outside

    def random_point(self, center: ArrayLike, radius: float, size: int | tuple[int, ...] | None = None, *,
                     rng: RngLike = None) -> Array:
        """Points ``exp_c(ρ u)``, ``u`` uniform unit tangent, ``ρ = radius·U^(1/dim)``.

        For tests and simulations; uniform in the tangent ball, not in Riemannian volume.
        """
        rng = as_generator(rng)
        u = self.random_unit_tangent(center, size=size, rng=rng)
        rho = radius * rng.uniform(size=self.batch_shape(u)) ** (1.0 / self.dim)
        return self.exp(center, u * self._expand(rho))

    def _expand(self, a: ArrayLike) -> Array:
        """Append singleton axes so a batch-shaped array multiplies points or tangent vectors."""
        a = np.asarray(a)
        return a.reshape(a.shape + (1,) * len(self.point_shape))

    def _out_shape(self, x: ArrayLike, size: int | tuple[int, ...] | None) -> tuple[int, ...]:
        batch = self.batch_shape(np.asarray(x))
        if size is None:
            return batch
        shape = cast("tuple[int, ...]", (size,)) if np.isscalar(size) else tuple(cast("Iterable[int]", size))
        return np.broadcast_shapes(shape, batch) if batch else shape


def sn_over(t: ArrayLike, kappa: float = 1.0) -> FloatArray:
    """``sn_κ(t)/t`` with ``sn_κ(t) = sin(√κ t)/√κ`` (``κ > 0``), ``t`` (``κ = 0``),
    ``sinh(√−κ t)/√−κ`` (``κ < 0``): the Jacobi-field ratio of the space form, with its Taylor
    branch ``1 − κt²/6`` near 0. Its reciprocal is ``t/sin t`` at ``κ = 1``."""
    t = np.asarray(t, dtype=float)
    a = np.sqrt(abs(kappa)) * t
    small = np.abs(a) < 1e-4
    safe = np.where(small, 1.0, a)
    exact = (np.sin(safe) if kappa > 0 else np.sinh(safe)) / safe
    return np.where(small, 1.0 - kappa * t * t / 6.0, exact) if kappa != 0 else np.ones_like(t)


def space_form_log_volume(d: int, kappa: float) -> tuple[Callable[[FloatArray], FloatArray], Callable[[FloatArray], FloatArray]]:
    """``(log J, (log J)')`` on the space form of curvature ``κ``: ``J = sn_κ(ρ)^(d−1)``
    (``ρ``, ``R sin(ρ/R)``, ``sinh(cρ)/c``); ``log sinh`` written so that it never overflows."""
    if d == 1:
        return (lambda r: np.zeros_like(r)), (lambda r: np.zeros_like(r))
    if kappa == 0:
        return (lambda r: (d - 1) * np.log(r)), (lambda r: (d - 1) / r)
    if kappa > 0:
        R = 1.0 / np.sqrt(kappa)
        return (lambda r: (d - 1) * np.log(np.maximum(R * np.sin(r / R), 0.0))), (lambda r: (d - 1) / (R * np.tan(r / R)))
    c = np.sqrt(-kappa)
    return ((lambda r: (d - 1) * (c * r + np.log(-np.expm1(-2 * c * r)) - np.log(2 * c))),
            (lambda r: (d - 1) * c / np.tanh(c * r)))
