"""Exact samplers for the radial parts of the Riemannian Laplace law (SPEC §4), and a
Metropolis–Hastings sampler kept only as a cross-check.

Write a Laplace draw as ``exp_η(ρ u)``: ``u`` is uniform on the unit sphere of ``T_η M`` and
``ρ`` has density ``∝ e^(−ρ/σ) J(ρ)``. Every function here depends only on public parameters
(``σ``, the manifold, the restriction radius), never on data.
"""

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import gammainc, gammaincinv, logsumexp

from .._random import as_generator
from ..manifolds._matrix import eig_apply, invvecd


def _batches(total, draw, accept_rate_guess=0.5, max_rounds=10_000):
    """Fill ``total`` accepted values by repeated vectorised rejection rounds.

    ``draw(m) -> (values, accepted_mask)``. Returns ``(values, acceptance)``: accepted over
    proposed in all rounds (surplus accepted values are discarded, not miscounted).
    """
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
        raise RuntimeError("rejection sampler made no progress: its envelope is broken")
    return np.concatenate(out)[:total], have / proposed


def sample_laplace_radius(manifold, sigma, size, rng, rho_max=None):
    """Radii ``ρ`` with density ``∝ e^(−ρ/σ) J(ρ)`` on ``[0, min(range, rho_max)]``.

    Proposal ``Gamma(d, 1/(1/σ − c))`` where ``c`` is the manifold's ``volume_growth_rate``
    (0 except on hyperbolic space), accepted with ``exp(log(J(ρ)/ρ^(d−1)) − cρ) ≤ 1``:
    Euclidean and log-Euclidean accept everything, the sphere ``(sin(ρ/R)/(ρ/R))^(d−1)``,
    Kendall ``(sin ρ/ρ)^(2m−1) cos ρ``, hyperbolic ``((1−e^(−2ρ))/(2ρ))^(d−1)``. When
    ``1/σ ≤ c`` (only possible with a finite ``rho_max``) the proposal is ``Gamma(d, σ)`` and
    the ratio is divided by its maximum at ``rho_max`` (the ratio increases on hyperbolic space).
    Returns ``(rho, acceptance)``.
    """
    rng = as_generator(rng)
    d = manifold.dim
    upper = min(manifold.radial_range[1], np.inf if rho_max is None else rho_max)
    n = int(np.prod(size)) if size is not None else 1
    shape = () if size is None else size
    if tuple(manifold.curvature_bounds) == (0.0, 0.0):
        # flat: J(ρ) = ρ^(d−1) exactly, so the (truncated) Gamma proposal is the law itself
        return truncated_gamma(d, sigma, upper, n, rng).reshape(shape), 1.0
    c = manifold.volume_growth_rate
    rate = 1.0 / sigma - c
    if rate > 0:
        scale = 1.0 / rate
        log_accept = lambda r: manifold.log_volume_ratio(r) - c * r
    elif np.isfinite(upper):
        scale = sigma
        top = manifold.log_volume_ratio(upper)
        log_accept = lambda r: manifold.log_volume_ratio(r) - top
    else:
        raise ValueError(f"the Laplace law with sigma={sigma!r} is not integrable on {manifold!r}; restrict it to a ball")

    def draw(m):
        r = truncated_gamma(d, scale, upper, m, rng)
        la = log_accept(r)
        if np.any(la > 1e-12):
            raise RuntimeError("Laplace radius envelope violated")
        return r, np.log(rng.uniform(size=m)) < la

    rho, acceptance = _batches(n, draw)
    return rho.reshape(shape), acceptance


def truncated_gamma(shape, scale, upper, size, rng):
    """Exact draws of ``Gamma(shape, scale)`` conditioned on ``≤ upper`` (``upper`` may be ∞).

    Far below the mode (``upper ≤ scale``): propose ``upper·U^(1/shape)`` and accept with
    ``e^(−ρ/scale)``; when the truncation keeps most of the mass: plain draws, rejected above
    ``upper``; otherwise inverse CDF through the regularised incomplete gamma function."""
    if not np.isfinite(upper):
        return rng.gamma(shape, scale, size=size)
    t = upper / scale
    if t <= 1.0:
        out = np.empty(0)
        while out.size < size:
            r = upper * rng.uniform(size=2 * size) ** (1.0 / shape)
            out = np.concatenate([out, r[rng.uniform(size=r.size) < np.exp(-r / scale)]])
        return out[:size]
    mass = gammainc(shape, t)
    if mass > 0.3:
        out = np.empty(0)
        while out.size < size:
            r = rng.gamma(shape, scale, size=2 * size)
            out = np.concatenate([out, r[r <= upper]])
        return out[:size]
    return np.minimum(scale * gammaincinv(shape, rng.uniform(size=size) * mass), upper)


