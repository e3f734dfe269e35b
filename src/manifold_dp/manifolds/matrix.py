"""Batched matrix functions of symmetric matrices, through ``eigh`` (and one closed form for a 2×2
root). The logarithm by matrix products alone for spectra in a known band, a speed kernel of the
Newton passes, is ``kernels.matrix_log.logm_band``.

Every function takes arrays of shape ``(..., k, k)`` and broadcasts over the leading axes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._threads import blas_limited_unless_tiny
from .._typing import FloatArray

__all__ = ["triu_indices", "sym", "eig_apply", "eig_weighted_sum", "funm_sym", "expm_sym", "logm_spd", "sqrtm_spd",
           "vecd", "invvecd", "vech", "invvech"]


@lru_cache(maxsize=64)
def triu_indices(k: int, offset: int = 0) -> tuple[Any, Any]:
    """``np.triu_indices(k, offset)``, computed once per ``(k, offset)`` (single draws ask for it
    every time)."""
    rows, cols = np.triu_indices(k, offset)
    rows.flags.writeable = cols.flags.writeable = False
    return rows, cols


def sym(a: FloatArray) -> FloatArray:
    """Symmetric part ``(a + aᵀ)/2`` of ``(..., k, k)`` matrices."""
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def eig_apply(u: FloatArray, values: FloatArray) -> FloatArray:
    """``u diag(values) uᵀ`` for eigen-pairs from ``eigh`` (the inverse of a decomposition)."""
    return (u * values[..., None, :]) @ np.swapaxes(u, -1, -2)


def eig_weighted_sum(u: ArrayLike, values: ArrayLike) -> FloatArray:
    """``Σ_i u_i diag(values_i) u_iᵀ`` over a batch ``(n, k, k)`` of eigenvector matrices and
    ``(n, k)`` values: one ``(k, nk) × (nk, k)`` matrix product instead of ``n`` small ones."""
    u, values = np.asarray(u, float), np.asarray(values, float)
    rows = u.transpose(0, 2, 1).reshape(-1, u.shape[-1])  # the eigenvectors, one per row
    return (rows * values.reshape(-1, 1)).T @ rows


@blas_limited_unless_tiny
def funm_sym(a: FloatArray, func: Callable[[FloatArray], FloatArray]) -> FloatArray:
    """``f(a)`` for symmetric ``a`` with ``f`` applied to the eigenvalues."""
    w, u = np.linalg.eigh(a)
    return eig_apply(u, func(w))


def expm_sym(a: FloatArray) -> FloatArray:
    """Matrix exponential of symmetric matrices."""
    return funm_sym(a, np.exp)


def logm_spd(a: FloatArray) -> FloatArray:
    """Principal matrix logarithm of SPD matrices."""
    return funm_sym(a, np.log)


@blas_limited_unless_tiny
def sqrtm_spd(a: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Square root and inverse square root of SPD matrices, from one decomposition."""
    w, u = np.linalg.eigh(a)
    s = np.sqrt(w)
    return eig_apply(u, s), eig_apply(u, 1.0 / s)


def sqrtm_spd_one(a: FloatArray, floats: bool = False) -> Any:
    """``sqrtm_spd(a)[0]`` of one matrix; at ``k = 2`` the closed form ``(a + sI)/√(tr a + 2s)``,
    ``s = √det a`` (Python floats; the eigen route where ``det a`` does not come out positive).
    ``floats``: nested lists of Python floats instead of an array."""
    if a.shape == (2, 2):
        (p, q), (_, r) = a.tolist()
        if math.isfinite(p + q + r) and p > 0.0:
            # scaled by an even power of two 4^e (exact; √ scales by 2^e): nothing overflows or underflows
            e = math.frexp(max(p, r, abs(q)))[1] // 2
            f = math.ldexp(1.0, -2 * e)
            p, q, r = p * f, q * f, r * f
            q = 0.0 if abs(q) < 2.0**-300 else q  # its square would be subnormal (slow); a relative move < 1e-90
            det = p * r - q * q
            if det > 0.0:
                s = math.sqrt(det)
                t = math.ldexp(math.sqrt(p + r + 2.0 * s), -e)
                pairs = [[(p + s) / t, q / t], [q / t, (r + s) / t]]
                return pairs if floats else np.array(pairs)
    out = sqrtm_spd(a)[0]
    return out.tolist() if floats else out


def vecd(s: FloatArray) -> FloatArray:
    """Isometry ``Sym(k) → R^(k(k+1)/2)``: ``[diag(S), √2·upper(S)]`` (Frobenius → Euclidean)."""
    k = s.shape[-1]
    iu = triu_indices(k, 1)
    return np.concatenate([np.diagonal(s, axis1=-2, axis2=-1), np.sqrt(2.0) * s[..., iu[0], iu[1]]], axis=-1)


def invvecd(v: ArrayLike, k: int) -> FloatArray:
    """Inverse of :func:`vecd`."""
    v = np.asarray(v)
    out = np.zeros(v.shape[:-1] + (k, k), dtype=v.dtype)
    idx = np.arange(k)
    out[..., idx, idx] = v[..., :k]
    iu = triu_indices(k, 1)
    off = v[..., k:] / np.sqrt(2.0)
    out[..., iu[0], iu[1]] = off
    out[..., iu[1], iu[0]] = off
    return out


def vech(s: FloatArray) -> FloatArray:
    """Upper triangle of ``(..., k, k)`` matrices, row by row (the 2021 paper's ``vech``)."""
    iu = triu_indices(s.shape[-1])
    return s[..., iu[0], iu[1]]


def invvech(v: ArrayLike, k: int) -> FloatArray:
    """Inverse of :func:`vech` for symmetric matrices."""
    v = np.asarray(v)
    out = np.zeros(v.shape[:-1] + (k, k), dtype=v.dtype)
    iu = triu_indices(k)
    out[..., iu[0], iu[1]] = v
    out[..., iu[1], iu[0]] = v
    return out
