"""A computer-assisted proof that the spread constant of the unit 2-sphere is at most a target.

``C(r) = sup ‖log_m x − log_m y‖ / (2r)`` over ``m, x, y`` in a closed geodesic ball ``B_r(c)`` of
``S²`` is the constant the proof of R21 Thm 2 needs (``Δ ≤ 2rC(r)/(nh)``); it is smaller than the
Lipschitz constant of the log map (the Rauch bound ``2r/sin 2r``). The
reduction to three parameters is argued in docs/theory.md (§ "The spread constant of the sphere"):
rotations about ``c`` put ``m = (sin a, 0, cos a)`` with ``a ∈ [0, r]``; for fixed ``m`` the norm
is a convex function of each log-image, so its maximum is attained with ``x`` and ``y`` on the
boundary circle, ``x = (sin r cos s, sin r sin s, cos r)``, ``y`` likewise at ``t``; the
reflection that fixes ``c`` and ``m`` maps ``(s, t)`` to ``(−s, −t)``, so ``s ∈ [0, π]``,
``t ∈ [0, 2π]``.

The parameter box is covered by cells, each bounded by ball arithmetic (python-flint's ``arb``,
outward-rounded): the natural interval extension of ``F = ‖log_m x − log_m y‖²`` and the centred
form ``F(p₀) + ∇F(B)·(B − p₀)`` with ``∇F`` by forward differentiation in the same arithmetic; a
cell whose bound is not certainly below ``(2r·target)²`` is bisected. No sampling: every cell of
the covering is bounded. ``θ/sin θ = arccos c/√(1 − c²)`` is enclosed by its monotonicity in ``c``
(decreasing), with ``1 ≤ θ/sin θ < c^(−1/3)`` (Adamović–Mitrinović) where ``c`` is within 1e−6 of 1.

The covering is stored as its bisection tree (pre-order, one bit per node: split or proven leaf;
the split coordinate is a function of the cell), so a test can re-derive any cell and re-verify it
(``verify``). Run ``python -m manifold_dp.experiments.sphere_spread`` (needs ``python-flint``, the
``proofs`` extra) to prove the targets of ``TARGETS`` and rewrite ``sphere_spread_table.json``.

The releases use the stored table (``privacy.sensitivity.spread_bound``, read as data: python-flint
is needed only to prove or re-verify it): on a sphere, ``bound="tight"`` calibrates with
``min(2r/sin 2r, r_j·C(r_j)/r)`` over the tabulated radii ``r_j ≥ r`` (docs/theory.md §3).
"""

import json
import math
import sys
import time
from pathlib import Path

TABLE = Path(__file__).with_name("sphere_spread_table.json")
PRECISION = 80  # bits of the arb balls
INITIAL = (4, 8, 16)  # initial cells along a, s, t
SPLIT_WEIGHTS = (3.0, 1.0, 1.0)  # a cell is halved along its widest coordinate, a counted this many times
NEAR_ONE = 1e-6  # below this distance of c from 1, θ/sin θ is bounded by 1 and c^(-1/3)
NO_DERIVATIVE = 1e-3  # the centred form is used only where c ≤ 1 − this on the whole cell
PI_HI, TWO_PI_HI = 3.1415926535897936, 6.283185307179588  # doubles just above π and 2π
# each radius is proven at π·num/den·(1 + 2⁻³⁰): a release radius that is π·num/den up to float64 rounding, with the
# records' float error of clipping, still lies in the proven ball (privacy.sensitivity.spread_bound)
RADIUS_WIDENING_LOG2 = 30
# radius as a multiple of π, and the target proven for it: the grid jπ/240, j = 20…60 (π/12 to π/4, steps under 5%).
# A free optimisation (R21-F2's free_log_spread) gives C = 1.01157, 1.02645, 1.04812, 1.07097, 1.11609 at π/12, π/8,
# π/6, π/5, π/4 (the Rauch bound 1.0472, 1.1107, 1.2092, 1.3213, 1.5708); the targets there are the first four of
# the original table, elsewhere that optimum plus 10⁻³, rounded up to four decimals
TARGETS = {
    "1/12": 1.012, "7/80": 1.0138, "11/120": 1.0151, "23/240": 1.0164, "1/10": 1.0178, "5/48": 1.0193,
    "13/120": 1.0208, "9/80": 1.0224, "7/60": 1.024, "29/240": 1.0257, "1/8": 1.0265, "31/240": 1.0294,
    "2/15": 1.0313, "11/80": 1.0333, "17/120": 1.0353, "7/48": 1.0374, "3/20": 1.0396, "37/240": 1.0419,
    "19/120": 1.0443, "13/80": 1.0467, "1/6": 1.0485, "41/240": 1.0517, "7/40": 1.0544, "43/240": 1.0571,
    "11/60": 1.0599, "3/16": 1.0628, "23/120": 1.0658, "47/240": 1.0689, "1/5": 1.0712, "49/240": 1.0753,
    "5/24": 1.0786, "17/80": 1.082, "13/60": 1.0855, "53/240": 1.0891, "9/40": 1.0928, "11/48": 1.0966,
    "7/30": 1.1005, "19/80": 1.1045, "29/120": 1.1086, "59/240": 1.1128, "1/4": 1.1171,
}