# --- affine-invariant SPD -----------------------------------------------------------------

def _log_sinhc(a):
    """``φ(a) = log(sinh a / a)``, stable for small and large ``a``."""
    a = np.abs(np.asarray(a, float))
    small = a < 1e-3
    safe = np.where(small, 1.0, a)
    large = safe + np.log1p(-np.exp(-2 * safe)) - np.log(2 * safe)
    return np.where(small, a * a / 6.0, large)


@dataclass(frozen=True)
class _PiecewiseExponential:
    """An envelope ``exp(α_j + β_j ρ)`` on intervals ``[t_j, t_(j+1))`` (last may be infinite)."""

    left: np.ndarray
    right: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    log_mass: np.ndarray

    def __post_init__(self):
        p = np.exp(self.log_mass - logsumexp(self.log_mass))
        object.__setattr__(self, "_cdf", np.cumsum(p) / p.sum())

    def sample(self, m, rng):
        j = np.minimum(np.searchsorted(self._cdf, rng.uniform(size=m), side="right"), len(self._cdf) - 1)
        a, b, beta = self.left[j], self.right[j], self.beta[j]
        u = rng.uniform(size=m)
        width = np.where(np.isfinite(b), b - a, np.inf)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            bw = beta * width
            # inverse CDF of ∝ e^(βρ) on [a, b), written so that neither sign of β overflows
            down = a + np.log1p(u * np.expm1(np.where(np.isfinite(bw), bw, -np.inf))) / beta
            up = b + np.log(u + (1.0 - u) * np.exp(-bw)) / beta
            flat = a + u * width
        return np.where(np.abs(bw) < 1e-12, flat, np.where(beta < 0, down, up))

    def log_envelope(self, rho):
        j = np.clip(np.searchsorted(self.left, rho, side="right") - 1, 0, len(self.left) - 1)
        return self.alpha[j] + self.beta[j] * rho


def _spd_radius_log_target(rho, k, sigma):
    """``log q(ρ) = (d−1) log ρ − ρ/σ + B̄(ρ)`` with ``B̄ = min(P φ(ρ/√(2(k−1))), c_k ρ)``."""
    d = k * (k + 1) // 2
    with np.errstate(divide="ignore"):
        return (d - 1) * np.log(rho) - rho / sigma + _spd_log_bound(rho, k)


def _spd_log_bound(rho, k):
    """Upper bound ``B̄(ρ) ≥ Σ_(i<j) φ(|λ_i − λ_j|/2)`` over all ``λ`` with ``‖λ‖ = ρ``.

    Jensen: ``φ(a) = g(a²)`` with ``g(s) = Σ_n log(1 + s/(nπ)²)`` concave, and
    ``Σ_(i<j) (λ_i−λ_j)²/4 ≤ kρ²/4``, so the sum is at most ``P·φ(ρ/√(2(k−1)))``,
    ``P = k(k−1)/2``. Also ``φ(a) ≤ a`` and ``Σ|λ_i−λ_j|/2 ≤ c_k ρ``.
    """
    if k < 2:
        return np.zeros_like(np.asarray(rho, float))
    pairs = k * (k - 1) / 2
    c_k = 0.5 * np.sqrt(k * (k * k - 1) / 3.0)
    return np.minimum(pairs * _log_sinhc(np.asarray(rho, float) / np.sqrt(2.0 * (k - 1))), c_k * np.asarray(rho, float))


