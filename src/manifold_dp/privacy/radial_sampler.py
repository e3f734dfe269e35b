"""The radial sampler: the Riemannian Laplace and Gaussian laws on every manifold with a radial
polar volume density ``J`` (``manifold.radial``), the default ``laplace_sampler`` of a space.

In geodesic polar coordinates around the footpoint ``η`` both laws factor into a radius of density
``∝ e^(−ρ/σ) J(ρ)`` (Laplace) or ``∝ e^(−ρ²/(2σ²)) J(ρ)`` (Gaussian), drawn by the log-concave
envelope sampler of ``privacy.samplers``, and a direction uniform on the unit sphere of ``T_η M``;
the draw is ``exp_η(ρ u)`` (docs/theory.md §4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._typing import Array
from .samplers import sample_gaussian_radius, sample_laplace_radius
from .single_draws import laplace_radius_single_sampler

if TYPE_CHECKING:
    from ..manifolds.base import Manifold

__all__ = ["RadialSampler", "RADIAL", "SINGLE_BASIS_MAX_DIM", "FLAT_SKIP", "flat_inside_probability"]

SINGLE_BASIS_MAX_DIM = 32  # single draws take their direction from a kept basis of T_η up to this dimension
FLAT_SKIP = 1e-6  # a flat pilot whose exact inside probability is below FLAT_SKIP/trials is not drawn


def flat_inside_probability(d: int, sigma: float, radius: float, points: int = 4096) -> float:
    """On ``R^d``: the probability that the Laplace law ``∝ e^(−‖z − e‖/σ)`` at a point ``e`` of
    the sphere ``‖e‖ = radius``, truncated at ``‖z − e‖ ≤ 2·radius``, lands in the ball
    ``‖z‖ ≤ radius``. With ``z = e + ρu``, ``‖z‖ ≤ radius`` iff ``cos∠(u, −e) ≥ ρ/(2·radius)``,
    whose probability for a uniform direction is ``I_{(1−t)/2}((d−1)/2, (d−1)/2)`` at
    ``t = ρ/(2·radius)``; ``ρ`` has density ``∝ t^(d−1)·e^(−2·radius·t/σ)`` on ``[0, 1]``. A
    log-space midpoint sum over ``points`` cells (public values only; used to skip pilots that
    could only return their floor)."""
    from scipy.special import betainc, logsumexp

    t = (np.arange(points) + 0.5) / points
    log_w = (d - 1) * np.log(t) - (2.0 * radius / sigma) * t
    a = 0.5 * (d - 1)
    with np.errstate(divide="ignore"):  # d = 1: the one direction towards the centre, probability ½
        log_p = np.log(betainc(a, a, 0.5 * (1.0 - t))) if d > 1 else np.full(points, math.log(0.5))
    return float(np.exp(logsumexp(log_w + log_p) - logsumexp(log_w)))


@dataclass(frozen=True)
class RadialSampler:
    """The radius from the manifold's ``log_volume``, a uniform unit tangent direction, ``exp_η``
    (follows ``manifolds.capabilities.LaplaceSampler``)."""

    name: str = "radial"
    description: str = "log-concave radial rejection + uniform direction"
    radial: bool = True
    gaussian: bool = True
    gaussian_calibration: str | None = "profile"

    def supports_ball(self, manifold: Manifold) -> bool:
        """A radial space of constant curvature (sphere, hyperbolic, Euclidean, log-Euclidean SPD)
        of dimension ≥ 2: the ball is a spherical cap of directions at each radius."""
        lo, hi = manifold.curvature_bounds
        return bool(manifold.radial and manifold.dim >= 2 and lo == hi)

    def check_samplable(self, manifold: Manifold, sigma: float, rho_max: float) -> None:
        """Nothing to refuse: the radius sampler accepts ≥ 0.46 of its proposals in any dimension."""

    def draw(self, manifold: Manifold, eta: Array, sigma: float, n: int, rng: np.random.Generator,
             rho_max: float) -> tuple[Array, float]:
        """``exp_η(ρ u)``: ``ρ`` from the radial law ``e^(−ρ/σ) J(ρ)``, ``u`` a uniform unit tangent."""
        m = manifold
        rho, acceptance = sample_laplace_radius(m, sigma, n, rng, rho_max=rho_max)
        u = m.random_unit_tangent(eta, size=n, rng=rng)
        return m.exp(eta, u * m._expand(rho)), acceptance

    def restricted_acceptance(self, manifold: Manifold, sigma: float, center: Array, radius: float, edge: Array,
                              trials: int, rng: np.random.Generator) -> float:
        """The fraction of ``trials`` draws at ``edge`` (truncated at ``2·radius``) inside the ball,
        times the truncated law's own acceptance (at least ``0.5/trials``). On a flat space whose
        exact inside probability (``flat_inside_probability``) is below ``FLAT_SKIP/trials`` the
        pilot could only return that floor: it is returned without the draws (at a huge ``σ`` they
        cost seconds of ``k × k`` matrix functions on log-Euclidean SPD, and can fail in float64)."""
        if (tuple(manifold.curvature_bounds) == (0.0, 0.0)
                and flat_inside_probability(manifold.dim, float(sigma), float(radius)) < FLAT_SKIP / trials):
            return 0.5 / trials
        x, inner = self.draw(manifold, edge, sigma, trials, rng, 2.0 * radius)
        return max(inner * float(np.mean(manifold.dist(center, x) <= radius)), 0.5 / trials)

    def footpoint_constants(self, manifold: Manifold, eta: Array) -> Any:
        """On small spheres the point as a list of floats (``single_polar_frame``; ``polar_point``
        draws around it); else an orthonormal basis of ``T_η``, flattened to ``(d, size of a point)``,
        so that ``Σ z_i b_i`` with ``z`` uniform on the unit sphere of ``R^d`` is a uniform unit
        tangent (``None``: ``random_unit_tangent`` instead, when ``d > SINGLE_BASIS_MAX_DIM`` or the
        space gives no basis). Which is used depends on the manifold only, so a seed gives the same
        draw whether the frame was kept or not."""
        m = manifold
        polar = m.single_polar_frame(eta)  # Python floats (small spheres)
        if polar is not None:
            return polar
        if m.dim > SINGLE_BASIS_MAX_DIM:  # the basis costs d² per draw: random_unit_tangent is O(d)
            return None
        try:
            basis = m.from_tangent_coordinates(eta, np.eye(m.dim))
        except NotImplementedError:
            return None
        return np.ascontiguousarray(basis.reshape(m.dim, -1))

    def single_sampler(self, manifold: Manifold, sigma: float) -> Any:
        """The radius law's single-draw sampler (``privacy.single_draws``)."""
        return laplace_radius_single_sampler(manifold, float(sigma))

    def single_draw(self, manifold: Manifold, kept: Any, eta: Array, constants: Any,
                    rng: np.random.Generator) -> tuple[Array, int]:
        """One radius, then a direction from the footpoint's constants (``footpoint_constants``)."""
        m = manifold
        rho, proposals = kept.draw(rng)
        if isinstance(constants, list):  # the space's Python-float path (small spheres)
            return m.polar_point(constants, rho, rng), proposals
        if constants is None:
            v = m.random_unit_tangent(eta, rng=rng) * rho
        else:
            g = rng.standard_normal(m.dim)
            norm = math.hypot(*g.tolist())
            if norm == 0.0:  # probability ~2^-60 per coordinate: a uniform direction from the manifold instead
                return m.exp(eta, m.random_unit_tangent(eta, rng=rng) * rho), proposals
            v = g.dot(constants)
            v *= rho / norm
            v = v.reshape(eta.shape)
        return m.exp(eta, v), proposals

    def check_gaussian(self, manifold: Manifold, sigma: float) -> None:
        """Nothing to refuse (the radius sampler's acceptance does not degrade)."""

    def gaussian_draw(self, manifold: Manifold, eta: Array, sigma: float, n: int,
                      rng: np.random.Generator) -> Array:
        """``exp_η(ρ u)``: ``ρ`` from ``e^(−ρ²/(2σ²)) J(ρ)``, ``u`` a uniform unit tangent."""
        m = manifold
        rho, _ = sample_gaussian_radius(m, sigma, n, rng)
        return m.exp(eta, m.random_unit_tangent(eta, size=n, rng=rng) * m._expand(rho))


RADIAL = RadialSampler()
