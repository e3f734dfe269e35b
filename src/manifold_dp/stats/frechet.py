"""The Fréchet (Karcher) mean ``argmin_x (1/2n) Σ ρ²(x, x_i)``, to a certified accuracy.

The privacy guarantees of ``manifold_dp.privacy`` hold for the exact minimiser, so the default
tolerance is tight (‖∇F‖ ≤ 1e-10 × the data's spread), not geomstats' loose default
(docs/theory.md §2).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from numpy.typing import ArrayLike

from .._threads import blas_limit, blas_limited
from ..manifolds.base import Manifold, check_order
from ..records import Records, block_weights
from .enclosing import enclosing_radius

__all__ = ["FrechetMeanResult", "CurvatureAssumptionError", "PreparedRecords", "riemannian_gradient",
           "mean_squared_distance", "gradient_norm", "enclosing_radius", "frechet_mean", "hessian_upper_bound",
           "certified_iterations", "certified_frechet_mean", "hessian_lower_bound"]

GRADIENT_BLOCK = 1 << 16  # entries of the (points × records) table of logs riemannian_gradient holds at once ...
GRADIENT_MIN_RECORDS = 16  # ... but at least this many records per block (per-point work is redone per block)


@dataclass(frozen=True)
class FrechetMeanResult:
    """``point``: the mean; ``grad_norm``: ‖∇F(point)‖; ``converged``: whether ``tol`` was met."""

    point: np.ndarray
    n_iter: int
    converged: bool
    grad_norm: float


class CurvatureAssumptionError(ValueError):
    """The data do not lie in a ball small enough for the Fréchet mean to be unique."""


class PreparedRecords(np.ndarray):
    """Records a release prepared (``privacy.release.prepare_records``: sanitised and clipped into
    ``B_r(center)``), carrying ``log_mean = (1/n) Σ log_center(x_i)``, which the clipping's own
    decompositions gave: the certified mean's first gradient, and its closed form on a flat chart
    (``exp_center(log_mean)``). Views, slices and copies are plain records again
    (``log_mean = None``)."""

    def __new__(cls, records, center, log_mean):
        out = np.asarray(records).view(cls)
        out.center, out.log_mean = np.asarray(center), log_mean
        return out

    def __array_finalize__(self, obj):
        self.center, self.log_mean = None, None

    def log_mean_at(self, center):
        """``log_mean`` when it was computed at ``center``, else ``None``."""
        if self.log_mean is None or self.center.shape != np.shape(center) or not np.array_equal(self.center, center):
            return None
        return self.log_mean


def riemannian_gradient(manifold, x, X, weights=None):
    """``∇F(x) = −Σ w_i log_x(x_i)`` (weights summing to 1), for one or a batch of ``x``.

    ``x`` has shape ``(..., *point_shape)``; the result has the same shape.
    """
    X = np.asarray(X)
    w = np.full(X.shape[0], 1.0 / X.shape[0]) if weights is None else np.asarray(weights, float) / np.sum(weights)
    x = np.asarray(x)
    nb = x.ndim - len(manifold.point_shape)
    if nb == 0:
        return -manifold.weighted_log_sum(x, X, w)
    # a batch of points (KNG's proposals): the (points × records) table of logs, a block of records at a time
    points = int(np.prod(x.shape[:nb]))
    step = max(GRADIENT_MIN_RECORDS, GRADIENT_BLOCK // max(points * int(np.prod(manifold.point_shape)), 1))
    out = 0.0
    for i in range(0, X.shape[0], step):
        logs = manifold.log(np.expand_dims(x, nb), X[i:i + step])  # (..., block, *point_shape)
        out = out - np.tensordot(logs, w[i:i + step], axes=([nb], [0]))
    return out


# -- block functions: pure, module level (they travel to Dask workers) ------------------------

def _blk_log_sum(block, w, n, manifold, x):
    return manifold.weighted_log_sum(x, np.asarray(block), block_weights(block, w, n))


def _blk_karcher(block, w, n, manifold, x, hessian):
    return manifold.karcher_terms(x, np.asarray(block), block_weights(block, w, n), hessian)


def _blk_check_start(block, w, n, manifold, start):
    """The plain mean's first pass: the point check, and the start's partial sums when wanted."""
    if start:
        return manifold.checked_start_stats(np.asarray(block), block_weights(block, w, n))
    return manifold.check_point(np.asarray(block)), None


def _blk_init_stats(block, w, n, manifold):
    """Partial sums for the starting point (the closed form on a flat chart)."""
    return manifold.mean_start_stats(np.asarray(block), block_weights(block, w, n))


def _start(manifold, records):
    """The mean's starting point: extrinsic, Procrustes or log-Euclidean (``manifold.mean_start``);
    the exact mean when the manifold has a flat chart (Euclidean, log-Euclidean)."""
    return manifold.mean_start(sum(records.map(_blk_init_stats, manifold)))


def _blk_sq_dist_sum(block, w, n, manifold, x):
    return float(np.dot(block_weights(block, w, n), manifold.dist(x, np.asarray(block)) ** 2))


@blas_limited
def mean_squared_distance(manifold, X, x):
    """``(1/n) Σ ρ²(x, x_i)``: the Fréchet variance when ``x`` is the mean (one map-reduce)."""
    records = X if isinstance(X, Records) else Records(X, manifold)
    return float(sum(records.map(_blk_sq_dist_sum, manifold, x)))


@blas_limited
def gradient_norm(manifold, x, X):
    """``‖∇F(x)‖`` for records in memory or in a Dask array (one map-reduce)."""
    records = X if isinstance(X, Records) else Records(X, manifold)
    return float(manifold.norm(x, sum(records.map(_blk_log_sum, manifold, x))))


def frechet_mean(X: ArrayLike, manifold: Manifold, *, weights: ArrayLike | None = None, init: ArrayLike | None = None,
                 step: float | None = None, tol: float = 1e-10, max_iter: int = 1000, check_assumption: bool = True) -> FrechetMeanResult:
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
        The records, shape ``(n, *point_shape)`` (a numpy array, a memmap or a Dask array).
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
    >>> X = np.array([[np.sin(a), 0, np.cos(a)], [-np.sin(a), 0, np.cos(a)], [0, np.sin(a), np.cos(a)], [0, -np.sin(a), np.cos(a)]])
    >>> result = frechet_mean(X, S2)
    >>> np.round(result.point, 8) + 0.0, result.converged
    (array([0., 0., 1.]), True)
    """
    check_order(X, manifold, "frechet_mean")
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
        if check_assumption and manifold.curvature_bounds[1] > 0:
            if enclosing_radius(manifold, records, mu, enough=manifold.assumption_radius) >= manifold.assumption_radius:
                raise CurvatureAssumptionError(
                    f"the records do not lie within r* = {manifold.assumption_radius:.6g} of their mean on {manifold!r}: "
                    "the Fréchet mean may not be unique (docs/theory.md §3, Assumption 1); pass check_assumption=False "
                    "to skip")
    return FrechetMeanResult(mu, n_iter, converged, gnorm)