def proven_bounds():
    """``{radius: proven upper bound on C(radius)}`` of the stored table (no python-flint needed to read it)."""
    table = json.loads(TABLE.read_text(encoding="utf-8"))
    out = {}
    for fraction, row in table["radii"].items():
        num, den = (int(v) for v in fraction.split("/"))
        out[math.pi * num / den] = float(row["proven_upper_bound"])
    return dict(sorted(out.items()))


def _flint():
    try:
        import flint
    except ImportError as err:  # pragma: no cover - the proofs extra
        raise ImportError("the sphere-spread proof needs python-flint: pip install 'manifold-dp[proofs]'") from err
    flint.ctx.prec = PRECISION
    return flint.arb


class _Dual:
    """A value and its partial derivatives in (a, s, t), all arb balls."""

    __slots__ = ("d", "v")

    def __init__(self, v, d):
        self.v, self.d = v, d

    def __add__(self, o):
        return _Dual(self.v + o.v, [p + q for p, q in zip(self.d, o.d)])

    def __sub__(self, o):
        return _Dual(self.v - o.v, [p - q for p, q in zip(self.d, o.d)])

    def __mul__(self, o):
        return _Dual(self.v * o.v, [p * o.v + self.v * q for p, q in zip(self.d, o.d)])


def _theta_over_sin_endpoint(arb, c, upper):
    """An upper (or lower) bound of ``arccos c/√(1 − c²)`` at the exact point ``c ≤ 1``."""
    if 1 - c > NEAR_ONE:
        val = c.acos() / (1 - c * c).sqrt()
        return arb(val.upper() if upper else val.lower())
    return arb((1 / c).cbrt().upper()) if upper else arb(1)


def _theta_over_sin(arb, c):
    """``G(c) = arccos c/√(1 − c²)`` over the ball ``c`` (``c ≤ 1`` on the sphere), with its derivative
    ``G'(c) = (cG − 1)/(1 − c²)`` where the ball stays ``NO_DERIVATIVE`` below 1 (else ``None``). G is
    decreasing: ``d(θ/sin θ)/dθ = (sin θ − θ cos θ)/sin² θ > 0`` on ``(0, π)``."""
    lo, hi = c.v.lower(), c.v.upper()
    hi = hi if hi < 1 else arb(1)
    lower = arb(1) if not hi < 1 else _theta_over_sin_endpoint(arb, hi, upper=False)
    value = lower.union(_theta_over_sin_endpoint(arb, lo, upper=True))
    if not c.v.upper() < 1 - NO_DERIVATIVE:
        return _Dual(value, None)
    w = c.v
    slope = (w * (w.acos() / (1 - w * w).sqrt()) - 1) / (1 - w * w)
    return _Dual(value, [slope * q for q in c.d])


def _spread_squared(arb, a, s, t, radius):
    """``‖log_m x − log_m y‖²`` over the balls ``a, s, t`` and its partials (``None`` near ``x = m`` or ``y = m``)."""
    zero = arb(0)
    sa, ca, ss, cs, st, ct = a.sin(), a.cos(), s.sin(), s.cos(), t.sin(), t.cos()
    sr, cr = radius.sin(), radius.cos()
    m = (_Dual(sa, [ca, zero, zero]), _Dual(ca, [-sa, zero, zero]))  # (first, third) coordinates; the second is 0
    x = (_Dual(sr * cs, [zero, -sr * ss, zero]), _Dual(sr * ss, [zero, sr * cs, zero]), _Dual(cr, [zero] * 3))
    y = (_Dual(sr * ct, [zero, zero, -sr * st]), _Dual(sr * st, [zero, zero, sr * ct]), _Dual(cr, [zero] * 3))
    cx, cy = m[0] * x[0] + m[1] * x[2], m[0] * y[0] + m[1] * y[2]  # cos ρ(m, x), cos ρ(m, y)
    gx, gy = _theta_over_sin(arb, cx), _theta_over_sin(arb, cy)
    mm = (m[0], _Dual(zero, [zero] * 3), m[1])
    if gx.d is None or gy.d is None:
        v = [gx.v * (xi.v - cx.v * mi.v) - gy.v * (yi.v - cy.v * mi.v) for xi, yi, mi in zip(x, y, mm)]
        return v[0] * v[0] + v[1] * v[1] + v[2] * v[2], None
    v = [gx * (xi - cx * mi) - gy * (yi - cy * mi) for xi, yi, mi in zip(x, y, mm)]
    f = v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
    return f.v, f.d


