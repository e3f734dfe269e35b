"""SO(3) with the bi-invariant metric (``manifolds/so3.py``, docs/theory.md §1 and §3).

Closed forms against an independent oracle, ``scipy.spatial.transform.Rotation``: the distance is
the rotation angle, ``exp``/``log`` in tangent coordinates are ``from_rotvec``/``as_rotvec`` of the
body-frame rotation, the matrix layout is ``as_matrix``. The released representative's sign is a
function of the rotation alone. The sensitivity is the formula of docs/theory.md §3 at κ = 1/4.
The Laplace radius law against its density by quadrature (KS, α = 1e-6, fixed seeds). Seeded
releases through the public function and the command line, and a privacy audit of the public path
(ε lower bound at 99 % confidence, and the same audit catching σ halved). The shared property
suite (test_contract_manifolds.py) runs over SO(3) too.
"""

import dataclasses
import itertools
import json
import math
import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.integrate import quad
from scipy.spatial.transform import Rotation

from manifold_dp import InvalidRecordsError, Sphere, frechet_mean_sensitivity, private_frechet_mean
from manifold_dp.audit import SCENARIOS, Scenario, audit
from manifold_dp.manifolds import REGISTRY, SO3
from manifold_dp.manifolds.so3 import canonical_sign, quaternion_to_matrix
from manifold_dp.privacy.ball_first_stage import first_stage
from manifold_dp.privacy.mechanisms import RiemannianLaplace
from manifold_dp.privacy.release import GAUSSIAN_MECHANISMS, MECHANISMS

M = SO3()
ALPHA = 1e-6
N_DRAWS = 20_000


def as_quaternions(rotations):
    """scipy's ``(x, y, z, w)`` as ``(w, x, y, z)``."""
    return rotations.as_quat()[..., [3, 0, 1, 2]]


def rotations_at_angles(angles, rng):
    axes = rng.standard_normal((len(angles), 3))
    return Rotation.from_rotvec(axes / np.linalg.norm(axes, axis=1, keepdims=True) * np.asarray(angles)[:, None])


# -- geometry: closed forms against scipy ---------------------------------------------------------

def test_distance_is_the_rotation_angle():
    rng = np.random.default_rng(1)
    A, B = Rotation.random(500, random_state=2), Rotation.random(500, random_state=3)
    assert np.allclose(M.dist(as_quaternions(A), as_quaternions(B)), (A.inv() * B).magnitude(), atol=1e-14)
    # near 0 and near π the angle keeps its relative accuracy (atan2, not arccos)
    for angles in (np.geomspace(1e-12, 1e-3, 50), np.pi - np.geomspace(1e-12, 1e-3, 50)):
        R = rotations_at_angles(angles, rng)
        assert np.allclose(M.dist(M.origin, as_quaternions(R)), angles, rtol=1e-12, atol=0)
        assert np.allclose(M.dist(as_quaternions(A[:50]), as_quaternions(A[:50] * R)), angles, rtol=1e-6, atol=4e-15)


def test_distance_is_bi_invariant_and_sign_blind():
    A, B, G, H = (as_quaternions(Rotation.random(100, random_state=s)) for s in range(4))
    mul = lambda a, b: as_quaternions(Rotation.from_quat(a[..., [1, 2, 3, 0]]) * Rotation.from_quat(b[..., [1, 2, 3, 0]]))
    assert np.allclose(M.dist(mul(mul(G, A), H), mul(mul(G, B), H)), M.dist(A, B), atol=1e-13)
    assert np.array_equal(M.dist(A, -B), M.dist(A, B)) and np.array_equal(M.dist(-A, B), M.dist(A, B))
    assert np.all(M.dist(A, B) <= np.pi)


