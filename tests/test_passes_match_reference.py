"""The optimised passes compute what the plain reference implementations below compute (one table
of logs, tensordot, full copies; compared to 1e-12): weighted log sums and Karcher terms, clipping,
record preparation in blocks, the certified and plain means, the gradient in blocks, the SPD
helpers and Newton mean, the cached samplers."""


import numpy as np
import pytest

from conftest import MANIFOLDS
from manifold_dp import Euclidean, Hyperbolic, KendallShape2D, SPDAffineInvariant, SPDLogEuclidean, Sphere, frechet_mean
from manifold_dp.data import eigen_spd
from manifold_dp.manifolds.matrix import eig_weighted_sum, sym
from manifold_dp.privacy import release
from manifold_dp.stats import frechet
from manifold_dp.stats.frechet import (
    PreparedRecords,
    certified_frechet_mean,
    hessian_lower_bound,
    hessian_upper_bound,
    riemannian_gradient,
)

SPACES = [Sphere(2), Sphere(5, radius=2.0), Hyperbolic(3), SPDAffineInvariant(3), SPDLogEuclidean(3),
          KendallShape2D(5), Euclidean(3)]


def _ids(spaces):
    return [repr(m) for m in spaces]


def old_clip_to_ball(m, x, center, radius):
    v = m.log(center, x)
    rho = m.norm(center, v)
    inside = rho <= radius
    scale = np.where(inside, 1.0, radius / np.where(inside, 1.0, rho))
    clipped = m.exp(center, v * m._expand(scale))
    return np.where(m._expand(inside), x, clipped)


def old_prepare_records(m, X, center, radius):
    points, finite, ok = release._validity(m, X)
    X = inside = release._sanitised(m, points, ok, center)
    with np.errstate(all="ignore"):
        X = old_clip_to_ball(m, X, center, radius)
    moved = np.any((X != inside).reshape(len(ok), -1), axis=1)
    return X, (int(len(ok)), int(np.sum(~finite)), int(np.sum(finite & ~ok)), int(np.sum(moved)))


def old_log_sum(m, x, X, w):
    return np.tensordot(w, m.log(x, X), axes=(0, 0))


def old_certified_frechet_mean(m, X, center, radius, accuracy):
    n = len(X)
    w = np.full(n, 1.0 / n)
    if m.flat_chart:
        return m.mean_start(sum(m.mean_start_stats(X[i:i + 1], w[i:i + 1]) for i in range(n)))
    kmin, kmax = m.curvature_bounds
    h, H = hessian_lower_bound(radius, kmax), hessian_upper_bound(4.0 * radius, kmin)
    steps = frechet.certified_iterations(h, H, radius, accuracy)
    mu = np.asarray(center, dtype=m.dtype)
    for _ in range(steps):
        mu = old_clip_to_ball(m, m.exp(mu, old_log_sum(m, mu, X, w) / H), center, radius)
    return mu


def old_karcher_mean(m, X, start, tol=1e-13, max_iter=20_000):
    """The old plain mean's loop: Karcher flow at the safe step ``1/H(2·spread)``."""
    w = np.full(len(X), 1.0 / len(X))
    spread = float(np.max(m.dist(start, X)))
    step = 1.0 / hessian_upper_bound(2.0 * spread, m.curvature_bounds[0])
    mu = start
    for _ in range(max_iter):
        g = old_log_sum(m, mu, X, w)
        if m.norm(mu, g) <= tol * max(spread, 1.0):
            return mu
        mu = m.exp(mu, step * g)
    raise AssertionError("the reference Karcher flow did not converge")


def _records(m, n, reach, rng):
    return m.random_point(m.origin, reach, size=n, rng=rng)


@pytest.mark.parametrize("m", list(MANIFOLDS.values()), ids=list(MANIFOLDS))
def test_weighted_log_sum_and_karcher_terms_equal_the_table_of_logs(m):
    rng = np.random.default_rng(1)
    X = _records(m, 300, 0.6 * min(1.0, m.assumption_radius), rng)
    x = m.random_point(m.origin, 0.2 * min(1.0, m.assumption_radius), rng=rng)
    w = rng.uniform(size=300)
    w /= w.sum()
    ref = old_log_sum(m, x, X, w)
    assert np.max(np.abs(m.weighted_log_sum(x, X, w) - ref)) < 1e-12
    g, far, _ = m.karcher_terms(x, X, w)
    assert np.max(np.abs(g - ref)) < 1e-12
    assert abs(far - np.max(m.dist(x, X))) < 1e-9  # the sphere reads it off arccos: 1e-8 near 0, here ~1e-15


