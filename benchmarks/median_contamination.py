"""The private Fréchet median against the private Fréchet mean under 10 % contamination.

Clean records ``random_point(center, 0.2)``; 10 % of them replaced by outliers in one fixed
direction, half at the edge of the ball (``0.95·r`` from the centre) and half outside it (``3r``,
clipped to the edge by the release; on the sphere the far outliers sit at ``min(3r, 2.5)``
radians). Error: the geodesic distance of a release from the clean records' Fréchet mean
(not private), the median over the seeds; ε = 1, the mean by its default mechanism (Laplace).

    python benchmarks/median_contamination.py            # 20 seeds, prints a Markdown table
    python benchmarks/median_contamination.py --seeds 5
    python benchmarks/median_contamination.py --acceptance   # the exact sampler's acceptance instead
"""

import argparse
import time
import warnings

import numpy as np

from manifold_dp import SPDAffineInvariant, Sphere, private_frechet_mean, private_frechet_median
from manifold_dp.stats.frechet import frechet_mean

SPACES = ((Sphere(2), 0.5), (SPDAffineInvariant(3), 1.0))


def contaminated(m, n, radius, fraction, rng):
    """``(clean, records)``: ``n`` clean draws and the same with ``fraction·n`` outliers."""
    clean = m.random_point(m.origin, 0.2, size=n, rng=rng)
    k = int(round(fraction * n))
    u = m.random_unit_tangent(m.origin, rng=np.random.default_rng(7))  # one fixed direction
    far = min(3.0 * radius, 2.5) if m.curvature_bounds[1] > 0 else 3.0 * radius
    outliers = np.stack([m.exp(m.origin, u * (0.95 * radius if i % 2 == 0 else far)) for i in range(k)])
    records = clean.copy()
    if k:
        records[:k] = outliers
    return clean, records


def run(seeds: int) -> list[tuple[str, int, float, float, float, float, float]]:
    rows = []
    for m, radius in SPACES:
        for n in (100, 1000):
            errors: dict[str, list[float]] = {"median": [], "mean": [], "median0": [], "mean0": []}
            start = time.perf_counter()
            for seed in range(seeds):
                ss = np.random.SeedSequence([seed, n])
                data_rng, median_rng, mean_rng, clean_rng = (np.random.default_rng(s) for s in ss.spawn(4))
                clean, records = contaminated(m, n, radius, 0.1, data_rng)
                truth = frechet_mean(clean, m).point
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    med = private_frechet_median(records, m, center=m.origin, radius=radius, epsilon=1.0, rng=median_rng)
                    mean = private_frechet_mean(records, m, center=m.origin, radius=radius, epsilon=1.0, rng=mean_rng)
                    med0 = private_frechet_median(clean, m, center=m.origin, radius=radius, epsilon=1.0, rng=clean_rng)
                    mean0 = private_frechet_mean(clean, m, center=m.origin, radius=radius, epsilon=1.0, rng=clean_rng)
                errors["median"].append(float(m.dist(truth, med.point)))
                errors["mean"].append(float(m.dist(truth, mean.point)))
                errors["median0"].append(float(m.dist(truth, med0.point)))
                errors["mean0"].append(float(m.dist(truth, mean0.point)))
            seconds = (time.perf_counter() - start) / seeds
            rows.append((repr(m), n, *(float(np.median(errors[k])) for k in ("median0", "mean0", "median", "mean")),
                         seconds))
    return rows


def acceptance(draws: int = 20) -> None:
    """The median KNG sampler's acceptance (accepted over proposed) on clean data
    ``random_point(origin, 0.3)``, ε = 1, the seconds per draw of a batch of ``draws``, and the
    seconds of one release (``private_frechet_median``, one draw: what a user waits for; median of 3)."""
    from manifold_dp import Hyperbolic
    from manifold_dp.privacy.median import median_measurement, weiszfeld_median
    from manifold_dp.privacy.release import prepare_records

    print("| space | dimension | r | n | acceptance | s per draw (20 draws) | s per release (one draw) |")
    print("|---|---|---|---|---|---|---|")
    for m, radius in ((Sphere(2), 0.5), (Hyperbolic(3), 1.0), (SPDAffineInvariant(3), 1.0), (Sphere(10), 0.5),
                      (SPDAffineInvariant(4), 1.0)):
        for n in (100, 1000):
            X = m.random_point(m.origin, 0.3, size=n, rng=0)
            records = np.asarray(prepare_records(m, X, m.origin, radius, log_mean=False)[0])
            law = median_measurement(m, n, 1.0, center=m.origin, radius=radius).law
            start = time.perf_counter()
            _, rate = law.sample_with_stats(records, weiszfeld_median(m, records, m.origin), size=draws, rng=1)
            per_draw = (time.perf_counter() - start) / draws
            single = []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for seed in range(3):
                    start = time.perf_counter()
                    private_frechet_median(X, m, center=m.origin, radius=radius, epsilon=1.0, rng=seed)
                    single.append(time.perf_counter() - start)
            print(f"| {m!r} | {m.dim} | {radius:g} | {n} | {rate:.2g} | {per_draw:.3f} | {float(np.median(single)):.3f} |",
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--acceptance", action="store_true", help="the sampler's acceptance instead")
    args = parser.parse_args()
    if args.acceptance:
        acceptance()
        return
    rows = run(args.seeds)
    print("| space | n | median, clean | mean, clean | median, 10 % outliers | mean, 10 % outliers | s per seed (4 releases) |")
    print("|---|---|---|---|---|---|---|")
    for name, n, a, b, c, d, s in rows:
        print(f"| {name} | {n} | {a:.4f} | {b:.4f} | {c:.4f} | {d:.4f} | {s:.2f} |")


if __name__ == "__main__":
    main()
