"""Records held in memory (numpy, memmap) or out of core (a Dask array), seen as blocks.

Every pass of the Fréchet mean is a map over blocks of records followed by a small reduction on
the client, so the same algorithm runs on both. Dask is imported only when a Dask array is given.
On Dask a pass is one graph execution: one task per block, whose small result (a partial sum) is
all that comes back to the client. ``PreparedBlocks`` are the records of a release on Dask: each
task prepares its block on the worker before the pass reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ._typing import Array, FloatArray

if TYPE_CHECKING:
    from .manifolds.base import Manifold

__all__ = ["is_dask", "Records", "PreparedBlocks", "block_weights", "sum_rows", "pairwise_sum"]

CHUNK = 1 << 17  # records per in-memory block: bounds the temporary memory of one pass


def is_dask(X: object) -> bool:
    return type(X).__module__.split(".")[0] == "dask"


class Records:
    """``map(func, *args)`` applies ``func(block, weights_block, n, *args)`` to every block."""

    prepare: Callable[[Any], Array] | None = None  # applied to every Dask block before a pass reads it

    def __init__(self, X: Any, manifold: Manifold, weights: Any = None) -> None:
        self.lazy = is_dask(X)
        self._blocks: list[Any] | None = None
        if self.lazy:
            if weights is not None:
                raise ValueError("weights are not supported for Dask arrays")
            X = X.rechunk({i: -1 for i in range(1, X.ndim)})
            if X.dtype != manifold.dtype:
                X = X.astype(manifold.dtype)
        elif not (isinstance(X, np.ndarray) and X.dtype == manifold.dtype):  # keeps a memmap a memmap
            X = np.asarray(X, dtype=manifold.dtype)
        if X.ndim != len(manifold.point_shape) + 1 or X.shape[0] == 0 or tuple(X.shape[1:]) != tuple(manifold.point_shape):
            raise ValueError(f"X must have shape (n, {', '.join(map(str, manifold.point_shape))}) with n >= 1, got {X.shape}")
        self.X, self.n = X, int(X.shape[0])
        self.w: FloatArray | None
        if weights is None:
            self.w = None
        else:
            w = np.asarray(weights, dtype=float)
            if w.shape != (self.n,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
                raise ValueError(f"weights must be {self.n} finite non-negative numbers with a positive sum")
            self.w = w / w.sum()

    def map(self, func: Callable[..., Any], *args: Any) -> list[Any]:
        if self.lazy:  # one graph execution: a task per block (the block's own graph, then func), results in order
            import dask

            if self._blocks is None:
                self._blocks = list(self.X.to_delayed().ravel())
            task = dask.delayed(_block_task)
            return list(dask.compute(*[task(b, self.prepare, func, self.n, args) for b in self._blocks]))
        out = []
        for i in range(0, self.n, CHUNK):
            b = slice(i, min(i + CHUNK, self.n))
            out.append(func(self.X[b], None if self.w is None else self.w[b], self.n, *args))
        return out

    def materialize(self) -> Array:
        """All records as one numpy array (only for in-memory work)."""
        return np.asarray(self.X.compute() if self.lazy else self.X)


def _block_task(block: Any, prepare: Callable[[Any], Array] | None, func: Callable[..., Any], n: int,
                args: tuple[Any, ...]) -> Any:
    """One task of a Dask pass, on the worker: the block (prepared there first when the records
    are a release's), then ``func``."""
    return func(block if prepare is None else prepare(block), None, n, *args)


class PreparedBlocks(Records):
    """A release's records in a Dask array ``X`` (``privacy.dask_records.prepare_blocks``): every
    task of every pass runs ``prepare`` on its block of ``blocks`` (one Dask object per block of
    ``X``, in order) before ``func`` reads it: it clips the block's records into
    ``B_radius(center)`` there, or takes the clipped records the first pass kept on that worker.
    The clipped records are never sent to the client. Like ``stats.frechet.PreparedRecords`` they
    carry, from the release's first pass, ``log_mean = (1/n) Σ log_center(x_i)`` (or ``None``),
    ``start_stats = (1/n) Σ (x_i − center)`` (or ``None``) and the ``radius`` they are clipped to."""

    def __init__(self, X: Any, manifold: Manifold, prepare: Callable[[Any], Array], center: Any, log_mean: Any,
                 start_stats: Any, radius: float, blocks: list[Any]) -> None:
        super().__init__(X, manifold)
        if not self.lazy:
            raise TypeError("PreparedBlocks hold a Dask array; records in memory are prepared by prepare_records")
        if len(blocks) != self.X.numblocks[0]:
            raise ValueError(f"blocks must hold one entry per block of X ({self.X.numblocks[0]}), got {len(blocks)}")
        self.prepare, self._blocks = prepare, list(blocks)
        self.center, self.log_mean, self.start_stats = np.asarray(center), log_mean, start_stats
        self.radius = float(radius)

    def _at(self, center: Any) -> bool:
        return self.center.shape == np.shape(center) and bool(np.array_equal(self.center, center))

    def in_ball(self, center: Any, radius: float) -> bool:
        """Whether every pass reads records clipped into ``B_radius(center)`` (or a smaller ball
        around the same centre), as ``PreparedRecords.in_ball``."""
        return self.radius <= radius and self._at(center)

    def log_mean_at(self, center: Any) -> Any:
        """``log_mean`` when it was computed at ``center``, else ``None``."""
        return self.log_mean if self.log_mean is not None and self._at(center) else None

    def materialize(self) -> Array:
        raise TypeError("a release's Dask records are read in passes on the workers, never gathered on the client")


def block_weights(block: Array, w: FloatArray | None, n: int) -> FloatArray:
    return np.full(len(block), 1.0 / n) if w is None else w


def sum_rows(phi: FloatArray, rows: int) -> FloatArray:
    """``Σ_i φ_i`` in sub-blocks of ``rows`` rows: any order of summation within a sub-block and
    across them errs by at most ``γ_(rows − 1)`` and ``γ_(⌈n/rows⌉ − 1)`` of ``Σ|φ_i|`` (Higham 2002,
    §4.2)."""
    phi = np.asarray(phi, float)
    full = len(phi) // rows * rows
    parts = [phi[:full].reshape(-1, rows, phi.shape[-1]).sum(axis=1)] if full else []
    if full < len(phi):
        parts.append(phi[full:].sum(axis=0, keepdims=True))
    if not parts:
        return np.zeros(phi.shape[-1])
    return cast(FloatArray, np.concatenate(parts).sum(axis=0))


def pairwise_sum(parts: list[FloatArray]) -> FloatArray:
    """A balanced tree of additions over ``parts`` (depth ``⌈log2 len⌉``)."""
    while len(parts) > 1:
        parts = [parts[i] + parts[i + 1] if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
    return parts[0]
