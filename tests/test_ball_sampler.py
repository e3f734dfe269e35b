"""Laws restricted to a ball in any dimension (the cap sampler of ``privacy.mechanisms._ball_draw``):
its pieces against independent formulas, its radial marginal against quadrature at d = 50 and
768, its joint law against the fixed-work restricted sampler, and high-dimensional releases that
used to be refused. KS tests at α = 1e-6 with fixed seeds."""

import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.integrate import cumulative_trapezoid
from scipy.special import logsumexp

from manifold_dp import Euclidean, Hyperbolic, Sphere, private_frechet_mean
from manifold_dp.privacy.mechanisms import KNormGradient, RiemannianLaplace, _ball_draw
from manifold_dp.privacy.samplers import cap_fraction_argument, log_cap_fraction
from manifold_dp.stats import frechet_mean

ALPHA = 1e-6
N_DRAWS = 10_000
N_JOINT = 3_000  # the fixed-work reference spends hundreds of proposals per draw here


def _cos_law_t(kind, a, r, rho):
    """``t(ρ)`` by the plain law of cosines (arccos form), independent of the sampler's sn form."""
    if kind == "sphere":
        return (np.cos(r) - np.cos(a) * np.cos(rho)) / (np.sin(a) * np.sin(rho))
    if kind == "hyperbolic":
        return (np.cosh(a) * np.cosh(rho) - np.cosh(r)) / (np.sinh(a) * np.sinh(rho))
    return (a * a + rho * rho - r * r) / (2 * a * rho)


def _log_cap_by_quadrature(x, d, points=400_001):
    """``log P(y ≤ x)``, ``y ~ Beta(α, α)``, ``α = (d−1)/2``, by a cumulative log-sum-exp trapezoid
    of ``(α−1) log(y(1−y))`` on a fine grid (no special functions)."""
    alpha = 0.5 * (d - 1)
    y = np.linspace(0.0, 1.0, points)[1:-1]
    lf = (alpha - 1) * (np.log(y) + np.log1p(-y))
    cum = np.logaddexp.accumulate(lf)
    total = logsumexp(lf)
    return np.interp(x, y, cum - total)


@pytest.mark.parametrize("d", [4, 50, 768])
def test_cap_fraction_matches_quadrature(d):
    x = np.array([0.002, 0.02, 0.1, 0.3, 0.45, 0.5, 0.7, 0.95])
    ours = log_cap_fraction(x, d)
    ref = _log_cap_by_quadrature(x, d)
    keep = ref > -600  # the trapezoid's own resolution near y = 0
    assert np.allclose(ours[keep], ref[keep], rtol=2e-3, atol=2e-3)
    assert log_cap_fraction(1.0, d) == 0.0 and log_cap_fraction(0.0, d) == -np.inf
    assert log_cap_fraction(1e-6, d) < log_cap_fraction(1e-5, d) < 0  # finite far into the tail


@pytest.mark.parametrize("kind,kappa", [("sphere", 1.0), ("hyperbolic", -1.0), ("flat", 0.0)])
def test_cap_argument_is_the_law_of_cosines(kind, kappa):
    a, r = 0.3, 0.5
    rho = np.linspace(0.01, a + r - 0.01, 50)
    x = cap_fraction_argument(kappa, a, r, rho)
    assert np.allclose(x, (1 - _cos_law_t(kind, a, r, rho)) / 2, rtol=1e-9, atol=1e-12)
    assert np.all(np.diff(x) < 0)  # the cap shrinks as ρ grows: the envelope's premise