@pytest.mark.parametrize("m", list(MANIFOLDS.values()), ids=list(MANIFOLDS))
def test_clip_and_log_sum_equals_the_old_clip_and_the_logs_of_its_output(m):
    rng = np.random.default_rng(2)
    r = 0.3 * min(1.0, m.assumption_radius)
    X = _records(m, 200, 2.5 * r, rng)
    c = m.origin
    w = np.full(200, 1 / 200)
    out, moved, log_sum = m.clip_and_log_sum(X, c, r, w)
    old = old_clip_to_ball(m, X, c, r)
    assert np.max(np.abs(out - old)) < 1e-12
    assert np.array_equal(moved, m.dist(c, X) > r * (1 + 1e-12)) and moved.any()
    assert np.max(np.abs(log_sum - old_log_sum(m, c, old, w))) < 1e-12
    assert np.max(np.abs(m.clip_to_ball(X, c, r) - old)) < 1e-12
    # one point, inside and outside
    assert np.max(np.abs(m.clip_to_ball(X[0], c, r) - old_clip_to_ball(m, X[0], c, r))) < 1e-12
    assert np.array_equal(m.clip_to_ball(c, c, r), c)


@pytest.mark.parametrize("m", SPACES, ids=_ids(SPACES))
def test_prepare_records_equals_the_old_unchunked_preparation(m, monkeypatch):
    """Blocks of a few records (so that many blocks are used), invalid and outside records mixed in:
    the same records, the same counts."""
    monkeypatch.setattr(release, "PREPARE_BLOCK", 1)
    monkeypatch.setattr(release, "PREPARE_MIN_ROWS", 7)
    rng = np.random.default_rng(3)
    r = 0.3 * min(1.0, m.assumption_radius)
    X = np.array(_records(m, 60, 2.0 * r, rng))
    X[5] = np.nan
    X[17] = 3.0 * X[17]  # off the manifold on the sphere, hyperboloid and Kendall; still SPD / Euclidean
    X[40] = m.origin
    new, counts = release.prepare_records(m, X, m.origin, r)
    old, old_counts = old_prepare_records(m, X, m.origin, r)
    assert isinstance(new, PreparedRecords)
    assert np.max(np.abs(np.asarray(new) - old)) < 1e-12
    assert tuple(counts) == old_counts and counts.clipped > 0 and counts.non_finite == 1
    assert np.max(np.abs(new.log_mean - old_log_sum(m, m.origin, old, np.full(60, 1 / 60)))) < 1e-12


@pytest.mark.parametrize("m", [SPDAffineInvariant(4), SPDLogEuclidean(4)], ids=repr)
def test_spd_prepared_distances_are_the_distances_of_the_prepared_records(m, monkeypatch):
    """The fused distances of ``record_distances`` (one decomposition per record) against the
    generic path (prepare at the cap, then ``dist``): the same within rounding, invalid records
    (NaN, 1e308·I, not positive definite, not symmetric, also at 1e200) at 0, the far ones at the cap."""
    rng = np.random.default_rng(4)
    X = eigen_spd(60, 4, r=0.8, rng=rng)
    X[3] = np.nan
    X[9] = 1e308 * np.eye(4)
    X[11] = -np.eye(4)
    X[13, 0, 1] += 0.5
    X[15] = 1e200 * (np.eye(4) + np.triu(np.ones((4, 4)), 1))  # not symmetric: its unscaled norms would overflow
    X[20] = 30.0 * X[20]  # far: beyond the cap
    center, cap = eigen_spd(1, 4, r=0.2, rng=rng)[0], 1.5
    fused = release.record_distances(m, X, center, cap=cap)
    monkeypatch.setattr(type(m), "prepared_distances", lambda self, *a: None)
    generic = release.record_distances(m, X, center, cap=cap)
    assert fused.shape == (60,) and np.max(np.abs(fused - generic)) < 1e-12
    assert np.all(fused[[3, 9, 11, 13, 15]] == 0.0) and fused[20] == cap
    assert not m.belongs(X[15]) and release.prepare_records(m, X[15:16], center, cap)[1].off_manifold == 1


@pytest.mark.parametrize("m,radius", [(Sphere(2), np.pi / 8), (Sphere(4), 0.7), (Hyperbolic(2), 2.0),
                                      (SPDAffineInvariant(3), 1.0), (KendallShape2D(5), 0.35), (Euclidean(3), 2.0),
                                      (SPDLogEuclidean(3), 1.0)], ids=lambda v: repr(v) if not isinstance(v, float) else "")