def _karcher_pass(manifold, records, x, hessian):
    """``(Σ w_i log_x x_i, max_i ρ(x, x_i), Hessian map or None)`` over all blocks: one pass."""
    parts = records.map(_blk_karcher, manifold, x, hessian)
    maps = [h for _, _, h in parts if h is not None]
    apply = (lambda v: sum(h(v) for h in maps)) if hessian and len(maps) == len(parts) else None
    return sum(g for g, _, _ in parts), max(far for _, far, _ in parts), apply


def _karcher(manifold, records, mu, step, tol, max_iter):
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


def _newton_direction(manifold, mu, hess, g, gnorm, max_iter=50):
    """Conjugate gradients for ``Hess F(μ)[d] = Σ w_i log_μ x_i`` (``= −∇F``) in ``μ``'s inner
    product, to the relative residual ``min(0.1, √‖∇F‖)`` (inexact Newton: superlinear)."""
    inner = lambda a, b: float(manifold.inner(mu, a, b))
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

def hessian_upper_bound(distance, kappa_min):
    """Upper bound on the Hessian of ``½ρ²(·, p)`` at distance ``≤ distance`` from ``p`` when the
    sectional curvature is ``≥ kappa_min``: ``D√|κ| coth(D√|κ|)`` for ``κ < 0``, else 1 (Hessian
    comparison; for ``κ ≥ 0`` it holds below the conjugate radius ``π/√κ``)."""
    if kappa_min >= 0:
        return 1.0
    a = distance * np.sqrt(-kappa_min)
    return float(a / np.tanh(a)) if a > 1e-8 else 1.0


