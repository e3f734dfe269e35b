"""Releases at the edges of float64: the default output grid, tiny radii, SPD balls at condition
numbers or scales where one matrix's check could take either path (refused from public values
before the charge), heavy-tailed SPD draws near the condition limit, sphere radii whose squares
leave float64."""

import warnings

import numpy as np
import pytest

from manifold_dp import Euclidean, PrivacyAccountant, SPDAffineInvariant, SPDLogEuclidean, Sphere, private_frechet_mean
from manifold_dp.privacy.release import ReleaseWarning


def outcome(call):
    """``"ok"`` or ``(exception type, message)``: what an observer of the release sees."""
    try:
        call()
        return "ok"
    except Exception as err:  # noqa: BLE001 — every exception type is an observable
        return type(err).__name__, str(err)


def test_default_release_is_snapped_to_the_public_grid():
    E = Euclidean(1)
    X = np.random.default_rng(0).uniform(-1, 1, size=(10, 1))
    rel = private_frechet_mean(X, E, center=E.origin, radius=1.0, epsilon=1.0, rng=0)
    g = rel.certificate.output_grid_spacing
    assert g is not None and g > 0
    assert np.all(np.asarray(rel.point) / g == np.round(np.asarray(rel.point) / g))
    with pytest.warns(ReleaseWarning):
        private_frechet_mean(X, E, center=E.origin, radius=1.0, epsilon=1.0, rng=0, round_to=None)


def test_tiny_radius_releases_instead_of_failing_certification():
    S2 = Sphere(2)
    X = S2.random_point(S2.origin, 0.3, size=5, rng=0)
    rel = private_frechet_mean(X, S2, center=S2.origin, radius=1e-12, epsilon=1.0, rng=1)
    assert S2.belongs(rel.point)


def _conditioned(k, kappa, seed):
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((k, k)))
    return q, (q * np.geomspace(1.0, 1.0 / kappa, k)) @ q.T


@pytest.mark.parametrize("m", [SPDAffineInvariant(2), SPDAffineInvariant(5), SPDLogEuclidean(3)], ids=repr)
def test_an_spd_ball_the_footpoint_check_would_split_is_refused_before_the_charge(m, monkeypatch):
    """The released footpoint (a private point of the ball) is checked before the draw; the check of
    one matrix takes a shifted Cholesky and, where that fails, eigenvalues — different times, and
    near singularity a refusal. A ball reaching condition numbers where both can happen is refused
    from public values before the accountant is charged; below that every point of the ball takes
    the Cholesky path (here: the eigenvalue routine made to fail, and boundary points still pass)."""
    k, r = m.k, 0.5
    limit = m.max_condition
    _, bad_center = _conditioned(k, 2.0 * limit, 1)
    acct = PrivacyAccountant(epsilon=1.0)
    X = np.stack([bad_center] * 5)
    got = outcome(lambda: private_frechet_mean(X, m, center=bad_center, radius=r, epsilon=1.0, accountant=acct))
    assert got[0] == "ValueError" and "condition numbers" in got[1] and acct.spent()[0] == 0.0
    q, center = _conditioned(k, 0.99 * limit * np.exp(-2.0 * r), 2)
    lam = np.geomspace(1.0, np.exp(2.0 * r) / (0.99 * limit), k)
    # on the boundary, commuting with the centre (distance ‖l‖ on both metrics), at the extreme conditions
    edge = [(q * (lam * np.exp(logs))) @ q.T
            for logs in (np.r_[np.zeros(k - 1), -r], np.r_[r, np.zeros(k - 1)], np.r_[r / 2**0.5, np.zeros(k - 2), -r / 2**0.5])]
    assert all(float(m.dist(center, x)) <= r + m.float_error(center, r) for x in edge)

    def no_eigenvalues(*args, **kwargs):
        raise AssertionError("the eigenvalue path of the membership check was taken")

    monkeypatch.setattr(np.linalg, "eigvalsh", no_eigenvalues)
    for x in edge:
        assert m.check_point(x)[0] and m.validate_point(x).shape == (k, k)
        if k == 2:  # and the one-point fast path (1.5 µs against 30 µs for the general check)
            assert m._validate_one(np.asarray(x, float)) is not None


@pytest.mark.parametrize("scale", [1.3408e154, 1e-162])
def test_an_spd_ball_at_a_scale_float64_cannot_square_is_refused_before_the_charge(scale):
    """Found by an adversarial review: at centres near 1.3e154 a closed-form determinant overflowed
    and one of two neighbouring datasets never released (ε = ∞); near 1e-162 it lost its bits to
    subnormals (a biased release); the footpoint check took the eigenvalue path for some means.
    Such balls are refused from public values, the same way for every dataset."""
    m = SPDAffineInvariant(2)
    center = scale * np.eye(2)
    inside = np.stack([center * np.exp(0.4 * s) for s in (-1.0, 1.0)])
    acct = PrivacyAccountant(epsilon=1.0)
    got = [outcome(lambda: private_frechet_mean(np.repeat(inside[j:j + 1], 50, axis=0), m, center=center, radius=0.6,
                                                epsilon=1.0, accountant=acct)) for j in (0, 1)]
    assert got[0] == got[1] and got[0][0] == "ValueError" and "2^-450, 2^450" in got[0][1]
    assert acct.spent()[0] == 0.0