def _radial_reference(m, kind, a, r, sigma):
    d = m.dim
    if kind == "sphere":
        log_j = lambda t: (d - 1) * np.log(np.sin(t))
    else:
        log_j = lambda t: (d - 1) * (t + np.log(-np.expm1(-2 * t)))
    grid = np.linspace(1e-9, a + r, 200_001)
    with np.errstate(all="ignore"):
        x = np.clip((1 - _cos_law_t(kind, a, r, grid)) / 2, -1.0, 2.0)
        lc = np.where(x >= 1, 0.0, np.where(x <= 0, -np.inf, _log_cap_by_quadrature(np.clip(x, 0, 1), d)))
        ld = np.nan_to_num(log_j(grid) - grid / sigma + lc, nan=-np.inf)
    keep = np.nonzero(ld > ld.max() - 40)[0]
    grid = np.linspace(grid[max(keep[0] - 1, 0)], grid[min(keep[-1] + 1, grid.size - 1)], 200_001)
    with np.errstate(all="ignore"):
        x = np.clip((1 - _cos_law_t(kind, a, r, grid)) / 2, -1.0, 2.0)
        lc = np.where(x >= 1, 0.0, np.where(x <= 0, -np.inf, _log_cap_by_quadrature(np.clip(x, 0, 1), d)))
        ld = np.nan_to_num(log_j(grid) - grid / sigma + lc, nan=-np.inf)
    cdf = cumulative_trapezoid(np.exp(ld - ld.max()), grid, initial=0.0)
    return lambda t: np.interp(t, grid, cdf / cdf[-1])


@pytest.mark.parametrize("d", [50, 768])
@pytest.mark.parametrize("kind", ["sphere", "hyperbolic"])
@pytest.mark.parametrize("where,scale", [("boundary", 1.0), ("boundary", 0.01), ("inside", 1.0)])
def test_restricted_laplace_radius_matches_quadrature(d, kind, where, scale):
    m = Sphere(d) if kind == "sphere" else Hyperbolic(d)
    c, r = (m.origin if kind == "sphere" else np.eye(1, d + 1)[0]), 0.4
    a = r if where == "boundary" else 0.5 * r
    rng = np.random.default_rng(d + len(kind) + int(100 * scale) + len(where))
    mu = m.exp(c, a * m.random_unit_tangent(c, rng=rng))
    sigma = scale * r / d  # 1.0: the unrestricted law's mode sits at the ball's diameter; 0.01: well inside
    law = RiemannianLaplace(m, sigma, restrict_to=(c, r))
    assert law.uses_ball_sampler == (scale == 1.0)
    x, _ = _ball_draw(m, mu, c, r, np.array([0.0, a + r]), np.array([0.0, a + r]), sigma, N_DRAWS, rng)
    assert np.all(m.dist(c, x) <= r * (1 + 1e-9))
    assert stats.kstest(m.dist(mu, x), _radial_reference(m, kind, float(m.dist(mu, c)), r, sigma)).pvalue > ALPHA


@pytest.mark.parametrize("m", [Sphere(6), Hyperbolic(5), Euclidean(4), Sphere(2)], ids=repr)
@pytest.mark.parametrize("where", [0.0, 0.1, 0.6, 1.0])  # 0 and 0.1: proposals around the centre
def test_joint_law_agrees_with_the_fixed_work_sampler(m, where):
    """Both samplers are exact: the distances to the footpoint and to the centre agree in law."""
    c, r, sigma = m.origin, 0.5, 0.15
    rng = np.random.default_rng(int(10 * where) + m.dim)
    mu = m.exp(c, where * r * m.random_unit_tangent(c, rng=rng))
    x, acceptance = _ball_draw(m, mu, c, r, np.array([0.0, r + where * r]), np.array([0.0, r + where * r]), sigma,
                               N_JOINT, rng)
    y = RiemannianLaplace(m, sigma, restrict_to=(c, r)).sample(mu, size=N_JOINT, rng=rng)
    assert acceptance > 1 / np.e
    for f in (lambda z: m.dist(c, z), lambda z: m.dist(mu, z)):
        assert stats.ks_2samp(f(x), f(y)).pvalue > ALPHA


