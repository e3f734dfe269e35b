"""The sphere's Newton passes by power series (``manifolds.kernels.angle_series``; docs/theory.md §2).

(1) The degree-``K`` sums of ``θ/sin θ`` and ``β = (1 − θ cot θ)/sin²θ`` in ``z = sin²(θ/2)`` fall
    short of the functions, computed here from ``θ`` with ``math`` (not from the series), by at
    most the tails ``T_f``, ``T_β`` — and by at least 75 % of them at the end of the range, so an
    understated tail fails.
(2) One Newton step whose pass takes the series of a level of ``Sphere.newton_constants``
    (``cheaper``) obeys the recursion with that level's own ``e`` and ``g``:
    ``‖s − log_μ x̄‖ ≤ (L d²/2 + e d + g)/(h − e)`` on adversarial layouts in ``B_r(c)``.
(3) No subnormal arithmetic in a series pass (records at the footpoint, tiny angles, tiny
    coordinates of the iterate), at the highest degree.
(4) Preparing records without their log mean (the release's schedules from the extrinsic mean)
    gives the same records and counts.
"""

import math

import numpy as np
import pytest

from manifold_dp import Sphere, frechet_mean
from manifold_dp.manifolds.kernels import angle_series
from manifold_dp.privacy.release import prepare_records

EPS = np.finfo(float).eps


def _reference(z):
    theta = [2.0 * math.asin(math.sqrt(v)) for v in z]
    f = np.array([t / math.sin(t) for t in theta])
    beta = np.array([(1.0 - t / math.tan(t)) / math.sin(t) ** 2 for t in theta])
    return f, beta


@pytest.mark.parametrize("degree", [1, 2, 3, 5, 7, 9, 11, 14, 18])
@pytest.mark.parametrize("z_max", [math.sin(math.pi / 8) ** 2, 0.3, 0.49])
def test_series_fall_short_by_at_most_their_tails_and_nearly_by_them(degree, z_max):
    z = np.linspace(0.02, z_max, 400)  # above 0.02 the reference's β keeps ~13 digits
    f, beta = _reference(z)
    m = len(z)
    got_f, got_b = angle_series.evaluate(z, degree, np.empty((degree, m)), np.empty(m), np.empty(m))
    t_f, t_b = angle_series.tails(degree, z_max)
    tol_f, tol_b = 64 * EPS * f, 1e4 * EPS * beta  # rounding of the series and of the reference
    assert np.all(f - got_f >= -tol_f) and np.all(beta - got_b >= -tol_b)  # the sums fall short
    assert np.all(f - got_f <= t_f + tol_f) and np.all(beta - got_b <= t_b + tol_b)
    if t_f > 1e-10:  # the bound is nearly attained at z_max: a tail understated by a third fails
        assert f[-1] - got_f[-1] >= 0.75 * t_f
    if t_b > 1e-8:
        assert beta[-1] - got_b[-1] >= 0.75 * t_b


def test_series_coefficients_are_the_exact_ones():
    """``a_k = 4^k (k!)²/(2k+1)!``, and ``β``'s from the Taylor series of ``(1 − θ cot θ)/sin²θ``
    at 0: ``1/3 + 2θ²/15·…`` — checked through ``z = sin²(θ/2) ≈ θ²/4``: ``b_0 = 1/3``,
    ``b_1 = 8/15``."""
    a, b = angle_series.coefficients(6)
    want = [4**k * math.factorial(k) ** 2 / math.factorial(2 * k + 1) for k in range(7)]
    np.testing.assert_allclose(a, want, rtol=1e-15)
    np.testing.assert_allclose(b[:2], [1 / 3, 8 / 15], rtol=1e-15)


# -- (2) one Newton step of each series level ----------------------------------------------------

def _layouts(S, r, rng):
    c = S.origin
    u = S.random_unit_tangent(c, rng=rng)
    w = S.random_unit_tangent(c, rng=rng)
    w = (w - (w @ u) * u) / np.linalg.norm(w - (w @ u) * u)
    ring = np.linspace(0.0, 2.0 * np.pi, 12, endpoint=False)
    return {
        "boundary": S.exp(c, r * S.random_unit_tangent(c, 40, rng=rng)),
        "clusters at 2r": S.exp(c, r * np.array([u] * 7 + [-u] * 2)),
        "ring": S.exp(c, r * (np.cos(ring)[:, None] * u + np.sin(ring)[:, None] * w)),
        "one record": S.exp(c, r * u[None]),
    }


