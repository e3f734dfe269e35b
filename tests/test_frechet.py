"""Fréchet mean: the minimiser is found to the stated accuracy, and Assumption 1 is enforced."""

import numpy as np
import pytest
from scipy.optimize import minimize

from conftest import MANIFOLDS, near_points
from manifold_dp import CurvatureAssumptionError, KendallShape2D, Sphere, frechet_mean
from manifold_dp.data import noisy_shapes, sphere_cap
from manifold_dp.stats import riemannian_gradient


def _cost(m, x, X):
    return 0.5 * np.mean(m.dist(x, X) ** 2)


@pytest.mark.parametrize("name", list(MANIFOLDS))
def test_mean_is_a_critical_point_and_beats_brute_force(name):
    m = MANIFOLDS[name]
    rng = np.random.default_rng(10)
    X = near_points(m, m.origin, 40, rng)
    res = frechet_mean(m, X)
    assert res.converged
    g = riemannian_gradient(m, res.point, X)
    assert m.norm(res.point, g) < 1e-9
    # brute force: no point in a cloud of random nearby candidates, nor the best local
    # optimum scipy finds in exponential coordinates, has a lower cost
    cands = m.random_point(res.point, 0.2, size=300, rng=rng)
    assert _cost(m, res.point, X) <= np.min([_cost(m, c, X) for c in cands]) + 1e-14
    u = m.random_unit_tangent(res.point, size=m.dim, rng=rng)
    f = lambda a: _cost(m, m.exp(res.point, np.tensordot(a, u, axes=1)), X)
    opt = minimize(f, 0.05 * np.ones(m.dim), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-16, "maxiter": 20000})
    assert _cost(m, res.point, X) <= opt.fun + 1e-12


def test_gradient_batch_equals_loop():
    m = MANIFOLDS["spd_ai"]
    rng = np.random.default_rng(11)
    X = near_points(m, m.origin, 10, rng)
    P = near_points(m, m.origin, 4, rng)
    G = riemannian_gradient(m, P, X)
    for i in range(4):
        assert np.allclose(G[i], riemannian_gradient(m, P[i], X))


def test_sphere_two_point_mean_is_midpoint():
    s = Sphere(2)
    X = np.array([[1.0, 0, 0], [np.cos(1.2), np.sin(1.2), 0]])
    assert np.allclose(frechet_mean(s, X).point, [np.cos(0.6), np.sin(0.6), 0])


def test_weights():
    s = Sphere(2)
    X = sphere_cap(5, rng=1)
    a = frechet_mean(s, X, weights=[1, 1, 1, 1, 2]).point
    b = frechet_mean(s, np.concatenate([X, X[-1:]])).point
    assert np.allclose(a, b, atol=1e-10)
    with pytest.raises(ValueError, match="weights"):
        frechet_mean(s, X, weights=[1, 1])


def test_step_half_matches_step_one():
    s = Sphere(2)
    X = sphere_cap(50, rng=2)
    a, b = frechet_mean(s, X, step=0.5), frechet_mean(s, X, step=1.0)
    assert np.allclose(a.point, b.point, atol=1e-9) and a.n_iter >= b.n_iter


def test_curvature_assumption_reported():
    s = Sphere(2)
    X = sphere_cap(100, radius=1.2, rng=3)  # beyond r* = π/4
    with pytest.raises(CurvatureAssumptionError, match="Assumption 1"):
        frechet_mean(s, X)
    # the caller can opt out explicitly
    assert frechet_mean(s, X, check_assumption=False).converged


def test_not_converged_warns():
    s = Sphere(2)
    X = sphere_cap(30, rng=4)
    with pytest.warns(RuntimeWarning, match="did not reach"):
        res = frechet_mean(s, X, max_iter=1, step=0.1)
    assert not res.converged


def test_bad_input_is_rejected():
    s = Sphere(2)
    X = sphere_cap(5, rng=5)
    X[2, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        frechet_mean(s, X)
    with pytest.raises(ValueError, match="shape"):
        frechet_mean(s, np.zeros((0, 3)))


def test_kendall_mean_of_noisy_template_is_near_template():
    kd = KendallShape2D(6)
    template = np.array([[0, 0], [2, 0], [3, 1], [2, 2], [0, 2], [-1, 1]], float)
    X = noisy_shapes(template, 200, noise=0.05, rng=6)
    res = frechet_mean(kd, X)
    assert res.converged and kd.dist(res.point, kd.preshape(template)) < 0.02
    # rotating records leaves the mean shape unchanged
    rot = X * np.exp(1j * np.random.default_rng(7).uniform(0, 6.3, size=(200, 1)))
    assert kd.dist(frechet_mean(kd, rot).point, res.point) < 1e-8
