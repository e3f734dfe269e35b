"""The private Fréchet median (``privacy.median``): its gradient field and the 2/n sensitivity,
the computed median against independent oracles, the envelope, the exact sampler (KS at
α = 1e-6 against quadrature), a privacy audit through the release path (outcome classes; an
empirical privacy loss with a power check at half the scale), a seeded release, and robustness
to outliers against the private mean."""

import warnings

import numpy as np
import pytest
from scipy import optimize, stats

from manifold_dp import (
    Euclidean,
    Hyperbolic,
    KendallShape2D,
    PrivacyAccountant,
    SPDAffineInvariant,
    SPDLogEuclidean,
    Sphere,
    private_frechet_mean,
    private_frechet_median,
)
from manifold_dp.manifolds import SO3
from manifold_dp.privacy import BudgetExceededError
from manifold_dp.privacy.mechanisms import ball_sampler_applies
from manifold_dp.privacy.median import (
    FRECHET_MEDIAN,
    median_envelope,
    median_gradient,
    median_measurement,
    median_sensitivity,
    weiszfeld_median,
)
from manifold_dp.privacy.release import RecordsWarning, ReleaseWarning, plan_statistic, prepare_records

ALPHA = 1e-6
SPACES = [(Sphere(2), 0.6), (Hyperbolic(3), 1.0), (SPDAffineInvariant(3), 1.0), (SPDLogEuclidean(2), 1.0),
          (Euclidean(3), 1.0), (Euclidean(1), 1.0), (SO3(), 0.8)]


def _in_ball(m, n, radius, spread, rng):
    """``n`` points drawn around the origin and clipped into the ball (as the release prepares them)."""
    X = m.random_point(m.origin, spread, size=n, rng=rng)
    return np.asarray(prepare_records(m, X, m.origin, radius, log_mean=False)[0])


@pytest.mark.parametrize("m,radius", SPACES, ids=lambda v: repr(v) if not isinstance(v, float) else str(v))
def test_gradient_terms_are_unit_and_neighbours_differ_by_at_most_2_over_n(m, radius):
    rng = np.random.default_rng(0)
    n = 40
    X = _in_ball(m, n, radius, 0.5 * radius, rng)
    Y = _in_ball(m, 200, radius, radius, rng)
    g = median_gradient(m, Y, X)
    assert np.all(np.asarray(m.norm(Y, g)) <= 1.0 + 1e-12)
    loop = np.stack([median_gradient(m, y, X) for y in Y[:5]])
    np.testing.assert_allclose(g[:5], loop, rtol=0, atol=1e-15)  # batch == loop
    for trial in range(20):  # random neighbours: one record replaced by any point of the ball (its edge included)
        X2 = X.copy()
        X2[trial % n] = _in_ball(m, 1, radius, 5.0 * radius, rng)[0]
        diff = np.asarray(m.norm(Y, g - median_gradient(m, Y, X2)))
        assert np.max(diff) <= 2.0 / n * (1 + 1e-12)
    assert median_sensitivity(n) >= 2.0 / n
    # a term is 0 where the point is a record: then the field is still within 1 of every other's
    assert np.asarray(m.norm(X[0], median_gradient(m, X[0], X))) <= 1.0 - 1.0 / n + 1e-12


def test_gradient_is_the_derivative_of_the_objective():
    m = Euclidean(3)
    rng = np.random.default_rng(1)
    X, y, e = rng.normal(size=(30, 3)), rng.normal(size=3), np.eye(3)
    h = 1e-6
    fd = [(np.mean(np.linalg.norm(y + h * e[k] - X, axis=1)) - np.mean(np.linalg.norm(y - h * e[k] - X, axis=1))) / (2 * h)
          for k in range(3)]
    np.testing.assert_allclose(median_gradient(m, y, X), fd, atol=1e-8)


def test_weiszfeld_matches_scipy_on_euclidean_data():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 3)) * [1.0, 0.5, 0.2]
    oracle = optimize.minimize(lambda z: np.sum(np.linalg.norm(z - X, axis=1)), X.mean(axis=0), method="Nelder-Mead",
                               options=dict(xatol=1e-10, fatol=1e-12, maxiter=20_000)).x
    ours = weiszfeld_median(Euclidean(3), X, np.zeros(3))
    np.testing.assert_allclose(ours, oracle, atol=1e-6)


