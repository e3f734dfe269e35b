"""Closed-form values, invariances and membership tests per space, and pyRiemann as an independent
oracle for SPD. The properties every space shares: test_contract_manifolds.py."""

import numpy as np
import pyriemann.geometry.distance as prd
import pyriemann.geometry.mean as prm
import pyriemann.geometry.tangentspace as prt
import pytest
from scipy.stats import ortho_group

from manifold_dp import Euclidean, Hyperbolic, KendallShape2D, SPDAffineInvariant, SPDLogEuclidean, Sphere, frechet_mean
from manifold_dp.data import wishart_spd


def test_euclidean_closed_forms():
    e = Euclidean(2)
    assert e.dist([0, 0], [3, 4]) == 5.0
    assert np.allclose(e.exp([1, 1], [1, -1]), [2, 0])


def test_sphere_closed_forms():
    s = Sphere(2, radius=2.0)
    x, y = np.array([0, 0, 2.0]), np.array([2.0, 0, 0])
    assert np.isclose(s.dist(x, y), 2.0 * np.pi / 2)
    assert np.allclose(s.log(x, y), [np.pi, 0, 0])
    assert np.allclose(s.exp(x, [np.pi, 0, 0]), y)
    # half-way along the great circle on the sphere of radius 2 (the κ^(-1/2) placement of docs/theory.md §1)
    assert np.allclose(s.exp(x, [np.pi / 2, 0, 0]), [np.sqrt(2), 0, np.sqrt(2)])
    assert s.curvature_bounds == (0.25, 0.25) and np.isclose(s.assumption_radius, np.pi / 2)
    assert np.isclose(Sphere(2).assumption_radius, np.pi / 4)


def test_sphere_rotation_invariance():
    rng = np.random.default_rng(0)
    s = Sphere(4)
    X, Y = s.uniform(10, rng=rng), s.uniform(10, rng=rng)
    Q = ortho_group.rvs(5, random_state=rng)
    assert np.allclose(s.dist(X @ Q.T, Y @ Q.T), s.dist(X, Y))
    assert np.allclose(s.log(X @ Q.T, Y @ Q.T), s.log(X, Y) @ Q.T, atol=1e-10)


def test_sphere_antipode_log_is_data_independent_and_long():
    s = Sphere(2)
    x = np.array([0.0, 0.0, 1.0])
    v = s.log(x, -x)
    assert np.isclose(np.linalg.norm(v), np.pi) and np.isclose(v @ x, 0.0)
    assert np.allclose(s.exp(x, v), -x, atol=1e-12)


def test_hyperbolic_closed_forms():
    h = Hyperbolic(2)
    t = 1.3
    y = np.array([np.cosh(t), np.sinh(t), 0.0])
    assert np.isclose(h.dist(h.origin, y), t)
    assert np.allclose(h.log(h.origin, y), [0, t, 0])
    # Lorentz boosts are isometries
    rng = np.random.default_rng(1)
    X = h.random_point(h.origin, 2.0, size=8, rng=rng)
    Y = h.random_point(h.origin, 2.0, size=8, rng=rng)
    c = h.random_point(h.origin, 1.0, rng=rng)
    assert np.allclose(h.dist(h.boost(c, X), h.boost(c, Y)), h.dist(X, Y), rtol=1e-9)


def test_hyperbolic_distance_accurate_near_zero():
    h = Hyperbolic(2)
    y = h.exp(h.origin, np.array([0.0, 1e-9, 0.0]))
    assert np.isclose(h.dist(h.origin, y), 1e-9, rtol=1e-6)


def test_spd_closed_forms():
    spd = SPDAffineInvariant(2)
    q = np.diag([np.e, np.exp(-2.0)])
    assert np.isclose(spd.dist(np.eye(2), q), np.sqrt(5.0))
    le = SPDLogEuclidean(2)
    assert np.isclose(le.dist(np.eye(2), q), np.sqrt(5.0))
    assert np.isclose(spd.laplace_integrability_constant, np.sqrt(2) / 2)


def test_spd_affine_congruence_invariance():
    rng = np.random.default_rng(2)
    spd = SPDAffineInvariant(4)
    P, Q = wishart_spd(6, 4, df=8, max_radius=10, rng=rng), wishart_spd(6, 4, df=8, max_radius=10, rng=rng)
    A = rng.standard_normal((4, 4))
    assert np.allclose(spd.dist(A @ P @ A.T, A @ Q @ A.T), spd.dist(P, Q), rtol=1e-7)
    assert np.allclose(spd.inner(A @ P[0] @ A.T, A @ Q[0] @ A.T, A @ Q[1] @ A.T), spd.inner(P[0], Q[0], Q[1]), rtol=1e-7)


