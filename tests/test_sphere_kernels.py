"""The 2-sphere's compiled passes (``manifolds.kernels.sphere_kernels``, numba) against the numpy passes
they replace (the numpy path is forced by making ``kernels()`` return ``None``).

(1) Record preparation: the same flags, and the same records to rounding, on hostile records
    (NaN, ±inf, 1e308, subnormal and tiny coordinates, off-sphere, zero, antipodal and near-antipodal,
    on the boundary), several centres and radii — the privacy-relevant outcome (which records are
    replaced, which are clipped, where they land) may not depend on which path ran.
(2) A Newton pass of every series degree: the same sums to rounding.
(3) The certified mean of a release (prepared records, public schedule) agrees to 1e-12, also in a
    tiny ball, where rounding is what the certificate budgets.
(4) ``MANIFOLD_DP_JIT=0`` and a missing numba fall back to numpy (``MANIFOLD_DP_JIT=0`` without
    importing numba); ``import manifold_dp`` never imports numba, nor does a release of fewer than
    ``COMPILED_LOAD_RECORDS`` records.
"""

import os
import subprocess
import sys
import zlib

import numpy as np
import pytest

from manifold_dp import Sphere
from manifold_dp.manifolds.kernels import sphere_kernels
from manifold_dp.manifolds.kernels import sphere_passes as sphere_module
from manifold_dp.manifolds.kernels.sphere_passes import COMPILED_LOAD_RECORDS as LOAD_THRESHOLD  # before the fixture
from manifold_dp.manifolds.kernels.sphere_passes import COMPILED_MIN_RECORDS as THRESHOLD  # lowers them
from manifold_dp.manifolds.kernels.sphere_passes import SERIES_DEGREES
from manifold_dp.privacy.release import prepare_records
from manifold_dp.stats.frechet import certified_frechet_mean, certified_schedule

EPS = np.finfo(float).eps


@pytest.fixture(autouse=True)
def compiled_on_small_blocks(monkeypatch):
    """The compiled passes run from ``COMPILED_MIN_RECORDS`` records per block on, once a release of
    ``COMPILED_LOAD_RECORDS`` has loaded them: here from one record, and loaded before each test
    (the thresholds themselves: ``test_a_small_release_never_imports_numba_and_a_large_one_does``)."""
    monkeypatch.setattr(sphere_module, "COMPILED_MIN_RECORDS", 1)
    monkeypatch.setattr(sphere_module, "COMPILED_LOAD_RECORDS", 1)
    sphere_kernels.kernels()  # loaded here, whichever test of the file a worker runs first


@pytest.fixture
def numpy_path(monkeypatch):
    """Within the test, every pass takes the numpy path."""
    def use_numpy():
        monkeypatch.setattr(sphere_kernels, "kernels", lambda load=True: None)
    return use_numpy


def test_the_compiled_passes_are_there():
    """``.[test]`` installs numba: the tests below compare two paths, not one with itself."""
    assert os.environ.get(sphere_kernels.ENVIRONMENT_VARIABLE, "1") != "0", "run without MANIFOLD_DP_JIT=0"
    assert sphere_kernels.kernels() is not None, "numba is missing: pip install -e '.[test]'"


def _hostile(S, c, r, rng):
    R = S.radius
    X = S.exp(c, S.random_unit_tangent(c, 3000, rng=rng) * rng.uniform(0, 2.5 * r, (3000, 1)))
    X[:300] = S.exp(c, r * S.random_unit_tangent(c, 300, rng=rng))  # on the boundary
    X[300] = -c  # antipodal
    X[301] = S.exp(-c, 1e-9 * R * S.random_unit_tangent(-c, rng=rng))  # within 1e-7 of the antipode
    X[302] = S.exp(-c, 1e-6 * R * S.random_unit_tangent(-c, rng=rng))  # just outside that
    X[303:310] = [[np.nan, 0, 0], [np.inf, 0, 0], [0, -np.inf, 0], [1e308, 1e308, 0], [5e-324, 0, 0], [0, 0, 0],
                  [np.nan, np.nan, np.nan]]
    X[310] *= 1 + 1e-7  # off the sphere
    X[311] *= 1 - 1e-11  # within the point tolerance
    X[312] = [1e-310 * R, 0.0, R]  # subnormal coordinate
    X[313] = [1e-160 * R, 0.0, R]  # flushed
    X[314] = [1e-80 * R, 0.0, R]  # kept
    X[315] = c  # at the centre
    X[316] = -X[316]
    return X