def test_weiszfeld_matches_a_grid_search_on_the_sphere():
    m = Sphere(2)
    X = _in_ball(m, 25, 0.6, 0.4, np.random.default_rng(3))
    mu = weiszfeld_median(m, X, m.origin)
    t = np.linspace(-0.6, 0.6, 601)  # brute force: spacing 0.002 rad in normal coordinates at the north pole
    a, b = np.meshgrid(t, t)
    grid = m.exp(m.origin, np.stack([a.ravel(), b.ravel(), np.zeros(a.size)], axis=1))
    values = np.array([np.mean(m.dist(p, X)) for p in grid])
    best = grid[np.argmin(values)]
    assert float(m.dist(mu, best)) < 3e-3
    assert np.mean(m.dist(mu, X)) <= values.min() + 1e-12


DEGENERATE = {
    "spread": lambda m, r, rng: _in_ball(m, 50, r, 0.4 * r, rng),
    "one point": lambda m, r, rng: np.repeat(_in_ball(m, 1, r, 0.3 * r, rng), 30, axis=0),
    "two clusters": lambda m, r, rng: np.repeat(_in_ball(m, 2, r, r, rng), 15, axis=0),
    "outliers at the edge": lambda m, r, rng: np.concatenate([_in_ball(m, 40, r, 0.1 * r, rng), _in_ball(m, 5, r, 9 * r, rng)]),
}


@pytest.mark.parametrize("case", sorted(DEGENERATE))
@pytest.mark.parametrize("m,radius", SPACES, ids=lambda v: repr(v) if not isinstance(v, float) else str(v))
def test_envelope_is_a_lower_bound_of_the_gradient_norm(m, radius, case):
    rng = np.random.default_rng(4)
    X = DEGENERATE[case](m, radius, rng)
    mu = weiszfeld_median(m, X, m.origin)
    grid, G = median_envelope(m, X, mu, radius, 2.0 * radius)
    assert G[0] == 0.0 and np.all(G >= 0)
    if ball_sampler_applies(m):  # the cap sampler needs G non-decreasing
        assert np.all(np.diff(G) >= 0)
    Y = np.concatenate([_in_ball(m, 3000, radius, 2 * radius, rng), m.random_point(mu, 0.02 * radius, size=1000, rng=rng)])
    Y = Y[np.asarray(m.dist(m.origin, Y)) <= radius]
    lower = np.interp(np.asarray(m.dist(mu, Y)), grid, G)
    assert np.all(lower <= np.asarray(m.norm(Y, median_gradient(m, Y, X))) + 1e-12)


def _sphere_quadrature(m, X, sigma, radius, cells=400):
    """The KNG density on the cap of radius ``radius`` around the north pole by the midpoint rule
    in geodesic polar coordinates: ``(rho, phi, weights)`` (normalised)."""
    rho = (np.arange(cells) + 0.5) * radius / cells
    phi = (np.arange(cells) + 0.5) * 2 * np.pi / cells
    R, P = np.meshgrid(rho, phi, indexing="ij")
    pts = m.exp(m.origin, np.stack([R.ravel() * np.cos(P.ravel()), R.ravel() * np.sin(P.ravel()), np.zeros(R.size)], axis=1))
    w = np.exp(-np.asarray(m.norm(pts, median_gradient(m, pts, X))) / sigma) * np.sin(R.ravel())
    return R.ravel(), P.ravel(), w / w.sum()


