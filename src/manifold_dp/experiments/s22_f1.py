"""S22-F1a/b — 2022 Fig. 1: KNG against the Riemannian Laplace and Euclidean baselines, ε = 1.

(a) S², r = π/8 cap data: KNG, Riemannian Laplace, Euclidean (ℓ2) Laplace on the ambient mean,
and the same projected back onto the sphere; error ‖x̄ − x̃‖ in R³.
(b) SPD(2) affine-invariant, Wishart data (r = 1.5): the same mechanisms, Euclidean Laplace on
vecd of the mean (projected to PD); error ‖vech x̄ − vech x̃‖.

Two calibrations side by side, both drawn by the same measurements: the certified one (KNG
σ = 2Δ_KNG/ε, 2022 Thm 1; Laplace σ = Δ/ε, 2021 Thm 1 on a homogeneous space) and the paper's
reading, which compares the two mechanisms' sensitivities only (2022 Remark 1, §4.1): the same
multiplier for both, as ``measurements.paper_variant`` copies (KNG at Δ_KNG/ε, NOT certified; or
the Laplace at 2Δ/ε, certified and noisier). The factor 2 of KNG is what the only available proof
needs; ``realised_kng_loss`` measures, by quadrature on adversarial S² pairs, the privacy loss
KNG at Δ_KNG/ε actually incurs on them (a lower bound on its ε, not a proof).
"""

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from .._typing import Array
from ..data import sphere_cap, wishart_spd
from ..manifolds import SPDAffineInvariant, Sphere
from ..manifolds.base import Manifold
from ..manifolds.matrix import invvecd, vech
from ..privacy import ambient_sensitivity, frechet_mean_sensitivity, measurements
from ..privacy.release import prepare_records
from ..privacy.sensitivity import hessian_lower_bound
from ..stats import frechet_mean
from ..stats.frechet import riemannian_gradient
from ._common import (
    BAND_NOTE,
    PALETTE,
    ExperimentResult,
    figure,
    finish,
    mean_se,
    per,
    progress,
    save,
    series,
    shared_legend,
    span,
    verdict,
)

ID = "S22-F1"
TITLE = "S22 Fig. 1: KNG vs Riemannian Laplace vs Euclidean Laplace (S² and SPD(2)), ε = 1, both calibrations"
CLAIM = ("S²: KNG has the smallest error, the unprojected Euclidean Laplace the largest. "
         "SPD(2): KNG ≈ Riemannian Laplace, both better than the Euclidean Laplace.")
PROFILES = {"quick": dict(ns=[10, 25, 50, 100], reps=20, spd_reps=30, draws=20),
            "full": dict(ns=[10, 20, 50, 100, 200, 400], reps=1000, spd_reps=500, draws=20)}
EPSILON = 1.0
R_SPHERE, R_SPD = np.pi / 8, 1.5
# name → (label, palette key, calibration style)
MECHANISMS = {
    "kng": ("KNG, σ = 2Δ_KNG/ε (certified)", "kng", "certified"),
    "kng_paper": ("KNG, σ = Δ_KNG/ε (paper, NOT certified)", "kng", "paper_uncertified"),
    "laplace": ("Riemannian Laplace, σ = Δ/ε (certified)", "laplace", "certified"),
    "laplace_2x": ("Riemannian Laplace, σ = 2Δ/ε (certified, noisier)", "laplace", "paper_noisier"),
    "projected": ("Euclidean Laplace, projected (certified)", "euclidean_laplace_projected", "certified"),
    "unprojected": ("Euclidean Laplace, not projected (certified)", "euclidean_laplace", "certified"),
}
# measured, not drawn in the figure: KNG at the paper's multiplier with the paper's constant 2 − h in Δ_KNG
EXTRA = ("kng_paper_karcher",)
RATIOS = (("kng", "laplace", "certified", r"ratio, certified: $2\Delta_{KNG}/\varepsilon$ vs $\Delta/\varepsilon$"),
          ("kng_paper", "laplace", "paper_uncertified", r"ratio, paper: same multiplier (KNG at $\Delta_{KNG}/\varepsilon$)"),
          ("kng", "laplace_2x", "paper_noisier", r"ratio, paper: same multiplier (Laplace at $2\Delta/\varepsilon$)"))
