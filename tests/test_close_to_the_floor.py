"""Issue 15: the faster passes compute what the old ones did (copies of the old functions below,
compared to 1e-12), the enclosing-ball check accepts a ring at 0.999·r* and refuses one at 1.001·r*,
record preparation keeps bounded temporaries, the BLAS thread limit is set and lifted, and
``import manifold_dp`` stays light."""

import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from scipy.optimize import minimize

from conftest import MANIFOLDS
from manifold_dp import (CurvatureAssumptionError, Euclidean, Hyperbolic, KendallShape2D, SPDAffineInvariant,
                         SPDLogEuclidean, Sphere, frechet_mean)
from manifold_dp.data import eigen_spd, sphere_cap
from manifold_dp.manifolds.matrix import eig_weighted_sum, sym
from manifold_dp.privacy import release
from manifold_dp.stats import enclosing, frechet
from manifold_dp.stats.frechet import (PreparedRecords, certified_frechet_mean, enclosing_radius, hessian_lower_bound,
                                       hessian_upper_bound, riemannian_gradient)

SPACES = [Sphere(2), Sphere(5, radius=2.0), Hyperbolic(3), SPDAffineInvariant(3), SPDLogEuclidean(3),
          KendallShape2D(5), Euclidean(3)]


def _ids(spaces):
    return [repr(m) for m in spaces]


# --- the old implementations, kept verbatim in spirit: one log table, tensordot, full copies ---------

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


# --- each faster pass computes what the old one did ------------------------------------------------

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
    from manifold_dp.manifolds import base, sphere

    monkeypatch.setattr(base, "GRADIENT_BLOCK", 1)  # 16 records per block
    monkeypatch.setattr(sphere, "PAIR_BLOCK", 1)
    assert np.max(np.abs(riemannian_gradient(m, P, X) - whole)) < 1e-12
    assert np.max(np.abs(riemannian_gradient(m, P[0], X) - whole[0])) < 1e-12
    assert np.max(np.abs(riemannian_gradient(m, P.reshape((3, 4) + P.shape[1:]), X) - whole.reshape((3, 4) + P.shape[1:]))) < 1e-12


def test_matrix_helpers():
    rng = np.random.default_rng(7)
    A = rng.standard_normal((9, 4, 4))
    X = A @ np.swapaxes(A, -1, -2) + np.eye(4)
    w, u = np.linalg.eigh(X)
    v = rng.standard_normal((9, 4))
    ref = sum(u[i] @ np.diag(v[i]) @ u[i].T for i in range(9))
    assert np.max(np.abs(eig_weighted_sum(u, v) - ref)) < 1e-12


def test_spd_positive_definite_fast_path_agrees_with_the_eigenvalues():
    """Whole batches that pass the shifted Cholesky, batches with one singular or indefinite matrix,
    and matrices near the k·ε·λmax threshold: the verdict is the eigenvalue test's."""
    from manifold_dp.manifolds.spd import _eigenvalues_positive, _positive_definite

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


# --- the enclosing-ball check near r* ---------------------------------------------------------------

def _sphere_ring(n, fraction, seed):
    s = Sphere(2)
    c = np.array([0.3, 0.2, 0.9]) / np.linalg.norm([0.3, 0.2, 0.9])
    u = s.random_unit_tangent(c, rng=seed)
    v = np.cross(c, u)
    a = np.random.default_rng(seed).uniform(0, 2 * np.pi, n)
    return s.exp(c, fraction * s.assumption_radius * (np.cos(a)[:, None] * u + np.sin(a)[:, None] * v))


def test_ring_at_0999_r_star_is_accepted_and_at_1001_refused_without_the_slow_iterations(monkeypatch):
    """The regression of issue 15: records on a ring at 0.999·r* satisfy Assumption 1, and the old
    check ran its 200 Bădoiu–Clarkson passes and refused them. The smallest enclosing cap is exact on
    the sphere: the ring is accepted, a ring at 1.001·r* refused, and neither needs those passes."""
    s = Sphere(2)
    monkeypatch.setattr(enclosing, "_farthest", lambda *a: pytest.fail("Bădoiu–Clarkson iterations ran on the sphere"))
    inside = _sphere_ring(200_000, 0.999, 12)
    res = frechet_mean(inside, s)
    assert res.converged and float(np.max(s.dist(res.point, inside))) > s.assumption_radius  # the mean's own ball is too big
    assert abs(enclosing_radius(s, inside, res.point) / s.assumption_radius - 0.999) < 1e-9
    with pytest.raises(CurvatureAssumptionError, match="Assumption 1"):
        frechet_mean(_sphere_ring(200_000, 1.001, 13), s)