def test_sampler_matches_the_kng_density_on_the_sphere():
    m, radius, n = Sphere(2), 0.5, 6
    X = _in_ball(m, n, radius, 0.3, np.random.default_rng(5))
    meas = median_measurement(m, n, 1.5, center=m.origin, radius=radius)
    mu = weiszfeld_median(m, X, m.origin)
    draws, acceptance = meas.law.sample_with_stats(X, mu, size=4000, rng=np.random.default_rng(6))
    R, P, w = _sphere_quadrature(m, X, meas.scale, radius)
    rho = np.asarray(m.dist(m.origin, draws))
    phi = np.mod(np.arctan2(draws[:, 1], draws[:, 0]), 2 * np.pi)
    for sample, values in ((rho, R), (phi, P)):
        order = np.argsort(values)
        v, c = values[order], np.cumsum(w[order])
        assert stats.kstest(sample, lambda s, v=v, c=c: np.interp(s, v, c)).pvalue > ALPHA
    assert 0 < acceptance <= 1


def test_polar_sampler_matches_the_kng_density_on_the_line():
    m, radius, n = Euclidean(1), 1.0, 5
    X = np.array([[-0.7], [-0.2], [0.1], [0.15], [0.9]])
    meas = median_measurement(m, n, 2.0, center=m.origin, radius=radius)
    draws, _ = meas.law.sample_with_stats(X, weiszfeld_median(m, X, m.origin), size=5000, rng=np.random.default_rng(7))
    x = np.linspace(-1, 1, 200_001)
    density = np.exp(-np.abs(np.mean(np.sign(x[:, None] - X[:, 0]), axis=1)) / meas.scale)
    cdf = np.concatenate([[0], np.cumsum((density[1:] + density[:-1]) / 2 * np.diff(x))])
    assert stats.kstest(draws[:, 0], lambda s: np.interp(s, x, cdf / cdf[-1])).pvalue > ALPHA


def test_polar_sampler_matches_the_kng_density_on_spd():
    """Affine-invariant SPD(2) (d = 3), the geodesic polar proposal with its volume density: the
    law of ``v = Logm x`` (the ball around ``I`` is ``‖v‖_F ≤ r``) by the midpoint rule on a grid
    of ``Sym(2)``, the volume ``sinh(a)/a``, ``a = |λ_1 − λ_2|/2`` (normal coordinates at ``I``)."""
    m, radius, n = SPDAffineInvariant(2), 3.0, 5  # a large ball: the volume density matters (up to ×1.9)
    X = _in_ball(m, n, radius, 1.0, np.random.default_rng(10))
    meas = median_measurement(m, n, 1.0, center=m.origin, radius=radius)
    draws, _ = meas.law.sample_with_stats(X, weiszfeld_median(m, X, m.origin), size=3000, rng=np.random.default_rng(11))
    t = (np.arange(60) + 0.5) / 60 * 2 * radius - radius  # vecd coordinates (x11, x22, √2·x12)
    c = np.stack(np.meshgrid(t, t, t, indexing="ij"), axis=-1).reshape(-1, 3)
    c = c[np.linalg.norm(c, axis=1) <= radius]
    v = np.stack([np.stack([c[:, 0], c[:, 2] / np.sqrt(2)], -1), np.stack([c[:, 2] / np.sqrt(2), c[:, 1]], -1)], axis=1)
    lam, vec = np.linalg.eigh(v)
    pts = (vec * np.exp(lam)[:, None, :]) @ np.swapaxes(vec, -1, -2)
    a = np.abs(lam[:, 1] - lam[:, 0]) / 2
    w = np.exp(-np.asarray(m.norm(pts, median_gradient(m, pts, X))) / meas.scale) * np.where(a > 0, np.sinh(a) / np.where(a > 0, a, 1), 1)
    logs = np.asarray(m.log(m.origin, draws))
    for sample, values in ((np.linalg.norm(logs, axis=(1, 2)), np.linalg.norm(c, axis=1)), (logs[:, 0, 0], c[:, 0])):
        order = np.argsort(values)
        grid, cdf = values[order], np.cumsum(w[order]) / w.sum()
        assert stats.kstest(sample, lambda s, g=grid, f=cdf: np.interp(s, g, f)).pvalue > ALPHA


