"""One property suite over every manifold (STYLE §8), then closed forms per space."""

import numpy as np
import pytest

from conftest import MANIFOLDS, base_point, near_points

N = 20


def test_exp_log_roundtrip(manifold):
    rng = np.random.default_rng(1)
    x = base_point(manifold, rng)
    Y = near_points(manifold, x, N, rng)
    back = manifold.exp(x, manifold.log(x, Y))
    assert np.allclose(manifold.dist(back, Y), 0.0, atol=1e-7)


def test_log_exp_roundtrip(manifold):
    rng = np.random.default_rng(2)
    x = base_point(manifold, rng)
    v = manifold.random_unit_tangent(x, size=N, rng=rng) * rng.uniform(0, 0.7, size=(N,) + (1,) * len(manifold.point_shape))
    assert np.allclose(manifold.log(x, manifold.exp(x, v)), v, atol=1e-8)


def test_log_is_tangent_and_dist_is_its_norm(manifold):
    rng = np.random.default_rng(3)
    x = base_point(manifold, rng)
    Y = near_points(manifold, x, N, rng)
    v = manifold.log(x, Y)
    assert np.allclose(manifold.norm(x, v), manifold.dist(x, Y), rtol=1e-9, atol=1e-12)
    name = type(manifold).__name__
    if name == "Sphere":
        assert np.allclose(v @ x, 0.0, atol=1e-10)
    elif name == "Hyperbolic":
        from manifold_dp.manifolds.hyperbolic import minkowski
        assert np.allclose(minkowski(x, v), 0.0, atol=1e-10)
    elif name.startswith("SPD"):
        assert np.allclose(v, np.swapaxes(v, -1, -2), atol=1e-12)
    elif name == "KendallShape2D":
        assert np.allclose(v.sum(axis=-1), 0.0, atol=1e-10)
        assert np.allclose(np.conj(x) @ v.T, 0.0, atol=1e-10)


def test_random_unit_tangent_has_unit_norm(manifold):
    rng = np.random.default_rng(4)
    x = base_point(manifold, rng)
    u = manifold.random_unit_tangent(x, size=N, rng=rng)
    assert np.allclose(manifold.norm(x, u), 1.0)
    # tangent: exp then log returns it
    assert np.allclose(manifold.log(x, manifold.exp(x, 0.3 * u)), 0.3 * u, atol=1e-8)


def test_distance_axioms(manifold):
    rng = np.random.default_rng(5)
    c = base_point(manifold, rng)
    X, Y, Z = (near_points(manifold, c, N, rng) for _ in range(3))
    dxy, dyx = manifold.dist(X, Y), manifold.dist(Y, X)
    assert np.allclose(dxy, dyx, rtol=1e-9, atol=1e-12)
    assert np.all(dxy + manifold.dist(Y, Z) >= manifold.dist(X, Z) - 1e-10)
    assert np.allclose(manifold.dist(X, X), 0.0, atol=1e-7)
    assert np.all(dxy >= 0)


def test_outputs_are_points(manifold):
    rng = np.random.default_rng(6)
    x = base_point(manifold, rng)
    Y = near_points(manifold, x, N, rng)
    assert manifold.check_point(Y) == (True, "")
    assert manifold.check_point(manifold.exp(x, manifold.log(x, Y))) == (True, "")
    assert np.all(manifold.belongs(Y))


def test_batch_equals_loop(manifold):
    rng = np.random.default_rng(7)
    X = near_points(manifold, manifold.origin, 6, rng)
    Y = near_points(manifold, manifold.origin, 6, rng)
    V = manifold.log(X, Y)
    for i in range(6):
        assert np.allclose(V[i], manifold.log(X[i], Y[i]), atol=1e-12)
        assert np.isclose(manifold.dist(X, Y)[i], manifold.dist(X[i], Y[i]))
        assert np.allclose(manifold.exp(X, V)[i], manifold.exp(X[i], V[i]), atol=1e-12)
        assert np.isclose(manifold.inner(X, V, V)[i], manifold.inner(X[i], V[i], V[i]))
    # broadcasting a single base point against a batch
    W = manifold.log(X[0], Y)
    assert np.allclose(W[3], manifold.log(X[0], Y[3]), atol=1e-12)


