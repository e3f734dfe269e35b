"""Every exact sampler against its target law: KS tests at α = 1e-6 with fixed seeds."""

import zlib

import numpy as np
import pytest
from scipy import stats
from scipy.integrate import cumulative_trapezoid

from manifold_dp import Euclidean, Hyperbolic, KendallShape2D, SPDAffineInvariant, SPDLogEuclidean, Sphere
from manifold_dp.data import sphere_cap
from manifold_dp.privacy import KNormGradient, RiemannianLaplace, TangentGaussian
from manifold_dp.privacy.spd_sampler import spd_sampler_acceptance
from manifold_dp.stats import frechet_mean

ALPHA = 1e-6
N_DRAWS = 20_000


def radial_cdf(log_density, upper, points=200_001):
    """CDF of a density on [0, upper] given by its log, by trapezoidal quadrature."""
    grid = np.linspace(0.0, upper, points)[1:]
    ld = log_density(grid)
    dens = np.exp(ld - np.max(ld))
    cdf = cumulative_trapezoid(dens, grid, initial=0.0)
    cdf /= cdf[-1]
    return lambda r: np.interp(r, grid, cdf)


def _log_sinh(r):
    return r - np.log(2.0) + np.log(-np.expm1(-2.0 * r))


# (manifold, σ, log J(ρ), quadrature range): the polar volume densities of docs/theory.md §1 written out
# here, not read from the manifolds
RADIAL_CASES = {
    "euclidean": (Euclidean(3), 0.5, lambda r: 2 * np.log(r), 60.0),
    "sphere_S2": (Sphere(2), 0.3, lambda r: np.log(np.sin(r)), np.pi),
    "sphere_S5_wide": (Sphere(5), 0.8, lambda r: 4 * np.log(np.sin(r)), np.pi),
    "sphere_radius2": (Sphere(3, radius=2.0), 0.6, lambda r: 2 * np.log(2 * np.sin(r / 2)), 2 * np.pi),
    "hyperbolic": (Hyperbolic(3), 0.3, lambda r: 2 * _log_sinh(r), 60.0),
    "hyperbolic_near_limit": (Hyperbolic(2), 0.9, _log_sinh, 400.0),
    "kendall": (KendallShape2D(5), 0.3, lambda r: 5 * np.log(np.sin(r)) + np.log(np.cos(r)), np.pi / 2),  # m = 3: (2m−1) log sin + log cos
    "spd_le": (SPDLogEuclidean(3), 0.2, lambda r: 5 * np.log(r), 30.0),  # d = 6
}


@pytest.mark.parametrize("case", list(RADIAL_CASES))
def test_laplace_radius_matches_quadrature(case):
    m, sigma, log_j, upper = RADIAL_CASES[case]
    rng = np.random.default_rng(zlib.crc32(case.encode()))  # str hash() is salted per process
    eta = m.random_point(m.origin, 0.3, rng=rng)
    draws = RiemannianLaplace(m, sigma).sample(eta, size=N_DRAWS, rng=rng)
    rho = m.dist(eta, draws)
    with np.errstate(divide="ignore", invalid="ignore"):
        cdf = radial_cdf(lambda r: -r / sigma + log_j(r), upper)
    assert stats.kstest(rho, cdf).pvalue > ALPHA


def test_laplace_directions_are_uniform():
    s = Sphere(2)
    rng = np.random.default_rng(0)
    draws = RiemannianLaplace(s, 0.4).sample(s.origin, size=N_DRAWS, rng=rng)
    v = s.log(s.origin, draws)
    azimuth = np.mod(np.arctan2(v[:, 1], v[:, 0]), 2 * np.pi)
    assert stats.kstest(azimuth, stats.uniform(0, 2 * np.pi).cdf).pvalue > ALPHA
    # on a generic footpoint too: the tangent direction's coordinate along a fixed unit tangent
    # vector is distributed as the first coordinate of a uniform point on S^(d-1) (uniform on [-1, 1] for d = 3)
    h = Hyperbolic(3)
    eta = h.random_point(h.origin, 1.0, rng=rng)
    e = h.random_unit_tangent(eta, rng=rng)
    w = h.log(eta, RiemannianLaplace(h, 0.3).sample(eta, size=N_DRAWS, rng=rng))
    c = h.inner(eta, w, e) / h.norm(eta, w)
    assert stats.kstest(c, stats.uniform(-1, 2).cdf).pvalue > ALPHA


