"""S22-F2/3 — 2022 §4.3 on real planar shapes: private mean shape by KNG vs landmark-wise Laplace.

The corpus-callosum data of the paper are not public; we use two landmark data sets shipped by
``ktch``: mosquito wings (127 × 18) and trilobite cephala (300 × 16, 15 specimens with missing
landmarks: a real bad-input test, replaced by the public centre as any release does). For each,
a fixed public split chooses the centre ``m0`` (its Fréchet mean) and the radius; the rest are
the private records. Mechanisms: KNG at the certified σ = 2Δ_KNG/ε and at the paper's Δ_KNG/ε
(``measurements.paper_variant``, NOT certified); the Riemannian Laplace; and landmark-wise Laplace
on the mean pre-shape after rotating each record onto ``m0``, both as the paper does it (the
budget split across the k landmarks, ε/k each) and jointly (one coordinate-wise Laplace on all
2k coordinates, about √k less noise), and the paper's split without the rotation. Error: the
shape distance to the non-private mean shape.
"""

from pathlib import Path
from typing import Any

import numpy as np

from .._typing import FloatArray
from ..manifolds import Euclidean, KendallShape2D
from ..privacy import frechet_mean_sensitivity, measurements
from ..privacy.release import prepare_records
from ..stats import frechet_mean
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

ID = "S22-F2/3"
TITLE = "S22 §4.3 (Figs. 2-3): private mean shape on Kendall's shape space, real landmark data"
CLAIM = ("KNG keeps the mean shape's structure; the landmark-wise Laplace (privacy budget split across landmarks) "
         "distorts it; without rotational alignment the shape is destroyed.")
PROFILES = {"quick": dict(epsilons=[0.5, 1.0, 2.0, 5.0], reps=30),
            "full": dict(epsilons=[0.25, 0.5, 1.0, 2.0, 5.0, 10.0], reps=300)}
SHOW_EPSILON = 5.0
DATASETS: dict[str, dict[str, Any]] = {
    "mosquito wings": dict(loader="load_landmark_mosquito_wings", field="coords", public=27,
                           cite="mosquito-wing landmarks (127 × 18) of Rohlf & Slice (1990), shipped by ktch "
                                "(ktch.datasets.load_landmark_mosquito_wings; package licence Apache-2.0; the data's "
                                "own terms are not stated in the package)"),
    "trilobite cephala": dict(loader="load_landmark_trilobite_cephala", field="landmarks", public=60,
                              cite="trilobite cephala landmarks (300 × 16) of the TriloMorph database v1.2 (Serra et al. "
                                   "2023, Scientific Data 10:841), shipped by ktch (load_landmark_trilobite_cephala; "
                                   "package licence Apache-2.0; the data's own licence is that of its Zenodo record, "
                                   "not stated in the package)"),
}
MECHANISMS = {
    "kng": ("KNG, σ = 2Δ_KNG/ε (certified)", "kng", "certified"),
    "kng_paper": ("KNG, σ = Δ_KNG/ε (paper, NOT certified)", "kng", "paper_uncertified"),
    "laplace": ("Riemannian Laplace, σ = Δ/ε (certified)", "laplace", "certified"),
    "split": ("landmark Laplace, ε/k per landmark (paper)", "landmark_split", "certified"),
    "joint": ("landmark Laplace, joint", "landmark_joint", "certified"),
    "unaligned": ("landmark Laplace, ε/k, no alignment (paper)", "landmark_unaligned", "certified"),
}
SHORT = {"kng": "certified KNG", "kng_paper": "KNG at the paper's multiplier", "laplace": "the Riemannian Laplace"}
SAME_MULTIPLIER = "S22 Remark 1 and §4.1 compare sensitivities only: the same multiplier for KNG and the Laplace"


def load(name: str) -> tuple[KendallShape2D, FloatArray]:
    """``(kendall, raw landmarks (N, k, 2))`` of a ktch data set."""
    from ktch import datasets

    spec = DATASETS[name]
    coords = np.asarray(getattr(getattr(datasets, spec["loader"])(), spec["field"]), dtype=float)
    return KendallShape2D(coords.shape[1]), coords


