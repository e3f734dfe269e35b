"""Every registered statistic (``privacy.release.STATISTICS``) keeps the release path's contract,
through ``release_statistic``: the accountant is charged once, before any record is read, with the
same event for neighbouring datasets; a neighbour with a hostile record (non-finite, off the
manifold, huge, at the antipode) has the same outcome class (success, or the same error and
message) and the same charge; ``strict=True`` refuses an invalid record before anything is charged.
A new statistic is checked here by its registry line alone."""

import warnings

import numpy as np
import pytest

from manifold_dp import InvalidRecordsError, PrivacyAccountant, SPDAffineInvariant, Sphere
from manifold_dp.privacy.mechanism_specs import MECHANISMS
from manifold_dp.privacy.release import STATISTICS, plan_statistic, release_statistic

SPACES = {"S2": Sphere(2), "SPD-AI2": SPDAffineInvariant(2)}


def _hostile(m, X, kind):
    Y = np.array(X, copy=True)
    if kind == "nan":
        Y[0] = np.nan
    elif kind == "huge":
        Y[0] = 1e308
    elif kind == "off":
        Y[0] = 2.0 * Y[0] if m.point_shape == (3,) else -Y[0]
    else:  # far: the antipode on the sphere, a far matrix on SPD
        Y[0] = -Y[0] if m.point_shape == (3,) else 1e6 * np.eye(2)
    return Y


def _outcome(statistic, m, X, strict=False):
    acc = PrivacyAccountant(epsilon=10.0)
    mechanism = statistic.mechanisms[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            rel = release_statistic(statistic, X, m, center=m.origin, radius=0.5, epsilon=1.0, mechanism=mechanism,
                                    accountant=acc, rng=3, strict=strict)
            result = ("ok", rel.certificate.statistic, rel.certificate.scale)
        except Exception as err:  # noqa: BLE001 — the type and message are observable
            result = (type(err).__name__, str(err))
    return result, acc.spent()


@pytest.mark.parametrize("name", sorted(STATISTICS))
@pytest.mark.parametrize("space", sorted(SPACES))
@pytest.mark.parametrize("kind", ["nan", "huge", "off", "far"])
def test_a_hostile_neighbour_has_the_same_outcome_and_charge(name, space, kind):
    statistic, m = STATISTICS[name], SPACES[space]
    X = m.random_point(m.origin, 0.3, size=25, rng=1)
    assert _outcome(statistic, m, X) == _outcome(statistic, m, _hostile(m, X, kind))


@pytest.mark.parametrize("name", sorted(n for n, s in STATISTICS.items() if MECHANISMS[s.mechanisms[0]].perturbs == "footpoint"))
@pytest.mark.parametrize("space", sorted(SPACES))
def test_the_value_moves_by_at_most_its_sensitivity(name, space):
    """Where the mechanism's law is drawn around the statistic's value (``perturbs == "footpoint"``),
    that value moves by at most the calibrated sensitivity between near-worst-case neighbours —
    every record at one point of the ball's boundary, against one of them at the opposite side, at
    the centre, or hostile; records spread across the ball, one moved across it at right angles
    (where the curvature factor shows). A statistic whose declared sensitivity is too small fails here by its registry line
    alone (the law drawn around another field, as KNG's, is checked with its mechanism)."""
    statistic, m = STATISTICS[name], SPACES[space]
    mechanism = statistic.mechanisms[0]
    radius = 0.5
    u, w = m.random_unit_tangent(m.origin, size=2, rng=2)
    u = u - m.inner(m.origin, u, w) * w
    u = u / m.norm(m.origin, u)  # orthogonal to w
    X = np.stack([m.exp(m.origin, radius * u)] * 25)  # every record at one point of the boundary
    neighbours = [np.concatenate([[m.exp(m.origin, -radius * u)], X[1:]]), np.concatenate([[m.origin], X[1:]])]
    neighbours += [_hostile(m, X, kind) for kind in ("nan", "huge", "off", "far")]
    # records spread across the ball, one moved across it at right angles: on a curved space the mean
    # then moves by more than the flat 2r/n (the curvature factor of the bound)
    spread = np.stack([m.exp(m.origin, radius * w)] * 12 + [m.exp(m.origin, -radius * w)] * 12 + [m.exp(m.origin, radius * u)])
    spread_neighbour = np.concatenate([spread[:-1], [m.exp(m.origin, -radius * u)]])

    def plan(records):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return plan_statistic(statistic, np.asarray(records), m, center=m.origin, radius=radius, epsilon=1.0,
                                  mechanism=mechanism)

    base = plan(X)
    pairs = [(base, plan(Y)) for Y in neighbours] + [(plan(spread), plan(spread_neighbour))]
    moved = [float(a.manifold.dist(a._statistic, b._statistic)) for a, b in pairs]
    assert all(d <= base.calibration.sensitivity for d in moved), (moved, base.calibration.sensitivity)
    assert max(moved) > 0.5 * base.calibration.sensitivity  # near the bound: halving it fails
    if statistic.scale_power == 1 and m.curvature_bounds[1] > 0:  # and past the flat 2r/n where curvature is positive
        assert moved[-1] > 2.0 * radius / len(X)


@pytest.mark.parametrize("name", sorted(STATISTICS))
def test_the_charge_comes_before_the_records_are_read(name):
    statistic, m = STATISTICS[name], SPACES["S2"]

    X = m.random_point(m.origin, 0.3, size=25, rng=1)
    acc = PrivacyAccountant(epsilon=10.0)
    charged = []
    original = acc.charge
    acc.charge = lambda event: (charged.append(event), original(event))[1]  # type: ignore[method-assign]
    reads = []
    from manifold_dp.privacy import release

    real = release.prepared

    def spy(*args, **kwargs):
        reads.append(len(charged))
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mp.setattr(release, "prepared", spy)
        release_statistic(statistic, X, m, center=m.origin, radius=0.5, epsilon=1.0, mechanism=statistic.mechanisms[0],
                          accountant=acc, rng=None)
    assert len(charged) == 1
    assert reads and all(k == 1 for k in reads)  # the records are prepared only after the one charge


@pytest.mark.parametrize("name", sorted(STATISTICS))
def test_strict_refuses_before_charging(name):
    statistic, m = STATISTICS[name], SPACES["S2"]
    X = _hostile(m, m.random_point(m.origin, 0.3, size=25, rng=1), "nan")
    acc = PrivacyAccountant(epsilon=10.0)
    with pytest.raises(InvalidRecordsError):
        release_statistic(statistic, X, m, center=m.origin, radius=0.5, epsilon=1.0, mechanism=statistic.mechanisms[0],
                          accountant=acc, rng=None, strict=True)
    assert acc.spent() == (0.0, 0.0)
