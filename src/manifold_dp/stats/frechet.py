"""The Fréchet (Karcher) mean ``argmin_x (1/2n) Σ ρ²(x, x_i)``, to a certified accuracy.

The privacy guarantees of ``manifold_dp.privacy`` hold for the exact minimiser, so the default
tolerance is tight (‖∇F‖ ≤ 1e-10 × the data's spread), not geomstats' loose default (SPEC §2).
"""

import warnings
from dataclasses import dataclass

import numpy as np

from ..manifolds import Euclidean, Hyperbolic, KendallShape2D, Sphere, SPDAffineInvariant, SPDLogEuclidean
from ..manifolds._matrix import expm_sym, logm_spd


@dataclass(frozen=True)
class FrechetMeanResult:
    """``point``: the mean; ``grad_norm``: ‖∇F(point)‖; ``converged``: whether ``tol`` was met."""

    point: np.ndarray
    n_iter: int
    converged: bool
    grad_norm: float


class CurvatureAssumptionError(ValueError):
    """The data do not lie in a ball small enough for the Fréchet mean to be unique."""


def _weights(n, weights):
    if weights is None:
        return np.full(n, 1.0 / n)
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be {n} finite non-negative numbers with a positive sum")
    return w / w.sum()


def _weighted_sum(w, v):
    return np.tensordot(w, v, axes=(0, 0))


def riemannian_gradient(manifold, x, X, weights=None):
    """``∇F(x) = −Σ w_i log_x(x_i)`` (weights summing to 1), for one or a batch of ``x``.

    ``x`` has shape ``(..., *point_shape)``; the result has the same shape.
    """
    X = np.asarray(X)
    w = _weights(X.shape[0], weights)
    x = np.asarray(x)
    nb = x.ndim - len(manifold.point_shape)
    logs = manifold.log(np.expand_dims(x, nb), X)  # (..., n, *point_shape)
    return -np.tensordot(logs, w, axes=([nb], [0]))


CHUNK = 1 << 17  # records per block: bounds the temporary memory of one Karcher step


def _blocks(n, chunk=CHUNK):
    return [slice(i, min(i + chunk, n)) for i in range(0, n, chunk)]


def _dists(manifold, x, X):
    """``ρ(x, X_i)`` for all records, block by block."""
    return np.concatenate([manifold.dist(x, X[b]) for b in _blocks(len(X))])


def _log_sum(manifold, x, X, w):
    """``Σ w_i log_x(X_i)``, block by block."""
    return sum(_weighted_sum(w[b], manifold.log(x, X[b])) for b in _blocks(len(X)))


def _initial_point(manifold, X, w):
    if isinstance(manifold, KendallShape2D):
        return manifold.procrustes_mean(X, w)
    if isinstance(manifold, SPDAffineInvariant):
        return expm_sym(_weighted_sum(w, logm_spd(X)))
    if isinstance(manifold, (Sphere, Hyperbolic)):
        return manifold.project(_weighted_sum(w, X))  # extrinsic mean, projected
    return X[int(np.argmax(w))]


def enclosing_radius(manifold, X, start, n_iter=200, enough=0.0):
    """Radius of a geodesic ball that contains every record: an upper bound on the smallest one.

    Geodesic Bădoiu–Clarkson iterations from ``start``: move the centre a fraction ``1/(t+2)``
    towards the farthest record; the best radius seen is returned (a certificate: that ball
    contains all records). Stops early once a radius ``< enough`` is found."""
    c = start
    best = np.inf
    for t in range(n_iter + 1):
        d = _dists(manifold, c, X)
        far = int(np.argmax(d))
        best = min(best, float(d[far]))
        if best < enough or t == n_iter:
            break
        c = manifold.exp(c, manifold.log(c, X[far]) / (t + 2))
    return best


def frechet_mean(manifold, X, *, weights=None, init=None, step=1.0, tol=1e-10, max_iter=1000, check_assumption=True):
    """Fréchet mean of the records ``X`` (shape ``(n, *point_shape)``) on ``manifold``.

    Closed forms on ``Euclidean`` and ``SPDLogEuclidean``. Elsewhere Karcher flow
    ``μ ← exp_μ(step · Σ w_i log_μ x_i)`` from an extrinsic/Procrustes start, until
    ``‖∇F(μ)‖ ≤ tol · max(spread, 1)`` where ``spread`` is the largest distance from the start
    to a record. Warns when ``max_iter`` is reached first.

    On a positively curved space (sphere, Kendall) the minimiser is unique only when the data lie
    in a ball of radius below ``r*`` (SPEC §3, Assumption 1); with ``check_assumption`` a dataset
    that no ball of radius ``< r*`` is found to contain (``enclosing_radius``) raises
    ``CurvatureAssumptionError``.
    """
    if not (isinstance(X, np.ndarray) and X.dtype == manifold.dtype):  # keeps a memmap a memmap
        X = np.asarray(X, dtype=manifold.dtype)
    if X.ndim != len(manifold.point_shape) + 1 or X.shape[0] == 0:
        raise ValueError(f"X must have shape (n, {', '.join(map(str, manifold.point_shape))}) with n >= 1, got {X.shape}")
    for b in _blocks(len(X)):
        ok, reason = manifold.check_point(X[b])
        if not ok:
            raise ValueError(f"X holds records that are not points of {manifold!r}: {reason}")
    if not (0 < step <= 1):
        raise ValueError(f"step must be in (0, 1], got {step!r}")
    w = _weights(X.shape[0], weights)

    if isinstance(manifold, Euclidean):
        return FrechetMeanResult(_weighted_sum(w, X), 0, True, 0.0)
    if isinstance(manifold, SPDLogEuclidean):
        return FrechetMeanResult(expm_sym(_weighted_sum(w, logm_spd(X))), 0, True, 0.0)

    mu = _initial_point(manifold, X, w) if init is None else manifold.validate_point(init, "init")
    spread = float(np.max(_dists(manifold, mu, X)))
    threshold = tol * max(spread, 1.0)
    converged, n_iter, gnorm = False, 0, np.inf
    for n_iter in range(max_iter + 1):
        g = _log_sum(manifold, mu, X, w)
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
        if enclosing_radius(manifold, X, mu, enough=manifold.assumption_radius) >= manifold.assumption_radius:
            raise CurvatureAssumptionError(
                f"the records do not lie within r* = {manifold.assumption_radius:.6g} of their mean on {manifold!r}: "
                "the Fréchet mean may not be unique (SPEC §3, Assumption 1); pass check_assumption=False to skip"
            )
    return FrechetMeanResult(mu, n_iter, converged, gnorm)
