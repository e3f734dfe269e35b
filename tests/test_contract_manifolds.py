"""The manifold contract: one property suite run over every example of every manifold in
``manifold_dp.manifolds.REGISTRY`` (``conftest.MANIFOLDS``; a new space is picked up without a list
here). Geometry (exp∘log = id, log tangent, dist = ‖log‖, symmetry, the triangle inequality,
batch == loop), declared capabilities, the polar volume density against the Jacobian of ``exp``
and its slope against quadrature (where the space declares a radial density), the declared float
error, Newton constants as true bounds (where declared), and the released representative
(``canonical``). Closed forms per space: ``test_closed_forms.py``."""

import numpy as np
import pytest
from scipy.integrate import cumulative_trapezoid

from conftest import MANIFOLDS, base_point, near_points
from manifold_dp.manifolds import REGISTRY
from manifold_dp.manifolds.capabilities import LaplaceSampler

N = 20
RADIAL = [name for name, m in MANIFOLDS.items() if m.radial]
NEWTON = [name for name, m in MANIFOLDS.items() if m.newton_constants(0.5 * min(1.0, m.assumption_radius), 10) is not None]


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


def test_geodesics_minimise_up_to_the_declared_injectivity_radius_and_log_stays_within_it(manifold):
    """Far from the base point: a geodesic ``t ↦ exp(x, t·v)`` is minimising (``dist = t``) for every
    ``t`` below the declared injectivity radius (a radius declared too large makes ``r*``, and with it
    every sensitivity bound, false), and ``log`` of any point, however far, has norm ``dist`` and at
    most the injectivity radius (a ``log`` that does not wrap round would break ``dist = ‖log‖``)."""
    rng = np.random.default_rng(31)
    x = base_point(manifold, rng)
    inj = float(manifold.injectivity_radius)
    top = 0.98 * inj if np.isfinite(inj) else 4.0  # within float64's reach of any base point here
    t = np.linspace(0.05, 1.0, N) * top
    v = manifold.random_unit_tangent(x, size=N, rng=rng)
    Y = manifold.exp(x, v * t.reshape((N,) + (1,) * len(manifold.point_shape)))
    assert np.allclose(manifold.dist(x, Y), t, rtol=1e-6, atol=1e-9)
    far = 3.0 * top if np.isfinite(inj) else top  # beyond the cut locus, where there is one
    Z = manifold.exp(x, v * (np.linspace(0.1, 1.0, N) * far).reshape((N,) + (1,) * len(manifold.point_shape)))
    d, w = manifold.dist(x, Z), manifold.log(x, Z)
    assert np.allclose(manifold.norm(x, w), d, rtol=1e-6, atol=1e-9)
    assert np.all(d <= inj * (1 + 1e-9) + 1e-9)
    assert np.allclose(manifold.dist(manifold.exp(x, w), Z), 0.0, atol=1e-7)  # and points the right way


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


def test_declared_capabilities(manifold):
    m = manifold
    assert isinstance(m.homogeneous, bool) and isinstance(m.radial, bool) and isinstance(m.flat_chart, bool)
    assert m.laplace_sigma_limit > 0
    sampler = m.laplace_sampler
    assert isinstance(sampler, LaplaceSampler) and sampler.radial == m.radial
    assert isinstance(sampler.name, str) and isinstance(sampler.description, str) and sampler.description
    assert not sampler.supports_ball(m) or (m.radial and m.dim >= 2)
    if m.radial:
        assert m.log_volume(0.1) == m.log_volume(0.1)  # finite where the law lives
    if m.flat_chart:
        assert m.to_chart(m.origin).shape == (m.dim,)
    if m.ambient_dim is not None:
        assert m.to_ambient(m.origin).shape == (m.ambient_dim,)
    name = next(k for k, cls in REGISTRY.items() if isinstance(m, cls))
    shape = (tuple(m.user_point_shapes) or (tuple(m.point_shape),))[0]
    assert type(m).from_width(int(np.prod(shape))) == m or name == "sphere"  # a sphere's width does not fix its radius


def _jacobian_log_volume(m, x, u, rho, h=1e-5):
    """``log J(ρ)`` at ``exp_x(ρu)`` from the Jacobian determinant of ``exp_x`` in orthonormal tangent
    coordinates (central differences, read back through ``log`` at the image), plus ``(d−1) log ρ``:
    the polar volume density by its definition, not by the space's formula."""
    c0 = m.to_tangent_coordinates(x, rho * u)
    y = m.exp(x, m.from_tangent_coordinates(x, c0))
    columns = []
    for i in range(m.dim):
        step = np.zeros(m.dim)
        step[i] = h
        ahead, behind = (m.exp(x, m.from_tangent_coordinates(x, c0 + s * step)) for s in (1, -1))
        columns.append(m.to_tangent_coordinates(y, (m.log(y, ahead) - m.log(y, behind)) / (2 * h)))
    return np.linalg.slogdet(np.array(columns).T)[1] + (m.dim - 1) * np.log(rho)


