"""Hyperbolic space's record passes (``Hyperbolic`` mixes them in): the mean's gradient and Newton
passes in the frame of the iterate (one Lorentz boost of the records, one matrix product), the
Lorentzian centroid as the Newton steps' start, and the public constants of those steps
(docs/theory.md §2, "Hyperbolic space"). They compute what the generic passes of
``passes.RecordPasses`` compute, to rounding, within the errors ``newton_constants`` declares.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._typing import Array
from .arrays import clip_scale, finite_rows, select
from .passes import NewtonConstants, RecordPasses

__all__ = ["HyperbolicPasses", "centroid_gradient_bound", "hessian_lipschitz"]

TINY = 2.0**-300  # tangent coordinates below this are taken as 0: their products stay normal numbers (no subnormal timing)
ROWS = 1 << 14  # records per block of a pass (the boosted block and its temporaries stay small)
MAX_D = 40.0  # above this diameter 2r no Newton step contracts (exp's stretch sinh(T)/T is astronomical): gradient steps only


def hessian_lipschitz(D: float) -> float:
    """``ℓ(D) = a′(D) + (coth D − 1/D)·a(D)``, ``a(ρ) = ρ coth ρ``: a bound on ``‖∇Hess ½ρ²_p‖`` at
    distance ``≤ D`` from ``p`` on ``H^d`` (curvature −1). Both terms increase with ``D``
    (``a″ = 2(a − 1)/sinh²ρ ≥ 0``; ``coth ρ − 1/ρ`` increases as ``sinh ρ > ρ``), so the value at
    ``D`` bounds every distance below it. Below ``1e−4`` the upper bound ``D(1 + D²)`` of the
    series ``D + D³/9 − …`` (no cancellation)."""
    if D < 1e-4:
        return D * (1.0 + D * D)
    coth = 1.0 / math.tanh(D)
    a = D * coth
    return (coth - D / math.sinh(D) ** 2) + (coth - 1.0 / D) * a


def centroid_gradient_bound(D: float) -> float:
    """A bound on ``‖∇F(m)‖`` at the Lorentzian centroid ``m`` of records within ``D`` of it.

    With ``x_i = cosh θ_i m + sinh θ_i u_i`` the centroid's condition is ``Σ w_i sinh θ_i u_i = 0``,
    so ``−∇F(m) = Σ w_i θ_i u_i = Σ w_i (θ_i − c sinh θ_i) u_i`` for every constant ``c``, and
    ``‖∇F(m)‖ ≤ max_[0, D] |θ − c sinh θ|``. Take ``c = 1/cosh t``: the function is concave and 0
    at 0, its maximum is ``t − tanh t`` (at ``θ = t``, inside ``[0, D]`` for the ``c ≥ D/sinh D``
    searched), its minimum ``min(0, D − sinh D/cosh t)``; ``t`` is chosen by bisection to balance
    the two (any ``t`` gives a valid bound, so the bisection's own rounding costs nothing).
    ``t − tanh t`` is taken from its alternating series cut after ``t⁷`` below ``t = 10⁻²`` (an
    upper bound) and directly above (relative rounding ``≤ 3ε/t²``); the result is widened by
    ``10⁻⁶`` (relative) for the rounding of the other side, ``sinh D/cosh t − D`` (``≤ 10ε/D²``).
    Never above ``(sinh D − D)/2``, the bound of ``c`` in the middle of ``[D/sinh D, 1]``; below
    ``D = 10⁻⁴`` that bound's upper bound ``D³/11``."""
    if D < 1e-4:
        return D**3 / 11.0
    sinh_d = math.sinh(D)

    def sides(t: float) -> tuple[float, float]:
        top = t**3 / 3.0 - 2.0 * t**5 / 15.0 + 17.0 * t**7 / 315.0 if t < 1e-2 else t - math.tanh(t)
        return top, max(0.0, sinh_d / math.cosh(t) - D)
    lo, hi = 0.0, math.acosh(sinh_d / D)  # c from 1 down to D/sinh D
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        top, bottom = sides(mid)
        lo, hi = (lo, mid) if top > bottom else (mid, hi)
    best = min(max(sides(t)) for t in (lo, hi))
    return min(best * (1.0 + 1e-6), (sinh_d - D) / 2.0)


def _inverse_boost(x: Array) -> Array:
    """The symmetric matrix of the Lorentz boost taking ``x`` to ``e0`` (the boost of
    ``(x0, −x̄)``): rows of ``X @ B`` are the records in ``x``'s frame, where ``T_x`` is
    ``{0} × R^d`` and distances to ``x`` are read off the first coordinate."""
    x0, xs = float(x[0]), -np.asarray(x[1:], float)
    B = np.empty((len(x), len(x)))
    B[0, 0], B[0, 1:], B[1:, 0] = x0, xs, xs
    B[1:, 1:] = np.eye(len(xs)) + np.outer(xs, xs) / (1.0 + x0)
    return B


def _row_norms(Y: Array) -> Array:
    """``‖Y_i‖`` of every row without overflow: each row is scaled by a power of two first (exact,
    so the result is bit for bit the unscaled norm wherever that one is finite)."""
    e = np.frexp(np.max(np.abs(Y), axis=1))[1]  # 0 for a zero row
    Yn = np.ldexp(Y, -e[:, None])
    return np.asarray(np.ldexp(np.sqrt(np.einsum("ij,ij->i", Yn, Yn)), e))


def _flushed(Y: Array) -> Array:
    """``Y`` with entries below ``TINY`` in size set to 0 by a bitwise select (no multiply: a
    subnormal operand is slow on some processors, a timing channel); NaN and inf stay."""
    return select(np.abs(Y) >= TINY, Y, 0.0)


def _frame_terms(X: Array, B: Array, hessian: bool, bounded: bool = False) -> tuple[Array, Any, Any, Any]:
    """``(Y, f, a, β)`` of a block in the frame ``B``: ``Y`` the tangent coordinates (``sinh θ`` times
    the unit direction), ``f = θ/sinh θ`` (so ``f·Y`` is the log), with ``hessian`` also
    ``a = θ coth θ`` and ``β = (1 − a)/sinh²θ``. ``θ = asinh‖Y‖``: accurate near 0, where
    ``arccosh`` of the first coordinate loses half the digits. Branch-free: a record at the iterate
    (``‖Y‖ = 0``) takes ``f = 1``, ``β = 0``. ``bounded``: the records were prepared into a ball the
    iterate lies in (public), so ``‖Y‖ ≤ sinh(2r) ≤ sinh(2·max_reach)`` and every nonzero entry is
    at least ``TINY``: ``‖Y‖²`` neither overflows nor underflows, and the plain norm is bit for bit
    ``_row_norms``' (a power-of-two scaling commutes with rounding), one pass cheaper."""
    Y = _flushed(X @ B[:, 1:])
    s = np.sqrt(np.einsum("ij,ij->i", Y, Y)) if bounded else _row_norms(Y)
    zero = s == 0.0
    safe = s + zero
    theta = np.arcsinh(s)
    f = theta / safe
    f += zero  # θ = 0 there: f = 1
    if not hessian:
        return Y, f, None, None
    c = np.sqrt(1.0 + s * s)  # cosh θ, from the same coordinates
    a = f * c
    beta = (1.0 - a) / (safe * safe)
    beta *= ~zero
    return Y, f, a, beta


class HyperbolicPasses(RecordPasses):
    """The record passes of ``Hyperbolic`` (the hyperboloid ``⟨x, x⟩_L = −1``, ``x0 > 0``)."""

    if TYPE_CHECKING:
        dim: int
        max_reach: float

    def weighted_log_sum(self, x: Array, X: Array, weights: Array) -> Array:
        """``Σ w_i log_x X_i`` by one boost of the records into ``x``'s frame (a matrix product):
        there ``log`` is ``(θ/sinh θ)·Y`` with ``Y`` the spatial coordinates."""
        x = np.asarray(x, float)
        if x.ndim != 1:
            return super().weighted_log_sum(x, X, weights)
        g, _ = self._tangent_sums(x, np.asarray(X, float), weights, hessian=False)
        return self.from_tangent_coordinates(x, g)

    def _tangent_sums(self, x: Array, X: Array, weights: Any, hessian: bool, bounded: bool = False) -> tuple[Array, Any]:
        """``(Σ w_i f_i Y_i, Σ w_i (a_i I + β_i Y_i Y_iᵀ))`` in ``x``'s frame (orthonormal tangent
        coordinates); the second ``None`` without ``hessian``."""
        B, w = _inverse_boost(x), np.asarray(weights, float)
        d = self.dim
        g, A, total = np.zeros(d), np.zeros((d, d)), 0.0
        for i in range(0, len(X), ROWS):
            Y, f, a, beta = _frame_terms(X[i:i + ROWS], B, hessian, bounded)
            wi = w if w.ndim == 0 else w[i:i + ROWS]
            wf = f * wi
            g += wf @ Y
            if hessian:
                wb = beta * wi
                A += (Y.T * wb) @ Y
                total += float(np.sum(a * wi))
        if not hessian:
            return g, None
        A += total * np.eye(d)
        return g, A

    def prepare_block(self, X: Array, center: Array, radius: float, weight: float, log_sum: bool = True,
                      keep: bool = True, out: Array | None = None) -> tuple[Any, ...] | None:
        """One block of ``privacy.release.prepare_records`` in the centre's frame (the generic
        path's results to rounding): ``(records, finite, ok, moved, Σ weight·log_center x̃_i)``.
        Records that are not finite points of ``H^d`` become the centre, the rest are projected
        (``x0 = √(1 + ‖x̄‖²)``); one boost gives every record's tangent coordinates ``Y`` at the
        centre (``ρ = asinh‖Y‖``, ``log = (ρ/‖Y‖)·Y``), and the clipped image
        ``(cosh r, sinh r·Y/‖Y‖)`` boosted back is built for every record and selected where
        ``ρ > r`` (branch-free: the work does not depend on how many are clipped). Coordinates
        below ``2⁻³⁰⁰`` are set to 0 first: subnormal arithmetic is slow (a timing channel)."""
        X = np.asarray(X, float)
        if X.ndim != 2 or X.shape[1] != self.dim + 1:
            return None  # the generic path raises the shape error
        center = np.asarray(center, float)
        with np.errstate(all="ignore"):
            finite = finite_rows(X, 1)
            X = _flushed(X)  # a move below 1e−90: no subnormal operand below
            ok = self.belongs(X)
            mask = ok[:, None]
            P = select(mask, self.project(select(mask, X, center)), center)
            Y = _flushed(P @ _inverse_boost(center)[:, 1:])
            s = _row_norms(Y)  # a valid record far from the centre: ‖Y‖² would overflow
            rho = np.arcsinh(s)
            moved = ~(rho <= radius)
            zero = s == 0.0
            f = rho / (s + zero)
            f += zero  # a record at the centre: log 0, f = 1
            scale = clip_scale(rho, radius)
            total = ((weight * scale * f) @ Y) if log_sum else None
            records = None
            if keep:
                Z = np.empty_like(P)
                Z[:, 0] = math.cosh(radius)
                np.multiply(Y, (math.sinh(radius) / (s + zero))[:, None], out=Z[:, 1:])
                rebuilt = self.project(Z @ _inverse_boost(np.r_[center[0], -center[1:]]))
                records = select(moved[:, None], rebuilt, P)
                if out is not None:
                    out[...] = records
                    records = out
        g = None if total is None else self.from_tangent_coordinates(center, total)
        return records, finite, ok, moved, g

    def newton_terms(self, x: Array, X: Array, weights: Any, ball: Any = None,
                     order: int | None = None) -> tuple[Any, ...]:
        """``(g, A)`` in ``x``'s orthonormal tangent coordinates from one pass: ``g = Σ w_i log_x X_i``
        and ``A = Hess F(x) = Σ w_i (a_i I + β_i Y_i Y_iᵀ)`` (the Hessian of ``½ρ²`` is 1 along the
        geodesic and ``θ coth θ`` across it). ``β`` loses digits as ``θ → 0``, but enters only
        through ``β Y Yᵀ`` of size ``β sinh²θ``: its error stays ``~ε`` per record. ``ball`` (the
        records were prepared into the ball, public) lets the pass take the plain row norms;
        ``order`` is not used (one exact pass)."""
        return self._tangent_sums(np.asarray(x, float), np.asarray(X, float), weights, hessian=True,
                                  bounded=ball is not None)

    def newton_step(self, x: Array, g: Array, A: Any) -> Array:
        """The tangent vector ``s`` at ``x`` with ``Hess F(x)[s] = g`` (``g = −∇F``), from the
        coordinates of ``newton_terms``."""
        return self.from_tangent_coordinates(x, np.linalg.solve(A, g))

    def mean_start(self, stats: Any) -> Array:
        """The Lorentzian centroid ``S/√(−⟨S, S⟩_L)`` of the weighted sum ``S`` of the records: a
        point of ``H^d`` (a positive combination of points of the upper sheet is time-like and
        future-pointing), inside every ball that holds the records (docs/theory.md §2)."""
        S = np.asarray(stats, float)
        q = S[..., 0] ** 2 - np.sum(S[..., 1:] ** 2, axis=-1)
        return np.asarray(self.project(S / np.sqrt(np.maximum(q, np.finfo(float).tiny))[..., None]))

    def newton_constants(self, radius: float, n: int) -> NewtonConstants | None:
        """Public constants of the certified mean's Newton steps on ``B_r(c)`` (docs/theory.md §2).

        ``h = 1`` (``Hess ½ρ² ≥ 1`` on ``H^d``); ``L = ℓ(2r)`` (``hessian_lipschitz``: every
        record within ``2r`` of every point of the ball); ``exp`` stretches by at most
        ``sinh(T)/T`` (curvature −1, Rauch: ``expansion = 1``); ``extrinsic``: the Lorentzian
        centroid ``m`` lies in the ball, ``‖∇F(m)‖`` is at most ``centroid_gradient_bound(2r)``
        and ``ρ(m, x̄) ≤ ‖∇F(m)‖/h``; plus the rounding of the centroid. ``tangent``: at the centre the records are within ``r``,
        so ``Hess F(c)`` lies between ``I`` and ``r coth r``. ``e`` bounds the float error of the
        computed Hessian (sums of ``n`` terms of size ``~1``; the boost's rounding at coordinates
        up to ``cosh(max_reach)``)."""
        D = 2.0 * float(radius)
        if not 0.0 < D < MAX_D:
            return None
        eps, reach = float(np.finfo(float).eps), math.cosh(float(self.max_reach)) ** 2
        e = 1e-8 + 4.0 * n * eps + 8.0 * (self.dim + 1) * eps * reach
        # the centroid's rounding (sums of n terms) on top of its bound
        extrinsic = centroid_gradient_bound(D) + 8.0 * (n * eps * math.sinh(D) + eps) * reach
        r = float(radius)
        tangent = r / math.tanh(r) - 1.0 if r > 1e-4 else r * r / 3.0
        return NewtonConstants(L=hessian_lipschitz(D), e=e, expansion=1.0, extrinsic=extrinsic, tangent=tangent,
                               cost=1.0 + (self.dim + 1) / 64.0)