def certified_iterations(h, H, radius, accuracy):
    """Steps of ``certified_frechet_mean`` after which ``ρ(μ_K, x̄) ≤ accuracy`` is guaranteed:
    the smallest ``K`` with ``(1 − h/H)^K r²/h ≤ accuracy²``. Public: a function of ``h, H, r``."""
    if h >= H:
        return 1
    need = np.log(h * accuracy**2 / radius**2)
    return max(1, int(np.ceil(need / np.log1p(-h / H))))


MAX_CERTIFIED_ITERATIONS = 200_000


@blas_limited
def certified_frechet_mean(manifold, X, center, radius, accuracy):
    """The Fréchet mean of records in ``B_r(center)`` within ``accuracy`` of the exact minimiser,
    by a number of steps fixed in advance from public quantities (docs/theory.md §2: no
    data-dependent loop exit, no data-dependent refusal, running time independent of the data).

    Projected gradient descent from the public ``center``:
    ``μ ← P(exp_μ(−∇F(μ)/H))``, ``P`` the metric projection onto ``B_r(center)`` (``clip_to_ball``).

    Theorem (ours; the standard descent-lemma argument). Let ``h = h(r, κmax)`` (strong convexity
    of ``F`` on the ball, 2021 Thm 2) and ``H`` the Hessian bound of ``½ρ²`` at distance ``4r``
    (``hessian_upper_bound``). (i) An iterate lies in the ball; the step has length
    ``‖∇F‖/H ≤ 2r``, so along it every record is within ``4r`` and ``Hess F ≤ H``: the descent
    lemma gives ``F(y) ≤ F(μ) − ‖∇F(μ)‖²/(2H)``. (ii) ``P`` does not increase the distance to any
    point of the ball (the hinge at ``P(y)`` has an angle ``≥ π/2``; comparison with the model
    space of curvature ``κmax`` for sides ``< π/(2√κmax)``, true as ``2r < 2r*``), so
    ``F(P(y)) ≤ F(y)``. (iii) Strong convexity on the ball gives ``‖∇F‖² ≥ 2h(F − F*)`` and
    ``F − F* ≥ (h/2)ρ²(μ, x̄)``. With ``F(center) − F* ≤ r²/2``:
    ``ρ²(μ_K, x̄) ≤ (1 − h/H)^K r²/h``; ``certified_iterations`` picks ``K``. On flat spaces with
    a closed form (Euclidean, log-Euclidean) that is used instead. ``4r < π/√κmax`` keeps every
    distance below the cut locus (``r < r* ≤ π/(4√κmax)``).
    """
    # a release's prepared records carry (1/n) Σ log_center(x_i) from their clipping: the first step's
    # gradient, and the whole answer on a flat chart
    first = X.log_mean_at(center) if isinstance(X, PreparedRecords) else None
    records = X if isinstance(X, Records) else Records(X, manifold)
    if manifold.flat_chart:
        return manifold.exp(center, first) if first is not None else _start(manifold, records)
    kmin, kmax = manifold.curvature_bounds
    h = hessian_lower_bound(radius, kmax)
    H = hessian_upper_bound(4.0 * radius, kmin)
    steps = certified_iterations(h, H, radius, accuracy)
    if steps > MAX_CERTIFIED_ITERATIONS:
        raise ValueError(
            f"certifying the Fréchet mean to {accuracy:.3g} at radius={radius!r} on {manifold!r} needs {steps} "
            f"gradient steps (h = {h:.3g}, H = {H:.3g}); use a smaller radius")
    mu = np.asarray(center, dtype=manifold.dtype)
    for step in range(steps):
        g = first if step == 0 and first is not None else sum(records.map(_blk_log_sum, manifold, mu))  # −∇F(μ)
        mu = manifold.clip_to_ball(manifold.exp(mu, g / H), center, radius)
    return mu


def hessian_lower_bound(radius, kappa_max):
    """``h(r, κ) = 2r√κ·cot(2r√κ)`` for ``κ > 0``, else 1: strong convexity of ``F`` on a ball of
    radius ``r`` holding the records (2021 Thm 2; 2022 eq. (1))."""
    if kappa_max <= 0:
        return 1.0
    a = 2.0 * radius * np.sqrt(kappa_max)
    return float(a / np.tan(a))