def test_near_the_condition_limit_heavy_tailed_spd_draws_still_release():
    """SPD-AI(3), a ball at 0.95 of the condition limit, n = 1 (σ near the integrability limit): the
    law's tail gave draws of condition past float64 and 10–50 % of releases failed, more often for
    an ill-conditioned mean than a well-conditioned one with the same seeds (a data-dependent
    failure). ``snap`` floors the eigenvalues at a multiple of ``ε·λmax``: every release succeeds."""
    m, r = SPDAffineInvariant(3), 0.3
    w = np.geomspace(1.0, 0.95 * m.max_condition / np.exp(2 * r), 3)
    logs = np.array([-1.0, 0.0, 1.0]) * 0.999 * r / np.sqrt(2.0)
    for round_to in ("auto", None):  # raw releases too (their failure rate was ~80 %)
        for record in (np.diag(w * np.exp(logs)), np.diag(w * np.exp(-logs))):
            for seed in range(40):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    x = private_frechet_mean(record[None], m, center=np.diag(w), radius=r, epsilon=1.0, rng=seed,
                                             round_to=round_to).value
                assert m.check_point(x)[0]


@pytest.mark.parametrize("R", [0.0, -1.0, float("nan"), float("inf"), 1e200, 1e-200, 2.0**501, 2.0**-501])
def test_sphere_radius_outside_the_supported_range_is_refused_by_name(R):
    """R² and 1/R² (curvature) must be finite for any release to work on the sphere; outside
    [2^-500, 2^500] the constructor refuses, quoting the radius (a public parameter)."""
    with pytest.raises(ValueError, match=r"radius must be in \[2\^-500, 2\^500\]"):
        Sphere(2, radius=R)
    assert Sphere(2, radius=2.0**500).radius == 2.0**500 and Sphere(2, radius=2.0**-500).radius == 2.0**-500


def test_spd_membership_never_raises_on_finite_extremes():
    """``belongs`` (which the private ball, ``strict`` and the distances read records through) on
    finite matrices LAPACK's ``eigvalsh`` does not converge on unscaled: ``−1e308·I``, ``−maxfloat``
    everywhere, ``1e308`` off the diagonal, entries spanning ``5e-324…1e308`` (random, 20 000). A
    raise would fail a whole release for one neighbour."""
    from manifold_dp import SPDAffineInvariant

    rng = np.random.default_rng(0)
    for k in (2, 3, 5, 8):
        M = SPDAffineInvariant(k)
        fixed = np.stack([-1e308 * np.eye(k), np.full((k, k), -np.finfo(float).max), np.eye(k) + 1e308 * (1 - np.eye(k)),
                          np.eye(k), 1e-300 * np.eye(k)])
        a = rng.choice([-1.0, 1.0], size=(5000, k, k)) * np.power(10.0, rng.integers(-324, 309, size=(5000, k, k)))
        a = np.triu(a) + np.swapaxes(np.triu(a, 1), -1, -2)
        with np.errstate(all="ignore"):
            ok = M.belongs(np.concatenate([fixed, a]))
        assert ok[:5].tolist() == [False, False, False, True, True]
    big = np.array([[1e308, 1e308, 0.0], [-1e308, 1e308, 0.0], [0.0, 0.0, 1e308]])
    assert not SPDAffineInvariant(3).belongs(big)  # asymmetric: its norms overflowed unscaled


@pytest.mark.parametrize("dim, center, radius, record", [
    (2, [1e292, 0.0], 1.0, [-np.finfo(float).max, 0.0]),
    (2, [1e292, 0.0], 1.0, [-np.finfo(float).max, np.finfo(float).max]),
    (3, [-1e308, 1e308, 0.0], 5.0, [1e308, -1e308, 1e308]),
    (1, [-1e308], 2.0**900 * (1 + 1e-7), [1e308]),
    (2, [0.0, 0.0], 1.0, [1e200, -1e200]),
])
def test_euclidean_record_beyond_float64_from_the_centre_is_clipped(dim, center, radius, record):
    """A finite record whose difference from a finite centre overflows (the generic path: any
    dimension ≥ 2, or the line above the fused pass's radius) is clipped to the boundary point
    towards it; its neighbour at the centre releases too, the same outcome class."""
    from manifold_dp import Euclidean, private_frechet_mean

    m, c = Euclidean(dim), np.array(center)
    X = np.tile(c, (20, 1))
    Y = X.copy()
    Y[0] = record
    for D in (X, Y):
        rel = private_frechet_mean(D, m, epsilon=1.0, center=c, radius=radius, rng=0)
        assert np.all(np.isfinite(rel.point))
    out, v, _scale, outside = m._clip_with_logs(Y, c, radius)
    assert outside[0] and np.all(np.isfinite(out[0])) and np.all(np.isfinite(v[0]))
    direction = np.sign(np.array(record) / 2 - c / 2)
    assert np.all(np.sign(v[0])[direction != 0] == direction[direction != 0])
    assert abs(float(np.linalg.norm(v[0] / radius)) - 1.0) <= 1e-12  # the log of the boundary point towards it


def test_centre_at_float64s_end_is_a_public_value_error_before_the_charge():
    """A centre at ±max float: the output grid would be infinite; a ValueError naming the centre and
    radius (public), raised before anything is charged, whatever the records."""
    from manifold_dp import Euclidean, private_frechet_mean
    from manifold_dp.privacy.accounting import PrivacyAccountant

    for X in (np.zeros((5, 1)), np.full((5, 1), np.nan)):
        acc = PrivacyAccountant(epsilon=10)
        with pytest.raises(ValueError, match="center and radius"):
            private_frechet_mean(X, Euclidean(1), epsilon=1.0, center=[np.finfo(float).max], radius=1.0, rng=0,
                                 accountant=acc)
        assert acc.spent() == (0.0, 0.0)