@pytest.mark.parametrize("k", [2, 3, 6])
def test_spd_against_pyriemann(k):
    rng = np.random.default_rng(k)
    X = wishart_spd(30, k, df=k + 2, max_radius=3.0, rng=rng)
    P = X[0]
    ai, le = SPDAffineInvariant(k), SPDLogEuclidean(k)
    assert np.allclose(ai.dist(P, X), [prd.distance_riemann(P, x) for x in X], rtol=1e-8, atol=1e-10)
    assert np.allclose(le.dist(P, X), [prd.distance_logeuclid(P, x) for x in X], rtol=1e-8, atol=1e-10)
    assert np.allclose(ai.log(P, X[1]), prt.log_map_riemann(X[1], P, C12=True), rtol=1e-8, atol=1e-10)
    assert np.allclose(ai.exp(P, ai.log(P, X[1])), X[1], rtol=1e-8)
    mean_ai = frechet_mean(X, ai).point
    mean_le = frechet_mean(X, le).point
    assert np.allclose(mean_ai, prm.mean_riemann(X, tol=1e-14, maxiter=500), rtol=1e-8, atol=1e-10)
    assert np.allclose(mean_le, prm.mean_logeuclid(X), rtol=1e-8, atol=1e-10)


def test_kendall_closed_forms_and_rotation_invariance():
    kd = KendallShape2D(4)
    rng = np.random.default_rng(3)
    X = kd.random_point(kd.origin, 0.3, size=10, rng=rng)
    Y = kd.random_point(kd.origin, 0.3, size=10, rng=rng)
    phi = rng.uniform(0, 2 * np.pi, size=(10, 1))
    assert np.allclose(kd.dist(X, Y * np.exp(1j * phi)), kd.dist(X, Y))
    assert np.allclose(kd.dist(X * np.exp(1j * phi), Y), kd.dist(X, Y))
    assert np.allclose(kd.dist(X, X * np.exp(1j * phi)), 0.0, atol=1e-7)
    # a translated, scaled, rotated configuration has the same shape
    z = kd.to_landmarks(X[0]) * 3.0 + np.array([5.0, -2.0])
    assert np.isclose(kd.dist(kd.preshape(z), X[0] * 1j), 0.0, atol=1e-7)
    # square vs. a rhombus of angle a: closed form arccos|<x, y>|
    sq = kd.preshape(np.array([1, 1j, -1, -1j]))
    assert np.isclose(kd.dist(sq, sq), 0.0)
    line = kd.preshape(np.array([-1.5, -0.5, 0.5, 1.5]) + 0j)
    expected = np.arccos(abs(np.vdot(sq, line)))
    assert np.isclose(kd.dist(sq, line), expected)


def test_kendall_log_at_orthogonal_shape_is_horizontal():
    kd = KendallShape2D(4)
    sq = kd.preshape(np.array([1, 1j, -1, -1j]))
    # a pre-shape orthogonal (Hermitian) to sq: at distance π/2, the cut locus
    y = kd.preshape(np.array([1, -1j, -1, 1j]))
    assert np.isclose(kd.dist(sq, y), np.pi / 2)
    v = kd.log(sq, y)
    assert np.isclose(np.vdot(sq, v), 0.0) and np.isclose(v.sum(), 0.0)


@pytest.mark.parametrize("cls", ["SPDAffineInvariant", "SPDLogEuclidean"])
def test_spd_membership_mask_in_mixed_batches(cls):
    """The positive-definiteness test (a batch Cholesky, eigenvalues only when it fails) must
    give each matrix its own verdict, and agree with the smallest eigenvalue away from 0."""
    import manifold_dp

    spd = getattr(manifold_dp, cls)(4)
    rng = np.random.default_rng(11)
    A = rng.standard_normal((200, 4, 4))
    S = A + np.swapaxes(A, -1, -2) + rng.uniform(-2, 6, size=(200, 1, 1)) * np.eye(4)
    lam = np.linalg.eigvalsh(S)[:, 0]
    clear = np.abs(lam) > 1e-8
    assert 20 < np.sum(lam > 0) < 180  # both kinds present
    assert np.array_equal(spd.belongs(S)[clear], (lam > 0)[clear])
    assert spd.belongs(S[lam > 0]).all()
    nonsym = S[lam > 0][0].copy()
    nonsym[0, 1] += 1.0
    assert spd.belongs(np.stack([S[lam > 0][0], nonsym])).tolist() == [True, False]
    ok, reason = spd.check_point(S[lam <= 0][0])
    assert not ok and reason.startswith("not positive definite")
