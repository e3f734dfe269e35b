"""Exact sampler for the affine-invariant Laplace law on SPD(k) (Hajri et al. 2016 eigen
decomposition): a radius stage by a piecewise-exponential envelope, then a direction stage
accepted against a Jensen bound on the sinh product. Its acceptance is a public function
of ``(k, σ, ρ_max)`` only. Single draws take the same two stages with Python floats
(``spd_laplace_single_sampler``). ``SPD_LOG_EIGEN`` is the sampler object affine-invariant SPD
declares (``manifolds.capabilities.LaplaceSampler``): the law at ``I`` moved to ``η`` by the
isometry ``X ↦ η^½ X η^½``, for the Laplace law and the Riemannian Gaussian.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike

from .._disk_cache import disk_cached, is_probability
from .._random import RngLike, as_generator
from .._threads import blas_limit, blas_limited
from .._typing import Array, BoolArray, FloatArray
from ..manifolds.matrix import eig_apply, invvecd, sqrtm_spd, sqrtm_spd_one, sym, triu_indices
from .samplers import (
    FIXED_WORK_MINIMUM,
    MAX_ROUNDS,
    LogDensity,
    _batches,
    _log_piece_mass,
    _PiecewiseExponential,
    _sample_from_envelope,
    log_concave_envelope,
)
from .single_draws import ScalarPieces

if TYPE_CHECKING:
    from ..manifolds.base import Manifold
    from ..manifolds.spd import SPDAffineInvariant

__all__ = ["SPDLogEigenSampler", "SPD_LOG_EIGEN",
           "sample_spd_log_eigen", "spd_laplace_single_sampler", "spd_sampler_acceptance", "sample_spd_gaussian_log_eigen",
           "spd_gaussian_acceptance", "spd_restricted_acceptance_bound", "spd_acceptance_lower_bound",
           "spd_laplace_proposals"]

PILOT_CHUNK = 4096  # proposals per vectorised batch of a public pilot: bounds its memory (k = 28: ~30 MB)

def _log_sinhc(a: FloatArray) -> FloatArray:
    """``φ(a) = log(sinh a / a)``, stable for small and large ``a``."""
    a = np.abs(np.asarray(a, float))
    small = a < 1e-3
    safe = np.where(small, 1.0, a)
    large = safe + np.log1p(-np.exp(-2 * safe)) - np.log(2 * safe)
    return np.where(small, a * a / 6.0, large)


def _spd_radius_log_target(rho: FloatArray, k: int, sigma: float) -> FloatArray:
    """``log q(ρ) = (d−1) log ρ − ρ/σ + B̄(ρ)`` with ``B̄ = min(P φ(ρ/√(2(k−1))), c_k ρ)``."""
    d = k * (k + 1) // 2
    with np.errstate(divide="ignore"):
        return (d - 1) * np.log(rho) - rho / sigma + _spd_log_bound(rho, k)


def _spd_log_bound(rho: ArrayLike, k: int) -> FloatArray:
    """Upper bound ``B̄(ρ) ≥ Σ_(i<j) φ(|λ_i − λ_j|/2)`` over all ``λ`` with ``‖λ‖ = ρ``.

    Jensen: ``φ(a) = g(a²)`` with ``g(s) = Σ_n log(1 + s/(nπ)²)`` concave, and
    ``Σ_(i<j) (λ_i−λ_j)²/4 ≤ kρ²/4``, so the sum is at most ``P·φ(ρ/√(2(k−1)))``,
    ``P = k(k−1)/2``. Also ``φ(a) ≤ a`` and ``Σ|λ_i−λ_j|/2 ≤ c_k ρ``.
    """
    if k < 2:
        return np.zeros_like(np.asarray(rho, float))
    pairs = k * (k - 1) / 2
    c_k = 0.5 * np.sqrt(k * (k * k - 1) / 3.0)
    return cast(FloatArray, np.minimum(pairs * _log_sinhc(np.asarray(rho, float) / np.sqrt(2.0 * (k - 1))),
                                       c_k * np.asarray(rho, float)))


def _spd_tail(end: float, upper: float, k: int, sigma: float) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """The piece ``[end, upper)`` of the radius envelope: the tangent of ``(d−1) log ρ`` at
    ``end`` plus ``c_k ρ − ρ/σ`` (exact, loose); as ``(left, right, alpha, beta)``."""
    d = k * (k + 1) // 2
    c_k = 0.5 * np.sqrt(k * (k * k - 1) / 3.0) if k > 1 else 0.0
    beta = ((d - 1) / end if d > 1 else 0.0) + c_k - 1.0 / sigma
    alpha = ((d - 1) * np.log(end) if d > 1 else 0.0) + (c_k - 1.0 / sigma) * end
    return np.array([end]), np.array([upper]), np.array([alpha]), np.array([beta])


@lru_cache(maxsize=64)
def _spd_radius_envelope(k: int, sigma: float, rho_max: float, pieces: int = 512) -> _PiecewiseExponential:
    """Piecewise-exponential upper envelope of ``q(ρ)`` (see ``_spd_radius_log_target``).

    On each interval ``(d−1) log ρ`` (concave) lies under its tangent at the midpoint, and
    ``B̄`` under either the chord of the convex ``P φ(·)`` or the line ``c_k ρ``; the sum with
    ``−ρ/σ`` is linear, so ``exp`` of it is an exact envelope. The pieces cover the bulk of
    ``q`` only — located on a grid up to a few times the mode, whether or not ``rho_max`` is
    finite (a grid over all of ``[0, rho_max]`` would put the whole law in one piece at small
    ``σ``) — and one tail piece (``_spd_tail``) runs from there to ``rho_max``; it is pushed
    out until its mass is negligible. Unbounded, that piece needs ``1/σ > c_k``.
    """
    d = k * (k + 1) // 2
    c_k = 0.5 * np.sqrt(k * (k * k - 1) / 3.0) if k > 1 else 0.0
    pairs = k * (k - 1) / 2
    bounded = np.isfinite(rho_max)
    slope = 1.0 / sigma - c_k
    if not bounded and slope <= 0:
        raise ValueError(f"sigma must be < 1/c_k = {1.0 / c_k:.6g} for the unrestricted affine-invariant Laplace law on SPD({k})")
    far = min(rho_max, 3.0 * (d + 40) / slope) if slope > 0 else rho_max
    grid = np.linspace(0.0, far, 20001)[1:]
    lt = _spd_radius_log_target(grid, k, sigma)
    top = np.max(lt)
    end = float(grid[np.nonzero(lt > top - 60.0)[0][-1]])
    if not bounded and d > 1:
        end = max(end, 2.0 * (d - 1) / slope)  # the tail's slope must be negative
    for _ in range(400):  # ×1.25 each: past any float in 400 steps
        if end >= rho_max or _log_piece_mass(*_spd_tail(end, rho_max, k, sigma))[0] < top - 40.0:
            break
        end = min(1.25 * end, rho_max)
    t = np.linspace(0.0, end, pieces + 1)
    left, right = t[:-1], t[1:]
    mid = 0.5 * (left + right)
    # tangent of (d−1) log ρ at the midpoint, in slope-intercept form
    beta = (d - 1) / mid - 1.0 / sigma
    alpha = (d - 1) * (np.log(mid) - 1.0)
    if k > 1:
        s = np.sqrt(2.0 * (k - 1))
        f_l, f_r = pairs * _log_sinhc(left / s), pairs * _log_sinhc(right / s)
        chord_slope = (f_r - f_l) / (right - left)
        chord_icpt = f_l - chord_slope * left
        use_chord = chord_icpt + chord_slope * mid <= c_k * mid
        beta = beta + np.where(use_chord, chord_slope, c_k)
        alpha = alpha + np.where(use_chord, chord_icpt, 0.0)
    if d == 1:  # no ρ^(d−1) factor
        beta, alpha = np.full_like(mid, -1.0 / sigma + c_k), np.zeros_like(mid)
    parts = [left, right, alpha + beta * left, beta]
    if end < rho_max:
        parts = [np.append(p, q) for p, q in zip(parts, _spd_tail(end, rho_max, k, sigma))]
    return _PiecewiseExponential(*parts)


def sample_spd_log_eigen(k: int, sigma: float, size: int | tuple[int, ...] | None, rng: RngLike, rho_max: float = np.inf, *,
                         eigen: bool = False) -> tuple[Any, float]:
    """Exact draws ``S ∈ Sym(k)`` whose eigenvalues ``λ`` have density
    ``∝ exp(−‖λ‖/σ) ∏_(i<j) sinh(|λ_i − λ_j|/2)`` and Haar eigenvectors (Hajri et al. 2016),
    optionally conditioned on ``‖λ‖ ≤ rho_max``. ``η^½ Expm(S) η^½`` is then an exact draw of
    the affine-invariant Laplace law at ``η``.

    Two stages of rejection, our design (docs/theory.md §4; the naive envelope accepts < 1 % at k = 10):
    on ``Sym(k)`` the target is ``∝ ρ^(d−1) e^(−ρ/σ) ∏ sinh(a_ij)/a_ij`` in polar coordinates
    ``S = ρW``, ``a_ij = ρ|μ_i − μ_j|/2`` for the eigenvalues ``μ`` of ``W``. (1) ``ρ`` from
    ``∝ ρ^(d−1) e^(−ρ/σ + B̄(ρ))`` by a piecewise-exponential envelope; (2) ``W`` uniform on the
    unit sphere of ``Sym(k)``, accepted with ``exp(Σ φ(a_ij) − B̄(ρ)) ≤ 1``.
    Returns ``(S, acceptance)`` where ``acceptance`` counts stage-2 (matrix) proposals; with
    ``eigen=True``, ``((λ, U), acceptance)`` instead of ``S = U diag(λ) Uᵀ`` (``Expm(S)`` then needs
    no second decomposition). The rounds are sized by the public pilot acceptance.
    """
    rng = as_generator(rng)
    env = _spd_radius_envelope(k, float(sigma), float(rho_max))
    pilot = spd_sampler_acceptance(k, float(sigma), float(rho_max))
    if pilot < 1e-3:
        raise ValueError(
            f"the exact affine-invariant Laplace sampler for SPD({k}) accepts about {pilot:.1e} of its proposals "
            f"at sigma={sigma!r} (too close to 1/c_k = {2.0 / np.sqrt(k * (k * k - 1) / 3.0):.4g}); "
            "use a larger epsilon or n, a smaller radius, or the log-Euclidean metric"
        )
    d = k * (k + 1) // 2
    n = int(np.prod(size)) if size is not None else 1
    what = f"affine-invariant SPD({k}) Laplace sampler (sigma={sigma!r})"
    draw_radius = _spd_radius_draw(k, float(sigma), float(rho_max), env, rng)
    iu = triu_indices(k, 1)

    def draw_matrix(m: int) -> tuple[FloatArray, BoolArray]:
        rho, _ = _batches(m, draw_radius, 0.9, what + ", radius stage")
        g = rng.standard_normal((m, d))
        g /= np.linalg.norm(g, axis=-1, keepdims=True)
        mu, vec = np.linalg.eigh(invvecd(g, k))
        lam = rho[:, None] * mu
        a = np.abs(lam[:, iu[0]] - lam[:, iu[1]]) / 2.0
        la = np.sum(_log_sinhc(a), axis=-1) - _spd_log_bound(rho, k)
        if np.any(la > 1e-9):
            raise RuntimeError("affine-invariant direction envelope violated")
        ok = np.log(rng.uniform(size=m)) < la
        return np.concatenate([lam, vec.reshape(m, -1)], axis=-1), ok

    return _matrices(k, n, size, draw_matrix, pilot, what, eigen)


def _exp(x: float) -> float:
    """``e^x`` of a float, ``inf`` past float64 (as ``np.exp``): an overflowing draw is refused
    downstream like a batched one, not by an ``OverflowError``."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _log_sinhc_scalar(a: float) -> float:
    """``_log_sinhc`` of one Python float (the same formulas)."""
    a = abs(a)
    if a < 1e-3:
        return a * a / 6.0
    return a + math.log1p(-math.exp(-2.0 * a)) - math.log(2.0 * a)


