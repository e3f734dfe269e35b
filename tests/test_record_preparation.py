"""Record preparation (``prepare_records``: validity, replacement by the centre, clipping into the
public ball): hostile finite records are replaced instead of failing the release, neighbours cost
the same calls in the same order (timing), no subnormal number reaches the passes, the sphere far
from radius one is the unit sphere scaled exactly, and the branch-free select is ``np.where``."""

import warnings

import numpy as np
import pytest

from conftest import MANIFOLDS
from manifold_dp import Euclidean, Hyperbolic, SPDAffineInvariant, SPDLogEuclidean, Sphere, private_frechet_mean
from manifold_dp.privacy.release import prepare_records


def _call_trace(fn):
    """The sequence of Python and C functions ``fn`` calls (names and lines): two runs with the same
    trace did the same work, up to the data inside numpy's loops."""
    import sys

    calls = []

    def profile(frame, event, arg):
        where = frame.f_code.co_filename
        if "manifold_dp" not in where and "numpy" not in where:  # not pytest's or the collector's own calls
            return
        if event == "call":
            calls.append(f"{where.rsplit('/', 1)[-1]}:{frame.f_code.co_name}")
        elif event == "c_call":
            calls.append(getattr(arg, "__qualname__", getattr(arg, "__name__", repr(arg))))

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


@pytest.mark.parametrize("name", list(MANIFOLDS))
@pytest.mark.parametrize("keep", [True, False])
def test_record_preparation_does_the_same_work_for_neighbours(name, keep):
    """Timing: preparing records that are all inside the ball, or with one replaced by a record far
    outside it (clipped), by NaN or by a finite point off the manifold (both replaced by the
    centre), runs the same calls in the same order — an earlier version rebuilt only the clipped
    records (and copied the array only when one was), and on SPD one record that was not positive
    definite failed its block's Cholesky and sent the block to ``eigvalsh`` (+9 % for a 300-record
    SPD(10) release), which a wall-clock adversary could see."""
    from manifold_dp.privacy.release import prepare_records

    m = MANIFOLDS[name]
    rng = np.random.default_rng(3)
    radius = 0.5 * min(1.0, m.assumption_radius)
    center = m.random_point(m.origin, radius, rng=rng)
    D = m.random_point(center, 0.5 * radius, size=40, rng=rng)
    far, nan = D.copy(), D.copy()
    far[7] = m.random_point(center, 3.0 * radius, rng=rng) if np.isfinite(m.injectivity_radius) else \
        m.exp(center, 5.0 * radius * m.random_unit_tangent(center, rng=rng))
    nan[7] = np.nan
    off = D.copy()
    off[7] = -D[7] if isinstance(m, (SPDAffineInvariant, SPDLogEuclidean)) else 2.0 * D[7]  # not positive definite; off the norm
    for X in (D, far, nan, off):  # warm numpy's and our first-use caches (np.finfo, envelopes)
        prepare_records(m, X, center, radius, keep)
    traces = [_call_trace(lambda X=X: prepare_records(m, X, center, radius, keep)) for X in (D, far, nan, off)]
    assert prepare_records(m, far, center, radius)[1].clipped >= 1
    if not isinstance(m, Euclidean):
        assert prepare_records(m, off, center, radius)[1].off_manifold == 1
    assert traces[0] == traces[1] == traces[2] == traces[3]


def test_hyperbolic_clipping_is_exact_at_the_supported_reach():
    H = Hyperbolic(2)
    center = H.exp(H.origin, 6.0 * H.random_unit_tangent(H.origin, rng=0))
    far = H.exp(center, 5.0 * H.random_unit_tangent(center, size=50, rng=1))
    clipped = prepare_records(H, far, center, 1.0)[0]
    assert np.max(np.abs(H.dist(center, clipped) - 1.0)) < 1e-8