def _sphere_nodes(k, n_dirs):
    """Deterministic, nearly uniform nodes on S^(k−1): a circle grid (k=2), a Fibonacci lattice (k=3)."""
    if k == 2:
        t = 2 * np.pi * (np.arange(n_dirs) + 0.5) / n_dirs
        return np.stack([np.cos(t), np.sin(t)], axis=1)
    i = np.arange(n_dirs) + 0.5
    z = 1 - 2 * i / n_dirs
    phi = np.pi * (1 + 5**0.5) * i
    return np.stack([np.sqrt(1 - z**2) * np.cos(phi), np.sqrt(1 - z**2) * np.sin(phi), z], axis=1)


def _spd_angular_log_integral(k, rho, n_dirs=6000):
    """log ∫ over unit λ ∈ S^(k−1) of ∏_(i<j) sinh(ρ|λ_i − λ_j|/2), by equal-weight quadrature."""
    g = _sphere_nodes(k, n_dirs)
    iu = np.triu_indices(k, 1)
    diff = np.abs(g[:, iu[0]] - g[:, iu[1]]) / 2
    from scipy.special import logsumexp
    a = rho[:, None, None] * diff[None]
    logs = np.sum(np.log(np.sinh(np.maximum(a, 1e-300))), axis=-1)
    return logsumexp(logs, axis=1) - np.log(n_dirs)


@pytest.mark.parametrize("k,frac", [(2, 0.3), (2, 0.6), (3, 0.3), (3, 0.6)])
def test_spd_affine_laplace_radius_matches_eigenvalue_quadrature(k, frac):
    m = SPDAffineInvariant(k)
    sigma = frac / m.laplace_integrability_constant
    rng = np.random.default_rng(100 * k + int(10 * frac))
    eta = m.random_point(m.origin, 0.5, rng=rng)
    draws = RiemannianLaplace(m, sigma).sample(eta, size=N_DRAWS, rng=rng)
    rho = m.dist(eta, draws)
    upper = 80 * sigma * k
    grid = np.linspace(1e-6, upper, 1500)
    log_dens = (k - 1) * np.log(grid) - grid / sigma + _spd_angular_log_integral(k, grid)
    dens = np.exp(log_dens - log_dens.max())
    cdf = np.concatenate([[0.0], cumulative_trapezoid(dens, grid)])
    cdf /= cdf[-1]
    assert stats.kstest(rho, lambda r: np.interp(r, grid, cdf)).pvalue > ALPHA


def test_spd_affine_eigenvectors_are_haar():
    m = SPDAffineInvariant(2)
    rng = np.random.default_rng(5)
    draws = RiemannianLaplace(m, 0.5).sample(np.eye(2), size=N_DRAWS, rng=rng)
    _, vecs = np.linalg.eigh(draws)
    angle = np.mod(np.arctan2(vecs[:, 1, 0], vecs[:, 0, 0]), np.pi)
    assert stats.kstest(angle, stats.uniform(0, np.pi).cdf).pvalue > ALPHA


def test_spd_affine_acceptance_targets():
    # issue target: >= 20% for k <= 10 when σ <= 0.1/c_k (we see > 99%)
    for k in (2, 5, 10):
        ck = SPDAffineInvariant(k).laplace_integrability_constant
        assert spd_sampler_acceptance(k, 0.1 / ck) > 0.2


def test_spd_affine_sampler_refuses_hopeless_sigma():
    m = SPDAffineInvariant(10)
    with pytest.raises(ValueError, match="accepts about"):
        RiemannianLaplace(m, 0.95 / m.laplace_integrability_constant).sample(np.eye(10), rng=0)


