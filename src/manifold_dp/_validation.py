"""Validation of public parameters, in one place. Messages quote parameters, never data."""

import math

import numpy as np


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def check_epsilon(epsilon):
    if not _is_real(epsilon) or not math.isfinite(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    return float(epsilon)


def check_delta(delta, *, required=True):
    if delta is None:
        if required:
            raise ValueError("delta is required for this mechanism: give a number in (0, 1)")
        return None
    if not _is_real(delta) or not (0 < delta < 1):
        raise ValueError(f"delta must be a number in (0, 1), got {delta!r}")
    return float(delta)


def check_positive(value, name):
    if not _is_real(value) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def check_n(n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    return int(n)


def check_radius(manifold, radius):
    """``radius`` must be positive, finite and below ``r*`` of docs/theory.md §3 (Assumption 1)."""
    radius = check_positive(radius, "radius")
    r_star = manifold.assumption_radius
    if radius >= r_star:
        raise ValueError(
            f"radius must be < r* = {r_star:.6g} on {manifold!r} (docs/theory.md §3, Assumption 1: "
            f"½ min(injectivity radius, π/(2√κmax))), got {radius!r}"
        )
    return radius
