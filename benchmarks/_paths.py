"""Every release path against its own floor: the paths users take after the sphere (hyperbolic
space, KNG, large SPD, first calls, the flat case, a one-shot process, Dask), each a ratio measured
side by side in the same run (``python benchmarks/run.py --only paths [--rows NAME ...]``).

Each row times our path next to its floor in pairs (``_floor._paired``: one call of each, the median
of the per-pair ratios), or, where a row is about a whole process, runs fresh processes alternately
and takes the median of the per-pair ratios.
"""

import json
import os
import subprocess
import sys
import textwrap
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

from manifold_dp import Euclidean, Hyperbolic, SPDAffineInvariant, Sphere, private_frechet_mean
from manifold_dp.data import eigen_spd, sphere_cap

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _floor import _paired, _peak, _seconds

__all__ = ["ROWS", "bench_paths"]

SECTION = "Every path against its floor: ratios measured in the same run"
SRC = str(Path(__file__).resolve().parents[1] / "src")


def _quiet(fn):
    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    return run


def _row_to(tab, out, key, item, ours, floor, target, what, ratio=None):
    """One target row (``ratio``: the median of paired ratios, else ``ours / floor``), kept in ``out[key]``."""
    paired = ratio is not None
    ratio = ours / floor if ratio is None else ratio
    tab.add(SECTION, item, f"{_seconds(ours)} vs {_seconds(floor)}" + (" (medians)" if paired else ""),
            f"**{ratio:.2f}×** {what}{' (median of paired ratios)' if paired else ''} "
            + (f"(target ≤ {target:g}×: {'met' if ratio <= target else 'not met'})" if target is not None
               else "(no target)"))
    out[key] = ratio
    return ratio


def hyperbolic(tab, quick, rng, out):
    """H¹⁰ Laplace release at n = 10⁵ against one distance pass over the records."""
    m, n, r = Hyperbolic(10), 2 * 10**4 if quick else 10**5, 1.0
    V = rng.normal(size=(n, 10))
    V *= (r * rng.uniform(size=(n, 1)) ** 0.1) / np.linalg.norm(V, axis=1, keepdims=True)
    X = m.exp(m.origin, np.c_[np.zeros(n), V])
    c = m.origin
    ours, floor, ratio, _ = _paired(_quiet(lambda: private_frechet_mean(X, m, epsilon=1.0, center=c, radius=r, rng=1)),
                                    lambda: m.dist(c, X), 3)
    _row_to(tab, out, "h10_release", f"H¹⁰ Laplace `private_frechet_mean`, n = {n:,}, r = {r:g}", ours, floor, 10,
            "one distance pass `Hyperbolic.dist(c, X)`", ratio)


def kng_sphere(tab, quick, rng, out):
    """KNG on S² at n = 10⁵ against the Laplace release on the same data."""
    m, n, r = Sphere(2), 2 * 10**4 if quick else 10**5, np.pi / 8
    X = sphere_cap(n, radius=0.3, rng=rng)

    def release(mechanism):
        return _quiet(lambda: private_frechet_mean(X, m, epsilon=1.0, center=m.origin, radius=r, mechanism=mechanism,
                                                   rng=1))
    ours, floor, ratio, _ = _paired(release("kng"), release("laplace"), 3, floor_threads=False)
    _row_to(tab, out, "kng_s2", f"S² KNG `private_frechet_mean`, n = {n:,}, r = π/8", ours, floor, 5,
            "the Laplace release on the same data", ratio)


def spd_ai_large(tab, quick, rng, out):
    """SPD-AI(50) release at n = 500 against one batched ``eigh``; peak memory against the data."""
    k, n, r = 50, 500, 0.5
    m = SPDAffineInvariant(k)
    X = eigen_spd(n, k, r=0.05, rng=rng)  # ρ(I, x) ≤ √50·0.05 < 0.5
    release = _quiet(lambda: private_frechet_mean(X, m, epsilon=1.0, center=np.eye(k), radius=r, rng=1))
    ours, floor, ratio, _ = _paired(release, lambda: np.linalg.eigh(X), 1 if quick else 3)
    _row_to(tab, out, "spd_ai50_release", f"SPD-AI({k}) `private_frechet_mean`, n = {n}, r = {r:g}", ours, floor, 6,
            "one batched `eigh` over the records", ratio)
    tracemalloc.start()
    release()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    out["spd_ai50_memory"] = peak / X.nbytes
    tab.add(SECTION, f"peak memory, SPD-AI({k}) release, n = {n}", f"{peak / 2**20:.1f} MiB vs {X.nbytes / 2**20:.1f} MiB",
            f"**{peak / X.nbytes:.2f}×** the data (target ≤ 3×: {'met' if peak / X.nbytes <= 3 else 'not met'})")


