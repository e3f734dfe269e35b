"""Array primitives whose work does not depend on the values: branch-free selects and finiteness
masks that every layer of a manifold uses on records (docs/security.md, Timing)."""

from __future__ import annotations

from typing import cast

import numpy as np
from numpy.typing import ArrayLike

from ..._typing import Array, BoolArray, FloatArray

__all__ = ["select", "finite_rows", "clip_scale"]


def select(mask: ArrayLike, a: ArrayLike, b: ArrayLike) -> Array:
    """``np.where(mask, a, b)`` for float or complex arrays without a branch per element: numpy's
    masked selects take longer the more mixed their mask is, i.e. the more records are invalid or
    clipped (a timing channel; docs/security.md, Timing (c)). Bitwise, so NaN and inf pass
    through unchanged; ``mask`` broadcasts against ``a`` and ``b``."""
    a, b = np.asarray(a), np.asarray(b)
    if np.iscomplexobj(a) or np.iscomplexobj(b):  # as (real, imaginary) pairs of floats
        a, b = np.ascontiguousarray(a, dtype=complex), np.ascontiguousarray(b, dtype=complex)
        pairs = select(np.expand_dims(mask, -1), a.view(float).reshape(a.shape + (2,)), b.view(float).reshape(b.shape + (2,)))
        return pairs.reshape(pairs.shape[:-2] + (-1,)).view(complex)
    a, b = np.asarray(a, float), np.asarray(b, float)
    shape = np.broadcast_shapes(np.shape(mask), a.shape, b.shape)
    b_bits = np.broadcast_to(b, shape).view(np.uint64)  # a read-only view: no copy of b (nor of a scalar 0)
    out = np.broadcast_to(a, shape).view(np.uint64) ^ b_bits  # b ^ ((a ^ b)·mask): a where 1, b where 0
    out *= np.asarray(mask, np.uint64)
    out ^= b_bits
    return out.view(float)


def finite_rows(x: ArrayLike, point_ndim: int) -> BoolArray:
    """Which points of ``x`` (the last ``point_ndim`` axes) have only finite entries, with the same
    work for every point (``np.all`` along short axes stops early on a non-finite entry)."""
    x = np.asarray(x)
    batch = x.shape[:x.ndim - point_ndim]
    flat: Array = x.reshape(batch + (-1,))
    with np.errstate(invalid="ignore"):
        return cast(BoolArray, (flat * 0) @ np.ones(flat.shape[-1]) == 0)


def clip_scale(rho: FloatArray, radius: float) -> FloatArray:
    """``min(1, r/ρ)`` record by record (1 inside the ball), without a masked select."""
    with np.errstate(divide="ignore"):
        return np.minimum(1.0, radius / rho)