def cell_bound(cell, radius):
    """A rigorous upper bound (an exact arb) of ``F`` over the cell ``((a₀, a₁), (s₀, s₁), (t₀, t₁))`` (doubles):
    the smaller of the natural extension and the centred form."""
    arb = _flint()
    balls = [arb(lo).union(arb(hi)) for lo, hi in cell]
    natural, grad = _spread_squared(arb, *balls, radius)
    best = natural.upper()
    if grad is not None:
        mids = [arb(b.mid()) for b in balls]
        centred, _ = _spread_squared(arb, *mids, radius)
        for g, b, p in zip(grad, balls, mids):
            centred = centred + g * (b - p)
        best = min(best, centred.upper(), key=lambda u: float(u))
    return best


def _split(cell):
    widths = [(hi - lo) * w for (lo, hi), w in zip(cell, SPLIT_WEIGHTS)]
    i = widths.index(max(widths))
    lo, hi = cell[i]
    mid = (lo + hi) / 2
    return [tuple(half if j == i else c for j, c in enumerate(cell)) for half in ((lo, mid), (mid, hi))]


def initial_cells(a_max):
    na, ns, nt = INITIAL
    edges = lambda top, k: [(top * i / k, top * (i + 1) / k if i + 1 < k else top) for i in range(k)]
    return [(a, s, t) for a in edges(a_max, na) for s in edges(PI_HI, ns) for t in edges(TWO_PI_HI, nt)]


def _radius(fraction):
    """The radius proven for the table's ``fraction``: ``π·num/den`` widened by ``RADIUS_WIDENING``."""
    arb = _flint()
    num, den = (int(v) for v in fraction.split("/"))
    return arb.pi() * num / den * (1 + arb(2) ** -RADIUS_WIDENING_LOG2)


def prove(fraction, target, max_cells=10 ** 7):
    """Cover the parameter box for the radius ``fraction·π`` and bound every cell below ``(2r·target)²``.
    Returns ``(tree bits, proven bound on C(r), cells)``; raises if ``max_cells`` cells did not suffice."""
    arb = _flint()
    radius = _radius(fraction)
    limit = (2 * radius * arb(target)) ** 2
    bits, worst, cells = [], arb(0), 0
    for root in initial_cells(float(radius.upper()) * (1 + 1e-15)):
        stack = [root]
        while stack:
            cell = stack.pop()
            bound = cell_bound(cell, radius)
            if bound < limit:
                bits.append("0")
                cells += 1
                worst = max(worst, bound, key=lambda u: float(u))
                continue
            if len(bits) > max_cells:
                raise RuntimeError(f"no proof within {max_cells} cells for r = {fraction}·π, target {target}")
            bits.append("1")
            stack.extend(reversed(_split(cell)))
    proven = (worst.sqrt() / (2 * radius)).upper()
    return "".join(bits), proven, cells


def leaves(fraction, bits):
    """The proven cells of a stored tree, in order (pre-order: a split's two halves follow it)."""
    radius = _radius(fraction)
    it = iter(bits)
    out = []
    for root in initial_cells(float(radius.upper()) * (1 + 1e-15)):
        stack = [root]
        while stack:
            cell = stack.pop()
            if next(it) == "0":
                out.append(cell)
            else:
                stack.extend(reversed(_split(cell)))
    if next(it, None) is not None:
        raise ValueError("the tree has bits left over")
    return out


def verify(fraction, bits, target, cells=None):
    """Re-bound ``cells`` (indices into ``leaves``; all when None) and check each below ``(2r·target)²``."""
    arb = _flint()
    radius = _radius(fraction)
    limit = (2 * radius * arb(target)) ** 2
    found = leaves(fraction, bits)
    chosen = range(len(found)) if cells is None else cells
    return all(cell_bound(found[i], radius) < limit for i in chosen), len(found)


def _round_up(value, digits=6):
    """A decimal string certainly at least the arb ``value``."""
    arb = _flint()
    candidate = math.ceil(float(value.mid()) * 10 ** digits) / 10 ** digits
    while not arb(candidate) > value:
        candidate += 10 ** -digits
    return f"{candidate:.{digits}f}"


def _encode(bits):
    return format(int("1" + bits, 2), "x")


def decode(hex_tree):
    return bin(int(hex_tree, 16))[3:]


def main(argv=None):  # pragma: no cover - a maintainer's command (a few seconds per radius)
    table = {"precision_bits": PRECISION, "initial_cells": list(INITIAL), "radius_widening_log2": RADIUS_WIDENING_LOG2,
             "radii": {}}
    for fraction, target in TARGETS.items():
        t = time.perf_counter()
        bits, proven, cells = prove(fraction, target)
        table["radii"][fraction] = {"target": target, "proven_upper_bound": _round_up(proven), "cells": cells,
                                    "tree_nodes": len(bits), "tree": _encode(bits),
                                    "seconds": round(time.perf_counter() - t, 1)}
        print(f"r = {fraction}·π: C(r) ≤ {proven} (target {target}), {cells} cells, {len(bits)} nodes")
    TABLE.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
