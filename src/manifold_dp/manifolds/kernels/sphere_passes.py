"""The sphere's record passes (``Sphere`` mixes them in): the mean's gradient and Newton passes by
matrix–vector products, the fused preparation of records, the Newton terms by power series
(``angle_series``) or compiled loops (``sphere_kernels``) on large blocks, and single draws with
Python floats. They compute what the generic passes of ``passes.RecordPasses`` compute, to
rounding, within the errors ``newton_constants`` declares (docs/theory.md §2).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike

from ..._typing import Array
from ..geometry import POINT_ATOL
from . import angle_series, sphere_kernels
from .passes import NewtonConstants, RecordPasses

__all__ = ["SpherePasses"]

ROW_BLOCK = 1 << 13  # records per block where one point meets many (distances, the mean's passes)
TINY = 2.0**-300  # relative size below which a coordinate is flushed to 0 when records are prepared
DOUBLE_MAX = float(np.finfo(float).max)
SCALE_FLOOR = 2.0**-400  # times R: under every nonzero length prepare_block divides by; keeps 1/x finite
UNSCALED_RADII = (2.0**-100, 2.0**100)  # prepare_block rescales by a power of two outside (squares stay normal numbers)
PAIR_BLOCK = 1 << 14  # (points × records) pairs per block where many points meet many records (KNG)
NEWTON_BLOCK = 12288  # records per block of a Newton pass: its temporaries (96 KiB each) stay under glibc's mmap threshold ...
NEWTON_BLOCK_BYTES = 1 << 21  # ... and fewer in high dimension: the weighted records of a block stay within this
SERIES_DEGREES = (2, 3, 4, 5, 7, 9, 11, 14, 18)  # degrees of the passes by power series (NewtonConstants.cheaper)
COMPILED_PREPARE_ROWS = 1 << 16  # records per block of the compiled preparation (3 bytes of flags each)
# the compiled passes run on blocks of at least this many records (public: n) once numba is loaded, ...
COMPILED_MIN_RECORDS = 1 << 15
# ... and only a release of at least this many records loads it (public: n; ``prepare_rows``): importing numba and
# loading the cached kernels take 0.5–1 s in a fresh process, while the compiled passes save ~0.12 µs per record (S²
# mean: 7 vs 32 ms at 2·10⁵, 33 vs 148 ms at 10⁶), so a one-off release of 2·10⁵ records ran 1.2–1.45× slower with numba
COMPILED_LOAD_RECORDS = 1 << 19
GRAM_DOTS_MAX = 4  # up to this many coordinates a pass's weighted Gram matrix is taken entry by entry
ANTIPODAL_COS, ANTIPODAL_SIN = math.cos(1e-7), math.sin(1e-7)  # a record within 1e-7 of the antipode is antipodal
SINGLE_FLOAT_MAX_SIZE = 64  # one point up to this many coordinates is checked and drawn around with Python floats


class SpherePasses(RecordPasses):
    """The record passes of ``Sphere`` (``{x ∈ R^(d+1): ‖x‖ = R}``)."""

    if TYPE_CHECKING:
        radius: float

    def weighted_log_sum(self, x: Array, X: Array, weights: Array) -> Array:
        """``Σ w_i log_x(X_i) = Σ a_i R X_i/‖X_i‖ − (a·c) x`` with ``c_i = cos θ_i`` and
        ``a_i = w_i θ_i/sin θ_i``: two matrix–vector products and one ``arccos`` per record, no
        ``(n, d+1)`` temporary. ``θ/sin θ``
        is taken from ``c`` alone; near ``θ = 0``, where ``c`` loses ``θ``'s low bits, the ratio is
        ``1 + θ²/6`` and insensitive to them (records at the antipode are out of every ball here)."""
        x = np.asarray(x, float)
        if x.ndim != 1:
            return super().weighted_log_sum(x, X, weights)
        return self.karcher_terms(x, X, weights)[0]

    def weighted_log_sums(self, points: ArrayLike, X: ArrayLike, weights: Array) -> Array:
        """``weighted_log_sum`` at a batch of points ``(P, d+1)``: ``R (WR) Y − (Σ_i WR_ij c_ij) p_j``
        with ``c = U Yᵀ`` (one matrix product per block of records), ``WR_ij = w_i θ_ij/sin θ_ij``
        — no ``(P, block, d+1)`` table of logs; ``P × block`` entries at a time."""
        P = np.asarray(points, float)
        X, w, R = np.asarray(X, float), np.asarray(weights, float), self.radius
        U, out = P / R, np.zeros_like(P)
        step = max(16, PAIR_BLOCK // max(len(P), 1))
        for i in range(0, len(X), step):
            Y = X[i:i + step]
            Y = Y / np.sqrt(np.einsum("ij,ij->i", Y, Y))[:, None]
            c = np.clip(U @ Y.T, -1.0, 1.0)
            s = np.sqrt((1.0 - c) * (1.0 + c))
            wr = np.divide(np.arccos(c), s, out=np.ones_like(c), where=s > 0)
            wr *= w[i:i + step]
            out += R * (wr @ Y) - np.einsum("ij,ij->i", wr, c)[:, None] * P
        return out

    def karcher_terms(self, x: Array, X: Array, weights: Array, hessian: bool = False) -> tuple[Array, float, Any]:
        """``weighted_log_sum`` and the farthest record, ``R·arccos(min c_i)``, from one pass."""
        x = np.asarray(x, float)
        if x.ndim != 1:
            return super().karcher_terms(x, X, weights, hessian)
        X, weights = np.asarray(X, float), np.asarray(weights, float)
        if len(X) > ROW_BLOCK:  # bounded temporaries: a block of records at a time
            parts = [self.karcher_terms(x, X[i:i + ROW_BLOCK], weights[i:i + ROW_BLOCK]) for i in range(0, len(X), ROW_BLOCK)]
            return cast(Array, sum(p[0] for p in parts)), max(p[1] for p in parts), None
        R = self.radius
        # records within the point check's tolerance of the sphere count by their direction, as in log
        scale = R / np.sqrt(np.einsum("ij,ij->i", X, X))
        c = np.clip((X @ x) * (scale / (R * R)), -1.0, 1.0)
        theta = np.arccos(c)
        s = np.sqrt((1.0 - c) * (1.0 + c))
        a = weights * np.divide(theta, s, out=np.ones_like(theta), where=s > 0)
        far = R * float(np.max(theta)) if len(theta) else 0.0
        return X.T @ (a * scale) - float(a @ c) * x, far, None

    def mean_start_stats(self, block: ArrayLike, weights: Array) -> Any:
        """``Σ w_i x_i`` of a block: one matrix–vector product along the records."""
        return np.asarray(block).T @ np.asarray(weights, float)

    def prepare_rows(self, rows: int, n: int, log_sum: bool = True) -> int:
        """The compiled pass (``log_sum`` false) has no temporaries but three flags per record. A
        release of ``COMPILED_LOAD_RECORDS`` records or more (public: ``n``) loads the compiled passes
        here; a smaller one takes them only where an earlier release in the process loaded them."""
        loaded = sphere_kernels.kernels(n >= COMPILED_LOAD_RECORDS) if self.dim == 2 and n >= COMPILED_MIN_RECORDS else None
        return max(rows, COMPILED_PREPARE_ROWS) if loaded is not None and not log_sum else rows

    def centred_start_stats(self, block: Array, center: ArrayLike, weight: float) -> Any:
        """``weight · Σ (x_i − center)`` of prepared records (contiguous columns ``(m, 3)``: one
        compiled loop, ``sphere_kernels``), else the generic differences."""
        compiled = sphere_kernels.kernels(False) if block.shape[1:] == (3,) and len(block) >= COMPILED_MIN_RECORDS \
            and block.dtype == float and block.strides[0] == 8 else None
        if compiled is None:
            return super().centred_start_stats(block, center, weight)
        acc = np.zeros(3)
        compiled.centred_sum(block[:, 0], block[:, 1], block[:, 2], np.asarray(center, float), acc)
        return acc * weight

    records_order = "F"  # prepared records column-major: the passes' products run along the records

    def prepare_block(self, X: Array, center: Array, radius: float, weight: float, log_sum: bool = True,
                      keep: bool = True, out: Array | None = None) -> tuple[Any, ...] | None:
        """One block of ``privacy.release.prepare_records`` in fused vector passes (the generic
        path's results to rounding): ``(records, finite, ok, moved, Σ weight·log_center x̃_i)``
        (the sum ``None`` when ``log_sum`` is false: no ``arctan2`` then).
        Coordinates below ``R·2⁻³⁰⁰`` are set to 0 first (a move below ``1e−90·R``, far under
        any accuracy; subnormal arithmetic is slow). Non-finite records and records whose norm is
        off ``R`` by more than ``POINT_ATOL`` (relative) become the centre; the rest are scaled to the sphere and clipped into
        ``B_r(center)``. Every record goes through the same operations, and none branches on a
        record's values: choices are products with 0/1 masks (numpy's ``where`` and masked ufuncs
        take longer the more mixed their mask is, that is the more records are clipped or
        invalid). Which records the clip moves (``θ > a = r/R``) and which are antipodal
        (``θ > π − 10⁻⁷``) is read off ``‖x‖(cos θ, sin θ)`` by the sign of ``‖x‖ sin(θ − b)``.
        The clipped image is built for every record, from the unnormalised record
        (``1/‖x‖`` enters the per-record factors)."""
        X = np.asarray(X, float)
        R = self.radius
        if X.ndim != 2 or X.shape[1] != self.dim + 1:
            return None  # the generic path raises the shape error
        center = np.asarray(center, float)
        shift = 0 if UNSCALED_RADII[0] <= R <= UNSCALED_RADII[1] else math.frexp(R)[1]
        if shift:
            # far from R = 1 the flushed coordinates' squares (and products of small ones) could still be subnormal:
            # the same computation on the sphere of radius R·2^-shift ∈ [½, 1), every input scaled by that exact
            # power of two after the flush (no subnormal arises) and every output scaled back (exact)
            with np.errstate(all="ignore"):
                finite = np.max(np.abs(X), axis=1, initial=0.0) <= DOUBLE_MAX
                Xs = X * ((np.abs(X) >= R * TINY) * 2.0**-shift)  # overflow: an inf record, invalid as before
            unit = cast(Any, type(self))(self.dim, radius=math.ldexp(R, -shift))  # the sphere of radius R·2^-shift
            out, _, ok, moved, total = cast("tuple[Any, ...]",  # a block of the right shape: not None
                                            unit.prepare_block(Xs, center * 2.0**-shift, radius * 2.0**-shift, weight, log_sum))
            return out * 2.0**shift, finite, ok, moved, None if total is None else total * 2.0**shift
        # a public centre's coordinates below R·2⁻³⁰⁰ are 0 too (a move below 1e−90·R): clipped and invalid records
        # take the centre's coordinates, and their tiny products in later passes would be subnormal (timing)
        center = center * (np.abs(center) >= R * TINY)
        u, (n, k) = center / R, X.shape
        a = radius / R
        sin_a, cos_a = math.sin(a), math.cos(a)
        # the fixed direction of log at the antipode (_fixed_direction, for one point)
        cl = center.tolist()
        j = min(range(k), key=lambda i: abs(cl[i]))
        fixed: Any = [-(cl[j] * ci) / R**2 for ci in cl]
        fixed[j] += 1.0
        fixed = np.array(fixed) / math.sqrt(math.fsum(f * f for f in fixed))
        compiled = sphere_kernels.kernels(False) if k == 3 and not log_sum and n >= COMPILED_MIN_RECORDS else None
        if compiled is not None:  # the same pass compiled (sphere_kernels: the same flags, the same records to rounding)
            if out is None or out.shape != (n, k) or out.dtype != float or out.strides[0] != 8:  # columns contiguous
                out = np.empty((k, n)).T
            finite, ok, moved = np.empty(n, bool), np.empty(n, bool), np.empty(n, bool)
            compiled.prepare(np.ascontiguousarray(X).reshape(-1), out[:, 0], out[:, 1], out[:, 2], finite, ok, moved, u,
                        (R * sin_a) * fixed, R, cos_a, sin_a, ANTIPODAL_COS, ANTIPODAL_SIN, R * TINY, POINT_ATOL,
                        R * SCALE_FLOOR, DOUBLE_MAX)
            return out, finite, ok, moved, None
        with np.errstate(all="ignore"):
            # our copy, coordinates × records (every product below runs along contiguous rows of records);
            # W is reused for every other array of that size
            Y = np.empty((k, n))
            np.copyto(Y, X.T)
            W = np.abs(Y, out=np.empty((k, n)))
            finite = _row_reduce(np.maximum, W) <= DOUBLE_MAX  # NaN and ±inf fail
            # coordinates below R·2⁻³⁰⁰ become 0 before any other arithmetic: subnormal operands (or squares) make the
            # CPU's float units take a slow path, and one such record made a release measurably slower (timing).
            # A product with 0 or 1: tiny·0 is fast, NaN stays NaN
            Y *= W >= R * TINY
            nrm = np.sqrt(_row_reduce(np.add, np.square(Y, out=W)))
            ok = np.abs(nrm - R) <= POINT_ATOL * R  # False where the norm is NaN or ∞: every non-finite record
            # invalid records: all bits cleared (NaN·0 is NaN); at 0 they are never moved, and q below puts them at
            # the centre. scale = 1/‖x‖ (invalid: 0, as 0/∞ = 0 and NaN norms are floored)
            np.bitwise_and(Y.view(np.uint64), np.negative(ok, dtype=np.int64).view(np.uint64), out=Y.view(np.uint64))
            scale = ok / np.fmax(nrm, R * SCALE_FLOOR)
            along = u @ Y  # ‖x‖ cos θ
            np.multiply.outer(u, along, out=W)
            np.subtract(Y, W, out=W)  # ‖x‖ times the part orthogonal to the centre
            s = np.sqrt(_row_reduce(np.add, np.square(W, out=W)), out=nrm) if not log_sum else \
                np.sqrt(np.einsum("ij,ij->j", W, W))  # ‖x‖ sin θ (W itself is read again for the log sum)
            # θ > b ⇔ ‖x‖ sin(θ − b) = s cos b − along sin b > 0 (θ, b ∈ [0, π]); invalid records (0, 0) are neither
            moved = s * cos_a > along * sin_a
            ahead = s * ANTIPODAL_COS + along * ANTIPODAL_SIN >= 0.0  # not antipodal: there log_center is not unique
            out_f = moved.astype(float)
            inv_s = ahead / np.maximum(s, R * SCALE_FLOOR)  # 1/(‖x‖ sin θ), 0 at the antipode; finite everywhere
            total = None
            if log_sum:  # Σ weight·log_center x̃_i: the clipped angle min(θ, a) along W/s (antipodal: along the fixed direction)
                angle = np.minimum(np.arctan2(s, along), a)  # invalid records: atan2(0, 0) = 0
                angle *= inv_s
                total = (R * weight) * (W @ angle + fixed * (a * float(n - np.count_nonzero(ahead))))
            # clipped: cos a·u + sin a·W/s (antipodal: cos a·u + sin a·fixed); inside: x/‖x‖; invalid: u — one formula
            g = sin_a * inv_s
            p = g * out_f
            p += (1.0 - out_f) * scale
            q = g * along
            np.subtract(cos_a, q, out=q)
            q *= out_f
            q += ~ok
            t = out_f * ~ahead  # moved and antipodal
            Y *= p if R == 1.0 else R * p
            Y += np.multiply.outer(R * u, q, out=W)
            Y += np.multiply.outer((R * sin_a) * fixed, t, out=W)
        return Y.T, finite, ok, moved, total

    def newton_constants(self, radius: float, n: int) -> NewtonConstants | None:
        """Public constants of the certified mean's Newton steps on ``B_r(c)`` (docs/theory.md §2).

        ``L`` bounds the Lipschitz constant of ``Hess F`` (``F = (1/2n) Σ ρ²(·, x_i)``, records in
        the ball, footpoints in the ball: distances ``≤ D = 2r``) along geodesics, in the
        parallel-transport sense: ``‖∇³(½ρ²_p)‖ ≤ |a′(θ)| + (1 − a(θ)) cot θ ≤ |a′(θ)| + (1 − a(θ))/θ``
        with ``a(θ) = θ cot θ``, ``θ = ρ/R``; both terms of the last bound increase with ``θ`` (power
        series with positive coefficients), so their value at ``D``, divided by ``R``, bounds it.
        ``e`` bounds the float error of the computed Hessian (``~ε`` per record, sums of ``n``
        terms; ``newton_terms``); ``exp`` is 1-Lipschitz (``expansion = 0``).
        ``extrinsic`` bounds the extrinsic start's distance to the minimiser: at
        ``m = Σx_i/‖Σx_i‖`` (in the ball) ``Σ sin θ_i u_i = 0``, so
        ``‖∇F(m)‖ = ‖(1/n) Σ (θ_i/sin θ_i − 1 − G/2) sin θ_i u_i‖ ≤ R (D − sin D)/2``
        (``G = D/sin D − 1``), and ``ρ(m, x̄) ≤ ‖∇F(m)‖/h``. ``tangent``: at the centre the
        records are within ``r``, so ``Hess F(c)`` lies between ``(r/R) cot(r/R)`` and 1.
        ``cheaper``: passes that take ``θ/sin θ`` and ``β`` as power series of degree ``K``
        (``SERIES_DEGREES``, ``angle_series``) in ``z = sin²(θ/2) ≤ sin²(D/2)``: they fall short
        by at most ``T_f`` and ``T_β``, so the gradient errs by at most ``g = R·T_f·sin D``
        (``‖y_i − cos θ_i u‖ = sin θ_i``) and the Hessian ``P A P`` by at most
        ``T_f + T_β sin²D`` (both errors are negative semi-definite), added to ``e``."""
        D = 2.0 * radius / self.radius
        if not 0.0 < D < np.pi / 2:
            return None
        if D < 1e-4:
            L = D * (1.0 + D * D)  # the series 2D/3 + 4D³/45 + … plus D/3 + D³/45 + …
        else:
            L = (D / np.sin(D) ** 2 - 1.0 / np.tan(D)) + (1.0 - D / np.tan(D)) / D
        h, half = D / np.tan(D), D / 2.0
        e, gram = float(1e-8 + 4.0 * n * np.finfo(float).eps), (self.dim + 1) ** 2 / 16.0
        # the records' z: sin²(D/2), widened for the rounding of prepared records, the iterate and the cosines
        z_max = float(np.sin(half) ** 2 * (1.0 + 2.0**-20) + 2.0**-40)
        cheaper = []
        for degree in SERIES_DEGREES:
            t_f, t_b = angle_series.tails(degree, z_max)
            if t_f < 0.1 * h:  # a series that far off is never worth a pass
                cheaper.append((degree, e + t_f + t_b * np.sin(D) ** 2, 0.5 + degree / 48.0 + gram,
                                float(self.radius * t_f * np.sin(D))))
        return NewtonConstants(
            L=float(L / self.radius), e=e,
            extrinsic=float(self.radius * (D - np.sin(D)) / (2.0 * h)),
            tangent=float(1.0 - half / np.tan(half)) if half > 1e-8 else 0.0,
            cost=1.0 + gram, cheaper=tuple(cheaper))

    def newton_terms(self, x: Array, X: Array, weights: Any, ball: Any = None,
                     order: int | None = None) -> tuple[Any, ...]:
        """``(Σ w_i log_x X_i, A)`` from one pass, where ``Hess F(x) = P A P`` on ``T_x`` (``P`` the
        projection onto ``T_x``): ``A = (Σ w_i a_i) I + Σ w_i β_i y_i y_iᵀ``, ``y_i = X_i/‖X_i‖``,
        ``a = θ cot θ`` and ``β = (1 − θ cot θ)/sin²θ`` (the Hessian of ``½ρ²`` is 1 along the
        geodesic and ``θ cot θ`` across it). ``β`` loses digits as ``θ → 0``, but only its
        projection ``β P y yᵀ P`` of size ``β sin²θ`` enters: its error stays ``~ε`` per record.
        ``ball``: the radius of the ball the records were prepared for, which holds ``x`` too
        (``None``: records as given): prepared records have norm ``R`` already, no normalisation;
        and with ``order`` a degree ``K`` (``NewtonConstants.cheaper``) ``θ/sin θ`` and ``β`` are
        their power series of degree ``K`` in ``z = (1 − cos θ)/2`` (``angle_series``: no
        ``arccos``; valid as every ``z ≤ sin²(ball/R)``). Records as given always take
        ``arccos``, exact to rounding, which is within every degree's bound.
        ``weights`` may be one number (equal weights: it multiplies the block sums instead).
        The sum of logs is taken around ``u = x/R``, ``R Σ w_i f_i (y_i − u) + 2 (Σ w_i f_i z_i) x`` with
        ``f = θ/sin θ`` and ``z = (1 − cos θ)/2``: its terms are of the records' distance to ``u``, so
        its rounding shrinks with the ball (a sum of the ``f_i y_i`` rounds at ``ε`` per term);
        ``Σ w_i a_i = Σ w_i f_i − 2 Σ w_i f_i z_i``.
        Coordinates of ``u`` below ``2⁻³⁰⁰`` are taken as 0 (a move below ``1e−90``): their
        products with records could be subnormal (slow: a timing channel)."""
        x, X, w = np.asarray(x, float), np.asarray(X, float), np.asarray(weights, float)
        R, k, unit = self.radius, len(x), ball is not None
        u = x / R
        u = u * (np.abs(u) >= TINY)
        series = unit and order is not None
        if series and not (isinstance(order, (int, np.integer)) and 0 <= order <= angle_series.MAX_DEGREE):
            raise ValueError(f"order must be a series degree in [0, {angle_series.MAX_DEGREE}], got {order!r}")
        equal = w.ndim == 0
        # the compiled pass takes the records as they are (no division by R): within UNSCALED_RADII every product of
        # two prepared coordinates (each 0 or ≥ R·2⁻³⁰⁰) is a normal number; outside, the numpy pass normalises first
        unscaled = UNSCALED_RADII[0] <= R <= UNSCALED_RADII[1]
        compiled = sphere_kernels.kernels(False) if series and equal and k == 3 and unscaled and len(X) >= COMPILED_MIN_RECORDS \
            else None
        if compiled is not None:  # the same sums, one compiled loop (sphere_kernels); Σ f (y − Ru) = R Σ f (y/R − u)
            acc, (a, b) = np.zeros(11), angle_series.coefficients(cast(int, order))  # series: an int order
            compiled.newton(cast(int, order))(*(np.ascontiguousarray(X[:, j]) for j in range(3)), u * (-0.5 / R), R * u, a, b,
                                              acc)
            acc *= w
            g = acc[:3] / R
            A = np.array([[acc[3], acc[4], acc[5]], [acc[4], acc[6], acc[7]], [acc[5], acc[7], acc[8]]]) / (R * R)
            return R * g + (2.0 * acc[10]) * x, A + (acc[9] - 2.0 * acc[10]) * np.eye(k)
        # the sum of logs around u: Σ f_i (y_i − cos θ_i u) = Σ f_i (y_i − u) + 2 (Σ f_i z_i) u, z = (1 − cos θ)/2, whose
        # terms are of the records' distance to u (a sum of the f_i y_i themselves rounds at ε per term, which for
        # a small ball is more than the certificate's float error allows)
        g, A, sum_f, sum_fz = np.zeros(k), np.zeros((k, k)), 0.0, 0.0
        rows = max(256, min(NEWTON_BLOCK, NEWTON_BLOCK_BYTES // (8 * k)))  # the weighted records' scratch stays small
        block = min(len(X), rows)
        scratch = np.empty((k, block))
        if series:
            powers, f_out, b_out = np.empty((max(cast(int, order), 1), block)), np.empty(block), np.empty(block)
            half_u = u * (-0.5 / R)
        for i in range(0, len(X), rows):
            Yt = X[i:i + rows].T  # coordinates × records: rows contiguous for prepared (column-major) records
            m = Yt.shape[1]
            inv = 1.0 / R if unit else 1.0 / np.sqrt(np.einsum("ij,ij->j", Yt, Yt))
            if series:  # z = (1 − cos θ)/2 = ⟨−u/2R, y⟩ + ½
                z = half_u @ Yt
                z += 0.5
                ratio, beta = angle_series.evaluate(z, cast(int, order), powers, f_out, b_out)
            else:
                c = u @ Yt
                if not (unit and R == 1.0):
                    c *= inv
                ratio, beta = _ratio_beta(c)
                z = np.multiply(c, -0.5, out=c)
                z += 0.5
            if not equal:
                wi = w[i:i + rows]
                ratio *= wi
                beta *= wi
            if not (unit and R == 1.0):
                beta *= inv * inv
            D = scratch[:, :m]  # y_i − u
            if unit and R == 1.0:
                np.subtract(Yt, u[:, None], out=D)
            else:
                np.multiply(Yt, inv, out=D)
                D -= u[:, None]
            g += D @ ratio
            sum_f += float(np.sum(ratio))
            sum_fz += float(ratio @ z)
            A += _weighted_gram(Yt, beta, scratch)
        if equal:
            g, A, sum_f, sum_fz = w * g, w * A, float(w) * sum_f, float(w) * sum_fz
        total = sum_f - 2.0 * sum_fz  # Σ w_i a_i = Σ w_i (θ_i/sin θ_i) cos θ_i
        return R * g + (2.0 * sum_fz) * x, A + total * np.eye(k)

    def newton_step(self, x: Array, g: Array, A: Any) -> Array:
        """The tangent vector ``s`` with ``Hess F(x)[s] = g`` (``g = Σ w_i log_x X_i = −∇F``)."""
        u = np.asarray(x, float) / self.radius
        P = np.eye(len(u)) - np.outer(u, u)
        return np.linalg.solve(P @ A @ P + np.outer(u, u), g - (g @ u) * u)

    def _validate_one(self, x: Array) -> Array | None:
        # the checks of ``_checks`` with floats; anything else (NaN, inf, overflow, off-norm) goes
        # to the general path, which refuses it with its reason
        if x.size > SINGLE_FLOAT_MAX_SIZE:
            return None
        nrm = math.hypot(*x.tolist())
        if not abs(nrm - self.radius) <= POINT_ATOL * self.radius:  # False for NaN and inf too
            return None
        return x * (self.radius / nrm)

    def single_polar_frame(self, x: Array) -> list[Any] | None:
        """One validated point as a list of floats, for ``polar_point`` (``None`` above
        ``SINGLE_FLOAT_MAX_SIZE`` coordinates)."""
        return x.tolist() if x.size <= SINGLE_FLOAT_MAX_SIZE else None

    def polar_point(self, p: Any, rho: float, rng: np.random.Generator) -> Array:
        """``exp_p(ρ u)``, ``u`` a uniform unit tangent at ``p``, with Python floats (single draws):
        ``u`` is a standard normal vector of ``R^(d+1)`` projected onto ``T_p`` and normalised."""
        R = self.radius
        g = rng.standard_normal(len(p)).tolist()
        along = sum(map(float.__mul__, p, g)) / (R * R)
        v = [b - along * a for a, b in zip(p, g)]
        norm = math.hypot(*v)
        if norm == 0.0:  # g ∥ p, probability 0: the manifold's uniform direction instead
            return self.exp(np.array(p), self.random_unit_tangent(np.array(p), rng=rng) * rho)
        t = rho / R
        c, s = math.cos(t), R * math.sin(t) / norm
        out = [c * a + s * b for a, b in zip(p, v)]
        scale = R / math.hypot(*out)
        return np.array([o * scale for o in out])


def _ratio_beta(c):
    """``θ/sin θ`` and ``β = (1 − θ cot θ)/sin²θ`` from the cosines ``c`` (clipped in place) by
    ``arccos``, without a masked divide (whose time grows with how mixed its mask is): where
    ``sin θ = 0`` (a record at the footpoint, or at its antipode) they are taken as 1 and 0."""
    np.clip(c, -1.0, 1.0, out=c)
    theta = np.arccos(c)
    sin2 = 1.0 - c
    sin2 *= 1.0 + c
    z = (sin2 <= 0).astype(float)
    nz = 1.0 - z
    ratio = theta * nz
    ratio += z
    ratio /= np.sqrt(sin2) + z
    beta = 1.0 - ratio * c
    beta *= nz
    beta /= sin2 + z
    return ratio, beta


def _weighted_gram(Yt, beta, scratch):
    """``Σ_i β_i y_i y_iᵀ`` of a block (``Yt``: coordinates × records). For a few coordinates
    the distinct entries as dot products: BLAS's ``(k × m)(m × k)`` product is several times
    slower at ``k = 3``."""
    k, m = Yt.shape
    W = np.multiply(Yt, beta, out=scratch[:, :m])
    if k > GRAM_DOTS_MAX:
        return W @ Yt.T
    A = np.empty((k, k))
    for a in range(k):
        for b in range(a, k):
            A[a, b] = A[b, a] = np.dot(W[a], Yt[b])
    return A


def _row_reduce(op, W):
    """``op`` over the rows of ``W`` (coordinates × records) by whole-row operations, into a new
    array: along contiguous rows, faster than numpy's reduction over a short axis."""
    out = op(W[0], W[1])
    for row in W[2:]:
        op(out, row, out=out)
    return out
