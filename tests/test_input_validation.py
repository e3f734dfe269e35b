"""Inputs through the public API: a valid release or a documented ValueError/TypeError naming the
parameter, never another exception, and no message or certificate quoting a data value. Fixed bad
calls, then adversarial inputs (hypothesis, derandomised; each test states its example count:
together 7 × 60 + 150 + 150 = 720 inputs)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from manifold_dp import Euclidean, Hyperbolic, KendallShape2D, SPDAffineInvariant, SPDLogEuclidean, Sphere, private_frechet_mean

MARKER = "98765"  # planted in data values; must never appear in a message
PLANTED = 98765.4321  # the planted value


@pytest.mark.parametrize("center_shape", [(7, 3), (1, 3), (2,), (4,)])
def test_batch_shaped_or_wrong_centre_is_refused(center_shape):
    S = Sphere(2)
    center = np.zeros(center_shape)
    center[..., 0] = 1.0
    X = S.random_point(S.origin, 0.1, size=1, rng=0)
    with pytest.raises(ValueError, match="center"):
        private_frechet_mean(X, S, center=center, radius=0.3, epsilon=1.0)


def test_kng_centre_with_a_batch_axis_is_refused_naming_center():
    E = Euclidean(2)
    with pytest.raises(ValueError, match="center"):
        private_frechet_mean(np.zeros((5, 2)), E, center=np.zeros((1, 2)), radius=1.0, epsilon=1.0, mechanism="kng")


S2 = Sphere(2)


GOOD = S2.random_point(S2.origin, 0.1, size=5, rng=0)


MASKED = np.ma.masked_array(GOOD, mask=np.zeros_like(GOOD, bool))


BAD_CALLS = {
    "masked X": (dict(X=MASKED), TypeError, "mask"),
    "string X": (dict(X=GOOD.astype(str)), TypeError, "X"),
    "datetime X": (dict(X=np.zeros((5, 3), "datetime64[s]")), TypeError, "X"),
    "complex centre": (dict(center=S2.origin + 1e-3j), (TypeError, ValueError), "center"),
    "string centre": (dict(center="origin"), (TypeError, ValueError), "center"),
    "huge int X": (dict(X=[[10**400, 0, 0]] * 5), (TypeError, ValueError), "X"),
    "object accountant": (dict(accountant=object()), TypeError, "accountant"),
    "negative seed": (dict(rng=-1), ValueError, "rng"),
    "subnormal epsilon": (dict(epsilon=5e-324), ValueError, "epsilon"),
    "huge round_to": (dict(round_to=1e6), ValueError, "round_to"),
    "restrict not bool": (dict(restrict="yes"), TypeError, "restrict"),
}


@pytest.mark.parametrize("name", list(BAD_CALLS))
def test_bad_input_raises_an_error_naming_the_parameter(name):
    override, exc, word = BAD_CALLS[name]
    kw = dict(X=GOOD, center=S2.origin, radius=0.3, epsilon=1.0) | override
    X = kw.pop("X")
    with pytest.raises(exc, match=word) as info:
        private_frechet_mean(X, S2, **kw)
    assert MARKER not in str(info.value)


def test_messages_never_quote_data_values():
    S = Sphere(2)
    X = np.full((5, 3), 98765.4321)
    for kw in ({}, {"mechanism": "kng"}, {"round_to": 1e-3}):
        rel = private_frechet_mean(X, S, center=S.origin, radius=0.3, epsilon=1.0, rng=0, **kw)
        assert MARKER not in repr(rel.certificate)
    with pytest.raises(ValueError) as info:
        private_frechet_mean(np.full((5, 4), 98765.4321), S, center=S.origin, radius=0.3, epsilon=1.0)
    assert MARKER not in str(info.value)


MANIFOLDS = {
    "sphere": (Sphere(2), 0.5), "spd_ai": (SPDAffineInvariant(2), 1.0), "spd_le": (SPDLogEuclidean(2), 1.0),
    "hyperbolic": (Hyperbolic(2), 1.0), "kendall": (KendallShape2D(4), 0.3), "euclidean": (Euclidean(2), 1.0),
}


MECHS = {"sphere": ["laplace", "kng", "ambient_laplace"], "spd_ai": ["laplace", "kng"], "spd_le": ["laplace", "tangent_gaussian"],
         "hyperbolic": ["laplace"], "kendall": ["laplace", "kng"], "euclidean": ["laplace", "tangent_gaussian", "kng"]}


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


values = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), st.just(PLANTED), st.just(0.0), st.just(1.0))


def _records(m, rng, n):
    return m.random_point(m.origin, 0.2, size=n, rng=rng)


def _check(call):
    try:
        rel = call()
    except (ValueError, TypeError) as err:
        assert MARKER not in str(err)
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
        assert MARKER not in str(rel.certificate)


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
        X = np.full(tuple(shape), PLANTED).astype(dtype)
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