class _SingleLaplace:
    """One draw of ``sample_spd_log_eigen`` (unrestricted) at a time, with Python floats and one
    proposal at a time: the same two stages, the same law (see ``spd_laplace_single_sampler``)."""

    def __init__(self, k: int, sigma: float) -> None:
        self.k, self.sigma, self.d = k, sigma, k * (k + 1) // 2
        self.pieces = ScalarPieces(_spd_radius_envelope(k, sigma, np.inf))
        self.pairs, self.scale = k * (k - 1) / 2, math.sqrt(2.0 * max(k - 1, 1))
        self.c_k = 0.5 * math.sqrt(k * (k * k - 1) / 3.0)
        self.iu = list(zip(*(i.tolist() for i in triu_indices(k, 1))))

    def _what(self) -> str:
        return f"affine-invariant SPD({self.k}) Laplace sampler (sigma={self.sigma!r}, single draws)"

    def _log_bound(self, rho: float) -> float:
        """``B̄(ρ)`` (``_spd_log_bound``) of one float."""
        return min(self.pairs * _log_sinhc_scalar(rho / self.scale), self.c_k * rho) if self.k > 1 else 0.0

    def _radius(self, rng: np.random.Generator) -> tuple[float, float]:
        """Stage 1: ``ρ`` from ``∝ ρ^(d−1) e^(−ρ/σ + B̄(ρ))`` under the piecewise-exponential envelope,
        and a fourth uniform of the accepted round, independent of ``ρ`` (stage 2's acceptance: one
        call to the generator fewer per draw)."""
        pieces, d, sigma = self.pieces, self.d, self.sigma
        for _ in range(MAX_ROUNDS):
            u, v, w, spare = rng.random(4).tolist()
            j, r = pieces.draw(u, v)
            if r <= 0.0 and d > 1:  # the target vanishes at 0
                continue
            bound = pieces.log_envelope(j, r)
            gap = ((d - 1) * math.log(r) if d > 1 else 0.0) - r / sigma + self._log_bound(r) - bound
            if gap > 1e-9 * (1.0 + abs(bound)):
                raise RuntimeError("affine-invariant radius envelope violated")
            if w < math.exp(gap):
                return r, spare
        raise RuntimeError(f"{self._what()}, radius stage: rejection sampler made no progress in {MAX_ROUNDS} rounds")

    def _eigen(self, rng: np.random.Generator) -> tuple[list[float], Any, int]:
        """Stage 2: ``(λ, U, proposals)``, the eigenvalues (a list, ascending) and Haar eigenvectors
        (columns) of a draw at ``I`` and the number of stage-2 proposals it took."""
        for proposals in range(1, MAX_ROUNDS + 1):
            rho, spare = self._radius(rng)
            g = rng.standard_normal(self.d)
            if not g.any():  # no direction (probability ~2^-60 per coordinate): a rejected proposal
                continue
            mu, vec = _unit_sym_eigen(g, self.k)
            lam = [rho * x for x in mu]
            la = sum(_log_sinhc_scalar(0.5 * (lam[j] - lam[i])) for i, j in self.iu) - self._log_bound(rho)
            if la > 1e-9:
                raise RuntimeError("affine-invariant direction envelope violated")
            if spare < math.exp(la):
                return lam, vec, proposals
        raise RuntimeError(f"{self._what()}: rejection sampler made no progress in {MAX_ROUNDS} rounds: its envelope is broken")

    def draw(self, rng: np.random.Generator, half: Any) -> tuple[FloatArray, int]:
        """``(η^½ Expm(S) η^½, proposals)`` for ``half = η^½``: ``M diag(e^λ) Mᵀ`` with ``M = η^½ U``,
        exactly symmetric (``k = 2``: its three entries with floats)."""
        lam, vec, proposals = self._eigen(rng)
        if self.k == 2:
            (h00, h01), (h10, h11) = half if isinstance(half, list) else half.tolist()
            (u00, u01), (u10, u11) = vec
            m00, m01, m10, m11 = h00 * u00 + h01 * u10, h00 * u01 + h01 * u11, h10 * u00 + h11 * u10, h10 * u01 + h11 * u11
            e0, e1 = _exp(lam[0]), _exp(lam[1])
            off = e0 * m00 * m10 + e1 * m01 * m11
            return np.array([[e0 * m00 * m00 + e1 * m01 * m01, off], [off, e0 * m10 * m10 + e1 * m11 * m11]]), proposals
        m = half @ vec
        x = (m * np.exp(lam)) @ m.T
        return 0.5 * (x + x.T), proposals


