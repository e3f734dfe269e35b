"""TPCA — private tangent PCA: principal angles to the non-private principal subspace against ε (a new result).

``private_tangent_pca`` releases a private Fréchet mean μ̃ (half of ε and δ; the tangent Gaussian on
log-Euclidean SPD, the Riemannian Laplace on Kendall's shape space) and then, by the
Analyze-Gauss mechanism, a private second moment of the records' tangent coordinates at μ̃; its
top ``components`` eigenvectors span the private principal subspace. The reference is the same
computation without noise: the second moment of the (clipped) records' tangent coordinates at their
non-private Fréchet mean x̄. We report the largest principal angle between the two subspaces.

Where the two subspaces live: on log-Euclidean SPD the tangent coordinates are those of the log
chart at every base point, so the subspaces are compared directly. On Kendall's shape space the
private components (tangent vectors at μ̃) are rotated with the rotation that aligns μ̃ to x̄ and
projected onto the horizontal tangent space at x̄ before the angles are taken (a first-order
transport; the tilt between the tangent spaces is of the order of ρ(μ̃, x̄)).

Data: covariance descriptors (9×9) of scikit-learn's digits (always available); the fMRI connectomes
(28×28) of the geomstats wheel when it can be read (else the reason is reported); the two landmark
data sets of ``s22_kendall`` (mosquito wings, trilobite cephala). Every data set has a fixed public
split that chooses the centre and the radius (SPD: its log-Euclidean mean and 90% quantile distance;
shapes: as in ``s22_kendall``).
"""

from pathlib import Path
from typing import Any

import numpy as np

from ..manifolds import SPDLogEuclidean
from ..manifolds.base import Manifold
from ..manifolds.kendall import hermitian
from ..manifolds.matrix import expm_sym, invvecd, logm_spd, vecd
from ..privacy.release import prepare_records
from ..privacy.tangent_pca import private_tangent_pca
from ..stats import frechet_mean
from ._common import (
    BAND_NOTE,
    PALETTE,
    ExperimentResult,
    figure,
    finish,
    mean_se,
    one_blas_thread,
    per,
    progress,
    save,
    shared_legend,
)
from ._findings import PREFIX, Finding, colour
from .mdm import descriptors
from .s22_kendall import DATASETS as SHAPES
from .s22_kendall import load as load_shapes

ID = "TPCA"
TITLE = "Private tangent PCA: principal angles to the non-private subspace vs ε (SPD descriptors, connectomes, shapes)"
CLAIM = ("The private principal subspace (private mean + Analyze-Gauss second moment) approaches the non-private one as "
         "ε grows; how fast depends on n, the dimension and the eigengap.")
PROFILES = {"quick": dict(epsilons=[1.0, 10.0, 100.0], reps=3, components=2),
            "full": dict(epsilons=[0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0], reps=30, components=2)}
DELTA = 1e-5
SPD_PUBLIC = 180          # digits images in the public split (as in the MDM experiment)
CONNECTOME_PUBLIC = 20    # subjects in the public split (as in u23_descriptors)
RANDOM = "random subspace"
GOOD_ANGLE = 10.0         # degrees: "found" below this
RADIUS_QUANTILE = 0.9     # SPD radius: this quantile of the public split's distances to its centre


def _le_mean(X):
    return expm_sym(invvecd(vecd(logm_spd(X)).mean(axis=0), X.shape[-1]))


def _quantile_radius(m, centre, public):
    """The public split's ``RADIUS_QUANTILE`` distance to the centre. (Twice its largest, as U23-F2/3 takes for the
    connectomes, reaches eigenvalues near e^±19, where the log-Euclidean float error bound, and with it the
    sensitivity, explodes.)"""
    return float(np.quantile(m.dist(centre, public), RADIUS_QUANTILE))


def _spd_sets():
    """``{name: (manifold, private records, centre, radius)}`` for the SPD data, and the reason connectomes are missing."""
    from ._offline_data import load_connectomes

    sets, reason = {}, None
    covs, _ = descriptors()
    order = np.random.default_rng(1797).permutation(len(covs))  # the MDM experiment's fixed public split
    public, private = covs[order[:SPD_PUBLIC]], covs[order[SPD_PUBLIC:]]
    m = SPDLogEuclidean(covs.shape[-1])
    centre = _le_mean(public)
    sets["digit descriptors (SPD 9×9)"] = (m, private, centre, _quantile_radius(m, centre, public))
    X, reason = load_connectomes()
    if X is not None:
        m = SPDLogEuclidean(X.shape[-1])
        order = np.random.default_rng(2014).permutation(len(X))  # u23_descriptors' fixed public split
        public, private = X[order[:CONNECTOME_PUBLIC]], X[order[CONNECTOME_PUBLIC:]]
        centre = _le_mean(public)
        sets[f"connectomes (SPD {X.shape[-1]}×{X.shape[-1]})"] = (m, private, centre, _quantile_radius(m, centre, public))
    return sets, reason


