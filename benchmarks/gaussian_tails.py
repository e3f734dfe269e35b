"""The Riemannian Gaussian's certified δ against its true δ: the library's bound and the triangle bound.

    python benchmarks/gaussian_tails.py            # S² (n = 10 and n = 1) and affine-invariant SPD(3), SPD(5)
    python benchmarks/gaussian_tails.py --quick    # fewer Monte Carlo draws on SPD

At (ε, δ) = (1, 1e-6) and Δ from ``frechet_mean_sensitivity`` (``min(Δ, 2r)``, as the release path
calibrates), for each space and radius: σ of the triangle bound and of ``gdp.privacy_profile`` (the
same bisection, ``measurements._profile_sigma``), the certified δ(1) of each at its own σ, and the
true δ(1) at that σ:

- S²: ``sup_t δ_t(1)`` over 8 footpoint distances ``t ∈ (0, Δ]``, each by composite Gauss–Legendre
  over the whole sphere (``experiments.j23_gaussian.sphere_profile``, 300 × 8 nodes per axis; a
  measurement without an error bound);
- SPD-AI(k): the largest over three directions of ``η'`` (diagonal, off-diagonal, random) of a
  Monte Carlo of ``δ_Δ(1)``, self-normalised importance sampling from the law at ``1.3σ`` (weights
  ``∝ e^(−ρ²(1/2σ² − 1/2(1.3σ)²))``; plain Monte Carlo where the exact sampler refuses 1.3σ, n/a
  where it refuses σ), with its standard error.

The triangle bound: on the sphere the quadrature with the triangle inequality beyond a quarter circle
(and over the whole radius law where ``Δ ≥ π/2``); on SPD-AI the triangle inequality
``ρ(η', y) ≤ ρ + Δ`` over the radius law. Both are built here from ``privacy.gdp``'s parts; the
library takes the smaller of each and its sharper bound (the exact tail on the sphere, Toponogov's
comparison on SPD-AI).
"""

import argparse
import time

import numpy as np

from manifold_dp import SPDAffineInvariant, Sphere
from manifold_dp.experiments.j23_gaussian import sphere_profile
from manifold_dp.privacy import frechet_mean_sensitivity, gdp
from manifold_dp.privacy.measurements import _profile_sigma
from manifold_dp.privacy.mechanisms import RiemannianGaussian

EPS, DELTA = 1.0, 1e-6


def triangle_profile(m, sensitivity, sigma, epsilon):
    """The triangle bound: on SPD-AI over the radius law; on the sphere the quadrature with its
    triangle-bounded tail, doubling error and ``TRUNCATION`` added."""
    eps = np.atleast_1d(np.asarray(epsilon, float))
    if gdp.profile_method(m) == "triangle":
        out = gdp._triangle_profile(m, float(sensitivity), float(sigma), eps)
    else:
        t = np.array([min(sensitivity, float(m.injectivity_radius))])
        coarse, fine = (gdp._profile_once(m, t, sigma, eps, r, a) for r, a in ((8, 4), (16, 8)))
        out = np.minimum(np.max(fine + np.abs(fine - coarse) + gdp.TRUNCATION, axis=0), 1.0)
    return out if np.ndim(epsilon) else float(out[0])


def sphere_true_delta(sensitivity, sigma):
    return max(float(sphere_profile(t, sigma, np.array([EPS]), panels=300)[0])
               for t in np.linspace(sensitivity / 8, sensitivity, 8))


def spd_true_delta(m, sensitivity, sigma, draws, rng):
    """``(δ, standard error)``: the largest over three directions of the importance-sampled δ_Δ(1)."""
    k, I = m.k, np.eye(m.k)
    for wide in (1.3 * sigma, sigma):
        try:
            y = RiemannianGaussian(m, wide).sample(I, draws, rng=rng)
            break
        except ValueError:  # the exact sampler refuses a scale whose acceptance is below 1e-3
            continue
    else:
        return float("nan"), 0.0
    rho0 = m.dist(I, y)
    logw = -rho0 ** 2 * (1 / (2 * sigma ** 2) - 1 / (2 * wide ** 2))
    w = np.exp(logw - logw.max())
    w /= w.sum()
    a = rng.standard_normal((k, k))
    directions = [np.diag(np.r_[1.0, -1.0, np.zeros(k - 2)]) / np.sqrt(2),
                  (np.eye(k)[:, [1]] @ np.eye(k)[[0]] + np.eye(k)[:, [0]] @ np.eye(k)[[1]]) / np.sqrt(2),
                  (a + a.T) / np.linalg.norm(a + a.T)]
    best = (0.0, 0.0)
    for v in directions:
        loss = (m.dist(m.exp(I, sensitivity * v), y) ** 2 - rho0 ** 2) / (2 * sigma ** 2)
        h = np.clip(-np.expm1(EPS - loss), 0.0, None)
        est = float(np.sum(w * h))
        se = float(np.sqrt(np.sum(w ** 2 * (h - est) ** 2)))  # the delta method for a ratio estimate
        best = max(best, (est, se))
    return best


def row(label, m, n, r, true_delta):
    sens = min(frechet_mean_sensitivity(m, n=n, radius=r), 2 * r)
    out = {"space": label, "n": n, "r": r, "sens": sens}
    for key, profile in (("old", triangle_profile), ("new", gdp.privacy_profile)):
        sigma = _profile_sigma(m, sens, EPS, DELTA, profile)
        out[key] = (sigma, float(profile(m, sens, sigma, EPS)), true_delta(m, sens, sigma))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="4·10⁵ Monte Carlo draws on SPD instead of 4·10⁶")
    args = ap.parse_args()
    draws = 400_000 if args.quick else 4_000_000
    rng = np.random.default_rng(20261127)
    start = time.perf_counter()
    print(f"(ε, δ) = ({EPS:g}, {DELTA:g}); certified δ(1) and true δ(1), each at its own σ\n")
    print("| space | n | Δ | σ, triangle | certified / true δ, triangle | σ, library | certified / true δ, library | σ saved |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |", flush=True)
    S2 = Sphere(2)
    for n in (10, 1):
        for name, r in (("π/16", np.pi / 16), ("π/8", np.pi / 8), ("π/6", np.pi / 6), ("π/5", np.pi / 5)):
            show(row(f"S², r = {name}", S2, n, r, lambda m, s, sg: (sphere_true_delta(s, sg), 0.0)))
    for k, radii in ((3, (0.5, 1.0)), (5, (0.25, 0.5))):  # SPD-AI(5) at r = 1: σ where the exact sampler refuses
        m = SPDAffineInvariant(k)
        for r in radii:
            show(row(f"SPD-AI({k}), r = {r}", m, 10, r, lambda m, s, sg: spd_true_delta(m, s, sg, draws, rng)))
    print(f"\n{time.perf_counter() - start:.0f} s")


def show(o):
    (s0, c0, (t0, e0)), (s1, c1, (t1, e1)) = o["old"], o["new"]
    fmt = lambda c, t, e: f"{c:.3g} / {t:.3g}" + (f" ± {e:.1g}" if e else "") + (f" ({c / t:.3g}×)" if t > 0 else "")
    print(f"| {o['space']} | {o['n']} | {o['sens']:.4g} | {s0:.4g} | {fmt(c0, t0, e0)} | {s1:.4g} | {fmt(c1, t1, e1)} "
          f"| {100 * (1 - s1 / s0):.1f} % |", flush=True)


if __name__ == "__main__":
    main()
