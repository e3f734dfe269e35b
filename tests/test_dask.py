"""Dask arrays: the same results as in memory, with the threaded scheduler and a LocalCluster."""

import dask.array as da
import distributed
import numpy as np
import pytest

from manifold_dp import KendallShape2D, SPDAffineInvariant, SPDLogEuclidean, Sphere, frechet_mean, private_frechet_mean
from manifold_dp.data import eigen_spd, sphere_cap

CASES = [
    (Sphere(2), lambda: sphere_cap(5000, rng=1)),
    (SPDAffineInvariant(3), lambda: eigen_spd(3000, 3, r=0.5, rng=2)),
    (SPDLogEuclidean(4), lambda: eigen_spd(3000, 4, rng=3)),
    (KendallShape2D(5), lambda: KendallShape2D(5).random_point(KendallShape2D(5).origin, 0.2, size=3000, rng=4)),
]


@pytest.mark.parametrize("m,make", CASES, ids=[type(c[0]).__name__ for c in CASES])
def test_dask_mean_equals_in_memory(m, make):
    X = make()
    ref = frechet_mean(X, m).point
    for chunks in (700, 2999, 5000):
        got = frechet_mean(da.from_array(X, chunks=(chunks,) + X.shape[1:]), m).point
        assert np.allclose(got, ref, atol=1e-10, rtol=0)


def test_dask_private_release_equals_in_memory():
    s = Sphere(2)
    X = sphere_cap(4000, rng=5)
    X[7] = np.nan  # replaced by the centre inside the map step
    X[8] = [0.0, 1.0, 0.0]  # outside the ball: clipped inside the map step
    kw = dict(center=s.origin, radius=0.4, epsilon=1.0, rng=11)
    a = private_frechet_mean(X, s, **kw)
    b = private_frechet_mean(da.from_array(X, chunks=(999, 3)), s, **kw)
    assert np.allclose(a.point, b.point, atol=1e-10) and a.certificate.sensitivity == b.certificate.sensitivity
    le = SPDLogEuclidean(3)
    Y = eigen_spd(2000, 3, rng=6)
    kw = dict(center=np.eye(3), radius=0.5, epsilon=0.5, delta=1e-6, mechanism="tangent_gaussian", rng=12)
    assert np.allclose(private_frechet_mean(Y, le, **kw).point, private_frechet_mean(da.from_array(Y, chunks=(500, 3, 3)), le, **kw).point, atol=1e-10)
    kw = dict(center=s.origin, radius=0.4, epsilon=1.0, mechanism="ambient_laplace", rng=13)
    assert np.allclose(private_frechet_mean(X, s, **kw).point, private_frechet_mean(da.from_array(X, chunks=(999, 3)), s, **kw).point, atol=1e-10)
    with pytest.raises(ValueError, match="Dask"):
        private_frechet_mean(da.from_array(X, chunks=(999, 3)), s, center=s.origin, radius=0.4, epsilon=1.0, mechanism="kng")


@pytest.mark.slow
def test_local_cluster_of_processes():
    s = Sphere(2)
    X = sphere_cap(20000, rng=7)
    ref = frechet_mean(X, s).point
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, distributed.Client(cluster):
        got = frechet_mean(da.from_array(X, chunks=(3000, 3)), s).point
        rel = private_frechet_mean(da.from_array(X, chunks=(3000, 3)), s, center=s.origin, radius=0.4, epsilon=1.0, rng=3)
    assert np.allclose(got, ref, atol=1e-10)
    assert np.allclose(rel.point, private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=1.0, rng=3).point, atol=1e-10)
