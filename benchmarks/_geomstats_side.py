"""The geomstats half of the benchmarks; runs inside the pinned side environment only.

    <side-venv>/bin/python benchmarks/_geomstats_side.py INPUT.npz OUTPUT.npz

geomstats 2.8.0 (its last release) needs numpy < 2.4, so ``benchmarks/run.py`` builds a separate
virtual environment for it and calls this script there. It imports only numpy and geomstats
(never manifold_dp), times the same inputs the main run uses and writes the results back;
the main run computes every accuracy figure with one and the same gradient code.
"""

import sys
import time

import numpy as np


def timed(fn, repeat):
    fn()
    t = time.perf_counter()
    for _ in range(repeat):
        out = fn()
    return (time.perf_counter() - t) / repeat, out


def frechet_mean(space, X, tol):
    """geomstats' default Karcher flow, stopped at ‖mean of logs‖ ≤ tol (its rule is
    ‖·‖² ≤ epsilon · dim, hence epsilon = tol² / dim); geomstats' own default is epsilon = 1e-4."""
    from geomstats.learning.frechet_mean import FrechetMean

    est = FrechetMean(space)
    est.set(max_iter=1000, epsilon=tol**2 / space.dim)
    return est.fit(X).estimate_


def main(inp, outp):
    from geomstats.geometry.hypersphere import Hypersphere
    from geomstats.geometry.spd_matrices import SPDLogEuclideanMetric, SPDMatrices

    data = np.load(inp)
    tol = float(data["tol"])
    out = {}
    for key in ("spd10", "spd30"):
        X = data[key]
        space = SPDMatrices(X.shape[-1])
        out[f"{key}_seconds"], out[f"{key}_mean"] = timed(lambda: frechet_mean(space, X, tol), 3)
        if key == "spd10":  # geomstats' own default stopping rule, for the record (docs/theory.md §7)
            from geomstats.learning.frechet_mean import FrechetMean

            out["spd10_default_seconds"], out["spd10_default_mean"] = timed(lambda: FrechetMean(space).fit(X).estimate_, 3)
    s2 = Hypersphere(2)
    out["s2_seconds"], out["s2_mean"] = timed(lambda: frechet_mean(s2, data["s2"], tol), 2)

    # the 2023 paper's MCMC step on log-Euclidean SPD(k), written with geomstats as the paper did
    # (App. B.1): a log-Gaussian random-walk proposal and the corrected Metropolis–Hastings ratio
    k = data["mh_mean"].shape[-1]
    space = SPDMatrices(k, equip=False)
    space.equip_with_metric(SPDLogEuclideanMetric)
    mean, sigma, steps = data["mh_mean"], float(data["mh_sigma"]), int(data["mh_steps"])
    rng = np.random.default_rng(0)
    x = mean.copy()
    lp = -space.metric.dist(mean, x) / sigma
    t = time.perf_counter()
    log = space.metric.diffeo  # Logm, with .inverse = Expm
    for _ in range(steps):
        g = rng.standard_normal((k, k))
        y = log.inverse(log(x) + 0.25 * sigma * (g + g.T))  # log-Gaussian proposal, step σ/2
        lq = -space.metric.dist(mean, y) / sigma
        if np.log(rng.uniform()) < lq - lp:
            x, lp = y, lq
    out["mh_step_seconds"] = (time.perf_counter() - t) / steps
    import geomstats

    out["version"] = np.array(geomstats.__version__)
    out["numpy"] = np.array(np.__version__)
    np.savez(outp, **out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
