"""Record preparation's time against the mix of invalid and clipped records (docs/security.md,
Timing (c)): ``python benchmarks/mask_timing.py``.

numpy's masked selects take longer the more mixed their mask is; a release's preparation should
cost the same whatever fraction of records is invalid (NaN) or clipped. Prints, per manifold, the
median time of ``prepare_records`` on clean records, with half of them NaN, with half of them
outside the ball, and with half of them holding a subnormal coordinate (random positions), and the
relative differences."""

import warnings

import numpy as np

from _floor import _median  # the benchmarks' timing helper (this script runs from benchmarks/)
from manifold_dp import Euclidean, Hyperbolic, KendallShape2D, SPDAffineInvariant, Sphere
from manifold_dp.privacy.release import prepare_records

CASES = ((Euclidean(1), 10**6), (Euclidean(3), 2 * 10**5), (Sphere(2), 2 * 10**5), (Sphere(50), 2 * 10**4), (Hyperbolic(3), 10**5),
         (KendallShape2D(5), 2 * 10**4), (SPDAffineInvariant(3), 3 * 10**4))
RADIUS = 0.3


def main():
    rng = np.random.default_rng(0)
    for m, n in CASES:
        c = m.origin
        V = m.random_unit_tangent(c, n, rng=rng) * 0.05
        X, far = m.exp(c, V), m.exp(c, V * 20)  # inside the ball, and outside it
        half = rng.random(n) < 0.5
        nan, clipped, tiny = X.copy(), X.copy(), X.copy()
        nan[half] = np.nan
        clipped[half] = far[half]
        tiny.reshape(n, -1)[half, 0] = 5e-324  # a subnormal coordinate (flushed: a slow float path if multiplied)
        # with the log mean, and without it (the release from the extrinsic mean: the sphere then takes no arctan2);
        # on the line also without the records (the flat-chart mean reads only their log mean)
        variants = {Sphere: ({}, {"log_mean": False}), Euclidean: ({}, {"keep": False})}
        for kw in variants.get(type(m), ({},)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = [_median(lambda Y=Y: prepare_records(m, Y, c, RADIUS, **kw), 7)[0] * 1e3 for Y in (X, nan, clipped, tiny)]
            print(f"{m!r:36s} n = {n:7,d}{' (' + ', '.join(kw) + ' off)' if kw else '':14s}: clean {t[0]:7.2f} ms, half NaN {t[1]:7.2f} "
                  f"ms ({t[1] / t[0] - 1:+.0%}), half clipped {t[2]:7.2f} ms ({t[2] / t[0] - 1:+.0%}), half with a "
                  f"subnormal coordinate {t[3]:7.2f} ms ({t[3] / t[0] - 1:+.0%})")


if __name__ == "__main__":
    main()
