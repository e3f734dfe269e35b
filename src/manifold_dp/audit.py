"""Empirical privacy audits: statistical lower bounds on ε from releases of neighbouring datasets.

For a mechanism we build a worst-case pair of neighbouring datasets (one record moved from one
side of the ball's edge to the other), draw many releases from each, pick a rejection event
``{t(x) ≥ τ}`` with ``t(x) = ρ(x, x̄') − ρ(x, x̄)`` (the Laplace log-likelihood ratio up to σ)
on a held-out half, and bound ``ε ≥ log((p − δ)/q)`` with Clopper–Pearson intervals on the other
half (99% overall). A correct mechanism must give ``ε_LB ≤ ε``; an under-noised one should be
caught (``ε_LB > ε``), which shows the audit has power.
"""

from dataclasses import dataclass

import numpy as np
from scipy.stats import beta

from ._random import as_generator
from .manifolds import Euclidean, KendallShape2D, SPDAffineInvariant, SPDLogEuclidean, Sphere
from .privacy import (KNormGradient, RiemannianLaplace, TangentGaussian, analytic_gaussian_sigma,
                      frechet_mean_sensitivity)
from .privacy.release import OPTIMISATION_SLACK
from .stats import frechet_mean


@dataclass(frozen=True)
class AuditResult:
    mechanism: str
    epsilon: float
    delta: float
    epsilon_lb: float
    samples: int
    noise_factor: float
    slack: float  # ρ(x̄, x̄') / Δ for the pair audited: how tight the sensitivity bound is

    def passed(self):
        return self.epsilon_lb <= self.epsilon