def test_non_integrable_laplace_raises():
    with pytest.raises(ValueError, match="not integrable"):
        RiemannianLaplace(Hyperbolic(3), 0.6)
    with pytest.raises(ValueError, match="not integrable"):
        RiemannianLaplace(SPDAffineInvariant(2), 1.5)
    # restricted, any sigma is fine
    h = Hyperbolic(3)
    x = RiemannianLaplace(h, 2.0, restrict_to=(h.origin, 1.0)).sample(h.origin, size=100, rng=1)
    assert np.all(h.dist(h.origin, x) <= 1.0)


@pytest.mark.slow
def test_restricted_laplace_is_the_truncated_law():
    s = Sphere(2)
    sigma, r = 0.3, 0.35
    draws = RiemannianLaplace(s, sigma, restrict_to=(s.origin, r)).sample(s.origin, size=N_DRAWS, rng=7)
    rho = s.dist(s.origin, draws)
    cdf = radial_cdf(lambda t: -t / sigma + np.log(np.sin(t)), r)
    assert rho.max() <= r and stats.kstest(rho, cdf).pvalue > ALPHA


def test_tangent_gaussian_utility_is_scaled_chi_square():
    m = SPDLogEuclidean(4)
    rng = np.random.default_rng(8)
    eta = m.random_point(m.origin, 0.5, rng=rng)
    sigma = 0.05
    draws = TangentGaussian(m, sigma).sample(eta, size=N_DRAWS, rng=rng)
    assert stats.kstest(m.dist(eta, draws) ** 2 / sigma**2, stats.chi2(m.dim).cdf).pvalue > ALPHA


@pytest.mark.slow
def test_kng_exact_agrees_with_mcmc_on_sphere():
    s = Sphere(2)
    X = sphere_cap(30, rng=9)
    r = np.pi / 8
    mean = frechet_mean(X, s).point
    kng = KNormGradient(s, sigma=0.05, center=s.origin, radius=r)
    exact = kng.sample(X, mean, size=4000, rng=10)
    mcmc, acc = kng.sample_mcmc(X, s.origin, n_steps=400, step_size=0.03, size=4000, rng=11)
    assert 0.2 < acc < 0.95
    ks = stats.ks_2samp(s.dist(mean, exact), s.dist(mean, mcmc))
    assert ks.pvalue > ALPHA


@pytest.mark.slow
def test_kng_exact_agrees_with_mcmc_on_kendall():
    k = KendallShape2D(4)
    rng = np.random.default_rng(18)
    X = k.random_point(k.origin, 0.15, size=20, rng=rng)
    mean = frechet_mean(X, k).point
    kng = KNormGradient(k, sigma=0.03, center=k.origin, radius=0.3)
    exact = kng.sample(X, mean, size=3000, rng=19)
    mcmc, _ = kng.sample_mcmc(X, k.origin, n_steps=300, step_size=0.02, size=3000, rng=20)
    assert stats.ks_2samp(k.dist(mean, exact), k.dist(mean, mcmc)).pvalue > ALPHA


def test_kng_on_flat_space_is_the_restricted_laplace():
    e = Euclidean(2)
    rng = np.random.default_rng(12)
    X = e.random_point(e.origin, 1.0, size=20, rng=rng)
    mean = X.mean(axis=0)
    sigma, r = 0.4, 1.0
    kng = KNormGradient(e, sigma, e.origin, r)
    a = kng.sample(X, mean, size=5000, rng=13)
    b = RiemannianLaplace(e, sigma, restrict_to=(e.origin, r)).sample(mean, size=5000, rng=14)
    for axis in range(2):
        assert stats.ks_2samp(a[:, axis], b[:, axis]).pvalue > ALPHA


