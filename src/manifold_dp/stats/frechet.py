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

from ..manifolds.base import Manifold, check_order
from ..records import Records, block_weights

__all__ = ["FrechetMeanResult", "CurvatureAssumptionError", "riemannian_gradient", "mean_squared_distance",
           "gradient_norm", "enclosing_radius", "frechet_mean", "hessian_upper_bound",
           "certified_iterations", "certified_frechet_mean", "hessian_lower_bound"]


@dataclass(frozen=True)
class FrechetMeanResult:
    """``point``: the mean; ``grad_norm``: ‖∇F(point)‖; ``converged``: whether ``tol`` was met."""

    point: np.ndarray
    n_iter: int
    converged: bool
    grad_norm: float


class CurvatureAssumptionError(ValueError):
    """The data do not lie in a ball small enough for the Fréchet mean to be unique."""


def _weighted_sum(w, v):
    return np.tensordot(w, v, axes=(0, 0))


def riemannian_gradient(manifold, x, X, weights=None):
    """``∇F(x) = −Σ w_i log_x(x_i)`` (weights summing to 1), for one or a batch of ``x``.

    ``x`` has shape ``(..., *point_shape)``; the result has the same shape.
    """
    X = np.asarray(X)
    w = np.full(X.shape[0], 1.0 / X.shape[0]) if weights is None else np.asarray(weights, float) / np.sum(weights)
    x = np.asarray(x)
    nb = x.ndim - len(manifold.point_shape)
    logs = manifold.log(np.expand_dims(x, nb), X)  # (..., n, *point_shape)
    return -np.tensordot(logs, w, axes=([nb], [0]))


# -- block functions: pure, module level (they travel to Dask workers) ------------------------

def _blk_check(block, w, n, manifold):
    return manifold.check_point(np.asarray(block))


def _blk_log_sum(block, w, n, manifold, x):
    return _weighted_sum(block_weights(block, w, n), manifold.log(x, np.asarray(block)))


def _blk_farthest(block, w, n, manifold, x):
    d = manifold.dist(x, np.asarray(block))
    i = int(np.argmax(d))
    return float(d[i]), np.array(np.asarray(block)[i])  # a copy: a view would keep the whole block alive


def _blk_init_stats(block, w, n, manifold):
    """Partial sums for the starting point (the closed form on a flat chart)."""
    return manifold.mean_start_stats(np.asarray(block), block_weights(block, w, n))


def _start(manifold, records):
    """The mean's starting point: extrinsic, Procrustes or log-Euclidean (``manifold.mean_start``);
    the exact mean when the manifold has a flat chart (Euclidean, log-Euclidean)."""
    return manifold.mean_start(sum(records.map(_blk_init_stats, manifold)))


def _blk_sq_dist_sum(block, w, n, manifold, x):
    return float(np.dot(block_weights(block, w, n), manifold.dist(x, np.asarray(block)) ** 2))


def mean_squared_distance(manifold, X, x):
    """``(1/n) Σ ρ²(x, x_i)``: the Fréchet variance when ``x`` is the mean (one map-reduce)."""
    records = X if isinstance(X, Records) else Records(X, manifold)
    return float(sum(records.map(_blk_sq_dist_sum, manifold, x)))


def gradient_norm(manifold, x, X):
    """``‖∇F(x)‖`` for records in memory or in a Dask array (one map-reduce)."""
    records = X if isinstance(X, Records) else Records(X, manifold)
    return float(manifold.norm(x, sum(records.map(_blk_log_sum, manifold, x))))


def _farthest(records, manifold, x):
    parts = records.map(_blk_farthest, manifold, x)
    return max(parts, key=lambda p: p[0])


def enclosing_radius(manifold, X, start, n_iter=200, enough=0.0):
    """Radius of a geodesic ball that contains every record: an upper bound on the smallest one.

    Geodesic Bădoiu–Clarkson iterations from ``start``: move the centre a fraction ``1/(t+2)``
    towards the farthest record; the best radius seen is returned (a certificate: that ball
    contains all records). Stops early once a radius ``< enough`` is found."""
    records = X if isinstance(X, Records) else Records(X, manifold)
    c = start
    best = np.inf
    for t in range(n_iter + 1):
        d, far = _farthest(records, manifold, c)
        best = min(best, d)
        if best < enough or t == n_iter:
            break
        c = manifold.exp(c, manifold.log(c, far) / (t + 2))
    return best