def clopper_pearson(k, n, alpha):
    """Two-sided ``1 − alpha`` Clopper–Pearson interval for ``k`` successes in ``n`` trials."""
    lo = beta.ppf(alpha / 2, k, n - k + 1) if k > 0 else 0.0
    hi = beta.ppf(1 - alpha / 2, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


def epsilon_lower_bound(t_a, t_b, delta=0.0, confidence=0.99):
    """ε lower bound from statistics of draws under D (``t_a``) and D' (``t_b``).

    The threshold is chosen on the first half of each sample (largest empirical ε over a grid of
    quantiles, both directions); the bound uses only the second halves, so the choice does not
    bias it. ``1 − confidence`` is split between the two proportions (union bound)."""
    t_a, t_b = np.asarray(t_a), np.asarray(t_b)
    best, choice = -np.inf, None
    for sign, (a, b) in ((1, (t_a, t_b)), (-1, (t_b, t_a))):
        sel_a, sel_b = sign * a[: len(a) // 2], sign * b[: len(b) // 2]
        for tau in np.quantile(sel_a, np.linspace(0.5, 0.999, 60)):
            # rank thresholds by the bound they would give (not the raw ratio, which favours
            # tiny tails where q is 0 by chance)
            p_lo, _ = clopper_pearson(int(np.sum(sel_a >= tau)), len(sel_a), 1 - confidence)
            _, q_hi = clopper_pearson(int(np.sum(sel_b >= tau)), len(sel_b), 1 - confidence)
            est = np.log(max(p_lo - delta, 1e-300) / q_hi)
            if est > best:
                best, choice = est, (sign, tau)
    sign, tau = choice
    a, b = (t_a, t_b) if sign == 1 else (t_b, t_a)
    a, b = sign * a[len(a) // 2:], sign * b[len(b) // 2:]
    alpha = 1 - confidence
    p_lo, _ = clopper_pearson(int(np.sum(a >= tau)), len(a), alpha)
    _, q_hi = clopper_pearson(int(np.sum(b >= tau)), len(b), alpha)
    return float(np.log(max(p_lo - delta, 1e-300) / q_hi)) if p_lo > delta else 0.0


def _edge_pair(m, center, radius, n, rng):
    """``n − 1`` records on one point of the ball's edge; the last one there (D) or opposite (D')."""
    u = m.random_unit_tangent(center, rng=rng)
    a, b = m.exp(center, radius * u), m.exp(center, -radius * u)
    D = np.repeat(np.asarray(a)[None], n, axis=0)
    D2 = D.copy()
    D2[-1] = b
    return D, D2


SCENARIOS = {
    "laplace-euclidean": (Euclidean(1), 1.0, "laplace"),
    "laplace-spd-le": (SPDLogEuclidean(2), 1.0, "laplace"),
    "laplace-sphere": (Sphere(2), np.pi / 8, "laplace"),
    "laplace-spd-ai": (SPDAffineInvariant(2), 1.0, "laplace"),
    "laplace-kendall": (KendallShape2D(4), 0.3, "laplace"),
    "kng-sphere": (Sphere(2), np.pi / 8, "kng"),
    "kng-euclidean": (Euclidean(1), 1.0, "kng"),
    "tangent-gaussian-spd-le": (SPDLogEuclidean(2), 1.0, "tangent_gaussian"),
    "kng-mcmc-sphere": (Sphere(2), np.pi / 8, "kng_mcmc"),
}


def audit(name, samples=100_000, epsilon=1.0, delta=1e-5, n=10, noise_factor=1.0, target_loss=None, mcmc_steps=30, rng=None):
    """Audit one scenario of ``SCENARIOS`` with ``samples`` releases from each dataset.

    ``noise_factor < 1`` under-noises the mechanism (σ × factor). ``target_loss`` instead sets σ so
    that the audited pair's true privacy loss is ``target_loss`` (curved spaces, where Δ has slack).
    """
    if name not in SCENARIOS:
        raise ValueError(f"unknown audit scenario {name!r}; choose from {', '.join(SCENARIOS)}")
    rng = as_generator(rng)
    m, radius, kind = SCENARIOS[name]
    D, D2 = _edge_pair(m, m.origin, radius, n, rng)
    mean, mean2 = frechet_mean(m, D).point, frechet_mean(m, D2).point
    gap = float(m.dist(mean, mean2))
    gaussian = kind == "tangent_gaussian"
    d = delta if gaussian else 0.0
    if kind == "laplace":
        sens = frechet_mean_sensitivity(m, n=n, radius=radius) * (1 + 2 * OPTIMISATION_SLACK)
        sigma = sens / epsilon if target_loss is None else gap / target_loss
        mech = RiemannianLaplace(m, sigma * noise_factor)
        x, y = mech.sample(mean, size=samples, rng=rng), mech.sample(mean2, size=samples, rng=rng)
    elif kind in ("kng", "kng_mcmc"):
        sens = frechet_mean_sensitivity(m, n=n, radius=radius, kind="kng") * (1 + 2 * OPTIMISATION_SLACK)
        sigma = 2 * sens / epsilon
        kng = KNormGradient(m, sigma * noise_factor, m.origin, radius)
        if kind == "kng":
            x, y = kng.sample(D, mean, size=samples, rng=rng), kng.sample(D2, mean2, size=samples, rng=rng)
        else:  # chains of the configured length from the public centre
            step = 0.5 * sigma
            x, _ = kng.sample_mcmc(D, m.origin, mcmc_steps, step, size=samples, rng=rng)
            y, _ = kng.sample_mcmc(D2, m.origin, mcmc_steps, step, size=samples, rng=rng)
    else:
        sens = frechet_mean_sensitivity(m, n=n, radius=radius, kind="log_euclidean") * (1 + 2 * OPTIMISATION_SLACK)
        sigma = analytic_gaussian_sigma(epsilon, delta, sens)
        mech = TangentGaussian(m, sigma * noise_factor)
        x, y = mech.sample(mean, size=samples, rng=rng), mech.sample(mean2, size=samples, rng=rng)
    # rounded to a public grid: the audit tests the mathematical mechanism; without rounding the
    # threshold can key on low-order bits of the float output (Mironov 2012; docs/security.md)
    stat = lambda z: np.round((m.dist(z, mean2) - m.dist(z, mean)) / gap, 6)
    lb = epsilon_lower_bound(stat(x), stat(y), delta=d)
    return AuditResult(name, epsilon, d, lb, samples, noise_factor, gap / sens)


def power_check(name, samples=100_000, epsilon=1.0, rng=None):
    """The under-noised variant: σ × 0.8 on flat spaces; on curved ones σ set so that the audited
    pair's privacy loss is 1.25 ε. A powerful audit reports ``ε_LB > ε``."""
    m = SCENARIOS[name][0]
    flat = m.curvature_bounds == (0.0, 0.0)
    if flat:
        return audit(name, samples, epsilon, noise_factor=0.8, rng=rng)
    return audit(name, samples, epsilon, target_loss=1.25 * epsilon, rng=rng)
