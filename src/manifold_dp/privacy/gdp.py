"""Numerical privacy profiles of the Riemannian Gaussian law (docs/gaussian_family.md).

The law ``∝ exp(−ρ²(η, x)/(2σ²))`` (Riemannian volume) on a homogeneous space has a normalising
constant that does not depend on ``η``, so for footpoints ``η, η'`` at distance ``t`` the privacy
loss of an output ``y`` is ``L = (ρ²(η', y) − ρ²(η, y))/(2σ²)`` and the privacy profile (the
hockey-stick divergence) is ``δ_t(ε) = E_{y∼P_η}[(1 − e^(ε − L))_+]``. All our spaces are
symmetric spaces (the geodesic symmetry at the midpoint of ``η, η'`` swaps them), so the profile is
the same in both directions. Bounds on it, each a function of public values only:

- ``"exact"`` (flat spaces): the Gaussian mechanism's own curve (Balle & Wang 2018).
- ``"profile"`` (isotropic radial spaces: sphere, hyperbolic, Kendall): quadrature over the radius
  ``ρ = ρ(η, y)`` and the angle ``θ`` between ``log_η y`` and ``log_η η'`` (independent, ``θ`` with
  density ``∝ sin^(d−2) θ``), ``ρ(η', y)`` from the haversine form of the law of cosines of
  curvature ``κmin``, ``S(ρ') = S(ρ − t) + sn(ρ) sn(t) sin²(θ/2)``: exact on constant curvature,
  an upper bound on ``L`` on Kendall shapes by Toponogov's hinge comparison. For each ``ρ``, ``L``
  increases with ``θ``: the integrand is zero below ``θ*(ρ)`` (closed form) and smooth above it.
  Composite Gauss–Legendre on both axes, the radial axis split where ``θ*`` leaves 0 or π; the
  error is estimated by doubling both resolutions and added, with ``TRUNCATION`` for the mass
  outside the windows, on the safe side.
- ``"triangle"`` (affine-invariant SPD): the smaller of two bounds over the radius of the
  eigenvalue construction, whose density ``∝ ρ^(d−1) e^(−ρ²/2σ²) g(ρ)`` has ``1 ≤ g ≤ e^(B̄(ρ))``
  (the Jensen bound of ``spd_sampler``), and which bounds the direction's density by ``e^(B̄)``
  times the uniform one: ``ρ(η', y) ≤ ρ + t``, i.e. ``L ≤ (t² + 2tρ)/(2σ²)``, increasing in ``t``
  (the sup is at ``t = Δ``, a proof); and Toponogov's hinge comparison with ``κmin = −1/2`` over a
  uniform direction, the ``"profile"`` quadrature with that law (``_comparison_profile``).

The sup over ``t ∈ (0, Δ]`` for ``"profile"`` (a proof, docs/gaussian_family.md §3): since
``ε ≥ 0``, ``sup_t δ_t(ε) ≤ E[(1 − e^(ε − sup_t L_t))_+]``, and along the geodesic from ``η``
through ``η'`` the distance ``ρ_t = ρ(γ(t), y)`` is quasi-convex in ``t`` (no interior maximum on
``[0, Δ]``) — everywhere when ``κ ≤ 0`` (the distance to a point is convex on a Hadamard
manifold) and, when ``κ > 0``, wherever ``ρ(η, y) < π/(2√κ)`` (by the law of cosines
``cos ρ_t = A cos(t − φ)``, whose maximum in ``t`` lies where ``cos ρ_0 < 0``). There
``sup_t L_t = max(0, L_Δ)``, so the profile at ``t = Δ`` is the sup. Beyond ``π/(2√κ)`` the
triangle inequality ``ρ_t ≤ ρ + t`` bounds ``L`` by ``(Δ² + 2Δρ)/(2σ²)``, a 1-D integral over that
tail of the radius; on the sphere the smaller of that and ``_sphere_tail``, where ``sup_t ρ_t`` is
exact (law of cosines) and the expectation an upper Riemann sum. On Kendall shapes the comparison
distance of curvature ``κmin`` bounds every ``ρ_t``, and the same argument applies to it.

μ-GDP (Dong, Roth & Su 2022, Cor. 2.13: μ-GDP ⟺ ``δ(ε) ≤ δ_μ(ε)`` for all ``ε ≥ 0``): on a grid
``0 = ε_0 < … < ε_K`` both sides are monotone, so ``δ(ε_j) ≤ δ_μ(ε_(j+1))`` for every ``j``
implies the condition on ``[0, ε_K]``. ``ε_K`` is where the profile bound falls below
``GDP_TAIL``; beyond it the condition is not checked (stated in the certificate's rule): there
``δ(ε) ≤ δ(ε_K) < GDP_TAIL``, charged with the release as an additive ``δ`` part. ``gdp_mu`` refuses a grid whose
last point is not below ``GDP_TAIL``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias, cast, overload

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import betainc, betaln, log_ndtr, logsumexp

from .._typing import FloatArray
from .spd_sampler import _spd_log_bound

if TYPE_CHECKING:
    from ..manifolds.base import Manifold
    from ..manifolds.spd import SPDAffineInvariant

_Function: TypeAlias = Callable[[Any], Any]  # vectorised over float arrays

__all__ = ["TRUNCATION", "GDP_TAIL", "profile_method", "privacy_profile",
           "gaussian_delta_mu", "gdp_mu"]

TRUNCATION = 1e-15  # bound on the neglected mass outside the quadrature windows (e^−45 relative)
GDP_TAIL = 1e-12  # μ is checked for ε up to where the profile falls below this
_WINDOW = 45.0  # log-density window of the quadrature: nodes where the log density is within 45 of its max
_GL = np.polynomial.legendre.leggauss(8)


def profile_method(manifold: Manifold) -> str:
    """``"exact"`` on flat spaces (the Gaussian mechanism itself), ``"profile"`` on the other
    isotropic radial spaces (sphere, hyperbolic: exact; Kendall: a comparison bound, see below),
    ``"triangle"`` on affine-invariant SPD. A space that is not homogeneous has none
    (``ValueError``)."""
    if not manifold.homogeneous:
        raise ValueError(f"the Riemannian Gaussian calibration needs a homogeneous space, got {manifold!r}")
    lo, hi = manifold.curvature_bounds
    if (lo, hi) == (0.0, 0.0):
        return "exact"
    if manifold.radial:
        return "profile"
    method = manifold.laplace_sampler.gaussian_calibration  # the space's own sampler knows its calibration
    if method is not None:
        return method
    raise ValueError(f"no Riemannian Gaussian calibration is known for {manifold!r}")


def _composite(a: ArrayLike, b: ArrayLike, panels: int) -> tuple[FloatArray, FloatArray]:
    """Composite 8-point Gauss–Legendre nodes and weights on ``[a, b]`` (arrays broadcast)."""
    x, w = _GL
    a, b = np.asarray(a, float)[..., None], np.asarray(b, float)[..., None]
    edges = np.linspace(0.0, 1.0, panels + 1)
    u = (edges[:-1, None] + (edges[1:] - edges[:-1])[:, None] * (x + 1.0) / 2.0).ravel()
    wu = ((edges[1:] - edges[:-1])[:, None] * w / 2.0).ravel()
    return a + (b - a) * u, (b - a) * wu


def _radial_log_density(manifold: Manifold, sigma: float) -> _Function:
    """``log f(ρ)`` of the Gaussian radius on a radial space: ``log J(ρ) − ρ²/(2σ²)``."""
    return lambda r: manifold.log_volume(r) - r * r / (2.0 * sigma * sigma)


def _bulk(log_f: _Function, upper: float, sigma: float, d: int, growth: float) -> tuple[float, float]:
    """``[lo, hi]`` holding the density where it is within ``_WINDOW`` of its maximum."""
    hi = min(upper, growth * sigma * sigma + sigma * (np.sqrt(d) + 15.0))
    grid = np.linspace(0.0, hi, 4001)[1:]
    with np.errstate(all="ignore"):
        ld = np.nan_to_num(log_f(grid), nan=-np.inf)
    keep = np.nonzero(ld > ld.max() - _WINDOW)[0]
    return float(grid[max(keep[0] - 1, 0)] if keep[0] > 0 else 0.0), float(grid[min(keep[-1] + 1, grid.size - 1)])


def _radial_law(manifold: Manifold, sigma: float) -> tuple[_Function, float, float, float]:
    """``(log f, lo, hi, log Z)``: the Gaussian radius's log density, its quadrature window and
    its log normalising constant (composite Gauss–Legendre, 64 panels)."""
    log_f = _radial_log_density(manifold, sigma)
    growth = max(float(manifold.volume_growth_rate), 0.0)
    lo, hi = _bulk(log_f, float(manifold.radial_range[1]), sigma, manifold.dim, growth)
    r, w = _composite(lo, hi, 64)
    with np.errstate(all="ignore"):
        return log_f, lo, hi, float(logsumexp(log_f(r) + np.log(w)))


def _space_form(kappa: float) -> tuple[_Function, _Function, _Function]:
    """``(sn, S, S⁻¹)``: ``sn_κ``, the haversine ``S(x) = sn_κ(x/2)²`` and its inverse."""
    if kappa > 0:
        R = 1.0 / np.sqrt(kappa)
        return (lambda x: R * np.sin(x / R), lambda x: (R * np.sin(x / (2 * R))) ** 2,
                lambda v: 2 * R * np.arcsin(np.minimum(np.sqrt(np.maximum(v, 0.0)) / R, 1.0)))
    if kappa < 0:
        c = np.sqrt(-kappa)
        return (lambda x: np.sinh(c * x) / c, lambda x: (np.sinh(c * x / 2) / c) ** 2,
                lambda v: 2 * np.arcsinh(c * np.sqrt(np.maximum(v, 0.0))) / c)
    return (lambda x: x, lambda x: x * x / 4.0, lambda v: 2 * np.sqrt(np.maximum(v, 0.0)))


def _profile_once(manifold: Manifold, t: ArrayLike, sigma: float, epsilon: ArrayLike, r_panels: int,
                  a_panels: int) -> FloatArray:
    """Quadrature of ``δ_t(ε)`` at one resolution; ``t`` shape ``(T,)``, ``ε`` shape ``(E,)``;
    returns ``(T, E)``: ``_profile_parts``' quadrature plus its triangle-bounded tail."""
    quad, tail, _ = _profile_parts(manifold, t, sigma, epsilon, r_panels, a_panels)
    return quad + tail