def test_certified_mean_equals_the_old_one(m, radius):
    """Same public number of steps, same iterates: the new passes agree with the old to 1e-12,
    from plain records and from prepared ones (which carry the first gradient)."""
    rng = np.random.default_rng(4)
    X = _records(m, 400, 1.5 * radius, rng)
    prepared, _ = release.prepare_records(m, X, m.origin, radius)
    plain = np.asarray(prepared)
    old = old_certified_frechet_mean(m, plain, m.origin, radius, 1e-9)
    for records in (prepared, plain):
        assert m.dist(certified_frechet_mean(m, records, m.origin, radius, 1e-9), old) < 1e-12


def test_prepared_records_carry_their_log_mean_only_for_their_centre():
    m = SPDLogEuclidean(3)
    X = eigen_spd(50, 3, r=0.4, rng=5)
    prepared, _ = release.prepare_records(m, X, m.origin, 1.0)
    assert prepared.log_mean_at(m.origin) is not None
    assert prepared.log_mean_at(2.0 * m.origin) is None and prepared.log_mean_at(np.eye(2)) is None
    assert prepared[:10].log_mean is None and np.array(prepared).__class__ is np.ndarray
    # the closed form from the carried log mean is the log-Euclidean mean
    ref = frechet_mean(np.asarray(prepared), m).point
    assert np.max(np.abs(certified_frechet_mean(m, prepared, m.origin, 1.0, 1e-9) - ref)) < 1e-12


@pytest.mark.parametrize("m", [Sphere(2), SPDAffineInvariant(2), Hyperbolic(2)], ids=repr)
def test_gradient_of_a_batch_of_points_in_blocks_equals_the_whole_table(m, monkeypatch):
    rng = np.random.default_rng(6)
    X = _records(m, 250, 0.5, rng)
    P = _records(m, 12, 0.3, rng)
    w = np.full(250, 1 / 250)
    whole = -np.tensordot(m.log(P[:, None], X), w, axes=([1], [0]))
    from manifold_dp.manifolds.kernels import passes, sphere_passes

    monkeypatch.setattr(passes, "GRADIENT_BLOCK", 1)  # 16 records per block
    monkeypatch.setattr(sphere_passes, "PAIR_BLOCK", 1)
    assert np.max(np.abs(riemannian_gradient(m, P, X) - whole)) < 1e-12
    assert np.max(np.abs(riemannian_gradient(m, P[0], X) - whole[0])) < 1e-12
    assert np.max(np.abs(riemannian_gradient(m, P.reshape((3, 4) + P.shape[1:]), X) - whole.reshape((3, 4) + P.shape[1:]))) < 1e-12


def test_matrix_helpers():
    rng = np.random.default_rng(7)
    A = rng.standard_normal((9, 4, 4))
    X = A @ np.swapaxes(A, -1, -2) + np.eye(4)
    _w, u = np.linalg.eigh(X)
    v = rng.standard_normal((9, 4))
    ref = sum(u[i] @ np.diag(v[i]) @ u[i].T for i in range(9))
    assert np.max(np.abs(eig_weighted_sum(u, v) - ref)) < 1e-12


def test_spd_positive_definite_fast_path_agrees_with_the_eigenvalues():
    """Whole batches that pass the shifted Cholesky, batches with one singular or indefinite matrix,
    and matrices near the k·ε·λmax threshold: the verdict is the eigenvalue test's."""
    from manifold_dp.manifolds.kernels.spd_passes import _eigenvalues_positive, _positive_definite

    rng = np.random.default_rng(8)
    k = 5
    Q = np.linalg.qr(rng.standard_normal((60, k, k)))[0]
    lam = np.exp(rng.uniform(-3, 3, size=(60, k)))
    lam[10, 0] = 1e-17 * lam[10, -1]  # below the threshold
    lam[11, 0] = -1e-3
    lam[12, 0] = 20 * k * np.finfo(float).eps * lam[12].max()  # just above it
    S = sym((Q * lam[:, None, :]) @ np.swapaxes(Q, -1, -2))
    exact = _eigenvalues_positive(np.linalg.eigvalsh(S), k)
    assert np.array_equal(_positive_definite(S), exact) and not exact[10] and not exact[11]
    good = np.delete(S, [10, 11, 12], axis=0)
    assert _positive_definite(good).all() and _positive_definite(good[0]) and not _positive_definite(S[11])


