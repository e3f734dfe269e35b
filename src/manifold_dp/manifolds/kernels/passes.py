"""The fast record passes a manifold may supply: hooks with generic defaults that the release
path and the Fréchet mean call, and that a space overrides with a fused, compiled or power-series
pass computing the same quantities (within the error its Newton constants declare).

- the mean's start: ``mean_start_stats``/``mean_start``, ``checked_start_stats``,
  ``centred_start_stats``;
- record preparation: ``prepare_block``, ``prepared_distances``, ``prepare_rows``,
  ``records_order``, ``clip_and_log_sum``, ``clipped_log_sum``;
- gradient and Newton passes: ``weighted_log_sum``, ``weighted_log_sums``, ``karcher_terms``,
  ``newton_constants`` with ``newton_terms``/``newton_step`` (``NewtonConstants``);
- single draws with Python floats: ``_validate_one``, ``single_polar_frame``/``polar_point``.

The kernels behind the overrides live beside this module: ``sphere_kernels`` (numba loops of the
2-sphere), ``angle_series`` (the sphere's Newton terms by power series), ``matrix_log`` (SPD
logarithms by matrix products), ``arrays`` (branch-free selects).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
from numpy.typing import ArrayLike

from ..._typing import Array, BoolArray
from ..geometry import ManifoldGeometry
from .arrays import clip_scale

__all__ = ["NewtonConstants", "RecordPasses", "GRADIENT_BLOCK", "GRADIENT_MIN_RECORDS"]

GRADIENT_BLOCK = 1 << 16  # entries of the (points × records) table of logs weighted_log_sums holds at once ...
GRADIENT_MIN_RECORDS = 16  # ... but at least this many records per block (per-point work is redone per block)


@dataclass(frozen=True)
class NewtonConstants:
    """Public constants of the certified mean's projected Newton steps on ``B_r(c)``
    (docs/theory.md §2): with ``d = ρ(μ, x̄)``, one step moves ``μ`` to within
    ``E(d + δ)·δ`` of ``x̄``, ``δ = (L d²/2 + e d + g)/(h − e)``, ``E(T) = sinh(√k T)/(√k T)``
    (``k = expansion``; ``E = 1`` when ``k = 0``: ``exp_μ`` is then 1-Lipschitz).

    ``L``: Lipschitz bound of ``Hess F`` along geodesics of the ball (parallel transport);
    ``e``: bound on the computed Hessian's error ``‖Ĥ − Hess F(μ)‖``; ``expansion``: ``−κmin``
    (0 on the sphere); ``extrinsic``: the projected extrinsic mean's distance bound to ``x̄``
    (``None``: no such start); ``tangent``: a bound on ``‖Hess F(c) − I‖``, making
    ``exp_c((1/n) Σ log_c x_i)`` a Newton step with ``Ĥ = I`` (``None``: not offered);
    ``cost``: a Newton pass in gradient passes (public, for the schedule's choice);
    ``cheaper``: ``(order, e, cost)`` or ``(order, e, cost, g)`` of cheaper passes
    ``newton_terms(..., order=order)`` computes (affine-invariant SPD: ``t coth t`` truncated
    sooner; the sphere: ``θ/sin θ`` and its Hessian weight by power series of a public degree,
    with their own gradient error ``g``), which the schedule may take for the first steps, where
    the bound is still far above their errors; ``g``: a bound on the error of the computed
    gradient ``‖ĝ − ∇F(μ)‖`` (affine-invariant SPD: the logarithms by matrix products,
    ``matrix.logm_band``), which adds ``g/(h − e)`` to ``δ``; ``solve``: a bound ``ε`` on the relative
    error of the computed Newton direction against the exact solution with ``Ĥ``
    (affine-invariant SPD at large ``k``: a public number of Chebyshev steps), which turns ``δ``
    into ``δ + ε(d + δ)``; a ``cheaper`` entry may carry its own as a fifth element."""

    L: float
    e: float
    expansion: float = 0.0
    extrinsic: float | None = None
    tangent: float | None = None
    cost: float = 2.0
    cheaper: tuple[tuple[Any, ...], ...] = ()
    order: int | None = None  # the order of ``e`` and ``cost`` (``None``: the exact Hessian)
    g: float = 0.0
    solve: float = 0.0

    def levels(self) -> list[tuple[Any, ...]]:
        """Every pass a Newton step may take, as ``(order, e, cost, g)``: the cheaper ones first,
        the space's own last (a cheaper entry without its own ``g`` has the space's)."""
        return [level[:4] for level in self.passes()]

    def passes(self) -> list[tuple[Any, ...]]:
        """``levels`` with each pass's ``solve`` as a fifth element (an entry without its own: an
        exact solve, 0)."""
        cheaper = [tuple(level) + ((self.g,) if len(level) < 4 else ()) + ((0.0,) if len(level) < 5 else ())
                   for level in self.cheaper]
        return cheaper + [(self.order, self.e, self.cost, self.g, self.solve)]


class RecordPasses(ManifoldGeometry):
    """The record-pass layer of ``base.Manifold`` (see the module docstring)."""

    records_order: Literal["C", "F"] = "C"  # memory order of prepared records (``privacy.release.prepare_records``)

    if TYPE_CHECKING:  # where ``newton_constants`` gives constants / ``single_polar_frame`` a frame
        def newton_terms(self, x: Array, X: Array, weights: Any, ball: Any = None,
                         order: int | None = ...) -> tuple[Any, ...]: ...
        def newton_step(self, x: Array, g: Array, H: Any) -> Array: ...
        def polar_point(self, p: Any, rho: float, rng: np.random.Generator) -> Array: ...

    def mean_start_stats(self, block: ArrayLike, weights: Array) -> Any:
        """Partial sums of a block for the Fréchet mean's starting point (reduced by ``+``)."""
        return np.tensordot(weights, np.asarray(block), axes=(0, 0))

    def mean_start(self, stats: Any) -> Array:
        """The starting point from the reduced partial sums: the extrinsic mean, projected."""
        return self.project(stats)

    def checked_start_stats(self, block: ArrayLike, weights: Array) -> tuple[tuple[bool, str], Any]:
        """``(check_point(block), mean_start_stats(block, weights))`` in one pass over a block: the
        plain mean's first pass (log-Euclidean SPD shares one ``eigh`` between the two). No sums for
        a block that fails the check (its error is raised instead)."""
        checked = self.check_point(block)
        return checked, (self.mean_start_stats(block, weights) if checked[0] else None)

    def weighted_log_sum(self, x: Array, X: Array, weights: Array) -> Array:
        """``Σ_i w_i log_x(X_i)`` over the records' axis 0, for one point ``x``: ``−∇F(x)`` of a
        block. Spaces override it to avoid the ``(n, *point_shape)`` table of logs (the sphere
        with two matrix–vector products, affine-invariant SPD in the frame of ``x``)."""
        return np.tensordot(np.asarray(weights, float), self.log(x, np.asarray(X)), axes=(0, 0))

    def prepare_rows(self, rows: int, n: int, log_sum: bool = True) -> int:
        """Records per block of ``privacy.release.prepare_records`` of ``n`` records (``rows`` its
        default, which bounds the temporaries of the numpy passes; ``log_sum`` as in
        ``prepare_block``); a space whose pass needs fewer temporaries may take more."""
        return rows

    def centred_start_stats(self, block: Array, center: ArrayLike, weight: float) -> Any:
        """``mean_start_stats`` of ``block − center`` with every weight ``weight``: the extrinsic
        start's statistics around the centre, from a block of prepared records."""
        return self.mean_start_stats(np.asarray(block) - np.asarray(center, self.dtype), np.full(len(block), weight))

    def prepare_block(self, X: Array, center: Array, radius: float, weight: float, log_sum: bool = True,
                      keep: bool = True, out: Array | None = None) -> tuple[Any, ...] | None:
        """A space's fused pass for one block of ``privacy.release.prepare_records``, or ``None``
        (the generic path: ``belongs``, ``project``, ``clip_and_log_sum``); with ``log_sum``
        false it may return ``None`` for the sum of logs, with ``keep`` false ``None`` for the
        records (only their log sum is needed: flat charts). ``out``: where the caller keeps the
        block's records; a space may write them there and return ``out`` itself (no copy).
        ``finite``, ``ok``, ``moved`` are masks over the block's records, or the numbers of finite
        records, of points among them and of moved records (ints) from a pass that counts as it
        goes (``Euclidean(1)``)."""
        return None

    def prepared_distances(self, X: Array, center: Array, cap: float) -> Array | None:
        """A space's fused pass for one block of ``privacy.release.record_distances`` at ``cap``:
        ``min(ρ(center, x̃), cap)`` of the records ``x̃`` as ``prepare_block`` prepares them (invalid ones
        at 0), from its own decomposition; or ``None`` (the generic path: prepare at ``cap``, then
        ``dist``)."""
        return None

    def newton_constants(self, radius: float, n: int) -> NewtonConstants | None:
        """``NewtonConstants`` for Newton steps of the certified mean on a ball of radius
        ``radius`` holding ``n`` records, or ``None``: no proven constants here, the certified mean
        takes gradient steps only (``stats.frechet.certified_schedule``). A space giving constants
        also gives ``newton_terms`` and ``newton_step`` (the sphere, affine-invariant SPD, hyperbolic space)."""
        return None

    def weighted_log_sums(self, points: ArrayLike, X: ArrayLike, weights: Array) -> Array:
        """``Σ_i w_i log_{p_j}(X_i)`` for a batch of points ``(P, *point_shape)`` (KNG's proposals):
        the ``(points × records)`` table of logs, a block of records at a time (bounded memory)."""
        points, X = np.asarray(points), np.asarray(X)
        step = max(GRADIENT_MIN_RECORDS, GRADIENT_BLOCK // max(points.size, 1))
        out: Any = 0.0
        for i in range(0, X.shape[0], step):
            logs = self.log(points[:, None], X[i:i + step])  # (P, block, *point_shape)
            out = out + np.tensordot(logs, weights[i:i + step], axes=([1], [0]))
        return cast(Array, out)

    def karcher_terms(self, x: Array, X: Array, weights: Array, hessian: bool = False) -> tuple[Array, float, Any]:
        """One pass of the plain mean over a block at ``x``: ``(Σ w_i log_x(X_i), max_i ρ(x, X_i),
        hess)``. With ``hessian=True`` a space that can gives ``hess``, the map
        ``v ↦ Σ w_i Hess(½ρ²(·, X_i))(x)[v]`` on ``T_x`` built from the same decompositions (for
        Newton steps); ``None`` here."""
        v = self.log(x, np.asarray(X))
        far = float(np.max(self.norm(x, v))) if len(v) else 0.0
        return np.tensordot(np.asarray(weights, float), v, axes=(0, 0)), far, None

    def clip_and_log_sum(self, x: ArrayLike, center: ArrayLike, radius: float,
                         weights: ArrayLike) -> tuple[Array, BoolArray, Array]:
        """``clip_to_ball`` of a block of records ``x`` (``(n, *point_shape)``), the mask of the
        records it moved, and ``Σ w_i log_center(x̃_i)`` over the clipped ``x̃_i`` — the certified
        mean's first gradient (and, on a flat chart, its closed form) — from the same pass: the log
        of a clipped record is its log scaled by ``r/ρ``."""
        x = np.asarray(x)
        out, v, scale, outside = self._clip_with_logs(x, center, radius)
        w = np.asarray(weights, float) * scale
        return out, outside, np.tensordot(w, v, axes=(0, 0))

    def clipped_log_sum(self, x: ArrayLike, center: ArrayLike, radius: float, weights: ArrayLike) -> tuple[BoolArray, Array]:
        """``(outside, Σ w_i log_center(x̃_i))`` of ``clip_and_log_sum`` without building the
        clipped records (the mean on a flat chart needs only their log mean): the same work for
        every record."""
        v = self.log(center, np.asarray(x))
        rho = self.norm(center, v)
        outside = ~(rho <= radius)
        scale = clip_scale(rho, radius)
        return outside, np.tensordot(np.asarray(weights, float) * scale, v, axes=(0, 0))

    def _validate_one(self, x: Array) -> Array | None:
        """A fast path of ``validate_point`` for one point with Python floats (single draws check
        their footpoint on every call): the projected point when ``x`` passes the same checks, else
        ``None`` and the general path decides (and names the reason). Default: always ``None``."""
        return None

    def single_polar_frame(self, x: Array) -> list[Any] | None:
        """One validated point as the list that ``polar_point(frame, ρ, rng)`` (one draw of
        ``exp_x(ρ u)``, ``u`` a uniform unit tangent, with Python floats) takes, or ``None`` where
        the space has no such path (the default)."""
        return None

