"""S22-F2/3 — 2022 §4.3 on real planar shapes: private mean shape by KNG vs landmark-wise Laplace.

The corpus-callosum data of the paper are not public; we use the mosquito-wing landmarks shipped
by ``ktch`` (127 wings × 18 landmarks). A fixed public split of 27 wings chooses the centre
``m0`` (their Fréchet mean) and the radius; the other 100 wings are the private records.
Mechanisms: KNG and the Riemannian Laplace on Kendall's shape space; coordinate-wise Laplace on
the landmarks after rotating each record onto ``m0`` (record-wise, with public ``m0``), and
without that alignment. Error: the shape distance to the non-private mean shape.
"""

import numpy as np

from ..manifolds import Euclidean, KendallShape2D
from ..privacy import frechet_mean_sensitivity, measurements
from ..privacy.release import prepare_records
from ..stats import frechet_mean
from ._common import ExperimentResult, band_plot, figure, mean_se, progress, save

ID = "S22-F2/3"
TITLE = "2022 §4.3 (Figs. 2-3): private mean shape on Kendall's shape space, real landmark data"
CLAIM = "KNG keeps the mean shape's structure; landmark-wise Laplace distorts it; without rotational alignment the shape is destroyed."
PROFILES = {"quick": dict(epsilons=[0.5, 1.0, 2.0, 5.0], reps=40), "full": dict(epsilons=[0.25, 0.5, 1.0, 2.0, 5.0, 10.0], reps=300)}
SHOW_EPSILON = 5.0
DATA_CITATION = "Mosquito-wing landmarks (127 specimens × 18 landmarks) shipped by the ktch package: ktch.datasets.load_landmark_mosquito_wings()"


def load_shapes():
    from ktch.datasets import load_landmark_mosquito_wings

    coords = np.asarray(load_landmark_mosquito_wings().coords, dtype=float)
    kendall = KendallShape2D(coords.shape[1])
    return kendall, kendall.preshape(coords)


def _landmark_laplace(kendall, X, m0, radius, epsilon, align, rng):
    """Coordinate-wise Laplace on the mean pre-shape in R^(2k), ℓ1 sensitivity ≤ √(2k)·ℓ2."""
    if align:
        X = kendall.align(m0, X)
        l2 = 2 * 2 * np.sin(radius / 2) / len(X)  # aligned records lie within chord(r) of m0
    else:
        l2 = 2 * 2.0 / len(X)  # unit vectors: any two within distance 2
    z = np.concatenate([X.real, X.imag], axis=1).mean(axis=0)
    z = measurements.ambient(Euclidean(z.size), "coordinate_laplace", l2, epsilon).sample(z, rng=rng)
    k = kendall.k_landmarks
    return kendall.preshape(z[:k] + 1j * z[k:])


def run(config, rng):
    kendall, shapes = load_shapes()
    order = np.random.default_rng(2022).permutation(len(shapes))  # the public split is fixed, not data-driven
    public, private = shapes[order[:27]], shapes[order[27:]]
    m0 = frechet_mean(public, kendall).point
    radius = float(min(0.95 * kendall.assumption_radius, 2.0 * np.max(kendall.dist(m0, public))))
    X, _ = prepare_records(kendall, private, m0, radius)
    mean = frechet_mean(X, kendall, tol=1e-12).point
    n = len(X)
    names = ["KNG", "Riemannian Laplace", "landmark Laplace (aligned)", "landmark Laplace (no alignment)"]
    err = {k: [] for k in names}
    examples = {}
    refused = []
    for eps in progress(config["epsilons"], "S22-F2/3 ε"):
        try:
            kng = measurements.kng(kendall, frechet_mean_sensitivity(kendall, n=n, radius=radius, kind="kng"), eps,
                                   center=m0, radius=radius)
            kng_draws = kng.sample((X, mean), size=config["reps"], rng=rng)
        except ValueError:  # the public feasibility check refuses it: the noise dwarfs the ball at this ε
            refused.append(eps)
            kng_draws = np.full((config["reps"], kendall.k_landmarks), np.nan + 0j)
        lap = measurements.laplace(kendall, frechet_mean_sensitivity(kendall, n=n, radius=radius), eps)
        draws = {"KNG": kng_draws,
                 "Riemannian Laplace": lap.sample(mean, size=config["reps"], rng=rng),
                 "landmark Laplace (aligned)": np.array([_landmark_laplace(kendall, X, m0, radius, eps, True, rng) for _ in range(config["reps"])]),
                 "landmark Laplace (no alignment)": np.array([_landmark_laplace(kendall, X, m0, radius, eps, False, rng) for _ in range(config["reps"])])}
        for k in names:
            err[k].append(mean_se(kendall.dist(mean, draws[k])))
        if eps == SHOW_EPSILON:
            examples = {k: v[:6] for k, v in draws.items()}
    return dict(err=err, mean=mean, examples=examples, n=n, radius=radius, kendall_k=kendall.k_landmarks, kng_refused=refused)


