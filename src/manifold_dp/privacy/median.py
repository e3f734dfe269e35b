"""The private Fréchet median: the geometric median ``argmin_m (1/n) Σ ρ(m, x_i)`` of records
in a public ball, released by the K-norm gradient mechanism (KNG).

Where ``m ≠ x_i`` the objective's gradient is ``∇F(m) = −(1/n) Σ log_m(x_i)/ρ(m, x_i)``: a mean
of unit vectors (a term is 0 where ``m = x_i``; the field is then a subgradient). Replacing one
record moves it by at most ``2/n`` at every ``m``, whatever the spread of the data: no
curvature constant and no clipping enter the bound, only that ``log_m(x_i)`` is defined for
every ``m`` in the ball (Hadamard spaces always; on the sphere the records are clipped into
``B_r(c)``, ``r < r*``, so ``ρ(m, x_i) ≤ 2r`` stays below the injectivity radius). KNG draws
``∝ exp(−‖∇F(x)‖/σ)`` on ``B_r(c)``, ε-DP at ``σ = 2Δ/ε`` (Soto et al. 2022, Thm 1; Reimherr &
Awan 2019). The proofs, the envelope and what the guarantee leaves out: docs/statistics.md.

The sampler is exact rejection from a proposal ``∝ exp(−G(ρ(μ, x))/σ)`` with ``G`` a lower bound
of ``‖∇F‖`` (``median_envelope``) around a computed median ``μ`` (``weiszfeld_median``): the cap
sampler ``_ball_draw`` on spaces of constant curvature, geodesic polar coordinates elsewhere.
``μ`` and ``G`` shape the proposal only; the accepted law is KNG's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._typing import Array, FloatArray
from ..manifolds.base import Manifold
from ..manifolds.euclidean import Euclidean
from ..manifolds.matrix import sqrtm_spd, sym
from . import measurements
from .accounting import PrivacyAccountant
from .float64_reach import check_ball
from .mechanisms import _ball_draw, ball_sampler_applies, is_hadamard
from .public import PublicParams
from .release import Calibration, PrivateRelease, ReleaseWarning, Statistic, _warn, check_round_to, output_grid, release_statistic
from .samplers import sample_radius_concave_volume
from .spd_sampler import SPDLogEigenSampler, _log_sinhc

if TYPE_CHECKING:
    from ..manifolds.spd import SPDAffineInvariant

__all__ = ["median_gradient", "median_sensitivity", "weiszfeld_median", "median_envelope", "MedianKNG",
           "median_measurement", "FrechetMedian", "FRECHET_MEDIAN", "private_frechet_median"]

ENVELOPE_CELLS = 1000  # grid cells of the envelope G on [0, reach]
SLOW_MEDIAN_DIMENSION = 12  # from this dimension on, the median warns that its sampler may run very long
SLOW_SPD_MEDIAN_DIMENSION = 10  # on affine-invariant SPD (polar proposals, anisotropic ‖∇F‖), from k = 4
GRADIENT_BLOCK = 2_000_000  # proposals × records per block of the gradient (bounded memory at any n)


MEDIAN_MAX_REACH = 2.0**500  # radius + the centre's largest coordinate: (2·reach)² stays far below float64's 1.8e308


def envelope_margin(n: int) -> float:
    """How far below the proved lower bound of ``‖∇F‖`` the sampler's envelope is set (public):
    the float64 summation error of a gradient of ``n`` unit terms, ``(n + 16)·2^-50``, plus
    ``2^-40`` for the rounding of the envelope itself; the acceptance loses a factor
    ``e^(−margin/σ)`` at most."""
    return (int(n) + 16) * 2.0**-50 + 2.0**-40


def median_sensitivity(n: int) -> float:
    """``Δ = 2/n``, plus the float64 rounding of a mean of ``n`` unit vectors and its norm,
    ``(n + 16)·2^-50`` (≥ 8nu with u = 2^-53: Higham 2002, §4.2, per coordinate, ≤ 9 coordinates).
    The field's other ``n − 1`` terms are computed from the same inputs, bit for bit."""
    return 2.0 / n + (n + 16) * 2.0**-50