@pytest.mark.parametrize("metric", [SPDAffineInvariant, SPDLogEuclidean])
@pytest.mark.parametrize("scale", [1e308, -1e308, 1e300, 5e-324, 0.0])
def test_spd_record_whose_frame_image_overflows_is_replaced_not_fatal(metric, scale):
    """A finite record such as ``1e308·I`` overflowed when symmetrised or whitened, and its ``eigh``
    raised: one record made the whole affine-invariant release fail (ε = ∞ between it and its
    neighbour; found while reviewing the fused SPD preparation, pre-existing). It is now replaced by
    the centre when its image is not finite, and otherwise prepared like any record."""
    m = metric(3)
    rng = np.random.default_rng(11)
    center = m.random_point(m.origin, 0.3, rng=rng)
    D = m.random_point(center, 0.2, size=12, rng=rng)
    hostile = D.copy()
    hostile[4] = scale * np.eye(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for X in (D, hostile):
            release = private_frechet_mean(X, m, center=center, radius=0.5, epsilon=1.0, rng=0)
            assert m.check_point(release.point)[0]
        counts = prepare_records(m, hostile, center, 0.5)[1]
    assert counts.non_finite == 0 and counts.off_manifold + counts.clipped == 1


EIGH_BREAKERS = [np.array([[8.832e-078, -1.667e+189, -6.527e-053, 1.836e+222], [-5.862e+305, -1.140e+048, -8.137e+101, 3.519e-194],
                           [8.935e-220, -2.091e-070, -4.006e-144, 4.174e-031], [-2.492e-211, -3.881e+098, 6.600e+017, 7.015e-209]]),
                 np.array([[2.31399934e-232, -1.25304971e-017, 5.76842287e+281, -1.27650579e+075],
                           [-1.25304971e-017, -4.81430986e-169, -5.07162210e-014, -7.86643830e-035],
                           [5.76842287e+281, -5.07162210e-014, 6.59248134e-302, -9.46637213e-038],
                           [-1.27650579e+075, -7.86643830e-035, -9.46637213e-038, -1.42867041e+061]])]


@pytest.mark.parametrize("metric", [SPDAffineInvariant, SPDLogEuclidean])
@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("scale", [1.0, 1e50])
def test_spd_record_on_which_eigh_fails_is_replaced_not_fatal(metric, which, scale):
    """One finite record whose entries span 1e-302…1e305 made ``eigh`` raise ("did not converge"),
    and the release with it (the fused preparation passed it to ``eigh`` as given; helper-2). Images
    are now scaled by a power of two and their entries below ``2^−100`` rounded off first: the
    release succeeds and the record becomes the centre; the neighbour's trace is the same."""
    m = metric(4)
    center = scale * np.eye(4)
    rng = np.random.default_rng(0)
    D = np.array([center * np.exp(0.1 * rng.standard_normal()) for _ in range(30)])
    hostile = D.copy()
    hostile[7] = EIGH_BREAKERS[which]
    if which == 1:
        with pytest.raises(np.linalg.LinAlgError):
            np.linalg.eigh(EIGH_BREAKERS[1])  # the breaker still breaks LAPACK as given
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for X in (D, hostile):
            assert m.check_point(private_frechet_mean(X, m, center=center, radius=0.5, epsilon=1.0, rng=0).point)[0]
        assert prepare_records(m, hostile, center, 0.5)[1].off_manifold == 1
        traces = [_call_trace(lambda X=X: prepare_records(m, X, center, 0.5)) for X in (D, hostile)]
    assert traces[0] == traces[1]


def test_sphere_preparation_flushes_subnormal_coordinates():
    """Timing: a record with subnormal coordinates (or coordinates whose squares are subnormal) made
    the float units take their slow path in every pass (an adversary measured ε_LB 3.7 at a claimed
    ε = 1 on S³⁰⁰, n = 100). Prepared records hold no subnormal number, and the tiny coordinates
    are exactly 0 (a move below 1e-90·R)."""
    for m in (Sphere(300), Sphere(2, radius=3.0)):
        X = np.tile(m.origin, (20, 1))
        X[3, :2] = 1e-310 * m.radius
        X[4, :2] = 1e-160 * m.radius
        X[5, :2] = 1e-80 * m.radius  # kept: above R·2⁻³⁰⁰, and its square is a normal number
        records = np.asarray(prepare_records(m, X, m.origin, 0.3 * m.radius)[0])
        tiny = np.finfo(float).tiny
        assert not np.any((records != 0) & (np.abs(records) < tiny))
        assert not np.any((records != 0) & (np.abs(records) < 2.0**-300 * m.radius))
        assert np.all(records[3:5, :2] == 0) and np.all(records[5, :2] != 0)


@pytest.mark.parametrize("seed", [0, 4, 7, 14])
@pytest.mark.parametrize("cls, mech", [(SPDAffineInvariant, "laplace"), (SPDAffineInvariant, "kng"),
                                       (SPDLogEuclidean, "laplace"), (SPDLogEuclidean, "tangent_gaussian")])
def test_numerically_singular_spd_records_are_treated_as_invalid(cls, mech, seed):
    """A symmetric matrix with eigenvalues 1, 2e-5, 2e-17 passes a Cholesky or ``λ_min > 0`` test,
    but ``eigh`` may return a negative eigenvalue, so its log is not finite: with these seeds such
    a record crashed the release with LinAlgError. It must be replaced like any invalid record."""
    m = cls(3)
    rng = np.random.default_rng(seed)
    X = m.random_point(m.origin, 0.2, size=40, rng=rng)
    u = np.linalg.qr(rng.standard_normal((3, 3)))[0]
    X[7] = (u * [1.0, 2e-5, 2e-17]) @ u.T
    X[7] = 0.5 * (X[7] + X[7].T)
    assert not m.belongs(X[7])
    delta = 1e-6 if mech == "tangent_gaussian" else None
    rel = private_frechet_mean(X, m, center=m.origin, radius=1.0, epsilon=1.0, delta=delta, mechanism=mech, rng=3)
    assert m.check_point(rel.point)[0]


@pytest.mark.parametrize("shift", [-300, -120, 150, 400])
def test_sphere_preparation_far_from_radius_one_is_the_unit_one_scaled_exactly(shift):
    """Far from R = 1 the preparation runs on the sphere of radius R·2^-e ∈ [½, 1) (so that no
    square or product of kept coordinates is subnormal: a slow float path, i.e. timing) and scales
    back by the power of two: its values must be exactly those of the unit sphere, scaled. Records
    include small coordinates, NaN, off-norm and antipodal records. (The timing itself is measured,
    not tested: docs/security.md, Timing.)"""
    rng = np.random.default_rng(11)
    unit = Sphere(2)
    c = unit.origin
    X = unit.exp(c, unit.random_unit_tangent(c, 400, rng=rng) * rng.uniform(0, 0.8, (400, 1)))
    X[::9, 0] = 1e-80  # kept by the flush at R = 1 (≥ 2⁻³⁰⁰), but its square at R = 2^-300 would be subnormal
    X[::9] /= np.linalg.norm(X[::9], axis=1, keepdims=True)
    X[1::13] = np.nan
    X[2::17] *= 1.5
    X[3::19] = -c
    scale = 2.0**shift
    m = Sphere(2, radius=scale)
    got = m.prepare_block(X * scale, c * scale, 0.3 * scale, 1 / 400)
    want = unit.prepare_block(X, c, 0.3, 1 / 400)
    np.testing.assert_array_equal(got[0], want[0] * scale)
    for g, w in zip(got[1:4], want[1:4]):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got[4], want[4] * scale)


