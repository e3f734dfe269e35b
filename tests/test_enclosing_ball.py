"""The enclosing-ball check of Assumption 1 near ``r*``: a ring at 0.999·r* is accepted and one at
1.001·r* refused without the slow Bădoiu–Clarkson passes on the sphere (its smallest enclosing cap
is exact), the cap's bounds bracket the radius, the hull's min-norm point is optimal, Kendall rings
near ``r*`` are accepted."""


import numpy as np
import pytest
from scipy.optimize import minimize

from manifold_dp import CurvatureAssumptionError, KendallShape2D, Sphere, frechet_mean
from manifold_dp.stats import enclosing
from manifold_dp.stats.frechet import enclosing_radius


def _sphere_ring(n, fraction, seed):
    s = Sphere(2)
    c = np.array([0.3, 0.2, 0.9]) / np.linalg.norm([0.3, 0.2, 0.9])
    u = s.random_unit_tangent(c, rng=seed)
    v = np.cross(c, u)
    a = np.random.default_rng(seed).uniform(0, 2 * np.pi, n)
    return s.exp(c, fraction * s.assumption_radius * (np.cos(a)[:, None] * u + np.sin(a)[:, None] * v))


def test_ring_at_0999_r_star_is_accepted_and_at_1001_refused_without_the_slow_iterations(monkeypatch):
    """The regression of issue 15: records on a ring at 0.999·r* satisfy Assumption 1, and the old
    check ran its 200 Bădoiu–Clarkson passes and refused them. The smallest enclosing cap is exact on
    the sphere: the ring is accepted, a ring at 1.001·r* refused, and neither needs those passes."""
    s = Sphere(2)
    monkeypatch.setattr(enclosing, "_farthest", lambda *a: pytest.fail("Bădoiu–Clarkson iterations ran on the sphere"))
    inside = _sphere_ring(200_000, 0.999, 12)
    res = frechet_mean(inside, s)
    assert res.converged and float(np.max(s.dist(res.point, inside))) > s.assumption_radius  # the mean's own ball is too big
    assert abs(enclosing_radius(s, inside, res.point) / s.assumption_radius - 0.999) < 1e-9
    with pytest.raises(CurvatureAssumptionError, match="Assumption 1"):
        frechet_mean(_sphere_ring(200_000, 1.001, 13), s)


def test_smallest_cap_bounds_bracket_the_exact_radius():
    rng = np.random.default_rng(14)
    s = Sphere(3)
    X = s.random_point(s.origin, 0.6, size=500, rng=rng)
    upper, lower, centre = enclosing._smallest_cap(X, s.origin)
    assert 0 <= upper - lower < 1e-10
    assert abs(np.arccos(np.min(X @ centre)) - upper) < 1e-12
    # no centre does better (a local optimiser of the max angle from the cap's centre)
    f = lambda c: float(np.max(np.arccos(np.clip(X @ (c / np.linalg.norm(c)), -1, 1))))
    best = minimize(f, centre + 0.01, method="Nelder-Mead", options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 4000}).fun
    assert best >= lower - 1e-9


def test_min_norm_point_of_a_hull():
    rng = np.random.default_rng(15)
    for m, D in ((3, 3), (12, 4), (40, 6)):
        P = rng.standard_normal((m, D)) + 1.5
        z = enclosing._min_norm_point(P)
        cons = ({"type": "eq", "fun": lambda a: np.sum(a) - 1},)
        ref = minimize(lambda a: float(np.sum((a @ P) ** 2)), np.full(m, 1 / m), bounds=[(0, 1)] * m, constraints=cons,
                       method="SLSQP", options={"ftol": 1e-15, "maxiter": 1000})
        assert np.linalg.norm(z) <= np.sqrt(ref.fun) + 1e-9
        assert np.min(P @ z) >= z @ z - 1e-9  # optimality: no vertex on the origin's side of the supporting plane


def test_kendall_ring_near_r_star_is_accepted():
    m = KendallShape2D(5)
    c = m.origin
    u = m.random_unit_tangent(c, rng=0)
    w = m.random_unit_tangent(c, rng=1)
    w = w - m.inner(c, u, w) * u
    w = w / m.norm(c, w)
    a = np.random.default_rng(2).uniform(0, 2 * np.pi, 5000)
    X = m.exp(c, 0.999 * m.assumption_radius * (np.cos(a)[:, None] * u + np.sin(a)[:, None] * w))
    X = X * np.exp(1j * np.random.default_rng(3).uniform(0, 6.3, size=(5000, 1)))  # rotations change no shape
    assert frechet_mean(X, m).converged
    assert enclosing_radius(m, X, frechet_mean(X, m).point) < m.assumption_radius
