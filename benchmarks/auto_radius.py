"""``radius="auto"`` at small n on S²: the radius it chooses and the error of its release, against
an oracle release at the records' true 0.9-quantile radius (the radius ``"auto"`` aims for, given
for free).

Records: ``sphere_cap`` (polar angle uniform on ``[0, 0.35]``) around a point 0.15 from the public
centre, so a release clipped to the centre is 0.15 off. ε = 1 for both releases (``"auto"``
spends 0.2 of it on the radius). Error: the geodesic distance from the release to the records'
Fréchet mean. Seeds are fixed (``SeedSequence(2026).spawn``); medians over the repetitions.

    python benchmarks/auto_radius.py            # n = 30, 100, 300; 50 repetitions
    python benchmarks/auto_radius.py --reps 20 --n 30 100
"""

import argparse
import json
import warnings

import numpy as np

from manifold_dp import Sphere, private_frechet_mean
from manifold_dp.data import sphere_cap
from manifold_dp.privacy.radius_selection import default_grid
from manifold_dp.stats.frechet import frechet_mean

OFFSET = 0.15  # the cap's centre, from the public centre
CAP = 0.35


def one(n, seed, epsilon):
    s = Sphere(2)
    rng = np.random.default_rng(seed)
    center = s.exp(s.origin, np.array([0.0, OFFSET, 0.0]))  # the public centre; records around the origin
    X = sphere_cap(n, radius=CAP, rng=rng)
    truth = frechet_mean(X, s).point
    oracle_radius = float(np.quantile(s.dist(center, X), 0.9))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = private_frechet_mean(X, s, center=center, radius="auto", epsilon=epsilon, rng=rng)
        oracle = private_frechet_mean(X, s, center=center, radius=oracle_radius, epsilon=epsilon, rng=rng)
    return dict(radius=float(auto.radius), oracle_radius=oracle_radius, error=float(s.dist(truth, auto.value)),
                oracle_error=float(s.dist(truth, oracle.value)), bottom=float(auto.radius) <= default_grid(s, center)[3])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[30, 100, 300])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    rows = []
    for n in args.n:
        seeds = np.random.SeedSequence(2026 + n).spawn(args.reps)
        runs = [one(n, seed, args.epsilon) for seed in seeds]
        row = dict(n=n, reps=args.reps, epsilon=args.epsilon,
                   median_radius=float(np.median([r["radius"] for r in runs])),
                   median_oracle_radius=float(np.median([r["oracle_radius"] for r in runs])),
                   median_error=float(np.median([r["error"] for r in runs])),
                   median_oracle_error=float(np.median([r["oracle_error"] for r in runs])),
                   at_grid_bottom=float(np.mean([r["bottom"] for r in runs])))
        rows.append(row)
        print(f"n={n:4d}  radius {row['median_radius']:.3g} (oracle {row['median_oracle_radius']:.3g})  "
              f"error {row['median_error']:.3g} (oracle {row['median_oracle_error']:.3g})  "
              f"bottom 4 grid points: {row['at_grid_bottom']:.0%}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