def test_exp_and_log_are_the_body_frame_rotation_vector():
    """``R(exp_q v) = R(q)·Exp(c)`` and ``log`` gives back ``c = rotvec(R(q)ᵀR(p))``, angles up to π."""
    rng = np.random.default_rng(4)
    Q = Rotation.random(300, random_state=5)
    c = rng.standard_normal((300, 3))
    c *= rng.uniform(0, np.pi * (1 - 1e-9), (300, 1)) / np.linalg.norm(c, axis=1, keepdims=True)
    q = as_quaternions(Q)
    y = M.exp(q, M.from_tangent_coordinates(q, c))
    assert np.allclose(quaternion_to_matrix(y), (Q * Rotation.from_rotvec(c)).as_matrix(), atol=1e-13)
    assert np.allclose(M.to_tangent_coordinates(q, M.log(q, y)), c, atol=1e-9)
    P = Rotation.random(300, random_state=6)
    assert np.allclose(M.to_tangent_coordinates(q, M.log(q, as_quaternions(P))), (Q.inv() * P).as_rotvec(), atol=1e-12)
    # tiny steps: the Taylor branch
    small = 1e-10 * c
    back = M.to_tangent_coordinates(q, M.log(q, M.exp(q, M.from_tangent_coordinates(q, small))))
    assert np.allclose(back, small, rtol=0, atol=1e-15)  # float64 resolves a step of 1e-10 to the coordinates' ulp


def test_tangent_vectors_are_orthogonal_to_the_point_and_the_metric_is_four_times_euclidean():
    rng = np.random.default_rng(7)
    q = as_quaternions(Rotation.random(50, random_state=8))
    p = as_quaternions(Rotation.random(50, random_state=9))
    v = M.log(q, p)
    assert np.allclose(np.sum(v * q, axis=-1), 0.0, atol=1e-14)
    assert np.allclose(M.norm(q, v), 2.0 * np.linalg.norm(v, axis=-1))
    u = M.random_unit_tangent(q, rng=rng)
    assert np.allclose(np.linalg.norm(u, axis=-1), 0.5) and np.allclose(np.sum(u * q, axis=-1), 0.0, atol=1e-15)


def test_matrix_layout_round_trips_and_refuses_what_is_not_a_rotation():
    R = Rotation.random(200, random_state=10)
    m = SO3(layout="matrix")
    q = m.as_points(R.as_matrix())
    assert np.allclose(M.dist(q, as_quaternions(R)), 0.0, atol=1e-7)
    assert np.allclose(m.to_user(q), R.as_matrix(), atol=1e-14)
    assert np.array_equal(M.to_user(q), q)  # the quaternion layout gives quaternions back
    bad = R.as_matrix()[:4].copy()
    bad[0] *= -1.0  # a reflection
    bad[1] *= 1.001  # not orthogonal
    bad[2, 0, 0] = np.nan
    ok, reason = M.check_point(m.as_points(bad[[0]]))
    assert not ok and "not a rotation" in reason
    assert M.belongs(m.as_points(bad)).tolist() == [False, False, False, True]


def test_registry_widths_and_curvature():
    assert REGISTRY["so3"] is SO3
    assert SO3.from_width(4) == SO3() and SO3.from_width(9) == SO3(layout="matrix")
    with pytest.raises(ValueError, match=r"4 numbers .* or a rotation matrix \(9 numbers"):
        SO3.from_width(3)
    assert SO3().dim == 3 and [f.name for f in dataclasses.fields(SO3)] == ["layout"]  # one size, no size option
    with pytest.raises(ValueError, match="layout must be one of"):
        SO3(layout="euler")
    assert M.curvature_bounds == (0.25, 0.25) and M.injectivity_radius == np.pi and M.radial_range == (0.0, np.pi)
    assert M.assumption_radius == np.pi / 2  # ½ min{π, π/(2√κ)} with κ = 1/4


def test_volume_density_is_four_sin_squared_half_rho():
    rho = np.linspace(1e-3, np.pi, 400)
    assert np.allclose(M.log_volume(rho), np.log((2 * np.sin(rho / 2)) ** 2), atol=1e-13)
    assert np.allclose(M.log_volume_slope(rho), 1 / np.tan(rho / 2), atol=1e-12)
    # J integrates to the volume of SO(3) = RP³ = half of S³(2): π² · 2³ = 8π²
    assert math.isclose(4 * np.pi * quad(lambda t: (2 * np.sin(t / 2)) ** 2, 0, np.pi)[0], 8 * np.pi**2, rel_tol=1e-12)


# -- the released representative -------------------------------------------------------------------

