"""Local diagnostics (RecordsWarning, counts only), strict mode, and the public "mostly noise"
warning. Seeds are fixed; every assertion can fail."""

import warnings

import numpy as np
import pytest

from manifold_dp import SO3, Euclidean, SPDLogEuclidean, Sphere, private_frechet_mean, private_frechet_variance
from manifold_dp.data import sphere_cap
from manifold_dp.privacy import PrivacyAccountant
from manifold_dp.privacy.release import (
    InvalidRecordsError,
    RecordCounts,
    RecordsWarning,
    ReleaseWarning,
    expected_noise_distance,
    plan_release,
    prepare_records,
)

MARKER = 98765.4321  # planted in data values; must never appear in a message


def caught(call):
    """``(result, [warnings])`` of ``call`` with every warning recorded."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = call()
    return out, record


def of(record, category):
    return [str(w.message) for w in record if issubclass(w.category, category)]


def dirty_sphere(rng=0):
    """50 records of S²: 2 non-finite, 3 off the sphere (scaled by 3), 4 outside B_0.4(origin)."""
    s = Sphere(2)
    X = s.random_point(s.origin, 0.3, size=50, rng=rng)
    X[0] = [MARKER, np.nan, 0.0]
    X[1] = [np.inf, 0.0, 0.0]
    X[2:5] *= 3.0
    X[5:9] = s.exp(s.origin, 0.7 * s.random_unit_tangent(s.origin, size=4, rng=rng + 1))
    return s, X


def test_prepare_records_counts_each_reason_without_an_extra_pass():
    s, X = dirty_sphere()
    records, counts = prepare_records(s, X, s.origin, 0.4)
    assert counts == RecordCounts(n=50, non_finite=2, off_manifold=3, clipped=4) and counts.replaced == 5
    # an independent count of what the clip did: records that were valid and farther than r
    valid = np.arange(50) >= 5
    with np.errstate(invalid="ignore"):
        far = s.dist(s.origin, X) > 0.4
    assert int(np.sum(valid & far)) == counts.clipped
    assert np.all(s.dist(s.origin, records) <= 0.4 + 1e-12)
    assert np.array_equal(records[:5], np.repeat(s.origin[None], 5, axis=0))


@pytest.mark.parametrize("release", ["mean", "variance", "plan"])
def test_records_warning_gives_counts_once_and_never_values(release):
    s, X = dirty_sphere()
    kw = dict(center=s.origin, radius=0.4, epsilon=1.0)
    call = {"mean": lambda: private_frechet_mean(X, s, rng=1, **kw),
            "variance": lambda: private_frechet_variance(X, s, rng=1, **kw),
            "plan": lambda: plan_release(X, s, **kw)}[release]
    _, record = caught(call)
    messages = of(record, RecordsWarning)
    assert len(messages) == 1
    msg = messages[0]
    assert "of 50 records" in msg and "2 replaced by the centre because non-finite" in msg
    assert "3 replaced by the centre because not points of Sphere" in msg and "4 clipped into the ball of radius 0.4" in msg
    assert "98765" not in msg and "inf," not in msg
    assert not issubclass(RecordsWarning, ReleaseWarning)  # never mistaken for a public warning
    assert record[0].filename == __file__  # points at the caller, not inside the library


def test_no_records_warning_when_nothing_was_replaced_or_clipped():
    s = Sphere(2)
    X = s.random_point(s.origin, 0.3, size=200, rng=2)
    _, record = caught(lambda: private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=1.0, rng=3))
    assert of(record, RecordsWarning) == []


def test_issue_13_mistakes_are_loud():
    # unit vectors scaled by 3: every record replaced, and the warning says so
    s = Sphere(2)
    X = 3.0 * sphere_cap(200, rng=4)
    _, record = caught(lambda: private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=1.0, rng=5))
    (msg,) = of(record, RecordsWarning)
    assert "200 replaced by the centre because not points" in msg and "Every record was replaced" in msg
    # a transposed SPD file read as 9 records of 10×10 matrices that are not symmetric
    m = SPDLogEuclidean(10)
    bad = np.random.default_rng(6).normal(size=(9, 10, 10))
    _, record = caught(lambda: plan_release(bad, m, center=np.eye(10), radius=1.0, epsilon=1.0))
    (msg,) = of(record, RecordsWarning)
    assert "of 9 records, 9 replaced by the centre because not points of SPDLogEuclidean(k=10)" in msg
    assert "non-finite" not in msg and "--layout triu" in msg  # zero counts are left out; the layout hint given
    # a centre on the wrong side of the sphere (a sign typed wrong): every valid record clipped, and it says so
    far = -sphere_cap(50, rng=7)
    far[0] = np.nan
    _, record = caught(lambda: private_frechet_mean(far, s, center=s.origin, radius=0.4, epsilon=1.0, rng=5))
    (msg,) = of(record, RecordsWarning)
    assert "49 clipped" in msg and "No valid record lay inside the ball" in msg and "Every record was replaced" not in msg
    _, record = caught(lambda: private_frechet_mean(-far, s, center=s.origin, radius=0.4, epsilon=1.0, rng=5))
    assert not any("record lay inside" in m for m in of(record, RecordsWarning))
    # rotations near a turn about z given scalar last (scipy's order) around the identity: the hint names the order
    so3 = SO3()
    scalar_last = np.tile([0.0, 0.0, 0.1, 0.995], (20, 1)) / np.linalg.norm([0.0, 0.0, 0.1, 0.995])
    _, record = caught(lambda: private_frechet_mean(scalar_last, so3, center=so3.origin, radius=0.3, epsilon=1.0, rng=5))
    (msg,) = of(record, RecordsWarning)
    assert "No valid record lay inside" in msg and "scalar first, (w, x, y, z)" in msg


def test_records_warning_never_enters_the_certificate():
    s, X = dirty_sphere()
    clean = s.random_point(s.origin, 0.3, size=50, rng=7)
    kw = dict(center=s.origin, radius=0.4, epsilon=1.0, rng=8)
    (a, _), (b, _) = caught(lambda: private_frechet_mean(X, s, **kw)), caught(lambda: private_frechet_mean(clean, s, **kw))
    assert a.certificate == b.certificate  # same public parameters, same certificate
    assert "replaced" not in a.to_json() and "clipped" not in a.to_json()


def test_records_warning_can_be_filtered_by_category():
    s, X = dirty_sphere()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", RecordsWarning)
        private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=1.0, rng=1)
    assert of(record, RecordsWarning) == []


# --- strict mode --------------------------------------------------------------------------------

@pytest.mark.parametrize("release", ["mean", "variance", "plan", "auto"])
def test_strict_refuses_invalid_records_before_the_charge(release):
    s, X = dirty_sphere()
    acc = PrivacyAccountant(10.0)
    kw = dict(center=s.origin, radius="auto" if release == "auto" else 0.4, epsilon=1.0, accountant=acc, strict=True)
    call = {"mean": lambda: private_frechet_mean(X, s, **kw), "variance": lambda: private_frechet_variance(X, s, **kw),
            "plan": lambda: plan_release(X, s, **kw), "auto": lambda: private_frechet_mean(X, s, **kw)}[release]
    with pytest.raises(InvalidRecordsError) as err:
        call()
    assert isinstance(err.value, ValueError)
    assert "2 are non-finite and 3 are not points" in str(err.value) and "98765" not in str(err.value)
    assert acc.events == () and acc.spent() == (0.0, 0.0)


def test_strict_only_warns_about_records_outside_the_ball():
    s = Sphere(2)
    X = s.random_point(s.origin, 0.3, size=40, rng=9)
    X[:3] = s.exp(s.origin, 0.7 * s.random_unit_tangent(s.origin, size=3, rng=10))
    acc = PrivacyAccountant(10.0)
    rel, record = caught(lambda: private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=1.0, accountant=acc,
                                                      strict=True, rng=11))
    assert s.check_point(rel.point)[0] and acc.spent()[0] == pytest.approx(1.0)
    (msg,) = of(record, RecordsWarning)
    assert "of 40 records, 3 clipped" in msg and "replaced" not in msg


def test_strict_must_be_a_bool():
    s = Sphere(2)
    with pytest.raises(TypeError, match="strict must be True or False"):
        private_frechet_mean(sphere_cap(10, rng=0), s, center=s.origin, radius=0.4, epsilon=1.0, strict="yes")


def test_dask_records_give_the_same_counts_and_strict_still_checks():
    da = pytest.importorskip("dask.array")
    s, X = dirty_sphere()
    lazy = da.from_array(X, chunks=(17, 3))
    _, record = caught(lambda: private_frechet_mean(lazy, s, center=s.origin, radius=0.4, epsilon=1.0, rng=1))
    _, in_memory = caught(lambda: private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=1.0, rng=1))
    (msg,) = of(record, RecordsWarning)  # the counts come with the first pass over the blocks, as in memory
    assert of(in_memory, RecordsWarning) == [msg] and "2 replaced by the centre because non-finite" in msg
    assert str(MARKER) not in msg
    with pytest.raises(InvalidRecordsError, match="2 are non-finite and 3 are not points"):
        private_frechet_mean(lazy, s, center=s.origin, radius=0.4, epsilon=1.0, strict=True)


# --- the public "mostly noise" warning -----------------------------------------------------------

def test_mostly_noise_warning_fires_when_the_noise_exceeds_the_ball():
    s = Sphere(2)
    X = s.random_point(s.origin, 0.3, size=5, rng=12)
    rel, record = caught(lambda: private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=0.05, rng=13))
    (msg,) = [m for m in of(record, ReleaseWarning) if "mostly noise" in m]
    assert expected_noise_distance(s, _measurement(rel)) > 0.4
    assert "n = 5" in msg and "epsilon = 0.05" in msg and "n·epsilon must grow at least" in msg


def test_mostly_noise_warning_is_silent_on_a_normal_release():
    s = Sphere(2)
    X = s.random_point(s.origin, 0.3, size=200, rng=14)
    _, record = caught(lambda: private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=1.0, rng=15))
    _, record2 = caught(lambda: private_frechet_variance(X, s, center=s.origin, radius=0.4, epsilon=1.0, rng=15))
    assert of(record, ReleaseWarning) == [] and of(record2, ReleaseWarning) == []


def test_variance_warns_when_its_scale_exceeds_r_squared():
    s = Sphere(2)
    X = s.random_point(s.origin, 0.3, size=3, rng=16)  # scale ≈ 4r²/(nε) = 2.7 r² at n = 3, ε = 0.5
    rel, record = caught(lambda: private_frechet_variance(X, s, center=s.origin, radius=0.4, epsilon=0.5, rng=17))
    assert rel.scale > 0.4**2
    assert any("variance's Laplace scale" in m and "mostly noise" in m for m in of(record, ReleaseWarning))


def test_mostly_noise_warning_is_the_same_for_neighbouring_datasets():
    # public: a function of (manifold, n, ε, radius, mechanism) only
    s = Sphere(2)
    D = s.random_point(s.origin, 0.3, size=5, rng=18)
    D2 = D.copy()
    D2[-1] = [np.nan, 0.0, 0.0]
    texts = []
    for X in (D, D2):
        _, record = caught(lambda: private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=0.05, rng=19))
        texts.append(of(record, ReleaseWarning))
    assert texts[0] == texts[1] and len(texts[0]) == 1


def test_expected_noise_distance_is_exact_for_the_euclidean_laplace():
    # in R^d the Laplace radius is Gamma(d, σ): mean d·σ (the rule's Laplace branch)
    E = Euclidean(4)
    X = E.random_point(E.origin, 1.0, size=50, rng=20)
    plan = plan_release(X, E, center=E.origin, radius=1.0, epsilon=1.0)
    y = plan.draw(40_000, rng=21)
    mean = plan._statistic
    expected = expected_noise_distance(E, plan.calibration.measurement)
    assert expected == pytest.approx(4 * plan.calibration.sigma)
    assert np.mean(E.dist(mean, y)) == pytest.approx(expected, rel=0.02)


@pytest.mark.parametrize("mech,rule", [("tangent_gaussian", lambda d, D, s: s * np.sqrt(d)),
                                       ("ambient_laplace", lambda d, D, s: D * s),
                                       ("coordinate_laplace", lambda d, D, s: s * np.sqrt(2 * D)),
                                       ("ambient_gaussian", lambda d, D, s: s * np.sqrt(D)),
                                       ("kng", lambda d, D, s: d * s)])
def test_expected_noise_distance_rule_per_mechanism(mech, rule):
    E = Euclidean(3)
    X = E.random_point(E.origin, 1.0, size=50, rng=22)
    cal = plan_release(X, E, center=E.origin, radius=1.0, epsilon=1.0, delta=1e-6 if "gaussian" in mech else None,
                       mechanism=mech).calibration
    assert expected_noise_distance(E, cal.measurement) == pytest.approx(rule(E.dim, E.ambient_dim, cal.sigma))


def _measurement(rel):
    class M:  # the public fields the rule reads, from the certificate
        mechanism, scale = rel.certificate.mechanism, rel.certificate.scale
    return M


def test_delta_unused_or_too_large_is_said_publicly():
    """A delta the named pure mechanism does not use, and a delta of at least 1/n, each give one
    public ReleaseWarning (from delta, the mechanism and n); a usual delta with a Gaussian-type or
    'auto' mechanism gives none."""
    s = Sphere(2)
    X = sphere_cap(100, rng=4)

    def said(**kw):
        _, record = caught(lambda: private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=1.0, rng=5, **kw))
        return [m for m in of(record, ReleaseWarning) if "delta=" in m]

    (unused,) = said(delta=1e-6)
    assert "not used" in unused and "'laplace'" in unused
    (large,) = said(delta=0.05, mechanism="ambient_gaussian")
    assert "at least 1/n = 0.01" in large
    assert said(delta=1e-6, mechanism="ambient_gaussian") == [] and said(delta=1e-6, mechanism="auto") == []
    assert said() == []
