"""Dask benchmark: Fréchet means over records generated chunk by chunk, never all in memory.

    python benchmarks/dask_bench.py [--sphere-n 100000000] [--spd-n 1000000] [--chunk 1000000]

Reports the time per Karcher step (one map-reduce over all records) and the peak resident memory
of the process (threaded scheduler), against the in-memory path where the data fit.
"""

import argparse
import resource
import time

import dask
import dask.array as da
import numpy as np

from manifold_dp import SPDAffineInvariant, Sphere, frechet_mean
from manifold_dp.data import eigen_spd, sphere_cap
from manifold_dp.records import Records
from manifold_dp.stats.frechet import _blk_log_sum


def lazy(make, n, chunk, shape):
    """A Dask array whose blocks are generated on demand from per-block seeds."""
    blocks = []
    for i, start in enumerate(range(0, n, chunk)):
        m = min(chunk, n - start)
        blocks.append(da.from_delayed(dask.delayed(make)(m, i), shape=(m,) + shape, dtype=float))
    return da.concatenate(blocks)


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench(name, m, X, in_memory=None):
    t = time.perf_counter()
    step = Records(X, m).map(_blk_log_sum, m, m.origin)
    sum(step)
    per_step = time.perf_counter() - t
    t = time.perf_counter()
    res = frechet_mean(X, m)
    total = time.perf_counter() - t
    line = f"| {name} | {per_step:.2f} s | {total:.1f} s ({res.n_iter} steps) | {peak_rss_mib():.0f} MiB |"
    if in_memory is not None:
        t = time.perf_counter()
        ref = frechet_mean(in_memory, m)
        line += f" {time.perf_counter() - t:.1f} s, max diff {np.max(np.abs(ref.point - res.point)):.1e} |"
    else:
        line += " does not fit / not run |"
    print(line, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sphere-n", type=int, default=10**8)
    ap.add_argument("--spd-n", type=int, default=10**6)
    ap.add_argument("--chunk", type=int, default=10**6)
    args = ap.parse_args()
    print("| data | one Karcher step | whole mean | peak RSS | in memory |\n| --- | --- | --- | --- | --- |")
    s = Sphere(2)
    X = lazy(lambda m, i: sphere_cap(m, rng=i), args.sphere_n, args.chunk, (3,))
    small = args.sphere_n <= 2 * 10**7
    bench(f"S², n = {args.sphere_n:.0e}", s, X, X.compute() if small else None)
    spd = SPDAffineInvariant(10)
    Y = lazy(lambda m, i: eigen_spd(m, 10, r=0.5, rng=i), args.spd_n, args.chunk // 10, (10, 10))
    bench(f"SPD(10) affine-invariant, n = {args.spd_n:.0e}", spd, Y, Y.compute() if args.spd_n <= 2 * 10**5 else None)


if __name__ == "__main__":
    main()
