"""R21-F1c/d — 2021 Fig. 1, panels 3–4: the unit sphere S², r = π/8, north-pole cap data.

Panel 3: ρ(x̄, x̄') for neighbours against the Thm 2 bound with three constants: the empirical
one of App. B.1 (the paper's choice: numerically the sup that the Thm 2 proof needs, but unproven,
see R21-F2), the paper's 2 − h, and our Rauch Lipschitz constant.
Panel 4: Euclidean error ‖x̄ − x̃‖ of the Riemannian Laplace against the Euclidean Laplace in R³
(Δ_E = 2·chord(r)/n), ε = 1. The Laplace is built with the Rauch sensitivity (``bound="rauch"``) and
with the library's default (``bound="tight"``: on the sphere the proven spread constant C); the
paper's constants are ``measurements.paper_variant`` copies of the Rauch one (scale × L/L_Rauch).
"""

from pathlib import Path
from typing import Any

import numpy as np

from ..data import sphere_cap
from ..manifolds import Sphere
from ..privacy import frechet_mean_sensitivity, measurements
from ..privacy.sensitivity import hessian_lower_bound, log_lipschitz
from ..stats import frechet_mean
from ._common import (
    BAND_NOTE,
    PALETTE,
    ExperimentResult,
    figure,
    finish,
    log_ticks,
    mean_se,
    per,
    progress,
    save,
    series,
    shared_legend,
    span,
    style,
    verdict,
)
from ._offline_data import CITATION_CITIES
from .r21_f2 import free_log_spread, max_log_spread
from .sphere_spread import proven_bounds

ID = "R21-F1cd"
TITLE = "R21 Fig. 1 (panels 3-4): unit sphere S², r = π/8 — sensitivity and utility"
CLAIM = "The manifold Laplace has about 15% less error than the Euclidean Laplace in R³: 16.8% at small n, 12% at large n."
PROFILES = {"quick": dict(ns=[10, 25, 50, 100, 200], reps=200, draws=20, pairs=30, real_draws=4000),
            "full": dict(ns=[10, 20, 30, 50, 75, 100, 150, 200], reps=1000, draws=20, pairs=100, real_draws=20000)}
R, EPSILON = np.pi / 8, 1.0
PAPER_REDUCTION = (16.8, 12.0)  # % less error than the Euclidean Laplace, small n and large n (R21 §5.2)
CITY_REGION = ("East Asia", 32.0, 118.0)  # the real data set: the listed cities within r of this point (lat, lng in °)
# the Lipschitz constant of each calibration: (label, plot style, key)
CALIBRATIONS = (("Rauch L (certified)", "certified", "rauch"),
                ("2 − h (paper's bound, certified)", "paper_noisier", "karcher"),
                ("empirical constant (paper's, unproven, NOT certified)", "paper_uncertified", "empirical"),
                ("proven C (interval proof, certified)", "proven", "proven"))


def constants() -> dict[str, float]:
    s = Sphere(2)
    return {"rauch": log_lipschitz(R, 1.0, "tight"), "karcher": 2 - hessian_lower_bound(R, 1.0),
            "empirical": max_log_spread(s, R, 360) / (2 * R), "proven": proven_bounds()[R]}


REASON = {"karcher": "R21 Thm 2 with the paper's Lipschitz constant 2 − h",
          "empirical": "R21 App. B.1: the empirical constant of Fig. 2 in place of 2 − h",
          "proven": "the spread constant C(r) in place of L, bounded by interval arithmetic (experiments/sphere_spread.py)"}


def _variants(s, n, L):
    certified = measurements.laplace(s, frechet_mean_sensitivity(s, n=n, radius=R, bound="rauch"), EPSILON)
    proven = measurements.laplace(s, frechet_mean_sensitivity(s, n=n, radius=R), EPSILON)  # the default release's
    return {key: certified if key == "rauch" else proven if key == "proven"
            else measurements.paper_variant(certified, c / L["rauch"], REASON[key]) for key, c in L.items()}


def _cities(config, rng, L):
    """The same comparison on real directions: the cities of geomstats' list of the 50 largest
    that lie within r of the public point of ``CITY_REGION``, one fixed data set, many releases."""
    from ._offline_data import load_cities

    loaded, reason = load_cities()
    if loaded is None:
        return {"unavailable": reason}
    points, names = loaded
    s = Sphere(2)
    lat, lng = np.radians(CITY_REGION[1:])
    centre = np.array([np.cos(lat) * np.cos(lng), np.cos(lat) * np.sin(lng), np.sin(lat)])
    inside = s.dist(centre, points) <= R
    X = points[inside]
    n = len(X)
    mean = np.repeat(frechet_mean(X, s).point[None], config["real_draws"], axis=0)
    err = {key: mean_se(np.linalg.norm(m.sample(mean, rng=rng) - mean, axis=1)) for key, m in _variants(s, n, L).items()}
    noise = measurements.ambient(s, "ambient_laplace", 2 * 2 * np.sin(R / 2) / n, EPSILON).law.noise(len(mean), rng)
    return {"n": n, "names": [nm for nm, i in zip(names, inside) if i], "err": err,
            "err_euclid": mean_se(np.linalg.norm(noise, axis=1))}