COMPARABLE = 1.25  # "comparable utility" on SPD(2): KNG/Laplace error within this factor of one
SAME_MULTIPLIER = "S22 Remark 1 and §4.1 compare sensitivities only: the same multiplier for KNG and the Laplace"


def _mathtext(label):
    return label.replace("Δ_KNG", r"$\Delta_{KNG}$").replace("Δ", r"$\Delta$").replace("ε", r"$\varepsilon$")


def _measurements(manifold, n, r, center):
    kng = measurements.kng(manifold, frechet_mean_sensitivity(manifold, n=n, radius=r, kind="kng"), EPSILON,
                           center=center, radius=r)
    lap = measurements.laplace(manifold, frechet_mean_sensitivity(manifold, n=n, radius=r), EPSILON)
    amb = measurements.ambient(manifold, "ambient_laplace", ambient_sensitivity(manifold, n=n, radius=r, center=center),
                               EPSILON, floor=manifold.ambient_floor(center, r))
    # the paper's own Lipschitz constant 2 − h in Δ_KNG = 2rL/n instead of ours (no change where h = 1)
    karcher = (2.0 - hessian_lower_bound(r, manifold.curvature_bounds[1])) * 2.0 * r / (n * kng.sensitivity)
    return {"kng": kng, "kng_paper": measurements.paper_variant(kng, 0.5, SAME_MULTIPLIER),
            "kng_paper_karcher": measurements.paper_variant(kng, 0.5 * karcher, SAME_MULTIPLIER + ", with L = 2 − h"),
            "laplace": lap, "laplace_2x": measurements.paper_variant(lap, 2.0, "the general rate of R21 Thm 1, σ = 2Δ/ε"),
            "ambient": amb}


def gradient_slope(manifold: Manifold, X: ArrayLike, mean: Array, rng: np.random.Generator, t: float = 1e-3,
                   directions: int = 8) -> float:
    """``H ≈ ‖∇F(x)‖/ρ(x̄, x)`` just off the mean: how steeply KNG's exponent grows, which with
    ``h`` sets the KNG/Laplace error ratio (``2h/H`` certified, ``h/H`` at the same multiplier)."""
    u = manifold.random_unit_tangent(mean, size=directions, rng=rng)
    x = manifold.exp(mean, t * u)
    return float(np.mean(manifold.norm(x, riemannian_gradient(manifold, x, X)) / manifold.dist(mean, x)))


def _panel(manifold, make, r, center, ns, reps, draws, rng, metric, label, unprojected):
    """Errors of every mechanism over ``reps`` data sets per ``n``, ``draws`` releases of each per
    data set (a KNG call costs the same for one draw or many)."""
    errs = {k: [] for k in (*MECHANISMS, *EXTRA)}
    slopes = []
    for n in progress(ns, f"S22-F1 {label} n"):
        ms = _measurements(manifold, n, r, center)
        acc = {k: [] for k in (*MECHANISMS, *EXTRA)}
        slope = []
        for _ in range(reps):
            X, _ = prepare_records(manifold, make(n, rng), center, r)
            mean = frechet_mean(X, manifold, tol=1e-12).point
            for k in ("kng", "kng_paper", *EXTRA):
                if k in EXTRA and ms[k].scale == ms["kng_paper"].scale:  # the same law (h = 1): not drawn twice
                    continue
                acc[k].append(metric(mean, ms[k].sample((X, mean), size=draws, rng=rng)))
            for k in ("laplace", "laplace_2x"):
                acc[k].append(metric(mean, ms[k].sample(mean, size=draws, rng=rng)))
            amb = ms["ambient"]
            z = np.mean(manifold.to_ambient(X), axis=0) + amb.law.noise(draws, rng)  # the same draws, shown both ways
            acc["unprojected"].append(metric(mean, unprojected(z), raw=True))
            acc["projected"].append(metric(mean, amb.law.from_ambient(z)))
            if len(slope) < 5:
                slope.append(gradient_slope(manifold, X, mean, rng))
        for k in (*MECHANISMS, *EXTRA):
            errs[k].append(mean_se(np.concatenate(acc[k])) if acc[k] else errs["kng_paper"][-1])
        slopes.append(float(np.mean(slope)))
    return {"err": errs, "H": slopes}


