"""Power series of the sphere's Newton terms in ``z = sin²(θ/2) = (1 − cos θ)/2``, with proven
tail bounds: ``θ/sin θ`` and ``β(θ) = (1 − θ cot θ)/sin²θ`` as polynomials of the records'
cosines, so that a Newton pass on records in a ball needs no ``arccos`` (docs/theory.md §2).

``θ/sin θ = ₂F₁(1, 1; 3/2; z) = Σ a_k z^k``, ``a_k = 4^k (k!)²/(2k + 1)!`` (``a_(k+1)/a_k =
(2k + 2)/(2k + 3)``: positive, decreasing). With ``cos θ = 1 − 2z`` and ``sin²θ = 4z(1 − z)``,
``1 − θ cot θ = 1 − (1 − 2z) Σ a_k z^k = Σ_(k≥1) n_k z^k``, ``n_k = 2a_(k−1) − a_k
= a_(k−1)(2k + 2)/(2k + 1)`` (positive, decreasing), so ``β = Σ b_k z^k`` with
``b_k = ¼ Σ_(j≤k) n_(j+1)`` (positive, increasing by ``n_(k+2)/4`` each term).

Truncated after degree ``K`` both sums fall short of the function (all terms are positive for
``z ≥ 0``) by at most
``T_f = a_(K+1) z^(K+1)/(1 − z)`` and ``T_β = z^(K+1) (b_K/(1 − z) + n_(K+2)/(4(1 − z)²))``
(``b_(K+m) ≤ b_K + m n_(K+2)/4``). Degrees stay ``≤ MAX_DEGREE``: a nonzero ``z`` computed from
a cosine in ``[½, 1]`` is at least ``2^−55``, so every power ``z^k`` and every product with a
coefficient stays a normal number (subnormal arithmetic is slow: a timing channel).
"""

from fractions import Fraction
from functools import cache

import numpy as np

from ..._typing import FloatArray

__all__ = ["MAX_DEGREE", "coefficients", "tails", "evaluate"]

MAX_DEGREE = 18


@cache
def _exact(degree):
    a = [Fraction(1)]
    for k in range(degree + 2):
        a.append(a[-1] * (2 * k + 2) / (2 * k + 3))
    n = [None] + [2 * a[k - 1] - a[k] for k in range(1, degree + 3)]
    b, total = [], Fraction(0)
    for k in range(degree + 1):
        total += n[k + 1]
        b.append(total / 4)
    return a, n, b


@cache
def coefficients(degree: int) -> tuple[FloatArray, FloatArray]:
    """``(a, b)``: float arrays of ``a_0 … a_K`` and ``b_0 … b_K``."""
    a, _, b = _exact(degree)
    return np.array([float(v) for v in a[:degree + 1]]), np.array([float(v) for v in b])


def tails(degree: int, z_max: float) -> tuple[float, float]:
    """``(T_f, T_β)``: bounds on what the degree-``K`` sums of ``θ/sin θ`` and ``β`` miss for
    ``0 ≤ z ≤ z_max < 1`` (the module docstring), rounded up by a relative ``1e−12``."""
    a, n, b = _exact(degree)
    z = float(z_max)
    zk = z ** (degree + 1)
    t_f = float(a[degree + 1]) * zk / (1.0 - z)
    t_b = zk * (float(b[degree]) / (1.0 - z) + float(n[degree + 2]) / (4.0 * (1.0 - z) ** 2))
    return t_f * (1.0 + 1e-12), t_b * (1.0 + 1e-12)


def evaluate(z: FloatArray, degree: int, powers: FloatArray, out_f: FloatArray,
             out_b: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``θ/sin θ`` and ``β`` at ``z`` (one block of records, ``(m,)``) by their degree-``K`` sums:
    the powers ``z … z^K`` into ``powers`` (``(≥ K, ≥ m)`` scratch) by repeated squaring, then
    one matrix–vector product per sum. No branch and no masked operation on the values."""
    a, b = coefficients(degree)
    m = len(z)
    V = powers[:degree, :m]
    if degree:
        V[0] = z
    have = 1  # z^(have+1) … z^(2·have) as one product of the rows so far with z^have: log₂ K calls
    while have < degree:
        step = min(have, degree - have)
        np.multiply(V[:step], V[have - 1], out=V[have:have + step])
        have += step
    f, beta = out_f[:m], out_b[:m]
    if degree:
        np.dot(a[1:], V, out=f)
        np.dot(b[1:], V, out=beta)
    else:
        f.fill(0.0)
        beta.fill(0.0)
    f += a[0]
    beta += b[0]
    return f, beta
