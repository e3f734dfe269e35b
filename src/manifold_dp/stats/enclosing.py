"""Assumption 1 on positively curved spaces: a geodesic ball of radius below ``r*`` holding every
record (docs/theory.md §2). The smallest enclosing cap of the records' lifts to a sphere where one
exists (exact on the sphere), geodesic Bădoiu–Clarkson iterations otherwise."""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike

from .._threads import blas_limited
from .._typing import Array, FloatArray
from ..manifolds.base import Manifold
from ..records import Records

__all__ = ["enclosing_radius"]


def _blk_farthest(block: Array, w: FloatArray | None, n: int, manifold: Manifold, x: ArrayLike) -> tuple[float, Array]:
    d = manifold.dist(x, np.asarray(block))
    i = int(np.argmax(d))
    return float(d[i]), np.array(np.asarray(block)[i])  # a copy: a view would keep the whole block alive


def _farthest(records: Records, manifold: Manifold, x: ArrayLike) -> tuple[float, Array]:
    parts = records.map(_blk_farthest, manifold, x)
    return max(parts, key=lambda p: p[0])


@blas_limited
def enclosing_radius(manifold: Manifold, X: Any, start: Any, n_iter: int = 200, enough: float = 0.0) -> float:
    """Radius of a geodesic ball that contains every record: an upper bound on the smallest one.

    Where the space lifts the records to unit vectors whose angles bound their distances
    (``manifold.enclosing_lift``: the sphere exactly, Kendall shapes through their rotation against
    ``start``), the smallest enclosing cap of the lifts is found first (``_smallest_cap``: a handful
    of passes, exact on the sphere). Otherwise, or where that bound is not below ``enough`` on a
    space whose lift is not exact, geodesic Bădoiu–Clarkson iterations from ``start`` (move the
    centre a fraction ``1/(t+2)`` towards the farthest record; the best radius seen is returned, a
    certificate: that ball contains all records). Stops early once a radius ``< enough`` is found."""
    records = X if isinstance(X, Records) else Records(X, manifold)
    best = np.inf
    lift = None if records.lazy else manifold.enclosing_lift(start, records.X)
    if lift is not None:
        Y, scale, exact, to_point = lift
        first = cast("tuple[FloatArray, ...]", manifold.enclosing_lift(start, np.asarray(start)[None]))[0][0]
        radius, _, centre = _smallest_cap(Y, first, enough / scale)
        best = radius * scale
        if best < enough or exact:
            return best
        start = to_point(centre)
    c = start
    for t in range(n_iter + 1):
        d, far = _farthest(records, manifold, c)
        best = min(best, d)
        if best < enough or t == n_iter:
            break
        c = manifold.exp(c, manifold.log(c, far) / (t + 2))
    return best


CAP_ROUNDS = 100  # passes of _smallest_cap at most
CAP_BATCH = 16  # farthest lifts added to the core set per pass


def _smallest_cap(Y: FloatArray, first: FloatArray, enough: float = 0.0) -> tuple[float, Any, FloatArray]:
    """The smallest spherical cap holding the unit vectors ``Y`` (``(n, D)``), as
    ``(upper, lower, centre)`` angles: a cap of angular radius ``upper`` around the unit ``centre``
    holds every ``Y_i``, and none of radius below ``lower`` does.

    Duality: for unit ``c`` and ``z`` in the convex hull of the ``Y_i``,
    ``min_i ⟨Y_i, c⟩ ≤ ⟨z, c⟩ ≤ ‖z‖``, with equality at the optimum (the smallest cap is centred at
    the hull's point nearest 0, of radius ``arccos`` its norm). So ``arccos min_i ⟨Y_i, c⟩`` is an upper
    bound for any ``c`` and ``arccos ‖z‖`` a lower bound for any ``z`` of a sub-hull. A core set:
    start from ``first``, add the ``CAP_BATCH`` lifts farthest from the current centre, move the
    centre to the nearest point of their hull (``_min_norm_point``), one pass over the records per
    round, until the bounds meet, the upper one falls below ``enough`` or the lower one reaches it.
    A ring of records at 0.999·r* takes a few rounds (the iterations of ``enclosing_radius`` need
    ``O(1/ε²)`` of them)."""
    c = np.asarray(first, float) / np.linalg.norm(first)
    core = np.zeros(0, dtype=np.intp)
    upper, lower, centre = np.pi, 0.0, c
    for _ in range(CAP_ROUNDS):
        dots = Y @ c
        k = min(CAP_BATCH, len(dots))
        far = np.argpartition(dots, k - 1)[:k]
        bound = float(np.arccos(np.clip(np.min(dots[far]), -1.0, 1.0)))
        if bound < upper:
            upper, centre = bound, c
        if upper < enough or lower >= enough > 0 or upper - lower <= 1e-12:
            break
        core = np.union1d(core, far)
        z = _min_norm_point(Y[core])
        norm = float(np.linalg.norm(z))
        lower = max(lower, float(np.arccos(min(norm, 1.0))))
        if norm <= 1e-300:
            break  # 0 is in the hull: no open hemisphere holds the records
        c = z / norm
    return upper, lower, centre


def _min_norm_point(P: FloatArray, max_iter: int = 500) -> Any:
    """The point of the convex hull of the rows of ``P`` nearest the origin (Wolfe 1976: major
    cycles add the row most opposed to the current point, minor cycles move to the affine minimiser
    of the active rows, dropping rows whose weight would turn negative). The result is always a
    convex combination of rows, whatever the rounding."""
    P = np.asarray(P, float)
    active = [int(np.argmin(np.einsum("ij,ij->i", P, P)))]
    weights = np.array([1.0])
    x = P[active[0]]
    scale = float(np.max(np.einsum("ij,ij->i", P, P)))
    for _ in range(max_iter):
        j = int(np.argmin(P @ x))
        if float(P[j] @ x) >= float(x @ x) - 1e-14 * scale or j in active:
            break
        active.append(j)
        weights = np.append(weights, 0.0)
        for _ in range(len(P) + 1):  # minor cycles: each drops at least one active row
            alpha = _affine_minimiser(P[active])
            if np.all(alpha > 1e-15):
                weights = alpha
                break
            neg = alpha <= 1e-15
            theta = np.min(weights[neg] / (weights[neg] - alpha[neg]))
            weights = (1.0 - theta) * weights + theta * alpha
            keep = weights > 1e-15
            active = [a for a, k in zip(active, keep) if k]
            weights = weights[keep] / weights[keep].sum()
        x = weights @ P[active]
    return x


def _affine_minimiser(P: FloatArray) -> Any:
    """Weights ``α`` (summing to 1) of the point of the affine hull of the rows of ``P`` nearest 0:
    ``[PPᵀ 1; 1ᵀ 0][α; λ] = [0; 1]``, by least squares where the rows are affinely dependent."""
    m = len(P)
    kkt = np.zeros((m + 1, m + 1))
    kkt[:m, :m] = P @ P.T
    kkt[:m, m] = kkt[m, :m] = 1.0
    rhs = np.zeros(m + 1)
    rhs[m] = 1.0
    alpha = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:m]
    return alpha / alpha.sum()