def _shape_sets():
    sets = {}
    for name, spec in SHAPES.items():
        kendall, raw = load_shapes(name)
        order = np.random.default_rng(2022).permutation(len(raw))  # s22_kendall's fixed public split
        public = kendall.preshape(raw[order[:spec["public"]]])
        public = public[np.all(np.isfinite(public), axis=1)]
        centre = frechet_mean(public, kendall, check_assumption=False).point
        radius = float(min(0.95 * kendall.assumption_radius, 2.0 * np.max(kendall.dist(centre, public))))
        sets[f"{name} (Kendall, k = {kendall.k_landmarks})"] = (kendall, raw[order[spec["public"]:]], centre, radius)
    return sets


def _top(second_moment, q):
    """The top ``q`` eigenvectors (columns) of a symmetric matrix."""
    w, v = np.linalg.eigh(second_moment)
    return v[:, np.argsort(w)[::-1][:q]]


def _reference(m, X, q):
    """Non-private: Fréchet mean x̄ and the top-``q`` eigenvectors of the second moment of the tangent coordinates at x̄."""
    mean = frechet_mean(X, m, tol=1e-12).point
    coords = m.to_tangent_coordinates(mean, m.log(mean, X))
    return mean, _top(coords.T @ coords / len(X), q)


def _in_reference_frame(m, mean, release):
    """The released components as coordinates at ``mean`` (the identity on log-Euclidean SPD; Kendall: rotate with
    the alignment of μ̃ onto x̄, project to the horizontal space at x̄)."""
    if m.flat_chart:  # log-Euclidean: coordinates of the log chart, the same at every base point
        return release.component_coordinates.T
    rotation = np.exp(-1j * np.angle(hermitian(mean, release.mean)))  # the rotation m.align applies to μ̃
    v = release.components * rotation
    v = v - v.mean(axis=-1, keepdims=True)
    v = v - hermitian(mean, v)[..., None] * mean  # horizontal at x̄: orthogonal to x̄ and to i·x̄
    coords = m.to_tangent_coordinates(mean, v)
    q, _ = np.linalg.qr(coords.T)
    return q


def _largest_angle(a, b):
    from scipy.linalg import subspace_angles

    return float(np.degrees(np.max(subspace_angles(a, b))))


def _random_angle(dim, q, rng, draws=200):
    """Mean largest principal angle between a fixed q-subspace and a uniformly random one in R^dim."""
    base = np.eye(dim)[:, :q]
    return float(np.mean([_largest_angle(base, np.linalg.qr(rng.standard_normal((dim, q)))[0]) for _ in range(draws)]))


def mean_mechanism(m: Manifold) -> str:
    """The tangent Gaussian where there is a flat chart (log-Euclidean SPD: both halves Gaussian), else the Laplace."""
    return "tangent_gaussian" if m.flat_chart else "laplace"


def _one_set(m, raw, centre, radius, config, rng):
    q = config["components"]
    X, _ = prepare_records(m, raw, centre, radius)
    mean, ref = _reference(m, X, q)
    angles, refused = [], []
    for eps in config["epsilons"]:
        row = []
        for _ in range(config["reps"]):
            try:
                rel = private_tangent_pca(X, m, center=centre, radius=radius, epsilon=eps, delta=DELTA, n_components=q,
                                          mean_mechanism=mean_mechanism(m), rng=rng)
            except ValueError:  # refused from public parameters (e.g. the mean's noise would overflow float64)
                refused.append(eps)
                row = [float("nan")] * config["reps"]
                break
            row.append(_largest_angle(ref, _in_reference_frame(m, mean, rel)))
        angles.append(row)
    return {"angles": angles, "refused": refused, "n": len(X), "dim": m.dim, "radius": radius, "random": _random_angle(m.dim, q, rng)}


