"""The S² release row of the floor table for one or more source trees, alternated on the same data: the private
Fréchet mean at n = 10⁶, r = π/8, against one ``np.arccos(X @ mu)`` pass (the floor, the faster of
numpy's BLAS threading and our thread limit), and the certified mean of each tree compared with the
first tree's (they should agree to 1e-12).

    python benchmarks/sphere_release.py                       # this checkout's src/
    python benchmarks/sphere_release.py src /path/to/old/src  # A/B: each tree in its own process

Each tree runs in a fresh process with ``PYTHONPATH`` set to it; rounds alternate the trees.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, time, warnings
import numpy as np
from manifold_dp import Sphere, private_frechet_mean
from manifold_dp._threads import blas_limit
from manifold_dp.data import sphere_cap
from manifold_dp.privacy.release import prepare_records
from manifold_dp.stats.frechet import certified_frechet_mean

m = Sphere(2)
X = sphere_cap(10**6, rng=np.random.default_rng(0))
mu, r = m.origin, np.pi / 8

def median(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))

def release():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        private_frechet_mean(X, m, center=mu, radius=r, epsilon=1.0, rng=1)

floor = median(lambda: np.arccos(X @ mu), 7)
with blas_limit():
    floor = min(floor, median(lambda: np.arccos(X @ mu), 7))
ours = median(release, 7)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    mean = certified_frechet_mean(m, prepare_records(m, X, mu, r)[0], mu, r, 4e-11)
print(json.dumps({"ours": ours, "floor": floor, "mean": mean.tolist()}))
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="*", default=[str(Path(__file__).resolve().parents[1] / "src")])
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    first = None
    for round_ in range(args.rounds):
        for tree in args.trees:
            env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
            out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
            res = json.loads(out.stdout.strip().splitlines()[-1])
            first = first or res["mean"]
            gap = max(abs(a - b) for a, b in zip(res["mean"], first))
            print(f"round {round_ + 1}  {tree}: {res['ours'] * 1e3:.1f} ms vs floor {res['floor'] * 1e3:.2f} ms = "
                  f"{res['ours'] / res['floor']:.2f}× (target ≤ 8×); certified mean differs from the first tree's by "
                  f"{gap:.1e}", flush=True)


if __name__ == "__main__":
    main()