def test_kng_raises_when_envelope_is_broken(monkeypatch):
    s = Sphere(2)
    X = sphere_cap(10, rng=15)
    mean = frechet_mean(X, s).point
    kng = KNormGradient(s, 0.05, s.origin, np.pi / 8)
    real = KNormGradient._radial_envelope
    # claim a gradient lower bound five times what the data give
    monkeypatch.setattr(KNormGradient, "_radial_envelope", lambda self, *a: (lambda g, G: (g, 5 * G))(*real(self, *a)))
    with pytest.raises(RuntimeError, match="envelope"):
        kng.sample(X, mean, size=200, rng=16)
    # and the Laplace-envelope path (non-positive curvature) with an inflated h
    e = SPDAffineInvariant(2)
    Y = e.random_point(np.eye(2), 0.5, size=10, rng=1)
    kng2 = KNormGradient(e, 0.05, np.eye(2), 1.0)
    object.__setattr__(kng2, "h", 5.0)
    with pytest.raises(RuntimeError, match="envelope"):
        kng2.sample(Y, frechet_mean(Y, e).point, size=200, rng=16)


def test_seeds_reproduce_and_none_does_not():
    s = Sphere(2)
    mech = RiemannianLaplace(s, 0.2)
    assert np.array_equal(mech.sample(s.origin, size=3, rng=1), mech.sample(s.origin, size=3, rng=1))
    assert not np.array_equal(mech.sample(s.origin, size=3), mech.sample(s.origin, size=3))


def test_batch_of_footpoints_gives_one_draw_each():
    for m in (Sphere(2), SPDAffineInvariant(2), KendallShape2D(4)):
        rng = np.random.default_rng(17)
        etas = m.random_point(m.origin, 0.3, size=500, rng=rng)
        x = RiemannianLaplace(m, 0.1).sample(etas, rng=rng)
        assert x.shape == etas.shape
        d = m.dist(etas, x)
        single = m.dist(etas[0], RiemannianLaplace(m, 0.1).sample(etas[0], size=500, rng=rng))
        assert stats.ks_2samp(d, single).pvalue > ALPHA


# --- caps, small scales and memory (fail on the sampler before the log-concave rewrite) -------

def test_rejection_loops_are_capped():
    from manifold_dp.privacy.samplers import _batches
    never = lambda m: (np.zeros(m), np.zeros(m, bool))
    with pytest.raises(RuntimeError, match="made no progress in 50 rounds"):
        _batches(5, never, what="test sampler (sigma=1)", max_rounds=50)


def test_kng_refuses_records_outside_the_ball_and_caps_its_loop():
    m = SPDAffineInvariant(3)
    Y = m.random_point(np.eye(3), 3.0, size=20, rng=1)
    with pytest.raises(ValueError, match="B_r"):
        KNormGradient(m, 0.05, np.eye(3), 1.0).sample(Y, frechet_mean(Y, m).point, rng=0)
    # an envelope 1000× too loose: acceptance ≈ 2σ² ≈ 2e-8, far below the public budget
    e = Euclidean(2)
    X = e.random_point(e.origin, 0.5, size=20, rng=2)
    kng = KNormGradient(e, 1e-4, e.origin, 1.0)
    object.__setattr__(kng, "h", 1e-3)
    with pytest.raises(RuntimeError, match="KNG sampler"):
        kng.sample(X, X.mean(axis=0), size=5, rng=3)


def _naive_kng_envelope(kng, X, mu, e, cells=400):
    """The (cells+1) × n table the envelope used to build in one piece."""
    m = kng.manifold
    reach = min(kng.radius + float(m.dist(kng.center, mu)), 2 * kng.radius, m.radial_range[1])
    grid = np.linspace(0.0, reach, cells + 1)
    a = m.dist(mu, X) + e
    u = np.minimum(grid[:, None] + a[None, :], 2 * kng.radius) * np.sqrt(m.curvature_bounds[1])
    f = np.where(u > 1e-8, u / np.tan(np.where(u > 1e-8, u, 1.0)), 1.0)
    if isinstance(m, Sphere):  # constant curvature: the law-of-sines bound 1 − sin²(a)·(1 − u cot u)/sin²u
        k = np.where(u < 0.01, 1 / 3 + 0.14 * u * u, (1 - u / np.tan(np.maximum(u, 1e-300))) / np.sin(np.maximum(u, 1e-300)) ** 2)
        f = np.maximum(f, 1 - np.sin(a)[None, :] ** 2 * k)
    return grid, np.concatenate([[0.0], np.cumsum(f.mean(axis=1)[1:] * np.diff(grid))])


