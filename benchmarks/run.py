"""Benchmarks against the papers' samplers, pyRiemann and geomstats, measured side by side in one run.

    python benchmarks/run.py [--quick] [--out benchmarks/results] [--geomstats auto|skip]
                             [--reproduce auto|none|quick|full]

Writes ``benchmarks.md``, ``benchmarks.json`` and ``scaling.png`` with the machine description.
geomstats 2.8.0 (its last release) needs numpy < 2.4: with ``--geomstats auto`` a pinned virtual
environment is built once in ``benchmarks/.venv-geomstats`` (pip, package registry only) and
``_geomstats_side.py`` runs there on the same inputs; if it cannot be built the rows say so.
``--reproduce auto`` runs ``manifold-dp reproduce`` with the quick profile under ``--quick`` and
the full profile otherwise, and tabulates the wall time of each experiment.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

from manifold_dp import (
    Euclidean,
    Hyperbolic,
    RiemannianLaplace,
    SPDAffineInvariant,
    SPDLogEuclidean,
    Sphere,
    TangentGaussian,
    frechet_mean,
    private_frechet_mean,
)
from manifold_dp.data import eigen_spd, sphere_cap, wishart_spd
from manifold_dp.experiments._common import call_times, chain_step_times
from manifold_dp.manifolds.matrix import expm_sym, invvecd, logm_spd, vecd
from manifold_dp.privacy import frechet_mean_sensitivity, measurements
from manifold_dp.privacy.samplers import metropolis_hastings
from manifold_dp.stats import riemannian_gradient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _floor import bench_floor, blas_setting
from _paths import ROWS, bench_paths

HERE = Path(__file__).resolve().parent
TOL = 1e-10  # every Fréchet mean is compared at ‖∇F‖ ≤ TOL, F = (1/2n) Σ ρ²(x, x_i)
GEOMSTATS_PIN = ["geomstats==2.8.0", "numpy>=2.0,<2.4"]


def per_call(fn, repeat, warmup=1):
    """Mean seconds per call (for throughput rows; the exact-vs-MCMC rows use medians)."""
    return float(call_times(fn, repeat, warmup).mean())


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):  # noqa: SIM115 - read once by a short-lived benchmark process
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}"


class Table:
    def __init__(self):
        self.sections = {}

    def add(self, section, item, value, note=""):
        self.sections.setdefault(section, []).append(dict(item=item, value=value, note=note))

    def markdown(self):
        md = []
        for section, rows in self.sections.items():
            md += [f"### {section}", "", "| what | measured | note |", "| --- | --- | --- |"]
            md += [f"| {r['item']} | {r['value']} | {r['note']} |" for r in rows] + [""]
        return md


def grad_norm(manifold, point, X):
    return float(manifold.norm(point, riemannian_gradient(manifold, point, X)))


# --- samplers -------------------------------------------------------------------------------

def timed_rounds(exact_fn, chain_fn, steps, rounds=3, draws=300):
    """Exact draws vs a ``steps``-step chain, timed in alternating rounds on the same inputs.

    Both sides use the same estimator, the median over individually timed units (one exact
    draw; 100 chain steps), so a stall of the shared machine moves neither side; the means are
    kept too. ``chain_fn(n, state)`` runs ``n`` steps from ``state`` (the start when None).
    """
    out = []
    for _ in range(rounds):
        e = call_times(exact_fn, draws)
        c = chain_step_times(chain_fn, steps)
        out.append(dict(exact_median=float(np.median(e)), exact_mean=float(e.mean()),
                        step_median=float(np.median(c)), step_mean=float(c.mean())))
    for r in out:
        r["ratio"] = 1e4 * r["step_median"] / r["exact_median"]
        r["ratio_of_means"] = 1e4 * r["step_mean"] / r["exact_mean"]
    return out


def summarise(res):
    """Median over rounds of each figure, and the per-round ratios in order."""
    med = {key: float(np.median([r[key] for r in res])) for key in res[0]}
    med["rounds"] = [round(r["ratio"]) for r in res]
    return med


def bench_le_exact_vs_mcmc(tab, quick, rng, gs):
    k, sigma = 30, 0.01
    le = SPDLogEuclidean(k)
    mean = eigen_spd(1, k, rng=rng)[0]
    lap = RiemannianLaplace(le, sigma)
    steps = 1000 if quick else 10_000
    log_density = lambda y: -le.dist(mean, y) / sigma
    res = summarise(timed_rounds(lambda: lap.sample(mean, rng=rng),
                                 lambda n, x: metropolis_hastings(le, log_density, mean if x is None else x, n, 0.5 * sigma, rng=rng)[0],
                                 steps))
    exact = res["exact_median"]
    sec = "Samplers: exact vs the papers' MCMC"
    tab.add(sec, "Laplace, log-Euclidean SPD(30): 10k-step MH chain (2023 App. B.1, corrected ratio; our manifold ops)",
            f"{res['step_median'] * 1e4:.2f} s", f"3 rounds of {steps:,} steps" + (", scaled to 10k" if steps != 10_000 else "")
            + f"; mean step {res['step_mean'] * 1e6:.0f} µs")
    tab.add(sec, "Laplace, log-Euclidean SPD(30): exact sampler, one public `sample` call", f"{exact * 1e6:.0f} µs (mean {res['exact_mean'] * 1e6:.0f})",
            f"**{res['ratio']:,.0f}×** faster than the 10k-step chain (per round: {', '.join(f'{r:,}' for r in res['rounds'])}; "
            f"ratio of means {res['ratio_of_means']:,.0f}×; target ≥ 10,000×); exact, pure ε-DP")
    if gs.get("mh_step_seconds") is not None:
        g = float(gs["mh_step_seconds"]) * 1e4
        tab.add(sec, "Laplace, log-Euclidean SPD(30): 10k-step MH chain written with geomstats 2.8.0 as the 2023 paper did",
                f"{g:.2f} s", f"{g / exact:,.0f}× the exact draw (paper: 14 s on its machine)")
    # the fastest MCMC one could write here: a random walk directly on vecd(Logm x) ∈ R^465
    flat = Euclidean(le.dim)
    centre = vecd(logm_spd(mean))
    t = time.perf_counter()
    z, _ = metropolis_hastings(flat, lambda y: -np.linalg.norm(y - centre, axis=-1) / sigma, centre, steps, 0.5 * sigma, rng=rng)
    expm_sym(invvecd(z, k))
    best = (time.perf_counter() - t) / steps * 1e4
    tab.add(sec, "Laplace, log-Euclidean SPD(30): 10k-step MH chain run in log coordinates (not the papers'; best case for MCMC)",
            f"{best * 1e3:.0f} ms", f"{best / exact:,.0f}× the exact draw, and still only approximate")
    tg = TangentGaussian(le, sigma)
    tab.add(sec, "Tangent Gaussian draw, SPD(30) (2023)", f"{per_call(lambda: tg.sample(mean, rng=rng), 300) * 1e6:.0f} µs", "(ε, δ)-DP")
    return res


def bench_sphere_exact_vs_mcmc(tab, quick, rng):
    s, sigma = Sphere(2), 0.1
    eta = s.origin
    lap = RiemannianLaplace(s, sigma)
    steps = 1000 if quick else 10_000
    log_density = lambda y: -s.dist(eta, y) / sigma
    res = summarise(timed_rounds(lambda: lap.sample(eta, rng=rng),
                                 lambda n, x: metropolis_hastings(s, log_density, eta if x is None else x, n, sigma, rng=rng)[0],
                                 steps, draws=1000))
    batch = per_call(lambda: lap.sample(eta, size=10**5, rng=rng), 3) / 1e5
    sec = "Samplers: exact vs the papers' MCMC"
    tab.add(sec, "Laplace, S² (σ = 0.1): 10k-step MH chain (2021 App. A.5 burn-in)", f"{res['step_median'] * 1e4 * 1e3:.0f} ms",
            f"3 rounds of {steps:,} steps" + (", scaled to 10k" if steps != 10_000 else ""))
    tab.add(sec, "Laplace, S² (σ = 0.1): exact sampler, one public `sample` call", f"{res['exact_median'] * 1e6:.0f} µs",
            f"{res['ratio']:,.0f}× faster than the 10k-step chain (per round: {', '.join(f'{r:,}' for r in res['rounds'])}); "
            f"{batch * 1e6:.2f} µs per draw in a batch of 10⁵")
    return res


def bench_ai(tab, quick, rng):
    sec = "Samplers: affine-invariant SPD(k), exact (two-stage eigenvalue sampler)"
    for k in (2, 5, 10):
        ai = SPDAffineInvariant(k)
        for frac in (0.1, 0.3):
            lap = RiemannianLaplace(ai, frac / ai.laplace_integrability_constant)
            t = per_call(lambda: lap.sample(np.eye(k), rng=rng), 50 if quick else 300)
            acc = lap.sample_with_stats(np.eye(k), size=2000, rng=rng)[1]
            t_batch = per_call(lambda: lap.sample(np.eye(k), size=10_000, rng=rng), 1) / 10_000
            tab.add(sec, f"SPD({k}), σ = {frac}/c_k", f"{t * 1e6:.0f} µs per call",
                    f"acceptance {acc:.3f}; {t_batch * 1e6:.1f} µs per draw in a batch of 10⁴")


def kng_sphere(n, rng):
    s, r = Sphere(2), np.pi / 8
    X = sphere_cap(n, rng=rng)
    kng = measurements.kng(s, frechet_mean_sensitivity(s, n=n, radius=r, kind="kng"), 1.0, center=s.origin, radius=r).law
    return kng, X, frechet_mean(X, s).point


def bench_kng(tab, quick, rng):
    sec = "Samplers: K-norm gradient (KNG), exact rejection sampler"
    kng, X, mean = kng_sphere(200, rng)
    size = 2000 if quick else 20000
    t = time.perf_counter()
    _, acc = kng.sample_with_stats(X, mean, size=size, rng=rng)
    tab.add(sec, "S², n = 200, ε = 1", f"{size / (time.perf_counter() - t):,.0f} draws/s", f"acceptance {acc:.2f}")
    spd = SPDAffineInvariant(2)
    Y = wishart_spd(100, 2, rng=rng)
    kng2 = measurements.kng(spd, frechet_mean_sensitivity(spd, n=100, radius=1.5, kind="kng"), 1.0, center=np.eye(2), radius=1.5).law
    mean2 = frechet_mean(Y, spd).point
    size = 500 if quick else 5000
    t = time.perf_counter()
    _, acc = kng2.sample_with_stats(Y, mean2, size=size, rng=rng)
    tab.add(sec, "SPD(2) affine-invariant, n = 100, ε = 1", f"{size / (time.perf_counter() - t):,.0f} draws/s", f"acceptance {acc:.2f}")


def bench_high_dim(tab, quick, rng):
    """S⁷⁶⁷ and H¹²⁷ releases at n = 1000 (target: succeed, acceptance ≥ 0.3): one public
    release timed, and the sampler's acceptance over many draws from the same calibrated plan."""
    from manifold_dp.privacy.mechanisms import _ball_draw
    from manifold_dp.privacy.release import plan_release

    sec = "Samplers in high dimension: S⁷⁶⁷ and H¹²⁷, n = 1000, r = 0.3"
    draws = 50 if quick else 300
    for m in (Sphere(767), Hyperbolic(127)):
        c = m.origin
        for layout in ("cloud", "boundary"):
            X = (m.random_point(c, 0.3, size=1000, rng=rng) if layout == "cloud" else
                 np.broadcast_to(m.exp(c, 0.3 * m.random_unit_tangent(c, rng=rng)), (1000, m.dim + 1)))
            for mechanism, restrict in (("laplace", False), ("laplace", True), ("kng", False)):
                for eps in (0.1, 1.0, 10.0):
                    kw = dict(center=c, radius=0.3, epsilon=eps, mechanism=mechanism, restrict=restrict)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # the public "mostly noise" warning at ε = 0.1
                        t = time.perf_counter()
                        private_frechet_mean(X, m, rng=rng, **kw)
                        wall = time.perf_counter() - t
                        plan = plan_release(X, m, **kw)
                    law, stat = plan.calibration.measurement.law, plan._statistic
                    if mechanism == "kng":
                        _, acc = law.sample_with_stats(*stat, size=draws, rng=rng)
                    elif restrict and law.uses_ball_sampler:
                        reach = min(0.3 + float(m.dist(c, stat)), 0.6)
                        _, acc = _ball_draw(m, stat, c, 0.3, np.array([0.0, reach]), np.array([0.0, reach]), law.sigma,
                                            draws, rng)
                    elif restrict:  # the fixed-work sampler: a public number of proposals per draw
                        name = f"{m!r} laplace restricted, records {layout}, ε = {eps:g}"
                        tab.add(sec, name, f"{wall * 1e3:,.0f} ms per release",
                                f"fixed-work sampler: public acceptance {law.restricted_acceptance():.3f}, "
                                f"{law.restricted_proposals():,} proposals per draw")
                        continue
                    else:
                        _, acc = law.sample_with_stats(stat, size=draws, rng=rng)
                    name = f"{m!r} {mechanism}{' restricted' if restrict else ''}, records {layout}, ε = {eps:g}"
                    tab.add(sec, name, f"{wall * 1e3:,.0f} ms per release", f"sampler acceptance {acc:.2f} over {draws} draws")