@lru_cache(maxsize=64)
def spd_laplace_single_sampler(k: int, sigma: float) -> _SingleLaplace:
    """The single-draw sampler of the unrestricted affine-invariant Laplace law on SPD(k), built
    once per ``(k, σ)`` (public parameters only): ``.draw(rng, η^½) -> (x, proposals)``, ``x`` an
    exact draw at ``η`` — ``sample_spd_log_eigen``'s two stages and law, with Python floats and one
    proposal at a time. Refuses a scale whose public pilot acceptance is below 1e-3, as
    ``sample_spd_log_eigen`` does."""
    sigma = float(sigma)
    pilot = spd_sampler_acceptance(k, sigma, np.inf)
    if pilot < 1e-3:
        raise ValueError(
            f"the exact affine-invariant Laplace sampler for SPD({k}) accepts about {pilot:.1e} of its proposals "
            f"at sigma={sigma!r} (too close to 1/c_k = {2.0 / np.sqrt(k * (k * k - 1) / 3.0):.4g}); "
            "use a larger epsilon or n, a smaller radius, or the log-Euclidean metric"
        )
    return _SingleLaplace(k, sigma)


def _unit_sym_eigen(g: FloatArray, k: int) -> tuple[list[float], Any]:
    """Eigenvalues (ascending, a list) and eigenvectors (columns) of ``invvecd(g/‖g‖)``: a
    closed form at ``k = 2`` (the angle of ``W − tr(W)/2·I``; nested lists), ``eigh`` above."""
    if k == 2:
        g0, g1, g2 = g.tolist()
        n = math.sqrt(g0 * g0 + g1 * g1 + g2 * g2)
        mid, diff, off = 0.5 * (g0 + g1) / n, 0.5 * (g0 - g1) / n, g2 / (math.sqrt(2.0) * n)
        h = math.hypot(diff, off)
        theta = 0.5 * math.atan2(off, diff)  # (cos θ, sin θ) belongs to mid + h
        c, s = math.cos(theta), math.sin(theta)
        return [mid - h, mid + h], [[-s, c], [c, s]]
    mu, vec = np.linalg.eigh(invvecd(g / math.sqrt(float(g @ g)), k))
    return mu.tolist(), vec


