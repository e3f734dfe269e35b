"""Exact samplers for the radial parts of the Riemannian Laplace law (docs/theory.md §4), and a
Metropolis–Hastings sampler kept only as a cross-check.

Write a Laplace draw as ``exp_η(ρ u)``: ``u`` is uniform on the unit sphere of ``T_η M`` and
``ρ`` has density ``∝ e^(−ρ/σ) J(ρ)``. Every such radial law here is log-concave in ``ρ``
(docs/theory.md §4), so one rejection sampler with acceptance ≥ 0.46 serves all of them, in every
dimension and at every scale. The samplers depend only on the parameters they are given
(``σ``, the manifold, the truncation), and every rejection loop stops after ``MAX_ROUNDS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import betainc, betaln, logsumexp

from .._random import RngLike, as_generator
from .._typing import Array, BoolArray, FloatArray

if TYPE_CHECKING:
    from ..manifolds.base import Manifold

LogDensity: TypeAlias = Callable[[FloatArray | np.float64], FloatArray]  # a vectorised log-density (or its derivative) of ρ
ScalarOrArray: TypeAlias = Callable[[ArrayLike], FloatArray]  # the same, taking floats as well
Size: TypeAlias = int | tuple[int, ...]

__all__ = ["log_concave_envelope", "sample_log_concave", "laplace_radius_log_density",
           "sample_laplace_radius", "gaussian_radius_log_density", "sample_gaussian_radius", "sample_radius_concave_volume",
           "cap_fraction_argument", "log_cap_fraction",
           "sample_cap_offset", "metropolis_hastings"]

MAX_ROUNDS = 10_000  # public cap on rejection rounds: a broken envelope raises instead of hanging
FIXED_WORK_MINIMUM = 1e-3  # below this public acceptance the fixed-work restricted sampler gives way (privacy.mechanisms)
_STEPS = np.ldexp(1.0, np.arange(-1074, 1024))  # 2^j over the whole float64 range
_SECTION_ROUNDS, _SECTION_POINTS = 12, 33  # 32^12 = 2^60: any bracket shrinks to float spacing


def _batches(total: int, draw: Callable[[int], tuple[FloatArray, BoolArray]], accept_rate_guess: float = 0.5,
             what: str = "rejection sampler", max_rounds: int = MAX_ROUNDS) -> tuple[FloatArray, float]:
    """Fill ``total`` accepted values by at most ``max_rounds`` vectorised rejection rounds.

    ``draw(m) -> (values, accepted_mask)``. Returns ``(values, acceptance)``: accepted over
    proposed in all rounds (surplus accepted values are discarded, not miscounted). ``what``
    names the sampler and its public parameters for the error raised when the cap is hit.
    """
    out: list[FloatArray]
    out, have, proposed = [], 0, 0
    rate = accept_rate_guess
    for _ in range(max_rounds):
        if have >= total:
            break
        m = int(min(max(16, 1.2 * (total - have) / max(rate, 1e-3)), 1_000_000))
        values, ok = draw(m)
        proposed += m
        out.append(values[ok])
        have += int(ok.sum())
        rate = max(have / proposed, 1e-4)
    else:
        raise RuntimeError(f"{what}: rejection sampler made no progress in {max_rounds} rounds: its envelope is broken")
    return np.concatenate(out)[:total], have / proposed


# --- log-concave densities on an interval ---------------------------------------------------

def _crossing(pred: Callable[[FloatArray], ArrayLike], a: float, b: float) -> tuple[float, float] | None:
    """``(lo, hi) ⊂ [a, b]`` bracketing where a monotone predicate turns True, to float spacing;
    ``None`` if it never does. ``pred`` is vectorised and False at ``a``; ``b`` may be ∞.

    A scan of ``a + 2^j (b − a)`` (``a + 2^j`` when ``b = ∞``) finds the scale whatever it is
    (a mode at 1e-8 or at 1e3), then a fixed number of multisection rounds: the cost is the
    same for every input."""
    with np.errstate(all="ignore"):
        t = a + (_STEPS if np.isinf(b) else (b - a) * _STEPS[:1075])
        t = np.concatenate([[a], t[np.isfinite(t) & (t < b)], [b] if np.isfinite(b) else []])
        ok = np.asarray(pred(t), bool)
        if not ok.any():
            return None
        j = max(int(np.argmax(ok)), 1)
        lo, hi = t[j - 1], t[j]
        for _ in range(_SECTION_ROUNDS):
            t = np.linspace(lo, hi, _SECTION_POINTS)
            ok = np.append(np.asarray(pred(t[1:-1]), bool), True)
            j = int(np.argmax(ok)) + 1
            lo, hi = t[j - 1], t[j]
    return lo, hi


def _mode_bracket(f: ScalarOrArray, df: ScalarOrArray, lower: float, upper: float,
                  mode: float | None) -> tuple[float, float, float]:
    """``(p, q, top)``: the mode lies in ``[p, q]`` and ``top ≥ max f`` (see below)."""
    if mode is not None:  # a closed-form maximiser
        p = float(np.clip(mode, lower, upper))
        return p, p, float(f(p))
    if df(lower) <= 0:
        return lower, lower, float(f(lower))
    # an end where the density vanishes (log f = −∞: the sphere at ρ = πR, whose slope can round to
    # +huge there when ρ/R lands an ulp past π) is never the mode
    if np.isfinite(upper) and df(upper) >= 0 and np.isfinite(f(upper)):
        return upper, upper, float(f(upper))
    bracket = _crossing(lambda t: df(t) < 0, lower, upper)
    if bracket is None:
        raise ValueError("the density increases without bound: it is not integrable")
    p, q = bracket
    top = float(np.nanmin([f(p) + df(p) * (q - p), f(q) - df(q) * (q - p), np.inf]))
    if not np.isfinite(top):
        raise ValueError(f"the log-density has no finite maximum (got {top!r})")
    return p, q, top


def log_concave_envelope(log_f: LogDensity, dlog_f: LogDensity, lower: float, upper: float,
                         mode: float | None = None) -> tuple[_PiecewiseExponential, float]:
    """Envelope of a log-concave density ``∝ exp(log_f)`` on ``[lower, upper]``, as
    ``(envelope, top)``: ``exp(log_f(ρ) − top) ≤ exp(envelope.log_envelope(ρ))`` everywhere.

    Construction. ``top ≥ max log_f``: ``log_f(mode)`` when ``mode`` is the exact maximiser in
    closed form, else from a
    bracket ``[p, q]`` of the zero of ``dlog_f`` (a concave function lies under its tangents,
    so ``max ≤ min(log_f(p) + log_f'(p)(q−p), log_f(q) − log_f'(q)(q−p))``). ``x_l < p`` and
    ``x_r > q`` are where ``log_f`` first falls 1 below ``top`` (or the interval ends).
    The envelope is ``top`` on ``[x_l, x_r]`` and the tangent lines at ``x_l`` and ``x_r``
    outside: upper bounds by concavity wherever the bracket and crossings land, so the
    sampler is exact; their accuracy only affects the acceptance.

    Acceptance. Take the left side, ``w = m − x_l`` (``m`` the mode), drop ``δ ≈ 1`` at
    ``x_l``. Above the chord, the target there has mass ``≥ w(1 − e^(−δ))/δ`` (units of
    ``e^top``); the tangent slope is ``≥ δ/w``, so the envelope has mass ``≤ w + w e^(−δ)/δ``.
    The ratio is ``(1 − 1/e)/(1 + 1/e) ≈ 0.46`` at ``δ = 1`` (≥ 0.63 when the interval ends
    first); the right side alike, and the total is at least the smaller ratio — in any
    dimension and at any scale. All values are relative to ``top``: nothing underflows.
    """
    f: ScalarOrArray = lambda t: np.asarray(log_f(np.asarray(t, float)), float)
    df: ScalarOrArray = lambda t: np.asarray(dlog_f(np.asarray(t, float)), float)
    if not upper > lower:
        raise ValueError(f"need upper > lower, got lower={lower!r}, upper={upper!r}")
    with np.errstate(all="ignore"):
        p, q, top = _mode_bracket(f, df, lower, upper, mode)
        x_l = lower if f(lower) >= top - 1 else (_crossing(lambda t: f(t) >= top - 1, lower, p) or (p, p))[0]
        if np.isfinite(upper) and f(upper) >= top - 1:
            x_r = upper
        else:
            bracket = _crossing(lambda t: f(t) < top - 1, q, upper)
            if bracket is None:
                raise ValueError("the density does not decay: it is not integrable")
            x_r = bracket[1]
        alpha: list[Any]
        left, right, alpha, beta = [x_l], [x_r], [0.0], [0.0]
        if x_l > lower:  # tangent at x_l, anchored at `lower`
            s = float(df(x_l))
            left, right, alpha, beta = [lower] + left, [x_l] + right, [f(x_l) - top + s * (lower - x_l)] + alpha, [s] + beta
        if x_r < upper:
            s = float(df(x_r))
            if not (s < 0 or np.isfinite(upper)):
                raise ValueError("the density does not decay: it is not integrable")
            left, right, alpha, beta = left + [x_r], right + [upper], alpha + [float(f(x_r) - top)], beta + [s]
    return _PiecewiseExponential(*(np.array(v, float) for v in (left, right, alpha, beta))), top


def sample_log_concave(log_f: LogDensity, dlog_f: LogDensity, lower: float, upper: float, size: int, rng: RngLike,
                       mode: float | None = None, what: str = "log-concave sampler") -> tuple[FloatArray, float]:
    """Exact draws from the density ``∝ exp(log_f(ρ))`` on ``[lower, upper]`` (``upper`` may be
    ∞ when ``log_f`` → −∞ at least linearly), ``log_f`` concave with derivative ``dlog_f``
    (both vectorised; ``−∞`` allowed). Rejection from ``log_concave_envelope`` (acceptance
    ≥ 0.46; ``mode`` in closed form saves the search). Returns ``(draws, acceptance)``.
    A value above the envelope raises ``RuntimeError``: ``log_f`` was not concave."""
    rng = as_generator(rng)
    env, top = log_concave_envelope(log_f, dlog_f, float(lower), float(upper), mode)
    return _sample_from_envelope(log_f, env, top, size, rng, what)


def _sample_from_envelope(log_f: LogDensity, env: _PiecewiseExponential, top: float, size: int,
                          rng: np.random.Generator, what: str) -> tuple[FloatArray, float]:
    """The rejection rounds of ``sample_log_concave`` for an envelope already built."""

    def draw(m: int) -> tuple[FloatArray, BoolArray]:
        r = env.sample(m, rng)
        bound = env.log_envelope(r)
        with np.errstate(all="ignore"):
            gap = np.asarray(log_f(r), float) - top - bound
        if np.any(gap > 1e-9 * (1.0 + abs(top) + np.abs(bound))):
            raise RuntimeError(f"{what}: envelope violated (the log-density is not concave)")
        return r, np.log(rng.uniform(size=m)) < gap

    return _batches(int(size), draw, 0.5, what)


# --- the Laplace radius on every radial manifold -------------------------------------------

def laplace_radius_log_density(manifold: Manifold, sigma: float) -> tuple[LogDensity, LogDensity]:
    """``(log_f, dlog_f)`` of the radial Laplace law ``∝ e^(−ρ/σ) J(ρ)``, concave in ``ρ``: the
    manifold's own ``log_volume`` and ``log_volume_slope`` (constant curvature:
    ``J = sn_κ(ρ)^(d−1)``; Kendall: ``(2m−1) log sin ρ + log cos ρ`` with ``d = 2m``)."""
    if not manifold.radial:
        raise ValueError(f"{manifold!r} declares no radial volume density "
                         f"(its Laplace sampler is {manifold.laplace_sampler.name!r})")
    log_j, slope = manifold.log_volume, manifold.log_volume_slope
    return (lambda r: log_j(r) - r / sigma), (lambda r: slope(r) - 1.0 / sigma)


def sample_laplace_radius(manifold: Manifold, sigma: float, size: Size | None, rng: RngLike,
                          rho_max: float | None = None) -> tuple[FloatArray, float]:
    """Radii ``ρ`` with density ``∝ e^(−ρ/σ) J(ρ)`` on ``[0, min(range, rho_max)]``.

    Unbounded flat spaces: ``Gamma(d, σ)`` exactly (2021 App. A.4). Every other case (sphere,
    Kendall, hyperbolic, any truncation): ``sample_log_concave`` — exact, acceptance ≥ 0.46
    in any dimension, tail-safe (a truncated Gamma far in its tail is not rounded to 0).
    Hyperbolic needs ``σ < 1/(d−1)`` unless truncated. Returns ``(rho, acceptance)``.
    """
    rng = as_generator(rng)
    d = manifold.dim
    restricted = rho_max is not None and np.isfinite(rho_max)
    upper = min(float(manifold.radial_range[1]), float(cast(float, rho_max)) if restricted else np.inf)
    n = int(np.prod(size)) if size is not None else 1
    shape = () if size is None else size
    if not upper > 0:
        raise ValueError(f"rho_max must be > 0, got {rho_max!r}")
    flat = tuple(manifold.curvature_bounds) == (0.0, 0.0)
    if flat and np.isinf(upper):
        return rng.gamma(d, sigma, size=n).reshape(shape), 1.0
    if np.isinf(upper) and sigma >= manifold.laplace_sigma_limit:
        raise ValueError(f"the Laplace law with sigma={sigma!r} is not integrable on {manifold!r}; restrict it to a ball")
    log_f, env, top = _laplace_radius_envelope(manifold, float(sigma), upper)
    what = f"Laplace radius sampler on {manifold!r} (sigma={sigma!r}, {'restricted' if restricted else 'unrestricted'})"
    rho, acceptance = _sample_from_envelope(log_f, env, top, n, rng, what)
    return rho.reshape(shape), acceptance


@lru_cache(maxsize=256)
def _laplace_radius_envelope(manifold: Manifold, sigma: float,
                             upper: float) -> tuple[LogDensity, _PiecewiseExponential, float]:
    """``(log_f, envelope, top)`` of the radial Laplace law: a function of public parameters only,
    built once per ``(manifold, σ, truncation)`` (building it is most of a single draw's work)."""
    log_f, dlog_f = laplace_radius_log_density(manifold, sigma)
    flat = tuple(manifold.curvature_bounds) == (0.0, 0.0)
    mode = (manifold.dim - 1) * sigma if flat else None
    env, top = log_concave_envelope(log_f, dlog_f, 0.0, upper, mode)
    return log_f, env, top


# --- the Gaussian radius on every radial manifold ------------------------------------------

def gaussian_radius_log_density(manifold: Manifold, sigma: float) -> tuple[LogDensity, LogDensity]:
    """``(log_f, dlog_f)`` of the radial law of the Riemannian Gaussian ``∝ e^(−ρ²/(2σ²)) J(ρ)``:
    concave in ``ρ`` wherever ``log J`` is (sphere, Kendall, hyperbolic, flat), as ``−ρ²/(2σ²)`` is."""
    if not manifold.radial:
        raise ValueError(f"{manifold!r} declares no radial volume density "
                         f"(its Laplace sampler is {manifold.laplace_sampler.name!r})")
    log_j, slope = manifold.log_volume, manifold.log_volume_slope
    inv = 1.0 / (sigma * sigma)
    return (lambda r: log_j(r) - 0.5 * inv * r * r), (lambda r: slope(r) - inv * r)


def sample_gaussian_radius(manifold: Manifold, sigma: float, size: Size | None, rng: RngLike) -> tuple[FloatArray, float]:
    """Radii ``ρ`` with density ``∝ e^(−ρ²/(2σ²)) J(ρ)`` on the whole ``radial_range``.

    Unbounded flat spaces: ``σ·χ_d`` exactly. Every other radial space: ``sample_log_concave`` from
    an envelope built once per ``(manifold, σ)`` (exact, acceptance ≥ 0.46 in any dimension).
    Returns ``(rho, acceptance)``."""
    rng = as_generator(rng)
    d = manifold.dim
    n = int(np.prod(size)) if size is not None else 1
    shape = () if size is None else size
    upper = float(manifold.radial_range[1])
    if tuple(manifold.curvature_bounds) == (0.0, 0.0) and np.isinf(upper):
        return (sigma * np.sqrt(rng.chisquare(d, size=n))).reshape(shape), 1.0
    log_f, env, top = _gaussian_radius_envelope(manifold, float(sigma))
    what = f"Gaussian radius sampler on {manifold!r} (sigma={sigma!r})"
    rho, acceptance = _sample_from_envelope(log_f, env, top, n, rng, what)
    return rho.reshape(shape), acceptance


@lru_cache(maxsize=256)
def _gaussian_radius_envelope(manifold: Manifold, sigma: float) -> tuple[LogDensity, _PiecewiseExponential, float]:
    """``(log_f, envelope, top)`` of the Gaussian radius law (public parameters only)."""
    log_f, dlog_f = gaussian_radius_log_density(manifold, sigma)
    flat = tuple(manifold.curvature_bounds) == (0.0, 0.0)
    mode = np.sqrt(max(manifold.dim - 1, 0)) * sigma if flat else None
    env, top = log_concave_envelope(log_f, dlog_f, 0.0, float(manifold.radial_range[1]), mode)
    return log_f, env, top


@dataclass(frozen=True)
class _PiecewiseExponential:
    """An envelope ``exp(α_j + β_j (ρ − t_j))`` on ``[t_j, t_(j+1))``: ``α_j`` is its log height
    at the left end (anchoring there keeps ``β_j t_j`` from cancelling); the last piece may be
    infinite (then ``β < 0``)."""

    left: FloatArray
    right: FloatArray
    alpha: FloatArray
    beta: FloatArray
    if TYPE_CHECKING:  # set in __post_init__
        @property
        def log_mass(self) -> FloatArray: ...
        @property
        def _cdf(self) -> FloatArray: ...

    def __post_init__(self) -> None:
        log_mass = _log_piece_mass(self.left, self.right, self.alpha, self.beta)
        p = np.exp(log_mass - logsumexp(log_mass))
        object.__setattr__(self, "log_mass", log_mass)
        object.__setattr__(self, "_cdf", np.cumsum(p) / p.sum())

    def sample(self, m: int, rng: np.random.Generator) -> FloatArray:
        j = np.minimum(np.searchsorted(self._cdf, rng.uniform(size=m), side="right"), len(self._cdf) - 1)
        a, b, beta = self.left[j], self.right[j], self.beta[j]
        u = rng.uniform(size=m)
        width = b - a
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            bw = beta * width
            # inverse CDF of ∝ e^(βρ) on [a, b), written so that neither sign of β overflows
            down = a + np.log1p(u * np.expm1(bw)) / beta
            up = b + np.log1p((1.0 - u) * np.expm1(-bw)) / beta
            flat = a + u * width
        return np.clip(np.where(np.abs(bw) < 1e-12, flat, np.where(beta < 0, down, up)), a, b)

    def log_envelope(self, rho: FloatArray) -> FloatArray:
        j = np.clip(np.searchsorted(self.left, rho, side="right") - 1, 0, len(self.left) - 1)
        return self.alpha[j] + self.beta[j] * (rho - self.left[j])


def _log_piece_mass(left: FloatArray, right: FloatArray, alpha: FloatArray, beta: FloatArray) -> FloatArray:
    """``log ∫_a^b exp(α + β(ρ − a)) dρ`` per piece, without overflow (``b = ∞`` needs ``β < 0``)."""
    with np.errstate(all="ignore"):
        x = beta * (right - left)
        rising = alpha + x + np.log(-np.expm1(-x)) - np.log(beta)
        falling = alpha + np.log(-np.expm1(x)) - np.log(-beta)
        flat = alpha + np.log(right - left) + x / 2
    return np.where(np.abs(x) < 1e-12, flat, np.where(x > 0, rising, falling))


def _concave_volume_envelope(manifold: Manifold, t: FloatArray, G_t: FloatArray, sigma: float,
                             log_cap: LogDensity | None = None) -> tuple[_PiecewiseExponential, FloatArray]:
    """Per cell ``[t_j, t_(j+1)]``: the tangent of ``log J`` at the midpoint plus ``−G/σ``
    (linear there), plus ``log_cap`` at the cell's left end (``log_cap`` is non-increasing), and
    the cell's worst log gap to the target (the tangent's gap is convex: worst at an end)."""
    a, b = t[:-1], t[1:]
    c = 0.5 * (a + b)
    slope_j = manifold.log_volume_slope(c)
    beta = slope_j - np.diff(G_t) / np.diff(t) / sigma
    alpha = manifold.log_volume(c) + slope_j * (a - c) - G_t[:-1] / sigma
    with np.errstate(invalid="ignore"):
        gap = np.maximum(manifold.log_volume(c) + slope_j * (a - c) - manifold.log_volume(a),
                         manifold.log_volume(c) + slope_j * (b - c) - manifold.log_volume(b))
        if log_cap is not None:
            cap_t = log_cap(t)
            alpha = alpha + cap_t[:-1]
            gap = gap + (cap_t[:-1] - cap_t[1:])
    return _PiecewiseExponential(a, b, alpha, beta), np.nan_to_num(gap, nan=np.inf)


def sample_radius_concave_volume(manifold: Manifold, grid: FloatArray, G: FloatArray, sigma: float, size: int, rng: RngLike,
                                 rounds: int = 60, max_cells: int = 20_000,
                                 log_cap: LogDensity | None = None) -> tuple[FloatArray, float]:
    """``ρ`` with density ``∝ J(ρ) exp(−G(ρ)/σ) C(ρ)`` on ``[0, grid[-1]]`` where ``G`` is linear
    between the ``grid`` points, ``log J`` is concave (sphere, Kendall, hyperbolic, flat) and
    ``C = exp(log_cap)`` is non-increasing (default 1): on each cell the tangent of ``log J`` at the
    midpoint, plus the exact linear ``−G/σ``, plus ``log C`` at the cell's left end, is an envelope.

    Cells whose envelope is off by more than 1 somewhere and whose envelope mass is not
    negligible (``e^-40`` of the largest) are halved (``G`` stays linear on halves), at most
    ``rounds`` times: at small ``σ`` the whole law may sit inside one grid cell near 0, where one
    tangent is far off, and ``C`` may fall steeply. Returns ``(rho, acceptance)``."""
    t = np.asarray(grid, float)
    rng = as_generator(rng)
    for _ in range(rounds):
        env, gap = _concave_volume_envelope(manifold, t, np.interp(t, grid, G), sigma, log_cap)
        split = (gap > 1.0) & (env.log_mass > np.max(env.log_mass) - 40.0)
        if not split.any() or t.size + split.sum() > max_cells:
            break
        t = np.sort(np.concatenate([t, 0.5 * (t[:-1] + t[1:])[split]]))

    def draw(m: int) -> tuple[FloatArray, BoolArray]:
        r = env.sample(m, rng)
        with np.errstate(divide="ignore", invalid="ignore"):
            target = manifold.log_volume(r) - np.interp(r, grid, G) / sigma + (0.0 if log_cap is None else log_cap(r))
        la = target - env.log_envelope(r)
        if np.any(la > 1e-9 * (1.0 + np.abs(env.log_envelope(r)))):
            raise RuntimeError("radial envelope violated")
        return r, np.log(rng.uniform(size=m)) < la

    return _batches(size, draw, 0.9, f"radius sampler on {manifold!r} (sigma={sigma!r})")


# --- directions into a ball: the spherical cap of admissible directions ----------------------
#
# On a space of constant curvature κ, from a footpoint μ at distance a from the centre c of a
# ball B_r(c), the point exp_μ(ρu) (u a unit tangent) lies in the ball iff ⟨u, v⟩ ≥ t(ρ), v the
# unit direction from μ to c: the law of cosines of the space form. The admissible directions
# are a spherical cap; y = (1 − ⟨u, v⟩)/2 of a uniform u is Beta(α, α), α = (d − 1)/2, so the cap
# holds the fraction C = I_x(α, α) of the directions, x = (1 − t)/2. C(ρ) is non-increasing in ρ
# (t is increasing when a ≤ r < π/(2√κ)): a law ∝ J(ρ) e^(−G(ρ)/σ) restricted to the ball has
# the radial marginal ∝ J(ρ) e^(−G(ρ)/σ) C(ρ) and, given ρ, a direction uniform on its cap.

def cap_fraction_argument(kappa: float, a: float, r: float, rho: ArrayLike) -> FloatArray:
    """``x = (1 − t(ρ))/2`` for the cap above (``x ≥ 1``: every direction; ``x ≤ 0``: none),
    in the cancellation-free form ``sn((r+a−ρ)/2)·sn((r−a+ρ)/2) / (sn(a)·sn(ρ))``."""
    rho = np.asarray(rho, float)
    sn: Callable[[Any], Any] = lambda s: s * sn_over_abs(s, kappa)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = sn(0.5 * (r + a - rho)) * sn(0.5 * (r - a + rho)) / (sn(a) * sn(rho))
    return np.where(rho <= 0, np.where(a < r, np.inf, 0.5), x)


def sn_over_abs(s: ArrayLike, kappa: float) -> FloatArray:
    """``sn_κ(s)/s`` for any sign of ``s`` (an even function)."""
    from ..manifolds.base import sn_over

    return sn_over(np.abs(s), kappa)


def log_cap_fraction(x: ArrayLike, d: int) -> FloatArray:
    """``log I_x(α, α)``, ``α = (d−1)/2``: the log fraction of the unit sphere ``S^(d−1)`` in a cap
    of argument ``x`` (``x ≥ 1``: 0; ``x ≤ 0``: −∞). ``betainc`` where it does not underflow;
    deeper in the tail the series ``I_x(α, α) = x^α (1−x)^α / (α B(α, α)) · Σ_j (2α)_j/(α+1)_j x^j``
    (DLMF 8.17.8 with ₂F₁(2α, 1; α+1; x) summed term by term: its terms are positive and their ratio
    ``(2α+j)x/(α+1+j)`` stays below 2x < 0.85 wherever ``betainc`` underflows, so 400 terms are
    plenty); and ``log1p(−I_(1−x))`` above ½."""
    alpha = 0.5 * (d - 1)
    x = np.asarray(x, float)
    low = np.clip(x, 1e-300, 0.5)
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        flat = np.atleast_1d(low)
        direct = betainc(alpha, alpha, flat)
        tail = np.log(direct)
        deep = direct <= 1e-280
        if np.any(deep):  # the series, only where betainc underflows
            z = flat[deep]
            terms, total = np.ones_like(z), np.ones_like(z)
            for j in range(400):
                terms = terms * (2 * alpha + j) * z / (alpha + 1 + j)
                total = total + terms
            tail[deep] = (alpha * (np.log(z) + np.log1p(-z)) - np.log(alpha) - betaln(alpha, alpha) + np.log(total))
        tail = tail.reshape(low.shape)
        bulk = np.log1p(-betainc(alpha, alpha, np.clip(1.0 - x, 0.0, 0.5)))
    out = np.where(x <= 0.5, tail, bulk)
    return np.where(x >= 1.0, 0.0, np.where(x <= 0.0, -np.inf, out))


def sample_cap_offset(x: FloatArray, d: int, rng: np.random.Generator, max_rounds: int = MAX_ROUNDS) -> FloatArray:
    """``y = (1 − ⟨u, v⟩)/2`` for ``u`` uniform on the cap of argument ``x`` (one per entry of
    ``x``): ``Beta(α, α)`` conditioned on ``y ≤ x``, exactly. ``d = 2``: the angle is uniform,
    ``y = sin²(U·arcsin √x)``; ``d = 3``: ``y`` uniform on ``[0, x]`` (Archimedes); ``d ≥ 4``: the
    log density ``(α−1) log(y(1−y))`` is concave — rejection from ``Beta(α, α)`` where the cap holds
    at least a tenth of the directions, else from the exponential tangent at ``y = x`` (the law
    piles up against ``x``; acceptance ≥ e^(−1/(2(α−1))) roughly)."""
    x = np.minimum(np.asarray(x, float), 1.0)
    alpha = 0.5 * (d - 1)
    if d == 2:
        return np.sin(rng.uniform(size=x.shape) * np.arcsin(np.sqrt(x))) ** 2
    if d == 3:
        return rng.uniform(size=x.shape) * x
    flat = x.ravel()
    out = np.full(flat.size, np.nan)
    bulk = log_cap_fraction(flat, d) >= np.log(0.1)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = (alpha - 1.0) * (1.0 / flat - 1.0 / (1.0 - flat))  # d/dy of the log density at y = x (> 0 in the tail)
    todo = np.arange(flat.size)
    for _ in range(max_rounds):
        if todo.size == 0:
            return out.reshape(x.shape)
        xs, bs, ss = flat[todo], bulk[todo], slope[todo]
        u = rng.uniform(size=todo.size)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            # tail: y = x − E, E exponential of rate s truncated to [0, x]
            tail_y = xs + np.log1p(u * np.expm1(-ss * xs)) / ss
            tail_y = np.clip(tail_y, 0.0, xs)
            tail_log_ratio = (alpha - 1.0) * (np.log(tail_y / xs) + np.log1p(-tail_y) - np.log1p(-xs)) - ss * (tail_y - xs)
        bulk_y = rng.beta(alpha, alpha, size=todo.size)
        y = np.where(bs, bulk_y, tail_y)
        ok = np.where(bs, bulk_y <= xs, np.log(rng.uniform(size=todo.size)) < tail_log_ratio)
        out[todo[ok]] = y[ok]
        todo = todo[~ok]
    raise RuntimeError(f"cap direction sampler (d={d}) made no progress in {max_rounds} rounds: its envelope is broken")


# --- Metropolis–Hastings (cross-check only) -----------------------------------------------

def metropolis_hastings(manifold: Manifold, log_density: Callable[[Array], Any], start: ArrayLike, n_steps: int,
                        step_size: float, *, rng: RngLike = None,
                        inside: Callable[[Array], Any] | None = None) -> tuple[Array, FloatArray]:
    """Random-walk MH on ``manifold`` with proposals ``exp_x(step_size·ξ)``, ``ξ`` standard
    Gaussian in ``T_x M`` (symmetric on these homogeneous spaces). Proposals outside
    ``inside`` (a predicate) are rejected. **Approximate**: the output is not an exact draw,
    and a mechanism sampled this way is at best approximately DP (docs/theory.md §7).
    Returns ``(last_state, acceptance_rate)``. ``start`` may be a batch of chains.
    """
    rng = as_generator(rng)
    x = np.array(start, dtype=manifold.dtype)
    lp = log_density(x)
    accepted = np.zeros(manifold.batch_shape(x))
    for _ in range(int(n_steps)):
        xi = manifold.random_unit_tangent(x, rng=rng)
        length = step_size * np.sqrt(rng.chisquare(manifold.dim, size=manifold.batch_shape(x)))
        y = manifold.exp(x, xi * manifold._expand(length))
        lq = log_density(y)
        ok = np.log(rng.uniform(size=manifold.batch_shape(x))) < lq - lp
        if inside is not None:
            ok &= inside(y)
        x = np.where(manifold._expand(ok), y, x)
        lp = np.where(ok, lq, lp)
        accepted += ok
    return x, accepted / max(int(n_steps), 1)
