"""Dask arrays: the same results as in memory, with the threaded scheduler and a LocalCluster."""

import time
import warnings

import dask.array as da
import distributed
import numpy as np
import pytest

from manifold_dp import KendallShape2D, SPDAffineInvariant, SPDLogEuclidean, Sphere, frechet_mean, private_frechet_mean
from manifold_dp.data import eigen_spd, sphere_cap
from manifold_dp.privacy.frechet_mean import mean_sensitivity, plan_release
from manifold_dp.stats.frechet import certified_schedule

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


# --- a release on Dask: the in-memory release to rounding, one graph execution per pass -----------

def hostile_cap(n=40000):
    """Records of S² with every kind the preparation treats: non-finite, off the sphere, outside
    the ball, at the antipode of the centre."""
    X = sphere_cap(n, radius=0.45, rng=5)
    X[7], X[8], X[9], X[10], X[11] = [np.nan, 0, 0], [0, 1, 0], [0, 0, -1], [2, 0, 0], [np.inf, 0, 0]
    return X


def recorded(call):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = call()
    return out, [(w.category, str(w.message)) for w in record]


def schedule_reads(s, n, radius):
    """The passes a release reads the records in: the first (prepare, count, start statistics),
    then one per step of the public schedule but the step the first pass's log mean gives."""
    plan = certified_schedule(s, radius, mean_sensitivity(s, "laplace", n=n, center=s.origin, radius=radius,
                                                          bound="tight")[1], n)
    return 1 + plan.passes - (plan.start == "center" and plan.gradient_steps > 0)


@pytest.mark.parametrize("radius", [0.05, 0.4, 0.7])
@pytest.mark.parametrize("chunks", [999, 17000, 40000])
def test_dask_release_is_the_in_memory_release_to_rounding(chunks, radius):
    s, X = Sphere(2), hostile_cap()
    kw = dict(center=s.origin, radius=radius, epsilon=1.0)
    lazy = da.from_array(X, chunks=(chunks, 3))
    (a, wa), (b, wb) = recorded(lambda: plan_release(X, s, **kw)), recorded(lambda: plan_release(lazy, s, **kw))
    assert np.max(np.abs(a._statistic - b._statistic)) <= 1e-12 and wa == wb  # the same RecordsWarning, counts only
    assert np.max(np.abs(a.draw(rng=4) - b.draw(rng=4))) <= 1e-12
    if chunks == 40000:  # one block: the same sums in the same order
        assert np.array_equal(a._statistic, b._statistic)


def test_dask_release_takes_one_graph_execution_per_pass():
    from dask.callbacks import Callback

    s, X = Sphere(2), hostile_cap()
    for radius in (0.05, 0.4, 0.7):
        graphs = []
        with Callback(start=lambda dsk: graphs.append(len(dsk))):
            private_frechet_mean(da.from_array(X, chunks=(5000, 3)), s, center=s.origin, radius=radius, epsilon=1.0, rng=1)
        assert len(graphs) == schedule_reads(s, len(X), radius)
        assert set(graphs) == {16}  # each: the 8 blocks and one task over each, nothing else


def test_persisted_on_a_cluster_the_clipped_blocks_stay_on_the_workers():
    s, X = Sphere(2), hostile_cap()
    kw = dict(center=s.origin, radius=0.4, epsilon=1.0, rng=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        D = client.persist(da.from_array(X, chunks=(5000, 3)))
        distributed.wait(D)
        with distributed.get_task_stream(client) as stream:
            (got, wd) = recorded(lambda: private_frechet_mean(D, s, **kw))
        for _ in range(100):  # the client releases the kept blocks when the release drops them; the scheduler then forgets them
            held = client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))
            if held == 8:
                break
            time.sleep(0.05)
    ref, wm = recorded(lambda: private_frechet_mean(X, s, **kw))
    assert np.max(np.abs(got.point - ref.point)) <= 1e-12 and wd == wm
    names = [str(t["key"][0] if isinstance(t["key"], tuple) else t["key"]).split("-")[0] for t in stream.data]
    # the first pass prepares each block once, keeping its clipped records; each later pass reads them: one task a block
    assert names.count("_first_pass") == 8 and names.count("_block_task") == 8 * (schedule_reads(s, len(X), 0.4) - 1)
    assert held == 8  # the kept copy was released with the release: only the persisted records remain