def _matrices(k: int, n: int, size: int | tuple[int, ...] | None,
              draw_matrix: Callable[[int], tuple[FloatArray, BoolArray]], pilot: float, what: str,
              eigen: bool) -> tuple[Any, float]:
    """The rejection rounds shared by the Laplace and Gaussian eigenvalue samplers: ``n`` accepted
    ``(λ, U)`` rows from ``draw_matrix``, returned as ``U diag(λ) Uᵀ`` or, with ``eigen``, as ``(λ, U)``."""
    with blas_limit() if n > 1 else contextlib.nullcontext():
        out, acceptance = _batches(n, draw_matrix, pilot, what)
    shape = (() if size is None else tuple(np.atleast_1d(size)))
    lam, vec = out[:, :k], out[:, k:].reshape(n, k, k)
    if eigen:
        return (lam.reshape(shape + (k,)), vec.reshape(shape + (k, k))), acceptance
    return eig_apply(vec, lam).reshape(shape + (k, k)), acceptance


def _spd_radius_draw(k: int, sigma: float, rho_max: float, env: _PiecewiseExponential,
                     rng: np.random.Generator) -> Callable[[int], tuple[FloatArray, BoolArray]]:
    """The radius stage's rejection round ``draw(m) -> (rho, accepted)``."""

    def draw(m: int) -> tuple[FloatArray, BoolArray]:
        r = env.sample(m, rng)
        la = _spd_radius_log_target(r, k, sigma) - env.log_envelope(r)
        if np.any(la > 1e-9 * (1.0 + np.abs(env.log_envelope(r)))):
            raise RuntimeError("affine-invariant radius envelope violated")
        return r, (np.log(rng.uniform(size=m)) < la) & (r <= rho_max)

    return draw


