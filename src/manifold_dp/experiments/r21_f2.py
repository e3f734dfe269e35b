"""R21-F2 — 2021 Fig. 2 (App. B.1): how far apart can ``log_m x`` and ``log_m y`` be on S²?

For ``x, y`` on a grid of ``∂B_r(m0)`` and a footpoint ``m`` (the paper: one boundary point; we
also search footpoints inside the ball), ``max ‖log_m x − log_m y‖`` against ``2r``, the paper's
``2r(2 − h)`` and our ``2r·L`` with the Rauch constant.
"""

from pathlib import Path
from typing import Any

import numpy as np

from .._typing import Array
from ..manifolds import Sphere
from ..privacy.sensitivity import hessian_lower_bound, log_lipschitz
from ._common import PALETTE, ExperimentResult, figure, finish, progress, save, span, verdict
from .sphere_spread import proven_bounds

ID = "R21-F2"
TITLE = "R21 Fig. 2: empirical spread of log maps on S² against the Lipschitz bounds"
CLAIM = ("2r < max‖log x_i − log x_j‖ < 2r(2 − h) on S², so the curvature inflation is smaller than the 2 − h bound; "
         "the simulations then use the empirical constant instead of 2 − h.")
PROFILES = {"quick": dict(radii=12, boundary=120, footpoints=6), "full": dict(radii=40, boundary=360, footpoints=16)}
PAPER_CONSTANT = 1.03  # the empirical constant read off R21 Fig. 2 at r = π/8


def boundary_grid(s: Sphere, r: float, count: int) -> Array:
    t = 2 * np.pi * np.arange(count) / count
    return s.exp(s.origin, r * np.stack([np.cos(t), np.sin(t), np.zeros_like(t)], axis=1))


def max_log_spread(s: Sphere, r: float, boundary: int = 360, footpoints: int | None = None) -> float:
    """``max_(i,j) ‖log_m x_i − log_m x_j‖`` over boundary points ``x_i``; footpoint ``m`` the
    first boundary point (paper) or, with ``footpoints=F``, the worst of an F×F polar grid in the ball."""
    X = boundary_grid(s, r, boundary)
    if footpoints is None:
        M = X[:1]
    else:
        radii = np.linspace(0, r, footpoints)
        M = np.concatenate([boundary_grid(s, rr, footpoints) if rr > 0 else s.origin[None] for rr in radii])
    best = 0.0
    for m in M:
        V = s.log(m, X)
        diff = np.linalg.norm(V[:, None, :] - V[None, :, :], axis=-1)
        best = max(best, float(diff.max()))
    return best


def free_log_spread(s: Sphere, r: float, rings: int = 3, angles: int = 6) -> tuple[Any, ...]:
    """``max ‖log_m x − log_m y‖`` over ``m, x, y`` anywhere in ``B_r(m0)`` by a bounded optimiser (polar
    coordinates of the three points) from a deterministic grid of starts: ``m`` on ``rings`` radii at angle 0 (the
    problem is invariant under rotations about ``m0``), ``x`` and ``y`` on the boundary at ``angles × angles``
    angles. A numerical maximum: a lower bound on the sup, not a proof. Returns ``(max, m, x, y)``."""
    from scipy.optimize import minimize

    def points(z):
        rho, phi = z[0::2], z[1::2]
        return s.exp(s.origin, np.stack([rho * np.cos(phi), rho * np.sin(phi), np.zeros_like(rho)], axis=-1))

    def spread(z):
        m, x, y = points(z)
        return -float(np.linalg.norm(s.log(m, x) - s.log(m, y)))

    best, arg = 0.0, None
    phis = 2 * np.pi * np.arange(angles) / angles
    for rho_m in np.linspace(0, r, rings):
        for a in phis:
            for b in phis[phis > a]:
                res = minimize(spread, np.array([rho_m, 0.0, r, a, r, b]), method="L-BFGS-B",
                               bounds=[(0.0, r), (None, None)] * 3)
                if -res.fun > best:
                    best, arg = -res.fun, res.x
    return best, *points(arg)