def test_kng_envelope_is_unchanged_and_memory_bounded():
    import tracemalloc
    for m, r in ((Sphere(2), 0.5), (KendallShape2D(6), 0.3)):
        X = m.random_point(m.origin, r, size=3_000, rng=4)  # blocks of ~20 records: 150 of them
        mu = m.random_point(m.origin, 0.05, rng=5)
        kng = KNormGradient(m, 0.1, m.origin, r)
        grid, G = kng._radial_envelope(X, mu, 1e-6, 400, len(X))  # a level per record: the per-record table
        grid0, G0 = _naive_kng_envelope(kng, X, mu, 1e-6)
        assert np.array_equal(grid, grid0) and np.allclose(G, G0, rtol=1e-12, atol=1e-15)
    s = Sphere(2)
    X = s.random_point(s.origin, 0.5, size=200_000, rng=6)
    tracemalloc.start()
    KNormGradient(s, 0.01, s.origin, 0.5)._radial_envelope(X, s.origin, 1e-6)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 300 * 2**20  # the one-piece table: 401 × 2e5 × 8 B = 640 MB per temporary


def test_pooled_distances_round_every_record_up():
    """Above ``levels`` records each ``a_i`` goes to a level ``≥ a_i`` (docs/theory.md §4, the
    pooled envelope): sorted, the levels with their counts dominate the records one by one, also
    where the spread is a few ulps, zero, or the whole range of a ball's distances."""
    from manifold_dp.privacy.mechanisms import _pooled_distances
    rng = np.random.default_rng(31)
    x = 0.3
    cases = [rng.uniform(0.0, 0.8, 1000), np.full(500, 0.37), np.r_[np.full(300, x), np.full(300, np.nextafter(x, 1))],
             x + np.arange(400) * np.spacing(x), np.r_[0.0, np.full(998, 5e-324), np.pi], rng.uniform(0, 1e-300, 700),
             np.r_[rng.uniform(0.0, 0.4, 900), np.full(100, 0.4)], np.linspace(0.1, 0.2, 129)]
    for a in cases:
        for levels in (2, 3, 7, 128):
            L, counts = _pooled_distances(a.copy(), levels)
            assert L.shape == (levels,) and np.all(np.diff(L) >= 0) and L[-1] == a.max() and L[0] >= a.min()
            assert counts.sum() == a.size and np.all(counts >= 0)
            assert np.all(np.sort(a) <= np.repeat(L, counts.astype(int)))
    a = rng.uniform(size=100)
    assert _pooled_distances(a, 100)[1] is None and _pooled_distances(a, 100)[0] is a  # few records: one level each


