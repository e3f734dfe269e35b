"""What float64 can carry: the public refusals of a ball or a noise scale whose draws would leave
its range (``exp``-grown coordinates: eigenvalues ``e^λ`` on SPD, ``cosh ρ`` on hyperbolic space).
Public values only; stage 2 of every release (``privacy.release``) and the mechanisms' own
calibrations (``privacy.mechanism_specs``) read them."""

from __future__ import annotations

import math
from typing import cast

import numpy as np
from scipy.special import gammainccinv

from .._typing import Array
from ..manifolds.base import Manifold

__all__ = ["LOG_FLOAT_MAX", "check_reach", "check_ball", "fits_float64"]

LOG_FLOAT_MAX = 700.0  # exp overflows float64 past ~709.78


def check_reach(manifold: Manifold, center: Array, radius: float, sigma: float, restricted: bool, gaussian: bool = False,
                tail: float = 1.0) -> None:
    """Refuse, from public parameters only, a release that float64 cannot carry: a ball beyond
    ``manifold.max_reach`` from the origin (hyperbolic), or a noise scale whose draw would
    overflow ``exp`` (eigenvalues ``e^λ`` on SPD, ``cosh ρ`` on hyperbolic space) with
    probability above 1e-12. ``tail`` widens the check to a law of scale ``tail·sigma`` (the
    Gaussian mechanisms are checked as a Laplace law of three times their σ); the message quotes
    ``sigma`` itself, the scale the certificate reports."""
    check_ball(manifold, center, radius)
    if not fits_float64(manifold, center, radius, tail * sigma, restricted, gaussian):
        wide = f" (its tail, checked as {tail:g}σ, would overflow float64)" if tail != 1.0 else ""
        raise ValueError(f"the noise scale sigma={sigma:.4g}{wide} is too large for a float64 release on {manifold!r}; "
                         "increase epsilon or n, or shrink radius")


def check_ball(manifold: Manifold, center: Array, radius: float) -> None:
    """Refuse a public ball beyond ``manifold.max_reach`` from the origin (hyperbolic): farther out
    float64 coordinates lose the precision the sensitivity bounds need; and an SPD ball whose
    matrices reach a condition number or a scale where the membership check of one matrix could take
    either of its two paths (``manifold.ball_problem``): the released footpoint is checked, and the
    path would depend on the data (its time, or a refusal)."""
    problem = manifold.ball_problem(center, radius)
    if problem is not None:
        raise ValueError(problem)
    offset = cast(float, manifold.exp_coordinate_offset(center))  # a number wherever max_reach is finite
    if np.isfinite(manifold.max_reach) and offset + radius > manifold.max_reach:
        raise ValueError(
            f"on {manifold!r} the ball must lie within distance {manifold.max_reach:g} of the origin "
            f"(ρ(origin, center) + radius = {offset + radius:.4g}): farther out the coordinates lose the precision "
            "the sensitivity bound needs; move the data and centre towards the origin by an isometry first")


def fits_float64(manifold: Manifold, center: Array, radius: float, sigma: float, restricted: bool,
                 gaussian: bool = False) -> bool:
    """Whether a draw at scale ``sigma`` keeps ``exp``-grown coordinates inside float64 except
    with probability 1e-12. Public values only. Gaussian-tailed laws (``gaussian``): the radius is
    below ``cσ² + σ(√d + √(2 ln 10¹²))`` (``c`` the volume growth rate: completing the square in
    ``cρ − ρ²/(2σ²)``) except with about that probability."""
    base = manifold.exp_coordinate_offset(center)
    if base is None:
        return True
    if gaussian:
        limit = manifold.laplace_sigma_limit
        growth = 1.0 / limit if np.isfinite(limit) else 0.0
        reach = growth * sigma * sigma + sigma * (math.sqrt(manifold.dim) + math.sqrt(2.0 * math.log(1e12)))
    elif restricted:
        reach = radius
    else:
        rate = 1.0 / sigma - 1.0 / manifold.laplace_sigma_limit  # the radial law's exponential tail
        reach = float(gammainccinv(manifold.dim, 1e-12)) / rate if rate > 0 else np.inf
    return base + radius + reach <= LOG_FLOAT_MAX