@lru_cache(maxsize=64)
@disk_cached("spd_sampler_acceptance", is_probability)
def spd_sampler_acceptance(k: int, sigma: float, rho_max: float = np.inf, trials: int = 4000) -> float:
    """Acceptance of the direction stage of ``sample_spd_log_eigen``, estimated from ``trials``
    proposals with a fixed internal seed. Depends on public parameters only."""
    if k < 2:
        return 1.0
    rng = np.random.default_rng(20211)
    env = _spd_radius_envelope(k, float(sigma), float(rho_max))
    what = f"affine-invariant SPD({k}) acceptance pilot (sigma={sigma!r})"
    rho, _ = _batches(trials, _spd_radius_draw(k, float(sigma), float(rho_max), env, rng), 0.9, what)
    a = rho[:, None] * _pilot_gaps(k, trials)
    return float(np.mean(np.exp(np.sum(_log_sinhc(a), axis=-1) - _spd_log_bound(rho, k))))


@lru_cache(maxsize=8)
def _pilot_gaps(k: int, trials: int) -> FloatArray:
    """``|μ_i − μ_j|/2`` (``i < j``) for the eigenvalues ``μ`` of ``trials`` directions uniform on
    the unit sphere of ``Sym(k)`` (a fixed internal seed), shape ``(trials, k(k−1)/2)``, read-only.
    The direction of a proposal is independent of its radius and of ``σ``, so every ``σ``'s pilot
    shares these: a pilot then costs its radii only, not ``trials`` eigendecompositions."""
    d = k * (k + 1) // 2
    g = np.random.default_rng(20_212).standard_normal((trials, d))
    mu = np.linalg.eigvalsh(invvecd(g / np.linalg.norm(g, axis=-1, keepdims=True), k))
    iu = triu_indices(k, 1)
    gaps = np.abs(mu[:, iu[0]] - mu[:, iu[1]]) / 2.0
    gaps.flags.writeable = False
    return gaps


@lru_cache(maxsize=256)
def spd_restricted_acceptance_bound(k: int, sigma: float, radius: float, nodes: int = 4000) -> float:
    """An upper bound on the restricted Laplace sampler's acceptance on affine-invariant SPD(k),
    ``P(direction stage accepts and the proposal lies in B_r(c))`` from a footpoint on the
    boundary (``RiemannianLaplace.restricted_acceptance``): a function of ``(k, σ, r)`` only,
    computed by one deterministic 1-D quadrature (no Monte Carlo, no matrices).

    Proof. A stage-2 proposal is ``exp_η(ρW)``, ``ρ`` from the radius stage truncated at ``2r``,
    ``W`` uniform on the unit sphere of ``T_η`` (independent of ``ρ``), accepted with probability
    ``≤ 1``. SPD(k) is CAT(0), so the side opposite the angle ``θ`` between ``W`` and
    ``log_η c`` is at least its Euclidean comparison (Bridson & Haefliger 1999, II.1.9):
    ``ρ(c, x)² ≥ r² + ρ² − 2rρ cos θ``; inside the ball needs ``cos θ ≥ ρ/(2r)``, of probability
    ``½·I_(1−t²)((d−1)/2, ½)`` at ``t = ρ/(2r)`` for a uniform direction in ``R^d``. The bound is
    its mean over the radius stage's density ``∝ ρ^(d−1) e^(−ρ/σ + B̄(ρ))`` on ``(0, 2r]``, by the
    trapezoid rule on ``nodes`` points. In high dimension it is tiny as soon as ``ρ`` is a fair
    fraction of ``r`` — exactly where the Monte Carlo estimate of the acceptance would need
    millions of matrix proposals to say so."""
    from scipy.special import betainc, logsumexp

    d = k * (k + 1) // 2
    rho = np.linspace(0.0, 2.0 * radius, nodes + 1)[1:]
    log_density = _spd_radius_log_target(rho, k, float(sigma))
    t = np.minimum(rho / (2.0 * radius), 1.0)
    inside = 0.5 * betainc(0.5 * (d - 1), 0.5, 1.0 - t * t) if d > 1 else 0.5 * (t <= 1.0)
    weights = np.exp(log_density - logsumexp(log_density))
    return float(min(np.sum(weights * inside), 1.0))