def test_one_draw_at_a_low_acceptance_proposes_about_what_it_needs(monkeypatch):
    """Before the first acceptance the batches grow fourfold from 8, so one draw at an acceptance
    near 1 % (SPD-AI(3), n = 300) proposes a few hundred points, not a block of thousands, each
    of which costs a pass over the records."""
    m = SPDAffineInvariant(3)
    X = _in_ball(m, 300, 0.8, 0.3, np.random.default_rng(0))
    law = median_measurement(m, 300, 1.0, center=m.origin, radius=0.8).law
    mu = weiszfeld_median(m, X, m.origin)
    batches: list[int] = []
    propose = type(law)._propose
    monkeypatch.setattr(type(law), "_propose", lambda self, *a: (batches.append(a[3]), propose(self, *a))[1])
    for seed in range(3):
        batches.clear()
        _, rate = law.sample_with_stats(X, mu, rng=np.random.default_rng(seed))
        assert rate < 0.05  # the case this is about
        assert batches == [8 * 4**i for i in range(len(batches))] and sum(batches) <= 8 + 32 + 128 + 512 + 2048


def _outcome(X, m, **kwargs):
    """What a release shows anyone: its class (value type or error and message) and its public warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rel = private_frechet_median(X, m, **kwargs)
            outcome = ("released", np.shape(rel.point), rel.certificate.to_json())
        except Exception as err:  # noqa: BLE001 - the class and message are what is compared
            outcome = (type(err).__name__, str(err))
    shown = sorted(str(w.message) for w in caught if not issubclass(w.category, RecordsWarning))
    return outcome, shown


@pytest.mark.parametrize("kwargs", [dict(radius=0.5, epsilon=1.0), dict(radius=0.5, epsilon=1e-3),
                                    dict(radius=0.5, epsilon=1.0, round_to=None), dict(radius=1.0, epsilon=1.0),
                                    dict(radius=0.5, epsilon=-1.0), dict(radius="auto", epsilon=1.0)])
def test_outcome_classes_do_not_depend_on_the_data(kwargs):
    m = Sphere(2)
    X = _in_ball(m, 50, 0.5, 0.2, np.random.default_rng(8))
    neighbours = []
    for bad in (-m.origin, np.array([np.nan, 0.0, 1.0]), np.array([3.0, 0.0, 0.0]), m.exp(m.origin, [0.5, 0, 0])):
        X2 = X.copy()
        X2[0] = bad  # the antipode, a NaN, a point off the sphere, a point on the ball's edge
        neighbours.append(X2)
    reference = _outcome(X, m, center=m.origin, rng=1, **kwargs)
    for X2 in neighbours:
        assert _outcome(X2, m, center=m.origin, rng=1, **kwargs)[1] == reference[1]
        got = _outcome(X2, m, center=m.origin, rng=1, **kwargs)[0]
        assert got[0] == reference[0][0] and (got[0] == "released" or got == reference[0])


def test_the_accountant_is_charged_a_pure_epsilon_before_the_data_are_read():
    m = Sphere(2)
    X = _in_ball(m, 50, 0.5, 0.2, np.random.default_rng(9))
    acc = PrivacyAccountant(epsilon=1.0)
    private_frechet_median(X, m, center=m.origin, radius=0.5, epsilon=0.6, accountant=acc)
    assert acc.spent() == (pytest.approx(0.6), 0.0)
    with pytest.raises(BudgetExceededError):  # refused before any record is read: a NaN array cannot matter
        private_frechet_median(np.full_like(X, np.nan), m, center=m.origin, radius=0.5, epsilon=0.6, accountant=acc)
    assert acc.spent() == (pytest.approx(0.6), 0.0)


def test_unsupported_spaces_are_refused_before_the_data_are_read():
    K = KendallShape2D(5)
    with pytest.raises(ValueError, match="constant curvature"):
        private_frechet_median(np.full((10, 5), np.nan + 0j), K, center=K.origin, radius=0.3, epsilon=1.0)


def _audit_draws(X, epsilon, size, seed):
    m = Euclidean(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseWarning)  # n = 4: "mostly noise", as it should be
        plan = plan_statistic(FRECHET_MEDIAN, X, m, center=m.origin, radius=1.0, epsilon=epsilon, mechanism="kng")
    return plan.draw(size, rng=seed)[:, 0]


def _loss_lower_bound(a, b, event, alpha=ALPHA):
    """Clopper–Pearson lower confidence bound of ``log P_a(event)/P_b(event)`` (each at ``α/2``)."""
    k_a, k_b, n = int(np.sum(event(a))), int(np.sum(event(b))), len(a)
    low = stats.beta.ppf(alpha / 2, k_a, n - k_a + 1) if k_a else 0.0
    high = stats.beta.ppf(1 - alpha / 2, k_b + 1, n - k_b) if k_b < n else 1.0
    return np.log(low / high) if low > 0 else -np.inf


@pytest.mark.slow
def test_empirical_privacy_loss_and_its_power():
    """Neighbours on the line (a worst-case pair of a search over small datasets: one record moved
    from one end of the ball to the other), ε = 1: the exact loss is 0.83 at the certified σ and 1.76 at
    σ/2. On the event where the σ/2 log ratio is within 10 % of its maximum, the lower confidence
    bound of the loss must stay ≤ ε at σ and exceed ε at σ/2 (the same data, ε = 2 gives σ/2)."""
    D = np.array([[-1.0], [-1.0], [0.5], [0.5]])
    D2 = np.array([[1.0], [-1.0], [0.5], [0.5]])
    x = np.linspace(-1, 1, 20_001)

    def log_density(Z, s):
        a = -np.abs(np.mean(np.sign(x[:, None] - Z[:, 0]), axis=1)) / s
        return a - np.log(np.trapezoid(np.exp(a), x))
    sigma = median_measurement(Euclidean(1), 4, 1.0, center=np.zeros(1), radius=1.0).scale
    ratio = log_density(D2, sigma / 2) - log_density(D, sigma / 2)  # largest where D2 has its records
    lo, hi = x[ratio >= 0.9 * ratio.max()].min(), x[ratio >= 0.9 * ratio.max()].max()
    event = lambda z: (z >= lo) & (z <= hi)
    size = 40_000
    certified = _loss_lower_bound(_audit_draws(D2, 1.0, size, 10), _audit_draws(D, 1.0, size, 11), event)
    halved = _loss_lower_bound(_audit_draws(D2, 2.0, size, 12), _audit_draws(D, 2.0, size, 13), event)
    assert certified <= 1.0
    assert halved > 1.0


def test_seeded_release_is_reproducible_and_stored():
    m = Sphere(2)
    X = m.random_point(m.origin, 0.3, size=200, rng=0)
    a = private_frechet_median(X, m, center=m.origin, radius=0.5, epsilon=1.0, rng=1)
    b = private_frechet_median(X, m, center=m.origin, radius=0.5, epsilon=1.0, rng=1)
    assert a.point.tobytes() == b.point.tobytes()
    assert a.certificate.statistic == "frechet_median" and a.certificate.mechanism == "kng"
    assert a.certificate.sensitivity == median_sensitivity(200) and a.certificate.scale == 2 * median_sensitivity(200)
    assert a.certificate.sampler_acceptance is None  # data-dependent: withheld
    np.testing.assert_allclose(a.point, STORED_SPHERE_RELEASE, rtol=1e-9, atol=1e-12)


STORED_SPHERE_RELEASE = [float.fromhex(h) for h in ("-0x1.ce04a0285f5f7p-6", "-0x1.ed08802b152efp-7", "0x1.ffbd082cb79ebp-1")]


def _contaminated(m, n, radius, fraction, rng):
    clean = m.random_point(m.origin, 0.2, size=n, rng=rng)
    k = int(round(fraction * n))
    u = m.random_unit_tangent(m.origin, rng=np.random.default_rng(7))
    X = clean.copy()
    X[:k] = [m.exp(m.origin, u * (0.95 * radius if i % 2 == 0 else 2.0)) for i in range(k)]
    return clean, X


@pytest.mark.slow
def test_median_stays_close_under_outliers_while_the_mean_moves():
    """S², n = 1000, ε = 1, radius 0.7, 10 % outliers in one direction (half at the ball's edge, half
    outside it): over 5 seeds, the private median's median error from the clean mean stays below
    0.04 rad and below half the private mean's, which moves ≥ 3× its error on clean data."""
    m, radius = Sphere(2), 0.7
    errs: dict[str, list[float]] = {"median": [], "mean": [], "mean0": []}
    from manifold_dp.stats.frechet import frechet_mean

    for seed in range(5):
        clean, X = _contaminated(m, 1000, radius, 0.1, np.random.default_rng(seed))
        truth = frechet_mean(clean, m).point
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RecordsWarning)
            warnings.simplefilter("ignore", ReleaseWarning)
            errs["median"].append(float(m.dist(truth, private_frechet_median(X, m, center=m.origin, radius=radius,
                                                                            epsilon=1.0, rng=seed).point)))
            errs["mean"].append(float(m.dist(truth, private_frechet_mean(X, m, center=m.origin, radius=radius,
                                                                        epsilon=1.0, rng=seed).point)))
            errs["mean0"].append(float(m.dist(truth, private_frechet_mean(clean, m, center=m.origin, radius=radius,
                                                                         epsilon=1.0, rng=seed).point)))
    median, mean, mean0 = (float(np.median(errs[k])) for k in ("median", "mean", "mean0"))
    assert median < 0.04 and median < 0.5 * mean and mean > 3 * mean0