# --- Fréchet means --------------------------------------------------------------------------

def bench_means(tab, quick, rng, data, gs):
    from pyriemann.geometry.mean import mean_logeuclid, mean_riemann

    sec = f"Fréchet means at equal accuracy (‖∇F‖ ≤ {TOL:g})"
    out = {}
    for key, k in (("spd10", 10), ("spd30", 30)):
        X = data[key]
        spd = SPDAffineInvariant(k)
        ours = per_call(lambda: frechet_mean(X, spd, tol=TOL), 3)
        g_ours = grad_norm(spd, frechet_mean(X, spd, tol=TOL).point, X)
        theirs = per_call(lambda: mean_riemann(X, tol=TOL, maxiter=1000), 3)
        g_theirs = grad_norm(spd, mean_riemann(X, tol=TOL, maxiter=1000), X)
        note = f"ours/pyRiemann = **{ours / theirs:.2f}**; ‖∇F‖ ours {g_ours:.1e}, pyRiemann {g_theirs:.1e}"
        value = f"{ours * 1e3:.1f} ms (pyRiemann `mean_riemann` {theirs * 1e3:.1f} ms"
        if f"{key}_seconds" in gs:
            gt = float(gs[f"{key}_seconds"])
            value += f", geomstats {gt * 1e3:.0f} ms"
            note += f", geomstats {grad_norm(spd, gs[f'{key}_mean'], X):.1e}; ours/geomstats = {ours / gt:.3f}"
        tab.add(sec, f"affine-invariant SPD({k}), n = 500", value + ")", note)
        if f"{key}_default_seconds" in gs:
            tab.add(sec, f"geomstats `FrechetMean` with its default settings, SPD({k})", f"{float(gs[f'{key}_default_seconds']) * 1e3:.0f} ms",
                    f"stops at ‖∇F‖ = {grad_norm(spd, gs[f'{key}_default_mean'], X):.1e} (its rule: ‖mean log‖² ≤ 1e-4 · dim)")
        out[k] = ours / theirs
        le = SPDLogEuclidean(k)
        ours = per_call(lambda: frechet_mean(X, le), 5)
        theirs = per_call(lambda: mean_logeuclid(X), 5)
        err = np.linalg.norm(frechet_mean(X, le).point - mean_logeuclid(X)) / np.linalg.norm(mean_logeuclid(X))
        tab.add(sec, f"log-Euclidean SPD({k}), n = 500 (closed form)", f"{ours * 1e3:.1f} ms (pyRiemann `mean_logeuclid` {theirs * 1e3:.1f} ms)",
                f"ours/pyRiemann = {ours / theirs:.2f} (ours also validates every record); relative difference {err:.1e}")
    s = Sphere(2)
    X = data["s2"]
    ours = per_call(lambda: frechet_mean(X, s, tol=TOL), 3)
    value, note = f"{ours * 1e3:.0f} ms", f"‖∇F‖ ours {grad_norm(s, frechet_mean(X, s, tol=TOL).point, X):.1e}"
    if "s2_seconds" in gs:
        gt = float(gs["s2_seconds"])
        value += f" (geomstats {gt * 1e3:.0f} ms)"
        note += f", geomstats {grad_norm(s, gs['s2_mean'], X):.1e}; ours/geomstats = {ours / gt:.2f}"
    tab.add(sec, f"S², n = {len(X):,}", value, note)
    return out


