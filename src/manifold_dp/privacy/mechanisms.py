"""The laws the mechanisms draw from: immutable objects that sample exactly, given a scale.

Each class documents its density, assumptions and the theorem that makes it private, but none
turns ε into a scale: ``manifold_dp.privacy.measurements`` does, once, and wraps a law into a
measurement that carries its privacy guarantee. The laws read only the manifolds' declared
capabilities (``manifolds.capabilities``), never their classes; each space's exact Laplace
sampler is an object it declares (``manifold.laplace_sampler``), asked what it can do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._typing import Array, FloatArray
from .._validation import check_positive
from ..manifolds.base import Manifold
from ..stats.frechet import PreparedRecords, riemannian_gradient
from .samplers import (
    FIXED_WORK_MINIMUM,
    MAX_ROUNDS,
    LogDensity,
    cap_fraction_argument,
    log_cap_fraction,
    metropolis_hastings,
    sample_cap_offset,
    sample_radius_concave_volume,
)
from .sensitivity import hessian_lower_bound

__all__ = ["RiemannianLaplace", "KNormGradient", "TangentGaussian", "AmbientNoise", "RiemannianGaussian", "WrappedNoise",
           "ball_sampler_applies", "is_hadamard"]


RESTRICTED_FAILURE_LOG = 45 * np.log(2.0)  # a restricted draw fails with probability ≤ 2^-45 (see below)
RESTRICTED_CHUNK = 1 << 16  # proposals per vectorised batch
_ACCEPTANCE_CACHE: dict[tuple[Manifold, tuple[Any, ...]], float] = {}
KNG_ENVELOPE_LEVELS = 128  # above this many records KNG's radial envelope pools their distances (docs/theory.md §4)

Size = int | tuple[int, ...] | None  # ``size=`` of the samplers: ``None`` for one draw


def _size_tuple(size: Size) -> tuple[int, ...]:
    return () if size is None else tuple(np.atleast_1d(size))


def ball_sampler_applies(m: Manifold) -> bool:
    """Whether ``_ball_draw`` can sample laws restricted to a ball on ``m``, as its Laplace sampler
    says: a radial space of constant curvature (sphere, hyperbolic, Euclidean, log-Euclidean SPD)
    of dimension ≥ 2."""
    return m.laplace_sampler.supports_ball(m)


def _ball_draw(m: Manifold, mu: Array, center: ArrayLike, radius: float, grid: ArrayLike, G: ArrayLike, sigma: float, n: int,
               rng: np.random.Generator) -> tuple[Array, float]:
    """Exact draws of the law ``∝ exp(−G(ρ(μ, x))/σ)`` (volume measure) restricted to
    ``B_radius(center)``, ``G`` non-decreasing and piecewise linear on ``grid`` (which must reach
    ``radius + ρ(μ, center)``), on a space where ``ball_sampler_applies``. Returns
    ``(points, acceptance)``; the acceptance is ≥ e^-1 in every case, in any dimension.

    Footpoint away from the centre (``s·a > σ/2``, ``a = ρ(μ, center)``, ``s`` the largest slope of
    ``G``): in geodesic polar coordinates around ``μ`` the ball is, at each ``ρ``, a spherical cap of
    directions (``privacy.samplers``, law of cosines of the space form); the radius comes from its
    marginal ``∝ J(ρ) e^(−G/σ) C(ρ)``, the direction uniformly from its cap, and no proposal falls
    outside the ball. Footpoint near the centre: the cap's edge is a sliver of width ``2a`` around
    ``ρ = r`` that float64 cannot resolve when ``a`` is tiny, so propose instead from the radial
    law ``∝ e^(−G(ρ(c, x))/σ)`` around the centre truncated at ``r`` and accept with
    ``exp(−(G(ρ(μ, x)) − G(ρ(c, x)) + s·a)/σ) ≤ 1`` (``ρ(μ, x) ≥ ρ(c, x) − a`` and ``G`` is
    ``s``-Lipschitz and non-decreasing), which is ≥ ``e^(−2sa/σ)`` ≥ e^-1."""
    kappa, d = float(m.curvature_bounds[0]), m.dim
    grid, G = np.asarray(grid, float), np.asarray(G, float)
    if np.any(np.diff(G) < 0.0):  # the near-centre ratio below is ≤ 1 only for a non-decreasing G
        raise RuntimeError("ball sampler: the envelope G must be non-decreasing (a caller's bug)")
    a = min(float(m.dist(mu, center)), radius)
    slope = float(np.max(np.diff(G) / np.diff(grid)))
    if slope * a <= 0.5 * sigma:
        keep = grid < radius
        g_grid, g_G = np.append(grid[keep], radius), np.append(G[keep], np.interp(radius, grid, G))
        out: list[Array]
        proposed: float
        out, proposed, have = [], 0, 0
        for _ in range(MAX_ROUNDS):
            if have >= n:
                break
            k = max(8, int(1.5 * (n - have)) + 8)
            rho, inner = sample_radius_concave_volume(m, g_grid, g_G, sigma, k, rng)
            x = m.exp(center, m.random_unit_tangent(center, size=k, rng=rng) * m._expand(rho))
            log_ratio = -(np.interp(m.dist(mu, x), grid, G) - np.interp(rho, grid, G) + slope * a) / sigma
            keep = np.log(rng.uniform(size=k)) < log_ratio
            out.append(x[keep])
            have += int(keep.sum())
            proposed += k / inner
        else:
            raise RuntimeError(f"ball sampler on {m!r} (sigma={sigma!r}, radius={radius!r}) made no progress")
        return np.concatenate(out)[:n], have / proposed
    log_cap: LogDensity = lambda rho: log_cap_fraction(cap_fraction_argument(kappa, a, radius, rho), d)
    v = m.log(mu, center)
    v = v / m._expand(np.asarray(m.norm(mu, v)))
    rho, acceptance = sample_radius_concave_volume(m, grid, G, sigma, n, rng, log_cap=log_cap)
    y = sample_cap_offset(cap_fraction_argument(kappa, a, radius, rho), d, rng)
    w, s = 1.0 - 2.0 * y, 2.0 * np.sqrt(y * (1.0 - y))
    u = m.random_unit_tangent(mu, size=n, rng=rng)
    u = u - m._expand(np.asarray(m.inner(mu, u, v))) * v  # uniform on the unit sphere orthogonal to v
    u = u / m._expand(np.asarray(m.norm(mu, u)))
    u = m._expand(w) * v + m._expand(s) * u
    return m.exp(mu, u * m._expand(rho)), acceptance


class _Frame(NamedTuple):
    """A validated footpoint of ``RiemannianLaplace``: ``single`` (one point, not a batch) and the
    per-footpoint constants single draws reuse (``RiemannianLaplace._footpoint_constants``)."""

    eta: Array
    single: bool
    constants: Any


@dataclass(frozen=True)
class BoundLaplace:
    """``RiemannianLaplace.at(η)``: the unrestricted law at one checked footpoint."""

    law: RiemannianLaplace
    frame: _Frame

    def sample(self, *, rng: RngLike = None) -> Array:
        return self.law._single_draw(self.frame, as_generator(rng))[0]


@dataclass(frozen=True)
class RiemannianLaplace:
    """Riemannian Laplace law: density ``∝ exp(−ρ(η, x)/σ)`` w.r.t. the Riemannian volume,
    footpoint ``η`` (Reimherr, Bharath, Soto 2021, Thm 1).

    Privacy: if ``ρ(η(D), η(D')) ≤ Δ`` for neighbours, releasing one draw is ε-DP with
    ``σ = 2Δ/ε``, and with ``σ = Δ/ε`` when the normalising constant does not depend on ``η``:
    on every registered space (they are homogeneous) **when the law is not restricted**.
    ``restrict_to=(center, radius)`` conditions the law on ``B_r(center)`` (2021 Thm 3): the
    constant then depends on ``η`` and ``σ = 2Δ/ε`` is needed.

    Integrability (unrestricted): always on Euclidean, log-Euclidean, sphere and Kendall;
    hyperbolic needs ``σ < 1/(d−1)``; affine-invariant SPD(k) needs ``σ < 1/c_k``,
    ``c_k = ½√(k(k²−1)/3)``. A non-integrable unrestricted law raises ``ValueError``.

    Sampler: exact (docs/theory.md §4). ``ρ`` from ``e^(−ρ/σ) J(ρ)`` by the log-concave
    envelope sampler of ``privacy.samplers`` (acceptance ≥ 0.46 in any dimension), a uniform unit
    tangent direction, ``exp_η``; on affine-invariant SPD the eigenvalue construction of
    ``sample_spd_log_eigen``. Restricted: a fixed public number of proposals per draw from the law
    truncated at ``2r`` around ``η`` (``restricted_proposals``), the first inside the ball; where
    that number would be hopeless (high dimension: from a footpoint on the boundary almost every
    direction leaves the ball) and the space has constant curvature, the cap sampler
    ``_ball_draw``, which never proposes outside the ball (``uses_ball_sampler``).

    Single draws (``size=None``, one footpoint, unrestricted) draw the same laws one proposal at a
    time with Python floats (``privacy.single_draws``, ``spd_sampler.spd_laplace_single_sampler``)
    (the same law, another stream of random numbers than the batched path for the same seed).
    ``sample`` keeps nothing between calls: each checks its footpoint. Many single draws at one
    footpoint (audits, simulations) bind it once, ``law.at(η).sample(rng=...)``, which checks and
    decomposes ``η`` once. A hidden cache of the last footpoint would make a repeated footpoint
    faster, so the running time of a law reused across private footpoints would tell whether one
    repeats the last bit for bit; binding is explicit instead.
    """

    manifold: Manifold
    sigma: float
    restrict_to: tuple[Any, float] | None = None

    def __post_init__(self) -> None:
        check_positive(self.sigma, "sigma")
        if self.restrict_to is None and not self.integrable:
            raise ValueError(
                f"the unrestricted Laplace law with sigma={self.sigma!r} is not integrable on {self.manifold!r} "
                f"(needs sigma < {self.sigma_limit:.6g}); pass restrict_to=(center, radius)"
            )
        if self.restrict_to is not None:
            center, radius = self.restrict_to
            check_positive(radius, "restrict_to radius")
            object.__setattr__(self, "restrict_to", (self.manifold.validate_point(center, "restrict_to center"), float(radius)))

    @property
    def sigma_limit(self) -> float:
        return self.manifold.laplace_sigma_limit

    def check_samplable(self) -> None:
        """Raise ``ValueError`` (public parameters only) where the space's exact sampler would
        refuse at draw time (affine-invariant SPD: its public pilot acceptance < 1e-3): the release
        path calls this while calibrating, before any accountant is charged; ``radius="auto"``
        checks every candidate."""
        rho_max = np.inf if self.restrict_to is None else 2.0 * self.restrict_to[1]
        self.manifold.laplace_sampler.check_samplable(self.manifold, self.sigma, rho_max)

    @property
    def integrable(self) -> bool:
        return self.sigma < self.sigma_limit

    def sample(self, footpoint: ArrayLike, size: Size = None, *, rng: RngLike = None) -> Array:
        """Exact draws, shape ``size + point_shape``; or one draw per footpoint of a batch."""
        if size is None and self.restrict_to is None:  # single draws: the short path
            frame = self._footpoint_frame(footpoint)
            if frame.single:
                return self._single_draw(frame, as_generator(rng))[0]
        return self.sample_with_stats(footpoint, size=size, rng=rng)[0]

    def sample_with_stats(self, footpoint: ArrayLike, size: Size = None, *,
                          rng: RngLike = None) -> tuple[Array, float | None]:
        """``(draws, acceptance)``: the fraction of proposals that were accepted overall (a single
        draw: one over its number of proposals).

        Unrestricted, the acceptance depends only on ``σ`` and the manifold; restricted, it
        depends on where ``η`` sits in the ball, so it is not a private quantity.
        """
        rng = as_generator(rng)
        m = self.manifold
        if size is None and self.restrict_to is None:
            frame = self._footpoint_frame(footpoint)
            if frame.single:
                return self._single_draw(frame, rng)
            eta = frame.eta
        else:
            eta = m.validate_point(footpoint, "footpoint")
        batch = m.batch_shape(eta)
        if batch:
            # one draw per footpoint (simulations): the unrestricted law only
            if size is not None or self.restrict_to is not None:
                raise ValueError("a batch of footpoints takes no size and no restriction")
            flat = eta.reshape((-1,) + tuple(m.point_shape))
            x, acceptance = self._draw(flat, flat.shape[0], rng, np.inf)
            return x.reshape(eta.shape), acceptance
        shape = _size_tuple(size)
        n = int(np.prod(shape)) if shape else 1
        if self.restrict_to is None:
            x, acceptance = self._draw(eta, n, rng, np.inf)
            return x.reshape(shape + tuple(m.point_shape)), acceptance
        center, radius = self.restrict_to
        offset = float(m.dist(center, eta))
        if offset > radius * (1 + 1e-9):
            raise ValueError("footpoint must lie in the restriction ball restrict_to")
        if self.uses_ball_sampler:
            reach = min(radius + offset, 2.0 * radius, float(m.radial_range[1]))
            x, _ = _ball_draw(m, eta, center, radius, np.array([0.0, reach]), np.array([0.0, reach]), self.sigma, n, rng)
            return x.reshape(shape + tuple(m.point_shape)), None
        # B_r(center) ⊂ B_2r(η) for every footpoint in the ball: a public truncation, so the
        # proposal law's cost does not depend on η
        draws = np.empty((n,) + tuple(m.point_shape), dtype=m.dtype)
        per_draw = self.restricted_proposals()
        group = max(1, RESTRICTED_CHUNK // per_draw)
        inner: list[float]
        inner, found = [], np.zeros(n, bool)
        for start in range(0, n, group):
            k = min(group, n - start)
            x, inner_acceptance = self._draw(eta, k * per_draw, rng, 2.0 * radius)
            inner.append(inner_acceptance)
            ok = (np.asarray(m.dist(center, x)) <= radius).reshape(k, per_draw)
            first = np.argmax(ok, axis=1)  # the first accepted proposal of each draw's fixed block
            draws[start:start + k] = x.reshape((k, per_draw) + tuple(m.point_shape))[np.arange(k), first]
            found[start:start + k] = ok[np.arange(k), first]
        if not found.all():
            raise RuntimeError(f"the restricted Laplace sampler on {m!r} (sigma={self.sigma:.4g}, radius={radius:g}) "
                               f"found no proposal inside the ball among its fixed {per_draw}; nothing was released")
        return draws.reshape(shape + tuple(m.point_shape)), None

    def __getstate__(self) -> dict[str, Any]:
        """The law's fields only: the kept frame and sampler are caches (and hold closures)."""
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_kept_")}

    def _footpoint_frame(self, footpoint: ArrayLike) -> _Frame:
        """The validated footpoint and what single draws at it use (a ``_Frame``)."""
        eta = self.manifold.validate_point(footpoint, "footpoint")
        if eta.ndim > len(self.manifold.point_shape):
            return _Frame(eta, False, None)
        return _Frame(eta, True, self._footpoint_constants(eta))

    def at(self, footpoint: ArrayLike) -> BoundLaplace:
        """The law at one footpoint, checked and decomposed once: ``.sample(rng=...)`` draws one
        point (the unrestricted law), as ``sample(footpoint)`` does, without re-checking ``η``.

        Raises
        ------
        ValueError
            If the footpoint is not one point of the manifold, or the law is restricted."""
        if self.restrict_to is not None:
            raise ValueError("at() binds the unrestricted law; a restricted law draws with sample(footpoint, ...)")
        frame = self._footpoint_frame(footpoint)
        if not frame.single:
            raise ValueError(f"at() binds one footpoint of shape {self.manifold.point_shape}, got a batch")
        return BoundLaplace(self, frame)

    def _footpoint_constants(self, eta: Array) -> Any:
        """Per footpoint, what the space's sampler reuses for single draws (``footpoint_constants``:
        ``η^½`` on affine-invariant SPD, a basis of ``T_η`` or the point as floats elsewhere)."""
        return self.manifold.laplace_sampler.footpoint_constants(self.manifold, eta)

    def _single_sampler(self) -> Any:
        """The single-draw sampler of this law (public parameters only), built once and kept."""
        sampler = self.__dict__.get("_kept_sampler")
        if sampler is None:
            sampler = self.manifold.laplace_sampler.single_sampler(self.manifold, self.sigma)
            object.__setattr__(self, "_kept_sampler", sampler)  # a cache: the law's fields are untouched
        return sampler

    def _single_draw(self, frame: _Frame, rng: np.random.Generator) -> tuple[Array, float]:
        """One unrestricted draw at a single footpoint, ``(x, acceptance)``: the laws of ``_draw``
        with Python floats and one proposal at a time (``laplace_radius_single_sampler``,
        ``spd_laplace_single_sampler``); the acceptance is ``1/proposals``."""
        m, sampler = self.manifold, self._single_sampler()
        x, proposals = m.laplace_sampler.single_draw(m, sampler, frame.eta, frame.constants, rng)
        return x, 1.0 / proposals

    @property
    def uses_ball_sampler(self) -> bool:
        """Whether restricted draws come from ``_ball_draw`` (exact, no proposal outside the ball)
        instead of the fixed-work sampler below: where the latter's public acceptance estimate is
        below ``FIXED_WORK_MINIMUM`` — in high dimension, where from a footpoint on the boundary
        almost every direction leaves the ball — and the space allows it. A public decision; the
        ball sampler's running time then depends on the footpoint (docs/security.md)."""
        return bool(self.restrict_to is not None and ball_sampler_applies(self.manifold)
                    and self.restricted_acceptance() < FIXED_WORK_MINIMUM)

    def restricted_proposals(self) -> int:
        """The fixed, public number of proposals spent on every restricted draw.

        Rejection sampling with a geometric number of proposals runs for a time that depends on
        where the footpoint sits in the ball — a timing channel. Instead every draw evaluates the
        same ``N`` proposals from the law truncated at ``2r`` around the footpoint and returns the
        first inside the ball: conditioned on one being inside, that is an exact draw. ``N`` is
        chosen so that, at the public acceptance estimate halved (``restricted_acceptance`` is
        taken at the worst footpoint, a point on the boundary), all ``N`` miss with probability
        ≤ 2^-45; then a ``RuntimeError`` is raised (an event of probability ≤ 2^-45 whose
        occurrence could depend on the data: a δ of that size, stated in docs/security.md)."""
        rate = 0.5 * self.restricted_acceptance()
        return int(np.ceil(RESTRICTED_FAILURE_LOG / -np.log1p(-min(rate, 0.5))))

    def restricted_acceptance(self, trials: int = 20_000) -> float:
        """Public estimate of the restricted sampler's acceptance at its worst footpoint, a point on
        the ball's boundary (a fixed public point, a fixed internal seed): depends on ``σ``, the
        manifold and the ball only. Used to refuse an unsamplable law before any data are read."""
        center, radius = cast("tuple[Any, float]", self.restrict_to)  # only restricted laws ask
        key = (self.sigma, radius, np.asarray(center).tobytes(), trials)
        cached = _ACCEPTANCE_CACHE.get((self.manifold, key))
        if cached is not None:
            return cached
        m, rng = self.manifold, np.random.default_rng(20_211)
        edge = m.exp(center, radius * m.random_unit_tangent(center, rng=rng))
        rate = m.laplace_sampler.restricted_acceptance(m, self.sigma, center, radius, edge, trials, rng)
        _ACCEPTANCE_CACHE[(self.manifold, key)] = rate
        return rate

    def check_restricted_feasible(self, minimum: float = 1e-3) -> None:
        """Raise ``ValueError`` (public parameters only) when the restricted law cannot be sampled
        in reasonable time: in high dimension with ``dσ`` above the radius the law piles up on the
        far side of the ball and rejection from the unrestricted law almost never lands inside."""
        rate = self.restricted_acceptance()
        if rate < minimum and not self.uses_ball_sampler:
            raise ValueError(
                f"the Laplace law restricted to a ball of radius {cast('tuple[Any, float]', self.restrict_to)[1]:g} on "
                f"{self.manifold!r} at sigma={self.sigma:.4g} accepts about {rate:.1e} of its proposals: the noise is far "
                "larger than the ball (the release would be mostly noise); use a larger epsilon or n, or a larger radius")

    def _draw(self, eta: Array, n: int, rng: np.random.Generator, rho_max: float) -> tuple[Array, float]:
        return self.manifold.laplace_sampler.draw(self.manifold, eta, self.sigma, n, rng, rho_max)


@dataclass(frozen=True)
class KNormGradient:
    """K-norm gradient mechanism (Soto, Bharath, Reimherr, Slavković 2022, Thm 1).

    Density on ``B_r(m0)``: ``∝ exp(−‖∇F(x; D)‖_x / σ)`` with ``F(x) = (1/2n) Σ ρ²(x, x_i)``.
    ε-DP with ``σ = 2Δ_KNG/ε`` where ``Δ_KNG ≥ sup_x ‖∇F(x; D) − ∇F(x; D')‖`` (2022 Thm 2;
    ``frechet_mean_sensitivity(kind="kng")``). Assumes the records lie in ``B_r(m0)``,
    ``r < r*``.

    Exact sampler (docs/theory.md §4): 2022 Lemma 1 gives ``‖∇F(x)‖ ≥ h ρ(x̄, x)`` on the ball, so
    propose from the Riemannian Laplace law at ``μ`` (the computed mean) with scale ``σ/h``
    restricted to the ball, and accept with
    ``exp(−(‖∇F(x)‖ − h ρ(μ, x) + h e)/σ) ≤ 1``, where ``e = ‖∇F(μ)‖/h ≥ ρ(μ, x̄)`` absorbs the
    optimisation error. The accepted law is exactly the KNG density, whatever ``μ``. A ratio
    above 1 raises: the envelope would be broken. On flat spaces KNG is the restricted Laplace.

    On spaces of constant curvature (sphere, hyperbolic; ``ball_sampler_applies``) the proposal is
    ``∝ exp(−G(ρ(μ, x))/σ)`` restricted to the ball and drawn by the cap sampler ``_ball_draw``
    (no proposal falls outside, so the acceptance does not decay with the dimension), with
    ``G = hρ`` on hyperbolic space and the sharper data-adaptive ``G`` of ``_radial_envelope`` on the
    sphere; Kendall shapes keep the radial envelope with rejection outside the ball, affine-invariant
    SPD the Lemma 1 proposal.
    """

    manifold: Manifold
    sigma: float
    center: ArrayLike  # validated into a point of ``manifold`` at construction
    radius: float
    h: float = field(init=False)

    def __post_init__(self) -> None:
        check_positive(self.sigma, "sigma")
        object.__setattr__(self, "center", self.manifold.validate_point(self.center, "center"))
        object.__setattr__(self, "h", hessian_lower_bound(self.radius, self.manifold.curvature_bounds[1]))

    @property
    def uses_radial_envelope(self) -> bool:
        """Whether draws come from the radial envelope (positively curved radial spaces) rather than
        the Lemma 1 Laplace proposal."""
        return bool(self.manifold.radial and self.manifold.curvature_bounds[1] > 0)

    def log_density(self, x: ArrayLike, X: ArrayLike) -> FloatArray:
        """Unnormalised log density ``−‖∇F(x; X)‖/σ`` (``x`` may be a batch)."""
        m = self.manifold
        return -m.norm(x, riemannian_gradient(m, x, X)) / self.sigma

    def sample(self, X: Any, mean: ArrayLike, size: Size = None, *, rng: RngLike = None) -> Array:
        return self.sample_with_stats(X, mean, size=size, rng=rng)[0]

    def sample_with_stats(self, X: Any, mean: ArrayLike, size: Size = None, *,
                          rng: RngLike = None) -> tuple[Array, float]:
        """``(draws, acceptance)``. The acceptance depends on the data: it is not private.

        Public caps: at most 10⁴ rounds and ``10⁵ + 10⁴·n`` proposals for ``n`` draws. Records
        outside ``B_r(center)`` break the premise of Lemma 1 and can make the acceptance vanish;
        then a ``RuntimeError`` is raised instead of looping for ever."""
        rng = as_generator(rng)
        m = self.manifold
        mu = m.validate_point(mean, "mean")
        shape = _size_tuple(size)
        n = int(np.prod(shape)) if shape else 1
        # Lemma 1 needs the records in the ball (the release clips them there first, and says so:
        # no pass to check then); without it the acceptance can vanish. The slack absorbs the
        # rounding of clip_to_ball.
        clipped = isinstance(X, PreparedRecords) and X.in_ball(self.center, self.radius)
        if not clipped and np.any(np.asarray(m.dist(self.center, X)) > self.radius * (1 + 1e-6) + 1e-12):
            raise ValueError(f"KNG needs every record in B_r(center), r = {self.radius!r} (2022 Lemma 1): clip them first")
        e = float(m.norm(mu, riemannian_gradient(m, mu, X))) / self.h
        ball = ball_sampler_applies(m)
        envelope: Any = None  # (grid, G) where the proposal is radial: _radial_envelope gives one when κmax > 0
        if ball or self.uses_radial_envelope:
            # G(ρ) ≤ ‖∇F(x)‖ at ρ = ρ(x̄, x), slope ≤ 1: the radial envelope, or Lemma 1's hρ
            envelope = self._radial_envelope(X, mu, e) if self.uses_radial_envelope else self._linear_envelope(mu)
            # replacing ρ(x̄, x) by ρ(μ, x) ≤ ρ(x̄, x) + e moves G by at most (its largest slope)·e
            slack = e * float(np.max(np.diff(envelope[1]) / np.diff(envelope[0])))
        else:
            proposal = RiemannianLaplace(m, self.sigma / self.h, restrict_to=(self.center, self.radius))
            slack = self.h * e
        max_rounds, budget = 10_000, 100_000 + 10_000 * n
        # ∇F at a batch of proposals costs (batch × records) memory: keep it near 4M entries
        max_batch = max(8, min(10_000, 4_000_000 // max(len(X), 1)))
        # and each proposal costs a pass over the records: rounds start below 8 proposals when n is large (public)
        min_batch = max(1, min(8, 2**16 // max(len(X), 1)))
        out: list[Array]
        proposed: float
        out, proposed, have, rate, last = [], 0, 0, 0.5, max(8, n)
        for _ in range(max_rounds):
            if have >= n or proposed >= budget:
                break
            # grow the batch at most 2× per round: a first batch that accepts nothing must not make
            # the next one (batch × records gradient evaluations) huge
            batch = int(min(max(min_batch, 1.2 * (n - have) / rate), 2 * last, max_batch, budget - proposed))
            last = batch
            if ball:  # every proposal inside the ball: the acceptance does not decay with the dimension
                grid, G = envelope
                y, _ = _ball_draw(m, mu, self.center, self.radius, grid, G, self.sigma, batch, rng)
                lower = np.interp(m.dist(mu, y), grid, G)
            elif self.uses_radial_envelope:
                grid, G = envelope
                rho, _ = sample_radius_concave_volume(m, grid, G, self.sigma, batch, rng)
                y = m.exp(mu, m.random_unit_tangent(mu, size=batch, rng=rng) * m._expand(rho))
                y = y[m.dist(self.center, y) <= self.radius]
                lower = np.interp(m.dist(mu, y), grid, G)
            else:
                y = proposal.sample(mu, size=batch, rng=rng)
                lower = self.h * m.dist(mu, y)
            proposed += batch
            if len(y) > 0:
                grad = m.norm(y, riemannian_gradient(m, y, X))
                log_ratio = -(grad - lower + slack) / self.sigma
                if np.any(log_ratio > 1e-9 * (1.0 + np.abs(grad) / self.sigma)):
                    raise RuntimeError("KNG envelope violated: ‖∇F(x)‖ < h·ρ(x̄, x) somewhere in the ball")
                keep = np.log(rng.uniform(size=len(y))) < log_ratio
                out.append(y[keep])
                have += int(keep.sum())
            rate = max(have / proposed, 1e-3)
        if have < n:
            raise RuntimeError(
                f"KNG sampler on {m!r} (sigma={self.sigma!r}, radius={self.radius!r}, {n} draws) made no progress "
                f"within {max_rounds} rounds or {budget} proposals: are the records in B_r(center)?"
            )
        draws = np.concatenate(out)[:n]
        return draws.reshape(shape + tuple(m.point_shape)), have / proposed

    def _reach(self, mu: Array) -> float:
        m = self.manifold
        return min(self.radius + float(m.dist(self.center, mu)), 2 * self.radius, float(m.radial_range[1]))

    def _linear_envelope(self, mu: Array) -> tuple[FloatArray, FloatArray]:
        """Lemma 1's ``G(ρ) = hρ`` on ``[0, reach]``."""
        grid = np.array([0.0, self._reach(mu)])
        return grid, self.h * grid

    def _radial_envelope(self, X: Any, mu: Array, e: float, cells: int = 400,
                         levels: int = KNG_ENVELOPE_LEVELS) -> tuple[FloatArray, FloatArray] | None:
        """A data-dependent lower bound ``G(ρ) ≤ ‖∇F(x)‖`` at ``ρ = ρ(x̄, x)``, tighter than ``hρ``.

        Along the unit geodesic from ``x̄``, ``d²F/dt² ≥ h_D(t) = mean_i f(min(t + a_i, 2r))`` with
        ``f(u) = u√κ cot(u√κ)`` (Hessian comparison, ``κ = κmax``) and ``a_i = ρ(μ, x_i) + e ≥
        ρ(x̄, x_i)``; so ``‖∇F(x)‖ ≥ G_D(ρ) = ∫_0^ρ h_D``. We tabulate a lower Riemann sum
        (``h_D`` decreases), linear between grid points (``G_D`` is concave). The proposal is
        ``∝ exp(−G/σ)`` around ``μ``; ``G`` has slope ≤ 1, so using ``ρ(μ, x)`` for ``ρ(x̄, x)``
        costs at most ``e``, which the acceptance ratio adds back. Only efficiency depends on the
        data: the accepted law is exactly KNG's. Needs ``κmax > 0`` and a concave ``log J``.

        On a space of constant curvature (the sphere) the bound is sharpened: along ``γ'`` the
        Hessian of ``½ρ²(·, x_i)`` is exactly ``cos²φ + sin²φ·f(ρ_i)``, ``φ`` the angle between ``γ'``
        and the direction to ``x_i``, and the law of sines in the triangle ``(x̄, γ(t), x_i)`` gives
        ``sin φ ≤ sin(√κ a_i)/sin(√κ ρ_i)``; so the Hessian is ``≥ 1 − sin²(√κ a_i)·k(√κ ρ_i)`` with
        ``k(u) = (1 − u cot u)/sin²u`` increasing on ``(0, π/2)``, hence ``≥`` its value at
        ``ρ_i = min(t + a_i, 2r)``. The old bound took the worst angle and the worst distance at
        once; this one keeps ``h_D`` near ``1 − a²/3`` in high dimension, where directions are
        almost orthogonal, instead of ``1 − (t + a)²/3``.

        Both bounds hold for any ``a_i ≥ ρ(x̄, x_i)``, so above ``levels`` records each ``a_i`` is
        rounded up to one of ``levels`` levels and the table is summed once per level, weighted by
        its count of records (``_pooled_distances``; proof in docs/theory.md §4): the cost is one
        pass over the records plus ``levels × cells`` evaluations, whatever ``n``."""
        m = self.manifold
        kappa = m.curvature_bounds[1]
        if kappa <= 0:
            return None
        constant = ball_sampler_applies(m)
        grid = np.linspace(0.0, self._reach(mu), cells + 1)
        a = np.asarray(m.dist(mu, X), float).ravel()
        a += e
        records = a.size
        a, counts = _pooled_distances(a, levels)
        if counts is not None:
            # many records, so σ is far below grid[1]: the radius sampler halves [0, grid[1]] (its
            # log J tangent is off by ∞ at 0) until the piece is negligible, dozens of rounds;
            # points σ·2^-k, k = 30…0, make that piece negligible from the start (those below
            # r/cells ≤ grid[1]: how many is public)
            fine = self.sigma * np.exp2(-np.arange(30.0, -1.0, -1.0))
            grid = np.concatenate([[0.0], fine[fine < min(self.radius / cells, grid[1])], grid[1:]])
        # the len(grid) × len(a) table of f, one block of columns at a time: bounded memory at any n
        total = np.zeros(grid.size)
        block = max(1, 2**13 // grid.size) if counts is None else a.size  # ~8k entries per block of records
        for start in range(0, a.size, block):
            u = np.minimum(np.add.outer(grid, a[start:start + block]), 2 * self.radius)
            u *= np.sqrt(kappa)
            with np.errstate(invalid="ignore", divide="ignore"):
                f = u / np.tan(u)
            f[u <= 1e-8] = 1.0  # u cot u → 1 at 0
            if constant:  # the angle to x_i is bounded too (law of sines): 1 − sin²(√κ a_i)·k(u)
                s2 = np.sin(np.minimum(np.sqrt(kappa) * a[start:start + block], np.pi / 2)) ** 2
                f = np.maximum(f, 1.0 - s2 * _k_upper(u))
            total += f.sum(axis=1) if counts is None else f @ counts[start:start + block]
        h_right = total[1:] / records
        G = np.concatenate([[0.0], np.cumsum(h_right * np.diff(grid))])
        return grid, G

    def sample_mcmc(self, X: Any, start: ArrayLike, n_steps: int, step_size: float, size: Size = None, *,
                    rng: RngLike = None) -> tuple[Array, float]:
        """Metropolis–Hastings draws of the same law: a cross-check, **approximate**, and at
        best approximately DP (docs/theory.md §7). ``start`` must not depend on the data in a real release."""
        m = self.manifold
        shape = _size_tuple(size)
        n = int(np.prod(shape)) if shape else 1
        start = np.broadcast_to(m.validate_point(start, "start"), (n,) + tuple(m.point_shape))
        inside: Callable[[Array], Any] = lambda y: m.dist(self.center, y) <= self.radius
        x, acc = metropolis_hastings(m, lambda y: self.log_density(y, X), start, n_steps, step_size, rng=rng, inside=inside)
        return x.reshape(shape + tuple(m.point_shape)), float(np.mean(acc))


def _pooled_distances(a: FloatArray, levels: int) -> tuple[FloatArray, FloatArray | None]:
    """``(a, None)`` for at most ``levels`` values; otherwise ``(L, c)``: ``levels`` values ``L``
    evenly spaced from ``min a`` to ``max a`` (the last one ``max a`` itself) and the number
    ``c_j`` of the ``a_i`` placed at ``L_j``: the level just above ``a_i``, or ``max a`` where
    rounding put that level below ``a_i``. Every ``a_i`` is thus replaced by a level ``≥ a_i``,
    checked by a float comparison; the work is the same for every ``a`` of a given size."""
    if a.size <= levels:
        return a, None
    low, high = float(a.min()), float(a.max())
    grid = np.linspace(low, high, levels)
    grid[-1] = high
    with np.errstate(invalid="ignore", divide="ignore"):
        position = np.ceil((a - low) / ((high - low) / (levels - 1)))
    index = np.clip(np.nan_to_num(position, nan=levels - 1), 0, levels - 1).astype(np.intp)
    # rounding may leave a_i a hair above its level: such a record goes to the top level, max a
    index = np.where(grid[index] >= a, index, levels - 1)
    return grid, np.bincount(index, minlength=levels).astype(float)


def _k_upper(u: FloatArray) -> FloatArray:
    """An upper bound of ``k(u) = (1 − u cot u)/sin²u`` on ``[0, π/2]`` (exact to rounding above
    ``u = 0.01``; below, ``1/3 + 0.14u²`` ≥ its series ``1/3 + 2u²/15 + O(u⁴)``)."""
    u = np.asarray(u, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        exact = (1.0 - u / np.tan(u)) / np.sin(u) ** 2
    return np.where(u < 0.01, 1.0 / 3.0 + 0.14 * u * u, exact)


@dataclass(frozen=True)
class TangentGaussian:
    """Tangent Gaussian mechanism (Utpala, Vepakomma, Miolane 2023, Thm 4) on log-Euclidean SPD
    (and Euclidean) data: ``Expm(invvecd(vecd(Logm η) + N(0, σ² I_d)))``.

    (ε, δ)-DP when ``σ`` is calibrated to ``Δ_LE = 2r/n`` (2023 Thm 3) by
    ``calibration.analytic_gaussian_sigma`` (Balle & Wang 2018) or the classical bound (ε < 1).
    Utility: ``ρ²_LE(η, x̃) ~ σ² χ²_d`` exactly.
    """

    manifold: Manifold
    sigma: float

    def __post_init__(self) -> None:
        check_positive(self.sigma, "sigma")
        if not self.manifold.flat_chart:
            raise ValueError(f"the tangent Gaussian mechanism needs a manifold with a flat chart (log-Euclidean SPD, "
                             f"Euclidean), got {self.manifold!r}")

    def sample(self, footpoint: ArrayLike, size: Size = None, *, rng: RngLike = None) -> Array:
        m = self.manifold
        z = m.to_chart(m.validate_point(footpoint, "footpoint"))
        noise = as_generator(rng).normal(0.0, self.sigma, size=_size_tuple(size) + (m.dim,))
        return m.from_chart(z + noise)


AMBIENT_NOISES = ("l2_laplace", "gaussian", "coordinate_laplace")


@dataclass(frozen=True)
class AmbientNoise:
    """Euclidean noise added in the ambient coordinates of the embedding (the papers' baselines).

    Coordinates: the manifold's ``to_ambient`` (the sphere's ``R^(d+1)``; SPD through ``vecd``,
    isometric to Frobenius; Euclidean as is). With ``Δ_E`` the ℓ2 sensitivity there:
    ``"l2_laplace"``: density ``∝ exp(−‖z‖/σ)`` (K-norm, 2021 App. A.4), ε-DP with ``σ = Δ_E/ε``;
    ``"coordinate_laplace"``: iid Laplace of scale ``σ``, ε-DP with ``σ = √D Δ_E/ε``
    (ℓ1 sensitivity ``≤ √D Δ_E``); ``"gaussian"``: ``N(0, σ²I)``, (ε, δ)-DP by the analytic
    calibration. ``project=True`` maps the output back onto the manifold (post-processing):
    normalise on the sphere; symmetrise and floor the eigenvalues at ``floor`` on SPD.
    """

    manifold: Manifold
    kind: str
    sigma: float
    project: bool = True
    floor: float = 1e-12

    def __post_init__(self) -> None:
        check_positive(self.sigma, "sigma")
        if self.kind not in AMBIENT_NOISES:
            raise ValueError(f"kind must be one of {AMBIENT_NOISES}, got {self.kind!r}")
        if self.manifold.ambient_dim is None:
            raise ValueError(f"no ambient embedding is defined for {self.manifold!r}")

    @property
    def ambient_dim(self) -> int:
        return cast(int, self.manifold.ambient_dim)  # not None: checked at construction

    def to_ambient(self, x: ArrayLike) -> FloatArray:
        return self.manifold.to_ambient(x)

    def from_ambient(self, z: ArrayLike) -> Array:
        """Back onto the manifold (``project=True``), else the ambient vector itself."""
        return self.manifold.from_ambient(z, self.floor) if self.project else np.asarray(z, float)

    def noise(self, size: Size, rng: RngLike) -> FloatArray:
        rng = as_generator(rng)
        D = self.ambient_dim
        shape = _size_tuple(size) + (D,)
        if self.kind == "gaussian":
            return rng.normal(0.0, self.sigma, size=shape)
        if self.kind == "coordinate_laplace":
            return rng.laplace(0.0, self.sigma, size=shape)
        g = rng.standard_normal(shape)
        g /= np.linalg.norm(g, axis=-1, keepdims=True)
        return g * self.sigma * rng.gamma(D, 1.0, size=shape[:-1] + (1,))

    def sample(self, ambient_point: ArrayLike, size: Size = None, *, rng: RngLike = None) -> Array:
        """Draws around an ambient point (shape ``(D,)``), returned in the manifold's layout."""
        z = np.asarray(ambient_point, float)
        return self.from_ambient(z + self.noise(size, rng))


@dataclass(frozen=True)
class RiemannianGaussian:
    """Riemannian Gaussian law: density ``∝ exp(−ρ²(η, x)/(2σ²))`` w.r.t. the Riemannian volume,
    footpoint ``η`` (Jiang, Chang, Liu, Ding, Kong & Jiang 2023, NeurIPS, "Gaussian Differential
    Privacy on Riemannian Manifolds"). Integrable on every space here (the tail is Gaussian, the
    volume grows at most exponentially).

    Privacy (``measurements.riemannian_gaussian``): on a homogeneous space the normalising constant
    does not depend on ``η``, so the privacy loss is ``(ρ²(η', y) − ρ²(η, y))/(2σ²)``; its profile
    is computed by ``privacy.gdp``.

    Exact sampler. Radial spaces: ``ρ`` from ``e^(−ρ²/(2σ²)) J(ρ)`` (log-concave: the envelope
    sampler of ``privacy.samplers``, acceptance ≥ 0.46 in any dimension), a uniform unit tangent
    direction, ``exp_η``. Affine-invariant SPD: the eigenvalue construction of Said et al. 2017
    (``sample_spd_gaussian_log_eigen``) at ``I``, moved to ``η`` by ``X ↦ η^½ X η^½``.
    """

    manifold: Manifold
    sigma: float

    def __post_init__(self) -> None:
        check_positive(self.sigma, "sigma")
        m = self.manifold
        if not m.laplace_sampler.gaussian:
            raise ValueError(f"no exact Riemannian Gaussian sampler is known for {m!r}")

    def check_samplable(self) -> None:
        """Raise ``ValueError`` (public parameters only) where the exact sampler would be hopeless
        (affine-invariant SPD at a very large ``σ``)."""
        self.manifold.laplace_sampler.check_gaussian(self.manifold, self.sigma)

    def sample(self, footpoint: ArrayLike, size: Size = None, *, rng: RngLike = None) -> Array:
        """Exact draws, shape ``size + point_shape``."""
        rng = as_generator(rng)
        m = self.manifold
        eta = m.validate_point(footpoint, "footpoint")
        shape = _size_tuple(size)
        n = int(np.prod(shape)) if shape else 1
        x = m.laplace_sampler.gaussian_draw(m, eta, self.sigma, n, rng)
        return x.reshape(shape + tuple(m.point_shape))


def is_hadamard(manifold: Manifold) -> bool:
    """Whether ``manifold`` is a Hadamard manifold (complete, simply connected, curvature ≤ 0),
    read off its declared curvature and injectivity radius: there ``log_b`` is 1-Lipschitz."""
    return bool(manifold.curvature_bounds[1] <= 0 and np.isinf(manifold.injectivity_radius))


WRAPPED_KINDS = ("laplace", "gaussian")


@dataclass(frozen=True)
class WrappedNoise:
    """Exponential-wrapped noise at a public base point ``b``: ``exp_b(log_b(η) + Z)``, ``Z``
    isotropic in ``(T_b M, g_b)`` (docs/gaussian_family.md).

    ``"laplace"``: the ℓ2 K-norm law ``∝ exp(−‖z‖_b/σ)`` (radius ``Gamma(d, σ)``), ε-DP with
    ``σ = Δ/ε``; ``"gaussian"``: ``N(0, σ² I)`` in an orthonormal basis (radius ``σ·χ_d``),
    ``(ε, δ)``-DP / ``Δ/σ``-GDP. Both need ``‖log_b η − log_b η'‖_b ≤ Δ``, which holds with the
    footpoint sensitivity ``Δ`` on a Hadamard manifold (``log_b`` is 1-Lipschitz there: ``exp_b``
    does not shrink distances, Rauch comparison). The direction comes from
    ``random_unit_tangent(b)``: no coordinates are needed.
    """

    manifold: Manifold
    kind: str
    sigma: float
    base: ArrayLike  # validated into a point of ``manifold`` at construction

    def __post_init__(self) -> None:
        check_positive(self.sigma, "sigma")
        if self.kind not in WRAPPED_KINDS:
            raise ValueError(f"kind must be one of {WRAPPED_KINDS}, got {self.kind!r}")
        if not is_hadamard(self.manifold):
            raise ValueError(f"wrapped noise needs a Hadamard manifold (curvature <= 0, infinite injectivity radius); "
                             f"{self.manifold!r} has curvature bounds {tuple(self.manifold.curvature_bounds)}")
        object.__setattr__(self, "base", self.manifold.validate_point(self.base, "base"))

    def radius(self, n: int, rng: np.random.Generator) -> FloatArray:
        d = self.manifold.dim
        if self.kind == "laplace":
            return rng.gamma(d, self.sigma, size=n)
        return self.sigma * np.sqrt(rng.chisquare(d, size=n))

    def sample(self, footpoint: ArrayLike, size: Size = None, *, rng: RngLike = None) -> Array:
        """Draws around ``footpoint``, shape ``size + point_shape``."""
        rng = as_generator(rng)
        m, b = self.manifold, self.base
        v = m.log(b, m.validate_point(footpoint, "footpoint"))
        shape = _size_tuple(size)
        n = int(np.prod(shape)) if shape else 1
        z = m.random_unit_tangent(b, size=n, rng=rng) * m._expand(self.radius(n, rng))
        return m.exp(b, v + z).reshape(shape + tuple(m.point_shape))