@pytest.mark.parametrize("radius", [1e151, 1e154, 1.2e154, 2e154])
def test_a_radius_whose_squares_overflow_is_refused_before_the_data_are_read(radius):
    from manifold_dp import PrivacyAccountant

    M = Euclidean(1)
    D = np.full((3, 1), radius)  # every record on the boundary
    D2 = D.copy()
    D2[-1] = 0.0  # a neighbour: one record at the centre
    for X in (D, D2):
        acc = PrivacyAccountant(epsilon=10.0)
        with pytest.raises(ValueError, match=r"radius \+ \|center\| <= 2\^500"):
            private_frechet_median(X, M, center=M.origin, radius=radius, epsilon=1.0, accountant=acc, rng=1)
        assert acc.spent() == (0.0, 0.0)


def test_a_radius_just_below_the_limit_releases_for_every_neighbour():
    M = Euclidean(1)
    r = 2.0**499
    D = np.full((3, 1), r)
    D2 = D.copy()
    D2[-1] = 0.0
    for X in (D, D2):
        for seed in range(3):
            rel = private_frechet_median(X, M, center=M.origin, radius=r, epsilon=1.0, rng=seed)
            assert np.all(np.isfinite(rel.point)) and abs(float(rel.point[0])) <= r


def test_high_dimension_warns_before_the_sampler_runs():
    """From dimension 12 on (affine-invariant SPD: from 10, k = 4), a public ReleaseWarning says the
    exact sampler may run very long (its acceptance falls about exponentially with the dimension);
    below, none. Said while planning, before any record is read."""
    for M, expected in ((Sphere(11), False), (Sphere(12), True), (SPDAffineInvariant(3), False),
                        (SPDAffineInvariant(4), True), (SPDLogEuclidean(4), False)):
        X = M.random_point(M.origin, 0.2, size=60, rng=np.random.default_rng(0))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            plan_statistic(FRECHET_MEDIAN, X, M, center=M.origin, radius=0.5, epsilon=1.0, mechanism="kng")
        said = [w for w in caught if issubclass(w.category, ReleaseWarning) and "may run from seconds to hours" in str(w.message)]
        assert bool(said) == expected, M


def test_the_median_refuses_a_private_radius_before_anything_is_charged():
    """The median offers no private radius: ``radius="auto"`` and an ``AutoRadius`` are refused by
    the pipeline, naming the radius, and the accountant is untouched."""
    from manifold_dp import AutoRadius, PrivacyAccountant, Sphere, private_frechet_median

    S = Sphere(2)
    X = S.random_point(S.origin, 0.3, size=50, rng=0)
    for radius in ("auto", AutoRadius(), AutoRadius(quantile=0.5)):
        acc = PrivacyAccountant(10.0)
        with pytest.raises(ValueError, match="radius must be a number for frechet_median"):
            private_frechet_median(X, S, center=S.origin, radius=radius, epsilon=1.0, accountant=acc)
        assert acc.spent() == (0.0, 0.0)