@pytest.mark.parametrize("dim,R,r", [(2, 1.0, np.pi / 8), (2, 1.0, 0.6), (4, 2.0, 0.9), (2, 1.0, 0.05)])
def test_a_series_step_obeys_the_recursion_with_its_own_errors(dim, R, r):
    S, rng = Sphere(dim, radius=R), np.random.default_rng(dim + 7)
    c = S.origin
    D = 2.0 * r / R
    h = D / math.tan(D)
    for name, X in _layouts(S, r, rng).items():
        n = len(X)
        constants = S.newton_constants(r, n)
        assert len(constants.cheaper) >= 5  # the series levels are offered
        mean = frechet_mean(X, S, init=S.project(X.sum(0)), tol=1e-14, check_assumption=False).point
        away = S.log(c, mean)
        away = -away / np.linalg.norm(away) if np.linalg.norm(away) > 0 else S.random_unit_tangent(c, rng=rng)
        starts = [c, S.exp(c, r * away), S.project(X.sum(0))] + list(S.exp(c, r * S.random_unit_tangent(c, 4, rng=rng)))
        for degree, e, _, g_err in constants.cheaper:
            for mu in starts:
                d = S.dist(mu, mean)
                g, A = S.newton_terms(mu, X, 1.0 / n, ball=r, order=degree)
                s = S.newton_step(mu, g, A)
                bound = (constants.L * d * d / 2.0 + e * d + g_err) / (h - e)
                assert np.linalg.norm(s - S.log(mu, mean)) <= bound + 1e-13, (name, degree)


def test_series_pass_agrees_with_the_exact_pass_within_its_bounds():
    """The gradient differs from the ``arccos`` pass's by at most the level's ``g``, the Hessian on
    ``T_x`` by at most its ``e``; records at the distance ``2r`` of the iterate, where ``z`` is
    largest."""
    S, r = Sphere(2), np.pi / 8
    c, rng = S.origin, np.random.default_rng(3)
    u = S.random_unit_tangent(c, rng=rng)
    x = S.exp(c, r * u)
    X = S.exp(c, -r * (u + 0.05 * rng.standard_normal((500, 3)) * [1, 1, 0]))
    X = S.clip_to_ball(X, c, r)
    n = len(X)
    constants = S.newton_constants(r, n)
    g0, A0 = S.newton_terms(x, X, 1.0 / n)
    P = np.eye(3) - np.outer(x, x)
    for degree, e, _, g_err in constants.cheaper:
        g, A = S.newton_terms(x, X, 1.0 / n, ball=r, order=degree)
        assert np.linalg.norm(g - g0) <= g_err + 1e-15
        assert np.linalg.norm(P @ (A - A0) @ P, 2) <= e
        if degree <= 5:  # far above the rounding: the bound is within a factor of 3 of what it covers
            assert np.linalg.norm(g - g0) >= g_err / 3.0


def test_a_series_pass_refuses_a_degree_it_has_no_series_for():
    S = Sphere(2)
    for order in (-1, angle_series.MAX_DEGREE + 1, 2.5):
        with pytest.raises(ValueError, match="order"):
            S.newton_terms(S.origin, S.origin[None], 1.0, ball=0.3, order=order)


# -- (3) timing: no subnormal arithmetic -------------------------------------------------------------

def test_no_subnormal_arithmetic_in_a_series_pass(monkeypatch):
    """The numpy pass, whose float exceptions numpy reports (the compiled pass, which reports none,
    computes the same values to rounding: tests/test_sphere_kernels.py; a normal number ≥ 2⁻⁶⁰⁰
    does not become subnormal by a rounding)."""
    from manifold_dp.manifolds.kernels import sphere_kernels

    monkeypatch.setattr(sphere_kernels, "kernels", lambda load=True: None)
    S, r = Sphere(2), np.pi / 8
    x = S.project(np.array([1e-200, 0.0, 1.0]))  # a tiny coordinate of the iterate
    tiny_angle = S.exp(x, np.array([1e-9, 0.0, 0.0]))
    X = np.array([x, x, tiny_angle, S.exp(S.origin, np.array([r, 0.0, 0.0]))])
    X, _ = prepare_records(S, X, S.origin, r)
    with np.errstate(under="raise"):
        for degree in (2, angle_series.MAX_DEGREE):
            g, A = S.newton_terms(x, X, 0.25, ball=r, order=degree)
            assert np.all(np.isfinite(g)) and np.all(np.isfinite(A))


