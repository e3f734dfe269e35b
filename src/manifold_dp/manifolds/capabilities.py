"""What a manifold declares to the privacy layer: capabilities, never its class.

The privacy layer reads these attributes (``tests/test_structure.py`` forbids it to ask which
class a manifold is); a space claims a capability by overriding its default here and supplying
the members it brings:

- ``homogeneous``: the unrestricted Laplace normalising constant does not depend on the footpoint
  (2021 Thm 1 then allows ``σ = Δ/ε``);
- ``radial`` with ``log_volume(ρ)``, ``log_volume_slope(ρ)`` (the geometry layer), ``radial_range``:
  the polar volume density ``J`` of the Laplace radius law; ``volume_growth_rate`` and
  ``laplace_sigma_limit``: the largest (exclusive) ``σ`` with an integrable unrestricted Laplace;
- ``laplace_sampler``: the exact Laplace sampler of the space (``LaplaceSampler``);
- ``flat_chart`` with ``to_chart``/``from_chart``: an isometry onto ``R^dim`` (closed-form mean,
  tangent Gaussian);
- ``round_sphere``: the space is ``S^d`` of curvature ``κ = κmin = κmax``, so the proven spread
  constant of the unit sphere at ``r√κ`` bounds ``‖log_m x − log_m y‖/(2r)`` on its balls
  (``privacy.sensitivity.spread_bound``);
- ``ambient_dim`` with ``to_ambient``/``from_ambient``/``ambient_radius``: a Euclidean embedding
  for the extrinsic baselines (``None`` when there is none);
- ``assumption_radius``: ``r*`` of Assumption 1;
- ``enclosing_lift``: a lift of the records to a sphere for the smallest enclosing ball;
- representation: ``canonical`` (public representative of an equivalence class), ``as_points`` /
  ``to_user`` and ``user_point_shapes`` (other layouts users hand in, e.g. real landmarks).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._typing import Array, FloatArray
from .geometry import ManifoldGeometry

__all__ = ["PrivacyCapabilities"]


class PrivacyCapabilities(ManifoldGeometry):
    """The privacy capabilities layer of ``base.Manifold``: declared defaults (see the module
    docstring) and the members a space brings with each capability it claims."""

    volume_growth_rate: float = 0.0  # c with log(J(ρ)/ρ^(d−1)) − cρ ≤ 0: shifts the Laplace radius proposal

    homogeneous: bool = True

    radial: bool = True

    laplace_sampler: str = "radial"

    flat_chart: bool = False

    round_sphere: bool = False

    ambient_dim: int | None = None

    user_point_shapes: tuple[tuple[int, ...], ...] = ()  # other layouts of one point accepted from users (real landmarks)


    if TYPE_CHECKING:  # the members a capability brings
        # flat charts (``flat_chart``) and Euclidean embeddings (``ambient_dim``)
        def to_chart(self, x: ArrayLike) -> FloatArray: ...
        def from_chart(self, z: ArrayLike) -> Array: ...
        def to_ambient(self, x: ArrayLike) -> FloatArray: ...
        def from_ambient(self, z: ArrayLike, floor: float = ...) -> Array: ...
        def ambient_radius(self, center: ArrayLike, radius: float) -> float: ...

    @property
    def laplace_sigma_limit(self) -> float:
        """Largest ``σ`` (exclusive) with an integrable unrestricted Laplace law."""
        c = self.volume_growth_rate
        return 1.0 / c if c > 0 else np.inf

    @property
    def assumption_radius(self) -> float:
        """``r* = ½ min{inj M, π/(2√κmax)}`` (``inf`` when ``κmax ≤ 0``): a private release needs
        ``radius < r*`` (Assumption 1, docs/theory.md §3)."""
        kmax = self.curvature_bounds[1]
        bound = np.pi / (2.0 * np.sqrt(kmax)) if kmax > 0 else np.inf
        return 0.5 * min(self.injectivity_radius, bound)

    def enclosing_lift(self, x: ArrayLike, X: ArrayLike) -> tuple[FloatArray, float, bool, Callable[[FloatArray], Array]] | None:
        """Unit vectors ``Y`` (``(n, D)``, real) with ``ρ(P(c), X_i) ≤ scale·∠(c, Y_i)`` for every
        unit ``c`` (``P(c)`` the point ``c`` stands for), as ``(Y, scale, exact, to_point)``:
        ``exact`` when the bound is an equality, so that the smallest enclosing cap of the ``Y_i``
        is the smallest enclosing ball (the sphere). ``None`` when the space has no such lift.
        ``x``: a point near the records (it fixes the representatives, e.g. Kendall's rotation)."""
        return None

    def canonical(self, center: ArrayLike, points: Array) -> Array:
        """The released representative of each point's class, fixed by public ``center``."""
        return points

    def as_points(self, X: Any) -> Any:
        """Users' layouts (``user_point_shapes``) converted to this manifold's arrays."""
        return X

    def to_user(self, points: Array) -> Array:
        """Points in the layout users read (inverse of ``as_points``)."""
        return points

