"""Adversarial inputs (hypothesis): the public API returns a valid release or raises a documented
ValueError/TypeError, never another exception, and its messages never quote a data value.
Each test states its example count; together they try 7 × 60 + 150 + 150 = 720 inputs."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from manifold_dp import Euclidean, Hyperbolic, KendallShape2D, Sphere, SPDAffineInvariant, SPDLogEuclidean, private_frechet_mean

MARKER = 98765.4321  # planted in the data; must never appear in an error message
MANIFOLDS = {
    "sphere": (Sphere(2), 0.5), "spd_ai": (SPDAffineInvariant(2), 1.0), "spd_le": (SPDLogEuclidean(2), 1.0),
    "hyperbolic": (Hyperbolic(2), 1.0), "kendall": (KendallShape2D(4), 0.3), "euclidean": (Euclidean(2), 1.0),
}
MECHS = {"sphere": ["laplace", "kng", "ambient_laplace"], "spd_ai": ["laplace", "kng"], "spd_le": ["laplace", "tangent_gaussian"],
         "hyperbolic": ["laplace"], "kendall": ["laplace", "kng"], "euclidean": ["laplace", "tangent_gaussian", "kng"]}
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

values = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), st.just(MARKER), st.just(0.0), st.just(1.0))


def _records(m, rng, n):
    return m.random_point(m.origin, 0.2, size=n, rng=rng)


def _check(call):
    try:
        rel = call()
    except (ValueError, TypeError) as err:
        assert "98765" not in str(err)
        return None
    return rel


@pytest.mark.parametrize("name", list(MANIFOLDS))
@SETTINGS
@given(n=st.integers(1, 12), corrupt=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 7), values), max_size=6),
       mech_index=st.integers(0, 2), epsilon=st.floats(1e-3, 50.0), seed=st.integers(0, 2**16))
def test_corrupted_records_never_crash_or_leak(name, n, corrupt, mech_index, epsilon, seed):
    m, radius = MANIFOLDS[name]
    X = np.array(_records(m, np.random.default_rng(seed), n))
    flat = X.reshape(n, -1)
    for row, col, v in corrupt:
        flat[row % n, col % flat.shape[1]] = v
    mech = MECHS[name][mech_index % len(MECHS[name])]
    delta = 1e-6 if mech == "tangent_gaussian" else None
    rel = _check(lambda: private_frechet_mean(flat.reshape(X.shape), m, center=m.origin, radius=radius, epsilon=epsilon,
                                              delta=delta, mechanism=mech, rng=seed))
    if rel is not None:
        assert m.check_point(rel.point)[0]
        assert "98765" not in str(rel.certificate)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(epsilon=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3), st.just(True), st.text(max_size=3)),
       delta=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.just(0.0), st.just(1.0)),
       radius=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(np.pi / 4), st.just(np.pi / 4 - 1e-12)),
       mech=st.sampled_from(["laplace", "kng", "ambient_gaussian", "tangent_gaussian", "bogus"]))
def test_parameter_edges_raise_documented_errors(epsilon, delta, radius, mech):
    s = Sphere(2)
    X = _records(s, np.random.default_rng(0), 5)
    rel = _check(lambda: private_frechet_mean(X, s, center=s.origin, radius=radius, epsilon=epsilon, delta=delta, mechanism=mech, rng=1))
    if rel is not None:
        assert s.check_point(rel.point)[0] and rel.epsilon > 0


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=4),
       dtype=st.sampled_from([float, np.float32, int, complex, object, str, bool]),
       name=st.sampled_from(list(MANIFOLDS)))
def test_wrong_shapes_and_dtypes(shape, dtype, name):
    m, radius = MANIFOLDS[name]
    try:
        X = np.full(tuple(shape), MARKER).astype(dtype)
    except (ValueError, TypeError, OverflowError):
        X = np.full(tuple(shape), "x")
    rel = _check(lambda: private_frechet_mean(X, m, center=m.origin, radius=radius, epsilon=1.0, rng=2))
    if rel is not None:
        assert m.check_point(rel.point)[0]


def test_huge_n_and_one_record():
    s = Sphere(2)
    one = _records(s, np.random.default_rng(1), 1)
    assert s.check_point(private_frechet_mean(one, s, center=s.origin, radius=0.5, epsilon=1.0, rng=1).point)[0]
    big = np.repeat(one, 200_000, axis=0)
    assert s.check_point(private_frechet_mean(big, s, center=s.origin, radius=0.5, epsilon=1.0, rng=1).point)[0]


@pytest.mark.parametrize("seed", [0, 4, 7, 14])
@pytest.mark.parametrize("cls, mech", [(SPDAffineInvariant, "laplace"), (SPDAffineInvariant, "kng"),
                                       (SPDLogEuclidean, "laplace"), (SPDLogEuclidean, "tangent_gaussian")])
def test_numerically_singular_spd_records_are_treated_as_invalid(cls, mech, seed):
    """A symmetric matrix with eigenvalues 1, 2e-5, 2e-17 passes a Cholesky or ``λ_min > 0`` test,
    but ``eigh`` may return a negative eigenvalue, so its log is not finite: with these seeds such
    a record crashed the release with LinAlgError. It must be replaced like any invalid record."""
    m = cls(3)
    rng = np.random.default_rng(seed)
    X = m.random_point(m.origin, 0.2, size=40, rng=rng)
    u = np.linalg.qr(rng.standard_normal((3, 3)))[0]
    X[7] = (u * [1.0, 2e-5, 2e-17]) @ u.T
    X[7] = 0.5 * (X[7] + X[7].T)
    assert not m.belongs(X[7])
    delta = 1e-6 if mech == "tangent_gaussian" else None
    rel = private_frechet_mean(X, m, center=m.origin, radius=1.0, epsilon=1.0, delta=delta, mechanism=mech, rng=3)
    assert m.check_point(rel.point)[0]