def test_sharpened_kng_envelope_is_a_lower_bound_of_the_gradient_norm():
    """``G(ρ(μ, x)) − slope·e ≤ ‖∇F(x)‖`` everywhere in the ball, probed where the law-of-sines
    bound is tightest: along the records' own directions, opposite them and orthogonal."""
    for m, r in ((Sphere(2), 0.7), (Sphere(50), 0.5)):
        rng = np.random.default_rng(m.dim)
        c = m.origin
        X = m.random_point(c, r, size=300, rng=rng)
        X[:20] = m.exp(c, r * m.random_unit_tangent(c, rng=rng))  # some on the boundary
        mu = frechet_mean(X, m).point
        kng = KNormGradient(m, 0.01, c, r)
        from manifold_dp.stats.frechet import riemannian_gradient
        e = float(m.norm(mu, riemannian_gradient(m, mu, X))) / kng.h
        dirs = np.concatenate([m.log(mu, X[:50]), -m.log(mu, X[:50]), m.random_unit_tangent(mu, size=200, rng=rng)])
        dirs /= np.linalg.norm(dirs, axis=-1, keepdims=True)
        pts = m.exp(mu, dirs * rng.uniform(0, 2 * r, size=(len(dirs), 1)))
        pts = pts[m.dist(c, pts) <= r]
        grad = m.norm(pts, riemannian_gradient(m, pts, X))
        for levels in (len(X), 128):  # a level per record, and the records' distances pooled
            grid, G = kng._radial_envelope(X, mu, e, 400, levels)
            slope = np.max(np.diff(G) / np.diff(grid))
            assert np.all(np.interp(m.dist(mu, pts), grid, G) - slope * e <= grad + 1e-12)
        grid, G = kng._radial_envelope(X, mu, e, 400, len(X))
        # and it is sharper than the old worst-angle-and-distance bound somewhere
        u = np.minimum(grid[:, None] + (m.dist(mu, X) + e)[None, :], 2 * r)
        old = np.concatenate([[0.0], np.cumsum((u / np.tan(u)).mean(axis=1)[1:] * np.diff(grid))])
        assert np.all(G >= old - 1e-12) and G[-1] > old[-1] + 1e-3


@pytest.mark.parametrize("mechanism", ["laplace", "kng"])
@pytest.mark.parametrize("m", [Sphere(767), Hyperbolic(127)], ids=repr)
def test_high_dimensional_releases_succeed_with_records_on_the_boundary(m, mechanism):
    """S⁷⁶⁷ and H¹²⁷ at n = 1000, ε ∈ {0.1, 10}, every record on the ball's boundary in one
    direction (the mean sits near the boundary): refused before, released now, inside the ball."""
    c, r = m.origin, 0.3
    rng = np.random.default_rng(m.dim)
    direction = m.random_unit_tangent(c, rng=rng)
    X = np.broadcast_to(m.exp(c, r * direction), (1000,) + tuple(m.point_shape))
    for eps in (0.1, 10.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # at ε = 0.1 the public "mostly noise" warning is expected
            rel = private_frechet_mean(X, m, center=c, radius=r, epsilon=eps, mechanism=mechanism,
                                       restrict=True, rng=int(eps * 10))
        assert m.check_point(rel.point)[0]
        assert m.dist(c, rel.point) <= r * (1 + 1e-6)


@pytest.mark.parametrize("m", [Hyperbolic(127), Euclidean(500), Sphere(767)], ids=repr)
@pytest.mark.parametrize("a", [0.0, 1e-300, 1e-17, 1e-9, 1e-4])
def test_footpoint_at_or_near_the_centre_never_fails(m, a):
    """An adversarial review found the cap sampler stalling ("made no progress") when the mean sat
    within float resolution of the centre (records split between two opposite boundary points):
    the cap's edge, a sliver of width 2a at ρ = r, cannot be resolved. Near the centre the draw
    now proposes around the centre."""
    c, r = m.origin, 0.3
    rng = np.random.default_rng(17)
    mu = m.exp(c, a * m.random_unit_tangent(c, rng=rng))
    for sigma in (1e-3, 0.1):
        x, acceptance = _ball_draw(m, mu, c, r, np.array([0.0, 2 * r]), np.array([0.0, 2 * r]), sigma, 200, rng)
        assert acceptance > 1 / np.e and np.all(m.dist(c, x) <= r * (1 + 1e-9))


@pytest.mark.parametrize("m", [Hyperbolic(127), Euclidean(500)], ids=repr)
def test_split_records_release_like_any_other(m):
    """Half the records on one boundary point, half on the opposite one: the mean is the centre up
    to rounding; the restricted release succeeds as for records at the centre."""
    c, r = m.origin, 0.3
    u = m.random_unit_tangent(c, rng=3)
    X = np.concatenate([np.repeat(m.exp(c, r * u)[None], 20, 0), np.repeat(m.exp(c, -r * u)[None], 20, 0)])
    for records in (X, np.repeat(c[None], 40, 0)):
        rel = private_frechet_mean(records, m, center=c, radius=r, epsilon=1.0, restrict=True, rng=5)
        assert m.dist(c, rel.point) <= r * (1 + 1e-6)
