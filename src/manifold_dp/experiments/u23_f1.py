"""U23-F1 — 2023 Fig. 1: log-Euclidean SPD(k), n = 500, eigenvalues U[e^−¼, e^¼], Haar vectors.

Riemannian Laplace (exact sampler) against the tangent Gaussian (classical and analytic), δ = 1e-6,
in ρ_LE; the tangent Gaussian over δ; and the extrinsic analytic Gaussian (noise on the Euclidean
mean, Δ_E = 2(e^r − 1)/n) against the tangent Gaussian in Frobenius distance. The Laplace runs at
the certified σ = Δ/ε (2021 Thm 1, homogeneous case) and at σ = 2Δ/ε, the calibration the paper's
plotted magnitudes match (E ρ = dσ), as a ``measurements.paper_variant`` copy (certified, noisier).
"""

from pathlib import Path
from typing import Any

import numpy as np

from ..data import eigen_spd
from ..manifolds import SPDLogEuclidean
from ..manifolds.matrix import expm_sym, invvecd, logm_spd, vecd
from ..privacy import measurements
from ._common import PALETTE, ExperimentResult, figure, finish, one_blas_thread, per, progress, save, series, span, verdict

ID = "U23-F1"
TITLE = "U23 Fig. 1: log-Euclidean SPD(k) — Riemannian Laplace vs tangent Gaussian vs extrinsic Gaussian"
CLAIM = ("The tangent Gaussian gives almost ×10 lower ρ_LE error than the Riemannian Laplace for larger k; δ matters "
         "little; it beats the extrinsic Gaussian in Euclidean distance.")
PROFILES = {"quick": dict(ks=[2, 5, 10, 20, 30], epsilons=[0.1, 0.2, 0.3, 0.4], deltas=[1e-6, 1e-7, 1e-8, 1e-9], reps=20),
            "full": dict(ks=[2, 5, 10, 15, 20, 25, 30], epsilons=[0.1, 0.2, 0.3, 0.4], deltas=[1e-6, 1e-7, 1e-8, 1e-9], reps=100)}
N, R0, DELTA = 500, 0.25, 1e-6
PAPER_K, PAPER_RATIO = 30, 10.0  # "almost ×10 ... for larger k"
PAPER_LAPLACE = {0.1: 51.0, 0.2: 25.0, 0.3: 17.0, 0.4: 13.0}  # E ρ_LE of the Laplace at k = 30, read off U23 Fig. 1
PAPER_DELTAS = (1e-7, 1e-8, 1e-9)  # "not significantly impacted by different values of δ" (U23 §6.1)
PAPER_REASON = "U23 Fig. 1's plotted magnitudes equal E ρ = dσ at σ = 2Δ/ε (R21 Thm 1's general rate)"