def frechet_mean(X: ArrayLike, manifold: Manifold, *, weights: ArrayLike | None = None, init: ArrayLike | None = None,
                 step: float | None = None, tol: float = 1e-10, max_iter: int = 1000, check_assumption: bool = True) -> FrechetMeanResult:
    """Fréchet mean ``argmin_x Σ w_i ρ²(x, x_i)`` of the records ``X`` on ``manifold`` (not private).

    Closed form on a manifold with a flat chart (Euclidean, log-Euclidean). Elsewhere Karcher flow
    ``μ ← exp_μ(step · Σ w_i log_μ x_i)`` from an extrinsic/Procrustes start, until
    ``‖∇F(μ)‖ ≤ tol · max(spread, 1)`` where ``spread`` is the largest distance from the start
    to a record (docs/theory.md §2). This is the non-private statistic; private releases use
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
        diverges there once the Hessian of ``F`` exceeds 2).
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
    for ok, reason in records.map(_blk_check, manifold):
        if not ok:
            raise ValueError(f"X holds records that are not points of {manifold!r}: {reason}")
    if step is not None and not (0 < step <= 1):
        raise ValueError(f"step must be in (0, 1], got {step!r}")
    if manifold.flat_chart:  # closed form: the mean in the chart
        return FrechetMeanResult(_start(manifold, records), 0, True, 0.0)

    mu = _start(manifold, records) if init is None else manifold.validate_point(init, "init")
    spread = _farthest(records, manifold, mu)[0]
    if step is None:
        step = 1.0 / hessian_upper_bound(2.0 * spread, manifold.curvature_bounds[0])
    threshold = tol * max(spread, 1.0)
    converged, n_iter, gnorm = False, 0, np.inf
    for n_iter in range(max_iter + 1):
        g = sum(records.map(_blk_log_sum, manifold, mu))  # one map-reduce per Karcher step
        gnorm = float(manifold.norm(mu, g))
        if gnorm <= threshold:
            converged = True
            break
        if n_iter == max_iter:
            break
        mu = manifold.exp(mu, step * g)
    if not converged:
        warnings.warn(f"frechet_mean did not reach tol={tol:g} in max_iter={max_iter} steps", RuntimeWarning, stacklevel=2)
    if check_assumption and manifold.curvature_bounds[1] > 0:
        if enclosing_radius(manifold, records, mu, enough=manifold.assumption_radius) >= manifold.assumption_radius:
            raise CurvatureAssumptionError(
                f"the records do not lie within r* = {manifold.assumption_radius:.6g} of their mean on {manifold!r}: "
                "the Fréchet mean may not be unique (docs/theory.md §3, Assumption 1); pass check_assumption=False to skip"
            )
    return FrechetMeanResult(mu, n_iter, converged, gnorm)


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
    records = X if isinstance(X, Records) else Records(X, manifold)
    if manifold.flat_chart:
        return _start(manifold, records)
    kmin, kmax = manifold.curvature_bounds
    h = hessian_lower_bound(radius, kmax)
    H = hessian_upper_bound(4.0 * radius, kmin)
    steps = certified_iterations(h, H, radius, accuracy)
    if steps > MAX_CERTIFIED_ITERATIONS:
        raise ValueError(
            f"certifying the Fréchet mean to {accuracy:.3g} at radius={radius!r} on {manifold!r} needs {steps} "
            f"gradient steps (h = {h:.3g}, H = {H:.3g}); use a smaller radius")
    mu = np.asarray(center, dtype=manifold.dtype)
    for _ in range(steps):
        g = sum(records.map(_blk_log_sum, manifold, mu))  # −∇F(μ)
        mu = manifold.clip_to_ball(manifold.exp(mu, g / H), center, radius)
    return mu


def hessian_lower_bound(radius, kappa_max):
    """``h(r, κ) = 2r√κ·cot(2r√κ)`` for ``κ > 0``, else 1: strong convexity of ``F`` on a ball of
    radius ``r`` holding the records (2021 Thm 2; 2022 eq. (1))."""
    if kappa_max <= 0:
        return 1.0
    a = 2.0 * radius * np.sqrt(kappa_max)
    return float(a / np.tan(a))