def test_canonical_sign_is_a_function_of_the_rotation_alone():
    rng = np.random.default_rng(11)
    q = as_quaternions(Rotation.random(1000, random_state=12))
    q[:10, 0] = 0.0  # half turns: the sign is read further along
    q[10:20, :2] = 0.0
    q[20:25, 0] = -0.0
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    out = canonical_sign(q)
    assert np.array_equal(out.view(np.uint64), canonical_sign(-q).view(np.uint64))  # bit for bit
    assert np.allclose(M.dist(out, q), 0.0, atol=1e-7) and np.array_equal(canonical_sign(out), out)
    first = out[np.arange(len(out)), np.argmax(out != 0, axis=1)]
    assert np.all(first > 0)
    assert np.array_equal(M.canonical(M.origin, q), M.canonical(-rng.standard_normal(4), q))  # the centre plays no part


def test_a_release_does_not_depend_on_the_signs_of_the_records_or_the_centre():
    rng = np.random.default_rng(13)
    c = M.exp(M.origin, M.from_tangent_coordinates(M.origin, [0.4, -0.2, 0.9]))
    X = M.random_point(c, 0.5, size=60, rng=rng)
    flips = rng.choice([-1.0, 1.0], size=(60, 1))
    for mechanism in ("laplace", "kng"):
        kw = dict(radius=0.6, epsilon=1.0, mechanism=mechanism, rng=5)
        a = private_frechet_mean(X, M, center=c, **kw).point
        b = private_frechet_mean(X * flips, M, center=-c, **kw).point
        assert np.array_equal(a.view(np.uint64), b.view(np.uint64))
        assert a[np.argmax(a != 0)] > 0


# -- sensitivity: docs/theory.md §3 at κ = 1/4 -----------------------------------------------------

@pytest.mark.parametrize("r", [0.2, np.pi / 6, 1.0, 1.4])
def test_sensitivity_is_the_formula_at_kappa_one_quarter(r):
    n, a = 50, 2 * r * 0.5  # 2r√κ
    h = a / np.tan(a)
    rauch, paper = a / np.sin(a), 2 - h
    assert math.isclose(frechet_mean_sensitivity(M, n=n, radius=r, bound="rauch"), 2 * r * rauch / (n * h), rel_tol=1e-12)
    assert math.isclose(frechet_mean_sensitivity(M, n=n, radius=r, bound="paper"), 2 * r * paper / (n * h), rel_tol=1e-12)
    assert math.isclose(frechet_mean_sensitivity(M, n=n, radius=r, kind="kng", bound="rauch"), 2 * r * rauch / n,
                        rel_tol=1e-12)
    # tight: a ball of radius < π/2 is isometric to a ball of S³(2), the sphere's spread constant applies
    tight = frechet_mean_sensitivity(M, n=n, radius=r)
    assert tight <= 2 * r * rauch / (n * h) * (1 + 1e-12)
    assert math.isclose(tight, frechet_mean_sensitivity(Sphere(3, radius=2.0), n=n, radius=r), rel_tol=1e-9)
    with pytest.raises(ValueError, match="radius"):
        frechet_mean_sensitivity(M, n=n, radius=np.pi / 2)


@pytest.mark.parametrize("r", [0.3, 1.2])
def test_ambient_radius_is_the_chord_of_the_rotation_matrices(r):
    """``‖R(x) − R(c)‖_F = 2√2 sin(ρ/2)``, increasing in ``ρ``: the ball ``B_r(c)`` fills the Euclidean
    ball of radius ``2√2 sin(r/2)`` about ``R(c)`` out to its edge, and the extrinsic baselines'
    sensitivity is twice that over ``n``."""
    rng = np.random.default_rng(19)
    c = as_quaternions(Rotation.random(random_state=20))
    edge = M.exp(c, r * M.random_unit_tangent(c, size=200, rng=rng))
    inside = M.random_point(c, r, size=200, rng=rng)
    chord = lambda X: np.linalg.norm(M.to_ambient(X) - M.to_ambient(c), axis=-1)
    assert np.allclose(chord(edge), M.ambient_radius(c, r), rtol=1e-12)
    assert np.all(chord(inside) <= M.ambient_radius(c, r) * (1 + 1e-12))
    assert math.isclose(M.ambient_radius(c, r), 2 * math.sqrt(2) * math.sin(r / 2), rel_tol=1e-15)
    X = M.random_point(c, r, size=40, rng=rng)
    rel = private_frechet_mean(X, M, center=c, radius=r, epsilon=1.0, mechanism="ambient_laplace", rng=1)
    chord_part = 2 * 2 * math.sqrt(2) * math.sin(r / 2) / 40  # plus the clip's and the mean's rounding
    assert chord_part < rel.certificate.sensitivity <= chord_part * (1 + 1e-9)
    assert np.allclose(M.dist(M.from_ambient(M.to_ambient(X)), X), 0.0, atol=1e-7)