@lru_cache(maxsize=64)
def _spd_radius_envelope(k, sigma, rho_max, pieces=512):
    """Piecewise-exponential upper envelope of ``q(ρ)`` (see ``_spd_radius_log_target``).

    On each interval ``(d−1) log ρ`` (concave) lies under its tangent at the midpoint, and
    ``B̄`` under either the chord of the convex ``P φ(·)`` or the line ``c_k ρ``; the sum with
    ``−ρ/σ`` is linear, so ``exp`` of it is an exact envelope. The last interval, when
    ``rho_max`` is infinite, uses ``c_k ρ`` and needs ``1/σ > c_k``.
    """
    d = k * (k + 1) // 2
    c_k = 0.5 * np.sqrt(k * (k * k - 1) / 3.0) if k > 1 else 0.0
    pairs = k * (k - 1) / 2
    bounded = np.isfinite(rho_max)
    if not bounded and 1.0 / sigma <= c_k:
        raise ValueError(f"sigma must be < 1/c_k = {1.0 / c_k:.6g} for the unrestricted affine-invariant Laplace law on SPD({k})")
    # locate the bulk: a grid far past the mode
    slope = 1.0 / sigma - c_k if not bounded else 1.0 / sigma
    far = rho_max if bounded else max(3.0 * (d + 40) / max(slope, 1e-12), 1e-3)
    grid = np.linspace(0.0, far, 20001)[1:]
    lt = _spd_radius_log_target(grid, k, sigma)
    top = np.max(lt)
    end = rho_max if bounded else float(grid[np.nonzero(lt > top - 60.0)[0][-1]])
    if not bounded and d > 1:
        # the tail piece bounds B̄ by c_k ρ, loose by far: push its start out until its whole
        # mass, (d−1) log t − (1/σ − c_k) t − log((1/σ − c_k)/2), is negligible against the bulk
        a = 1.0 / sigma - c_k
        end = max(end, 2.0 * (d - 1) / a)
        while (d - 1) * np.log(end) - a * end - np.log(a / 2.0) > top - 40.0:
            end *= 1.25
    t = np.linspace(0.0, end, pieces + 1)
    left, right = t[:-1], t[1:]
    mid = 0.5 * (left + right)
    # tangent of (d−1) log ρ at the midpoint
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
        beta, alpha = np.full_like(mid, -1.0 / sigma + (c_k if k > 1 else 0.0)), np.zeros_like(mid)
    if not bounded:
        tail_beta = ((d - 1) / end if d > 1 else 0.0) + c_k - 1.0 / sigma
        tail_alpha = ((d - 1) * (np.log(end) - 1.0) if d > 1 else 0.0)
        left, right = np.append(left, end), np.append(right, np.inf)
        alpha, beta = np.append(alpha, tail_alpha), np.append(beta, tail_beta)
    return _PiecewiseExponential(left, right, alpha, beta, _log_piece_mass(left, right, alpha, beta))


def _log_piece_mass(left, right, alpha, beta):
    """``log ∫_a^b exp(α + βρ) dρ`` per piece, without overflow (``b = ∞`` needs ``β < 0``)."""
    out = np.empty_like(alpha)
    for j, (a, b, al, be) in enumerate(zip(left, right, alpha, beta)):
        if np.isinf(b):
            out[j] = al + be * a - np.log(-be)
            continue
        x = be * (b - a)
        if abs(x) < 1e-12:
            out[j] = al + be * a + np.log(b - a)
        elif x > 0:  # ∫ = e^(α+βb)(1 − e^(−x))/β
            out[j] = al + be * b + np.log(-np.expm1(-x)) - np.log(be)
        else:
            out[j] = al + be * a + np.log(-np.expm1(x)) - np.log(-be)
    return out