@pytest.mark.parametrize("name", RADIAL)
def test_volume_density_is_the_jacobian_of_exp_and_its_slope_integrates_to_it(name):
    """Where a space declares a radial density (affine-invariant SPD does not: docs/theory.md §1),
    ``log_volume`` is ``log det D exp`` (to 1e-8 at three radii up to 0.9 of its range, two
    directions), ``log_volume_slope`` integrates to it (trapezoid quadrature), and the growth rate
    the unrestricted Laplace's integrability rests on bounds it: ``log J(ρ) − (d−1) log ρ ≤ cρ``."""
    m = MANIFOLDS[name]
    rng = np.random.default_rng(21)
    x = base_point(m, rng)
    top = min(float(m.radial_range[1]), 3.0)
    for u in m.random_unit_tangent(x, size=2, rng=rng):
        for rho in (0.1 * top, 0.5 * top, 0.9 * top):
            assert abs(_jacobian_log_volume(m, x, u, rho) - float(m.log_volume(rho))) < 1e-8, rho
    grid = np.linspace(0.05 * top, 0.95 * top, 20_001)
    integral = cumulative_trapezoid(m.log_volume_slope(grid), grid, initial=0.0)
    assert np.max(np.abs(integral - (m.log_volume(grid) - m.log_volume(grid[0])))) < 1e-6
    far = np.linspace(1e-3, min(float(m.radial_range[1]), 50.0) * 0.999, 2000)
    assert np.all(m.log_volume(far) - (m.dim - 1) * np.log(far) - m.volume_growth_rate * far <= 1e-9)


def test_distances_and_clipping_stay_within_the_declared_float_error(manifold):
    """``float_error(c, r)`` bounds the float64 error of distances and clipping near ``B_r(c)``: a
    point sent to distance ``r`` by ``exp`` measures ``r`` within it, and clipped records lie within it
    of the ball (the release's sensitivity adds it)."""
    m = manifold
    rng = np.random.default_rng(22)
    c = base_point(m, rng)
    for r in (1e-3, 0.3 * min(1.0, m.assumption_radius), 0.99 * min(3.0, m.assumption_radius)):
        err = m.float_error(c, r)
        assert 0 < err < 1e-6
        edge = m.exp(c, r * m.random_unit_tangent(c, size=200, rng=rng))
        assert np.max(np.abs(m.dist(c, edge) - r)) <= err
        far = m.exp(c, 1.5 * r * m.random_unit_tangent(c, size=200, rng=rng))
        assert np.max(m.dist(c, m.clip_to_ball(far, c, r))) <= r + err


def _third_derivative(m, x, u, p, h=2e-3):
    """``d³/dt³ ½ρ²(exp_x(tu), p)`` at 0 by central differences: along a geodesic it is
    ``(∇_u Hess ½ρ²_p)(u, u)``, which ``L`` bounds."""
    f = lambda t: 0.5 * float(m.dist(m.exp(x, t * u), p)) ** 2
    return (f(2 * h) - 2 * f(h) + 2 * f(-h) - f(-2 * h)) / (2 * h**3)


@pytest.mark.parametrize("name", NEWTON)
@pytest.mark.parametrize("fraction", [0.3, 0.9])
def test_newton_constants_are_true_bounds(name, fraction):
    """Where a space gives Newton constants for ``B_r(c)``: ``L`` bounds the third derivative of
    ``½ρ²_p`` along geodesics through the ball (records and footpoints at distance up to ``2r``;
    worst directions searched), ``e`` and ``g`` are finite and non-negative, ``h − e > 0`` for the
    Newton step's denominator at the strong convexity ``h`` of the ball. The exact per-space bounds:
    test_newton_certified.py (sphere), test_newton_spd.py (affine-invariant SPD)."""
    m = MANIFOLDS[name]
    r = fraction * min(1.0, m.assumption_radius)
    constants = m.newton_constants(r, 10)
    assert constants is not None and np.isfinite(constants.L) and constants.L > 0
    assert 0 <= constants.e < 0.5 and constants.g >= 0 and constants.expansion >= 0
    rng = np.random.default_rng(23)
    c = m.origin
    worst = 0.0
    for _ in range(10):
        w = m.random_unit_tangent(c, rng=rng)
        x, p = m.exp(c, r * w), m.exp(c, -r * w)  # at distance 2r: the largest the ball allows
        v = m.log(x, p)
        v = v / m.norm(x, v)
        e = m.random_unit_tangent(x, rng=rng)
        e = e - m.inner(x, e, v) * v
        e = e / m.norm(x, e)
        for a in np.linspace(0, np.pi / 2, 7):
            worst = max(worst, abs(_third_derivative(m, x, np.cos(a) * v + np.sin(a) * e, p)))
    assert 0 < worst <= constants.L * (1 + 1e-6) + 1e-4


def test_released_representative_is_the_same_point_fixed_by_the_centre(manifold):
    """``canonical(c, y)`` releases a representative of ``y``'s class: at distance 0 from it,
    idempotent, and the same for every representative of the class (complex pre-shapes: every
    rotation ``y·e^{iφ}``), so a release shows nothing but the class and the public centre."""
    m = manifold
    rng = np.random.default_rng(24)
    c = base_point(m, rng)
    Y = near_points(m, c, N, rng)
    out = m.canonical(c, Y)
    assert out.shape == np.shape(Y) and np.allclose(m.dist(out, Y), 0.0, atol=1e-7)
    assert np.allclose(m.canonical(c, out), out, atol=1e-12)
    if np.iscomplexobj(Y):  # the classes of pre-shapes are their rotations
        turned = Y * np.exp(1j * rng.uniform(0, 2 * np.pi, size=(N,) + (1,) * (Y.ndim - 1)))
        assert np.allclose(m.canonical(c, turned), out, atol=1e-10)
        assert not np.allclose(turned, Y)