@pytest.mark.parametrize("R", [1.0, 3.7, 2.0**-120, 2.0**110])
@pytest.mark.parametrize("center", ["pole", "generic", "tiny coordinate"])
@pytest.mark.parametrize("r_frac", [1e-6, 0.2, 0.7])
def test_compiled_preparation_gives_the_numpy_flags_and_records(R, center, r_frac, numpy_path):
    # a stable seed: hash() of a str is salted per process
    S, rng = Sphere(2, radius=R), np.random.default_rng(zlib.crc32(repr((R, center, r_frac)).encode()))
    c = {"pole": S.origin, "generic": S.project(np.array([0.3, -0.5, 0.8])),
         "tiny coordinate": S.project(np.array([1e-305, 0.6, 0.8]))}[center]
    r = r_frac * R
    X = _hostile(S, c, r, rng)
    fast, fast_counts = prepare_records(S, X, c, r, log_mean=False)
    numpy_path()
    slow, slow_counts = prepare_records(S, X, c, r, log_mean=False)
    assert fast_counts.replaced == slow_counts.replaced >= 7 and fast_counts.clipped > 300
    # Which records are clipped may differ only for records on the boundary to rounding: numpy's
    # vectorised kernels round differently per CPU (AVX-512 against AVX2), the compiled loop does not.
    # Either choice puts the record in the ball, which is all the sensitivity needs.
    with np.errstate(invalid="ignore"):
        on_boundary = np.abs(S.dist(c, X) - r) <= 16 * EPS * R
    assert abs(fast_counts.clipped - slow_counts.clipped) <= int(np.sum(on_boundary))
    # the extrinsic start's statistics around the centre, from the same pass
    np.testing.assert_allclose(fast.start_stats, slow.start_stats, rtol=0, atol=1e-12 * r)
    fast, slow = np.asarray(fast), np.asarray(slow)
    assert np.all(np.isfinite(fast))
    np.testing.assert_allclose(fast, slow, rtol=0, atol=4 * EPS * R)


def test_compiled_preparation_flags_record_by_record(numpy_path):
    """Flags one block at a time (``prepare_block``), so that a difference names its record."""
    S, c, r = Sphere(2), Sphere(2).origin, 0.5
    X = _hostile(S, c, r, np.random.default_rng(4))
    fast = S.prepare_block(X, c, r, 1 / len(X), log_sum=False)
    numpy_path()
    slow = S.prepare_block(X, c, r, 1 / len(X), log_sum=False)
    for name, a, b in zip(("finite", "ok", "moved"), fast[1:4], slow[1:4]):
        assert a.dtype == bool and np.array_equal(a, b), (name, np.flatnonzero(a != b)[:5])
    assert not fast[1][[303, 304, 305, 309]].any() and fast[1][306:309].all() and not fast[2][303:310].any()
    assert np.array_equal(fast[0][303:310], np.tile(c, (7, 1)))  # invalid records become the centre


def test_compiled_preparation_writes_into_the_callers_block_and_keeps_no_subnormal():
    S, c, r = Sphere(2), Sphere(2).origin, 0.5
    X = _hostile(S, c, r, np.random.default_rng(5))
    dest = np.empty((len(X) + 10, 3), order="F")[5:-5]
    out = S.prepare_block(X, c, r, 1 / len(X), log_sum=False, out=dest)[0]
    assert out is dest
    assert not np.any((out != 0) & (np.abs(out) < 2.0**-300))


@pytest.mark.parametrize("degree", SERIES_DEGREES)
@pytest.mark.parametrize("R", [1.0, 2.5])
def test_compiled_newton_pass_gives_the_numpy_sums(degree, R, numpy_path):
    S, rng = Sphere(2, radius=R), np.random.default_rng(degree)
    c, r = S.origin, 0.35 * R
    X, _ = prepare_records(S, S.exp(c, S.random_unit_tangent(c, 5000, rng=rng) * rng.uniform(0, r, (5000, 1))), c, r)
    x = S.exp(c, 0.5 * r * S.random_unit_tangent(c, rng=rng))
    fast = S.newton_terms(x, X, 1 / 5000, ball=r, order=degree)
    numpy_path()
    slow = S.newton_terms(x, X, 1 / 5000, ball=r, order=degree)
    np.testing.assert_allclose(fast[0], slow[0], rtol=0, atol=1e-14 * R)
    np.testing.assert_allclose(fast[1], slow[1], rtol=0, atol=1e-14)


@pytest.mark.parametrize("r", [np.pi / 8, 1e-4])
def test_certified_mean_of_a_release_agrees_between_the_paths(r, numpy_path):
    S, rng, n = Sphere(2), np.random.default_rng(8), 200_000
    c = S.project(np.array([0.2, 0.1, 1.0]))
    X = S.exp(c, S.random_unit_tangent(c, n, rng=rng) * rng.uniform(0, 1.2 * r, (n, 1)))
    accuracy = 1e-10 * r
    assert certified_schedule(S, r, accuracy, n).orders  # the series passes run
    fast = certified_frechet_mean(S, prepare_records(S, X, c, r, log_mean=False)[0], c, r, accuracy)
    numpy_path()
    slow = certified_frechet_mean(S, prepare_records(S, X, c, r, log_mean=False)[0], c, r, accuracy)
    assert S.dist(fast, slow) <= 1e-12 * max(r, 1e-2)


