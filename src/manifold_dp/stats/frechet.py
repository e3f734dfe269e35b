"""The Fréchet (Karcher) mean ``argmin_x (1/2n) Σ ρ²(x, x_i)``, to a certified accuracy.

The privacy guarantees of ``manifold_dp.privacy`` hold for the exact minimiser, so the default
tolerance is tight (‖∇F‖ ≤ 1e-10 × the data's spread), not geomstats' loose default
(docs/theory.md §2).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._disk_cache import disk_cached
from .._threads import blas_limit, blas_limited
from .._typing import Array, FloatArray
from ..manifolds.base import Manifold, NewtonConstants, check_order
from ..records import PreparedBlocks, Records, block_weights
from .enclosing import enclosing_radius

__all__ = ["FrechetMeanResult", "CurvatureAssumptionError", "PreparedRecords", "riemannian_gradient",
           "mean_squared_distance", "gradient_norm", "enclosing_radius", "frechet_mean", "hessian_upper_bound",
           "gradient_step_bound",
           "certified_iterations", "certified_schedule", "certified_frechet_mean", "hessian_lower_bound"]



@dataclass(frozen=True)
class FrechetMeanResult:
    """``point``: the mean; ``grad_norm``: ‖∇F(point)‖; ``converged``: whether ``tol`` was met."""

    point: Array
    n_iter: int
    converged: bool
    grad_norm: float


class CurvatureAssumptionError(ValueError):
    """The data do not lie in a ball small enough for the Fréchet mean to be unique."""


class PreparedRecords(np.ndarray[Any, np.dtype[Any]]):
    """Records a release prepared (``privacy.release.prepare_records``: sanitised and clipped into
    ``B_r(center)``), carrying ``log_mean = (1/n) Σ log_center(x_i)``, which the clipping's own
    decompositions gave: the certified mean's first gradient, and its closed form on a flat chart
    (``exp_center(log_mean)``); and, where the certified mean starts its Newton steps from the
    extrinsic mean, that mean's partial sums around the centre, ``start_stats = Σ w_i (x_i − center)``
    (``manifold.mean_start_stats`` of the differences); and
    the ``radius`` they were clipped to. Views, slices, copies and arithmetic results are plain
    records again (``center = log_mean = start_stats = radius = None``)."""

    center: Any
    log_mean: Any
    start_stats: Any
    radius: float | None

    def __new__(cls, records: ArrayLike, center: ArrayLike, log_mean: Any, start_stats: Any = None,
                radius: float | None = None) -> PreparedRecords:
        out = np.asarray(records).view(cls)
        out.center, out.log_mean, out.start_stats = np.asarray(center), log_mean, start_stats
        out.radius = None if radius is None else float(radius)
        return out

    def __array_finalize__(self, obj: object) -> None:
        self.center, self.log_mean, self.start_stats, self.radius = None, None, None, None

    def in_ball(self, center: ArrayLike, radius: float) -> bool:
        """Whether these records were clipped into ``B_radius(center)`` (or a smaller ball around
        the same centre), so that a pass may rely on it (``newton_terms``' ``ball``)."""
        return (self.radius is not None and self.radius <= radius and self.center.shape == np.shape(center)
                and np.array_equal(self.center, center))

    def log_mean_at(self, center: ArrayLike) -> Any:
        """``log_mean`` when it was computed at ``center``, else ``None``."""
        if self.log_mean is None or self.center.shape != np.shape(center) or not np.array_equal(self.center, center):
            return None
        return self.log_mean


def riemannian_gradient(manifold: Manifold, x: ArrayLike, X: ArrayLike, weights: ArrayLike | None = None) -> Array:
    """``∇F(x) = −Σ w_i log_x(x_i)`` (weights summing to 1), for one or a batch of ``x``.

    ``x`` has shape ``(..., *point_shape)``; the result has the same shape.
    """
    X = np.asarray(X)
    w = np.full(X.shape[0], 1.0 / X.shape[0]) if weights is None else np.asarray(weights, float) / np.sum(weights)
    x = np.asarray(x)
    nb = x.ndim - len(manifold.point_shape)
    if nb == 0:
        return -manifold.weighted_log_sum(x, X, w)
    # a batch of points (KNG's proposals): the space's batched sums, a block of records at a time
    points = x.reshape((-1,) + tuple(manifold.point_shape))
    return -manifold.weighted_log_sums(points, X, w).reshape(x.shape)


# -- block functions: pure, module level (they travel to Dask workers) ------------------------

def _blk_log_sum(block: Array, w: FloatArray | None, n: int, manifold: Manifold, x: Array) -> Array:
    return manifold.weighted_log_sum(x, np.asarray(block), block_weights(block, w, n))


def _blk_karcher(block: Array, w: FloatArray | None, n: int, manifold: Manifold, x: Array,
                 hessian: bool) -> tuple[Array, float, Any]:
    return manifold.karcher_terms(x, np.asarray(block), block_weights(block, w, n), hessian)


def _blk_check_start(block: Array, w: FloatArray | None, n: int, manifold: Manifold,
                     start: bool) -> tuple[tuple[bool, str], Any]:
    """The plain mean's first pass: the point check, and the start's partial sums when wanted."""
    if start:
        return manifold.checked_start_stats(np.asarray(block), block_weights(block, w, n))
    return manifold.check_point(np.asarray(block)), None


def _blk_init_stats(block: Array, w: FloatArray | None, n: int, manifold: Manifold) -> Any:
    """Partial sums for the starting point (the closed form on a flat chart)."""
    return manifold.mean_start_stats(np.asarray(block), block_weights(block, w, n))


def _blk_centred_stats(block: Array, w: FloatArray | None, n: int, manifold: Manifold, center: Array) -> Any:
    """Partial sums of ``w_i (x_i − center)``: for the extrinsic start of the certified mean, whose
    records lie within ``r`` of ``center`` (sums of the records themselves round at ``ε·R`` per
    term, which for a tiny ``r`` exceeds the float error its accuracy allows)."""
    return manifold.mean_start_stats(np.asarray(block) - center, block_weights(block, w, n))


def _start(manifold: Manifold, records: Records) -> Array:
    """The mean's starting point: extrinsic, Procrustes or log-Euclidean (``manifold.mean_start``);
    the exact mean when the manifold has a flat chart (Euclidean, log-Euclidean)."""
    return manifold.mean_start(sum(records.map(_blk_init_stats, manifold)))


def _blk_newton(block: Array, w: FloatArray | None, n: int, manifold: Manifold, x: Array, ball: float | None,
                order: Any = None) -> tuple[Any, ...]:
    weights = 1.0 / n if w is None else w  # a scalar: no n-array
    if order is None:
        return manifold.newton_terms(x, np.asarray(block), weights, ball)
    return manifold.newton_terms(x, np.asarray(block), weights, ball, order=order)


def _blk_sq_dist_sum(block: Array, w: FloatArray | None, n: int, manifold: Manifold, x: ArrayLike) -> float:
    return float(np.dot(block_weights(block, w, n), manifold.dist(x, np.asarray(block)) ** 2))


@blas_limited
def mean_squared_distance(manifold: Manifold, X: Any, x: ArrayLike) -> float:
    """``(1/n) Σ ρ²(x, x_i)``: the Fréchet variance when ``x`` is the mean (one map-reduce)."""
    records = X if isinstance(X, Records) else Records(X, manifold)
    return float(sum(records.map(_blk_sq_dist_sum, manifold, x)))


@blas_limited
def gradient_norm(manifold: Manifold, x: ArrayLike, X: Any) -> float:
    """``‖∇F(x)‖`` for records in memory or in a Dask array (one map-reduce)."""
    records = X if isinstance(X, Records) else Records(X, manifold)
    return float(manifold.norm(x, sum(records.map(_blk_log_sum, manifold, x))))


def frechet_mean(X: ArrayLike, manifold: Manifold, *, weights: ArrayLike | None = None, init: ArrayLike | None = None,
                 step: float | None = None, tol: float = 1e-10, max_iter: int = 1000,
                 check_assumption: bool = True) -> FrechetMeanResult:
    """Fréchet mean ``argmin_x Σ w_i ρ²(x, x_i)`` of the records ``X`` on ``manifold`` (not private).

    Closed form on a manifold with a flat chart (Euclidean, log-Euclidean). Elsewhere Karcher flow
    ``μ ← exp_μ(step · Σ w_i log_μ x_i)`` from an extrinsic/Procrustes start — on affine-invariant
    SPD Newton steps from the geometric mean of the arithmetic and harmonic means, with the exact
    Hessian from each pass's own ``eigh`` — until ``‖∇F(μ)‖ ≤ tol · max(spread, 1)`` where
    ``spread`` is the largest distance from the start to a record (docs/theory.md §2). Every
    iteration is one pass over the records. This is the non-private statistic; private releases use
    ``certified_frechet_mean`` through ``private_frechet_mean``.

    Parameters
    ----------
    X : array_like
        The records, shape ``(n, *point_shape)`` (a numpy array, a memmap or a Dask array), or in
        memory in one of ``manifold.user_point_shapes`` (Kendall shapes: ``(n, k, 2)`` real landmarks;
        the mean is then still a point in ``point_shape``, a complex pre-shape: ``manifold.to_user``
        gives its landmarks).
    manifold : Manifold
        The space the records live on (second: records come first in every public function).
    weights : array_like, optional
        ``n`` non-negative weights with a positive sum (not supported on Dask arrays).
    init : array_like, optional
        A starting point instead of the extrinsic/Procrustes start.
    step : float, optional
        Karcher step in ``(0, 1]``. ``None`` takes 1 where the curvature is ``≥ 0`` and ``1/H`` on
        negatively curved spaces, ``H`` the Hessian bound at distance ``2·spread`` (a fixed step 1
        diverges there once the Hessian of ``F`` exceeds 2), and Newton steps where the space gives
        its Hessian (affine-invariant SPD, records in memory); a step given is always Karcher flow.
    tol : float
        Relative tolerance on ``‖∇F‖`` (default ``1e-10``).
    max_iter : int
        Largest number of Karcher steps; a ``RuntimeWarning`` is issued when it is reached first.
    check_assumption : bool
        On a positively curved space (sphere, Kendall) the minimiser is unique only when the data
        lie in a ball of radius below ``r*`` (docs/theory.md §3, Assumption 1): check that an
        enclosing ball of radius ``< r*`` exists (``enclosing_radius``).

    Returns
    -------
    FrechetMeanResult
        ``point`` (the mean), ``n_iter``, ``converged`` and ``grad_norm`` (``‖∇F(point)‖``).

    Raises
    ------
    TypeError
        If the records and the manifold are passed in the wrong order.
    ValueError
        If a record is not a point of ``manifold`` or ``step`` is outside ``(0, 1]``.
    CurvatureAssumptionError
        If ``check_assumption`` and no ball of radius ``< r*`` is found to contain the records.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp import Sphere, frechet_mean
    >>> S2 = Sphere(2)
    >>> a = 0.3  # four directions 0.3 rad from the north pole, symmetric about it
    >>> X = np.array([[np.sin(a), 0, np.cos(a)], [-np.sin(a), 0, np.cos(a)],
    ...               [0, np.sin(a), np.cos(a)], [0, -np.sin(a), np.cos(a)]])
    >>> result = frechet_mean(X, S2)
    >>> np.round(result.point, 8) + 0.0, result.converged
    (array([0., 0., 1.]), True)
    """
    check_order(X, manifold, "frechet_mean")
    if isinstance(X, np.ndarray) and X.ndim >= 2 and tuple(X.shape[1:]) in tuple(manifold.user_point_shapes):
        X = manifold.as_points(X)  # a user's layout (Kendall: real landmarks (k, 2)), as the releases read it
    records = Records(X, manifold, weights)
    with blas_limit():
        first = records.map(_blk_check_start, manifold, init is None or manifold.flat_chart)  # check and start: one pass
        for (ok, reason), _ in first:
            if not ok:
                raise ValueError(f"X holds records that are not points of {manifold!r}: {reason}")
        if step is not None and not (0 < step <= 1):
            raise ValueError(f"step must be in (0, 1], got {step!r}")
        if manifold.flat_chart:  # closed form: the mean in the chart
            return FrechetMeanResult(manifold.mean_start(sum(stats for _, stats in first)), 0, True, 0.0)
        if init is None:
            mu = manifold.mean_start(sum(stats for _, stats in first))
        else:
            mu = manifold.validate_point(init, "init")
        mu, n_iter, converged, gnorm = _karcher(manifold, records, mu, step, tol, max_iter)
        if not converged:
            warnings.warn(f"frechet_mean did not reach tol={tol:g} in max_iter={max_iter} steps", RuntimeWarning,
                          stacklevel=2)
        if check_assumption and manifold.curvature_bounds[1] > 0 and \
                enclosing_radius(manifold, records, mu, enough=manifold.assumption_radius) >= manifold.assumption_radius:
            raise CurvatureAssumptionError(
                f"the records do not lie within r* = {manifold.assumption_radius:.6g} of their mean on {manifold!r}: "
                "the Fréchet mean may not be unique (docs/theory.md §3, Assumption 1); pass check_assumption=False "
                "to skip")
    return FrechetMeanResult(mu, n_iter, converged, gnorm)


def _karcher_pass(manifold: Manifold, records: Records, x: Array,
                  hessian: bool) -> tuple[Any, float, Callable[[Array], Any] | None]:
    """``(Σ w_i log_x x_i, max_i ρ(x, x_i), Hessian map or None)`` over all blocks: one pass."""
    parts = records.map(_blk_karcher, manifold, x, hessian)
    maps = [h for _, _, h in parts if h is not None]
    apply = (lambda v: sum(h(v) for h in maps)) if hessian and len(maps) == len(parts) else None
    return sum(g for g, _, _ in parts), max(far for _, far, _ in parts), apply


def _karcher(manifold: Manifold, records: Records, mu: Array, step: float | None, tol: float,
             max_iter: int) -> tuple[Array, int, bool, float]:
    """Karcher flow ``μ ← exp_μ(t Σ w_i log_μ x_i)``, or Newton steps where the space gives its
    Hessian from the same pass (affine-invariant SPD; records in memory, ``step=None``), until
    ``‖∇F(μ)‖ ≤ tol·max(spread, 1)``. The gradient of the last pass is the certificate: no pass
    is spent on anything else. A Newton step that does not decrease ``‖∇F‖`` is undone and the
    flow goes on with Karcher steps of the safe step ``1/H``."""
    newton = step is None and not records.lazy
    converged, gnorm, last = False, np.inf, None
    for n_iter in range(max_iter + 1):
        g, far, hess = _karcher_pass(manifold, records, mu, newton)
        if n_iter == 0:  # the spread is read off the first pass
            spread = far
            safe = 1.0 / hessian_upper_bound(2.0 * spread, manifold.curvature_bounds[0])
            threshold = tol * max(spread, 1.0)
        gnorm = float(manifold.norm(mu, g))
        if last is not None and gnorm >= last[2]:  # the Newton step failed: back, and Karcher from there
            mu, g, gnorm = last
            newton, hess = False, None
        if gnorm <= threshold:
            converged = True
            break
        if n_iter == max_iter:
            break
        last = None
        if newton and hess is not None:
            last = (mu, g, gnorm)
            mu = manifold.exp(mu, _newton_direction(manifold, mu, hess, g, gnorm))
        else:
            mu = manifold.exp(mu, (safe if step is None else step) * g)
    return mu, n_iter, converged, gnorm


def _newton_direction(manifold: Manifold, mu: Array, hess: Callable[[Array], Any], g: Array, gnorm: float,
                      max_iter: int = 50) -> Array:
    """Conjugate gradients for ``Hess F(μ)[d] = Σ w_i log_μ x_i`` (``= −∇F``) in ``μ``'s inner
    product, to the relative residual ``min(0.1, √‖∇F‖)`` (inexact Newton: superlinear)."""
    inner: Callable[[Array, Array], float] = lambda a, b: float(manifold.inner(mu, a, b))
    target = min(0.1, gnorm) * gnorm
    d, r = np.zeros_like(g), g.copy()
    p, rr = r.copy(), inner(r, r)
    for _ in range(max_iter):
        if np.sqrt(rr) <= target:
            break
        hp = hess(p)
        curvature = inner(p, hp)
        if not curvature > 0:
            break
        a = rr / curvature
        d, r = d + a * p, r - a * hp
        rr, previous = inner(r, r), rr
        p = r + (rr / previous) * p
    return d if np.any(d) else g


# -- the mean a private release uses: public step, public iteration count ----------------------

def hessian_upper_bound(distance: float, kappa_min: float) -> float:
    """Upper bound on the Hessian of ``½ρ²(·, p)`` at distance ``≤ distance`` from ``p`` when the
    sectional curvature is ``≥ kappa_min``: ``D√|κ| coth(D√|κ|)`` for ``κ < 0``, else 1 (Hessian
    comparison; for ``κ ≥ 0`` it holds below the conjugate radius ``π/√κ``)."""
    if kappa_min >= 0:
        return 1.0
    a = distance * np.sqrt(-kappa_min)
    return float(a / np.tanh(a)) if a > 1e-8 else 1.0


def gradient_step_bound(radius: float, kappa_min: float) -> float:
    """The Hessian bound ``H`` of the certified mean's gradient steps on ``B_r(c)``: ``H ≥ 1`` with
    ``H ≥ hessian_upper_bound(2r(1 + 1/H), κmin)``, near the smallest such value. A step from a point
    of the ball has length ``‖∇F‖/H ≤ 2r/H``, so along it every record is within ``2r(1 + 1/H)``;
    the right side decreases in ``H``, so every ``H`` above its fixed point qualifies. ``H = 1``
    gives the bound at ``4r``, valid by the same argument; bisection (60 halvings, each value
    checked with a relative margin of ``10⁻¹²`` for rounding) moves down to the fixed point."""
    def bound(H: float) -> float:
        return hessian_upper_bound(2.0 * radius * (1.0 + 1.0 / H), kappa_min)
    hi = bound(1.0)
    if kappa_min >= 0 or hi <= 1.0:
        return hi
    lo = 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if mid >= bound(mid) * (1.0 + 1e-12) else (mid, hi)
    return hi


def certified_iterations(h: float, H: float, radius: float, accuracy: float) -> int:
    """Steps of ``certified_frechet_mean`` after which ``ρ(μ_K, x̄) ≤ accuracy`` is guaranteed:
    the smallest ``K`` with ``(1 − h/H)^K r²/h ≤ accuracy²``. Public: a function of ``h, H, r``."""
    if h >= H:
        return 1
    need = np.log(h * accuracy**2 / radius**2)
    return max(1, int(np.ceil(need / np.log1p(-h / H))))


MAX_CERTIFIED_ITERATIONS = 200_000
NEWTON_CAP = 64  # Newton steps a schedule may take (quadratic convergence needs a handful)
# The cheapest-run search (``_NewtonPlanner.plan``, over every start of one schedule) is exact until it has weighed
# PLAN_WORK steps; past that (affine-invariant SPD(28) near r = 1.75 at n = 86, SPD(16) near r = 1.2 at n = 100: tens
# of millions, minutes) it keeps PLAN_BEAM runs per step, spread along the frontier. Public values only: the run found
# is certified either way, perhaps not the cheapest.
PLAN_WORK = 1_000_000
PLAN_BEAM = 64


@dataclass(frozen=True)
class CertifiedSchedule:
    """How ``certified_frechet_mean`` reaches its accuracy, fixed from public values only: from
    ``start`` — the public centre (``"center"``), the projected extrinsic mean (``"extrinsic"``)
    or the tangent step ``exp_c((1/n) Σ log_c x_i)`` (``"tangent"``) — ``gradient_steps``
    projected gradient steps, then ``newton_steps`` projected Newton steps; ``orders``: the
    pass each Newton step takes (``NewtonConstants.cheaper``: the Hessian's truncation on SPD, the
    power series' degree on the sphere, ``None`` the exact pass; empty: the space's own)."""

    start: str
    gradient_steps: int
    newton_steps: int
    h: float
    H: float
    L: float | None = None
    orders: tuple[Any, ...] = ()

    @property
    def passes(self) -> int:
        return self.gradient_steps + self.newton_steps

    def describe(self, accuracy: float) -> str:
        if not self.passes and self.start == "center":
            return (f"the public centre itself: the exact minimiser lies in the ball, within the radius ≤ {accuracy:.3g} "
                    "of it; twice that is included in the sensitivity")
        if not self.passes:  # the start's own bound is within the accuracy
            what = {"extrinsic": "the projected extrinsic mean", "tangent": "the tangent step from the centre"}[self.start]
            return (f"{what}, within {accuracy:.3g} of the exact minimiser by its public bound (docs/theory.md §2); "
                    "twice that is included in the sensitivity")
        if not self.newton_steps:
            return (f"mean within {accuracy:.3g} of the exact minimiser after a fixed {self.gradient_steps} projected "
                    "gradient steps (strong convexity and smoothness on the ball); twice that is included in the "
                    "sensitivity")
        first = {"extrinsic": "from the extrinsic mean", "tangent": "after the tangent step from the centre",
                 "center": f"after {self.gradient_steps} projected gradient steps from the centre"}[self.start]
        orders = f", Hessians of order {'/'.join(_pass_name(o) for o in self.orders)}" \
            if self.orders else ""
        return (f"mean within {accuracy:.3g} of the exact minimiser after a fixed {self.newton_steps} projected Newton "
                f"steps {first} (h = {self.h:.3g}, Hessian Lipschitz bound L = {self.L:.3g}{orders}; docs/theory.md §2); "
                "twice that is included in the sensitivity")


def _pass_name(order: Any) -> str:
    """A Newton pass as the certificate names it: ``exact``, the order, or the order and the
    tolerance of its logarithms (``(order, tol)``: affine-invariant SPD's coarser series), and the
    Chebyshev steps of its solve (``(order, tol, steps, ratio)``: affine-invariant SPD at large
    ``k``; ``tol`` ``None`` where the logs come from ``eigh``)."""
    if order is None:
        return "exact"
    if isinstance(order, tuple) and len(order) == 4:
        logs = "" if order[1] is None else f"logs to {order[1]:.1e}, "
        return f"{order[0]} ({logs}{order[2]} Chebyshev steps)"
    if isinstance(order, tuple):
        return f"{order[0]} (logs to {order[1]:.1e})"
    return str(order)


def _expansion(T: float, k: float) -> float:
    """``sinh(√k T)/(√k T)``: how much ``exp_μ`` can stretch a segment within ``T`` of 0 when the
    curvature is ``≥ −k`` (Rauch); 1 when ``k = 0`` (the sphere's ``exp`` is 1-Lipschitz).
    Python floats: the schedule's search calls it thousands of times."""
    if k == 0:
        return 1.0
    a = math.sqrt(k) * T
    if not a < 700.0:  # sinh overflows: no useful bound
        return math.inf
    return math.sinh(a) / a if a > 1e-8 else 1.0


def _newton_bound(d: float, c: NewtonConstants, h: float, e: float, g: float | None = None, solve: float = 0.0) -> float:
    """The distance bound after one projected Newton step from ``d`` (``NewtonConstants``; ``e``,
    ``g`` and ``solve`` the errors of the pass taken, ``g`` by default the space's, ``solve`` the
    relative error of its linear solve: ``δ + ε(d + δ)``, as the exact solution is within ``d + δ``
    of 0)."""
    d, h, e = float(d), float(h), float(e)
    if not h > e:
        return math.inf
    delta = (0.5 * float(c.L) * d * d + e * d + float(c.g if g is None else g)) / (h - e)
    if solve:
        delta += float(solve) * (d + delta)
    return _expansion(d + delta, float(c.expansion)) * delta


def _newton_steps(d: float, c: NewtonConstants, h: float, accuracy: float) -> int | None:
    """Newton steps from the bound ``d`` until the bound is ``≤ accuracy`` (``None``: it does not
    contract from ``d``)."""
    for k in range(1, NEWTON_CAP + 1):
        following = _newton_bound(d, c, h, c.e, None, c.solve)
        if not following < d:
            return None
        d = following
        if d <= accuracy:
            return k
    return None


class _NewtonPlanner:
    """The cheapest run of Newton steps from a bound ``d`` to ``accuracy`` (``plan``), for one
    space's constants; public values only. A run is ``(cost, orders)``, ``orders`` the pass of
    each step — cheaper ones (``c.cheaper``) first, the space's own (``c.order``) last."""

    def __init__(self, c: NewtonConstants, h: float, accuracy: float) -> None:
        self.c, self.h, self.accuracy = c, h, accuracy
        self.levels = c.passes()
        self.cheapest: float = min(level[2] for level in self.levels)
        self._fewest: dict[float, int] = {}
        # the bound grows with e, g and solve: the smallest bound of any pass is that of a pass no other beats in all three
        errors = [level[1:2] + level[3:5] for level in self.levels]
        self.sharpest = [errors[i] for i in range(len(errors))
                         if not any(other != errors[i] and all(a <= b for a, b in zip(other, errors[i])) for other in errors)]
        # passes with inexact solves (SPD at large k: orders × log series × Chebyshev steps, a hundred of them) may
        # come in any order: a run is then dropped by bound and cost alone, which keeps the search to a second or less
        self.monotone = not any(level[4] for level in self.levels)
        self.work = 0  # runs times passes weighed by every ``plan`` so far (PLAN_WORK)

    def fewest(self, d: float) -> int:
        """A lower bound on the steps any run needs from ``d``: every step taking the smallest
        bound of any pass (the bound grows with ``d``, so no run is ahead of it after any step)."""
        key, k = d, 0
        if key not in self._fewest:
            while d > self.accuracy and k <= NEWTON_CAP:
                d, k = min(_newton_bound(d, self.c, self.h, e, g, solve) for e, g, solve in self.sharpest), k + 1
            self._fewest[key] = k
        return self._fewest[key]

    def plan(self, d: float, budget: float = np.inf) -> tuple[float, tuple[Any, ...]] | None:
        """The cheapest run from ``d`` costing at most ``budget`` (ties: the smallest sequence of
        passes), or ``None``. Step by step over the runs still open, each one dropped when another
        open run of as many steps is at least as far along (bound ``≤``, pass index ``≤``, cost and
        sequence ``≤``: whatever finishes the one finishes the other, no dearer — the bound grows
        with ``d``; a step that does not contract is never part of a cheapest run, so leaving them
        out loses nothing), or when its cost plus ``fewest`` steps at the cheapest pass's cost
        exceeds the best run found. Where a pass has an inexact solve (``monotone`` false) the
        passes may come in any order and a run is dropped by bound and cost alone. After
        ``PLAN_WORK`` steps weighed by this planner's searches, ``PLAN_BEAM`` runs per step (evenly
        along the frontier). Public values only."""
        if d <= self.accuracy:
            return 0.0, ()
        best: tuple[float, tuple[int, ...]] | None
        levels, best = self.levels, None
        open_runs: list[tuple[float, int, float, tuple[int, ...]]] = [(d, 0, 0.0, ())]
        for _ in range(NEWTON_CAP):
            following: list[tuple[float, int, float, tuple[int, ...]]] = []
            for d, start, cost, seq in open_runs:
                for j in range(start if self.monotone else 0, len(levels)):  # monotone: the index never decreases
                    _, e, step_cost, g, solve = levels[j]
                    after, total = _newton_bound(d, self.c, self.h, e, g, solve), cost + step_cost
                    limit = budget if best is None else best[0]
                    if not after < d or total > limit:
                        continue
                    if after <= self.accuracy:
                        if best is None or (total, seq + (j,)) < best:
                            best = (total, seq + (j,))
                    elif not self.monotone or total + self.fewest(after) * self.cheapest <= limit:
                        following.append((after, j, total, seq + (j,)))
            following.sort(key=lambda run: (run[2], run[3]))
            open_runs = []
            if self.monotone:
                for run in following:
                    if not any(o[0] <= run[0] and o[1] <= run[1] for o in open_runs):
                        open_runs.append(run)
            else:  # by cost: a run is kept when its bound is below every cheaper one's, then if it can still win
                lowest, limit = math.inf, budget if best is None else best[0]
                for run in following:
                    if run[0] < lowest:
                        lowest = run[0]
                        if run[2] + self.fewest(run[0]) * self.cheapest <= limit:
                            open_runs.append(run)
            self.work += len(open_runs) * len(levels)
            if self.work > PLAN_WORK and len(open_runs) > PLAN_BEAM:  # a long search: PLAN_BEAM runs along the frontier
                keep = np.unique(np.linspace(0, len(open_runs) - 1, PLAN_BEAM).round().astype(int))
                open_runs = [open_runs[i] for i in keep]
            if not open_runs:
                break
        if best is None:
            return None
        return best[0], tuple(levels[j][0] for j in best[1])


def certified_schedule(manifold: Manifold, radius: float, accuracy: float, n: int) -> CertifiedSchedule:
    """The cheapest public schedule of ``certified_frechet_mean`` that guarantees
    ``ρ(μ, x̄) ≤ accuracy`` for every dataset of ``n`` records in a ball of radius ``radius``.

    An accuracy ``≥ r`` needs no pass: the minimiser lies in the (convex) ball, within ``r`` of the
    centre.
    Gradient steps: ``ρ²(μ_K, x̄) ≤ (1 − h/H)^K r²/h`` (the docstring of
    ``certified_frechet_mean``). Newton steps, where the space gives public constants
    (``manifold.newton_constants``): ``d ← E(d + δ)·δ``, ``δ = (L d²/2 + e d + g)/(h − e)`` per step
    (docs/theory.md §2), from the extrinsic start's bound, the tangent step's bound (a Newton step
    with ``Ĥ = I``) or the gradient steps' bound."""
    return _certified_schedule(manifold, float(radius), float(accuracy), int(n))


@lru_cache(maxsize=256)
def _certified_schedule(manifold: Manifold, radius: float, accuracy: float, n: int) -> CertifiedSchedule:
    start, gradient_steps, newton_steps, h, H, L, orders = _schedule_fields(manifold, radius, accuracy, n)
    return CertifiedSchedule(start, gradient_steps, newton_steps, h, H, L, orders)


def _is_schedule(value: Any) -> bool:
    """The form of ``_schedule_fields``' value (a file holding anything else is ignored)."""
    return (type(value) is tuple and len(value) == 7 and type(value[0]) is str and type(value[1]) is int
            and type(value[2]) is int and type(value[3]) is float and type(value[4]) is float
            and (value[5] is None or type(value[5]) is float) and type(value[6]) is tuple
            and all(o is None or type(o) in (int, float, tuple) for o in value[6]))


@disk_cached("certified_schedule", _is_schedule)
def _schedule_fields(manifold: Manifold, radius: float, accuracy: float, n: int) -> tuple[Any, ...]:
    """``certified_schedule``'s fields, kept in the disk cache (``manifold_dp._disk_cache``): the
    search for the cheapest run is pure Python, about 2 ms per radius on SPD."""
    return dataclasses.astuple(_search_schedule(manifold, radius, accuracy, n))


def _search_schedule(manifold: Manifold, radius: float, accuracy: float, n: int) -> CertifiedSchedule:
    kmin, kmax = manifold.curvature_bounds
    h = hessian_lower_bound(radius, kmax)
    H = gradient_step_bound(radius, kmin)
    K = 0 if accuracy >= radius else certified_iterations(h, H, radius, accuracy)
    best, best_cost = CertifiedSchedule("center", K, 0, h, H), float(K)
    c = None if manifold.flat_chart else manifold.newton_constants(radius, n)
    if c is None:
        return best
    options = [("center", k, radius if k == 0 else min(2.0 * radius, float(np.sqrt((1.0 - h / H) ** k * radius**2 / h))))
               for k in range(0, min(K, MAX_CERTIFIED_ITERATIONS))]
    if c.extrinsic is not None:
        options.append(("extrinsic", 0, min(c.extrinsic, radius)))
    if c.tangent is not None:  # the tangent step: a Newton step with Ĥ = I from the centre (‖Ĥ⁻¹‖ = 1)
        options.append(("tangent", 0, min(_newton_bound(radius, c, 1.0, c.tangent), 2.0 * radius)))
    # the free starts first: their cost bounds the runs after k gradient steps, cut once k alone is dearer
    plans: dict[int, Any]
    planner, plans, bound = _NewtonPlanner(c, h, accuracy), {}, best_cost
    for i in sorted(range(len(options)), key=lambda i: (options[i][0] == "center", options[i][1])):
        start, k, d = options[i]
        if k > bound:  # k = bound still ties when the k steps alone reach the accuracy
            break
        plans[i] = planner.plan(d, bound - k)
        if plans[i] is not None:
            bound = min(bound, k + plans[i][0])
    for i, (start, k, _d) in enumerate(options):  # the first cheapest, in the options' order
        plan = plans.get(i)
        if plan is not None and k + plan[0] < best_cost:
            orders = plan[1] if any(o != c.order for o in plan[1]) else ()
            best, best_cost = CertifiedSchedule(start, k, len(plan[1]), h, H, c.L, orders), k + plan[0]
    return best


@blas_limited
def certified_frechet_mean(manifold: Manifold, X: Any, center: ArrayLike, radius: float, accuracy: float) -> Array:
    """The Fréchet mean of records in ``B_r(center)`` within ``accuracy`` of the exact minimiser,
    by a number of steps fixed in advance from public quantities (``certified_schedule``;
    docs/theory.md §2: no data-dependent loop exit, no data-dependent refusal, running time
    independent of the data).

    Projected gradient descent from the public ``center``:
    ``μ ← P(exp_μ(−∇F(μ)/H))``, ``P`` the metric projection onto ``B_r(center)`` (``clip_to_ball``).

    Theorem (ours; the standard descent-lemma argument). Let ``h = h(r, κmax)`` (strong convexity
    of ``F`` on the ball, 2021 Thm 2) and ``H`` the Hessian bound of ``½ρ²`` at distance
    ``2r(1 + 1/H)`` (``gradient_step_bound``). (i) An iterate lies in the ball; the step has length
    ``‖∇F‖/H ≤ 2r/H``, so along it every record is within ``2r(1 + 1/H)`` and ``Hess F ≤ H``: the descent
    lemma gives ``F(y) ≤ F(μ) − ‖∇F(μ)‖²/(2H)``. (ii) ``P`` does not increase the distance to any
    point of the ball (the hinge at ``P(y)`` has an angle ``≥ π/2``; comparison with the model
    space of curvature ``κmax`` for sides ``< π/(2√κmax)``, true as ``2r < 2r*``), so
    ``F(P(y)) ≤ F(y)``. (iii) Strong convexity on the ball gives ``‖∇F‖² ≥ 2h(F − F*)`` and
    ``F − F* ≥ (h/2)ρ²(μ, x̄)``. With ``F(center) − F* ≤ r²/2``:
    ``ρ²(μ_K, x̄) ≤ (1 − h/H)^K r²/h``; ``certified_iterations`` picks ``K``. On flat spaces with
    a closed form (Euclidean, log-Euclidean) that is used instead. ``4r < π/√κmax`` keeps every
    distance below the cut locus (``r < r* ≤ π/(4√κmax)``).

    Projected Newton steps ``μ ← P(exp_μ(s))``, ``Hess F(μ)[s] = −∇F(μ)``, where the space gives
    a public bound ``L`` on the Lipschitz constant of ``Hess F`` (the sphere): with
    ``d = ρ(μ, x̄)``, ``ρ(μ⁺, x̄) ≤ (L d/2 + e) d/(h − e)`` (docs/theory.md §2), so a public number
    of them reaches the accuracy from the extrinsic mean (or after some gradient steps).
    """
    # a release's prepared records carry (1/n) Σ log_center(x_i) from their clipping: the first step's
    # gradient, and the whole answer on a flat chart (in memory, or on Dask from the first pass over the blocks)
    prepared = isinstance(X, (PreparedRecords, PreparedBlocks))
    first = X.log_mean_at(center) if prepared else None
    if manifold.flat_chart and first is not None:  # prepared without their records (keep=False) too
        return manifold.exp(center, first)
    records = X if isinstance(X, Records) else Records(X, manifold)
    if manifold.flat_chart:
        return _start(manifold, records)
    plan = certified_schedule(manifold, radius, accuracy, records.n)
    if plan.passes > MAX_CERTIFIED_ITERATIONS:
        raise ValueError(
            f"certifying the Fréchet mean to {accuracy:.3g} at radius={radius!r} on {manifold!r} needs {plan.passes} "
            f"gradient steps (h = {plan.h:.3g}, H = {plan.H:.3g}); use a smaller radius")
    mu = np.asarray(center, dtype=manifold.dtype)
    if plan.start == "extrinsic":  # in the ball: the projected mean of records in a cap of radius < π/2
        # Σ w_i (x_i − c) from the preparation (prepared around this centre), else a pass; then c + that, once
        same = prepared and X.start_stats is not None and X.center.shape == np.shape(center) \
            and np.array_equal(X.center, center)
        stats = X.start_stats if same else sum(records.map(_blk_centred_stats, manifold, mu))
        mu = manifold.clip_to_ball(manifold.mean_start(mu + stats), center, radius)  # the clip: a no-op but for rounding
    elif plan.start == "tangent":  # a Newton step with Ĥ = I from the centre
        g = first if first is not None else sum(records.map(_blk_log_sum, manifold, mu))
        mu = manifold.clip_to_ball(manifold.exp(mu, g), center, radius)
    for step in range(plan.gradient_steps):
        g = first if step == 0 and plan.start == "center" and first is not None else \
            sum(records.map(_blk_log_sum, manifold, mu))  # −∇F(μ)
        mu = manifold.clip_to_ball(manifold.exp(mu, g / plan.H), center, radius)
    for step in range(plan.newton_steps):
        # records prepared for this ball and the projected iterate lie in it: newton_terms may rely on it
        parts = records.map(_blk_newton, manifold, mu, radius if prepared and X.in_ball(center, radius) else None,
                            plan.orders[step] if plan.orders else None)
        g, A = sum(p[0] for p in parts), sum(p[1] for p in parts)
        mu = manifold.clip_to_ball(manifold.exp(mu, manifold.newton_step(mu, g, A)), center, radius)
        del parts, A  # a pass's terms may hold the records' logs (SPD at large k): not two passes' at once
    return mu


def hessian_lower_bound(radius: float, kappa_max: float) -> float:
    """``h(r, κ) = 2r√κ·cot(2r√κ)`` for ``κ > 0``, else 1: strong convexity of ``F`` on a ball of
    radius ``r`` holding the records (2021 Thm 2; 2022 eq. (1))."""
    if kappa_max <= 0:
        return 1.0
    a = 2.0 * radius * np.sqrt(kappa_max)
    return float(a / np.tan(a))