def bench_sphere_scale(tab, quick, rng):
    sec = "Scale"
    s = Sphere(2)
    X = sphere_cap(10**6, rng=rng)
    t = per_call(lambda: frechet_mean(X, s), 2)
    tab.add(sec, "Fréchet mean, S², n = 10⁶ (in memory)", f"{t:.2f} s", "target < 1 s")
    n = 2 * 10**6 if quick else 10**7
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sphere.npy"
        mm = np.lib.format.open_memmap(path, mode="w+", dtype=float, shape=(n, 3))
        for i in range(0, n, 10**6):
            mm[i:i + 10**6] = sphere_cap(min(10**6, n - i), rng=rng)
        mm.flush()
        del mm
        data = np.load(path, mmap_mode="r")
        tracemalloc.start()
        t0 = time.perf_counter()
        frechet_mean(data, s)
        t = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        del data
    tab.add(sec, f"Fréchet mean, S², n = {n:,} from a memory-mapped file", f"{t:.1f} s",
            f"peak allocation {peak / 2**20:.0f} MiB while the data are {n * 24 / 2**20:.0f} MiB (bounded by the block size); "
            "10⁸ records out of core: `benchmarks/dask_bench.py`")
    ns = [10**3, 10**4, 10**5, 10**6]
    return ns, [per_call(lambda: frechet_mean(X[:m], s), 3) for m in ns]