def _pi_fraction(r):
    """``r`` as ``π/k`` for the radii of the proof's table."""
    return f"π/{round(np.pi / r):d}"


def run(config: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    s = Sphere(2)
    radii = np.linspace(0.05, 0.98 * np.pi / 4, config["radii"])
    paper_foot, any_foot = [], []
    for r in progress(radii, "R21-F2 r"):
        paper_foot.append(max_log_spread(s, r, config["boundary"]))
        any_foot.append(max_log_spread(s, r, config["boundary"], config["footpoints"]))
    at = np.pi / 8
    return dict(radii=radii.tolist(), paper=paper_foot, searched=any_foot,
                at_pi8=dict(paper=max_log_spread(s, at, config["boundary"]) / (2 * at),
                            searched=max_log_spread(s, at, config["boundary"], config["footpoints"]) / (2 * at),
                            free=free_log_spread(s, at)[0] / (2 * at),
                            tight=log_lipschitz(at, 1.0, "tight"), karcher=2 - hessian_lower_bound(at, 1.0)))


def _figure(results, out_dir):
    r = np.array(results["radii"])
    karcher = np.array([2 - hessian_lower_bound(x, 1.0) for x in r])
    rauch = np.array([log_lipschitz(x, 1.0, "tight") for x in r])
    fig, (a, b) = figure(r"R21 Fig. 2 on $S^2$: spread of $\log_m$ over $\partial B_r(m_0)$ (no privacy noise)")
    a.plot(r, 2 * r, color=PALETTE["data"], linewidth=1, label=r"$2r$")
    a.plot(r, 2 * r * karcher, color=PALETTE["bound"], linestyle="-.", label=r"$2r(2-h)$, the paper's bound")
    a.plot(r, 2 * r * rauch, color=PALETTE["bound"], linestyle="-", label=r"$2rL$, Rauch bound (ours)")
    a.plot(r, results["paper"], "o", color=PALETTE["data"], ms=5, label=r"max, footpoint on $\partial B_r$ (paper)")
    a.plot(r, results["searched"], "x", color=PALETTE["bound"], ms=5, label="max, footpoints searched in the ball")
    finish(a, "a", r"max $\|\log_m x_i - \log_m x_j\|$ against $r$", r"radius $r$ (rad)",
           r"max $\|\log_m x_i - \log_m x_j\|$", loc="upper left")
    b.plot(r, np.array(results["searched"]) / (2 * r), "x", color=PALETTE["bound"], ms=5, label=r"empirical / $2r$")
    b.plot(r, karcher, color=PALETTE["bound"], linestyle="-.", label=r"$2-h$ (paper)")
    b.plot(r, rauch, color=PALETTE["bound"], linestyle="-", label=r"$L$ (Rauch, ours)")
    proven = proven_bounds()
    b.plot(list(proven), list(proven.values()), "v", color=PALETTE["bound"], ms=7, markerfacecolor="none",
           label="proven upper bound on $C(r)$ (interval arithmetic)")
    b.axvline(np.pi / 8, color=PALETTE["data"], linewidth=0.8, label=r"$r = \pi/8$ (R21 Fig. 1)")
    finish(b, "b", r"the spread $C(r)$ against the Lipschitz bounds", r"radius $r$ (rad)", "constant", loc="upper left")
    name = save(fig, out_dir, "r21_f2_log_spread")
    caption = ("(a) The largest distance between log-mapped boundary points, with the footpoint on the boundary "
               "(the paper's search) and searched over a polar grid inside the ball, against the three bounds. "
               "(b) The same divided by 2r: the empirical constant (numerically the sup C(r) that the Thm 2 proof needs, "
               "but unproven), the paper's 2 − h and "
               "our Rauch bound. Deterministic: no bands.")
    return name, caption


def report(results: dict[str, Any], config: dict[str, Any], out_dir: Path) -> ExperimentResult:
    r = np.array(results["radii"])
    emp = np.array(results["paper"])
    inside = bool(np.all(emp > 2 * r) and np.all(emp < 2 * r * np.array([2 - hessian_lower_bound(x, 1.0) for x in r])))
    p = results["at_pi8"]
    name, caption = _figure(results, out_dir)
    paper_value = f"2r < max < 2r(2 − h); empirical constant ≈ {PAPER_CONSTANT:.2f} at r = π/8 (read off the figure)"
    proven = proven_bounds()[np.pi / 8]
    paper_cal = (f"empirical constant {p['paper']:.3f} at r = π/8 (footpoint on the boundary); {p['free']:.5f} by a free "
                 f"optimisation over m, x, y in the ball; proven C(π/8) ≤ {proven:g} (interval arithmetic)")
    certified = f"Rauch bound L = {p['tight']:.3f} at r = π/8 (the paper's 2 − h = {p['karcher']:.3f})"
    gap = (p["tight"] - 1) / (p["karcher"] - 1)
    explanation = (
        f"The ordering 2r < max < 2r(2 − h) holds at {'every' if inside else 'not every'} radius of the grid "
        f"({len(r)} radii, {span(emp / (2 * r), '{:.3f}')} times 2r). The proof of R21 Thm 2 uses the Lipschitz "
        "constant only through ‖log_m x − log_m y‖ ≤ L·ρ(x, y) ≤ 2rL for m, x, y in the ball, so what it needs is "
        "C(r) = sup ‖log_m x − log_m y‖/(2r) over m, x, y in B_r, a smaller quantity than the Lipschitz constant of "
        f"the log map. At r = π/8 the paper's search (footpoint on the boundary, boundary grid) gives {p['paper']:.4f}, "
        f"footpoints searched inside the ball give {p['searched']:.4f}, and a free optimisation over m, x, y anywhere "
        f"in the ball gives {p['free']:.5f}: the paper's empirical constant is, numerically, the exact value the proof "
        "needs, with all three points on the boundary. An optimiser's maximum is only a lower bound on a sup; the "
        "upper bound is a computer-assisted proof (experiments/sphere_spread.py; the reduction to three parameters in "
        "docs/theory.md §3, every cell of a covering bounded in ball arithmetic): "
        + ", ".join(f"C({_pi_fraction(r0)}) ≤ {c:g}" for r0, c in proven_bounds().items()
                    if abs(np.pi / r0 - round(np.pi / r0)) < 1e-9)  # the table's radii π/k (41 radii in all)
        + f", so C(π/8) lies in [{p['free']:.5f}, {proven:g}] and the paper's constant is correct to the third decimal. "
        "The library's releases on the sphere calibrate with the proven constant by default (bound='tight', "
        "docs/theory.md §3). The Lipschitz constant of log_m over the ball is a "
        f"different quantity, the Rauch bound 2r/sin 2r = {p['tight']:.4f} (attained: the log map's differential has "
        "that norm across the geodesic from m to a point at distance 2r); bound='rauch' calibrates with it (proven on "
        f"every space of curvature ≤ 1, not only the sphere). It keeps {100 * gap:.0f}% of the paper's inflation 2 − h − 1 above one. R21-F1c/d shows what the "
        "choice of constant does to the release.")
    short = dict(paper_calibration=f"C(π/8) ∈ [{p['free']:.5f}, {proven:g}] (optimiser, interval proof)",
                 certified=f"Lipschitz (Rauch) L = {p['tight']:.4f}; the paper's 2 − h = {p['karcher']:.3f}")
    return ExperimentResult(ID, TITLE, CLAIM, verdict(inside, inside), paper_value, paper_cal, certified, explanation,
                            figures=[name], captions={name: caption}, data={"at_pi8": p},
                            data_note="Synthetic grid on the unit sphere; no data set.", short=short)
