"""R21-F1c/d — 2021 Fig. 1, panels 3–4: the unit sphere S², r = π/8, north-pole cap data.

Panel 3: ρ(x̄, x̄') for neighbours against the Thm 2 bound with three Lipschitz constants: the
empirical one of App. B.1 (the paper's choice, certifies nothing), the paper's 2 − h, and ours.
Panel 4: Euclidean error ‖x̄ − x̃‖ of the Riemannian Laplace (each calibration) against the
Euclidean Laplace in R³ (Δ_E = 2·chord(r)/n), ε = 1.
"""

import numpy as np

from ..data import sphere_cap
from ..manifolds import Sphere
from ..privacy import measurements
from ..privacy.sensitivity import hessian_lower_bound, log_lipschitz
from ..stats import frechet_mean
from ._common import ExperimentResult, band_plot, figure, mean_se, pct_less, progress, save, sensitivity_panel
from .r21_f2 import max_log_spread

ID = "R21-F1cd"
TITLE = "2021 Fig. 1 (panels 3-4): unit sphere S², r = π/8 — sensitivity and utility"
CLAIM = "Manifold Laplace ≈15% less error than Euclidean Laplace: 16.8% at small n, 12% at large n (empirical calibration)."
PROFILES = {"quick": dict(ns=[10, 25, 50, 100, 200], reps=200, draws=20, pairs=30),
            "full": dict(ns=[10, 20, 30, 50, 75, 100, 150, 200], reps=1000, draws=20, pairs=100)}
R, EPSILON = np.pi / 8, 1.0


def run(config, rng):
    s = Sphere(2)
    h = hessian_lower_bound(R, 1.0)
    constants = {"empirical (paper, not certified)": max_log_spread(s, R, 360) / (2 * R),
                 "2 − h (paper bound)": 2 - h, "Rauch (ours, tight)": log_lipschitz(R, 1.0, "tight")}
    r_e = 2 * np.sin(R / 2)
    out = {"constants": constants, "sens_points": [], "bounds": {k: [] for k in constants},
           "err": {k: [] for k in constants}, "err_euclid": []}
    for n in progress(config["ns"], "R21-F1cd n"):
        pts = []
        for _ in range(config["pairs"]):
            X = sphere_cap(n + 1, radius=R, rng=rng)
            pts.append(s.dist(frechet_mean(X[:n], s).point, frechet_mean(np.concatenate([X[: n - 1], X[n:]]), s).point))
        out["sens_points"].append(pts)
        means = np.array([frechet_mean(sphere_cap(n, radius=R, rng=rng), s).point for _ in range(config["reps"])])
        means = np.repeat(means, config["draws"], axis=0)  # several releases per dataset: less Monte Carlo noise
        for label, L in constants.items():
            delta = 2 * R * L / (n * h)
            out["bounds"][label].append(delta)
            draws = measurements.laplace(s, delta, EPSILON).sample(means, rng=rng)
            out["err"][label].append(mean_se(np.linalg.norm(draws - means, axis=1)))
        noise = measurements.ambient(s, "ambient_laplace", 2 * r_e / n, EPSILON).law.noise(len(means), rng)
        out["err_euclid"].append(mean_se(np.linalg.norm(noise, axis=1)))
    return out


def report(results, config, out_dir):
    ns = np.array(config["ns"])
    fig, (a, b) = figure()
    sensitivity_panel(a, ns, results["sens_points"], {f"bound, {k}": v for k, v in results["bounds"].items()}, logy=True)
    curves = {f"Laplace, {k}": tuple(np.array(v).T) for k, v in results["err"].items()}
    curves["Euclidean Laplace in R³"] = tuple(np.array(results["err_euclid"]).T)
    band_plot(b, ns, curves, "‖x̄ − x̃‖", logy=True)
    name = save(fig, out_dir, "r21_f1cd_sphere")
    eu = np.array(results["err_euclid"])[:, 0]
    parts = []
    for label, v in results["err"].items():
        red = pct_less(np.array(v)[:, 0], eu)
        parts.append(f"{label}: {red[0]:+.1f}% error reduction at n={ns[0]}, {red[-1]:+.1f}% at n={ns[-1]}")
    worst = max(max(p) / b_ for p, b_ in zip(results["sens_points"], results["bounds"]["Rauch (ours, tight)"]))
    ours = "; ".join(parts) + f". Max observed ρ(x̄,x̄')/tight bound = {worst:.2f}."
    h = hessian_lower_bound(R, 1.0)
    expected = {k: 100 * (1 - (2 / 3) * (R / (2 * np.sin(R / 2))) * (L / h)) for k, L in results["constants"].items()}
    comparison = ("In expectation the reduction does not depend on n: E‖x̃ − x̄‖ ≈ dσ on the manifold (d = 2) against Dσ_E "
                  "in R³ (D = 3), so it is 1 − (2/3)·(r/chord r)·(L/h) = "
                  + ", ".join(f"{v:.1f}% ({k.split(' (')[0]})" for k, v in expected.items())
                  + ". The paper's 16.8% → 12% trend is within its Monte Carlo error around the 12% predicted for its "
                  "empirical constant. The certified calibrations pay for their guarantee: with 2 − h the manifold release "
                  "is noisier than the Euclidean one; the Rauch bound keeps a small gain. Paired-neighbour sensitivities "
                  "stay well below every bound.")
    return ExperimentResult(ID, TITLE, CLAIM, ours, comparison, data={"constants": results["constants"]}, figures=[name])