def run(config: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    with one_blas_thread():
        return _run(config, rng)


def _run(config, rng):
    out = {"laplace": {}, "laplace_paper": {}, "tang_analytic": {}, "tang_classical": {}, "tang_delta": {},
           "ext_gauss_frob": {}, "tang_frob": {}}
    for k in progress(config["ks"], "U23-F1 k"):
        m = SPDLogEuclidean(k)
        X = eigen_spd(N, k, r=R0, rng=rng)
        r = np.sqrt(k) * R0
        sens = 2 * r / N
        logs = vecd(logm_spd(X))
        mean = expm_sym(invvecd(logs.mean(axis=0), k))
        sens_e = 2 * np.expm1(r) / N
        reps = config["reps"]
        for eps in config["epsilons"]:
            lap = measurements.laplace(m, sens, eps)
            for key, meas in (("laplace", lap), ("laplace_paper", measurements.paper_variant(lap, 2.0, PAPER_REASON))):
                out[key][(k, eps)] = float(np.mean(m.dist(mean, meas.sample(mean, size=reps, rng=rng))))
            for key, calib in (("tang_analytic", "analytic"), ("tang_classical", "classical")):
                tg = measurements.tangent_gaussian(m, sens, eps, DELTA, calibration=calib)
                priv = tg.sample(mean, size=reps, rng=rng)
                out[key][(k, eps)] = float(np.mean(m.dist(mean, priv)))
                if key == "tang_analytic":
                    out["tang_frob"][(k, eps)] = float(np.mean(np.linalg.norm(priv - mean, axis=(1, 2))))
            ext = measurements.ambient(m, "ambient_gaussian", sens_e, eps, DELTA)
            out["ext_gauss_frob"][(k, eps)] = float(np.mean(np.linalg.norm(ext.law.noise(reps, rng), axis=1)))
        for delta in config["deltas"]:
            tg = measurements.tangent_gaussian(m, sens, config["epsilons"][0], delta)
            out["tang_delta"][(k, delta)] = float(np.mean(m.dist(mean, tg.sample(mean, size=reps, rng=rng))))
    return out


def _figure(results, config, out_dir):
    ks, epsilons, deltas = np.array(config["ks"]), config["epsilons"], config["deltas"]
    e0, kmax = epsilons[0], ks[-1]
    fig, axes = figure(rf"U23 Fig. 1 on log-Euclidean SPD($k$): $n = {N}$, data in $B_{{\sqrt{{k}}/4}}(I)$, "
                       rf"$\delta = 10^{{{int(np.log10(DELTA))}}}$", nrows=2, ncols=2, width=5.2, height=4.0)
    a, b, c, d = axes
    at = lambda key, eps: [results[key][(k, eps)] for k in ks]
    series(a, ks, at("laplace", e0), r"Riemannian Laplace, $\sigma = \Delta/\varepsilon$ (certified)", "laplace")
    series(a, ks, at("laplace_paper", e0), r"Riemannian Laplace, $\sigma = 2\Delta/\varepsilon$ (paper, certified, noisier)",
           "laplace", "paper_noisier")
    series(a, ks, at("tang_analytic", e0), "tangent Gaussian, analytic", "tangent_gaussian")
    series(a, ks, at("tang_classical", e0), "tangent Gaussian, classical", "tangent_gaussian_classical")
    a.plot([PAPER_K], [PAPER_LAPLACE[e0]], "*", ms=11, color=PALETTE["bound"], label=f"the paper's Laplace at k = {PAPER_K}")
    finish(a, "a", rf"error at $\varepsilon = {e0:g}$", r"$k$", r"$E\,\rho_{LE}(\bar x, \tilde x)$", logy=True, loc="lower right")
    eps = np.array(epsilons)
    for key, cal, label in (("laplace", "certified", r"$\sigma = \Delta/\varepsilon$ (certified)"),
                            ("laplace_paper", "paper_noisier", r"$\sigma = 2\Delta/\varepsilon$ (paper)")):
        series(b, eps, [results[key][(kmax, e)] / results["tang_analytic"][(kmax, e)] for e in epsilons],
               f"Laplace {label} / tangent Gaussian", "laplace", cal)
    b.axhline(PAPER_RATIO, color=PALETTE["bound"], linestyle="--", linewidth=1, label=f"the paper: almost ×{PAPER_RATIO:g}")
    finish(b, "b", rf"Laplace / tangent Gaussian error at $k = {kmax}$", r"$\varepsilon$", "error ratio", loc="center right")
    b.set_ylim(bottom=0)
    series(c, deltas, [results["tang_delta"][(kmax, dl)] for dl in deltas],
           rf"tangent Gaussian, analytic, $k = {kmax}$", "tangent_gaussian")
    finish(c, "c", rf"tangent Gaussian over $\delta$, $\varepsilon = {e0:g}$", r"$\delta$ (log scale)",
           r"$E\,\rho_{LE}(\bar x, \tilde x)$", logx=True, loc="lower left")
    c.set_ylim(bottom=0)
    series(d, ks, at("ext_gauss_frob", e0), "extrinsic Gaussian, analytic", "extrinsic_gaussian")
    series(d, ks, at("tang_frob", e0), "tangent Gaussian, analytic", "tangent_gaussian")
    finish(d, "d", rf"Frobenius error at $\varepsilon = {e0:g}$", r"$k$", r"$E\,\|\bar x - \tilde x\|_F$", logy=True,
           loc="lower right")
    name = save(fig, out_dir, "u23_f1_logeuclidean")
    caption = (f"Data: n = {N} matrices with eigenvalues uniform on [e^(−1/4), e^(1/4)] and Haar eigenvectors per k; "
               f"{config['reps']} releases per point, means shown (the standard errors are below a few percent and "
               "not drawn). (a) ρ_LE error at the smallest ε; the star is the paper's Laplace value read off its figure. "
               "(b) The Laplace's error over the analytic tangent Gaussian's at the largest k, under both calibrations. "
               "(c) The tangent Gaussian over δ. (d) Frobenius error of the extrinsic and tangent Gaussians. Solid: "
               "certified; dash-dot: the paper's calibration (certified, noisier).")
    return name, caption


def report(results: dict[str, Any], config: dict[str, Any], out_dir: Path) -> ExperimentResult:
    ks, epsilons, deltas = np.array(config["ks"]), config["epsilons"], config["deltas"]
    kmax = ks[-1]
    over = lambda key, tang: np.array([results[key][(kmax, e)] / results[tang][(kmax, e)] for e in epsilons])
    ratio = {"laplace": over("laplace", "tang_analytic"), "laplace_paper": over("laplace_paper", "tang_analytic"),
             "classical": over("laplace", "tang_classical")}
    ext = np.array([results["ext_gauss_frob"][(kmax, e)] / results["tang_frob"][(kmax, e)] for e in epsilons])
    growth = lambda k, lo: results["tang_delta"][(k, deltas[-1])] / results["tang_delta"][(k, lo)] - 1
    paper_lo = PAPER_DELTAS[0] if PAPER_DELTAS[0] in deltas else deltas[0]
    grown_all = np.array([growth(k, deltas[0]) for k in ks])
    grown_paper = np.array([growth(k, paper_lo) for k in ks])
    tg = measurements.tangent_gaussian(SPDLogEuclidean(2), 1.0, epsilons[0], deltas[-1]).scale
    sigma_growth = tg / measurements.tangent_gaussian(SPDLogEuclidean(2), 1.0, epsilons[0], paper_lo).scale - 1
    paper_eps = [e for e in epsilons if e in PAPER_LAPLACE]
    vs_paper = np.array([results["laplace_paper"][(kmax, e)] / PAPER_LAPLACE[e] for e in paper_eps])
    # "almost ×10": within [7.5, 12.5]; δ "matters little": over the paper's own range of δ the error grows by less
    # than half, far less than the Laplace's gap; the extrinsic part is calibration-free
    near_ten = {key: bool(np.all((v >= 0.75 * PAPER_RATIO) & (v <= 1.25 * PAPER_RATIO))) for key, v in ratio.items()}
    little = bool(np.all(grown_paper < 0.5))
    others = bool(np.all(ext > 1) and little)
    name, caption = _figure(results, config, out_dir)
    d = kmax * (kmax + 1) // 2
    paper_value = (f"Laplace/TanG almost ×{PAPER_RATIO:g} at k = {PAPER_K}; Laplace E ρ ≈ "
                   + ", ".join(f"{v:g}" for v in PAPER_LAPLACE.values()) + " at ε = " + ", ".join(f"{e:g}" for e in PAPER_LAPLACE))
    paper_cal = (f"×{span(ratio['laplace_paper'], '{:.1f}')} at k = {kmax} (σ = 2Δ/ε, certified); E ρ = "
                 + ", ".join(f"{results['laplace_paper'][(kmax, e)]:.1f}" for e in epsilons))
    certified = (f"×{span(ratio['laplace'], '{:.1f}')} at k = {kmax} at the tighter σ = Δ/ε (×{span(ratio['classical'], '{:.1f}')} "
                 "against the classical tangent Gaussian); E ρ = "
                 + ", ".join(f"{results['laplace'][(kmax, e)]:.1f}" for e in epsilons))
    explanation = (
        f"The paper's Laplace magnitudes are reproduced by the exact Laplace sampler at σ = 2Δ/ε: at k = {kmax} our "
        f"E ρ_LE is {span(vs_paper, '{:.2f}')} times the values read off its figure, as E ρ = dσ predicts "
        f"(d = k(k+1)/2 = {d}). That scale is R21 Thm 1's general rate, a certified calibration, and under it the "
        f"tangent Gaussian's advantage is ×{span(ratio['laplace_paper'], '{:.1f}')} over ε "
        f"({'matching' if near_ten['laplace_paper'] else 'against'} the paper's almost ×{PAPER_RATIO:g}). The log-Euclidean "
        "space is homogeneous (the Laplace's normalising constant does not depend on the footpoint), so R21 Thm 1 also "
        f"certifies the tighter σ = Δ/ε, which halves the advantage: ×{span(ratio['laplace'], '{:.1f}')} against the "
        f"analytic tangent Gaussian, ×{span(ratio['classical'], '{:.1f}')} against the classical one. The ranking holds "
        "under every calibration; only the size of the gap depends on it. The paper sampled the Laplace by MCMC and "
        "reports no significant difference between burn-ins (its Fig. 4b), consistent with the magnitudes matching an "
        f"exact draw. δ: the paper finds the error 'not significantly impacted' by δ ∈ "
        f"{{{', '.join(f'{x:g}' for x in PAPER_DELTAS)}}}. Over that range (δ = {paper_lo:g} to {deltas[-1]:g}) the tangent "
        f"Gaussian's error grows by {per(ks, 100 * grown_paper, '{:+.0f}%', 'k')} (ε = {epsilons[0]:g}), in line with its "
        f"analytic σ ({100 * sigma_growth:+.0f}%; the error is proportional to σ, the rest is Monte Carlo error), and "
        f"from δ = {deltas[0]:g} by {span(100 * grown_all, '{:.0f}', '%')}. So δ matters "
        + (f"little in the sense the paper uses: a hundredfold smaller δ costs at most {100 * grown_paper.max():.0f}% "
           f"more error, against a Laplace gap of ×{min(r.min() for r in ratio.values()):.1f} or more, since σ grows "
           "only like √ln(1/δ); the cost is measurable, not nil"
           if little else "more than the paper says")
        + f". The extrinsic Gaussian has {per(epsilons, ext, '{:.1f}', 'ε')} times the tangent Gaussian's Frobenius "
        f"error at k = {kmax}.")
    short = dict(paper_calibration=f"×{span(ratio['laplace_paper'], '{:.1f}')} at k = {kmax} (σ = 2Δ/ε, certified)",
                 certified=f"×{span(ratio['laplace'], '{:.1f}')} at k = {kmax} (tighter σ = Δ/ε); δ from "
                           f"{paper_lo:g} to {deltas[-1]:g}: +{span(100 * grown_paper, '{:.0f}', '%')} error")
    whole = near_ten["laplace_paper"] and others
    return ExperimentResult(ID, TITLE, CLAIM, verdict(whole, whole, partly=near_ten["laplace_paper"] or others),
                            paper_value, paper_cal, certified, explanation, figures=[name], captions={name: caption},
                            data_note="Synthetic SPD matrices (U23 §6.1).", short=short)