def run(config: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    s = Sphere(2)
    L = constants()
    out: dict[str, Any] = {"constants": L, "sens_points": [], "bounds": {k: [] for k in L}, "err": {k: [] for k in L},
           "err_euclid": [], "scales": {k: [] for k in L}}
    for n in progress(config["ns"], "R21-F1cd n"):
        pts = []
        for _ in range(config["pairs"]):
            X = sphere_cap(n + 1, radius=R, rng=rng)
            pts.append(s.dist(frechet_mean(X[:n], s).point, frechet_mean(np.concatenate([X[: n - 1], X[n:]]), s).point))
        out["sens_points"].append(pts)
        means = np.array([frechet_mean(sphere_cap(n, radius=R, rng=rng), s).point for _ in range(config["reps"])])
        means = np.repeat(means, config["draws"], axis=0)  # several releases per dataset: less Monte Carlo noise
        for key, m in _variants(s, n, L).items():
            out["bounds"][key].append(m.sensitivity * L[key] / L["rauch"])
            out["scales"][key].append(m.scale)
            draws = m.sample(means, rng=rng)
            out["err"][key].append(mean_se(np.linalg.norm(draws - means, axis=1)))
        noise = measurements.ambient(s, "ambient_laplace", 2 * 2 * np.sin(R / 2) / n, EPSILON).law.noise(len(means), rng)
        out["err_euclid"].append(mean_se(np.linalg.norm(noise, axis=1)))
    out["cities"] = _cities(config, rng, L)
    return out


def _figure(results, config, out_dir):
    ns = np.array(config["ns"])
    fig, (a, b, c, d) = figure(rf"R21 Fig. 1c/d on $S^2$: $r = \pi/8$, $\varepsilon = {EPSILON:g}$, Riemannian vs "
                               "Euclidean Laplace", nrows=2, ncols=2, width=5.0, height=3.9)
    for n, pts in zip(ns, results["sens_points"]):
        a.scatter(np.full(len(pts), n), pts, s=6, color=PALETTE["data"], alpha=0.4)
    a.scatter([], [], s=6, color=PALETTE["data"], label=r"$\rho(\bar x, \bar x')$, neighbouring pairs")
    a.plot(ns, [np.mean(p) for p in results["sens_points"]], color=PALETTE["data"], label="their mean")
    for label, cal, key in CALIBRATIONS:
        a.plot(ns, results["bounds"][key], label=f"Thm 2 bound, {label}", **{**style("bound", cal), "marker": None})
    finish(a, "a", "sensitivity of the Fréchet mean", r"$n$ (log scale)", r"$\rho(\bar x, \bar x')$ (rad)",
           logx=True, logy=True, loc="lower left")
    log_ticks(a, ns)
    eu = np.array(results["err_euclid"])
    euclid = r"Euclidean Laplace in $\mathbb{R}^3$ (certified; = 1 in (c))"
    series(b, ns, eu[:, 0], euclid, "euclidean_laplace", se=eu[:, 1])
    for label, cal, key in CALIBRATIONS:
        v = np.array(results["err"][key])
        series(b, ns, v[:, 0], f"Riemannian Laplace, {label}", "laplace", cal, se=v[:, 1])
    finish(b, "b", "utility", r"$n$ (log scale)", r"$\|\bar x - \tilde x\|$ in $\mathbb{R}^3$", logx=True, logy=True,
           legend=False)
    log_ticks(b, ns)
    for label, cal, key in CALIBRATIONS:
        v = np.array(results["err"][key])
        ratio = v[:, 0] / eu[:, 0]
        se = ratio * np.hypot(v[:, 1] / v[:, 0], eu[:, 1] / eu[:, 0])
        series(c, ns, ratio, f"Riemannian Laplace, {label}", "laplace", cal, se=se)  # (b)'s labels: one legend entry each
    c.axhline(1.0, color=PALETTE["euclidean_laplace"], linewidth=1, label=euclid)
    c.plot([ns[0], ns[-1]], [1 - PAPER_REDUCTION[0] / 100, 1 - PAPER_REDUCTION[1] / 100], "*", color=PALETTE["bound"],
           ms=10, label="the paper's reported ratios")
    finish(c, "c", "ratio to the Euclidean Laplace", r"$n$ (log scale)", "Riemannian / Euclidean error", logx=True,
           legend=False)
    shared_legend(fig, [b, c], ncol=2)
    log_ticks(c, ns)
    _cities_panel(d, results["cities"])
    name = save(fig, out_dir, "r21_f1cd_sphere")
    caption = (f"Data: {config['reps']} caps of n points per n (polar angle uniform on [0, r], r = π/8), "
               f"{config['draws']} releases each; {config['pairs']} neighbouring pairs per n in (a). (a) Sensitivity "
               "with the Thm 2 bound under each Lipschitz constant. (b) Euclidean error of each release. (c) The "
               "same divided by the Euclidean Laplace's error; stars: the reductions the paper reports "
               "at its smallest and largest n. Solid: certified; dash-dot: the paper's bound (certified, noisier); "
               "dotted: the paper's empirical constant (not certified); dash-dot-dot: the spread constant C proven by interval "
               "arithmetic (certified by that proof; the library's default releases calibrate with it). (d) The ratio on real directions: the cities of "
               f"geomstats' list of the world's largest that lie within r of the public point ({CITY_REGION[1]:g}°N, {CITY_REGION[2]:g}°E), "
               f"{config['real_draws']} releases of their mean; error bars ±2 standard errors. " + BAND_NOTE)
    return name, caption


def _cities_panel(ax, cities):
    if "unavailable" in cities:
        ax.text(0.5, 0.5, "real data not available:\n" + cities["unavailable"], ha="center", va="center", wrap=True,
                fontsize=8, transform=ax.transAxes)
        ax.set_axis_off()
        return
    eu, se_eu = cities["err_euclid"]
    for i, (label, cal, key) in enumerate(CALIBRATIONS):
        m, se = cities["err"][key]
        ratio = m / eu
        ax.bar(i, ratio, yerr=2 * ratio * np.hypot(se / m, se_eu / eu), color=PALETTE["laplace"],
               alpha={"certified": 0.9, "paper_noisier": 0.6, "paper_uncertified": 0.3, "proven": 0.75}[cal], capsize=4,
               hatch="//" if cal == "paper_uncertified" else None, label=label)
    ax.axhline(1.0, color=PALETTE["euclidean_laplace"], linewidth=1, label="Euclidean Laplace = 1")
    ax.set_xticks(range(len(CALIBRATIONS)), ["Rauch L", "2 − h", "empirical C", "proven C"])
    ax.set_ylim(0.7, 1.45)  # room for the legend above the bars
    finish(ax, "d", f"real directions: {cities['n']} cities in {CITY_REGION[0]}", "calibration of the Riemannian Laplace",
           "Riemannian / Euclidean error", loc="upper center")


def _cities_text(cities):
    if "unavailable" in cities:
        return f" The real-data check could not run: {cities['unavailable']}."
    eu = cities["err_euclid"][0]
    red = {key: 100 * (1 - v[0] / eu) for key, v in cities["err"].items()}
    return (f" On real directions, the {cities['n']} of the world's largest cities within r of a public point in {CITY_REGION[0]} "
            f"({', '.join(cities['names'])}), the reductions are {red['empirical']:.1f}% (empirical constant), "
            f"{red['rauch']:.1f}% (Rauch L), {red['proven']:.1f}% (proven C) and {red['karcher']:.1f}% (2 − h): the same as on synthetic caps, since the "
            "noise of these releases does not depend on where the data lie.")


def report(results: dict[str, Any], config: dict[str, Any], out_dir: Path) -> ExperimentResult:
    ns = np.array(config["ns"])
    L = results["constants"]
    eu = np.array(results["err_euclid"])[:, 0]
    red = {k: 100 * (1 - np.array(v)[:, 0] / eu) for k, v in results["err"].items()}
    lo, hi = min(PAPER_REDUCTION), max(PAPER_REDUCTION)
    # the claim's size holds when the mean reduction is within 5 points of the paper's range
    matches = {k: bool(lo - 5 <= np.mean(v) <= hi + 5) for k, v in red.items()}
    worst = max(max(p) / b for p, b in zip(results["sens_points"], results["bounds"]["rauch"]))
    h = hessian_lower_bound(R, 1.0)
    expected = {k: 100 * (1 - (2 / 3) * (R / (2 * np.sin(R / 2))) * (c / h)) for k, c in L.items()}
    c_free = free_log_spread(Sphere(2), R)[0] / (2 * R)
    name, caption = _figure(results, config, out_dir)
    paper_value = f"{PAPER_REDUCTION[0]:g}% less error at small n, {PAPER_REDUCTION[1]:g}% at large n"
    paper_cal = (f"{red['empirical'][0]:.1f}% less at n = {ns[0]}, {red['empirical'][-1]:.1f}% at n = {ns[-1]} (empirical "
                 f"constant {L['empirical']:.3f}: numerically the sup the Thm 2 proof needs); with the proven bound "
                 f"C ≤ {L['proven']:g}: {red['proven'][0]:.1f}%, {red['proven'][-1]:.1f}% (certified by the interval proof)")
    certified = (f"{red['proven'][0]:.1f}% less at n = {ns[0]}, {red['proven'][-1]:.1f}% at n = {ns[-1]} (the default, proven "
                 f"C ≤ {L['proven']:g}); with the Rauch L = {L['rauch']:.3f}: {red['rauch'][0]:.1f}%, {red['rauch'][-1]:.1f}%; "
                 f"with the paper's 2 − h: {red['karcher'][0]:+.1f}%, {red['karcher'][-1]:+.1f}% (negative: more error)")
    explanation = (
        f"The paper's advantage comes with its empirical constant {L['empirical']:.6f}, measured on a grid "
        "(R21-F2). It is not a Lipschitz constant: the proof of R21 Thm 2 needs only C(r) = sup ‖log_m x − log_m y‖/(2r) "
        f"over m, x, y in the ball, and a free optimisation (R21-F2) puts C(π/8) at {c_free:.6f}, the grid's value up "
        "to its resolution, so the paper's calibration is numerically the exact one the proof needs. A computer-assisted "
        f"proof (experiments/sphere_spread.py: interval arithmetic over a covering of the reduced parameter box, "
        f"docs/theory.md §3) bounds C(π/8) ≤ {L['proven']:g}, so a calibration with that constant is certified: it gives "
        f"{span(red['proven'], '{:.1f}', '%')} less error, the paper's size, while the grid value itself, a "
        "maximum over a subset of the ball, is a lower bound on the sup and stays uncertified. With the grid value we measure a reduction "
        f"of {span(red['empirical'], '{:.1f}', '%')} over n. The library's default releases (bound='tight') calibrate "
        "with the proven constant; the Rauch "
        f"Lipschitz constant L = {L['rauch']:.3f} (bound='rauch') keeps only {span(red['rauch'], '{:.1f}', '%')}, and the "
        f"paper's own proven constant 2 − h = {L['karcher']:.3f} turns it into {span(-red['karcher'], '{:.1f}', '%')} more error. "
        f"The reduction does not depend on n in expectation: E‖x̃ − x̄‖ ≈ dσ on the manifold (d = 2) against Dσ_E in R³ "
        f"(D = 3), so it is 1 − (2/3)·(r/chord r)·(L/h) = "
        + ", ".join(f"{v:.1f}% ({k})" for k, v in expected.items())
        + f". The paper's trend from {PAPER_REDUCTION[0]:g}% to {PAPER_REDUCTION[1]:g}% is within its Monte Carlo error around "
        f"the {expected['empirical']:.1f}% predicted for its constant. Panel (c) shows the ratios per n: "
        f"{per(ns, 1 - red['rauch'] / 100)} (certified). Neighbouring-pair distances stay below every bound "
        f"(largest observed ρ(x̄, x̄')/Rauch bound {worst:.2f})." + _cities_text(results["cities"]))
    short = dict(paper_calibration=f"{red['empirical'][0]:.1f}% less at n = {ns[0]}, {red['empirical'][-1]:.1f}% at "
                                   f"n = {ns[-1]} (empirical C = {L['empirical']:.3f}); proven C ≤ {L['proven']:g}: "
                                   f"{red['proven'][0]:.1f}%, {red['proven'][-1]:.1f}%",
                 certified=f"{red['proven'][0]:.1f}% less at n = {ns[0]}, {red['proven'][-1]:.1f}% at n = {ns[-1]} (default, "
                           f"proven C ≤ {L['proven']:g}); Rauch L = {L['rauch']:.3f}: {red['rauch'][0]:.1f}%, "
                           f"{red['rauch'][-1]:.1f}%; with 2 − h: {red['karcher'][0]:+.1f}%, {red['karcher'][-1]:+.1f}%")
    return ExperimentResult(ID, TITLE, CLAIM, verdict(matches["empirical"], matches["rauch"] or matches["proven"]), paper_value, paper_cal,
                            certified, explanation, figures=[name], captions={name: caption}, short=short,
                            data={"constants": L, "reduction_pct": {k: v.tolist() for k, v in red.items()}},
                            data_note="Synthetic caps on the unit sphere (R21 App. A.3.1); real directions: " + CITATION_CITIES + ".")
