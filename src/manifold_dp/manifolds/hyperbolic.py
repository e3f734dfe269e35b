"""Hyperbolic space ``H^d`` in the hyperboloid model (hyperbolic embeddings), curvature −1."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._typing import Array, BoolArray, FloatArray
from .base import Manifold, sn_over
from .euclidean import _check_dim
from .kernels.hyperbolic_passes import HyperbolicPasses

__all__ = ["minkowski", "Hyperbolic"]


def minkowski(u: ArrayLike, v: ArrayLike) -> FloatArray:
    """``⟨u, v⟩_L = −u0 v0 + Σ ui vi`` over the last axis."""
    u, v = np.asarray(u, float), np.asarray(v, float)
    return np.sum(u[..., 1:] * v[..., 1:], axis=-1) - u[..., 0] * v[..., 0]


@dataclass(frozen=True)
class Hyperbolic(HyperbolicPasses, Manifold):
    """``{x ∈ R^(d+1): ⟨x,x⟩_L = −1, x0 > 0}``; metric ``⟨u,v⟩_L`` on tangent spaces.

    ``exp_x(v) = cosh‖v‖ x + sinh‖v‖ v/‖v‖``; ``log_x(y) = θ (y + ⟨x,y⟩x)/‖y + ⟨x,y⟩x‖``,
    ``θ = arccosh(−⟨x,y⟩_L)``, computed as ``2 asinh(‖x−y‖_L / 2)`` for accuracy near 0
    (docs/theory.md §1). Curvature −1. A private release needs its ball within distance
    ``max_reach = 8`` of ``e0`` (float64 precision, docs/theory.md §8).

    Parameters
    ----------
    dim : int
        The dimension ``d ≥ 1``; points have ``d + 1`` coordinates ``(x0, x1, …, xd)``.

    Raises
    ------
    ValueError
        If ``dim`` is not an integer ``≥ 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp import Hyperbolic
    >>> H2 = Hyperbolic(2)
    >>> y = H2.exp(H2.origin, np.array([0.0, 1.0, 0.0]))
    >>> round(float(H2.dist(H2.origin, y)), 12)
    1.0
    """

    dim: int

    def __post_init__(self) -> None:
        _check_dim(self.dim, "dim", 1)

    @classmethod
    def from_width(cls, width: int) -> Manifold:
        if width < 2:
            raise ValueError(f"hyperboloid records need at least 2 coordinates, got {width}")
        return cls(width - 1)

    @classmethod
    def examples(cls) -> tuple[Manifold, ...]:
        return (cls(3),)

    point_shape = property(lambda self: (self.dim + 1,))
    radius_units = "hyperbolic distance on the hyperboloid"
    points_hint = ("records are hyperboloid coordinates (x0, x1, …, xd) with x0² − x1² − … − xd² = 1 and x0 ≥ 1; a point "
                   "y of the Poincaré ball is x = (1 + |y|², 2y)/(1 − |y|²)")
    curvature_bounds = (-1.0, -1.0)
    homogeneous = True  # isometries act transitively: the Laplace constant is footpoint-free
    injectivity_radius = np.inf
    radial_range = (0.0, np.inf)
    volume_growth_rate = property(lambda self: float(self.dim - 1))  # sinh ρ / ρ ≤ e^ρ

    @property
    def origin(self) -> Array:
        e = np.zeros(self.dim + 1)
        e[0] = 1.0
        return e

    def inner(self, x: ArrayLike, u: ArrayLike, v: ArrayLike) -> FloatArray:
        return minkowski(u, v)

    def dist(self, x: ArrayLike, y: ArrayLike) -> FloatArray:
        """``2 asinh(‖x − y‖_L/2)`` for nearby points (accurate near 0), ``arccosh(−⟨x, y⟩_L)`` once
        ``−⟨x, y⟩_L > 2``: there ``‖x − y‖²_L = 2cosh ρ − 2`` is the difference of two terms of size
        ``e^(2ρ)`` and loses all precision by ``ρ ≈ 37``, while ``⟨x, y⟩_L`` keeps it."""
        x, y = np.asarray(x, float), np.asarray(y, float)
        d = x - y
        near = 2.0 * np.arcsinh(0.5 * np.sqrt(np.maximum(minkowski(d, d), 0.0)))
        c = -minkowski(x, y)
        return np.where(c > 2.0, np.arccosh(np.maximum(c, 1.0)), near)

    def exp(self, x: ArrayLike, v: ArrayLike) -> Array:
        x, v = np.asarray(x, float), np.asarray(v, float)
        t = np.sqrt(np.maximum(minkowski(v, v), 0.0))[..., None]
        return self.project(np.cosh(t) * x + sn_over(t, -1.0) * v)

    def log(self, x: ArrayLike, y: ArrayLike) -> Array:
        x, y = np.asarray(x, float), np.asarray(y, float)
        theta = self.dist(x, y)[..., None]
        w = y + minkowski(x, y)[..., None] * x
        # ‖w‖_L = sinh θ, so log = θ/sinh θ · w
        return w / sn_over(theta, -1.0)

    def _checks(self, x: Array, atol: float) -> Iterable[tuple[BoolArray, str]]:
        q = minkowski(x, x)
        scale = np.maximum(1.0, x[..., 0] ** 2)
        return [
            (x[..., 0] > 0, "first coordinate must be positive (upper sheet)"),
            (np.abs(q + 1.0) <= atol * scale, f"Minkowski norm differs from -1 by more than {atol:g} (relative)"),
        ]

    def project(self, x: ArrayLike) -> Array:
        """Recompute ``x0 = √(1 + ‖x̄‖²)`` from the space-like part."""
        x = np.array(x, dtype=float, copy=True)
        x[..., 0] = np.sqrt(1.0 + np.sum(x[..., 1:] ** 2, axis=-1))
        return x

    def boost(self, x: ArrayLike, y: ArrayLike) -> Array:
        """The Lorentz boost taking ``e0`` to ``x``, applied to ``y`` (a point or a vector).

        ``B = [[x0, x̄ᵀ], [x̄, I + x̄x̄ᵀ/(1+x0)]]`` preserves ``⟨·,·⟩_L``, so it is an isometry
        of ``H^d`` and maps ``T_e0`` onto ``T_x``."""
        x, y = np.asarray(x, float), np.asarray(y, float)
        xs, x0 = x[..., 1:], x[..., :1]
        ys, y0 = y[..., 1:], y[..., :1]
        dot = np.sum(xs * ys, axis=-1, keepdims=True)
        return np.concatenate([x0 * y0 + dot, xs * y0 + ys + xs * dot / (1.0 + x0)], axis=-1)

    def to_tangent_coordinates(self, x: ArrayLike, v: ArrayLike) -> FloatArray:
        """The inverse boost (``x̄ → −x̄``) takes ``T_x`` onto ``T_e0 = {0} × R^d``."""
        x = np.asarray(x, float)
        back = np.concatenate([x[..., :1], -x[..., 1:]], axis=-1)
        return self.boost(back, np.asarray(v, float))[..., 1:]

    def from_tangent_coordinates(self, x: ArrayLike, c: ArrayLike) -> Array:
        c = np.asarray(c, float)
        return self.boost(x, np.concatenate([np.zeros(c.shape[:-1] + (1,)), c], axis=-1))

    def random_unit_tangent(self, x: ArrayLike, size: int | tuple[int, ...] | None = None, *, rng: RngLike = None) -> Array:
        x = np.asarray(x, float)
        g = as_generator(rng).standard_normal(self._out_shape(x, size) + (self.dim,))
        g /= np.linalg.norm(g, axis=-1, keepdims=True)
        v0 = np.concatenate([np.zeros(g.shape[:-1] + (1,)), g], axis=-1)
        return self.boost(x, v0)

    # -- capabilities: float64 reach of hyperboloid coordinates ------------------------------
    max_reach = 8.0  # ρ(e0, centre) + r: beyond it coordinates ~e^ρ lose the precision Δ needs

    def float_error(self, center: Array, radius: float) -> float:
        """``max(16, 4(d + 1))·ε·cosh²(ρ(e0, c) + r)``: a Minkowski product or a boost sums ``d + 1``
        products of coordinates up to ``cosh(ρ(e0, c) + r)`` (docs/theory.md §8)."""
        factor = max(16, 4 * (self.dim + 1))
        return factor * np.finfo(float).eps * np.cosh(self.exp_coordinate_offset(center) + radius) ** 2

    def exp_coordinate_offset(self, center: Array) -> float:
        return float(self.dist(self.origin, center))

    def grid_scales(self, center: Array, radius: float, sigma: float) -> tuple[float, float]:
        return sigma, float(np.cosh(self.exp_coordinate_offset(center) + radius + min(sigma, 1.0)))

    def log_volume_ratio(self, rho: ArrayLike) -> FloatArray:
        """``log(J(ρ)/ρ^(d−1)) = (d−1) log(sinh ρ/ρ)`` (≥ 0: no Gamma envelope without a shift)."""
        return (self.dim - 1) * np.log(sn_over(np.asarray(rho, float), -1.0))