@lru_cache(maxsize=256)
def spd_acceptance_lower_bound(k: int, sigma: float, rho_max: float = np.inf, nodes: int = 4000) -> float:
    """A lower bound on the direction stage's acceptance (``spd_sampler_acceptance``) by one 1-D
    quadrature, no matrices: since ``φ ≥ 0``, ``exp(Σ φ(a_ij) − B̄(ρ)) ≥ e^(−B̄(ρ))``, so the
    acceptance is at least ``E_q[e^(−B̄(ρ))] = ∫ ρ^(d−1) e^(−ρ/σ) / ∫ ρ^(d−1) e^(−ρ/σ + B̄(ρ))`` over
    ``(0, ρ_max]``. Trapezoid rule on ``nodes`` points up to the bulk's end ``R``; the denominator's
    tail beyond ``R`` is bounded with ``B̄ ≤ c_k ρ`` by an incomplete gamma function and added (the
    bound only falls). Useful for small ``σ`` (``B̄(ρ) ≈ kρ²/24`` at the typical ``ρ ≈ dσ``), where
    the sampler accepts nearly everything: a caller that only needs "acceptance ≥ a threshold"
    skips the Monte Carlo pilot there."""
    from scipy.special import gammaincc, gammaln, logsumexp

    if k < 2:
        return 1.0
    d = k * (k + 1) // 2
    c_k = 0.5 * math.sqrt(k * (k * k - 1) / 3.0)
    slope = 1.0 / sigma - c_k
    if math.isinf(rho_max) and not slope > 0:
        return 0.0
    end = min(rho_max, (d + 60.0 + 10.0 * math.sqrt(d)) * sigma)  # the bulk of ρ^(d−1) e^(−ρ/σ) and beyond
    rho = np.linspace(0.0, end, nodes + 1)[1:]
    with np.errstate(divide="ignore"):
        base = (d - 1) * np.log(rho) - rho / sigma
    numerator = logsumexp(base)
    denominator = logsumexp(base + _spd_log_bound(rho, k))
    if end < rho_max:
        if not slope > 0:
            return 0.0
        step = end / nodes
        tail = gammaln(d) + math.log(max(float(gammaincc(d, slope * end)), 1e-300)) - d * math.log(slope) - math.log(step)
        denominator = np.logaddexp(denominator, tail)
    return float(min(math.exp(numerator - denominator), 1.0))


def spd_laplace_proposals(k: int, sigma: float, rho_max: float, m: int,
                          rng: np.random.Generator) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``m`` stage-2 proposals of ``sample_spd_log_eigen`` (truncated at ``rho_max``) with their
    acceptance probabilities: ``(λ, U, p)``, ``p = exp(Σ φ(a_ij) − B̄(ρ)) ∈ [0, 1]``. A pilot that
    averages ``p`` over a fixed number of proposals costs the same whatever the acceptance,
    where rejection would cost ``1/acceptance`` proposals per accepted draw."""
    env = _spd_radius_envelope(k, float(sigma), float(rho_max))
    what = f"affine-invariant SPD({k}) proposals (sigma={sigma!r})"
    rho, _ = _batches(m, _spd_radius_draw(k, float(sigma), float(rho_max), env, rng), 0.9, what)
    d = k * (k + 1) // 2
    g = rng.standard_normal((m, d))
    g /= np.linalg.norm(g, axis=-1, keepdims=True)
    mu, vec = np.linalg.eigh(invvecd(g, k))
    lam = rho[:, None] * mu
    iu = triu_indices(k, 1)
    a = np.abs(lam[:, iu[0]] - lam[:, iu[1]]) / 2.0
    p = np.exp(np.minimum(np.sum(_log_sinhc(a), axis=-1) - _spd_log_bound(rho, k), 0.0))
    return lam, vec, p


# --- the Riemannian Gaussian on affine-invariant SPD(k) ---------------------------------------
#
# Said, Bombrun, Berthoumieu & Manton (2017, Prop. 4 / eq. (10)): the Gaussian law
# ∝ exp(−ρ²(I, X)/(2σ²)) on SPD(k) is X = U diag(e^r) Uᵀ with U Haar and the log-eigenvalues r of
# density ∝ exp(−|r|²/(2σ²)) ∏_(i<j) sinh(|r_i − r_j|/2). The same two stages as the Laplace:
# S = ρW ∈ Sym(k), ρ from ∝ ρ^(d−1) e^(−ρ²/(2σ²) + B(ρ)), W uniform on the unit sphere, accepted with
# exp(Σ φ(a_ij) − B(ρ)) ≤ 1. B is the Jensen bound B̄ when the radius law is then log-concave
# (σ² ≤ 12/k: φ'' ≤ 1/3, so P·φ(ρ/√(2(k−1)))'' ≤ k/12), else the linear bound c_k ρ.


def _gaussian_bound_is_jensen(k: int, sigma: float) -> bool:
    return k >= 2 and sigma * sigma <= 12.0 / k


def _gaussian_log_bound(rho: ArrayLike, k: int, sigma: float) -> FloatArray:
    """``B(ρ) ≥ Σ φ(a_ij)`` used by the Gaussian's two stages (see above)."""
    if k < 2:
        return np.zeros_like(np.asarray(rho, float))
    if _gaussian_bound_is_jensen(k, sigma):
        return _spd_log_bound(rho, k)
    return cast(FloatArray, 0.5 * np.sqrt(k * (k * k - 1) / 3.0) * np.asarray(rho, float))


