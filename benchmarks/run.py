"""Benchmarks against the papers' samplers and pyRiemann, measured side by side in one run.

    python benchmarks/run.py [--quick] [--out benchmarks/results]

Writes ``benchmarks.md``, ``benchmarks.json`` and ``scaling.png`` with the machine description.
geomstats (last release 2.8.0) does not import with numpy >= 2.4; it is reported as skipped.
"""

import argparse
import json
import os
import platform
import time
import tracemalloc
from pathlib import Path

import numpy as np

from manifold_dp import KNormGradient, RiemannianLaplace, SPDAffineInvariant, SPDLogEuclidean, Sphere, TangentGaussian, frechet_mean
from manifold_dp.data import eigen_spd, sphere_cap, wishart_spd
from manifold_dp.privacy import frechet_mean_sensitivity
from manifold_dp.privacy.samplers import metropolis_hastings
from manifold_dp.stats import riemannian_gradient


def per_call(fn, repeat, warmup=1):
    for _ in range(warmup):
        fn()
    t = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t) / repeat


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}"


def bench_le_exact_vs_mcmc(rows, quick, rng):
    k = 30
    le = SPDLogEuclidean(k)
    mean = eigen_spd(1, k, rng=rng)[0]
    sigma = 0.01
    steps = 1000 if quick else 10_000
    t = time.perf_counter()
    metropolis_hastings(le, lambda y: -le.dist(mean, y) / sigma, mean, steps, 0.5 * sigma, rng=rng)
    mcmc10k = (time.perf_counter() - t) / steps * 10_000
    lap = RiemannianLaplace(le, sigma)
    exact = per_call(lambda: lap.sample(mean, rng=rng), 300)
    tg = per_call(lambda: TangentGaussian(le, sigma).sample(mean, rng=rng), 300)
    rows.append(dict(item="Laplace draw, log-Euclidean SPD(30): 10k-step MCMC (2023 App. B.1, corrected ratio)", value=f"{mcmc10k:.2f} s",
                     note="measured over %d steps, scaled to 10k" % steps if quick else "measured"))
    rows.append(dict(item="Laplace draw, log-Euclidean SPD(30): exact sampler", value=f"{exact * 1e6:.0f} µs",
                     note=f"{mcmc10k / exact:,.0f}× faster than 10k-step MCMC (target ≥ 10,000×); exact, pure ε-DP"))
    rows.append(dict(item="Tangent Gaussian draw, SPD(30)", value=f"{tg * 1e6:.0f} µs", note=""))
    return mcmc10k / exact


def bench_ai(rows, quick, rng):
    out = {}
    for k in (2, 5, 10):
        ai = SPDAffineInvariant(k)
        for frac in (0.1, 0.3):
            lap = RiemannianLaplace(ai, frac / ai.laplace_integrability_constant)
            t = per_call(lambda: lap.sample(np.eye(k), rng=rng), 50 if quick else 300)
            acc = lap.sample_with_stats(np.eye(k), size=2000, rng=rng)[1]
            out[(k, frac)] = t
            t_batch = per_call(lambda: lap.sample(np.eye(k), size=10_000, rng=rng), 1) / 10_000
            rows.append(dict(item=f"Laplace draw, affine-invariant SPD({k}), σ = {frac}/c_k", value=f"{t * 1e6:.0f} µs",
                             note=f"acceptance {acc:.3f}; {t_batch * 1e6:.1f} µs per draw in a batch of 10⁴"))
    return out


def bench_kng(rows, quick, rng):
    s = Sphere(2)
    X = sphere_cap(200, rng=rng)
    r = np.pi / 8
    kng = KNormGradient(s, 2 * frechet_mean_sensitivity(s, n=200, radius=r, kind="kng"), s.origin, r)
    mean = frechet_mean(s, X).point
    size = 2000 if quick else 20000
    t = time.perf_counter()
    _, acc = kng.sample_with_stats(X, mean, size=size, rng=rng)
    rows.append(dict(item="KNG exact sampler, S², n = 200, ε = 1", value=f"{size / (time.perf_counter() - t):,.0f} draws/s", note=f"acceptance {acc:.2f}"))
    spd = SPDAffineInvariant(2)
    Y = wishart_spd(100, 2, rng=rng)
    kng2 = KNormGradient(spd, 2 * frechet_mean_sensitivity(spd, n=100, radius=1.5, kind="kng"), np.eye(2), 1.5)
    mean2 = frechet_mean(spd, Y).point
    size = 500 if quick else 5000
    t = time.perf_counter()
    _, acc = kng2.sample_with_stats(Y, mean2, size=size, rng=rng)
    rows.append(dict(item="KNG exact sampler, SPD(2) affine-invariant, n = 100, ε = 1", value=f"{size / (time.perf_counter() - t):,.0f} draws/s", note=f"acceptance {acc:.2f}"))


