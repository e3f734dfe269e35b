"""Validation of public parameters, in one place. Messages quote parameters, never data."""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

if TYPE_CHECKING:
    from .manifolds.base import Manifold


def _is_real(x: object) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _is_finite(x: Any) -> bool:
    """``math.isfinite`` that answers ``False`` for an integer too large for a float (``10**400``)
    instead of raising ``OverflowError``."""
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def _shown(value: object) -> str:
    """The public value as quoted in an error, shortened (``10**400`` has 401 digits)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}…({len(text)} characters)"


def check_epsilon(epsilon: Any) -> float:
    if not _is_real(epsilon) or not _is_finite(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be a finite number > 0, got {_shown(epsilon)}")
    return float(epsilon)


@overload
def check_delta(delta: Any, *, required: Literal[True] = ...) -> float: ...
@overload
def check_delta(delta: Any, *, required: bool) -> float | None: ...
def check_delta(delta: Any, *, required: bool = True) -> float | None:
    if delta is None:
        if required:
            raise ValueError("delta is required for this mechanism: give a number in (0, 1)")
        return None
    if not _is_real(delta) or not (0 < delta < 1):
        raise ValueError(f"delta must be a number in (0, 1), got {_shown(delta)}")
    if delta < sys.float_info.min:
        raise ValueError(f"delta must be at least {sys.float_info.min!r} (the smallest normal float64: below it the "
                         f"Gaussian δ curve cannot be computed to a known accuracy), got {_shown(delta)}")
    return float(delta)


def check_positive(value: Any, name: str) -> float:
    if not _is_real(value) or not _is_finite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {_shown(value)}")
    return float(value)


def check_n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    return int(n)


def check_radius(manifold: Manifold, radius: object) -> float:
    """``radius`` must be positive, finite and below ``r*`` of docs/theory.md §3 (Assumption 1)."""
    radius = check_positive(radius, "radius")
    r_star = manifold.assumption_radius
    if radius >= r_star:
        raise ValueError(
            f"radius must be < r* = {r_star:.6g} on {manifold!r} (docs/theory.md §3, Assumption 1: "
            f"½ min(injectivity radius, π/(2√κmax))), got {radius!r}"
        )
    return radius