def _landmark_laplace(kendall, X, m0, radius, epsilon, align, split, size, rng):
    """Coordinate-wise Laplace on the mean pre-shape (k complex landmarks, ℓ1 ≤ √D·ℓ2): on all 2k
    coordinates at once, or landmark by landmark with ε/k each (sequential composition)."""
    k = kendall.k_landmarks
    if align:
        X = kendall.align(m0, X)
        l2 = 2 * 2 * np.sin(radius / 2) / len(X)  # aligned records lie within chord(r) of m0; so does each landmark
    else:
        l2 = 2 * 2.0 / len(X)  # unit pre-shapes: any two (and any two landmarks) within distance 2
    z = np.concatenate([X.real, X.imag], axis=1).mean(axis=0)
    if split:
        m = measurements.ambient(Euclidean(2), "coordinate_laplace", l2, epsilon / k)
        noise = m.law.noise(size * k, rng).reshape(size, k, 2)
        noise = np.concatenate([noise[..., 0], noise[..., 1]], axis=1)
    else:
        noise = measurements.ambient(Euclidean(2 * k), "coordinate_laplace", l2, epsilon).law.noise(size, rng)
    z = z + noise
    return kendall.preshape(z[:, :k] + 1j * z[:, k:])


def _kng_variants(kendall, sensitivity, epsilon, m0, radius):
    """KNG at the certified σ = 2Δ_KNG/ε and at the paper's Δ_KNG/ε; ``None`` where the public
    feasibility check refuses it (the noise would dwarf the ball). Where the certified one is
    refused, the paper's law is built as what it is: the certified KNG at 2ε, the same σ."""
    def build(eps):
        try:
            return measurements.kng(kendall, sensitivity, eps, center=m0, radius=radius)
        except ValueError:
            return None

    cert = build(epsilon)
    return {"kng": cert, "kng_paper": measurements.paper_variant(cert, 0.5, SAME_MULTIPLIER) if cert else build(2 * epsilon)}


def _one_dataset(name, config, rng):
    kendall, raw = load(name)
    order = np.random.default_rng(2022).permutation(len(raw))  # the public split is fixed, not data-driven
    public = kendall.preshape(raw[order[:DATASETS[name]["public"]]])
    public = public[np.all(np.isfinite(public), axis=1)]
    # any public point is a valid centre; across trilobite genera the public shapes spread beyond r*
    m0 = frechet_mean(public, kendall, check_assumption=False).point
    radius = float(min(0.95 * kendall.assumption_radius, 2.0 * np.max(kendall.dist(m0, public))))
    X, counts = prepare_records(kendall, raw[order[DATASETS[name]["public"]:]], m0, radius)
    mean = frechet_mean(X, kendall, tol=1e-12).point
    n, reps = len(X), config["reps"]
    err = {k: [] for k in MECHANISMS}
    refused = {"kng": [], "kng_paper": []}
    examples = {}
    nan = np.full((reps, kendall.k_landmarks), np.nan + 0j)
    for eps in progress(config["epsilons"], f"S22-F2/3 {name} ε"):
        draws = {}
        variants = _kng_variants(kendall, frechet_mean_sensitivity(kendall, n=n, radius=radius, kind="kng"), eps, m0, radius)
        for key, m in variants.items():
            if m is None:
                refused[key].append(eps)
                draws[key] = nan
            else:
                draws[key] = m.sample((X, mean), size=reps, rng=rng)
        lap = measurements.laplace(kendall, frechet_mean_sensitivity(kendall, n=n, radius=radius), eps)
        draws["laplace"] = lap.sample(mean, size=reps, rng=rng)
        draws["split"] = _landmark_laplace(kendall, X, m0, radius, eps, True, True, reps, rng)
        draws["joint"] = _landmark_laplace(kendall, X, m0, radius, eps, True, False, reps, rng)
        draws["unaligned"] = _landmark_laplace(kendall, X, m0, radius, eps, False, True, reps, rng)
        for k in MECHANISMS:
            err[k].append(mean_se(kendall.dist(mean, draws[k])))
        if eps == SHOW_EPSILON:
            examples = {k: v[:6] for k, v in draws.items()}
    return dict(err=err, mean=mean, examples=examples, n=n, radius=radius, k=kendall.k_landmarks, refused=refused,
                replaced=int(counts.non_finite + counts.off_manifold), clipped=int(counts.clipped), total=len(raw),
                missing=int(np.sum(~np.all(np.isfinite(raw), axis=(1, 2)))),
                public=len(public), sample=public[:10])