def _profile_parts(manifold: Manifold, t: ArrayLike, sigma: float, epsilon: ArrayLike, r_panels: int,
                   a_panels: int, law: tuple[_Function, float, float, float] | None = None
                   ) -> tuple[FloatArray, FloatArray, float]:
    """``(quadrature, tail, start)``, each ``(T, E)`` but ``start``: the quadrature of ``δ_t(ε)``
    over the radii where the lemma holds (``ρ < π/(2√κ)``; all radii when ``κ ≤ 0``), the triangle
    bound over the radii from ``start`` on (``start = 0`` where the lemma does not apply at all,
    ``√κ·t ≥ π/2``). The radial axis is split at ``ρ = |2σ²ε − t²|/(2t)``, where ``θ*(ρ)`` leaves
    ``0`` or ``π`` (at ``θ = π``, ``ρ' = ρ + t``; at ``θ = 0``, ``ρ' = |ρ − t|``, in every space
    form): the inner integral is smooth on each piece. ``law``: ``(log f, lo, hi, log Z)`` of the
    radius in place of ``_radial_law``'s (an upper bound on a density, ``_comparison_profile``)."""
    d, kappa = manifold.dim, float(manifold.curvature_bounds[0])  # Toponogov: κmin's law of cosines bounds ρ'
    sn, S, S_inv = _space_form(kappa)
    log_f, lo, hi_all, log_z = _radial_law(manifold, sigma) if law is None else law
    if not np.isfinite(log_z) or (kappa < 0 and np.sqrt(-kappa) * hi_all > 700.0):
        # the radius reaches where sinh overflows float64 (hyperbolic space at a large σ): nothing certified
        return np.ones((np.size(t), np.size(epsilon))), np.zeros((np.size(t), np.size(epsilon))), np.inf
    hi = min(hi_all, np.pi / (2.0 * np.sqrt(kappa))) if kappa > 0 else hi_all  # quasi-convexity holds below
    if kappa > 0 and np.sqrt(kappa) * float(np.max(t)) >= np.pi / 2:
        hi = lo  # the lemma needs √κ·t < π/2: the triangle bound over the whole radius law instead
    start = max(lo, hi) if hi > lo else 0.0
    tail = _triangle_tail(log_f, log_z, max(lo, hi), hi_all, np.asarray(t, float), sigma, np.asarray(epsilon, float), r_panels)
    if not hi > lo:
        return np.zeros_like(tail), tail, start
    t = np.asarray(t, float)[:, None, None, None]
    eps = np.asarray(epsilon, float)[None, :, None, None]
    cut = np.clip(np.abs(2.0 * sigma * sigma * eps - t * t) / (2.0 * t), lo, hi)[..., 0]  # (T, E, 1)
    # ρ = cut ± (distance)·u²: the inner integral behaves like |ρ − cut|^(3/2) there, smooth in u
    u, wu = _composite(0.0, 1.0, r_panels)
    r1, w1 = cut - (cut - lo) * u * u, (cut - lo) * 2.0 * u * wu
    r2, w2 = cut + (hi - cut) * u * u, (hi - cut) * 2.0 * u * wu
    r = np.concatenate([r1, r2], axis=-1)[..., None]  # (T, E, R, 1)
    with np.errstate(all="ignore"):
        log_w_rho = log_f(r[..., 0]) + np.log(np.concatenate([w1, w2], axis=-1)) - log_z
    s2 = r * r + 2.0 * sigma * sigma * eps  # L > ε  ⟺  ρ' > s
    with np.errstate(all="ignore"):
        beyond = np.sqrt(s2) >= np.pi / np.sqrt(kappa) if kappa > 0 else np.zeros(s2.shape, bool)
        sin2 = (S(np.sqrt(s2)) - S(r - t)) / (sn(r) * sn(t))
    sin2 = np.clip(np.nan_to_num(sin2, nan=0.0), 0.0, 1.0)  # overflow (NaN): integrate every angle
    theta_star = np.where(beyond, np.pi, 2.0 * np.arcsin(np.sqrt(sin2)))
    # per (t, ε, ρ) row: ρ(η', y) = S⁻¹(base + scale·sin²(θ/2))
    rows = _RadialRows(S(r - t), sn(r) * sn(t), r * r, np.broadcast_to(eps, r.shape), theta_star)
    inner = _angular_integral(rows, d, sigma, a_panels, S_inv)  # (T, E, R)
    with np.errstate(all="ignore"):
        quad = np.sum(np.where(np.isfinite(log_w_rho), inner * np.exp(log_w_rho), 0.0), axis=-1)
    return cast(FloatArray, quad), tail, start