def _hostile_kng_records(m, c, r, n, rng):
    """Records that put the pooled bound to the test: all on the boundary in one direction, two
    opposite boundary clusters, a spread with a tenth on the boundary, all at the centre but one."""
    u = m.random_unit_tangent(c, rng=rng)
    edge = m.exp(c, r * u)
    spread = m.random_point(c, r, size=n, rng=rng)
    spread[: n // 10] = m.exp(c, r * m.random_unit_tangent(c, size=n // 10, rng=rng))
    lone = np.repeat(c[None], n, axis=0)
    lone[0] = edge
    return {"one-side": np.repeat(edge[None], n, axis=0),
            "two-sides": np.concatenate([np.repeat(edge[None], n // 2, axis=0),
                                         np.repeat(m.exp(c, -r * u)[None], n - n // 2, axis=0)]),
            "spread": spread, "one-out": lone}


@pytest.mark.parametrize("m,r", [(Sphere(2), 0.7), (Sphere(50), 0.5), (KendallShape2D(6), 0.3)], ids=repr)
def test_pooled_kng_envelope_is_a_lower_bound_on_hostile_data(m, r):
    """The pooled envelope (n > levels): ``G(ρ(μ, x)) − slope·e ≤ ‖∇F(x)‖`` at probes along the
    records' directions, opposite them, at random and near the mean; its slope, ``h`` at the cell's
    right end, never exceeds the per-record table's on the cells they share; and the exact sampler
    draws with it without a ratio above 1 (it raises on one)."""
    from manifold_dp.privacy.mechanisms import KNG_ENVELOPE_LEVELS
    from manifold_dp.stats.frechet import riemannian_gradient
    rng = np.random.default_rng(m.dim)
    c, n, cells = m.origin, 4 * KNG_ENVELOPE_LEVELS, 400
    for name, X in _hostile_kng_records(m, c, r, n, rng).items():
        mu = frechet_mean(X, m).point
        kng = KNormGradient(m, 1e-3, c, r)
        e = float(m.norm(mu, riemannian_gradient(m, mu, X))) / kng.h
        grid, G = kng._radial_envelope(X, mu, e)
        grid1, G1 = kng._radial_envelope(X, mu, e, cells, n)  # a level per record
        slope, slope1 = np.diff(G) / np.diff(grid), np.diff(G1) / np.diff(grid1)
        shared = cells - 1  # the cells above grid1[1] are the same in both grids
        assert np.array_equal(grid[-shared - 1:], grid1[-shared - 1:]), name
        assert np.all(slope[-shared:] <= slope1[-shared:] * (1 + 1e-12)), name
        dirs = np.concatenate([m.log(mu, X[:40]), -m.log(mu, X[:40]), m.random_unit_tangent(mu, size=300, rng=rng)])
        norms = np.asarray(m.norm(mu, dirs))
        dirs = dirs[norms > 0] / m._expand(norms[norms > 0])
        radii = np.where(rng.uniform(size=len(dirs)) < 0.3, rng.uniform(0, 20 * kng.sigma, len(dirs)),
                         rng.uniform(0, 2 * r, len(dirs)))
        pts = m.exp(mu, dirs * m._expand(radii))
        pts = pts[m.dist(c, pts) <= r]
        grad = m.norm(pts, riemannian_gradient(m, pts, X))
        assert np.all(np.interp(m.dist(mu, pts), grid, G) - np.max(slope) * e <= grad + 1e-12), name
        draws, acceptance = kng.sample_with_stats(X, mu, size=200, rng=3)
        assert draws.shape[0] == 200 and 0 < acceptance <= 1, name


def test_pooled_kng_envelope_keeps_the_law(monkeypatch):
    """The envelope changes the proposals, never the accepted law: draws with the pooled envelope
    and with the per-record one agree (KS at α = 1e-6), and pooling costs little acceptance."""
    s = Sphere(2)
    X = sphere_cap(2_000, radius=0.3, rng=32)
    mean = frechet_mean(X, s).point
    kng = KNormGradient(s, 0.02, s.origin, np.pi / 8)
    pooled, rate = kng.sample_with_stats(X, mean, size=4000, rng=33)
    real = KNormGradient._radial_envelope
    monkeypatch.setattr(KNormGradient, "_radial_envelope", lambda self, X, mu, e: real(self, X, mu, e, 400, len(X)))
    single, rate1 = kng.sample_with_stats(X, mean, size=4000, rng=34)
    assert rate > 0.95 * rate1
    for f in (lambda y: s.dist(mean, y), lambda y: y[:, 0], lambda y: y[:, 1]):
        assert stats.ks_2samp(f(pooled), f(single)).pvalue > ALPHA


@pytest.mark.parametrize("d,sigma", [(50, 1e-7), (767, 1e-5)])
def test_kng_radius_sampler_at_small_sigma_matches_quadrature(d, sigma):
    from manifold_dp.privacy.samplers import sample_radius_concave_volume
    s = Sphere(d)
    X = s.random_point(s.origin, 0.3, size=200, rng=d)
    mean = frechet_mean(X, s).point
    grid, G = KNormGradient(s, sigma, s.origin, 0.3)._radial_envelope(X, mean, 1e-9)
    rho, acceptance = sample_radius_concave_volume(s, grid, G, sigma, N_DRAWS, np.random.default_rng(d))
    log_density = lambda t: (d - 1) * np.log(np.sin(t)) - np.interp(t, grid, G) / sigma
    mode = (d - 1) * sigma  # the bulk lies below a few times this (G' ≥ h > 0.4)
    cdf = radial_cdf(log_density, 10 * mode)
    assert acceptance > 0.3 and rho.min() > 0 and stats.kstest(rho, cdf).pvalue > ALPHA


def test_spd_affine_small_sigma_is_not_refused():
    # σ far below 1/c_k: the law sits near ρ ≈ (d−1)σ and both stages accept nearly everything
    for rho_max in (np.inf, 1.0, 0.01):
        assert spd_sampler_acceptance(10, 4e-5, rho_max) > 0.9
    m = SPDAffineInvariant(10)
    draws = RiemannianLaplace(m, 4e-5, restrict_to=(np.eye(10), 0.5)).sample(np.eye(10), size=200, rng=21)
    rho = m.dist(np.eye(10), draws)
    assert rho.min() > 0 and rho.max() < 0.5


@pytest.mark.parametrize("k,sigma", [(2, 1e-3), (3, 1e-3)])
def test_spd_affine_restricted_small_sigma_matches_quadrature(k, sigma):
    from manifold_dp.privacy.spd_sampler import sample_spd_log_eigen
    s, _ = sample_spd_log_eigen(k, sigma, N_DRAWS, np.random.default_rng(30 + k), rho_max=1.0)
    rho = np.linalg.norm(np.linalg.eigvalsh(s), axis=-1)
    grid = np.linspace(1e-9, 80 * sigma * k, 1500)
    log_dens = (k - 1) * np.log(grid) - grid / sigma + _spd_angular_log_integral(k, grid)
    cdf = np.concatenate([[0.0], cumulative_trapezoid(np.exp(log_dens - log_dens.max()), grid)])
    assert stats.kstest(rho, lambda r: np.interp(r, grid, cdf / cdf[-1])).pvalue > ALPHA


@pytest.mark.parametrize("d, sigma, radius", [(1, 0.3, 1.0), (2, 0.3, 1.0), (5, 0.5, 1.0), (10, 0.1, 2.0)])
def test_flat_inside_probability_matches_monte_carlo(d, sigma, radius):
    """The exact inside probability of a flat pilot (the law at a boundary point, truncated at
    ``2r``) against 200,000 draws in ``R^d`` (fixed seed; 5 binomial standard errors)."""
    from manifold_dp.privacy.radial_sampler import flat_inside_probability

    rng = np.random.default_rng(7)
    rho = rng.gamma(d, sigma, size=800_000)
    rho = rho[rho <= 2 * radius][:200_000]
    u = rng.standard_normal((rho.size, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    z = u * rho[:, None]
    z[:, 0] += radius
    p = flat_inside_probability(d, sigma, radius)
    mc = float(np.mean(np.linalg.norm(z, axis=1) <= radius))
    assert abs(p - mc) <= 5 * np.sqrt(p * (1 - p) / rho.size)


def test_flat_pilot_skipped_only_where_it_could_return_its_floor():
    """Log-Euclidean SPD(16) (flat, d = 136): at a σ far above the ball the pilot returns its floor
    ``0.5/trials`` without drawing (it took seconds of 16 × 16 matrix functions, and failed in
    float64 at σ ≈ 1e32); at a σ where the ball catches draws it still draws (and the value is
    the pilot's)."""
    from manifold_dp.privacy import radial_sampler as rs

    M = SPDLogEuclidean(16)
    edge = M.exp(M.origin, 2.0 * M.random_unit_tangent(M.origin, rng=np.random.default_rng(0)))
    calls = []

    class Spy(rs.RadialSampler):
        def draw(self, *args, **kwargs):
            calls.append(1)
            return super().draw(*args, **kwargs)

    assert Spy().restricted_acceptance(M, 1e32, M.origin, 52.9, edge, 20_000, np.random.default_rng(1)) == 0.5 / 20_000
    assert not calls
    rate = Spy().restricted_acceptance(M, 0.002, M.origin, 2.0, edge, 2_000, np.random.default_rng(1))
    assert calls and rate > 0.01