def test_first_stage_sensitivity_is_attained_by_half_turns_apart():
    stage = first_stage(M, 10, 1.0)
    # √2/n, and the computed mean's rounding (relative ~1e-13 here)
    assert math.sqrt(2) / 10 < stage.sensitivity <= math.sqrt(2) / 10 * (1 + 1e-9) and stage.dimension == 10
    q = M.origin
    p = np.array([0.0, 0.0, 0.0, 1.0])  # half a turn from q: ⟨q, p⟩ = 0
    rows = lambda X: stage._stage.rows(M, X, None)
    assert math.isclose(np.linalg.norm(rows(q[None]) - rows(p[None])), math.sqrt(2), rel_tol=1e-15)
    X = M.random_point(M.origin, 3.0, size=100, rng=14)
    assert np.array_equal(rows(X), rows(-X))  # a function of the rotations
    worst = max(np.linalg.norm(rows(X[:1]) - rows(X[i:i + 1])) for i in range(100))
    assert worst <= math.sqrt(2) * (1 + 1e-15)


# -- the Laplace radius law --------------------------------------------------------------------------

def laplace_radius_cdf(sigma, top=np.pi):
    """CDF of ``∝ e^(−ρ/σ) sin²(ρ/2)`` on ``[0, top]`` by quadrature (written out here, not the library's)."""
    density = lambda t: np.exp(-t / sigma) * np.sin(t / 2) ** 2
    total = quad(density, 0, top, epsabs=0, epsrel=1e-12)[0]
    grid = np.linspace(0, top, 2001)
    steps = [quad(density, a, b, epsabs=0, epsrel=1e-12)[0] for a, b in itertools.pairwise(grid)]
    values = np.concatenate([[0.0], np.cumsum(steps)]) / total
    return lambda t: np.interp(t, grid, values)


@pytest.mark.parametrize("sigma", [0.15, 0.8, 3.0])
def test_laplace_radius_and_direction_follow_the_law(sigma):
    """Unrestricted: ``ρ(η, y)`` ∝ ``e^(−ρ/σ) sin²(ρ/2)`` on ``[0, π]`` (at σ = 3 most mass is near π,
    where the density does not vanish), the body-frame direction uniform on S² (each coordinate of
    the unit rotation vector uniform on [−1, 1])."""
    rng = np.random.default_rng(int(sigma * 100))
    eta = as_quaternions(Rotation.random(random_state=15))
    y = RiemannianLaplace(M, sigma).sample(eta, size=N_DRAWS, rng=rng)
    rho = M.dist(eta, y)
    assert stats.kstest(rho, laplace_radius_cdf(sigma)).pvalue > ALPHA
    c = M.to_tangent_coordinates(eta, M.log(eta, y))
    keep = rho < np.pi - 1e-6  # at the cut locus the direction is not defined
    for axis in range(3):
        assert stats.kstest(c[keep, axis] / rho[keep], stats.uniform(-1, 2).cdf).pvalue > ALPHA


def test_restricted_laplace_at_the_centre_is_the_truncated_radius_law():
    rng = np.random.default_rng(16)
    c, r, sigma = M.origin, 1.2, 0.9
    y = RiemannianLaplace(M, sigma, restrict_to=(c, r)).sample(c, size=N_DRAWS, rng=rng)
    rho = M.dist(c, y)
    assert rho.max() <= r * (1 + 1e-12)
    assert stats.kstest(rho, laplace_radius_cdf(sigma, top=r)).pvalue > ALPHA


# -- releases: every mechanism, seeded, the command line ---------------------------------------------

