"""Noise calibration for the Gaussian mechanism (docs/theory.md §4, tangent Gaussian)."""

from collections.abc import Callable

import numpy as np
from scipy.special import log_ndtr

from .._validation import check_delta, check_epsilon, check_positive

__all__ = ["gaussian_delta", "analytic_gaussian_sigma", "classical_gaussian_sigma"]


def bracketed_root(f: Callable[[float], float], a: float, b: float, xtol: float, rtol: float = 4.0 * 2.0 ** -52,
                   maxiter: int = 100) -> float:
    """A root of ``f`` between ``a`` and ``b`` (``f(a)``, ``f(b)`` of opposite signs, or one zero) by
    Brent's method (Brent 1973, *Algorithms for Minimization without Derivatives*, ch. 4): a secant
    or inverse quadratic step while it stays well inside the bracket, a bisection otherwise, until
    half the bracket is below ``(xtol + rtol·|x|)/2``. It takes the steps of
    ``scipy.optimize.brentq`` in the same floating-point operations, so it returns the same float
    (tests/test_calibration_root.py), without importing ``scipy.optimize``, which costs ~0.1–0.3 s:
    most of a first Gaussian calibration in a fresh process. ``ValueError`` if the ends do not
    bracket a root, ``RuntimeError`` if ``maxiter`` steps do not converge."""
    prev, cur = float(a), float(b)
    f_prev, f_cur = float(f(prev)), float(f(cur))
    if f_prev * f_cur > 0:
        raise ValueError(f"f(a) and f(b) must have opposite signs, got a={a!r}, b={b!r}")
    if f_prev == 0:
        return prev
    if f_cur == 0:
        return cur
    far = f_far = step_before = step = 0.0  # far: the end of the bracket opposite cur
    for _ in range(maxiter):
        if f_prev * f_cur < 0:  # the root moved between prev and cur: prev is the new far end
            far, f_far = prev, f_prev
            step_before = step = cur - prev
        if abs(f_far) < abs(f_cur):  # keep the best estimate in cur
            prev, cur, far = cur, far, cur
            f_prev, f_cur, f_far = f_cur, f_far, f_cur
        tol = (xtol + rtol * abs(cur)) / 2
        half = (far - cur) / 2
        if f_cur == 0 or abs(half) < tol:
            return cur
        step_before, step = _brent_step(prev, cur, far, f_prev, f_cur, f_far, step_before, step, half, tol)
        prev, f_prev = cur, f_cur
        cur += step if abs(step) > tol else (tol if half > 0 else -tol)
        f_cur = float(f(cur))
    raise RuntimeError(f"the root search did not converge in maxiter={maxiter!r} steps")


def _brent_step(prev: float, cur: float, far: float, f_prev: float, f_cur: float, f_far: float, step_before: float,
                step: float, half: float, tol: float) -> tuple[float, float]:
    """The next pair ``(previous step, step)`` of ``bracketed_root``: the interpolation step (secant
    when ``prev`` is the far end, else inverse quadratic through the three points) if the steps are
    still shrinking and it is less than half the step before last and well inside the bracket; a
    bisection (``half``) otherwise."""
    if abs(step_before) > tol and abs(f_cur) < abs(f_prev):
        if prev == far:
            trial = -f_cur * (cur - prev) / (f_cur - f_prev)
        else:
            slope_prev = (f_prev - f_cur) / (prev - cur)
            slope_far = (f_far - f_cur) / (far - cur)
            trial = -f_cur * (f_far * slope_far - f_prev * slope_prev) / (slope_far * slope_prev * (f_far - f_prev))
        if 2 * abs(trial) < min(abs(step_before), 3 * abs(half) - tol):
            return step, trial
    return half, half


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
    """Smallest ``σ`` with ``gaussian_delta(σ) ≤ δ`` (Balle & Wang 2018, Alg. 1, solved for ``log σ``
    by ``bracketed_root`` and rounded up until the constraint holds; ``δ(σ)`` is decreasing). Valid
    for every ``ε > 0``."""
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    sensitivity = check_positive(sensitivity, "sensitivity")
    f: Callable[[float], float] = lambda log_s: gaussian_delta(np.exp(log_s) * sensitivity, sensitivity, epsilon) - delta
    lo, hi = -10.0, 10.0
    while f(lo) < 0:
        lo -= 10.0
    while f(hi) > 0:
        hi += 10.0
    log_s = bracketed_root(f, lo, hi, xtol=1e-14, rtol=1e-15, maxiter=500)
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