# --- geomstats side environment -------------------------------------------------------------

def run_geomstats(mode, data, quick):
    """Results of ``_geomstats_side.py`` in the pinned environment, or ``{"skipped": reason}``."""
    if mode == "skip":
        return {"skipped": "--geomstats skip"}
    venv = HERE / ".venv-geomstats"
    py = venv / ("Scripts" if os.name == "nt" else "bin") / "python"
    try:
        if not py.exists():
            print(f"building the pinned geomstats environment in {venv} (once) ...", flush=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            subprocess.run([str(py), "-m", "pip", "install", "-q", *GEOMSTATS_PIN], check=True, capture_output=True, text=True)
        with tempfile.TemporaryDirectory() as tmp:
            inp, outp = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
            np.savez(inp, **data, tol=TOL, mh_steps=200 if quick else 1000)
            subprocess.run([str(py), str(HERE / "_geomstats_side.py"), str(inp), str(outp)], check=True, capture_output=True, text=True)
            with np.load(outp) as f:
                return {key: f[key] for key in f.files}
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        return {"skipped": f"could not build or run the pinned geomstats environment: {detail.strip().splitlines()[-1] if detail.strip() else exc}"}


# --- scaling figure and the experiments' wall times --------------------------------------------

def scaling(quick, rng, ns, times):
    from pyriemann.geometry.mean import mean_riemann

    ks = [2, 5, 10, 20, 30]
    mean_ours, mean_pyr = [], []
    for k in ks:
        X = eigen_spd(500, k, r=0.5, rng=rng)
        mean_ours.append(per_call(lambda: frechet_mean(X, SPDAffineInvariant(k), tol=TOL), 2))
        mean_pyr.append(per_call(lambda: mean_riemann(X, tol=TOL, maxiter=1000), 2))
    le_t, ai_t, mh_t = [], [], []
    for k in ks:  # medians, as in the ratio rows
        le, eye = SPDLogEuclidean(k), np.eye(k)
        lap_le = RiemannianLaplace(le, 0.01)
        le_t.append(np.median(call_times(lambda: lap_le.sample(eye, rng=rng), 100)))
        ai = SPDAffineInvariant(k)
        lap_ai = RiemannianLaplace(ai, 0.1 / ai.laplace_integrability_constant)
        ai_t.append(np.median(call_times(lambda: lap_ai.sample(eye, rng=rng), 20)))
        chain = lambda n, x: metropolis_hastings(le, lambda y: -le.dist(eye, y) / 0.01, eye if x is None else x, n, 0.005, rng=rng)[0]
        mh_t.append(np.median(chain_step_times(chain, 400, chunk=50)) * 1e4)
    kng_n = [100, 1000, 10**4] if quick else [100, 1000, 10**4, 10**5]
    kng_t = []
    for n in kng_n:
        kng, X, mean = kng_sphere(n, rng)
        size = 200
        kng_t.append(per_call(lambda: kng.sample(X, mean, size=size, rng=rng), 1) / size)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 2, figsize=(11, 8))
    a = ax[0, 0]
    a.loglog(ns, times, "o-")
    a.set(xlabel="n", ylabel="seconds", title="Fréchet mean on S² vs n")
    a = ax[0, 1]
    a.semilogy(ks, mean_ours, "o-", label="manifold_dp")
    a.semilogy(ks, mean_pyr, "s--", label="pyRiemann mean_riemann")
    a.set(xlabel="k", ylabel="seconds", title=f"Affine-invariant Fréchet mean, n = 500, ‖∇F‖ ≤ {TOL:g}")
    a.legend()
    a = ax[1, 0]
    a.semilogy(ks, np.array(le_t) * 1e6, "o-", label="exact Laplace, log-Euclidean")
    a.semilogy(ks, np.array(ai_t) * 1e6, "s-", label="exact Laplace, affine-invariant (σ = 0.1/c_k)")
    a.semilogy(ks, np.array(mh_t) * 1e6, "^--", label="10k-step MH chain, log-Euclidean")
    a.set(xlabel="k", ylabel="µs per draw", title="Samplers on SPD(k) vs k")
    a.legend(fontsize=8)
    a = ax[1, 1]
    a.loglog(kng_n, np.array(kng_t) * 1e6, "o-")
    a.set(xlabel="n (records)", ylabel="µs per draw", title="Exact KNG on S² vs n")
    for a in ax.flat:
        a.grid(alpha=0.3)
    fig.tight_layout()
    return fig, dict(ks=ks, mean_ours=mean_ours, mean_pyriemann=mean_pyr, le=le_t, ai=ai_t, mh10k=mh_t, kng_n=kng_n, kng=kng_t)