def test_smallest_cap_bounds_bracket_the_exact_radius():
    rng = np.random.default_rng(14)
    s = Sphere(3)
    X = s.random_point(s.origin, 0.6, size=500, rng=rng)
    upper, lower, centre = enclosing._smallest_cap(X, s.origin)
    assert 0 <= upper - lower < 1e-10
    assert abs(np.arccos(np.min(X @ centre)) - upper) < 1e-12
    # no centre does better (a local optimiser of the max angle from the cap's centre)
    f = lambda c: float(np.max(np.arccos(np.clip(X @ (c / np.linalg.norm(c)), -1, 1))))
    best = minimize(f, centre + 0.01, method="Nelder-Mead", options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 4000}).fun
    assert best >= lower - 1e-9


def test_min_norm_point_of_a_hull():
    rng = np.random.default_rng(15)
    for m, D in ((3, 3), (12, 4), (40, 6)):
        P = rng.standard_normal((m, D)) + 1.5
        z = enclosing._min_norm_point(P)
        cons = ({"type": "eq", "fun": lambda a: np.sum(a) - 1},)
        ref = minimize(lambda a: float(np.sum((a @ P) ** 2)), np.full(m, 1 / m), bounds=[(0, 1)] * m, constraints=cons,
                       method="SLSQP", options={"ftol": 1e-15, "maxiter": 1000})
        assert np.linalg.norm(z) <= np.sqrt(ref.fun) + 1e-9
        assert np.min(P @ z) >= z @ z - 1e-9  # optimality: no vertex on the origin's side of the supporting plane


def test_kendall_ring_near_r_star_is_accepted():
    m = KendallShape2D(5)
    c = m.origin
    u = m.random_unit_tangent(c, rng=0)
    w = m.random_unit_tangent(c, rng=1)
    w = w - m.inner(c, u, w) * u
    w = w / m.norm(c, w)
    a = np.random.default_rng(2).uniform(0, 2 * np.pi, 5000)
    X = m.exp(c, 0.999 * m.assumption_radius * (np.cos(a)[:, None] * u + np.sin(a)[:, None] * w))
    X = X * np.exp(1j * np.random.default_rng(3).uniform(0, 6.3, size=(5000, 1)))  # rotations change no shape
    assert frechet_mean(X, m).converged
    assert enclosing_radius(m, X, frechet_mean(X, m).point) < m.assumption_radius


# --- memory ---------------------------------------------------------------------------------------

