"""Fréchet mean: the minimiser is found to the stated accuracy, and Assumption 1 is enforced."""

import numpy as np
import pytest
from scipy.optimize import minimize

from conftest import MANIFOLDS, near_points
from manifold_dp import CurvatureAssumptionError, Euclidean, Hyperbolic, KendallShape2D, SPDAffineInvariant, Sphere, frechet_mean
from manifold_dp.data import noisy_shapes, sphere_cap
from manifold_dp.stats import riemannian_gradient
from manifold_dp.stats.frechet import hessian_lower_bound


def _cost(m, x, X):
    return 0.5 * np.mean(m.dist(x, X) ** 2)


@pytest.mark.parametrize("name", list(MANIFOLDS))
def test_mean_is_a_critical_point_and_beats_brute_force(name):
    m = MANIFOLDS[name]
    rng = np.random.default_rng(10)
    X = near_points(m, m.origin, 40, rng)
    res = frechet_mean(X, m)
    assert res.converged
    g = riemannian_gradient(m, res.point, X)
    assert m.norm(res.point, g) < 1e-9
    # brute force: no point in a cloud of random nearby candidates, nor the best local
    # optimum scipy finds in exponential coordinates, has a lower cost
    cands = m.random_point(res.point, 0.2, size=300, rng=rng)
    assert _cost(m, res.point, X) <= np.min([_cost(m, c, X) for c in cands]) + 1e-14
    u = m.random_unit_tangent(res.point, size=m.dim, rng=rng)
    f = lambda a: _cost(m, m.exp(res.point, np.tensordot(a, u, axes=1)), X)
    opt = minimize(f, 0.05 * np.ones(m.dim), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-16, "maxiter": 3000})
    assert _cost(m, res.point, X) <= opt.fun + 1e-12


def test_gradient_batch_equals_loop():
    m = MANIFOLDS["spd-ai"]
    rng = np.random.default_rng(11)
    X = near_points(m, m.origin, 10, rng)
    P = near_points(m, m.origin, 4, rng)
    G = riemannian_gradient(m, P, X)
    for i in range(4):
        assert np.allclose(G[i], riemannian_gradient(m, P[i], X))


def test_sphere_two_point_mean_is_midpoint():
    s = Sphere(2)
    X = np.array([[1.0, 0, 0], [np.cos(1.2), np.sin(1.2), 0]])
    assert np.allclose(frechet_mean(X, s).point, [np.cos(0.6), np.sin(0.6), 0])


def test_weights():
    s = Sphere(2)
    X = sphere_cap(5, rng=1)
    a = frechet_mean(X, s, weights=[1, 1, 1, 1, 2]).point
    b = frechet_mean(np.concatenate([X, X[-1:]]), s).point
    assert np.allclose(a, b, atol=1e-10)
    with pytest.raises(ValueError, match="weights"):
        frechet_mean(X, s, weights=[1, 1])


def test_step_half_matches_step_one():
    s = Sphere(2)
    X = sphere_cap(50, rng=2)
    a, b = frechet_mean(X, s, step=0.5), frechet_mean(X, s, step=1.0)
    assert np.allclose(a.point, b.point, atol=1e-9) and a.n_iter >= b.n_iter


def test_curvature_assumption_reported():
    s = Sphere(2)
    X = sphere_cap(100, radius=1.2, rng=3)  # beyond r* = π/4
    with pytest.raises(CurvatureAssumptionError, match="Assumption 1"):
        frechet_mean(X, s)
    # the caller can opt out explicitly
    assert frechet_mean(X, s, check_assumption=False).converged


def test_not_converged_warns():
    s = Sphere(2)
    X = sphere_cap(30, rng=4)
    with pytest.warns(RuntimeWarning, match="did not reach"):
        res = frechet_mean(X, s, max_iter=1, step=0.1)
    assert not res.converged