def run(config: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    with one_blas_thread():
        return _run(config, rng)


def _run(config, rng):
    spd, reason = _spd_sets()
    sets = {**spd, **_shape_sets()}
    out = {name: _one_set(*spec, config, rng) for name, spec in progress(list(sets.items()), "TPCA data")}
    return {"sets": out, "connectomes_missing": reason}


LOOKS = (dict(marker="o", linestyle="-"), dict(marker="s", linestyle="--"))  # one per data set of a panel


def _figure(results, config, out_dir):
    eps = np.array(config["epsilons"])
    sets = results["sets"]
    fig, axes = figure(rf"Private tangent PCA: largest principal angle to the non-private top-{config['components']} "
                       rf"subspace, $\delta = 10^{{{round(np.log10(DELTA))}}}$",
                       ncols=2, width=5.0, height=4.0)
    groups = (("a", "SPD, log-Euclidean", [n for n in sets if "SPD" in n]),
              ("b", "Kendall shapes", [n for n in sets if "Kendall" in n]))
    for ax, (letter, title, names) in zip(axes, groups):
        c = colour("tangent_pca")
        for look, name in zip(LOOKS, names):
            r = sets[name]
            stats = np.array([mean_se(row) for row in r["angles"]])
            ax.plot(eps, stats[:, 0], color=c, ms=4, label=f"{name}: n = {r['n']}, d = {r['dim']}", **look)
            ax.fill_between(eps, stats[:, 0] - 2 * stats[:, 1], stats[:, 0] + 2 * stats[:, 1], color=c, alpha=0.15,
                            linewidth=0)
            ax.axhline(r["random"], color=PALETTE["data"], linestyle=look["linestyle"], linewidth=1)
        ax.plot([], [], color=PALETTE["data"], label=f"{RANDOM} (same d, same line style)")
        finish(ax, letter, title, r"$\varepsilon$ (log scale)", "largest principal angle (degrees)", logx=True,
               xticks=eps, legend=False)
        ax.set_ylim(0, 95)
    shared_legend(fig, axes, ncol=2)
    name = save(fig, out_dir, "tpca_principal_angles")
    missing = results["connectomes_missing"]
    caption = (f"{config['reps']} private releases per ε and data set (half of ε and δ for the mean, half for the "
               "Analyze-Gauss second moment); the largest principal angle between the private and the non-private "
               f"top-{config['components']} subspaces. Grey lines: the expected largest angle to a uniformly random subspace "
               "of the same dimension (line style of its data set). " + (f"The fMRI connectomes are missing: {missing}. " if missing else "")
               + BAND_NOTE)
    return name, caption


def _at_largest(eps, mean_angle):
    """The mean angle at the largest ε where the release ran."""
    ran = [i for i, a in enumerate(mean_angle) if np.isfinite(a)]
    return f"{mean_angle[ran[-1]]:.1f}° at ε = {eps[ran[-1]]:g}" if ran else "refused at every ε"


def report(results: dict[str, Any], config: dict[str, Any], out_dir: Path) -> ExperimentResult:
    eps = np.array(config["epsilons"])
    sets = results["sets"]
    parts, claims, monotone, briefs = [], [], [], []
    for name, r in sets.items():
        mean_angle = np.array([np.mean(row) for row in r["angles"]])
        ran = np.isfinite(mean_angle)
        monotone.append(bool(ran.sum() < 2 or mean_angle[ran][-1] < mean_angle[ran][0]))
        good = [e for e, a in zip(eps, mean_angle) if a < GOOD_ANGLE]
        claims.append(f"{name}: {_at_largest(eps, mean_angle)}"
                      + (f", below {GOOD_ANGLE:g}° from ε = {min(good):g}" if good else f", never below {GOOD_ANGLE:g}°")
                      + f" (random {r['random']:.0f}°)")
        briefs.append(f"{name.split(' (')[0]}: " + (f"below {GOOD_ANGLE:g}° from ε = {min(good):g}" if good
                                                    else f"never below {GOOD_ANGLE:g}°"))
        parts.append(f"{name} (n = {r['n']}, d = {r['dim']}, radius {r['radius']:.3f}): "
                     f"{per(eps, mean_angle, '{:.1f}°', 'ε')}"
                     + (f" (refused from public parameters at ε = {', '.join(f'{e:g}' for e in r['refused'])}: the "
                        "mean's noise could overflow float64)" if r["refused"] else ""))
    name, caption = _figure(results, config, out_dir)
    missing = results["connectomes_missing"]
    claim = PREFIX + "; ".join(claims) + f" (top-{config['components']} subspace, δ = {DELTA:g})"
    explanation = (
        "Mean largest principal angle between the private and the non-private principal subspaces: " + "; ".join(parts)
        + f". The angle {'falls with ε on every data set' if all(monotone) else 'does not fall with ε on every data set'} "
        "(n/a: refused). "
        "The Analyze-Gauss noise has Frobenius size about σ·d with σ ∝ C²/(n ε) (C the tangent norm bound, d the "
        "tangent dimension), so the subspace is found once that is well below the eigengap of the second moment: the "
        "ε needed grows with d and falls with n. "
        "On Kendall's shape space the private components are moved to the non-private mean by the alignment rotation "
        "and a projection, which adds an angle of the order of the mean's error at small ε."
        + (f" The fMRI connectomes could not be read: {missing}." if missing else ""))
    paper_value = "new result; no paper number (no private tangent PCA in the papers reproduced here)"
    paper_cal = "n/a (Analyze-Gauss at its certified calibration)"
    certified = "; ".join(f"{n}: {_at_largest(eps, [np.mean(row) for row in r['angles']])}" for n, r in sets.items())
    from ._offline_data import CITATION_CONNECTOMES
    from .u23_descriptors import DATA_CITATION

    data_note = ("Real data: " + DATA_CITATION.split(" and load_sample_images")[0] + "; "
                 + ("" if missing else CITATION_CONNECTOMES + "; ")
                 + "; ".join(SHAPES[n]["cite"] for n in SHAPES) + ".")
    short = dict(verdict=PREFIX + "; ".join(briefs),
                 paper_value="no paper number", paper_calibration="n/a")
    return Finding(ID, TITLE, CLAIM, claim, paper_value, paper_cal, certified, explanation, figures=[name], short=short,
                   captions={name: caption}, data_note=data_note)