def test_disabled_or_missing_numba_falls_back_and_import_never_loads_it():
    code = ("import sys, manifold_dp; from manifold_dp.manifolds.kernels import sphere_kernels as k; "
            "off = k.kernels() is None; print(sys.modules.get('numba') is not None, off)")
    env = dict(os.environ, MANIFOLD_DP_JIT="0")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=env).stdout.split() == ["False", "True"]
    blocked = "import sys; sys.modules['numba'] = None; " + code
    env = {k: v for k, v in os.environ.items() if k != "MANIFOLD_DP_JIT"}
    assert subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, check=True,
                          env=env).stdout.split() == ["False", "True"]
    release = ("import sys, warnings, numpy as np, manifold_dp as m; S = m.Sphere(2); "
               "X = S.random_point(S.origin, 0.3, size=50, rng=0); warnings.simplefilter('ignore'); "
               "m.private_frechet_mean(X, S, center=S.origin, radius=0.4, epsilon=1.0, rng=1); "
               "print(sys.modules.get('numba') is not None)")
    assert subprocess.run([sys.executable, "-c", "import sys; sys.modules['numba'] = None; " + release],
                          capture_output=True, text=True, check=True, env=env).stdout.split() == ["False"]


@pytest.mark.parametrize("R", [2.0**-500, 2.0**-150, 2.0**150, 2.0**500])
def test_compiled_newton_pass_is_not_taken_far_from_radius_one(R, monkeypatch):
    """The compiled pass multiplies prepared coordinates as they are: far from ``R = 1`` products of
    two coordinates could be subnormal (a slow float path: timing) or overflow; there the numpy
    pass, which normalises the records first, runs (within ``UNSCALED_RADII`` it is the compiled one)."""
    from manifold_dp.manifolds.kernels.sphere_passes import UNSCALED_RADII

    class Refusing:
        def newton(self, degree):
            raise AssertionError("the compiled Newton pass ran")

    S = Sphere(2, radius=R)
    c, r = S.origin, 0.3 * R
    X, _ = prepare_records(S, S.exp(c, S.random_unit_tangent(c, 50, rng=0) * 0.2 * R), c, r)
    x = S.exp(c, 0.1 * R * S.random_unit_tangent(c, rng=1))
    monkeypatch.setattr(sphere_kernels, "kernels", lambda load=True: Refusing())
    g, A = S.newton_terms(x, X, 1 / 50, ball=r, order=5)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(A))
    inside = Sphere(2, radius=UNSCALED_RADII[0] * 2)
    with pytest.raises(AssertionError, match="compiled Newton pass ran"):
        inside.newton_terms(inside.origin, np.tile(inside.origin, (3, 1)), 1 / 3, ball=0.1 * inside.radius, order=5)


def test_a_small_release_never_imports_numba_and_a_large_one_does():
    """Below ``COMPILED_LOAD_RECORDS`` (public: n) the numpy passes run and numba is not imported
    (its import and the cached kernels' load take longer than the compiled passes save on a few
    10⁵ records: a one-off release of 2·10⁵ records ran 1.2–1.45× slower with numba); from there on
    the compiled ones do."""
    env = {k: v for k, v in os.environ.items() if k != "MANIFOLD_DP_JIT"}
    code = ("import sys, warnings, manifold_dp as m; S = m.Sphere(2); "
            "X = S.random_point(S.origin, 0.3, size={n}, rng=0); warnings.simplefilter('ignore'); "
            "m.private_frechet_mean(X, S, center=S.origin, radius=0.4, epsilon=1.0, rng=1); "
            "print(sys.modules.get('numba') is not None)")
    for n, imported in ((LOAD_THRESHOLD - 1, "False"), (LOAD_THRESHOLD, "True")):
        out = subprocess.run([sys.executable, "-c", code.format(n=n)], capture_output=True, text=True, check=True, env=env)
        assert out.stdout.split() == [imported], n


def test_public_release_is_the_same_on_both_paths(monkeypatch, numpy_path):
    """Through ``private_frechet_mean`` at the real threshold (n above it, hostile records among
    ordinary ones, a far centre): the same released point, certificate and warnings, seeded."""
    import warnings

    from manifold_dp import private_frechet_mean

    monkeypatch.setattr(sphere_module, "COMPILED_MIN_RECORDS", THRESHOLD)
    S, rng, n = Sphere(2), np.random.default_rng(21), THRESHOLD + 1000
    c, r = S.project(np.array([-0.4, 0.7, 0.2])), 0.45
    X = S.exp(c, S.random_unit_tangent(c, n, rng=rng) * rng.uniform(0, 1.5 * r, (n, 1)))
    X[:317] = _hostile(S, c, r, rng)[300:617]

    def release():
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = private_frechet_mean(X, S, center=c, radius=r, epsilon=1.0, rng=5)
        return out, sorted({type(w.message).__name__ for w in seen})

    fast, fast_warnings = release()
    assert sphere_kernels.kernels() is not None
    numpy_path()
    slow, slow_warnings = release()
    assert fast_warnings == slow_warnings and "RecordsWarning" in fast_warnings
    np.testing.assert_allclose(np.asarray(fast.point), np.asarray(slow.point), rtol=0, atol=1e-12)
    assert fast.certificate == slow.certificate