def _peak(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_record_preparation_needs_a_bounded_amount_beyond_its_output():
    s = Sphere(2)
    extra = []
    for n in (100_000, 400_000):
        X = sphere_cap(n, rng=16)
        out_bytes = X.nbytes
        extra.append(_peak(lambda: release.prepare_records(s, X, s.origin, np.pi / 8)) - out_bytes)
    assert extra[1] < 4 * 2**20 and extra[1] < 1.5 * extra[0] + 2**20  # a few MiB, not growing with n


# --- the BLAS thread limit and the import -------------------------------------------------------------

def test_blas_limit_is_set_inside_and_lifted_after():
    from threadpoolctl import threadpool_info

    from manifold_dp import _threads

    if _threads.BLAS_THREADS is None or not _threads._blas_libraries():
        pytest.fail("the default setting must limit a BLAS that threadpoolctl can see")
    before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    seen = []
    inner = _threads.blas_limited(lambda: seen.append([i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]))
    outer = _threads.blas_limited(lambda: (inner(), seen.append("nested")))
    outer()
    after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    assert seen[0] == [min(t, _threads.BLAS_THREADS) for t in before] and seen[1] == "nested"
    assert after == before


def test_blas_setting_is_read_from_the_environment():
    from manifold_dp._threads import _read_setting

    assert _read_setting(None) == 1 and _read_setting("4") == 4 and _read_setting("none") is None
    for bad in ("0", "-2", "two"):
        with pytest.raises(ValueError, match="MANIFOLD_DP_BLAS_THREADS"):
            _read_setting(bad)


def test_import_stays_light():
    """``import manifold_dp`` pulls in neither scipy.optimize nor scipy.stats nor threadpoolctl
    (each costs a large share of a cold start); a release then uses the thread limit."""
    code = ("import sys, manifold_dp; heavy = [m for m in ('scipy.optimize', 'scipy.stats', 'threadpoolctl', 'dp_accounting', "
            "'sklearn') if m in sys.modules]; print(heavy)")
    env = {k: v for k, v in os.environ.items() if k != "MANIFOLD_DP_BLAS_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "[]"
    code = ("import numpy as np, manifold_dp, manifold_dp._threads as t; S = manifold_dp.Sphere(2); "
            "X = S.random_point(S.origin, 0.3, size=50, rng=0); "
            "manifold_dp.private_frechet_mean(X, S, center=S.origin, radius=0.4, epsilon=1.0, rng=1); print(t.BLAS_THREADS)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**env, "MANIFOLD_DP_BLAS_THREADS": "none"})
    assert out.stdout.strip() == "None"


# --- single draws: the same laws -----------------------------------------------------------------------

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


@pytest.mark.parametrize("shift", [-300, -120, 150, 400])
def test_sphere_preparation_far_from_radius_one_is_the_unit_one_scaled_exactly(shift):
    """Far from R = 1 the preparation runs on the sphere of radius R·2^-e ∈ [½, 1) (so that no
    square or product of kept coordinates is subnormal: a slow float path, i.e. timing) and scales
    back by the power of two: its values must be exactly those of the unit sphere, scaled. Records
    include small coordinates, NaN, off-norm and antipodal records. (The timing itself is measured,
    not tested: docs/security.md, Timing.)"""
    rng = np.random.default_rng(11)
    unit = Sphere(2)
    c = unit.origin
    X = unit.exp(c, unit.random_unit_tangent(c, 400, rng=rng) * rng.uniform(0, 0.8, (400, 1)))
    X[::9, 0] = 1e-80  # kept by the flush at R = 1 (≥ 2⁻³⁰⁰), but its square at R = 2^-300 would be subnormal
    X[::9] /= np.linalg.norm(X[::9], axis=1, keepdims=True)
    X[1::13] = np.nan
    X[2::17] *= 1.5
    X[3::19] = -c
    scale = 2.0**shift
    m = Sphere(2, radius=scale)
    got = m.prepare_block(X * scale, c * scale, 0.3 * scale, 1 / 400)
    want = unit.prepare_block(X, c, 0.3, 1 / 400)
    np.testing.assert_array_equal(got[0], want[0] * scale)
    for g, w in zip(got[1:4], want[1:4]):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got[4], want[4] * scale)


def test_spd_newton_terms_refuse_an_order_they_do_not_keep():
    m = SPDAffineInvariant(3)
    for order in (1, 3, 8):
        with pytest.raises(ValueError, match="order 2, 4 or 6"):
            m.newton_terms(np.eye(3), np.eye(3)[None], 1.0, order=order)


@pytest.mark.parametrize("R", [0.0, -1.0, float("nan"), float("inf"), 1e200, 1e-200, 2.0**501, 2.0**-501])
def test_sphere_radius_outside_the_supported_range_is_refused_by_name(R):
    """R² and 1/R² (curvature) must be finite for any release to work on the sphere; outside
    [2^-500, 2^500] the constructor refuses, quoting the radius (a public parameter)."""
    with pytest.raises(ValueError, match=r"radius must be in \[2\^-500, 2\^500\]"):
        Sphere(2, radius=R)
    assert Sphere(2, radius=2.0**500).radius == 2.0**500 and Sphere(2, radius=2.0**-500).radius == 2.0**-500


def test_select_is_np_where_bit_for_bit_and_finite_rows_is_the_row_test():
    """The branch-free select of record preparation (docs/security.md, Timing (c)) returns exactly
    ``np.where``'s bits — NaN, inf and −0.0 included — for float and complex points of any shape,
    with the mask broadcast; ``finite_rows`` flags exactly the points with a non-finite entry."""
    from manifold_dp.manifolds.base import finite_rows, select

    rng = np.random.default_rng(0)
    for shape_a, shape_b, mshape in (((50, 4), (4,), (50, 1)), ((50, 3, 3), (3, 3), (50, 1, 1)), ((7,), (7,), (7,)),
                                     ((6, 5), (6, 5), (6, 5))):
        for complex_points in (False, True):
            a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
            if complex_points:
                a, b = a + 1j * rng.standard_normal(shape_a), b + 1j * rng.standard_normal(shape_b)
            a.flat[::5], a.flat[1::7], a.flat[2::11] = np.nan, np.inf, -0.0
            mask = rng.random(mshape) < 0.5
            got, want = select(mask, a, b), np.where(mask, a, b)
            assert got.shape == want.shape and got.dtype == want.dtype
            assert np.array_equal(got.view(np.uint8), np.ascontiguousarray(want).view(np.uint8))
            point_ndim = len(shape_b)
            axes = tuple(range(a.ndim - point_ndim, a.ndim))
            np.testing.assert_array_equal(finite_rows(a, point_ndim), np.all(np.isfinite(a), axis=axes))
    huge = np.array([[1e308, 1e308, -1e308]])  # finite entries whose sum overflows: still finite
    assert finite_rows(huge, 1).tolist() == [True]