def _cap_grid(r, n_theta, n_phi):
    """Midpoint quadrature nodes of ``B_r(north pole)`` on S² with the log of their volume
    weights, and (weight −inf: evaluated, not integrated) points on the boundary circle, where the
    loss peaks."""
    theta = (np.arange(n_theta) + 0.5) * r / n_theta
    phi = (np.arange(n_phi) + 0.5) * 2 * np.pi / n_phi
    T, P = np.meshgrid(np.append(theta, r), phi, indexing="ij")
    pts = np.stack([np.sin(T) * np.cos(P), np.sin(T) * np.sin(P), np.cos(T)], axis=-1).reshape(-1, 3)
    logw = np.log(np.sin(T) * (r / n_theta) * (2 * np.pi / n_phi))
    logw[-1] = -np.inf
    return pts, logw.ravel()


def realised_kng_loss(n: int, grid: tuple[int, int] = (60, 240), multiplier: float = 1.0) -> float:
    """Largest privacy loss ``|log p_D(y) − log p_D'(y)|`` (to compare with ε) over a grid of the cap for KNG on S²
    at σ = multiplier·Δ_KNG/ε (the paper's: 1; certified: 2), over adversarial neighbouring pairs: the other ``n − 1`` records
    at the centre, on the boundary on either side of the replaced one, or across; the replaced record
    moved across the ball. The densities are exact at the grid points and the normalising
    constants converged quadratures, so the value is a lower bound on that calibration's ε (a
    value under 1 would not prove it ε-DP)."""
    s = Sphere(2)
    kng = measurements.kng(s, frechet_mean_sensitivity(s, n=n, radius=R_SPHERE, kind="kng"), EPSILON,
                           center=s.origin, radius=R_SPHERE)
    sigma = kng.scale if multiplier == 2.0 else measurements.paper_variant(kng, multiplier / 2, SAME_MULTIPLIER).scale
    pts, logw = _cap_grid(R_SPHERE, *grid)
    edge = lambda phi: s.exp(s.origin, R_SPHERE * np.array([np.cos(phi), np.sin(phi), 0.0]))
    rests = [s.origin, edge(0.0), edge(np.pi), edge(np.pi / 2)]
    swaps = [(edge(0.0), edge(np.pi)), (s.origin, edge(0.0)), (edge(np.pi / 2), edge(-np.pi / 2))]
    worst = 0.0
    for rest in rests:
        for a, b in swaps:
            pairs = [(np.array([rest, last]), np.array([n - 1.0, 1.0])) for last in (a, b)]
            # the loss peaks where one density's exponent has its cusp: at the two means
            means = np.array([frechet_mean(X, s, weights=w, tol=1e-13).point for X, w in pairs])
            at, lw = np.concatenate([pts, means]), np.concatenate([logw, [-np.inf, -np.inf]])
            logp = []
            for X, w in pairs:
                u = -s.norm(at, riemannian_gradient(s, at, X, weights=w)) / sigma
                logp.append(u - logsumexp(u + lw))
            worst = max(worst, float(np.max(np.abs(logp[0] - logp[1]))))
    return worst