def median_gradient(manifold: Manifold, x: ArrayLike, X: ArrayLike) -> Array:
    """``∇F(x) = −(1/n) Σ log_x(x_i)/‖log_x(x_i)‖`` (a term is 0 where ``x_i = x``), for one point
    or a batch ``(k, *point_shape)``. Each term is normalised by its own computed norm, so it is a
    unit vector to rounding, whatever the distance."""
    m, X, x = manifold, np.asarray(X), np.asarray(x)
    single = x.ndim == len(m.point_shape)
    y = x[None] if single else x
    out = np.zeros(y.shape, dtype=np.result_type(y, X))
    rows = max(1, GRADIENT_BLOCK // max(len(X), 1))
    for s in range(0, len(y), rows):
        yb = y[s:s + rows, None]
        with np.errstate(all="ignore"):
            v = m.log(yb, X[None])
            norm = np.asarray(m.norm(yb, v), float)
            scale = np.where(norm > 0, 1.0 / np.where(norm > 0, norm, 1.0), 0.0)
            out[s:s + rows] = -np.mean(v * m._expand(scale), axis=1)
    return out[0] if single else out


def _clip_into(m: Manifold, point: Array, center: Array, radius: float) -> Array:
    """``point`` moved along the geodesic from ``center`` into ``B_radius(center)``."""
    v = m.log(center, point)
    size = float(m.norm(center, v))
    return point if size <= radius else m.exp(center, v * (radius * (1.0 - 1e-12) / size))


def weiszfeld_median(manifold: Manifold, X: ArrayLike, start: ArrayLike, iterations: int = 200) -> Array:
    """The Riemannian Weiszfeld iteration ``m ← exp_m(Σ w_i log_m x_i / Σ w_i)``, ``w_i = 1/ρ(m, x_i)``
    over the records with ``ρ > 0`` (Fletcher, Venkatasubramanian & Joshi 2009, NeuroImage 45, the
    geometric median on Riemannian manifolds). Stops when the step is below ``1e-13`` of the
    records' spread or after ``iterations``. Its accuracy only shapes the sampler's proposal: the
    released law does not depend on it."""
    m, X = manifold, np.asarray(X)
    mu = np.asarray(start, dtype=m.dtype)
    for _ in range(iterations):
        with np.errstate(all="ignore"):
            v = m.log(mu[None], X)
            d = np.asarray(m.norm(mu[None], v), float)
        w = np.where(d > 0, 1.0 / np.where(d > 0, d, 1.0), 0.0)
        if not np.any(w > 0):
            return mu
        step = np.sum(v * m._expand(w / np.sum(w)), axis=0)
        size = float(m.norm(mu, step))
        mu = m.exp(mu, step)
        if size <= 1e-13 * (1.0 + float(np.max(d))):
            break
    return mu


def _sn(kappa: float, t: FloatArray) -> FloatArray:
    """``sn_κ(t)``: ``sin(√κ t)/√κ``, ``t`` or ``sinh(√−κ t)/√−κ``."""
    if kappa > 0:
        return np.asarray(np.sin(np.sqrt(kappa) * t) / np.sqrt(kappa))
    if kappa < 0:
        return np.asarray(np.sinh(np.sqrt(-kappa) * t) / np.sqrt(-kappa))
    return np.asarray(t, float)


def _cs(kappa: float, t: FloatArray) -> FloatArray:
    """``cs_κ(t) = sn_κ'(t)``."""
    if kappa > 0:
        return np.asarray(np.cos(np.sqrt(kappa) * t))
    if kappa < 0:
        return np.asarray(np.cosh(np.sqrt(-kappa) * t))
    return np.ones_like(np.asarray(t, float))


def median_envelope(manifold: Manifold, X: ArrayLike, mu: ArrayLike, radius: float, reach: float,
                    cells: int = ENVELOPE_CELLS) -> tuple[FloatArray, FloatArray]:
    """``(grid, G)``: ``G`` non-decreasing, linear between the ``grid`` points on ``[0, reach]``,
    with ``G(ρ(μ, x)) ≤ ‖∇F(x)‖`` for every ``x`` of ``B_radius`` (records and ``μ`` in the ball).

    Along the unit geodesic ``γ(s) = exp_μ(su)``, ``Φ(s) = F(γ(s))`` is convex and
    ``‖∇F(γ(t))‖ ≥ Φ'(t)``; three lower bounds of ``Φ'(t)``, uniform in ``u`` (docs/statistics.md):

    - *far field* (CAT(κ), ``κ = κmax``): a record at ``a_i = ρ(μ, x_i) < t`` is seen from ``γ(t)``
      within an angle ``arcsin(sn(a_i)/sn(t))`` of the direction back to ``μ``, so its term of
      ``Φ'`` is ``≥ √(1 − sn²(a_i)/sn²(t))``; ``−1`` otherwise;
    - *curvature*, constant curvature ``κ``: ``Φ'(t) ≥ −‖∇F(μ)‖ + ∫_0^t h``, where the Hessian of
      ``ρ(·, x_i)`` is ``cs/sn(ρ_i)·sin²β_i`` and the law of sines gives ``sin β_i = sin θ_i
      sn(a_i)/sn(ρ_i)``, ``θ_i`` the angle at ``μ``: ``Φ'' ≥ Σ w_i sin²θ_i/n``,
      ``w_i = sn²(a_i) cs(ρ̄_i)/sn³(ρ̄_i)``, ``ρ̄_i = min(s + a_i, 2r)``, and the minimum over ``u``
      of ``Σ w_i sin²θ_i`` is ``tr M − λmax(M)``, ``M = Σ w_i e_i e_iᵀ`` (``e_i`` the unit
      directions to the records at ``μ``);
    - *curvature*, Hadamard spaces of varying curvature: the angle at ``γ(t)`` is at most that of the
      Euclidean comparison triangle, whose cosine, over third sides ``ρ_i ≥`` the Euclidean hinge
      ``|tu − log_μ x_i|``, is at least the flat term or, where ``a_i < t cos θ_i``,
      ``√(1 − a_i²/t²)``; so ``Φ'(t) ≥ −‖∇F(μ)‖ + ∫_0^t h − (1/n) Σ_(a_i < t) (1 − √(1 − a_i²/t²))``
      with the flat ``w_i``; and the secant: ``F(γ(t)) ≥ F_E(tu)``, the Euclidean median objective
      of ``log_μ(x_i)`` (``exp_μ`` does not shrink distances), ``F_E(0) = F(μ)``, so
      ``Φ'(t) ≥ (F_E(tu) − F_E(0))/t ≥ −‖∇F(μ)‖ + (1/t)∫_0^t (t − s) h(s) ds``.

    ``h`` is taken at each cell's right end (every ``w_i`` decreases in ``s`` and ``tr − λmax`` is
    monotone in the Loewner order); each bound is taken at its smallest over a cell (all but the
    angle comparison are non-decreasing in ``t``; its correction is taken at its largest), and ``G`` at an inner
    grid point is the smaller of its two cells' bounds (and ≥ 0): linear interpolation then stays
    below them. ``G`` is non-decreasing where the third bound is not used."""
    m, X = manifold, np.asarray(X)
    mu = np.asarray(mu)
    n, d = len(X), m.dim
    lo, kappa = (float(b) for b in m.curvature_bounds)
    grid = np.linspace(0.0, reach, cells + 1)
    with np.errstate(all="ignore"):
        v = m.log(mu[None], X)
        a = np.asarray(m.norm(mu[None], v), float)
    far = np.full(cells + 1, -1.0)
    sn_t = _sn(kappa, grid[1:])
    far[1:] = np.mean(np.where(a[None, :] < grid[1:, None],
                               np.sqrt(np.clip(1.0 - (_sn(kappa, a)[None, :] / sn_t[:, None]) ** 2, 0.0, 1.0)), -1.0), axis=1)
    best = far
    if d >= 2 and (lo == kappa or is_hadamard(m)):
        e = float(m.norm(mu, median_gradient(m, mu, X)))
        basis = m.from_tangent_coordinates(mu, np.eye(d))
        coords = np.stack([np.asarray(m.inner(mu[None], v, b[None]), float) for b in basis], axis=1)
        coords *= np.where(a > 0, 1.0 / np.where(a > 0, a, 1.0), 0.0)[:, None]
        k = kappa if lo == kappa else 0.0  # varying curvature: the Euclidean comparison in T_μ M
        rho = np.minimum(grid[1:, None] + a[None, :], 2.0 * radius)
        w = np.where(a[None, :] > 0, _sn(k, a)[None, :] ** 2 * _cs(k, rho) / _sn(k, rho) ** 3, 0.0)
        scatter = np.einsum("ki,ij,il->kjl", w, coords, coords) / n
        eig = np.linalg.eigvalsh(scatter)
        h = np.maximum(eig.sum(axis=1) - eig[:, -1], 0.0)  # at the right end of each cell
        curv = -e + np.concatenate([[0.0], np.cumsum(h * np.diff(grid))])
        if lo != kappa:  # the angle comparison costs records nearer μ than t: per cell, its largest value
            curv[:-1] -= _hadamard_correction(grid, a)
            # and the secant (1/t) ∫_0^t (t − s) h: on cell j, h_j ((t − t_j)² − (t − t_(j+1))²)/2 for t ≥ t_(j+1)
            t = grid[:, None]
            part = np.where(t >= grid[None, 1:], ((t - grid[None, :-1]) ** 2 - (t - grid[None, 1:]) ** 2) / 2.0, 0.0)
            best = np.maximum(best, -e + np.concatenate([[0.0], (part[1:] @ h) / grid[1:]]))
        best = np.maximum(best, curv)
    cells_bound = np.maximum(best[:-1], 0.0)  # valid on each whole cell [t_k, t_(k+1)]
    # G at an inner grid point is the smaller of its two cells' bounds: linear interpolation stays below both
    return grid, np.concatenate([[0.0], np.minimum(cells_bound[:-1], cells_bound[1:]), cells_bound[-1:]])


def _hadamard_correction(grid: FloatArray, a: FloatArray) -> FloatArray:
    """Per cell ``[t_k, t_(k+1)]``, the largest over the cell of ``(1/n) Σ_(a_i < t) (1 − √(1 − a_i²/t²))``:
    ``1/n`` for each record with ``t_k ≤ a_i < t_(k+1)`` (the term is 1 at ``t = a_i`` and decreases),
    and the term at ``t_k`` for those with ``a_i < t_k``."""
    left, right = grid[:-1, None], grid[1:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = np.where(a[None, :] < left, 1.0 - np.sqrt(np.clip(1.0 - (a[None, :] / left) ** 2, 0.0, 1.0)), 0.0)
    entering = (a[None, :] >= left) & (a[None, :] < right)
    return cast(FloatArray, np.mean(np.where(entering, 1.0, inner), axis=1))


@dataclass(frozen=True)
class MedianKNG:
    """KNG of the Fréchet median: density ``∝ exp(−‖∇F(x; D)‖/σ)`` on ``B_radius(center)``,
    ``F(x) = (1/n) Σ ρ(x, x_i)``; ε-DP at ``σ = 2Δ/ε``, ``Δ = median_sensitivity(n)``.

    Exact rejection: propose ``∝ exp(−g(x)/σ)`` with ``g ≤ ‖∇F‖`` on the ball, accept with
    ``exp(−(‖∇F(x)‖ − g(x))/σ)``; a ratio above 1 beyond rounding raises (a broken envelope).
    ``g = G(ρ(μ, x))`` (``median_envelope``). Constant curvature, ``d ≥ 2``: drawn by the cap sampler
    ``_ball_draw`` (no proposal outside the ball). Otherwise (affine-invariant SPD, the line) in
    geodesic polar coordinates at ``μ`` (``exp_μ`` is a diffeomorphism there): ``ρ`` from
    ``∝ ρ^(d−1) e^(−G(ρ)/σ + cρ)``, a uniform unit direction ``u``, ``x = exp_μ(ρu)``, kept with
    probability ``J(ρu) e^(−cρ)·1{x ∈ B}`` (``J`` the density of the volume in normal coordinates,
    ``log J ≤ cρ``; ``_log_jacobian``). Proposals are drawn until ``size`` are accepted: success
    never depends on the data, the running time does (docs/security.md)."""

    manifold: Manifold
    sigma: float
    center: Array
    radius: float

    def sample_with_stats(self, records: Array, mu: Array, size: int | None = None, *,
                          rng: RngLike = None) -> tuple[Array, float]:
        """``(draws, acceptance)``; the acceptance depends on the data: it is not private."""
        m, rng = self.manifold, as_generator(rng)
        want = 1 if size is None else int(size)
        mu = _clip_into(m, np.asarray(mu), self.center, self.radius)
        reach = min(self.radius + float(m.dist(self.center, mu)), 2.0 * self.radius,
                    float(getattr(m, "radial_range", (0.0, np.inf))[1]))
        grid, G = median_envelope(m, records, mu, self.radius, reach)
        # a lower envelope of G that is non-decreasing (the cap sampler's near-centre branch needs it) and lies
        # ENVELOPE_MARGIN below it, so that rounding in ‖∇F‖ or G can never make a ratio exceed 1: any ratio
        # above 1 is then a broken envelope and raises, none is clipped
        G = np.maximum(np.minimum.accumulate(G[::-1])[::-1] - envelope_margin(len(records)), 0.0)
        out, have, proposed, k = [], 0, 0, 0
        block = max(8, GRADIENT_BLOCK // len(records))
        while have < want:
            # 1.5× the proposals the acceptance so far expects to need; before the first acceptance, four times the
            # last batch (a batch of the largest size at a low acceptance would draw and evaluate far more than needed)
            k = int(min(max(8, 1.5 * (want - have) * proposed / have if have else 4 * k), block))
            y, log_keep = self._propose(mu, grid, G, k, rng)
            grad = np.asarray(m.norm(y, median_gradient(m, y, records)), float)
            log_ratio = -(grad - np.interp(np.asarray(m.dist(mu, y), float), grid, G)) / self.sigma
            if np.any(log_ratio > 0.0):
                raise RuntimeError("median KNG envelope violated: G(ρ(μ, x)) > ‖∇F(x)‖ somewhere in the ball")
            keep = np.log(rng.uniform(size=k)) < log_ratio + log_keep
            out.append(y[keep])
            have, proposed = have + int(keep.sum()), proposed + k
        draws = np.concatenate(out)[:want]
        return (draws[0] if size is None else draws), have / proposed

    def _propose(self, mu: Array, grid: FloatArray, G: FloatArray, k: int,
                 rng: np.random.Generator) -> tuple[Array, FloatArray]:
        """``k`` proposals and the log of the probability of keeping each before the KNG ratio."""
        m = self.manifold
        if ball_sampler_applies(m):
            return _ball_draw(m, mu, self.center, self.radius, grid, G, self.sigma, k, rng)[0], np.zeros(k)
        growth = _jacobian_growth(m)
        rho, _ = sample_radius_concave_volume(Euclidean(m.dim), grid, G - self.sigma * growth * grid, self.sigma, k, rng)
        u = m.random_unit_tangent(mu, size=k, rng=rng)
        y = m.exp(mu, u * m._expand(rho))
        # 2^-40 below the proved bound log J ≤ cρ (a constant factor, which the accepted law does not see), so
        # that rounding in log J never makes a ratio exceed 1: any ratio above 1 raises, none is clipped
        log_keep = _log_jacobian(m, mu, u, rho) - growth * rho - 2.0**-40
        if np.any(log_keep > 0.0):
            raise RuntimeError("median KNG volume envelope violated: log J > cρ")
        inside = np.asarray(m.dist(self.center, y), float) <= self.radius
        return y, np.where(inside, log_keep, -np.inf)


def _is_spd_log_eigen(m: Manifold) -> bool:
    """Whether ``m`` declares the affine-invariant SPD eigenvalue construction (its Laplace sampler,
    a capability): then ``_log_jacobian`` knows its volume density in normal coordinates."""
    return isinstance(m.laplace_sampler, SPDLogEigenSampler)


def _jacobian_growth(m: Manifold) -> float:
    """``c`` with ``log J(ρu) ≤ cρ`` for every unit ``u``: 0 on a flat space; ``c_k = ½√(k(k²−1)/3)``
    on affine-invariant SPD(k) (``φ(a) ≤ a`` and ``Σ_(i<j)|λ_i − λ_j|/2 ≤ c_k`` for ``‖λ‖ = 1``)."""
    if not _is_spd_log_eigen(m):
        return 0.0
    k = cast("SPDAffineInvariant", m).k
    return 0.5 * float(np.sqrt(k * (k * k - 1) / 3.0))


def _log_jacobian(m: Manifold, mu: Array, u: Array, rho: FloatArray) -> FloatArray:
    """``log J(ρu)``: the Riemannian volume in normal coordinates at ``μ`` over Lebesgue. Flat: 0.
    Affine-invariant SPD (``laplace_sampler == "spd_log_eigen"``): ``Σ_(i<j) log(sinh a_ij/a_ij)``,
    ``a_ij = ρ|λ_i − λ_j|/2``, ``λ`` the eigenvalues of ``μ^-½ u μ^-½`` (Hajri et al. 2016; the same
    polar form as ``spd_sampler.sample_spd_log_eigen``), at most ``c_k ρ`` (``volume_growth_rate``)."""
    lo, hi = m.curvature_bounds
    if lo == hi == 0:
        return np.zeros_like(np.asarray(rho, float))
    if not _is_spd_log_eigen(m):
        raise ValueError(f"no volume density in normal coordinates is known for {m!r}")
    half, _ = sqrtm_spd(mu)
    inv_half = np.linalg.inv(half)
    lam = np.linalg.eigvalsh(sym(inv_half @ u @ inv_half))
    iu = np.triu_indices(lam.shape[-1], 1)
    a = np.abs(lam[:, iu[0]] - lam[:, iu[1]]) * np.asarray(rho, float)[:, None] / 2.0
    return cast(FloatArray, np.sum(_log_sinhc(a), axis=-1))


def median_measurement(manifold: Manifold, n: int, epsilon: float, *, center: Array, radius: float) -> measurements.Measurement:
    """The median's KNG as a ``Measurement`` (public values only). Refuses, before any record is
    read, a space without an envelope or a proposal here: curvature neither constant nor ``≤ 0``
    (Kendall shapes), or varying curvature without a known volume density in normal coordinates."""
    lo, hi = (float(b) for b in manifold.curvature_bounds)
    polar = (lo == hi == 0.0) or (is_hadamard(manifold) and _is_spd_log_eigen(manifold))
    if not (ball_sampler_applies(manifold) or polar):
        raise ValueError(f"the private Fréchet median needs constant curvature (dimension >= 2), a flat space or "
                         f"affine-invariant SPD; {manifold!r} has curvature bounds {(lo, hi)}")
    sens = median_sensitivity(n)
    sigma = measurements.pure_scale(sens, epsilon, footpoint_free=False)
    sampler = ("exact rejection under a radial lower bound of ‖∇F‖ around a Weiszfeld median, "
               + ("proposals inside the ball (cap sampler)" if ball_sampler_applies(manifold) else
                  "proposals in geodesic polar coordinates, volume density accepted exactly")
               + "; its running time depends on the data: do not publish it")
    law = MedianKNG(manifold, sigma, center, float(radius))
    return measurements.Measurement(
        "kng", "K-norm gradient (KNG) of the Fréchet median", "Soto et al. 2022, Thm 1 (Reimherr & Awan 2019)",
        epsilon, 0.0, sens, sigma, "σ = 2Δ/ε (normalising constant depends on the data)",
        f"B_r(center), r = {radius:g}", sampler, "median_gradient_field", law, acceptance_public=False, restricted=True)


class FrechetMedian(Statistic):
    """``argmin_m (1/n) Σ ρ(m, x_i)`` of the records clipped into the public ball, released by KNG
    on its gradient field (``MedianKNG``). ``compute`` gives ``(records, μ)``: the prepared
    records and a Weiszfeld median, which only shapes the proposal."""

    name: str = "frechet_median"
    mechanisms: tuple[str, ...] = ("kng",)
    radius_auto: bool = False
    cli_name: str = "median"

    def stages(self, manifold: Manifold, p: PublicParams, radius: float, epsilon: float,
               round_to: float | str | None, warn: bool = True) -> tuple[Calibration, float | None]:
        """``(calibration, output grid)`` from public values only."""
        check_ball(manifold, p.center, radius)
        reach = float(radius) + float(np.max(np.abs(manifold.to_ambient(p.center)) if manifold.ambient_dim else 0.0))
        if not reach <= MEDIAN_MAX_REACH:  # squared distances in the envelope and ∇F would overflow for some data
            raise ValueError(f"the private Fréchet median needs radius + |center| <= 2^500 (about {MEDIAN_MAX_REACH:.3g}) "
                             f"in the space's coordinates, got radius={radius!r}: rescale the data first")
        meas = median_measurement(manifold, p.n, epsilon, center=p.center, radius=radius)
        slow = SLOW_SPD_MEDIAN_DIMENSION if _is_spd_log_eigen(manifold) else SLOW_MEDIAN_DIMENSION
        if warn and manifold.dim >= slow:  # public: the space and its dimension only
            _warn(f"the private Fréchet median in dimension {manifold.dim}: its exact sampler's acceptance falls about "
                  "exponentially with the dimension and depends on the data (300 records at epsilon = 1: about 2 s "
                  "on S^12 and 6 s on S^15 in a ball of radius 0.5; 4 s to 6 minutes on affine-invariant SPD(4), "
                  "d = 10, radius 0.8; no draw in 8 minutes on SPD(5)), so this release may run from seconds to hours; "
                  "private_frechet_mean has no such limit", ReleaseWarning)
        cal = Calibration(meas, 0.0, "2/n: every term of the median's gradient field is a unit vector or 0 "
                          "(docs/statistics.md), plus float64 summation slack",
                          "Weiszfeld iterations (Fletcher et al. 2009) shape the proposal only: the law is KNG's exactly")
        return cal, check_round_to(round_to, output_grid(manifold, meas.scale, p.center, radius), warn=warn)

    def reads(self, manifold: Manifold, cal: Calibration, radius: float, n: int) -> tuple[bool, bool]:
        return True, False

    def compute(self, manifold: Manifold, p: PublicParams, radius: float, cal: Calibration, records: Any) -> Any:
        records = np.asarray(records)
        with np.errstate(all="ignore"):
            return records, weiszfeld_median(manifold, records, p.center)

    def sample(self, measurement: measurements.Measurement, value: Any, size: int | tuple[int, ...] | None,
               rng: np.random.Generator) -> tuple[Any, float | None]:
        """KNG draws around ``(records, μ)``; the acceptance depends on the data: withheld."""
        records, mu = value
        shape = () if size is None else tuple(np.atleast_1d(size))
        draws, _ = measurement.law.sample_with_stats(records, mu, None if size is None else int(np.prod(shape)), rng=rng)
        return (draws if size is None else draws.reshape(shape + draws.shape[1:])), None

    def noise_against_room(self, manifold: Manifold, measurement: measurements.Measurement,
                           radius: float) -> tuple[float, float, str, str, str]:
        """``d·σ``, about ``‖∇F‖`` at a typical draw, against 1, the largest ``‖∇F‖``: above it the
        law is nearly uniform on the ball."""
        noise = manifold.dim * measurement.scale
        return (noise, 1.0, f"d·σ = {noise:.3g}, about the median's gradient norm at a typical draw",
                "1, the largest gradient norm of a median (the law is then nearly uniform on the ball)", "")


FRECHET_MEDIAN: FrechetMedian = FrechetMedian()


def private_frechet_median(X: ArrayLike, manifold: Manifold, *, center: ArrayLike, radius: float, epsilon: float,
                           round_to: float | str | None = "auto", accountant: PrivacyAccountant | None = None,
                           rng: RngLike = None, strict: bool = False) -> PrivateRelease:
    """Release an ε-DP Fréchet median ``argmin_m (1/n) Σ ρ(m, x_i)`` of the records in
    ``B_radius(center)`` by KNG: density ``∝ exp(−‖∇F(x)‖/σ)`` on the ball, ``σ = 2Δ/ε``,
    ``Δ = 2/n`` (+ float64 slack; ``median_sensitivity``). Records are prepared as for the mean
    (invalid ones replaced by the centre, the rest clipped into the ball); the same stages, checks,
    accountant (a pure ε event, charged before the data are read), warnings and certificate.
    Proofs: docs/statistics.md.

    Parameters
    ----------
    X : array_like, shape ``(n, *manifold.point_shape)``
        The records (in memory).
    manifold : Manifold
        Constant curvature, dimension ≥ 2 (sphere, hyperbolic, SO(3), Euclidean, log-Euclidean
        SPD), a flat line, or affine-invariant SPD; Kendall shapes are refused.
    center : array_like
        The public centre.
    radius : float
        The public ball, ``0 < radius < r*``.
    epsilon : float
        ε > 0.
    round_to : "auto", float or None
        The public output grid, as for the mean.
    accountant : PrivacyAccountant, optional
        Charged before the data are read.
    rng : numpy.random.Generator, int or None
        ``None``: OS entropy.
    strict : bool
        Refuse invalid records (``InvalidRecordsError``, before the charge).

    Returns
    -------
    PrivateRelease
        ``point`` in the ball and its certificate (``statistic="frechet_median"``,
        ``mechanism="kng"``).

    Examples
    --------
    >>> from manifold_dp import Sphere, private_frechet_median
    >>> S = Sphere(2)
    >>> X = S.random_point(S.origin, 0.3, size=200, rng=0)
    >>> rel = private_frechet_median(X, S, center=S.origin, radius=0.5, epsilon=1.0, rng=1)
    >>> bool(S.dist(S.origin, rel.point) <= 0.5), rel.certificate.statistic
    (True, 'frechet_median')
    """
    return release_statistic(FRECHET_MEDIAN, X, manifold, center=center, radius=radius, epsilon=epsilon,
                             mechanism="kng", round_to=round_to, accountant=accountant, rng=rng, strict=strict)
