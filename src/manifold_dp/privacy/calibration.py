"""Noise calibration for the Gaussian mechanism (docs/theory.md §4, tangent Gaussian)."""

from collections.abc import Callable

import numpy as np
from scipy.special import log_ndtr

from .._validation import check_delta, check_epsilon, check_positive

__all__ = ["gaussian_delta", "analytic_gaussian_sigma", "classical_gaussian_sigma"]


def gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """Exact ``δ(ε)`` of the Gaussian mechanism (Balle & Wang 2018, Thm 8):
    ``Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)``. (The 2023 paper prints both arguments with
    the same sign: a typo, docs/theory.md §4.) Computed in log space for accuracy at small ``δ``."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    first = log_ndtr(a - b)
    second = epsilon + log_ndtr(-a - b)
    return float(np.exp(first) * -np.expm1(second - first)) if second < first else 0.0


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest ``σ`` with ``gaussian_delta(σ) ≤ δ`` (Balle & Wang 2018, Alg. 1, solved by bisection
    on ``σ`` directly; ``δ(σ)`` is decreasing). Valid for every ``ε > 0``."""
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    sensitivity = check_positive(sensitivity, "sensitivity")
    from scipy.optimize import brentq  # here, not at import: scipy.optimize costs ~0.3 s to import

    f: Callable[[float], float] = lambda log_s: gaussian_delta(np.exp(log_s) * sensitivity, sensitivity, epsilon) - delta
    lo, hi = -10.0, 10.0
    while f(lo) < 0:
        lo -= 10.0
    while f(hi) > 0:
        hi += 10.0
    log_s = brentq(f, lo, hi, xtol=1e-14, rtol=1e-15, maxiter=500)
    sigma = np.exp(log_s) * sensitivity
    # round up to the side that satisfies the constraint
    while gaussian_delta(sigma, sensitivity, epsilon) > delta:
        sigma = np.nextafter(sigma, np.inf) * (1 + 1e-15)
    return float(sigma)


def classical_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """``σ = Δ √(2 ln(1.25/δ)) / ε`` (Dwork & Roth 2014, Thm A.1); only valid for ``ε < 1``."""
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    sensitivity = check_positive(sensitivity, "sensitivity")
    if epsilon >= 1:
        raise ValueError(f"the classical Gaussian calibration needs epsilon < 1, got {epsilon!r}; use calibration='analytic'")
    return float(sensitivity * np.sqrt(2.0 * np.log(1.25 / delta)) / epsilon)