def run(config: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    return {name: _one_dataset(name, config, rng) for name in DATASETS}


def _mathtext(label):
    return label.replace("Δ_KNG", r"$\Delta_{KNG}$").replace("Δ", r"$\Delta$").replace("ε", r"$\varepsilon$")


def _error_figure(results, config, out_dir):
    eps = np.array(config["epsilons"])
    fig, axes = figure(r"S22 §4.3 on real shapes: distance of the private mean shape to the mean, against $\varepsilon$",
                       ncols=2, width=5.2, height=4.4)
    for ax, (letter, name) in zip(axes, zip("ab", results)):
        r = results[name]
        for key, (label, colour, cal) in MECHANISMS.items():
            v = np.array(r["err"][key])
            series(ax, eps, v[:, 0], _mathtext(label), colour, cal, se=v[:, 1])
        finish(ax, letter, f"{name}: n = {r['n']}, k = {r['k']}, r = {r['radius']:.3f}", r"$\varepsilon$ (log scale)",
               "shape distance to the mean shape (rad)", logx=True, logy=True, legend=False, xticks=eps)
    shared_legend(fig, axes[0], ncol=2)
    name = save(fig, out_dir, "s22_f23_kendall_error")
    caption = (f"{config['reps']} releases per mechanism and ε around the fixed private mean shape of each data set. "
               "Missing points: KNG refused by its public feasibility check at that ε (the release would be almost "
               "all noise); where only the certified KNG is refused, the paper's σ = Δ_KNG/ε is drawn as the certified "
               "KNG at 2ε, the same law. Solid: certified; dotted: KNG at the paper's multiplier (not certified). " + BAND_NOTE)
    return name, caption


def _shape_figure(results, out_dir):
    name = next(iter(results))
    r = results[name]
    kendall = KendallShape2D(r["k"])
    mean = r["mean"]
    q = kendall.to_landmarks(mean)
    fig, axes = figure(rf"S22 Fig. 2 on {name}: six private mean shapes per mechanism, $\varepsilon = {SHOW_EPSILON:g}$",
                       nrows=2, ncols=3, width=3.6, height=3.4)
    panels = [("data", "ten public records")] + [(k, MECHANISMS[k][0]) for k in ("kng", "kng_paper", "split", "joint", "unaligned")]
    for ax, letter, (key, label) in zip(axes, "abcdef", panels):
        shapes = r["sample"] if key == "data" else r["examples"].get(key, [])
        colour = PALETTE["data"] if key == "data" else PALETTE[MECHANISMS[key][1]]
        for i, x in enumerate(shapes):
            if np.all(np.isfinite(x)):
                p = kendall.to_landmarks(kendall.align(mean, x))
                ax.plot(p[:, 0], p[:, 1], "o", ms=2.5, color=colour, alpha=0.55, label="releases" if i == 0 else None)
        ax.plot(q[:, 0], q[:, 1], "x", ms=5, color=PALETTE["bound"], label="non-private mean shape")
        ax.set_aspect("equal", adjustable="datalim")
        finish(ax, letter, _mathtext(label), "x (aligned to the mean)", "y", loc="lower right")
        ax.tick_params(labelbottom=False, labelleft=False)
    out = save(fig, out_dir, "s22_f23_kendall_shapes")
    caption = (f"Landmarks of six releases per mechanism at ε = {SHOW_EPSILON:g}, each rotated onto the non-private mean "
               "shape (crosses) for display; (a) ten records of the public split. Panels without points: the mechanism "
               "was refused at this ε.")
    return out, caption


def report(results: dict[str, Any], config: dict[str, Any], out_dir: Path) -> ExperimentResult:
    eps = np.array(config["epsilons"])
    names = list(results)
    checks, parts, counts, aligned = {}, [], {}, {}
    for name in names:
        r = results[name]
        e = {k: np.array(v)[:, 0] for k, v in r["err"].items()}
        destroyed = e["unaligned"] / e["split"]
        aligned_matters = np.mean(destroyed > 2) >= 0.5

        def beats(kng):  # released at more than half of the ε, and below the split at most of those
            ran = np.isfinite(e[kng])
            return bool(np.mean(ran) > 0.5 and np.mean(e[kng][ran] < e["split"][ran]) >= 0.5)

        wins = {k: int(np.sum(np.isfinite(e[k]) & (e[k] < e["split"]))) for k in ("kng", "kng_paper")}

        checks[name] = (beats("kng_paper") and aligned_matters, beats("kng") and aligned_matters)
        aligned[name] = bool(aligned_matters)
        refused = ", ".join(f"{x:g}" for x in r["refused"]["kng"]) or "no ε"
        counts[name] = (len(r["refused"]["kng"]), len(r["refused"]["kng_paper"]), wins)
        parts.append(
            f"{name} (n = {r['n']} private records, k = {r['k']} landmarks, r = {r['radius']:.3f}; "
            + (f"of the {r['missing']} specimens with missing landmarks, {r['replaced']} are private records, replaced by "
               "the centre as any release does; " if r["missing"] else "no missing landmarks; ")
            + f"{r['clipped']} records clipped into the ball): KNG/split error at the paper's multiplier "
            f"{span(e['kng_paper'] / e['split'])}, certified {span(e['kng'] / e['split'])} (certified KNG refused at "
            f"ε = {refused}); joint/split {span(e['joint'] / e['split'])}; certified KNG/joint {span(e['kng'] / e['joint'])}; "
            f"unaligned/aligned split {span(destroyed, '{:.1f}')}")
    paper_all = all(c[0] for c in checks.values())
    cert_all = all(c[1] for c in checks.values())
    shapes_name, shapes_caption = _shape_figure(results, out_dir)
    err_name, err_caption = _error_figure(results, config, out_dir)
    i = int(np.argmin(np.abs(eps - SHOW_EPSILON)))
    first = results[names[0]]
    ef = {k: np.array(v)[i, 0] for k, v in first["err"].items()}
    losers = [k for k in ("kng", "kng_paper", "laplace") if not ef[k] < ef["joint"]]
    held = lambda i: " and ".join(n for n, c in checks.items() if c[i]) or "neither data set"
    refusals = "; ".join(f"{n}: certified KNG refused at {c[0]} of {len(eps)} ε, at the paper's multiplier at {c[1]}, "
                         f"below the split at {c[2]['kng']} (certified) and {c[2]['kng_paper']} (paper's multiplier)"
                         for n, c in counts.items())
    explanation = (
        "The corpus-callosum data of the paper are not public, so the claim is tested on two real landmark data sets. "
        "Alignment matters as the paper shows. The claim that KNG keeps the shape needs a KNG release, and KNG's "
        f"public feasibility check refuses it at the smaller ε on these balls ({refusals}): a refused release keeps "
        "nothing, so the KNG part counts as holding on a data set only where KNG is released at more than half of "
        "the ε and beats the paper's landmark baseline (ε/k per landmark) at most of them. It holds at the paper's "
        f"multiplier on {held(0)} and at the certified one on {held(1)} (n/a: refused). The paper's split is a weak baseline: a joint coordinate-wise Laplace on all 2k coordinates "
        f"spends the same ε with about √k less noise (√k = {np.sqrt(first['k']):.1f} for {names[0]}); against it "
        + (" and ".join(SHORT[k] for k in losers) + " lose" if losers else "every intrinsic release wins")
        + f" at the ε shown in the figures ({names[0]}, ε = {SHOW_EPSILON:g}: joint {ef['joint']:.4f}, certified KNG "
        f"{ef['kng']:.4f}, KNG at the paper's multiplier {ef['kng_paper']:.4f}, Laplace {ef['laplace']:.4f}, "
        f"split {ef['split']:.4f}). The intrinsic mechanisms pay for the curvature bound over the ball: the Laplace "
        "through 1/h, KNG through σ = 2Δ_KNG/ε; at small ε certified KNG is refused because its law would be almost "
        "all noise on a ball this small. Per data set: " + "; ".join(parts) + ". The paper's pictures used an MCMC "
        "sampler and no stated calibration, so we cannot tell which reading its figures reflect.")
    paper_value = "KNG keeps the shape; split landmark Laplace distorts; unaligned destroyed (pictures, no numbers)"
    paper_cal = "; ".join(
        f"{n}: KNG/split {per(eps, np.array(results[n]['err']['kng_paper'])[:, 0] / np.array(results[n]['err']['split'])[:, 0], key='ε')}"
        for n in names)
    certified = "; ".join(
        f"{n}: KNG/split {per(eps, np.array(results[n]['err']['kng'])[:, 0] / np.array(results[n]['err']['split'])[:, 0], key='ε')}"
        for n in names)
    data_note = "Real data. " + " ".join(f"{n.capitalize()}: {DATASETS[n]['cite']}." for n in names)

    def brief(key):
        out = []
        for n in names:
            ratio = np.array(results[n]["err"][key])[:, 0] / np.array(results[n]["err"]["split"])[:, 0]
            out.append(f"{n}: released at {int(np.sum(np.isfinite(ratio)))} of {len(eps)} ε, KNG/split {span(ratio)}")
        return "; ".join(out)

    short = dict(paper_calibration=brief("kng_paper"), certified=brief("kng"))
    return ExperimentResult(ID, TITLE, CLAIM, verdict(paper_all, cert_all,
                                                      partly=any(aligned.values()) or any(any(c) for c in checks.values())),
                            paper_value, paper_cal, certified, explanation, figures=[shapes_name, err_name],
                            captions={shapes_name: shapes_caption, err_name: err_caption}, data_note=data_note,
                            short=short)