def test_spd_hessian_map_is_the_second_derivative_of_the_frechet_function():
    m = SPDAffineInvariant(3)
    rng = np.random.default_rng(9)
    X = eigen_spd(6, 3, r=0.6, rng=rng)
    x = eigen_spd(1, 3, r=0.3, rng=rng)[0]
    w = np.full(6, 1 / 6)
    _, _, hess = m.karcher_terms(x, X, w, hessian=True)
    F = lambda y: 0.5 * np.sum(w * m.dist(y, X) ** 2)
    second = lambda v, h=1e-4: (F(m.exp(x, h * v)) - 2 * F(x) + F(m.exp(x, -h * v))) / h**2
    for _ in range(3):
        u, v = sym(rng.standard_normal((3, 3))), sym(rng.standard_normal((3, 3)))
        polarised = (second(u + v) - second(u - v)) / 4
        assert abs(m.inner(x, hess(u), v) - polarised) < 1e-5 * (1 + abs(polarised))
        assert abs(m.inner(x, hess(u), v) - m.inner(x, u, hess(v))) < 1e-12  # self-adjoint


@pytest.mark.parametrize("k,reach", [(3, 0.5), (10, 1.5), (4, 4.0)])
def test_newton_mean_on_spd_is_the_karcher_mean_in_few_passes(k, reach):
    """The plain mean takes Newton steps on affine-invariant SPD: the minimiser the old Karcher flow
    finds (to 1e-12), in at most four passes after the start on concentrated data; widely spread
    data (records 8 apart) still converge."""
    m = SPDAffineInvariant(k)
    X = m.clip_to_ball(eigen_spd(200, k, r=reach, rng=10 + k), m.origin, reach)
    res = frechet_mean(X, m, tol=1e-13)
    assert res.converged and res.grad_norm <= 1e-13 * max(1.0, float(np.max(m.dist(res.point, X)))) * 2
    ref = old_karcher_mean(m, X, frechet_mean(X, SPDLogEuclidean(k)).point)  # the old start
    assert m.dist(res.point, ref) < 1e-12
    if reach <= 1.5:
        assert res.n_iter <= 4
    # a Karcher flow at the caller's step is still what step= asks for
    assert frechet_mean(X, m, step=0.5, tol=1e-12, max_iter=5000).n_iter > res.n_iter


@pytest.mark.parametrize("m", [Sphere(2), Hyperbolic(2), KendallShape2D(5)], ids=repr)
def test_plain_mean_equals_the_old_karcher_flow(m):
    rng = np.random.default_rng(11)
    X = _records(m, 300, 0.7 * min(1.0, m.assumption_radius), rng)
    res = frechet_mean(X, m, tol=1e-13, check_assumption=False)
    start = m.mean_start(m.mean_start_stats(X, np.full(len(X), 1 / len(X))))  # the old start
    assert m.dist(res.point, old_karcher_mean(m, X, start)) < 1e-12


def test_cached_radius_envelope_gives_the_draws_of_a_fresh_one():
    from manifold_dp.privacy.samplers import laplace_radius_log_density, sample_laplace_radius, sample_log_concave

    for m, sigma in ((Sphere(2), 0.1), (Hyperbolic(3), 0.2), (KendallShape2D(5), 0.05)):
        log_f, dlog_f = laplace_radius_log_density(m, sigma)
        fresh, _ = sample_log_concave(log_f, dlog_f, 0.0, float(m.radial_range[1]), 500, np.random.default_rng(17))
        for _ in range(2):  # built once, then from the cache
            cached, _ = sample_laplace_radius(m, sigma, 500, np.random.default_rng(17))
            assert np.array_equal(cached, fresh)


def test_spd_sampler_eigenpairs_are_the_matrix_it_returns():
    from manifold_dp.manifolds.matrix import eig_apply
    from manifold_dp.privacy.spd_sampler import sample_spd_log_eigen

    S, acc = sample_spd_log_eigen(3, 0.2, 40, np.random.default_rng(18))
    (lam, vec), acc2 = sample_spd_log_eigen(3, 0.2, 40, np.random.default_rng(18), eigen=True)
    assert acc == acc2 and np.max(np.abs(eig_apply(vec, lam) - S)) < 1e-14
    one, _ = sample_spd_log_eigen(2, 0.1, None, np.random.default_rng(19))
    assert one.shape == (2, 2) and np.allclose(one, one.T)