def _gaussian_bound_slope(rho: ArrayLike, k: int, sigma: float) -> FloatArray:
    """A supergradient of ``B`` (the derivative of the smaller of its two pieces)."""
    rho = np.asarray(rho, float)
    c_k = 0.5 * np.sqrt(k * (k * k - 1) / 3.0) if k > 1 else 0.0
    if k < 2:
        return np.zeros_like(rho)
    if not _gaussian_bound_is_jensen(k, sigma):
        return np.full_like(rho, c_k)
    s = np.sqrt(2.0 * (k - 1))
    a = np.maximum(rho / s, 1e-300)
    with np.errstate(all="ignore"):
        dphi = np.where(a < 1e-3, a / 3.0, 1.0 / np.tanh(a) - 1.0 / a)
    jensen = k * (k - 1) / 2.0 * dphi / s
    return np.where(_spd_log_bound(rho, k) < c_k * rho, jensen, c_k)


@lru_cache(maxsize=64)
def _gaussian_radius_stage(k: int, sigma: float) -> tuple[LogDensity, _PiecewiseExponential, float]:
    d = k * (k + 1) // 2
    inv = 1.0 / (sigma * sigma)
    with np.errstate(divide="ignore"):
        log_f: LogDensity = lambda r: (d - 1) * np.log(r) - 0.5 * inv * r * r + _gaussian_log_bound(r, k, sigma)
        dlog_f: LogDensity = lambda r: (d - 1) / r - inv * r + _gaussian_bound_slope(r, k, sigma)
    env, top = log_concave_envelope(log_f, dlog_f, 0.0, np.inf)
    return log_f, env, top


@blas_limited
def _gaussian_matrices(k: int, sigma: float, m: int, rng: np.random.Generator) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``m`` stage-2 proposals: ``(λ, U, log acceptance ratio)``."""
    d = k * (k + 1) // 2
    log_f, env, top = _gaussian_radius_stage(k, float(sigma))
    rho, _ = _sample_from_envelope(log_f, env, top, m, rng, f"affine-invariant SPD({k}) Gaussian radius (sigma={sigma!r})")
    g = rng.standard_normal((m, d))
    g /= np.linalg.norm(g, axis=-1, keepdims=True)
    mu, vec = np.linalg.eigh(invvecd(g, k))
    lam = rho[:, None] * mu
    iu = triu_indices(k, 1)
    a = np.abs(lam[:, iu[0]] - lam[:, iu[1]]) / 2.0
    la = np.sum(_log_sinhc(a), axis=-1) - _gaussian_log_bound(rho, k, sigma)
    return lam, vec, la


@lru_cache(maxsize=64)
@disk_cached("spd_gaussian_acceptance", is_probability)
def spd_gaussian_acceptance(k: int, sigma: float, trials: int = 4000) -> float:
    """Acceptance of the Gaussian's direction stage, from ``trials`` proposals with a fixed
    internal seed: a function of the public ``(k, σ)`` only."""
    if k < 2:
        return 1.0
    _, _, la = _gaussian_matrices(k, float(sigma), trials, np.random.default_rng(20_170))
    return float(np.mean(np.exp(np.minimum(la, 0.0))))


def sample_spd_gaussian_log_eigen(k: int, sigma: float, size: int | tuple[int, ...] | None, rng: RngLike, *,
                                  eigen: bool = False) -> tuple[Any, float]:
    """Exact draws ``S ∈ Sym(k)`` whose eigenvalues ``r`` have density
    ``∝ exp(−|r|²/(2σ²)) ∏_(i<j) sinh(|r_i − r_j|/2)`` and Haar eigenvectors (Said et al. 2017):
    ``η^½ Expm(S) η^½`` is an exact draw of the affine-invariant Riemannian Gaussian at ``η``.
    Returns ``(S, acceptance)`` or, with ``eigen=True``, ``((λ, U), acceptance)``. Refuses
    (``ValueError``, public parameters only) a scale whose public acceptance is below 1e-3."""
    rng = as_generator(rng)
    pilot = spd_gaussian_acceptance(k, float(sigma))
    if pilot < 1e-3:
        raise ValueError(f"the exact affine-invariant Gaussian sampler for SPD({k}) accepts about {pilot:.1e} of its "
                         f"proposals at sigma={sigma!r}; use a larger epsilon or n, or the log-Euclidean metric")
    n = int(np.prod(size)) if size is not None else 1
    what = f"affine-invariant SPD({k}) Gaussian sampler (sigma={sigma!r})"

    def draw_matrix(m: int) -> tuple[FloatArray, BoolArray]:
        lam, vec, la = _gaussian_matrices(k, float(sigma), m, rng)
        if np.any(la > 1e-9):
            raise RuntimeError("affine-invariant Gaussian direction envelope violated")
        ok = np.log(rng.uniform(size=m)) < la
        return np.concatenate([lam, vec.reshape(m, -1)], axis=-1), ok

    return _matrices(k, n, size, draw_matrix, pilot, what, eigen)


def _k(manifold: Manifold) -> int:
    return cast("SPDAffineInvariant", manifold).k


def _moved(eta: Array, lam: FloatArray, vec: FloatArray) -> FloatArray:
    """``η^½ Expm(S) η^½`` with ``Expm`` from the draw's own eigenpairs ``(λ, U)``."""
    half, _ = sqrtm_spd(eta)
    return sym(half @ eig_apply(vec, np.exp(lam)) @ half)


