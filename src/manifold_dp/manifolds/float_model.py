"""How far float64 carries a manifold's geometry: the public error bounds and limits a release
checks before it reads any record, and the output grid a release is rounded to.

- ``float_error(center, radius)``: a public bound on the float64 error of distances and clipping
  near a ball; ``ball_problem``: why float64 cannot treat every point of a ball alike (or ``None``);
- ``max_reach``: the largest ``ρ(origin, centre) + r`` float64 keeps exact enough (hyperbolic);
  ``exp_coordinate_offset``: how far the centre's coordinates already sit along an ``exp`` that can
  overflow;
- ``grid_scales``, ``snap``: the default output grid and the return onto the manifold after
  rounding; ``ambient_floor``: the floor ``from_ambient`` keeps projected points above.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._typing import Array
from .geometry import ManifoldGeometry

__all__ = ["Float64Model"]


class Float64Model(ManifoldGeometry):
    """The float64 layer of ``base.Manifold`` (see the module docstring); defaults suit a space
    whose coordinates are bounded or linear in ``ρ``."""

    max_reach: float = np.inf  # largest ρ(origin, centre) + r float64 keeps exact enough (hyperbolic)

    def float_error(self, center: Array, radius: float) -> float:
        """A public bound on the float64 error of distances and clipping near ``B_r(center)``."""
        return 16 * np.finfo(float).eps * (1.0 + radius)

    def ball_problem(self, center: Array, radius: float) -> str | None:
        """Why float64 cannot carry every point of ``B_r(center)`` alike (SPD: condition numbers or
        scales where the check of one matrix would take a path that depends on it), as a message
        quoting public values only; ``None`` when it can (the default)."""
        return None

    def exp_coordinate_offset(self, center: Array) -> float | None:
        """How far the centre's coordinates already sit along an ``exp`` that can overflow float64
        (``None``: coordinates are bounded or linear in ``ρ``)."""
        return None

    def grid_scales(self, center: Array, radius: float, sigma: float) -> tuple[float, float]:
        """``(move, magnitude)`` in array coordinates: how far noise of scale ``σ`` moves a point,
        and the public magnitude of the coordinates (the default output grid rests on both). Here
        the coordinates are taken to be bounded by the origin's (the sphere, Kendall's shapes,
        SO(3)); where the origin is 0 they are as large as the ball reaches, as on ``R^d``."""
        scale = float(np.max(np.abs(self.origin)))
        if scale == 0.0:
            return sigma, float(np.max(np.abs(center))) + radius + sigma
        return min(sigma, scale), scale

    def ambient_floor(self, center: Array, radius: float) -> float:
        """A public floor ``from_ambient`` keeps projected points above (SPD: eigenvalues)."""
        return 1e-12

    def snap(self, points: ArrayLike, grid: float) -> Array:
        """Back onto the manifold after rounding to ``grid`` (post-processing of a release)."""
        return self.project(points)

