"""The affine-invariant SPD Newton system without its ``k² × k²`` matrix: the truncated Hessian
``Ĥ = Σ w_i (I + ad²/12 − ad⁴/720 + ad⁶/30240)``, ``ad = ad_(V_i)``, applied to a symmetric matrix
from the records' logarithms ``V_i`` (two products per record and per ``ad²``), and the system
``Ĥ S = G`` solved by a public number of Chebyshev steps on a proven spectral interval, with the
relative error ``chebyshev_error`` (docs/theory.md §2, "Newton without the dense Hessian").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._typing import Array
from .matrix_log import flush_tiny

__all__ = ["TruncatedHessian", "chebyshev_error", "chebyshev_solve"]

APPLY_BLOCK_BYTES = 1 << 19  # one (records, k, k) temporary of TruncatedHessian.apply: its three stay in cache


def chebyshev_error(steps: int, ratio: float) -> float:
    """``1/T_m((κ + 1)/(κ − 1))``, ``κ = ratio``, ``m = steps``: after ``m`` Chebyshev steps from 0
    on an interval ``[α, κα]`` holding the spectrum of a symmetric positive-definite operator ``A``,
    ``x_m − A⁻¹b = −(T_m((θ − A)/δ)/T_m(θ/δ)) A⁻¹b`` (``θ ± δ`` the interval's ends), whose norm is
    at most this times ``‖A⁻¹b‖`` (``|T_m| ≤ 1`` on ``[−1, 1]``). Rounded up by a relative ``2^−40``."""
    if steps < 1 or not ratio > 1.0:
        raise ValueError(f"chebyshev_error needs steps >= 1 and ratio > 1, got {steps!r} and {ratio!r}")
    sigma = (ratio + 1.0) / (ratio - 1.0)
    return min(1.0, (1.0 + 2.0**-40) / math.cosh(steps * math.acosh(sigma)))


def chebyshev_solve(apply: Any, b: Array, steps: int, lo: float, hi: float) -> Array:
    """``x_m ≈ A⁻¹b`` after ``steps = m`` Chebyshev steps (``m − 1`` products ``apply``) from 0 for a
    symmetric ``A`` with spectrum in ``[lo, hi]``: ``x_1 = b/θ``, then the three-term recurrence of
    the scaled Chebyshev polynomials (Golub & Varga 1961), ``θ = (hi + lo)/2``, ``δ = (hi − lo)/2``.
    A fixed number of steps and no test on the residual: the work does not depend on the values."""
    theta, half = 0.5 * (hi + lo), 0.5 * (hi - lo)
    sigma = theta / half
    x = b / theta
    if steps == 1:
        return x
    residual, d, rho = b - apply(x), x.copy(), 1.0 / sigma
    for step in range(1, steps):
        following = 1.0 / (2.0 * sigma - rho)
        d *= following * rho
        d += (2.0 * following / half) * residual
        x += d
        rho = following
        if step < steps - 1:
            residual -= apply(d)
    return x


class TruncatedHessian:
    """``Ĥ = Σ w_i (I + Σ_j c_j ad_i^(2j))`` of ``newton_terms`` (``scales = (c_1, …)``: ``1/12``,
    ``−1/720``, ``1/30240`` up to its order) as an operator on symmetric ``k × k`` matrices (in the
    frame of the iterate): the records' logarithms ``V_i`` and weights, block by block as the pass
    produced them; ``+`` joins the blocks of one pass. ``solve(G)`` takes ``steps`` Chebyshev steps
    on ``[W, ratio·W]``, ``W = Σ w_i`` (the interval proven by the caller)."""

    def __init__(self, logs: list[Array], weights: list[Any], scales: tuple[float, ...], steps: int,
                 ratio: float) -> None:
        self.logs, self.weights, self.scales, self.steps, self.ratio = logs, weights, tuple(scales), steps, ratio

    def __add__(self, other: Any) -> TruncatedHessian:
        if isinstance(other, (int, float)) and other == 0:
            return self
        if not isinstance(other, TruncatedHessian):
            return NotImplemented
        return TruncatedHessian(self.logs + other.logs, self.weights + other.weights, self.scales, self.steps,
                                self.ratio)

    __radd__ = __add__

    @property
    def total(self) -> float:
        """``Σ w_i`` (a weight given as one number stands for every record of its block)."""
        return float(sum(np.sum(np.broadcast_to(w, (len(V),))) for V, w in zip(self.logs, self.weights)))

    def apply(self, X: Array) -> Array:
        """``Ĥ[X]`` for a symmetric ``X``: ``Σ w_i (X + P(ad_i²) X)``, ``P(s) = Σ_j c_j s^j``, by
        Horner's rule in ``ad²``. ``ad_V² Y = T + Tᵀ`` with ``T = V S``,
        ``S = VY − (VY)ᵀ`` (``ad_V Y``, skew); for the outermost ``ad²`` only ``Σ w_i V_i S_i`` is
        needed, one product over all records of a block."""
        X = flush_tiny(np.array(X, float))  # operands 0 or at least 2^-452: no product below is subnormal
        k = X.shape[-1]
        depth, scales = len(self.scales), self.scales
        out = np.zeros((k, k))
        rows = max(1, APPLY_BLOCK_BYTES // (8 * k * k))
        for V, w in zip(self.logs, self.weights):
            for i in range(0, len(V), rows):
                Vb = V[i:i + rows]
                wb = w if np.ndim(w) == 0 else w[i:i + rows]
                Y = X * scales[depth - 1]  # one matrix for the whole block until the first ad²
                for j in range(depth - 2, -1, -1):  # Y_i ← c_j X + ad²_i Y_i
                    Y = _ad_squared(Vb, Y)
                    Y += X * scales[j]
                    flush_tiny(Y)
                S = _ad(Vb, Y)
                if np.ndim(wb):
                    S *= wb[:, None, None]
                M = Vb.reshape(-1, k).T @ S.reshape(-1, k)  # Σ_i V_i S_i (the V_i are symmetric)
                if not np.ndim(wb):
                    M *= float(wb)
                out += M
                out += M.T
        out += self.total * X
        return flush_tiny(out)

    def solve(self, G: Array) -> Array:
        """``S`` with ``Ĥ S ≈ G`` after ``steps`` Chebyshev steps: ``‖S − Ĥ⁻¹G‖ ≤
        chebyshev_error(steps, ratio)·‖Ĥ⁻¹G‖`` (Frobenius) in exact arithmetic."""
        total = self.total
        return chebyshev_solve(self.apply, np.asarray(G, float), self.steps, total, total * self.ratio)


def _ad(V: Array, Y: Array) -> Array:
    """``ad_(V_i) Y_i = V_i Y_i − (V_i Y_i)ᵀ`` for symmetric ``Y_i``: ``Y`` one ``(k, k)`` matrix for
    every record (one ``(mk × k)(k × k)`` product for the block) or ``(m, k, k)``."""
    k = V.shape[-1]
    C = (V.reshape(-1, k) @ Y).reshape(V.shape) if Y.ndim == 2 else np.matmul(V, Y)
    flush_tiny(C)
    return C - C.transpose(0, 2, 1)


def _ad_squared(V: Array, Y: Array) -> Array:
    """``ad²_(V_i) Y_i = T_i + T_iᵀ``, ``T_i = V_i ad_(V_i) Y_i`` (flushed: ``matrix_log.flush_tiny``)."""
    T = np.matmul(V, _ad(V, Y))
    flush_tiny(T)
    return T + T.transpose(0, 2, 1)