@dataclass(frozen=True)
class SPDLogEigenSampler:
    """The affine-invariant SPD sampler (follows ``manifolds.capabilities.LaplaceSampler``): the
    law at ``I`` by its eigenvalue construction (Hajri et al. 2016; Said et al. 2017 for the
    Gaussian), moved to ``η`` by the isometry ``X ↦ η^½ X η^½``."""

    name: str = "spd_log_eigen"
    description: str = "eigenvalue construction, two-stage rejection"
    radial: bool = False
    gaussian: bool = True
    gaussian_calibration: str | None = "triangle"

    def supports_ball(self, manifold: Manifold) -> bool:
        """No: the cap sampler needs a radial space of constant curvature."""
        return False

    def check_samplable(self, manifold: Manifold, sigma: float, rho_max: float) -> None:
        """Refuse where the exact sampler would refuse at draw time (its public pilot acceptance
        < 1e-3). Where the quadrature lower bound ``spd_acceptance_lower_bound`` is already ≥ 1e-2
        the Monte Carlo pilot is not needed here (it runs at draw time, to size the batches)."""
        k = _k(manifold)
        if spd_acceptance_lower_bound(k, float(sigma), float(rho_max)) >= 1e-2:
            return
        pilot = spd_sampler_acceptance(k, float(sigma), float(rho_max))
        if pilot < 1e-3:
            raise ValueError(f"the exact affine-invariant Laplace sampler for {manifold!r} accepts about {pilot:.1e} of its "
                             f"proposals at sigma={sigma:.4g}; use a larger epsilon or n, a smaller radius, or the "
                             "log-Euclidean metric")

    def draw(self, manifold: Manifold, eta: Array, sigma: float, n: int, rng: np.random.Generator,
             rho_max: float) -> tuple[Array, float]:
        """The law at ``I`` by its eigenvalue construction, moved to ``η``."""
        (lam, vec), acceptance = sample_spd_log_eigen(_k(manifold), sigma, n, rng, rho_max=rho_max, eigen=True)
        return _moved(eta, lam, vec), acceptance

    def restricted_acceptance(self, manifold: Manifold, sigma: float, center: Array, radius: float, edge: Array,
                              trials: int, rng: np.random.Generator) -> float:
        """In bounded time and memory: where the public bound ``spd_restricted_acceptance_bound`` (a
        quadrature) is already below half of ``FIXED_WORK_MINIMUM`` the law is refused on it; else
        the mean, over ``trials`` stage-2 proposals (chunks of ``PILOT_CHUNK``), of their acceptance
        probability times whether they land in the ball — the same quantity as accepted-and-inside
        over proposals, without the ``1/acceptance`` proposals per accepted draw of rejection
        (millions of ``k × k`` eigendecompositions near the sampler's limit)."""
        m, k = manifold, _k(manifold)
        bound = spd_restricted_acceptance_bound(k, float(sigma), float(radius))
        if bound < 0.5 * FIXED_WORK_MINIMUM:
            return bound
        half, _ = sqrtm_spd(edge)
        total = 0.0
        for start in range(0, trials, PILOT_CHUNK):
            size = min(PILOT_CHUNK, trials - start)
            lam, vec, p = spd_laplace_proposals(k, float(sigma), 2.0 * radius, size, rng)
            x = sym(half @ eig_apply(vec, np.exp(lam)) @ half)
            total += float(np.sum(p * (np.asarray(m.dist(center, x)) <= radius)))
        return min(max(total / trials, 0.5 / trials), bound)

    def footpoint_constants(self, manifold: Manifold, eta: Array) -> Any:
        """``η^½`` (at ``k = 2`` as Python floats: the single sampler reads floats)."""
        return sqrtm_spd_one(eta, floats=eta.shape == (2, 2))

    def single_sampler(self, manifold: Manifold, sigma: float) -> Any:
        return spd_laplace_single_sampler(_k(manifold), float(sigma))

    def single_draw(self, manifold: Manifold, kept: Any, eta: Array, constants: Any,
                    rng: np.random.Generator) -> tuple[Array, int]:
        x, proposals = kept.draw(rng, constants)
        return x, proposals

    def check_gaussian(self, manifold: Manifold, sigma: float) -> None:
        """Refuse where the exact Gaussian sampler would be hopeless (a very large ``σ``)."""
        if spd_gaussian_acceptance(_k(manifold), float(sigma)) < 1e-3:
            raise ValueError(f"the exact affine-invariant Gaussian sampler for {manifold!r} at sigma={sigma:.4g} accepts "
                             "under 1e-3 of its proposals; use a larger epsilon or n")

    def gaussian_draw(self, manifold: Manifold, eta: Array, sigma: float, n: int,
                      rng: np.random.Generator) -> Array:
        (lam, vec), _ = sample_spd_gaussian_log_eigen(_k(manifold), sigma, n, rng, eigen=True)
        return _moved(eta, lam, vec)


SPD_LOG_EIGEN = SPDLogEigenSampler()