def bench_mean_vs_pyriemann(rows, quick, rng):
    from pyriemann.geometry.mean import mean_riemann

    res = {}
    for k in (10, 30):
        X = eigen_spd(500, k, r=0.5, rng=rng)
        spd = SPDAffineInvariant(k)
        ours = per_call(lambda: frechet_mean(spd, X, tol=1e-10), 3)
        g_ours = float(spd.norm(frechet_mean(spd, X, tol=1e-10).point, riemannian_gradient(spd, frechet_mean(spd, X, tol=1e-10).point, X)))
        theirs = per_call(lambda: mean_riemann(X, tol=1e-12, maxiter=200), 3)
        g_theirs = float(spd.norm(mean_riemann(X, tol=1e-12, maxiter=200), riemannian_gradient(spd, mean_riemann(X, tol=1e-12, maxiter=200), X)))
        res[k] = ours / theirs
        rows.append(dict(item=f"Fréchet mean, affine-invariant SPD({k}), n = 500", value=f"{ours * 1e3:.1f} ms (pyRiemann {theirs * 1e3:.1f} ms)",
                         note=f"ours/pyRiemann = {ours / theirs:.2f}; ‖∇F‖ ours {g_ours:.1e}, pyRiemann {g_theirs:.1e}"))
    return res


def bench_sphere_mean(rows, quick, rng):
    s = Sphere(2)
    X = sphere_cap(10**6, rng=rng)
    t = per_call(lambda: frechet_mean(s, X), 2)
    rows.append(dict(item="Fréchet mean, S², n = 10⁶", value=f"{t:.2f} s", note="target < 1 s"))
    n = 2 * 10**6 if quick else 10**7
    path = Path("/tmp/manifold_dp_bench_sphere.npy")
    mm = np.lib.format.open_memmap(path, mode="w+", dtype=float, shape=(n, 3))
    for i in range(0, n, 10**6):
        mm[i:i + 10**6] = sphere_cap(min(10**6, n - i), rng=rng)
    mm.flush()
    data = np.load(path, mmap_mode="r")
    tracemalloc.start()
    t0 = time.perf_counter()
    frechet_mean(s, data)
    t = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    path.unlink()
    rows.append(dict(item=f"Fréchet mean, S², n = {n:.0e} from a memory-mapped file", value=f"{t:.1f} s",
                     note=f"peak Python-heap allocation {peak / 2**20:.0f} MiB (the data are {n * 24 / 2**20:.0f} MiB on disk)"))
    ns = [10**3, 10**4, 10**5, 10**6]
    return ns, [per_call(lambda: frechet_mean(s, X[:m]), 3) for m in ns]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller MCMC runs and repeats")
    ap.add_argument("--out", default="benchmarks/results")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    rows = []
    print("exact vs MCMC ...", flush=True)
    speedup = bench_le_exact_vs_mcmc(rows, args.quick, rng)
    print("affine-invariant sampler ...", flush=True)
    bench_ai(rows, args.quick, rng)
    print("KNG ...", flush=True)
    bench_kng(rows, args.quick, rng)
    print("Fréchet mean vs pyRiemann ...", flush=True)
    bench_mean_vs_pyriemann(rows, args.quick, rng)
    print("sphere mean at scale ...", flush=True)
    ns, times = bench_sphere_mean(rows, args.quick, rng)
    rows.append(dict(item="geomstats 2.8.0 comparison", value="skipped", note="geomstats 2.8.0 fails to import with numpy >= 2.4 (np.trapz); not installed"))
    ks = [2, 5, 10, 20, 30]
    le_times = [per_call(lambda: RiemannianLaplace(SPDLogEuclidean(k), 0.01).sample(np.eye(k), rng=rng), 100) for k in ks]
    ai_times = [per_call(lambda: RiemannianLaplace(SPDAffineInvariant(k), 0.1 / SPDAffineInvariant(k).laplace_integrability_constant).sample(np.eye(k), rng=rng), 20) for k in ks]
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.loglog(ns, times, "o-"); a.set_xlabel("n"); a.set_ylabel("seconds"); a.set_title("Fréchet mean on S² vs n"); a.grid(alpha=0.3)
    b.semilogy(ks, np.array(le_times) * 1e6, "o-", label="exact Laplace, log-Euclidean")
    b.semilogy(ks, np.array(ai_times) * 1e6, "s-", label="exact Laplace, affine-invariant (σ = 0.1/c_k)")
    b.set_xlabel("k"); b.set_ylabel("µs per draw"); b.set_title("Samplers vs k"); b.legend(); b.grid(alpha=0.3)
    fig.tight_layout(); fig.savefig(out / "scaling.png", dpi=100)
    desc = machine()
    md = [f"# Benchmarks ({'quick' if args.quick else 'full'})", "", f"Machine: {desc}", "", "| what | measured | note |", "| --- | --- | --- |"]
    md += [f"| {r['item']} | {r['value']} | {r['note']} |" for r in rows]
    (out / "benchmarks.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    (out / "benchmarks.json").write_text(json.dumps({"machine": desc, "rows": rows, "speedup_vs_mcmc": speedup}, indent=2), encoding="utf-8")
    print("\n".join(md))


if __name__ == "__main__":
    main()