def run(config: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    s = Sphere(2)
    sphere_metric = lambda m, x, raw=False: np.linalg.norm(np.asarray(x) - m, axis=-1)
    a = _panel(s, lambda n, g: sphere_cap(n, rng=g), R_SPHERE, s.origin, config["ns"], config["reps"], config["draws"],
               rng, sphere_metric, "S²", lambda z: z)
    spd = SPDAffineInvariant(2)
    spd_metric = lambda m, x, raw=False: np.linalg.norm(vech(np.asarray(x)) - vech(m), axis=-1)
    b = _panel(spd, lambda n, g: wishart_spd(n, 2, rng=g), R_SPD, np.eye(2), config["ns"], config["spd_reps"],
               config["draws"], rng, spd_metric, "SPD(2)", lambda z: invvecd(z, 2))
    loss = {n: realised_kng_loss(n) for n in config["ns"]}
    loss_certified = {n: realised_kng_loss(n, multiplier=2.0) for n in config["ns"]}
    return {"sphere": a, "spd": b, "realised_loss": loss, "realised_loss_certified": loss_certified,
            "h": {"sphere": hessian_lower_bound(R_SPHERE, 1.0), "spd": hessian_lower_bound(R_SPD, 0.0)}}


def _ratio(results, space, num, den):
    a, b = np.array(results[space]["err"][num]), np.array(results[space]["err"][den])
    ratio = a[:, 0] / b[:, 0]
    return ratio, ratio * np.hypot(a[:, 1] / a[:, 0], b[:, 1] / b[:, 0])


def _figure(results, config, out_dir):
    ns = np.array(config["ns"])
    fig, axes = figure(rf"S22 Fig. 1: private Fréchet means, $\varepsilon = {EPSILON:g}$, certified and paper calibrations",
                       nrows=2, ncols=2, width=5.4, height=4.6)
    for ax, space, letter, what, ylabel in (
            (axes[0], "sphere", "a", r"$S^2$, $r = \pi/8$", r"$\|\bar x - \tilde x\|$ in $\mathbb{R}^3$"),
            (axes[1], "spd", "b", rf"SPD(2), $r = {R_SPD:g}$", r"$\|\mathrm{vech}\,\bar x - \mathrm{vech}\,\tilde x\|$")):
        for key, (label, colour, cal) in MECHANISMS.items():
            v = np.array(results[space]["err"][key])
            series(ax, ns, v[:, 0], _mathtext(label), colour, cal, se=v[:, 1])
        finish(ax, letter, f"error, {what}", r"$n$ (log scale)", ylabel, logx=True, logy=True, legend=False, xticks=ns)
    for ax, space, letter, what in ((axes[2], "sphere", "c", r"$S^2$"), (axes[3], "spd", "d", "SPD(2)")):
        h = results["h"][space]
        H = np.array(results[space]["H"])
        for num, den, cal, label in RATIOS:
            ratio, se = _ratio(results, space, num, den)
            series(ax, ns, ratio, label, "kng", cal, se=se)
        ax.plot(ns, 2 * h / H, color=PALETTE["bound"], linewidth=0.9, linestyle="-", label=r"prediction $2h/H$")
        ax.plot(ns, h / H, color=PALETTE["bound"], linewidth=0.9, linestyle=":", label=r"prediction $h/H$")
        ax.axhline(1.0, color=PALETTE["laplace"], linewidth=1, label="Riemannian Laplace = 1")
        finish(ax, letter, f"KNG / Riemannian Laplace error, {what}", r"$n$ (log scale)", "error ratio", logx=True,
               legend=False, xticks=ns)
    shared_legend(fig, [axes[0], axes[2]], ncol=3)
    name = save(fig, out_dir, "s22_f1_kng")
    caption = (f"Data: {config['reps']} data sets per n on S² (caps of radius π/8 around the north pole) and "
               f"{config['spd_reps']} on SPD(2) (Wishart, clipped to r = {R_SPD:g}), {config['draws']} releases of each "
               "mechanism per data set. (a, b) Error of each mechanism; solid: certified; dotted: KNG at the paper's multiplier (not "
               "certified); dash-dot: the Laplace at the paper's multiplier (certified, noisier). (c, d) KNG's error "
               "over the Laplace's under each reading, with the predictions from h (the Laplace's curvature factor) "
               "and H (the slope of ‖∇F‖ at the mean, measured). " + BAND_NOTE)
    return name, caption


def _claim_holds(results, kng, laplace):
    """Per n, whether the paper's ranking holds with these two variants: on S² KNG lowest and the
    unprojected Euclidean Laplace highest; on SPD(2) KNG/Laplace within [0.8, 1.25] and both below
    the Euclidean Laplace. Returns (S² holds at a majority of n, SPD(2) likewise, both per-n arrays)."""
    sph = {k: np.array(v)[:, 0] for k, v in results["sphere"]["err"].items()}
    spd = {k: np.array(v)[:, 0] for k, v in results["spd"]["err"].items()}
    sphere_ok = (sph[kng] < np.minimum.reduce([sph[laplace], sph["projected"], sph["unprojected"]])) & (
        sph["unprojected"] >= np.maximum.reduce([sph[kng], sph[laplace], sph["projected"]]))
    ratio = spd[kng] / spd[laplace]
    spd_ok = (ratio >= 1 / COMPARABLE) & (ratio <= COMPARABLE) & (np.maximum(spd[kng], spd[laplace]) < spd["projected"])
    return bool(np.mean(sphere_ok) >= 0.5), bool(np.mean(spd_ok) >= 0.5), sphere_ok, spd_ok


def report(results: dict[str, Any], config: dict[str, Any], out_dir: Path) -> ExperimentResult:
    ns = np.array(config["ns"])
    *_, cert_sph, cert_spd = _claim_holds(results, "kng", "laplace")
    *stated, stated_sph, stated_spd = _claim_holds(results, "kng", "laplace_2x")
    where = lambda ok: "every n" if ok.all() else ("no n" if not ok.any() else "n = " + ", ".join(f"{n}" for n in ns[ok]))
    r_cert, _ = _ratio(results, "sphere", "kng", "laplace")
    r_paper, _ = _ratio(results, "sphere", "kng_paper", "laplace")
    r_2x, _ = _ratio(results, "sphere", "kng", "laplace_2x")
    s_2x, _ = _ratio(results, "spd", "kng", "laplace_2x")
    proj_vs_kng, _ = _ratio(results, "sphere", "projected", "kng")
    karcher_vs_proj, _ = _ratio(results, "sphere", "kng_paper_karcher", "projected")
    sph = {k: np.array(v)[:, 0] for k, v in results["sphere"]["err"].items() if k in MECHANISMS}
    lap2_worst = sph["laplace_2x"] >= np.maximum.reduce([v for k, v in sph.items() if k != "laplace_2x"])
    s_cert, _ = _ratio(results, "spd", "kng", "laplace")
    s_paper, _ = _ratio(results, "spd", "kng_paper", "laplace")
    h, H = results["h"]["sphere"], np.array(results["sphere"]["H"])
    n0, r0 = int(ns[0]), R_SPHERE
    L_ours = frechet_mean_sensitivity(Sphere(2), n=n0, radius=r0, kind="kng") * n0 / (2 * r0)
    loss = results["realised_loss"]
    unsafe = max(loss.values()) > EPSILON
    kng_over_laplace = bool(np.all(r_2x < 1))
    name, caption = _figure(results, config, out_dir)
    paper_value = "S²: KNG best; SPD(2): KNG ≈ Laplace (no numbers given)"
    paper_cal = (f"σ = 2Δ/ε for both, as stated (S22 Thm 1, R21 Thm 1; certified): KNG/Laplace S² {per(ns, r_2x)}; "
                 f"SPD(2) {per(ns, s_2x)}; projected Euclidean Laplace/KNG on S² {per(ns, proj_vs_kng)}")
    certified = (f"Laplace at the tighter σ = Δ/ε: KNG/Laplace S² {per(ns, r_cert)}; SPD(2) {per(ns, s_cert)}; ranking holds "
                 f"on S² at {where(cert_sph)}, on SPD(2) at {where(cert_spd)}")
    explanation = (
        "Both papers state their calibration: σ = 2Δ/ε for KNG (S22 Thm 1) and for the Laplace (R21 Thm 1), and both "
        "are certified. Under them KNG beats the Riemannian Laplace on S² at "
        f"{where(r_2x < 1)} (KNG/Laplace {per(ns, r_2x)}), and on SPD(2) the ratio is {per(ns, s_2x)} (within a "
        f"factor {COMPARABLE:g} of one, the paper's 'comparable utility', at {where(stated_spd)}). What fails is 'KNG best "
        f"overall' on S²: the projected Euclidean Laplace (certified) beats KNG at {where(proj_vs_kng < 1)} "
        f"(projected/KNG {per(ns, proj_vs_kng)}), and the Laplace at 2Δ/ε, not the unprojected Euclidean Laplace, has the "
        f"largest error at {where(lap2_worst)}; the whole S² ranking holds at {where(stated_sph)}. "
        f"These columns use the library's constant L = {L_ours:.3f} (bound='tight': the smaller of the Rauch constant and "
        f"the sphere's proven spread constant) in Δ_KNG = 2rL/n and Δ = 2rL/(nh); the paper's own "
        f"2 − h = {2 - h:.3f} multiplies both by {(2 - h) / L_ours:.3f}, which leaves KNG/Laplace as it is but not KNG against "
        "the projected Euclidean Laplace, whose sensitivity is a chord: with 2 − h even KNG at the uncertified "
        f"σ = Δ_KNG/ε has KNG/projected error {per(ns, karcher_vs_proj)}, losing at {where(karcher_vs_proj > 1)}. "
        "The Laplace's scale 2Δ/ε is the general rate of R21 Thm 1; on this homogeneous space its normalising constant "
        f"does not depend on the footpoint and Δ/ε is certified too, and then KNG loses on S² ({per(ns, r_cert)}, "
        f"approaching 2h/H = {span(2 * h / H)} with h = {h:.3f} the Laplace's curvature factor and H the measured slope "
        "of ‖∇F‖ at the mean; at the smallest n the ball truncates KNG's wider law and the ratio is lower). KNG's own "
        "factor 2 is needed by the S22 Thm 1 proof because its normalising constant depends on the data. S22 Remark 1 "
        "and §4.1 compare the two mechanisms through their sensitivities only; read as the same multiplier with KNG at "
        f"the uncertified Δ_KNG/ε, KNG/Laplace is {per(ns, r_paper)} on S² (prediction h/H = {span(h / H)}) and "
        f"{per(ns, s_paper)} on SPD(2). By quadrature on adversarial S² pairs (the other records at the centre or on the "
        "boundary, the replaced record moved across the ball; densities on a grid of the cap and at both means, where "
        "the loss peaks), KNG at σ = Δ_KNG/ε realises a privacy loss of "
        + ", ".join(f"{v:.2f} at n = {n}" for n, v in loss.items())
        + (f", more than ε = {EPSILON:g}: that reading is not ε-DP" if unsafe
           else f", within ε = {EPSILON:g} on these pairs, which does not prove it ε-DP")
        + f" (the certified 2Δ_KNG/ε gives at most {max(results['realised_loss_certified'].values()):.2f} on the same pairs). "
        "At the smallest n on SPD(2) KNG's law is truncated by the ball while the unrestricted Laplace keeps its heavy "
        "tail in vech coordinates, which pulls the ratios down there.")
    short = dict(paper_calibration=f"σ = 2Δ/ε (both certified): KNG/Laplace S² {span(r_2x)}, SPD(2) {span(s_2x)}; "
                                   f"projected Euclidean/KNG S² {span(proj_vs_kng)}",
                 certified=f"Laplace at Δ/ε: KNG/Laplace S² {span(r_cert)}, SPD(2) {span(s_cert)}")
    return ExperimentResult(ID, TITLE, CLAIM, verdict(all(stated), all(stated), partly=kng_over_laplace or any(stated)),
                            paper_value, paper_cal, certified, explanation, figures=[name], captions={name: caption},
                            data={"realised_loss": loss, "realised_loss_certified": results["realised_loss_certified"]},
                            data_note="Synthetic caps on S² and Wishart matrices on SPD(2) (as in the S22 paper's Fig. 1).",
                            short=short)
