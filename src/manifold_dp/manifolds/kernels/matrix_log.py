"""``Logm`` of symmetric matrices by matrix products alone, for spectra in a known band
``[e^−t, e^t]``: the affine-invariant SPD Newton passes take the records' logarithms this way
(``SPDAffineInvariant.newton_terms``), with a proven error ``LogBandPlan.bound`` and a running time
that does not depend on the values (an ``eigh`` iterates more or less).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ..._typing import FloatArray

__all__ = ["LogBandPlan", "logm_band_plan", "logm_band", "flush_tiny", "FLUSH"]


class LogBandPlan(NamedTuple):
    """How ``logm_band`` evaluates ``Logm`` on the band ``[e^−t, e^t]`` (public: a function of ``t``).

    ``alpha = 1/(1 + cosh t)``; ``doublings = m``: ``Σ_(j<2^m) R^j`` as ``Π_(i<m) (I + R^(2^i))``;
    ``terms = J`` of the ``artanh`` series, evaluated by Paterson–Stockmeyer with ``stride`` powers;
    ``bound``: the largest ``|φ(λ) − log λ|`` over the band, ``φ`` the computed polynomial in exact
    arithmetic; ``products``: matrix products per matrix."""

    t: float
    alpha: float
    doublings: int
    terms: int
    stride: int
    bound: float
    products: int


@lru_cache(maxsize=64)
def logm_band_plan(t: float, tol: float) -> LogBandPlan | None:
    """The cheapest ``LogBandPlan`` whose ``bound`` is ``≤ tol`` on ``[e^−t, e^t]`` (``None`` if none
    within 12 doublings and 400 terms, or ``t > 20``). The bound, per eigenvalue ``λ`` (every step is a polynomial
    of ``a``, so the matrix error is the scalar one on the spectrum): with ``q = tanh(t/2)``,
    ``R = I − α(a + I)`` has its spectrum in ``[−q, q]``, so ``(a + I)^−1 = α Σ_j R^j`` and
    ``Z = I − 2(a + I)^−1`` (eigenvalues ``z = tanh(½ log λ)``, ``|z| ≤ q``) is computed within
    ``δ = 2α q^(2^m)/(1 − q)``; ``log λ = 2 artanh z = 2 Σ_j z^(2j+1)/(2j+1)``, truncated after ``J``
    terms at ``ẑ``, ``|ẑ| ≤ q̂ = q + δ < 1``: the error is at most
    ``2(δ + q̂^(2J+1)/(2J+1))/(1 − q̂²)`` (``artanh`` is ``1/(1 − q̂²)``-Lipschitz on ``[−q̂, q̂]``)."""
    t, tol = float(t), float(tol)
    if not (0.0 < t <= 20.0 and tol > 0.0):  # past t = 20, q = tanh(t/2) rounds towards 1: no plan
        return None
    alpha, q = 1.0 / (1.0 + math.cosh(t)), math.tanh(t / 2.0)
    best = None
    for m in range(1, 13):
        delta = 2.0 * alpha * q ** (2**m) / (1.0 - q)
        qh = q + delta
        if not qh < 1.0:
            continue
        for J in range(1, 401):
            bound = 2.0 * (delta + qh ** (2 * J + 1) / (2 * J + 1)) / (1.0 - qh * qh)
            if bound <= tol:
                stride = max(1, math.ceil(math.sqrt(J)))
                products = 2 * (m - 1) + 1 + (stride - 1) + (-(-J // stride) - 1) + 1
                if best is None or products < best.products:
                    best = LogBandPlan(t, alpha, m, J, stride, bound, products)
                break
    return best


FLUSH = 2.0**-400  # logm_band rounds every product's operands to this grid near 0 (flush_tiny)


def flush_tiny(a: FloatArray) -> FloatArray:
    """``a + C − C`` in place, ``C = 2^−400``: entries below ``2^−347`` move to a multiple of
    ``2^−452`` (by less than that), larger ones stay exactly. Every operand of a product is then 0
    or at least ``2^−452`` in size, so no product or sum of products is subnormal (``≥ 2^−957``):
    subnormal arithmetic is slow on most CPUs, and records that drive it would be visible in the
    running time. Two passes without temporaries."""
    a += FLUSH
    a -= FLUSH
    return a


def logm_band(a: ArrayLike, plan: LogBandPlan) -> FloatArray:
    """``Logm`` of symmetric ``(n, k, k)`` matrices whose eigenvalues lie in ``[e^−t, e^t]``
    (``plan = logm_band_plan(t, tol)``), within ``plan.bound`` in the spectral norm (plus rounding),
    by ``plan.products`` matrix products per matrix and no decomposition: ``Z = I − 2(a + I)^−1`` from
    the Neumann series of ``(a + I)^−1`` by repeated squaring, then ``2 Σ_(j<J) Z^(2j+1)/(2j+1)``
    (``logm_band_plan``). Its cost does not depend on the values (an ``eigh`` iterates more or less).
    Outside the band the result is not the logarithm: callers guarantee the band. Every product's
    operands and the result pass through ``flush_tiny`` (no subnormal arithmetic for any input whose
    entries are normal or 0)."""
    a = np.asarray(a, float)
    n, k = a.shape[0], a.shape[-1]
    d = np.arange(k)
    alpha, J, s = plan.alpha, plan.terms, plan.stride
    R = a * -alpha
    R[:, d, d] += 1.0 - alpha
    flush_tiny(R)
    S = R.copy()
    S[:, d, d] += 1.0
    power, spare, tmp = R, np.empty_like(R), np.empty_like(R)
    for _ in range(plan.doublings - 1):  # S ← S (I + R^(2^i))
        np.matmul(power, power, out=spare)
        power, spare = flush_tiny(spare), power  # R itself is not needed again
        np.matmul(S, power, out=tmp)
        S += tmp
        flush_tiny(S)
    Z = S
    Z *= -2.0 * alpha
    Z[:, d, d] += 1.0
    flush_tiny(Z)
    W = np.empty((s, n, k, k))  # W^1 … W^s, W = Z²
    np.matmul(Z, Z, out=W[0])
    flush_tiny(W[0])
    for p in range(2, s + 1):
        np.matmul(W[p // 2 - 1], W[p - p // 2 - 1], out=W[p - 1])
        flush_tiny(W[p - 1])
    blocks = -(-J // s)
    # Σ_j W^j/(2j+1) = Σ_b B_b (W^s)^b, B_b = Σ_(i<s) W^i/(2(bs+i)+1): all B_b by one product
    coef = np.zeros((blocks, s - 1))
    for b in range(blocks):
        for i in range(1, s):
            if b * s + i < J:
                coef[b, i - 1] = 1.0 / (2 * (b * s + i) + 1)
    B = (coef @ W[:s - 1].reshape(s - 1, -1)).reshape(blocks, n, k, k) if s > 1 else np.zeros((blocks, n, k, k))
    for b in range(blocks):
        B[b, :, d, d] += 1.0 / (2 * b * s + 1)
    acc = flush_tiny(B[blocks - 1])  # the B_b are sums of the flushed W^i: only the products need flushing
    for b in range(blocks - 2, -1, -1):
        np.matmul(acc, W[s - 1], out=tmp)
        tmp += B[b]
        acc, tmp = flush_tiny(tmp), acc
    out = np.matmul(Z, acc)
    out *= 2.0
    return flush_tiny(out)