FIRST_CALL = """
import sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
from manifold_dp import SPDAffineInvariant, private_frechet_mean
from manifold_dp.data import eigen_spd
m, X = SPDAffineInvariant(10), eigen_spd(1000, 10, r=0.05, rng=3)
kw = {kw}
times = []
for seed in range(3):
    t = time.perf_counter()
    private_frechet_mean(X, m, epsilon=1.0, center=np.eye(10), rng=seed, **kw)
    times.append(time.perf_counter() - t)
print(times[0], min(times[1:]))
"""


def _first_and_warm(kw, env=None):
    code = textwrap.dedent(FIRST_CALL.format(kw=kw))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, **(env or {})))
    first, warm = map(float, res.stdout.split())
    return first, warm


def first_calls(tab, quick, rng, out):
    """The first call of a public parameter set in a fresh process (after ``import manifold_dp``)
    against a warm call of the same set in the same process: with the disk cache of public set-up
    values filled by an earlier process (``manifold_dp._disk_cache``; the target row), and with
    the cache off (the very first call on a machine)."""
    import tempfile

    cases = (("first_call_rg", "riemannian_gaussian", "dict(radius=0.5, mechanism='riemannian_gaussian', delta=1e-6)"),
             ("first_call_auto", "`radius=\"auto\"`", "dict(radius='auto')"))
    for key, what, kw in cases:
        with tempfile.TemporaryDirectory() as cache:
            _first_and_warm(kw, {"MANIFOLD_DP_CACHE": cache})  # fills the cache
            for suffix, env, how in (("", {"MANIFOLD_DP_CACHE": cache}, "disk cache filled by an earlier process"),
                                     ("_cold", {"MANIFOLD_DP_CACHE": "off"}, "disk cache off")):
                runs = [_first_and_warm(kw, env) for _ in range(1 if quick else 3)]
                ratios = [f / w for f, w in runs]
                first, warm = float(np.median([f for f, _ in runs])), float(np.median([w for _, w in runs]))
                _row_to(tab, out, key + suffix, f"SPD-AI(10) {what}, n = 1,000: first call in a fresh process ({how})",
                        first, warm, 2 if not suffix else None, "a warm call of the same parameters",
                        float(np.median(ratios)))


def flat_case(tab, quick, rng, out):
    """The Euclidean(1) private mean at n = 10⁶ against a plain private mean (diffprivlib's
    ``tools.mean`` where it imports, else clip, mean and one Laplace draw in numpy)."""
    n = 2 * 10**5 if quick else 10**6
    x = rng.uniform(-1.0, 1.0, size=n)
    X = x[:, None]
    m = Euclidean(1)
    try:
        from diffprivlib.tools import mean as dp_mean

        floor, name = (lambda: dp_mean(x, epsilon=1.0, bounds=(-1.0, 1.0))), "diffprivlib `tools.mean`"
    except ImportError:
        gen = np.random.default_rng(1)
        floor, name = (lambda: float(np.mean(np.clip(x, -1.0, 1.0))) + gen.laplace(scale=2.0 / n)), \
            "a numpy private mean (clip, mean, one Laplace draw; diffprivlib not installed)"
    ours, base, ratio, _ = _paired(_quiet(lambda: private_frechet_mean(X, m, epsilon=1.0, center=np.zeros(1), radius=1.0,
                                                                       rng=1)), floor, 5, floor_threads=False)
    _row_to(tab, out, "flat_e1", f"Euclidean(1) `private_frechet_mean`, n = {n:,}", ours, base, 2, name, ratio)


ONE_SHOT = """
import numpy as np, warnings
warnings.simplefilter("ignore")
from manifold_dp import Sphere, private_frechet_mean
from manifold_dp.data import sphere_cap
X = sphere_cap(200000, radius=0.3, rng=1)
private_frechet_mean(X, Sphere(2), epsilon=1.0, center=np.array([0.0, 0.0, 1.0]), radius=0.5, rng=1)
"""


def one_shot(tab, quick, rng, out):
    """A whole process (import, data, one S² release at n = 2·10⁵) with numba installed against the
    same process with ``MANIFOLD_DP_JIT=0``, alternated."""
    try:
        import numba  # noqa: F401
    except ImportError:
        tab.add(SECTION, "one-shot S² release, n = 200,000, numba on vs off", "skipped", "numba not installed")
        return

    def proc(jit):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", ONE_SHOT], check=True, env=dict(os.environ, MANIFOLD_DP_JIT=jit))
        return time.perf_counter() - t
    pairs = [(proc("1"), proc("0")) for _ in range(3 if quick else 7)]
    ratio = float(np.median([a / b for a, b in pairs]))
    _row_to(tab, out, "one_shot_numba", "one-shot process: S² release at n = 200,000 with numba", float(np.median([a for a, _ in pairs])),
            float(np.median([b for _, b in pairs])), 1.1, "the same process with `MANIFOLD_DP_JIT=0` (alternated)", ratio)


