"""Resources: record preparation needs a bounded amount of memory beyond its output, the BLAS
thread limit is set inside a release and lifted after, and ``import manifold_dp`` stays light."""

import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from manifold_dp import Sphere
from manifold_dp.data import sphere_cap
from manifold_dp.privacy import release


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


def test_entry_points_run_with_the_blas_limit(monkeypatch):
    """The releases, the planning functions, the CLI and the SPD Gaussian sampler's pilot run with
    BLAS limited: unlimited, OpenBLAS's spinning threads made ``manifold-dp plan`` on SPD-AI(28)
    take 45 s instead of 8 s on a loaded machine (the pilot's batched ``eigh``)."""
    from threadpoolctl import threadpool_info

    from manifold_dp import _threads, cli
    from manifold_dp.privacy import planning, release, spd_sampler

    seen, triu_indices = [], spd_sampler.triu_indices

    def spy(*args):
        seen.append([i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"])
        return triu_indices(*args)

    if _threads.BLAS_THREADS is None or not _threads._blas_libraries():
        pytest.skip(f"{_threads.ENVIRONMENT_VARIABLE}=none or no BLAS that threadpoolctl can see: nothing is limited")
    before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    monkeypatch.setattr(spd_sampler, "triu_indices", spy)  # read inside _gaussian_matrices
    spd_sampler._gaussian_matrices(3, 0.5, 10, np.random.default_rng(0))
    assert seen == [[min(t, _threads.BLAS_THREADS) for t in before]]
    depth = []

    def inside(*args, **kwargs):  # each entry point's first step, recording whether the limit is on
        depth.append(_threads._depth)
        raise KeyboardInterrupt

    S = Sphere(2)
    X = S.random_point(S.origin, 0.3, size=20, rng=0)
    for module, name, call in [
            (release, "plan_statistic", lambda: release.release_statistic(release.FRECHET_MEAN, X, S, center=S.origin,
                                                                           radius=0.5, epsilon=1.0)),
            (planning, "_public", lambda: planning.expected_error(S, "laplace", n=20, radius=0.5, epsilon=1.0)),
            (planning, "expected_error", lambda: planning.plan_table(S, n=20, epsilon=1.0, radii=[0.5])),
            (planning, "candidate_mechanisms", lambda: planning.choose_ball_mechanism(S, n=20, epsilon=1.0)),
            (cli, "cmd_mechanisms", lambda: cli._run(cli.parser().parse_args(["mechanisms"])))]:
        monkeypatch.setattr(module, name, inside)
        with pytest.raises(KeyboardInterrupt):
            call()
        monkeypatch.undo()
        assert depth.pop() >= 1, name
    assert _threads._depth == 0


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