def names_of(results):
    return list(results["err"])


def report(results, config, out_dir):
    kendall = KendallShape2D(results["kendall_k"])
    eps = np.array(config["epsilons"])
    fig, axes = figure(ncols=4, width=3.6, height=3.6)
    band_plot(axes[0], eps, {k: tuple(np.array(v).T) for k, v in results["err"].items()}, "shape distance to the mean", xlabel="ε", logy=True)
    axes[0].legend(fontsize=6)
    mean = results["mean"]
    for ax, key in zip(axes[1:], ["KNG", "landmark Laplace (aligned)", "landmark Laplace (no alignment)"]):
        for x in results["examples"].get(key, []):
            p = kendall.to_landmarks(kendall.align(mean, x))
            ax.scatter(p[:, 0], p[:, 1], s=6, alpha=0.6)
        q = kendall.to_landmarks(mean)
        ax.scatter(q[:, 0], q[:, 1], s=22, color="k", marker="x", label="mean shape")
        ax.set_title(f"{key}, ε = {SHOW_EPSILON:g}", fontsize=8)
        ax.set_aspect("equal"); ax.set_xticks([]); ax.set_yticks([])
    name = save(fig, out_dir, "s22_f23_kendall_wings")
    e = {k: np.array(v)[:, 0] for k, v in results["err"].items()}
    i1 = int(np.argmin(np.abs(eps - SHOW_EPSILON)))
    ours = (f"n = {results['n']} private wings, r = {results['radius']:.3f}; at ε = {SHOW_EPSILON:g} mean shape distance: "
            + ", ".join(f"{k} {v[i1]:.4f}" for k, v in e.items()))
    kng, lap, land, raw = (e[k][i1] for k in names_of(results))
    comparison = (f"Alignment matters exactly as the paper shows: without it the landmark release is {raw / land:.0f}× farther "
                  "from the mean shape. But with certified calibrations on these wings the aligned landmark-wise Laplace is "
                  f"{'as close as' if land >= 0.9 * min(kng, lap) else 'closer than'} the intrinsic releases "
                  f"(KNG {kng / land:.2f}×, Laplace {lap / land:.2f}× its error): the intrinsic mechanisms pay 1/h ≈ 1.6 "
                  "(Laplace) or σ = 2Δ/ε (KNG) for the curvature bound κmax = 4 over r = 0.25, while the aligned landmarks "
                  "sit in a chordal ball of radius 2 sin(r/2) in 2k = 36 coordinates. The paper's pictures used the corpus "
                  "callosum, an MCMC sampler and no stated calibration, so we cannot tell which of these its figures reflect.")
    if results.get("kng_refused"):
        ours += (f"; KNG refused at ε = {', '.join(f'{e:g}' for e in results['kng_refused'])} (public feasibility check: its "
                 "proposal would almost never land in the ball, so success would depend on the data)")
    return ExperimentResult(ID, TITLE, CLAIM, ours, comparison + " Data: " + DATA_CITATION, figures=[name])