def dask_persisted(tab, quick, rng, out):
    """The S² release on records persisted on a local Dask cluster (2 workers × 1 thread) against
    the in-memory release of the same records."""
    try:
        import dask.array as da
        from distributed import Client, LocalCluster
    except ImportError:
        tab.add(SECTION, "Dask S² release on persisted data", "skipped", "dask/distributed not installed")
        return
    n = 10**6 if quick else 10**7
    X = sphere_cap(n, radius=0.3, rng=rng)
    m, c = Sphere(2), np.array([0.0, 0.0, 1.0])
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        D = client.persist(da.from_array(X, chunks=(n // 8, 3)))
        client.wait_for_workers(2)
        from distributed import wait

        wait(D)
        ours, floor, ratio, _ = _paired(_quiet(lambda: private_frechet_mean(D, m, epsilon=1.0, center=c, radius=0.5, rng=1)),
                                        _quiet(lambda: private_frechet_mean(X, m, epsilon=1.0, center=c, radius=0.5, rng=1)),
                                        1 if quick else 3, floor_threads=False)
    _row_to(tab, out, "dask_s2", f"Dask S² `private_frechet_mean` on persisted data, n = {n:,}, 2 workers × 1 thread", ours,
            floor, 2, "the in-memory release of the same records", ratio)


def auto_radius_spd(tab, quick, rng, out):
    """``radius="auto"`` on SPD-LE(16) (n = 1,000), SPD-AI(16) (n = 1,000) and SPD-AI(28) (n = 300),
    warm (the public set-up of every candidate computed once by an earlier call), against the release
    with the radius it chose given explicitly: time, and peak memory against the data's size."""
    from manifold_dp import SPDLogEuclidean

    for key, name, m, n in (("auto_le16", "SPD-LE(16)", SPDLogEuclidean(16), 1000),
                            ("auto_ai16", "SPD-AI(16)", SPDAffineInvariant(16), 1000),
                            ("auto_ai28", "SPD-AI(28)", SPDAffineInvariant(28), 300)):
        k = m.k
        X = eigen_spd(n, k, r=0.3, rng=rng)
        auto = _quiet(lambda: private_frechet_mean(X, m, epsilon=1.0, center=np.eye(k), radius="auto", rng=1))
        r = auto().certificate.radius
        explicit = _quiet(lambda: private_frechet_mean(X, m, epsilon=1.0, center=np.eye(k), radius=r, rng=1))
        explicit()
        ours, floor, ratio, _ = _paired(auto, explicit, 3 if quick else 9, floor_threads=False)
        _row_to(tab, out, key, f"{name} `radius=\"auto\"`, n = {n:,}, "
                f"warm", ours, floor, 2, f"the release at the radius it chose ({r:.3g}), given explicitly", ratio)
        peak, base = _peak(auto), _peak(explicit)
        out[key + "_memory"] = peak / X.nbytes
        tab.add(SECTION, f"peak memory, {name} `radius=\"auto\"`, n = {n:,}",
                f"{peak / 2**20:.1f} MiB (explicit radius {base / 2**20:.1f} MiB) vs {X.nbytes / 2**20:.1f} MiB of data",
                f"**{peak / X.nbytes:.2f}×** the data (no target)")


ROWS = {"hyperbolic": hyperbolic, "kng": kng_sphere, "spd-ai-50": spd_ai_large, "first-call": first_calls,
        "auto-spd": auto_radius_spd, "flat": flat_case, "one-shot": one_shot, "dask": dask_persisted}


def bench_paths(tab, quick, rng, rows=None):
    """Run the rows named in ``rows`` (all by default); returns ``{key: ratio}``."""
    out = {}
    for name in rows or ROWS:
        print(f"paths: {name} ...", flush=True)
        ROWS[name](tab, quick, rng, out)
    return out


if __name__ == "__main__":  # a quick look at some rows: python benchmarks/_paths.py NAME ...
    from run import Table

    t = Table()
    print(json.dumps(bench_paths(t, "--quick" in sys.argv, np.random.default_rng(7),
                                 [a for a in sys.argv[1:] if a in ROWS] or None), indent=2))
    print("\n".join(t.markdown()))
