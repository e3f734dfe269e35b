"""S22-F1a/b — 2022 Fig. 1: KNG against the Riemannian Laplace and Euclidean baselines, ε = 1.

(a) S², r = π/8 cap data: KNG, Riemannian Laplace, Euclidean (ℓ2) Laplace on the ambient mean,
and the same projected back onto the sphere; error ‖x̄ − x̃‖ in R³.
(b) SPD(2) affine-invariant, Wishart data (r = 1.5): KNG, Riemannian Laplace, Euclidean Laplace
on vecd of the mean (projected to PD); error ‖vech x̄ − vech x̃‖.
Every mechanism here is certified, with the tight sensitivity bounds.
"""

import numpy as np

from ..data import sphere_cap, wishart_spd
from ..manifolds import SPDAffineInvariant, Sphere
from ..manifolds.matrix import invvecd, vech
from ..privacy import ambient_sensitivity, frechet_mean_sensitivity, measurements
from ..privacy.release import prepare_records
from ..stats import frechet_mean
from ._common import ExperimentResult, band_plot, figure, mean_se, progress, relative, save

ID = "S22-F1"
TITLE = "2022 Fig. 1: KNG vs Riemannian Laplace vs Euclidean Laplace (S² and SPD(2)), ε = 1"
CLAIM = "S²: KNG has the smallest error, the unprojected Euclidean Laplace the largest. SPD(2): KNG ≈ Riemannian Laplace, both better than Euclidean."
PROFILES = {"quick": dict(ns=[10, 25, 50, 100], reps=100, spd_reps=60), "full": dict(ns=[10, 20, 50, 100, 200, 400], reps=10_000, spd_reps=500)}
EPSILON = 1.0


def _panel(manifold, make, r, center, ns, reps, rng, metric, label, unprojected):
    names = ["KNG", "Riemannian Laplace", "Euclidean Laplace (projected)", "Euclidean Laplace (unprojected)"]
    errs = {k: [] for k in names}
    for n in progress(ns, f"S22-F1 {label} n"):
        kng = measurements.kng(manifold, frechet_mean_sensitivity(manifold, n=n, radius=r, kind="kng"), EPSILON, center=center, radius=r)
        lap = measurements.laplace(manifold, frechet_mean_sensitivity(manifold, n=n, radius=r), EPSILON)
        amb = measurements.ambient(manifold, "ambient_laplace", ambient_sensitivity(manifold, n=n, radius=r, center=center),
                                   EPSILON, floor=manifold.ambient_floor(center, r))
        acc = {k: [] for k in names}
        for _ in range(reps):
            X, _ = prepare_records(manifold, make(n, rng), center, r)
            mean = frechet_mean(X, manifold, tol=1e-12).point
            acc["KNG"].append(metric(mean, kng.sample((X, mean), rng=rng)))
            acc["Riemannian Laplace"].append(metric(mean, lap.sample(mean, rng=rng)))
            z = np.mean(manifold.to_ambient(X), axis=0) + amb.law.noise(None, rng)  # one draw, shown both ways
            acc["Euclidean Laplace (unprojected)"].append(metric(mean, unprojected(z), raw=True))
            acc["Euclidean Laplace (projected)"].append(metric(mean, amb.law.from_ambient(z)))
        for k in names:
            errs[k].append(mean_se(acc[k]))
    return errs


def run(config, rng):
    s = Sphere(2)
    sphere_metric = lambda m, x, raw=False: float(np.linalg.norm(np.asarray(x) - m))
    a = _panel(s, lambda n, g: sphere_cap(n, rng=g), np.pi / 8, s.origin, config["ns"], config["reps"], rng, sphere_metric, "S²", lambda z: z)
    spd = SPDAffineInvariant(2)
    spd_metric = lambda m, x, raw=False: float(np.linalg.norm(vech(np.asarray(x)) - vech(m)))
    b = _panel(spd, lambda n, g: wishart_spd(n, 2, rng=g), 1.5, np.eye(2), config["ns"], config["spd_reps"], rng, spd_metric, "SPD(2)",
               lambda z: invvecd(z, 2))
    return {"sphere": a, "spd": b}


def report(results, config, out_dir):
    ns = np.array(config["ns"])
    fig, (a, b) = figure()
    band_plot(a, ns, {k: tuple(np.array(v).T) for k, v in results["sphere"].items()}, "‖x̄ − x̃‖ (S²)", logy=True)
    band_plot(b, ns, {k: tuple(np.array(v).T) for k, v in results["spd"].items()}, "‖vech x̄ − vech x̃‖ (SPD(2))", logy=True)
    name = save(fig, out_dir, "s22_f1_kng")
    sph = {k: np.array(v)[:, 0] for k, v in results["sphere"].items()}
    spd = {k: np.array(v)[:, 0] for k, v in results["spd"].items()}
    best = min(sph, key=lambda k: sph[k].mean())
    ours = (f"S²: lowest mean error {best}; KNG has {relative(sph['KNG'], sph['Riemannian Laplace'])} error than the Riemannian Laplace, "
            f"{relative(sph['KNG'], sph['Euclidean Laplace (projected)'])} than the projected Euclidean Laplace. "
            f"SPD(2): KNG/Laplace error ratio {np.mean(spd['KNG'] / spd['Riemannian Laplace']):.2f}, "
            f"Euclidean (projected)/KNG {np.mean(spd['Euclidean Laplace (projected)'] / spd['KNG']):.1f}×.")
    comparison = ("We do not reproduce 'KNG best'. With the calibrations of docs/theory.md §4 the unrestricted Laplace uses σ = Δ/ε = 2rL/(nhε) "
                  "while KNG, whose normalising constant depends on the data, needs σ = 2Δ_KNG/ε = 4rL/(nε); near the mean "
                  "‖∇F(x)‖ ≈ H·ρ(x̄, x) with H ≈ 0.97 here, so KNG's effective scale is about 2h/H ≈ 1.6× the Laplace one on "
                  "S² (h = 0.785) and 2× on SPD (h = 1). The paper's ranking appears if the Laplace is given the general "
                  "σ = 2Δ/ε. The projected ambient Laplace is the strongest certified release on S² at r = π/8: projection "
                  "removes the radial third of its noise and its sensitivity has no 1/h.")
    return ExperimentResult(ID, TITLE, CLAIM, ours, comparison, figures=[name])
