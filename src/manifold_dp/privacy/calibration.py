"""Noise calibration for the Gaussian mechanism (docs/theory.md §4, tangent Gaussian)."""

import math
from collections.abc import Callable, Sequence
from typing import cast

import numpy as np
from scipy.special import log_ndtr

from .._validation import check_delta, check_epsilon, check_positive

__all__ = ["gaussian_delta", "analytic_gaussian_sigma", "classical_gaussian_sigma", "shared_gaussian_shares",
           "gaussian_noise_ratio", "gaussian_epsilon"]


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
    if f_prev == 0:
        return prev
    if f_cur == 0:
        return cur
    if (f_prev < 0) == (f_cur < 0):  # signs, not the product, which underflows to 0 for values below 1e-162
        raise ValueError(f"f(a) and f(b) must have opposite signs, got a={a!r}, b={b!r}")
    far = f_far = step_before = step = 0.0  # far: the end of the bracket opposite cur
    for _ in range(maxiter):
        if f_prev != 0 and f_cur != 0 and (f_prev < 0) != (f_cur < 0):  # the root moved between prev and cur: prev is
            # the new far end (signs compared, as scipy does: the product underflows near a root at tiny δ)
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
            denominator = f_cur - f_prev
            numerator = -f_cur * (cur - prev)
        else:
            slope_prev = (f_prev - f_cur) / (prev - cur)
            slope_far = (f_far - f_cur) / (far - cur)
            numerator = -f_cur * (f_far * slope_far - f_prev * slope_prev)
            denominator = slope_far * slope_prev * (f_far - f_prev)
        # a zero denominator (f flat in float64: values far below the target's ulp) is scipy's inf or nan, which
        # fails the test below: a bisection
        if denominator != 0.0:
            trial = numerator / denominator
            if 2 * abs(trial) < min(abs(step_before), 3 * abs(half) - tol):
                return step, trial
    return half, half


SMALL_MU = 1e-3  # below, gaussian_delta integrates the privacy loss (no cancellation)
# relative: above the computed δ curve's float64 error wherever δ is a normal float (measured against 60-digit
# arithmetic: at most 2.8e-11 for δ ≥ 1e-15, 2.4e-10 for δ ≥ 1e-30, 1.1e-8 down to 1e-300; gaussian_delta)
DELTA_FLOAT_ERROR = 1e-7
_LEGENDRE = np.polynomial.legendre.leggauss(32)


def _gaussian_delta_small_mu(mu: float, epsilon: float) -> float:
    """``δ(ε)`` of μ-GDP without cancellation: with the privacy loss ``L = μZ + μ²/2``
    (``Z ~ N(0, 1)``), ``δ = E[(1 − e^(ε − L))₊] = φ(t)·∫₀^∞ e^(−tu − u²/2)·(1 − e^(−μu)) du`` with
    ``t = ε/μ − μ/2``: a positive integrand (``−expm1``), by 8 panels of 32-point Gauss–Legendre
    on ``[0, U]``, ``U`` where ``tu + u²/2`` reaches 80 (the rest is below ``e^−80`` of it)."""
    t = epsilon / mu - 0.5 * mu
    top = -t + math.sqrt(t * t + 160.0)
    nodes, weights = _LEGENDRE
    edges = np.linspace(0.0, top, 9)
    half = 0.5 * (edges[1:] - edges[:-1])
    u = (edges[:-1, None] + half[:, None] * (nodes[None, :] + 1.0)).ravel()
    w = (half[:, None] * weights[None, :]).ravel()
    integral = float(np.dot(w, np.exp(-t * u - 0.5 * u * u) * -np.expm1(-mu * u)))
    if not integral > 0.0:
        return 0.0
    return math.exp(-0.5 * t * t - 0.5 * math.log(2.0 * math.pi) + math.log(integral))


def gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """An upper bound on the exact ``δ(ε)`` of the Gaussian mechanism (Balle & Wang 2018, Thm 8):
    ``Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)``, raised by a relative ``DELTA_FLOAT_ERROR``.
    (The 2023 paper prints both arguments with the same sign: a typo, docs/theory.md §4.)
    Computed in log space for accuracy at small ``δ``; there the two logs nearly cancel
    (``log Φ(−b − a) − log Φ(−b + a) + ε ≈ −μ²/ε`` for ``b = ε/μ`` large), so the computed value
    can fall short of the exact one by a relative ~``b³·10⁻¹⁶/μ``: measured against 60-digit
    arithmetic at most 2.8e-11 for ``δ ≥ 1e-15`` and 1.1e-8 down to ``δ = 1e-300``, which the
    raise covers (``δ`` must be a normal float, ``check_delta``). For ``μ = Δ/σ < SMALL_MU``, where
    the two terms cancel outright (a relative error up to 6e-10 at μ = 1e-3, 4e-7 at 1e-5, 1.5e-4 at
    1e-8, 100 % at 1e-14), it is the privacy-loss integral instead (``_gaussian_delta_small_mu``:
    below 1e-13 at every μ)."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    if 2.0 * a < SMALL_MU:
        return min(1.0, _gaussian_delta_small_mu(2.0 * a, epsilon) * (1.0 + DELTA_FLOAT_ERROR))
    first = log_ndtr(a - b)
    second = epsilon + log_ndtr(-a - b)
    if not second < first:
        return 0.0
    return min(1.0, float(np.exp(first) * -np.expm1(second - first)) * (1.0 + DELTA_FLOAT_ERROR))


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
    # round up to the side that satisfies the constraint; after 1000 steps of 1e-15 the steps double (a safeguard:
    # the root lands within a few ulps of the boundary, and the loop then ends in a step or two)
    step, steps = 1e-15, 0
    while gaussian_delta(sigma, sensitivity, epsilon) > delta:
        sigma = np.nextafter(sigma, np.inf) * (1 + step)
        steps += 1
        step *= 2.0 if steps >= 1000 else 1.0
    return float(sigma)


def classical_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """``σ = Δ √(2 ln(1.25/δ)) / ε`` (Dwork & Roth 2014, Thm A.1); only valid for ``ε < 1``."""
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    sensitivity = check_positive(sensitivity, "sensitivity")
    if epsilon >= 1:
        raise ValueError(f"the classical Gaussian calibration needs epsilon < 1, got {epsilon!r}; use calibration='analytic'")
    return float(sensitivity * np.sqrt(2.0 * np.log(1.25 / delta)) / epsilon)


def gaussian_epsilon(noise_multiplier: float, delta: float) -> float:
    """Smallest ε with ``δ_Gauss(ε) ≤ delta`` for a Gaussian mechanism of multiplier ``z = σ/Δ``
    (the exact curve of Balle & Wang 2018, Thm 8), to the float above the boundary of the
    computed curve."""
    z, delta = check_positive(noise_multiplier, "noise_multiplier"), check_delta(delta)
    if gaussian_delta(z, 1.0, 0.0) <= delta:
        return 0.0
    f: Callable[[float], float] = lambda e: gaussian_delta(z, 1.0, e) - delta
    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
    # bisection down to adjacent floats, keeping hi on the side where δ(ε) ≤ delta: the computed δ curve is
    # flat and noisy where μ is tiny, which stalls a secant method (and made Brent's steps divide by zero)
    lo = 0.0
    for _ in range(2200):  # 1075 halvings reach the smallest subnormal from any power of two ≤ 2^1023
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return float(hi)


# relative margins of the shared Gaussian budget (shared_gaussian_shares): they absorb the last-digit differences
# between the event charged at the safe region's reference centre and the release's own Δ/σ at the released centre
SHARED_MARGIN = 2.0**-30


def _epsilon_for_multiplier(multiplier: float, delta: float) -> float | None:
    """The largest ε (within a few ulps) at which ``analytic_gaussian_sigma(ε, delta)`` is at least
    ``multiplier``: the root of the exact curve ``gaussian_delta(multiplier, 1, ε) = delta``,
    lowered until the calibration itself confirms it (the root finder may land on either side).
    ``None`` where no ε > 0 asks for that much noise (the multiplier is ``(0, delta)``-DP already)."""
    epsilon = gaussian_epsilon(multiplier, delta)
    if epsilon == 0.0:
        return None
    for _ in range(64):
        if epsilon > 0 and analytic_gaussian_sigma(epsilon, delta) >= multiplier:
            return float(epsilon)
        epsilon = epsilon * (1.0 - 2.0**-30) - 1e-13
    return None


def shared_gaussian_shares(epsilon: float, pure_share: float, delta: float, weights: Sequence[float],
                           stage_delta: float) -> list[float] | None:
    """Gaussian stages that share one μ-GDP budget, as shares of ``epsilon``.

    Gaussian mechanisms of ``μᵢ = Δᵢ/σᵢ`` compose, adaptively, into one of ``μ² = Σ μᵢ²``
    (Dong, Roth & Su 2022, Thm 3.2 and Cor. 3.3), which is ``(ε_G, δ)``-DP on the exact curve of
    Balle & Wang 2018; with ε-DP stages of ``pure_share·ε`` in all, basic composition gives
    ``(pure_share·ε + ε_G, δ)``. So ``z``, the multiplier of a single Gaussian at
    ``(ε(1 − pure_share), δ)`` (``ε`` lowered by ``SHARED_MARGIN``), is split as ``μᵢ² = wᵢ/z²``
    (``Σ wᵢ = 1``), and stage ``i`` gets the ``εᵢ`` at which the analytic calibration at
    ``stage_delta`` gives at least ``z/√wᵢ`` (raised by ``SHARED_MARGIN``), so that ``Σ μᵢ² ≤ 1/z²``
    in floating point. Returns ``εᵢ/ε`` (they add up to more than ``1 − pure_share``: the
    gain of composing the Gaussians exactly), or ``None`` where a stage would need more noise than
    any ``ε > 0`` calibrates at ``stage_delta`` (a large δ with a small ε: split by basic
    composition instead)."""
    if not (0.0 <= pure_share < 1.0 and abs(math.fsum(weights) - 1.0) < 1e-12 and min(weights) > 0):
        raise ValueError(f"shared Gaussian stages need 0 <= pure_share < 1 and positive weights adding up to 1, got "
                         f"pure_share={pure_share!r}, weights={tuple(weights)!r}")
    z = analytic_gaussian_sigma(epsilon * (1.0 - pure_share) * (1.0 - SHARED_MARGIN), delta)
    stages = [_epsilon_for_multiplier(z / math.sqrt(w) * (1.0 + SHARED_MARGIN), stage_delta) for w in weights]
    return None if None in stages else [cast(float, e) / epsilon for e in stages]


def gaussian_noise_ratio(epsilon: float, delta: float, stage_epsilon: float, stage_delta: float) -> float:
    """``σ(ε, δ)/σ(ε', δ')`` of the analytic calibration at one sensitivity: a stage's ``μ`` over
    a single Gaussian's with the whole budget (a planning figure)."""
    return analytic_gaussian_sigma(epsilon, delta) / analytic_gaussian_sigma(stage_epsilon, stage_delta)
