"""Compiled loops for the 2-sphere's two record passes (``Sphere.prepare_block`` and the power-series
``Sphere.newton_terms``), used when numba is installed (``pip install manifold_dp[fast]``).

Why: in numpy each pass over the records is ~100 whole-array operations, each reading and writing
``n`` doubles; where numpy's ``arccos`` is vectorised (AVX-512) one ``arccos(X @ mu)`` takes
~2 ms per 10⁶ records and those ~100 passes cannot come within 8× of it. Here each pass is
one loop over the records that keeps a record's coordinates in registers and that the compiler
vectorises across records.

Same results, same guarantees:

- ``prepare`` is the numpy pass's arithmetic operation for operation, in the same order, with no
  fused multiply-add and no reassociation (only the numpy pass's one BLAS product, ``u @ Y``, may
  round differently): its flags are the numpy path's and its records agree to rounding — bit for
  bit on the development machine (``tests/test_sphere_kernels.py`` checks hostile records). It has no branch on a
  record's values: every choice is a select (``error_model="numpy"``: a division by zero gives
  ``inf`` as in numpy instead of raising, which would be a branch; the selects compile to blends,
  and the loop is vectorised across records).
- ``newton(K)`` sums the same terms, around the iterate, as the numpy pass; its series are
  evaluated by Horner's rule, one kernel per degree (the degree a constant of the loop, so that it
  unrolls and the loop over records vectorises). Sums are split across vector lanes and contracted
  to fused multiply-adds (``fastmath={"reassoc", "contract"}``, never ``nnan``/``ninf``): the
  certified mean's float model bounds the rounding of a sum of ``n`` terms of per-record error
  ``~ε`` in any order (docs/theory.md §2, "Floating point"), and Horner's rule on positive
  coefficients at ``z ≥ 0`` errs by ``~2Kε`` relative, as the power sums do, so its bounds hold for
  either path. ``centred_sum`` likewise sums ``x_i − c`` for the extrinsic start.
- No subnormal number arises: the operands are those of the numpy passes, whose flush (coordinates
  below ``R·2⁻³⁰⁰`` set to 0, ``z ≥ 2⁻⁵⁵`` or 0) keeps every product a normal number.

Loaded by a release of at least ``sphere_passes.COMPILED_LOAD_RECORDS`` records (2¹⁹; public, ``n``):
importing numba and loading the cached kernels take 0.5–1 s in a fresh process, more than the
compiled passes save below a few 10⁵ records, so a one-off smaller release never imports it (at
2·10⁵ records such a process ran 1.2–1.45× slower with numba than without). Once loaded, blocks of
at least ``sphere_passes.COMPILED_MIN_RECORDS`` records (2¹⁵) take the compiled passes (a process
that will make many releases of 2¹⁵–2¹⁹ records may load them once itself, by calling ``kernels()``:
the S² mean of 2·10⁵ records then takes ~7 ms instead of ~32 ms). Disabled by
``MANIFOLD_DP_JIT=0`` (read once, at the first call; numba is then never imported); never imported
by ``import manifold_dp``. The first large release in a process compiles the kernels (or loads
them from numba's cache, ``cache=True``): a cost that depends on the process and on public ``n``,
not on the data.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

__all__ = ["ENVIRONMENT_VARIABLE", "Kernels", "kernels"]

ENVIRONMENT_VARIABLE = "MANIFOLD_DP_JIT"
FAST = {"reassoc", "contract"}  # sums across vector lanes and fused multiply-adds; never nnan/ninf/nsz
_loaded: tuple[Kernels | None] | None = None  # (the passes or None) once decided


class Kernels:
    """The compiled passes: ``prepare``, ``centred_sum`` and ``newton(degree)``."""

    def __init__(self, njit: Any) -> None:
        self._newton: dict[int, Any]
        self._njit, self._newton = njit, {}
        self.prepare = njit(cache=True, nogil=True, error_model="numpy")(_prepare)
        self.centred_sum = njit(cache=True, nogil=True, error_model="numpy", fastmath=FAST)(_centred_sum)

    def newton(self, degree: int) -> Any:
        """The Newton pass for series of degree ``degree``, compiled on first use (the degree is a
        constant of the loop, so that it unrolls; numba's cache keys a closure by its values)."""
        if degree not in self._newton:
            self._newton[degree] = _newton_pass(self._njit, int(degree))
        return self._newton[degree]


def kernels(load: bool = True) -> Kernels | None:
    """The compiled passes (``Kernels``), or ``None``: numba missing, ``MANIFOLD_DP_JIT=0``, or numba's
    ``NUMBA_DISABLE_JIT`` set; with ``load=False`` also ``None`` until a call with ``load=True`` (a
    large release) has loaded them: such a call never imports numba."""
    global _loaded
    if _loaded is None:
        if not load:
            return None
        if os.environ.get(ENVIRONMENT_VARIABLE, "1").strip().lower() in ("0", "off", "no", "false"):
            _loaded = (None,)  # disabled: numba is not even imported
            return None
        try:
            from numba import config, njit
        except ImportError:
            njit = None
        # NUMBA_DISABLE_JIT would make the loops interpreted Python, which branches on values: the numpy passes then
        _loaded = (None if njit is None or config.DISABLE_JIT else Kernels(njit),)
    return _loaded[0]


def _prepare(flat, out0, out1, out2, finite, ok, moved, u, fixed_r, R, a_cos, a_sin, far_cos, far_sin, tiny,
            atol, floor, double_max):
    """``Sphere.prepare_block`` (``log_sum=False``) for records ``(m, 3)`` in row-major order,
    ``flat`` (``3m``; read with stride 3, which vectorises as well as columns do): the clipped
    records' coordinates into ``out0..2``, the flags into ``finite``, ``ok``, ``moved``.
    ``u``: the centre over ``R`` (coordinates below ``2⁻³⁰⁰`` already 0); ``fixed_r``:
    ``R sin a`` times the fixed direction at the antipode; ``tiny``, ``floor``: times ``R``."""
    u0, u1, u2 = u[0], u[1], u[2]
    r0, r1, r2 = R * u0, R * u1, R * u2
    f0, f1, f2 = fixed_r[0], fixed_r[1], fixed_r[2]
    unit = R == 1.0
    for i in range(out0.shape[0]):
        x0, x1, x2 = flat[3 * i], flat[3 * i + 1], flat[3 * i + 2]
        a0, a1, a2 = abs(x0), abs(x1), abs(x2)
        # numpy's maximum propagates NaN, and NaN ≤ max is false: finite iff every |x_j| ≤ max
        finite[i] = (a0 <= double_max) & (a1 <= double_max) & (a2 <= double_max)
        # the flush is a select, not the numpy pass's product with 0/1: a multiply with a subnormal operand takes
        # a slow path on some CPUs (+30 ns per such record measured on Zen 3). NaN is kept (NaN < tiny is
        # false: the norm test below fails), and so is the sign of a flushed 0, as in the product
        y0 = math.copysign(0.0, x0) if a0 < tiny else x0
        y1 = math.copysign(0.0, x1) if a1 < tiny else x1
        y2 = math.copysign(0.0, x2) if a2 < tiny else x2
        nrm = np.sqrt((y0 * y0 + y1 * y1) + y2 * y2)
        good = abs(nrm - R) <= atol * R
        ok[i] = good
        okf = 1.0 if good else 0.0
        y0 = y0 if good else 0.0
        y1 = y1 if good else 0.0
        y2 = y2 if good else 0.0
        scale = okf / (nrm if nrm > floor else floor)  # numpy's fmax: a NaN norm gives the floor
        along = (u0 * y0 + u1 * y1) + u2 * y2
        d0, d1, d2 = y0 - u0 * along, y1 - u1 * along, y2 - u2 * along
        s = np.sqrt((d0 * d0 + d1 * d1) + d2 * d2)
        mv = s * a_cos > along * a_sin
        moved[i] = mv
        ahead = s * far_cos + along * far_sin >= 0.0
        of = 1.0 if mv else 0.0
        g = a_sin * ((1.0 if ahead else 0.0) / (s if s > floor else floor))
        p = g * of + (1.0 - of) * scale
        p = p if unit else R * p
        q = (a_cos - g * along) * of + (1.0 - okf)
        t = of * (0.0 if ahead else 1.0)
        out0[i] = (y0 * p + r0 * q) + f0 * t
        out1[i] = (y1 * p + r1 * q) + f1 * t
        out2[i] = (y2 * p + r2 * q) + f2 * t


def _centred_sum(out0, out1, out2, center, acc):
    """Adds ``Σ_i (out_i − center)`` to ``acc`` (the extrinsic start's statistics, around the centre)."""
    c0, c1, c2 = center[0], center[1], center[2]
    s0 = s1 = s2 = 0.0
    for i in range(out0.shape[0]):
        s0 += out0[i] - c0
        s1 += out1[i] - c1
        s2 += out2[i] - c2
    acc[0] += s0
    acc[1] += s1
    acc[2] += s2


def _newton_pass(njit, top):
    @njit(cache=True, nogil=True, error_model="numpy", fastmath=FAST)
    def newton(y0s, y1s, y2s, half_u, u, a, b, acc):
        """One power-series Newton pass over prepared records (coordinate rows ``y0s..y2s``):
        adds ``Σ f_i (y_i − u)`` (3), the upper triangle of ``Σ β_i y_i y_iᵀ`` (6, row by row),
        ``Σ f_i`` and ``Σ f_i z_i`` to ``acc``, ``z = ⟨half_u, y⟩ + ½``; ``a``, ``b``: the
        coefficients of degree ``top``."""
        h0, h1, h2 = half_u[0], half_u[1], half_u[2]
        u0, u1, u2 = u[0], u[1], u[2]
        g0 = g1 = g2 = 0.0
        A00 = A01 = A02 = A11 = A12 = A22 = 0.0
        sf = sfz = 0.0
        for i in range(y0s.shape[0]):
            y0, y1, y2 = y0s[i], y1s[i], y2s[i]
            z = (h0 * y0 + h1 * y1 + h2 * y2) + 0.5
            f, beta = a[top], b[top]
            for j in range(top - 1, -1, -1):  # a constant trip count: unrolled; the loop over records vectorises
                f = f * z + a[j]
                beta = beta * z + b[j]
            sf += f
            sfz += f * z
            g0 += (y0 - u0) * f
            g1 += (y1 - u1) * f
            g2 += (y2 - u2) * f
            w0, w1, w2 = beta * y0, beta * y1, beta * y2
            A00 += w0 * y0
            A01 += w0 * y1
            A02 += w0 * y2
            A11 += w1 * y1
            A12 += w1 * y2
            A22 += w2 * y2
        acc[0] += g0
        acc[1] += g1
        acc[2] += g2
        acc[3] += A00
        acc[4] += A01
        acc[5] += A02
        acc[6] += A11
        acc[7] += A12
        acc[8] += A22
        acc[9] += sf
        acc[10] += sfz

    return newton