class _RadialRows(NamedTuple):
    """The ``(T, E, R, 1)`` arrays of ``_profile_parts`` that the angular integral needs per row."""

    base: FloatArray  # S(ρ − t)
    scale: FloatArray  # sn(ρ)·sn(t)
    rho_sq: FloatArray  # ρ²
    eps: FloatArray  # ε
    theta_star: FloatArray  # the angle below which the loss is at most ε


_BLOCK = 1 << 15  # quadrature nodes per block of rows: the block's arrays (256 KB each) stay in cache


def _angular_integral(rows: _RadialRows, d: int, sigma: float, a_panels: int, S_inv: _Function) -> FloatArray:
    """``∫ (1 − e^(ε − L(ρ, θ)))_+ dP(θ)`` per row, shape ``(T, E, R)``: ``θ`` with density
    ``∝ sin^(d−2) θ`` by composite Gauss–Legendre from ``max(θ*, π/2 − width)`` to ``π/2 + width``
    (``d = 1``: the two directions ``0`` and ``π``). Rows whose window is empty (``θ* ≥ π/2 + width``:
    no angle has a loss above ε) are exactly 0 and are skipped; the others are computed in blocks of
    ``_BLOCK`` nodes, each element by the same operations as on the whole ``(T, E, R, A)`` array."""
    shape = rows.theta_star.shape[:-1]
    inner = np.zeros(shape)
    if d == 1:
        lo = hi = None
        active = np.ones(shape, bool)
        nodes = 2
    else:
        width = np.pi / 2 if d == 2 else float(np.arccos(np.exp(-_WINDOW / (d - 2))))
        hi = np.full(shape, np.pi / 2 + width)
        lo = np.minimum(np.maximum(rows.theta_star[..., 0], np.pi / 2 - width), hi)
        active = lo < hi  # elsewhere every weight is 0 (log −inf): the row's integral is 0
        nodes = 8 * a_panels
    where = np.nonzero(active.ravel())[0]
    flat = [np.broadcast_to(x, shape + (1,)).reshape(-1, 1) for x in rows]
    step = max(_BLOCK // nodes, 1)
    for start in range(0, where.size, step):
        pick = where[start:start + step]
        base, scale, rho_sq, eps, theta_star = (x[pick] for x in flat)
        if lo is None or hi is None:  # two directions, θ = 0 and θ = π, each with probability ½
            th = np.broadcast_to(np.array([0.0, np.pi]), (pick.size, 2))
            lw = np.where(th >= theta_star, np.log(0.5), -np.inf)
        else:
            th, wt = _composite(lo.ravel()[pick], hi.ravel()[pick], a_panels)
            with np.errstate(divide="ignore"):
                lw = (d - 2) * np.log(np.sin(th)) + np.log(wt) - betaln(0.5, 0.5 * (d - 1))
        rho2 = S_inv(base + scale * np.sin(th / 2.0) ** 2)
        loss = (rho2 * rho2 - rho_sq) / (2.0 * sigma * sigma)
        with np.errstate(all="ignore"):
            # a loss float64 cannot evaluate (sinh overflow far out on hyperbolic space) counts as a full loss
            h = np.where(np.isfinite(loss), -np.expm1(eps - loss), 1.0)
            part = np.where(np.isfinite(lw), h * np.exp(lw), 0.0)
        inner.ravel()[pick] = np.clip(part, 0.0, None).sum(axis=-1)
    return inner


def _triangle_tail(log_f: _Function, log_z: float, a: float, b: float, t: FloatArray, sigma: float, eps: FloatArray,
                   panels: int) -> FloatArray:
    """``∫_a^b (1 − e^(ε − (t² + 2tρ)/(2σ²)))_+ f(ρ) dρ``, shape ``(T, E)``: the radii where the
    loss is bounded by the triangle inequality only (``ρ_t ≤ ρ + t``)."""
    if not b > a:
        return np.zeros((t.size, eps.size))
    r, w = _composite(a, b, 4 * panels)
    loss = (t[:, None, None] ** 2 + 2.0 * t[:, None, None] * r) / (2.0 * sigma * sigma)
    with np.errstate(all="ignore"):
        h = np.clip(-np.expm1(eps[None, :, None] - loss), 0.0, None)
        lw = log_f(r) + np.log(w) - log_z
    return cast(FloatArray, np.sum(h * np.where(np.isfinite(lw), np.exp(lw), 0.0), axis=-1))


def _log_int_exp(slope: ArrayLike, width: ArrayLike) -> FloatArray:
    """``log ∫_0^w e^(k u) du`` for slopes ``k`` (any sign, ``±inf`` allowed) and widths ``w > 0``."""
    slope, width = np.asarray(slope, float), np.asarray(width, float)
    x = slope * width
    with np.errstate(all="ignore"):
        small = np.log(width) + np.log1p(x / 2.0 + x * x / 6.0)  # |x| < 1e-4: the series, to ~x³/24
        big = np.where(x > 0, x + np.log1p(-np.exp(-x)), np.log(-np.expm1(x))) - np.log(np.abs(slope))
        return cast(FloatArray, np.where(np.abs(x) < 1e-4, small, big))


def _sphere_tail(manifold: Manifold, t: FloatArray, sigma: float, eps: FloatArray, start: float, r_panels: int = 1024,
                 a_panels: int = 1024) -> FloatArray:
    """An upper bound on ``E[(1 − e^(ε − sup_(s ≤ t) L_s))_+; ρ ≥ start]`` on the sphere of curvature
    ``κ`` (``d ≥ 2``), shape ``(T, E)``: an upper Riemann sum, with no comparison lemma and no
    triangle inequality. In units of the unit sphere, ``cos ρ_s = cos ρ cos s + sin ρ cos θ sin s =
    A cos(s − φ)``, so ``S = sup_(s ∈ [0, t]) ρ_s`` is exact: ``arccos(−A)`` where ``φ + π ∈ [0, t]``,
    else the larger end. On a cell ``[a, b] × [θ_j, θ_(j+1)]`` of ``(ρ, θ)``: ``ρ_s`` increases with
    ``θ`` (``sin ρ, sin s ≥ 0``), so take ``θ = θ_(j+1)``; ``ρ_s`` is 1-Lipschitz along the ray from
    ``η``, so ``S(ρ) ≤ S(a) + ρ − a`` and ``S(ρ) ≤ S(b) + b − ρ``, and the larger ``S² − ρ²`` these
    allow on ``[a, b]`` is ``(S(a) − a)(S(b) + b)`` (where they cross; also ``≤ diam² − a²``). The
    cell's mass: the radial part at most the integral of the exponential of a tangent line of the
    concave ``log f`` (at either end, the smaller), the angular part exact (``(1 − cos θ)/2 ∼
    Beta((d−1)/2, (d−1)/2)``), over a lower bound on the normalising constant (``log f`` lies above
    its chords). The radii outside the density's window are charged in full (tangent-line bounds)."""
    kappa = float(manifold.curvature_bounds[0])
    R, top = 1.0 / np.sqrt(kappa), np.pi / np.sqrt(kappa)
    out = np.zeros((t.size, eps.size))
    log_f, lo, hi, _ = _radial_law(manifold, sigma)
    slope: _Function = lambda r: manifold.log_volume_slope(r) - r / (sigma * sigma)
    grid = np.linspace(lo, hi, 4097)
    with np.errstate(all="ignore"):
        lg = np.nan_to_num(log_f(grid), nan=-np.inf)
        both = np.isfinite(lg[:-1]) & np.isfinite(lg[1:])  # e^(chord) from the larger end down; none from −∞
        chord = np.where(both, np.abs(lg[1:] - lg[:-1]) / np.diff(grid), 0.0)
        log_z = float(logsumexp(np.where(both, np.maximum(lg[:-1], lg[1:]) + _log_int_exp(-chord, np.diff(grid)), -np.inf)))
    a0, b0 = max(start, lo), min(top, hi)
    if not start < top:
        return out
    if not np.isfinite(log_z):
        return np.ones((t.size, eps.size))
    if not b0 > a0:  # all of [start, top] beyond the window: its mass (tangent line at start) at a full loss
        with np.errstate(all="ignore"):
            v = float(log_f(start) + _log_int_exp(slope(start), top - start) - log_z)
        return out + (1.0 if np.isnan(v) else float(np.exp(v)))
    edges = np.linspace(a0, b0, r_panels + 1)
    a, b = edges[:-1], edges[1:]
    with np.errstate(all="ignore"):
        near = log_f(a) + _log_int_exp(slope(a), b - a)  # the tangent lines of a concave function lie above it
        far = log_f(b) + _log_int_exp(-slope(b), b - a)
        log_rad = np.fmin(np.where(np.isnan(near), np.inf, near), np.where(np.isnan(far), np.inf, far)) - log_z
        # [start, a0) and (b0, top]: the mass by the tangent line at a0 and at b0, at a full loss (NaN: all of it)
        pieces = ([log_f(a0) + _log_int_exp(-slope(a0), a0 - start)] if a0 > start else []) + \
                 ([log_f(b0) + _log_int_exp(slope(b0), top - b0)] if top > b0 else [])
        outside = sum(1.0 if np.isnan(v) else float(np.exp(v - log_z)) for v in pieces)
    half = 0.5 * (manifold.dim - 1)
    th = np.linspace(0.0, np.pi, a_panels + 1)
    ang = np.diff(betainc(half, half, np.clip((1.0 - np.cos(th)) / 2.0, 0.0, 1.0)))  # exact angular masses
    x = (edges / R)[:, None]
    ca, cb = np.cos(x), np.sin(x) * np.cos(th[1:])[None, :]
    amp, phi = np.hypot(ca, cb), np.arctan2(cb, ca)
    with np.errstate(all="ignore"):
        w = (np.exp(log_rad)[:, None] * ang[None, :]).ravel()
    for i, s in enumerate(np.asarray(t, float) / R):
        low = np.where(phi + np.pi <= s + 1e-12, -amp, np.minimum(ca, ca * np.cos(s) + cb * np.sin(s)))
        # + 1e-7: arccos loses up to √(2·2⁻⁵²) ≈ 2.1e-8 near ±1
        S = np.arccos(np.clip(low, -1.0, 1.0)) + 1e-7
        m2 = np.minimum((S[:-1] - x[:-1]) * (S[1:] + x[1:]), np.pi ** 2 - x[:-1] ** 2)  # ≥ sup_s ρ_s² − ρ², unit sphere
        loss = (R * R * m2 / (2.0 * sigma * sigma)).ravel()
        keep = (w > 0.0) & (loss > float(np.min(eps)))  # the rest adds nothing at any ε asked
        loss, wk = loss[keep], w[keep]
        order = np.argsort(loss)
        loss, wk = loss[order], wk[order]
        mass = np.cumsum(wk[::-1])[::-1]  # E[1; L̄ ≥ L̄_k] and E[e^(−L̄); L̄ ≥ L̄_k], from the top
        disc = np.cumsum((wk * np.exp(-loss))[::-1])[::-1]
        j = np.searchsorted(loss, eps, side="right")
        if loss.size:
            jj = np.minimum(j, loss.size - 1)
            val = np.maximum(mass[jj] - np.exp(eps) * disc[jj], 0.0)
            # the sums' rounding: at most (n + 2)·2⁻⁵² of the mass on either side
            out[i] = np.where(j < loss.size, val + 4.0 * (loss.size + 2) * np.finfo(float).eps * mass[jj], 0.0)
        out[i] += outside
    return out


@lru_cache(maxsize=512)
def _profile_cached(manifold: Manifold, sensitivity: float, sigma: float, eps_key: tuple[float, ...]) -> FloatArray:
    eps = np.array(eps_key, float)
    # the sup over t ≤ Δ (module docstring); footpoints are never farther apart than the diameter, which on
    # the sphere and Kendall shapes is the injectivity radius (the law of cosines is periodic beyond it)
    t = np.array([min(sensitivity, float(manifold.injectivity_radius))])
    (coarse, coarse_tail, _), (fine, fine_tail, start) = (_profile_parts(manifold, t, sigma, eps, r, a)
                                                         for r, a in ((8, 4), (16, 8)))
    with np.errstate(all="ignore"):  # a NaN anywhere certifies nothing
        bound = fine + fine_tail + np.abs(fine + fine_tail - coarse - coarse_tail) + TRUNCATION
        bound = np.where(np.isnan(bound), 1.0, bound)
        lo, hi = manifold.curvature_bounds
        # the sphere: the tail by an upper Riemann sum of the exact loss, where the triangle-bounded one is not negligible
        if lo == hi > 0 and manifold.dim >= 2 and np.any(fine_tail + coarse_tail > 1e-3 * (fine + TRUNCATION)):
            exact = fine + np.abs(fine - coarse) + TRUNCATION + _sphere_tail(manifold, t, sigma, eps, start)
            bound = np.minimum(bound, np.where(np.isnan(exact), 1.0, exact))  # the smaller of two upper bounds
    return cast(FloatArray, np.minimum(np.max(bound, axis=0), 1.0))


def _triangle_profile(manifold: SPDAffineInvariant, sensitivity: float, sigma: float, eps: FloatArray) -> FloatArray:
    """``E[(1 − e^(ε − L̄(ρ)))_+]`` with ``L̄ = (Δ² + 2Δρ)/(2σ²) ≥ L`` (triangle inequality;
    increasing in ``t``, so ``t = Δ`` is the sup), over the radius law of affine-invariant SPD(k),
    bounded above by ``∫ h ρ^(d−1) e^(−ρ²/2σ² + B̄) / ∫ ρ^(d−1) e^(−ρ²/2σ²)`` (``1 ≤ g ≤ e^B̄``);
    doubling error and ``TRUNCATION`` added."""
    d, k = manifold.dim, manifold.k
    inv = 1.0 / (2.0 * sigma * sigma)
    with np.errstate(divide="ignore"):
        log_den: _Function = lambda r: (d - 1) * np.log(r) - inv * r * r
        log_num: _Function = lambda r: log_den(r) + _spd_log_bound(r, k)
    lo, hi = _bulk(log_num, np.inf, sigma, d, 0.5 * np.sqrt(k * (k * k - 1) / 3.0))
    out = []
    for panels in (16, 32):
        r, w = _composite(lo, hi, panels)
        with np.errstate(all="ignore"):
            den = logsumexp(log_den(r) + np.log(w))
            lw = log_num(r) + np.log(w) - den
            loss = (sensitivity * sensitivity + 2.0 * sensitivity * r) * inv
            h = np.clip(-np.expm1(eps[:, None] - loss[None, :]), 0.0, None)
            out.append(np.sum(np.where(np.isfinite(lw)[None, :], h * np.exp(lw)[None, :], 0.0), axis=-1))
    coarse, fine = out
    with np.errstate(all="ignore"):  # a window that left float64 gives NaN: it certifies nothing
        bound = fine + np.abs(fine - coarse) + TRUNCATION
    return np.minimum(np.where(np.isnan(bound), 1.0, bound), 1.0)


def _comparison_profile(manifold: SPDAffineInvariant, sensitivity: float, sigma: float, eps: FloatArray) -> FloatArray:
    """The profile quadrature of ``"profile"`` run on affine-invariant SPD(k) with the law of cosines of
    curvature ``κmin = −1/2`` and a uniform direction, over the same bounded radius density as
    ``_triangle_profile``. At ``I`` the output is ``exp(ρW)``, ``W`` a unit vector of ``(Sym(k), ‖·‖_F)``
    with density ``∝ G(ρW) ∈ [1, e^(B̄(ρ))]`` relative to the uniform one (``G`` the volume density of
    ``spd_sampler``), so ``E[h] ≤ ∫ ρ^(d−1) e^(−ρ²/2σ² + B̄) E_(W uniform)[h(ρW)] dρ / ∫ ρ^(d−1) e^(−ρ²/2σ²) dρ``
    for ``h ≥ 0``. Toponogov's hinge comparison (sectional curvature ``≥ −1/2``; every geodesic
    minimises) bounds ``ρ(γ(t), y)`` by the distance ``c_t`` of the hinge ``(ρ, t, angle(W, γ'))`` in the
    plane of curvature ``−1/2``, and ``c_t`` is convex in ``t`` there, so ``sup_(t ≤ Δ) L_t ≤ max(0,
    (c_Δ² − ρ²)/(2σ²))``: the profile at ``t = Δ``. Never above the triangle bound (``c_Δ ≤ ρ + Δ``)
    but for the quadrature; doubling error and ``TRUNCATION`` added."""
    d, k = manifold.dim, manifold.k
    inv = 1.0 / (2.0 * sigma * sigma)
    with np.errstate(divide="ignore"):
        log_den: _Function = lambda r: (d - 1) * np.log(r) - inv * r * r
        log_num: _Function = lambda r: log_den(r) + _spd_log_bound(r, k)
    lo, hi = _bulk(log_num, np.inf, sigma, d, 0.5 * np.sqrt(k * (k * k - 1) / 3.0))
    r, w = _composite(lo, hi, 64)
    with np.errstate(all="ignore"):
        law = (log_num, lo, hi, float(logsumexp(log_den(r) + np.log(w))))
    t = np.array([sensitivity])
    (coarse, _, _), (fine, _, _) = (_profile_parts(manifold, t, sigma, eps, r, a, law) for r, a in ((8, 4), (16, 8)))
    with np.errstate(all="ignore"):  # a window that left float64 gives NaN: it certifies nothing
        bound = (fine + np.abs(fine - coarse) + TRUNCATION)[0]
    return np.minimum(np.where(np.isnan(bound), 1.0, bound), 1.0)


@overload
def privacy_profile(manifold: Manifold, sensitivity: float, sigma: float, epsilon: float) -> float: ...
@overload
def privacy_profile(manifold: Manifold, sensitivity: float, sigma: float, epsilon: FloatArray) -> FloatArray: ...
def privacy_profile(manifold: Manifold, sensitivity: float, sigma: float, epsilon: ArrayLike) -> FloatArray | float:
    """An upper bound on ``sup_(t ≤ Δ) δ_t(ε)`` of the Riemannian Gaussian law at scale ``σ``
    (``epsilon`` a float or an array; see the module docstring for the method and its error).
    Flat spaces: the Gaussian mechanism's exact curve (Balle & Wang 2018, Thm 8)."""
    eps = np.atleast_1d(np.asarray(epsilon, float))
    method = profile_method(manifold)
    if method == "exact":
        out = gaussian_delta_mu(sensitivity / sigma, eps)
    elif method == "profile":
        out = _profile_cached(manifold, float(sensitivity), float(sigma), tuple(float(e) for e in eps))
    else:
        spd = cast("SPDAffineInvariant", manifold)  # the smaller of two upper bounds
        out = np.minimum(_triangle_profile(spd, float(sensitivity), float(sigma), eps),
                         _comparison_profile(spd, float(sensitivity), float(sigma), eps))
    return out if np.ndim(epsilon) else float(out[0])


def gaussian_delta_mu(mu: ArrayLike, epsilon: ArrayLike) -> FloatArray:
    """``δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)`` of μ-GDP (Dong, Roth & Su 2022, Cor. 2.13),
    vectorised, computed in logs."""
    mu, eps = np.asarray(mu, float), np.asarray(epsilon, float)
    first = log_ndtr(-eps / mu + mu / 2.0)
    second = eps + log_ndtr(-eps / mu - mu / 2.0)
    with np.errstate(all="ignore"):
        return np.where(second < first, np.exp(first) * -np.expm1(second - first), 0.0)


def _needed_mu(delta: FloatArray, eps: FloatArray) -> FloatArray:
    """Per entry, the smallest μ (bisection, rounded up) with ``δ_μ(ε) ≥ δ``."""
    lo, hi = np.full(delta.shape, 1e-8), np.full(delta.shape, 1e-8)
    for _ in range(200):
        short = gaussian_delta_mu(hi, eps) < delta
        if not short.any():
            break
        lo, hi = np.where(short, hi, lo), np.where(short, 2.0 * hi, hi)
    for _ in range(60):
        mid = np.sqrt(lo * hi)
        ok = gaussian_delta_mu(mid, eps) >= delta
        hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
    return hi


def gdp_mu(manifold: Manifold, sensitivity: float, sigma: float, ratio: float = 1.05, rounds: int = 8,
           tolerance: float = 0.01) -> tuple[float, float]:
    """The smallest μ such that the profile bound of ``privacy_profile`` satisfies
    ``δ(ε_j) ≤ δ_μ(ε_(j+1))`` on a grid ``0 = ε_0 < … < ε_K``: μ-GDP on ``[0, ε_K]`` (module
    docstring), ``ε_K`` where the profile bound falls below ``GDP_TAIL``. In the tail ``δ_μ`` falls like
    ``e^(−ε²/(2μ²))``, so a fixed spacing would cost a lot of μ; the grid is geometric (``ratio``)
    from ``μ/100`` and refined, at most ``rounds`` times, by halving the intervals whose condition
    needs more than ``1 + tolerance`` times the pointwise μ. The returned μ satisfies every
    interval's condition whatever the refinement reached. Returns ``(μ, ε_K)``. Flat spaces:
    ``Δ/σ`` exactly."""
    if profile_method(manifold) == "exact":
        return float(sensitivity / sigma), np.inf
    guess = sensitivity / sigma
    top = 2.0 * guess
    while gaussian_delta_mu(4.0 * guess, top) > GDP_TAIL and top < 1e4:  # generous: μ is rarely 4× Δ/σ
        top *= 1.5
    count = int(np.ceil(np.log(top / (0.01 * guess)) / np.log(ratio)))
    eps = np.concatenate([[0.0], 0.01 * guess * ratio ** np.arange(count + 1)])
    delta = privacy_profile(manifold, sensitivity, sigma, eps)
    for _ in range(rounds):
        pointwise = float(np.max(_needed_mu(np.where(delta >= GDP_TAIL, delta, 0.0), np.maximum(eps, 1e-300))))
        keep = delta[:-1] >= GDP_TAIL  # the range that is certified
        short = keep & (delta[:-1] > gaussian_delta_mu(pointwise * (1.0 + tolerance), eps[1:]))
        if not short.any():
            break
        mid = 0.5 * (eps[:-1] + eps[1:])[short]
        eps = np.concatenate([eps, mid])
        delta = np.concatenate([delta, privacy_profile(manifold, sensitivity, sigma, mid)])
        order = np.argsort(eps)
        eps, delta = eps[order], delta[order]
    if not delta[-1] < GDP_TAIL:  # beyond the grid's end the condition must hold by δ(ε) ≤ δ(ε_K) < GDP_TAIL
        raise ValueError(f"the Riemannian Gaussian's profile on {manifold!r} at sigma={sigma:.6g} does not fall below "
                         f"{GDP_TAIL:g} by epsilon={eps[-1]:.4g}, the end of its μ-GDP grid; use a larger epsilon or "
                         "a smaller radius")
    keep = delta[:-1] >= GDP_TAIL
    keep[0] = True
    mu = float(np.max(_needed_mu(delta[:-1][keep], eps[1:][keep])) * (1.0 + 1e-9))
    return mu, float(eps[1:][keep][-1])