# -- (4) records prepared without their log mean -------------------------------------------------------

def test_records_prepared_without_the_log_mean_are_the_same():
    S, r = Sphere(2), 0.4
    c, rng = S.origin, np.random.default_rng(11)
    X = S.uniform(2000, rng=rng)
    X[:200] = S.exp(c, r * S.random_unit_tangent(c, 200, rng=rng))  # on the boundary
    X[200] = -c  # antipodal
    X[201] = np.nan
    X[202] *= 1.5  # off the sphere
    X[203] = [1e-300, 0.0, 1.0]  # a tiny coordinate
    with_log, counts = prepare_records(S, X, c, r)
    without, counts_without = prepare_records(S, X, c, r, log_mean=False)
    assert without.log_mean is None and with_log.log_mean is not None
    assert counts == counts_without and counts.clipped > 1000 and counts.replaced == 2
    np.testing.assert_array_equal(np.asarray(with_log), np.asarray(without))
    assert np.all(S.dist(c, np.asarray(without)) <= r * (1 + 1e-12))


# -- (5) rounding in small balls: sums around the centre and the iterate ---------------------------

def _release_mean(S, X, center, r):
    """The certified mean a release computes, and its accuracy (public)."""
    from manifold_dp.privacy import release

    with np.errstate(all="ignore"), __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore")
        plan = release.plan_release(X, S, center=center, radius=r, epsilon=1.0, round_to=None)
    return plan._statistic, plan.calibration.accuracy


@pytest.mark.parametrize("R", [1.0, 7.5])
def test_extrinsic_start_of_a_tiny_ball_is_within_its_accuracy(R):
    """At ``r = 1e−8 R`` the schedule takes the extrinsic mean with no pass. Summing the records
    themselves rounds at ``ε·R`` per term: ``2·10⁵`` copies of a random centre gave ``4.9–5.9 a``
    (adversarial review); sums around the centre round at ``ε·r``."""
    rng = np.random.default_rng(5)
    for dim in (1, 2):
        S = Sphere(dim, radius=R)
        center = rng.standard_normal(dim + 1)
        center *= R / np.linalg.norm(center)
        mean, accuracy = _release_mean(S, np.tile(center, (200_000, 1)), center, 1e-8 * R)
        assert S.dist(center, mean) <= accuracy  # the records are the centre: so is their mean


def test_a_series_pass_in_a_small_ball_keeps_its_rounding_far_inside_the_budget():
    """``r = 1e−4``, 10 % of the records at one end of a diameter of the ball and 90 % at the
    other: the exact mean is on that geodesic, at ``−0.8 r`` (written in long double). The
    certified mean (one series pass) was ``0.45–0.8 a`` away when the pass summed ``f_i y_i``;
    around the iterate it is ``< 0.01 a``."""
    rng, n, r = np.random.default_rng(21), 1_000_000, 1e-4
    S = Sphere(2)
    center = rng.standard_normal(3)
    center /= np.linalg.norm(center)
    v = rng.standard_normal(3)
    v -= (v @ center) * center
    v /= np.linalg.norm(v)
    ld = np.longdouble
    c, w = center.astype(ld), v.astype(ld)
    A = (np.cos(ld(r)) * c + np.sin(ld(r)) * w).astype(float)
    B = (np.cos(ld(r)) * c - np.sin(ld(r)) * w).astype(float)
    X = np.tile(B, (n, 1))
    X[: n // 10] = A
    exact = (np.cos(ld(0.8 * r)) * c - np.sin(ld(0.8 * r)) * w)
    mean, accuracy = _release_mean(S, X, center, r)
    gap = float(np.sqrt(np.sum((mean.astype(ld) - exact) ** 2)))
    assert gap <= 0.1 * accuracy, (gap, accuracy)


def test_a_public_centre_with_tiny_coordinates_leaves_no_subnormal_coordinate():
    """Clipped and invalid records take the centre's coordinates; the centre's below ``R·2⁻³⁰⁰``
    are set to 0 like the records' (their products in the passes would be subnormal)."""
    S, r = Sphere(2), 0.3
    center = S.project(np.array([1e-250, 0.0, 1.0]))
    X = np.vstack([S.exp(center, np.array([0.0, 0.9, 0.0]))[None], [[np.nan] * 3], S.origin[None]])
    records, _ = prepare_records(S, X, center, r)
    records = np.asarray(records)
    assert np.all((np.abs(records) >= 2.0**-300) | (records == 0.0))