def test_select_is_np_where_bit_for_bit_and_finite_rows_is_the_row_test():
    """The branch-free select of record preparation (docs/security.md, Timing (c)) returns exactly
    ``np.where``'s bits — NaN, inf and −0.0 included — for float and complex points of any shape,
    with the mask broadcast; ``finite_rows`` flags exactly the points with a non-finite entry."""
    from manifold_dp.manifolds.base import finite_rows, select

    rng = np.random.default_rng(0)
    for shape_a, shape_b, mshape in (((50, 4), (4,), (50, 1)), ((50, 3, 3), (3, 3), (50, 1, 1)), ((7,), (7,), (7,)),
                                     ((6, 5), (6, 5), (6, 5))):
        for complex_points in (False, True):
            a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
            if complex_points:
                a, b = a + 1j * rng.standard_normal(shape_a), b + 1j * rng.standard_normal(shape_b)
            a.flat[::5], a.flat[1::7], a.flat[2::11] = np.nan, np.inf, -0.0
            mask = rng.random(mshape) < 0.5
            got, want = select(mask, a, b), np.where(mask, a, b)
            assert got.shape == want.shape and got.dtype == want.dtype
            assert np.array_equal(got.view(np.uint8), np.ascontiguousarray(want).view(np.uint8))
            point_ndim = len(shape_b)
            axes = tuple(range(a.ndim - point_ndim, a.ndim))
            np.testing.assert_array_equal(finite_rows(a, point_ndim), np.all(np.isfinite(a), axis=axes))
    huge = np.array([[1e308, 1e308, -1e308]])  # finite entries whose sum overflows: still finite
    assert finite_rows(huge, 1).tolist() == [True]