def test_bad_input_is_rejected():
    s = Sphere(2)
    X = sphere_cap(5, rng=5)
    X[2, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        frechet_mean(X, s)
    with pytest.raises(ValueError, match="shape"):
        frechet_mean(np.zeros((0, 3)), s)


def test_kendall_mean_of_noisy_template_is_near_template():
    kd = KendallShape2D(6)
    template = np.array([[0, 0], [2, 0], [3, 1], [2, 2], [0, 2], [-1, 1]], float)
    X = noisy_shapes(template, 200, noise=0.05, rng=6)
    res = frechet_mean(X, kd)
    assert res.converged and kd.dist(res.point, kd.preshape(template)) < 0.02
    # rotating records leaves the mean shape unchanged
    rot = X * np.exp(1j * np.random.default_rng(7).uniform(0, 6.3, size=(200, 1)))
    assert kd.dist(frechet_mean(rot, kd).point, res.point) < 1e-8


# -- the mean a private release uses: a public number of steps, a guaranteed accuracy --------

def _ring(m, center, radius, angles):
    u = m.random_unit_tangent(center, rng=0)
    w = m.random_unit_tangent(center, rng=1)
    w = w - m.inner(center, u, w) * u
    w = w / m.norm(center, w)
    return np.stack([m.exp(center, radius * (np.cos(a) * u + np.sin(a) * w)) for a in angles])


@pytest.mark.parametrize("m,radius", [
    (Sphere(2), np.pi / 8), (Sphere(3), 0.75), (Hyperbolic(2), 3.0), (Hyperbolic(4), 1.0),
    (SPDAffineInvariant(3), 2.0), (KendallShape2D(5), 0.35), (Euclidean(3), 2.0),
])
@pytest.mark.parametrize("layout", ["ring", "ring-and-centre", "three", "one", "cloud"])
def test_certified_mean_meets_its_accuracy_on_adversarial_data(m, radius, layout):
    """The theorem of ``certified_frechet_mean`` (public step and step count) on data where a fixed
    step-1 Karcher flow fails (H² boundary rings, radius 3) and near r* on positive curvature."""
    from manifold_dp.stats.frechet import certified_frechet_mean
    c = m.origin
    if layout == "ring":
        X = _ring(m, c, radius, np.linspace(0, 2 * np.pi, 10, endpoint=False))
    elif layout == "ring-and-centre":
        X = np.concatenate([_ring(m, c, radius, np.linspace(0, 2 * np.pi, 9, endpoint=False)), c[None]])
    elif layout == "three":
        X = _ring(m, c, radius, [0.0, 2.0, 4.0])
    elif layout == "one":
        X = _ring(m, c, radius, [1.0])
    else:
        X = m.clip_to_ball(m.random_point(c, 2 * radius, size=300, rng=5), c, radius)
    accuracy = 1e-9
    mu = certified_frechet_mean(m, X, c, radius, accuracy)
    assert m.dist(c, mu) <= radius * (1 + 1e-12)
    # the exact minimiser: certified by strong convexity, ρ(μ, x̄) ≤ ‖∇F(μ)‖/h
    ref = frechet_mean(X, m, init=mu, tol=1e-14, max_iter=20_000, check_assumption=False)
    h = hessian_lower_bound(radius, m.curvature_bounds[1])
    assert m.dist(mu, ref.point) <= accuracy + ref.grad_norm / h + 1e-12


def test_plain_frechet_mean_converges_where_step_one_diverges():
    m = Hyperbolic(2)
    X = _ring(m, m.origin, 3.0, [0.0, 2.0, 4.0])
    res = frechet_mean(X, m, max_iter=5000)
    assert res.converged and res.grad_norm < 1e-9


def test_the_mean_reads_real_landmarks_as_the_releases_do():
    """Kendall records as ``(n, k, 2)`` real landmarks, the layout ``private_frechet_mean`` reads,
    give the same mean as their complex pre-shapes."""
    K = KendallShape2D(18)
    X = K.random_point(K.origin, 0.1, size=30, rng=np.random.default_rng(0))
    landmarks = np.stack([X.real, X.imag], axis=-1) * 7.0 + 3.0  # scaled and moved: the same shapes
    assert K.dist(frechet_mean(landmarks, K).point, frechet_mean(X, K).point) < 1e-9