def sample_spd_log_eigen(k, sigma, size, rng, rho_max=np.inf):
    """Exact draws ``S ∈ Sym(k)`` whose eigenvalues ``λ`` have density
    ``∝ exp(−‖λ‖/σ) ∏_(i<j) sinh(|λ_i − λ_j|/2)`` and Haar eigenvectors (Hajri et al. 2016),
    optionally conditioned on ``‖λ‖ ≤ rho_max``. ``η^½ Expm(S) η^½`` is then an exact draw of
    the affine-invariant Laplace law at ``η``.

    Two stages of rejection, our design (SPEC §4 asks for one better than the naive envelope):
    on ``Sym(k)`` the target is ``∝ ρ^(d−1) e^(−ρ/σ) ∏ sinh(a_ij)/a_ij`` in polar coordinates
    ``S = ρW``, ``a_ij = ρ|μ_i − μ_j|/2`` for the eigenvalues ``μ`` of ``W``. (1) ``ρ`` from
    ``∝ ρ^(d−1) e^(−ρ/σ + B̄(ρ))`` by a piecewise-exponential envelope; (2) ``W`` uniform on the
    unit sphere of ``Sym(k)``, accepted with ``exp(Σ φ(a_ij) − B̄(ρ)) ≤ 1``.
    Returns ``(S, acceptance)`` where ``acceptance`` counts stage-2 (matrix) proposals.
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

    def draw_radius(m):
        r = env.sample(m, rng)
        la = _spd_radius_log_target(r, k, sigma) - env.log_envelope(r)
        if np.any(la > 1e-9):
            raise RuntimeError("affine-invariant radius envelope violated")
        return r, (np.log(rng.uniform(size=m)) < la) & (r <= rho_max)

    iu = np.triu_indices(k, 1)

    def draw_matrix(m):
        rho, _ = _batches(m, draw_radius, 0.9)
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

    out, acceptance = _batches(n, draw_matrix, 0.5)
    lam, vec = out[:, :k], out[:, k:].reshape(n, k, k)
    s = eig_apply(vec, lam)
    return s.reshape((() if size is None else tuple(np.atleast_1d(size))) + (k, k)), acceptance


@lru_cache(maxsize=64)
def spd_sampler_acceptance(k, sigma, rho_max=np.inf, trials=4000):
    """Acceptance of the direction stage of ``sample_spd_log_eigen``, estimated from ``trials``
    proposals with a fixed internal seed. Depends on public parameters only."""
    if k < 2:
        return 1.0
    rng = np.random.default_rng(20211)
    env = _spd_radius_envelope(k, float(sigma), float(rho_max))
    rho = env.sample(4 * trials, rng)
    keep = np.log(rng.uniform(size=rho.size)) < _spd_radius_log_target(rho, k, sigma) - env.log_envelope(rho)
    rho = rho[keep & (rho <= rho_max)][:trials]
    if rho.size == 0:
        return 0.0
    d = k * (k + 1) // 2
    g = rng.standard_normal((rho.size, d))
    mu = np.linalg.eigvalsh(invvecd(g / np.linalg.norm(g, axis=-1, keepdims=True), k))
    iu = np.triu_indices(k, 1)
    a = rho[:, None] * np.abs(mu[:, iu[0]] - mu[:, iu[1]]) / 2.0
    return float(np.mean(np.exp(np.sum(_log_sinhc(a), axis=-1) - _spd_log_bound(rho, k))))


def sample_radius_concave_volume(manifold, grid, G, sigma, size, rng):
    """``ρ`` with density ``∝ J(ρ) exp(−G(ρ)/σ)`` on ``[0, grid[-1]]`` where ``G`` is linear
    between the ``grid`` points and ``log J`` is concave (sphere, Kendall): on each cell the
    tangent of ``log J`` at the midpoint plus the exact linear ``−G/σ`` is an envelope.
    Returns ``(rho, acceptance)``."""
    a, b = grid[:-1], grid[1:]
    c = 0.5 * (a + b)
    slope_g = np.diff(G) / np.diff(grid)
    beta = manifold.log_volume_slope(c) - slope_g / sigma
    alpha = manifold.log_volume(c) - manifold.log_volume_slope(c) * c - (G[:-1] - slope_g * a) / sigma
    env = _PiecewiseExponential(a, b, alpha, beta, _log_piece_mass(a, b, alpha, beta))

    def draw(m):
        r = env.sample(m, rng)
        la = manifold.log_volume(r) - np.interp(r, grid, G) / sigma - env.log_envelope(r)
        if np.any(la > 1e-9):
            raise RuntimeError("radial envelope violated")
        return r, np.log(rng.uniform(size=m)) < la

    return _batches(size, draw, 0.9)


# --- Metropolis–Hastings (cross-check only) -----------------------------------------------

def metropolis_hastings(manifold, log_density, start, n_steps, step_size, rng=None, inside=None):
    """Random-walk MH on ``manifold`` with proposals ``exp_x(step_size·ξ)``, ``ξ`` standard
    Gaussian in ``T_x M`` (symmetric on these homogeneous spaces). Proposals outside
    ``inside`` (a predicate) are rejected. **Approximate**: the output is not an exact draw,
    and a mechanism sampled this way is at best approximately DP (SPEC §7).
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
