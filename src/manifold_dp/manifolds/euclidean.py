"""Euclidean space ``R^d``: the flat reference every other space is checked against."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._typing import Array, BoolArray, FloatArray
from .base import Manifold
from .kernels.euclidean_passes import EuclideanPasses

__all__ = ["Euclidean"]


@dataclass(frozen=True)
class Euclidean(EuclideanPasses, Manifold):
    """``R^d`` with the standard inner product. Points and tangent vectors: ``(..., d)``.

    Flat: ``exp_x(v) = x + v``, ``log_x(y) = y − x``, ``ρ(x, y) = ‖x − y‖``. It has a flat chart
    (itself: closed-form mean, tangent Gaussian) and an ambient embedding (itself).

    Parameters
    ----------
    dim : int
        The dimension ``d ≥ 1``.

    Raises
    ------
    ValueError
        If ``dim`` is not an integer ``≥ 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp import Euclidean
    >>> R3 = Euclidean(3)
    >>> float(R3.dist(np.zeros(3), np.array([3.0, 4.0, 0.0])))
    5.0
    """

    dim: int

    def __post_init__(self) -> None:
        _check_dim(self.dim, "dim", 1)

    @classmethod
    def from_width(cls, width: int) -> Euclidean:
        """The space whose points are records of ``width`` numbers (the CLI's files)."""
        return cls(width)

    @classmethod
    def examples(cls) -> tuple[Euclidean, ...]:
        """Small instances the shared property suite runs over."""
        return (cls(3),)

    point_shape = property(lambda self: (self.dim,))
    radius_units = "Euclidean norm"
    curvature_bounds = (0.0, 0.0)
    homogeneous = True  # isometries act transitively: the Laplace constant is footpoint-free
    injectivity_radius = np.inf
    origin = property(lambda self: np.zeros(self.dim))

    def exp(self, x: ArrayLike, v: ArrayLike) -> Array:
        return np.asarray(x) + np.asarray(v)

    def log(self, x: ArrayLike, y: ArrayLike) -> Array:
        return np.asarray(y) - np.asarray(x)

    def inner(self, x: ArrayLike, u: ArrayLike, v: ArrayLike) -> FloatArray:
        return np.sum(np.asarray(u) * np.asarray(v), axis=-1)

    def to_tangent_coordinates(self, x: ArrayLike, v: ArrayLike) -> FloatArray:
        return np.array(np.broadcast_to(v, np.broadcast_shapes(np.shape(x), np.shape(v))), dtype=float)

    def from_tangent_coordinates(self, x: ArrayLike, c: ArrayLike) -> Array:
        return self.to_tangent_coordinates(x, c)

    def dist(self, x: ArrayLike, y: ArrayLike) -> FloatArray:
        return np.linalg.norm(np.asarray(y) - np.asarray(x), axis=-1)

    def _checks(self, x: Array, atol: float) -> Iterable[tuple[BoolArray, str]]:
        return []

    def project(self, x: ArrayLike) -> Array:
        return np.asarray(x, dtype=float)

    def random_unit_tangent(self, x: ArrayLike, size: int | tuple[int, ...] | None = None, *, rng: RngLike = None) -> Array:
        g = as_generator(rng).standard_normal(self._out_shape(x, size) + (self.dim,))
        return g / np.linalg.norm(g, axis=-1, keepdims=True)

    def log_volume_ratio(self, rho: ArrayLike) -> FloatArray:
        """``log(J(ρ)/ρ^(d−1))`` for the polar volume density ``J``: zero on flat space."""
        return np.zeros_like(np.asarray(rho, dtype=float))

    radial_range = (0.0, np.inf)

    # -- capabilities: a flat chart (itself) and an ambient embedding (itself) -------------
    flat_chart = True
    ambient_dim = property(lambda self: self.dim)

    def to_chart(self, x: ArrayLike) -> FloatArray:
        return np.asarray(x, float)

    def from_chart(self, z: ArrayLike) -> Array:
        return np.asarray(z, float)

    to_ambient = to_chart

    def from_ambient(self, z: ArrayLike, floor: float | None = None) -> Array:
        return np.asarray(z, float)

    def ambient_radius(self, center: ArrayLike, radius: float) -> float:
        return float(radius)

    def float_error(self, center: Array, radius: float) -> float:
        return 16 * np.finfo(float).eps * (float(np.max(np.abs(center))) + radius)

    def grid_scales(self, center: Array, radius: float, sigma: float) -> tuple[float, float]:
        return sigma, float(np.max(np.abs(center))) + radius + sigma

    def mean_start(self, stats: Any) -> Array:
        return np.asarray(stats, float)


def _check_dim(value: object, name: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
