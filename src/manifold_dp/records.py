"""Records held in memory (numpy, memmap) or out of core (a Dask array), seen as blocks.

Every pass of the Fréchet mean is a map over blocks of records followed by a small reduction on
the client, so the same algorithm runs on both. Dask is imported only when a Dask array is given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ._typing import Array, FloatArray

if TYPE_CHECKING:
    from .manifolds.base import Manifold

__all__ = ["is_dask", "Records", "block_weights"]

CHUNK = 1 << 17  # records per in-memory block: bounds the temporary memory of one pass


def is_dask(X: object) -> bool:
    return type(X).__module__.split(".")[0] == "dask"


class Records:
    """``map(func, *args)`` applies ``func(block, weights_block, *args)`` to every block."""

    def __init__(self, X: Any, manifold: Manifold, weights: Any = None) -> None:
        self.lazy = is_dask(X)
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
        if self.lazy:
            import dask

            blocks = self.X.to_delayed().ravel()
            return list(dask.compute(*[dask.delayed(func)(b, None, self.n, *args) for b in blocks]))
        out = []
        for i in range(0, self.n, CHUNK):
            b = slice(i, min(i + CHUNK, self.n))
            out.append(func(self.X[b], None if self.w is None else self.w[b], self.n, *args))
        return out

    def materialize(self) -> Array:
        """All records as one numpy array (only for in-memory work)."""
        return np.asarray(self.X.compute() if self.lazy else self.X)


def block_weights(block: Array, w: FloatArray | None, n: int) -> FloatArray:
    return np.full(len(block), 1.0 / n) if w is None else w