def _data(n=60, seed=17):
    rng = np.random.default_rng(seed)
    c = M.exp(M.origin, M.from_tangent_coordinates(M.origin, [0.3, 0.1, -0.2]))
    return c, M.random_point(c, 0.5, size=n, rng=rng)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_every_mechanism_releases_or_is_refused_by_name(mechanism):
    c, X = _data()
    kw = dict(center=c, radius=0.6, epsilon=1.0, delta=1e-6 if mechanism in GAUSSIAN_MECHANISMS else None,
              mechanism=mechanism, rng=1)
    if mechanism in ("tangent_gaussian", "wrapped_laplace", "wrapped_gaussian"):  # flat chart; Hadamard spaces
        with pytest.raises(ValueError, match=f"mechanism='{mechanism}' needs"):
            private_frechet_mean(X, M, **kw)
        return
    rel = private_frechet_mean(X, M, **kw)
    assert M.check_point(rel.point) == (True, "") and rel.point[np.argmax(rel.point != 0)] > 0
    assert M.dist(rel.point, c) < 0.5


def test_seeded_release_is_reproducible_and_the_layouts_agree():
    c, X = _data()
    kw = dict(center=c, radius=0.6, epsilon=1.0, rng=2024)
    a = private_frechet_mean(X, M, **kw)
    b = private_frechet_mean(X, M, **kw)
    assert np.array_equal(a.point, b.point) and a.certificate.scale == b.certificate.scale
    n, r = len(X), 0.6
    assert math.isclose(a.certificate.sensitivity, frechet_mean_sensitivity(M, n=n, radius=r), rel_tol=1e-5)
    m = SO3(layout="matrix")
    via_matrices = private_frechet_mean(quaternion_to_matrix(X), m, **{**kw, "center": quaternion_to_matrix(c)})
    assert np.allclose(via_matrices.point, a.point, atol=1e-12)


# stored seeded releases (float.hex): a change of the SO(3) release path shows here; 1e-9 relative, as
# tests/test_seeded_releases.py allows under another numpy/scipy
STORED = {
    "laplace": (["0x1.fa421a9a0c647p-1", "0x1.f67eef9ace5b9p-4", "-0x1.34d6bfc1ce238p-7", "-0x1.5aaf8fba2efb0p-4"],
                "0x1.7d1c856bdb3d7p-6"),
    "kng": (["0x1.f0fd5189b2f66p-1", "0x1.a934a79ac940bp-3", "0x1.7829dfa675bb0p-5", "-0x1.cb0e3f92ba89ap-4"],
            "0x1.4e3da0c333769p-5"),
}


@pytest.mark.parametrize("mechanism", list(STORED))
def test_seeded_release_matches_the_stored_one(mechanism):
    c, X = _data()
    rel = private_frechet_mean(X, M, center=c, radius=0.6, epsilon=1.0, mechanism=mechanism, rng=2024)
    point, scale = STORED[mechanism]
    assert np.allclose(rel.point, [float.fromhex(v) for v in point], rtol=1e-9, atol=1e-12)
    assert math.isclose(rel.certificate.scale, float.fromhex(scale), rel_tol=1e-9)


@pytest.mark.filterwarnings("ignore::manifold_dp.RecordsWarning")
def test_center_auto_finds_the_data():
    c, X = _data(n=2000)
    rel = private_frechet_mean(X, M, center="auto", epsilon=1.0, rng=3)
    assert M.dist(rel.point, c) < 0.1


@pytest.mark.parametrize("layout", ["quaternion", "matrix"])
def test_command_line_release_matches_the_public_function(layout, tmp_path, run):
    c, X = _data()
    m = SO3(layout=layout)
    rows = m.to_user(X).reshape(len(X), -1)
    path = tmp_path / "rotations.csv"
    np.savetxt(path, rows, delimiter=",", fmt="%.17g")
    centre = ",".join(f"{v:.17g}" for v in np.ravel(m.to_user(c)))
    result = run("release", path, "--manifold", "so3", "--center", centre, "--radius", 0.6, "--epsilon", 1, "--seed", 99)
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    expected = private_frechet_mean(m.as_points(m.to_user(X)), m, center=m.to_user(c), radius=0.6, epsilon=1.0, rng=99)
    assert np.allclose(np.asarray(printed["value"]), m.to_user(expected.point), atol=1e-15)
    assert np.shape(printed["value"]) == ((3, 3) if layout == "matrix" else (4,))
    assert printed["certificate"]["manifold"] == repr(m)