def test_check_point_rejects_bad_points(manifold):
    x = np.array(manifold.origin, dtype=manifold.dtype)
    bad = x.copy()
    bad.flat[0] = np.nan
    ok, reason = manifold.check_point(bad)
    assert not ok and "NaN" in reason
    ok, reason = manifold.check_point(np.zeros((2,) * 3))
    assert not ok and "shape" in reason
    mask = manifold.belongs(np.stack([x, bad]))
    assert mask.tolist() == [True, False]


def test_clip_to_ball(manifold):
    rng = np.random.default_rng(8)
    c = manifold.origin
    r = 0.3 * min(1.0, manifold.assumption_radius)
    X = near_points(manifold, c, 50, rng, radius=3 * r if np.isinf(manifold.assumption_radius) else 0.99 * manifold.assumption_radius * 2)
    Xc = manifold.clip_to_ball(X, c, r)
    d_before, d_after = manifold.dist(c, X), manifold.dist(c, Xc)
    assert np.all(d_after <= r * (1 + 1e-9))
    inside = d_before <= r
    assert np.array_equal(Xc[inside], X[inside])
    assert np.allclose(d_after[~inside], r)
    # clipped points lie on the geodesic from c towards the original point
    V, W = manifold.log(c, X[~inside]), manifold.log(c, Xc[~inside])
    cos = manifold.inner(c, V, W) / (manifold.norm(c, V) * manifold.norm(c, W))
    assert np.allclose(cos, 1.0, atol=1e-8)


@pytest.mark.parametrize("name", [k for k, m in MANIFOLDS.items() if hasattr(m, "log_volume_ratio")])
def test_log_volume_ratio_is_an_envelope(name):
    """Affine-invariant SPD has no radial density (docs/theory.md §1); its sampler is tested elsewhere."""
    manifold = MANIFOLDS[name]
    rho = np.linspace(1e-6, min(manifold.radial_range[1], 5.0) * 0.999, 200)
    if type(manifold).__name__ == "Hyperbolic":
        assert np.all(manifold.log_volume_ratio(rho) >= 0)
    else:
        assert np.all(manifold.log_volume_ratio(rho) <= 1e-12)


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


def test_tangent_coordinates_are_orthonormal(manifold):
    """``to_tangent_coordinates`` is an isometry ``T_x M → R^dim`` and ``from_tangent_coordinates`` its inverse."""
    rng = np.random.default_rng(11)
    x = base_point(manifold, rng)
    U = manifold.log(x, near_points(manifold, x, N, rng))
    V = manifold.random_unit_tangent(x, size=N, rng=rng)
    cu, cv = manifold.to_tangent_coordinates(x, U), manifold.to_tangent_coordinates(x, V)
    assert cu.shape == (N, manifold.dim) and np.isrealobj(cu)
    assert np.allclose(np.sum(cu * cv, axis=-1), manifold.inner(x, U, V), atol=1e-10)
    assert np.allclose(manifold.from_tangent_coordinates(x, cu), U, atol=1e-10)
    c = rng.standard_normal((N, manifold.dim))
    w = manifold.from_tangent_coordinates(x, c)
    assert np.allclose(manifold.to_tangent_coordinates(x, w), c, atol=1e-10)
    # the vectors built from coordinates are tangent: exp then log gives them back
    small = 0.3 * w / np.linalg.norm(c, axis=-1).reshape((N,) + (1,) * len(manifold.point_shape))
    assert np.allclose(manifold.log(x, manifold.exp(x, small)), small, atol=1e-8)


def test_tangent_coordinates_broadcast_over_base_points(manifold):
    rng = np.random.default_rng(12)
    X = near_points(manifold, base_point(manifold, rng), 5, rng)
    V = manifold.random_unit_tangent(X, rng=rng)
    batch = manifold.to_tangent_coordinates(X, V)
    loop = np.stack([manifold.to_tangent_coordinates(X[i], V[i]) for i in range(5)])
    assert np.allclose(batch, loop, atol=1e-12)
    assert np.allclose(manifold.from_tangent_coordinates(X, batch), V, atol=1e-10)