class _GenericLine(Euclidean):
    """``Euclidean(1)`` without its fused pass: the generic path of ``prepare_records``."""

    def prepare_block(self, *args, **kwargs):
        return None

    def prepare_rows(self, rows, n, log_sum=True):
        return rows


@pytest.mark.parametrize("center", [0.0, 0.3, -2.0, 1e6])
@pytest.mark.parametrize("radius", [1.0, 1e-3, 7.0])
def test_the_lines_fused_preparation_is_the_generic_one(center, radius):
    """``Euclidean(1)``'s fused pass (additions, ``fmin``/``fmax`` and comparisons, counts instead of
    masks) against the generic path on hostile records (NaN, ±inf, 1e308, subnormal, ±0, on the
    boundary) over several blocks: the same counts, the log mean to 1e-12 of the radius, the kept
    records to rounding. Records farther than 1e154 from the centre are left out of the comparison:
    the generic path's ``ρ²`` overflows there and takes them as the centre, while the fused pass
    clips them to ``±r`` as documented."""
    from manifold_dp.manifolds.kernels import euclidean_passes

    E, G, rng = Euclidean(1), _GenericLine(1), np.random.default_rng(5)
    hostile = np.array([np.nan, np.inf, -np.inf, 5e-324, -5e-324, 1e-310, 0.0, -0.0, 3.0, -7.0])
    n = 3 * euclidean_passes.LINE_SUBBLOCK + 17
    x = center + rng.uniform(-2.0, 2.0, n) * radius
    at = rng.choice(n, size=n // 3, replace=False)
    x[at] = rng.choice(np.r_[hostile, center + radius, center - radius], size=len(at))
    X, c = x[:, None], np.array([center])
    for keep in (False, True):
        (fused, counts), (generic, want) = prepare_records(E, X, c, radius, keep), prepare_records(G, X, c, radius, keep)
        assert counts == want and counts.non_finite > 0 and counts.clipped > 0
        assert abs(fused.log_mean[0] - generic.log_mean[0]) <= 1e-12 * radius
        if keep:
            np.testing.assert_allclose(np.asarray(fused), np.asarray(generic), rtol=0, atol=4e-16 * (abs(center) + radius))
    far = np.array([[1e308], [-1e308], [np.nan], [center]])
    records, counts = prepare_records(E, far, c, radius)
    assert (counts.non_finite, counts.clipped) == (1, 2)
    np.testing.assert_array_equal(np.asarray(records)[:, 0], [center + radius, center - radius, center, center])
    # the pass sums the clipped records unweighted: a radius near float64's end (public) takes the generic path
    assert E.prepare_block(far, c, euclidean_passes.LINE_RADIUS_MAX * 2.0, 1.0) is None
    assert E.prepare_block(far, c, euclidean_passes.LINE_RADIUS_MAX, 1.0) is not None


def test_the_lines_fused_preparation_does_the_same_work_for_neighbours():
    """Timing: on ``Euclidean(1)`` neighbours (one record inside, far out, NaN, −inf, subnormal,
    beyond float64 from the centre) run the same calls in the same order, with and without the
    records, at the origin (where the subtraction is skipped: public) and elsewhere."""
    for center in (0.0, 0.5):
        E, c = Euclidean(1), np.array([center])
        D = np.random.default_rng(2).uniform(-0.5, 0.5, (300, 1)) + center
        neighbours = []
        for value in (center + 0.1, center + 40.0, np.nan, -np.inf, 5e-324, 1e308):
            Y = D.copy()
            Y[7] = value
            neighbours.append(Y)
        for keep in (True, False):
            for Y in neighbours:
                prepare_records(E, Y, c, 1.0, keep)
            traces = [_call_trace(lambda Y=Y: prepare_records(E, Y, c, 1.0, keep)) for Y in neighbours]
            assert all(trace == traces[0] for trace in traces)