# -- privacy: outcome classes and the audit of the public path -----------------------------------------

@pytest.mark.filterwarnings("ignore::manifold_dp.RecordsWarning", "ignore::manifold_dp.ReleaseWarning")
def test_neighbouring_datasets_have_the_same_outcome_class():
    rng = np.random.default_rng(18)
    c, r = M.origin, 1.5  # near r* = π/2
    u = M.random_unit_tangent(c, size=12, rng=rng)
    D = M.exp(c, r * u)
    D2 = D.copy()
    D2[3] = M.exp(c, -r * u[3])
    for mechanism in ("laplace", "kng"):
        for seed in range(3):
            outcomes = []
            for X in (D, D2):
                try:
                    private_frechet_mean(X, M, center=c, radius=r, epsilon=1.0, mechanism=mechanism, rng=seed)
                    outcomes.append("ok")
                except Exception as err:  # noqa: BLE001 — every exception type is an observable
                    outcomes.append((type(err).__name__, str(err)))
            assert outcomes[0] == outcomes[1]


EXTREME_MATRICES = [np.full((3, 3), 1e308), np.full((3, 3), -1e308), 1e300 * np.eye(3), np.full((3, 3), 2.0000001),
                    np.diag([5e-324, 0.0, 0.0]), np.array([[-5e-324, 1e-300, 8.99e307], [0, 1, 0], [1e308, 0, -1]])]


@pytest.mark.parametrize("bad", range(len(EXTREME_MATRICES)))
@pytest.mark.parametrize("release", ["mean", "median", "auto"])
def test_an_extreme_matrix_record_is_replaced_not_fatal(bad, release):
    from manifold_dp import PrivacyAccountant, private_frechet_median

    m = SO3(layout="matrix")
    D = Rotation.random(30, random_state=4).as_matrix()
    D2 = D.copy()
    D2[0] = EXTREME_MATRICES[bad]
    outcomes = []
    for X in (D, D2):
        acc = PrivacyAccountant(epsilon=10.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if release == "mean":
                rel = private_frechet_mean(X, m, center=np.eye(3), radius=1.0, epsilon=1.0, accountant=acc, rng=2)
            elif release == "median":
                rel = private_frechet_median(X, m, center=np.eye(3), radius=1.0, epsilon=1.0, accountant=acc, rng=2)
            else:
                rel = private_frechet_mean(X, m, center="auto", epsilon=1.0, accountant=acc, rng=2)
        outcomes.append((acc.spent(), rel.certificate.mechanism))
    assert outcomes[0] == outcomes[1]
    with pytest.raises(InvalidRecordsError):
        private_frechet_mean(D2, m, center=np.eye(3), radius=1.0, epsilon=1.0, rng=2, strict=True)


def test_matrix_conversion_never_raises_on_finite_extremes():
    rng = np.random.default_rng(5)
    exponents = rng.integers(-324, 309, size=(20000, 3, 3))
    X = rng.choice([-1.0, 1.0], size=(20000, 3, 3)) * rng.random((20000, 3, 3)) * 10.0 ** exponents.astype(float)
    X = np.where(np.isfinite(X), X, 1e308)
    ok = SO3(layout="matrix").belongs(SO3(layout="matrix").as_points(X))
    assert ok.shape == (20000,) and not ok.any()


@pytest.fixture
def so3_scenario(monkeypatch):
    monkeypatch.setitem(SCENARIOS, "laplace-so3", Scenario(SO3(), 0.5, power_factor=0.5))


def test_audit_of_the_public_path_passes_and_catches_sigma_halved(so3_scenario):
    """Worst-case neighbours (``n − 1`` records on the ball's edge, the last there or opposite):
    at the calibrated σ the ε lower bound stays below ε; with σ halved the same audit finds more."""
    r = audit("laplace-so3", samples=100_000, rng=1)
    assert r.epsilon_lb <= r.epsilon and r.epsilon_lb_bits <= r.epsilon, r
    assert 0 < r.slack <= 1 + 1e-9
    halved = audit("laplace-so3", samples=100_000, noise_factor=0.5, rng=1)
    assert halved.epsilon_lb > halved.epsilon, halved