def bench_reproduce(tab, profile, out):
    from manifold_dp.experiments import reproduce

    t = time.perf_counter()
    results, _ = reproduce(profile=profile, out_dir=out / f"reproduce-{profile}", log=lambda msg: print(msg, flush=True))
    total = time.perf_counter() - t
    sec = f"`manifold-dp reproduce --profile {profile}`: wall time per experiment"
    for r in results:
        tab.add(sec, r.id, f"{r.seconds:.1f} s")
    tab.add(sec, "total", f"{total:.0f} s", f"report in {out / f'reproduce-{profile}'}")
    return {r.id: r.seconds for r in results}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="shorter chains and fewer repeats")
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--geomstats", choices=["auto", "skip"], default="auto")
    ap.add_argument("--reproduce", choices=["auto", "none", "quick", "full"], default="auto")
    ap.add_argument("--only", choices=["high-dim", "floor", "paths"],
                    help="run one section only (writes high_dim.md, floor.md for the close-to-the-floor target rows, "
                         "or paths.md for every path against its own floor)")
    ap.add_argument("--rows", nargs="+", choices=sorted(ROWS), help="with --only paths: these rows only")
    args = ap.parse_args(argv)
    if args.only:
        tab, rng = Table(), np.random.default_rng(7)
        title, stem, ratios = {
            "paths": lambda: ("Every path against its floor", "paths", bench_paths(tab, args.quick, rng, args.rows)),
            "high-dim": lambda: ("High-dimensional samplers", "high_dim", bench_high_dim(tab, args.quick, rng)),
            "floor": lambda: ("Close to the floor", "floor", bench_floor(tab, args.quick, rng)),
        }[args.only]()
        md = [f"# {title} ({'quick' if args.quick else 'full'})", "", f"Machine: {machine()}", f"{blas_setting()[0]}",
              ""] + tab.markdown()
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / f"{stem}.md").write_text("\n".join(md) + "\n", encoding="utf-8")
        if ratios is not None:
            (Path(args.out) / f"{stem}.json").write_text(
                json.dumps(dict(machine=machine(), blas=blas_setting()[0], ratios=ratios), indent=2), encoding="utf-8")
        print("\n".join(md))
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    tab = Table()
    data = dict(spd10=eigen_spd(500, 10, r=0.5, rng=rng), spd30=eigen_spd(500, 30, r=0.5, rng=rng),
                s2=sphere_cap(10**5, rng=rng), mh_mean=eigen_spd(1, 30, rng=rng)[0], mh_sigma=0.01)
    print("geomstats (pinned side environment) ...", flush=True)
    gs = run_geomstats(args.geomstats, data, args.quick)
    print("exact samplers vs MCMC ...", flush=True)
    le = bench_le_exact_vs_mcmc(tab, args.quick, rng, gs)
    sphere = bench_sphere_exact_vs_mcmc(tab, args.quick, rng)
    print("affine-invariant sampler ...", flush=True)
    bench_ai(tab, args.quick, rng)
    print("KNG ...", flush=True)
    bench_kng(tab, args.quick, rng)
    print("high-dimensional samplers ...", flush=True)
    bench_high_dim(tab, args.quick, rng)
    print("close to the floor ...", flush=True)
    floor = bench_floor(tab, args.quick, rng)
    print("Fréchet means vs pyRiemann and geomstats ...", flush=True)
    bench_means(tab, args.quick, rng, data, gs)
    if "skipped" in gs:
        tab.add(f"Fréchet means at equal accuracy (‖∇F‖ ≤ {TOL:g})", "geomstats 2.8.0", "skipped", gs["skipped"])
    print("sphere mean at scale ...", flush=True)
    ns, times = bench_sphere_scale(tab, args.quick, rng)
    print("scaling plots ...", flush=True)
    fig, curves = scaling(args.quick, rng, ns, times)
    fig.savefig(out / "scaling.png", dpi=100)
    profile = {"auto": "quick" if args.quick else "full"}.get(args.reproduce, args.reproduce)
    walls = bench_reproduce(tab, profile, out) if profile != "none" else {}
    desc = machine()
    env = "not run" if "skipped" in gs else f"geomstats {gs['version']} with numpy {gs['numpy']} in {HERE / '.venv-geomstats'}"
    md = [f"# Benchmarks ({'quick' if args.quick else 'full'})", "", f"Machine: {desc}", f"{blas_setting()[0]}",
          f"Side environment: {env}", ""] + tab.markdown()
    md.append("Scaling plots: `scaling.png` (mean vs n and vs k; samplers vs k; KNG vs n).")
    (out / "benchmarks.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    record = dict(machine=desc, side_environment=env, sections=tab.sections, le_exact_vs_mcmc=le, sphere_exact_vs_mcmc=sphere,
                  scaling={key: np.asarray(v).tolist() for key, v in curves.items()}, reproduce_seconds=walls,
                  blas=blas_setting()[0], floor_ratios=floor)
    (out / "benchmarks.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    print("\n".join(md))


if __name__ == "__main__":
    main()
