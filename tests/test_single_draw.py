"""Single draws of the Riemannian Laplace (``size=None``, one footpoint) take a fast path: scalar
rejection from envelopes built once per law; ``law.at(η)`` checks and decomposes a footpoint once
for many draws. Their draws must follow the batched path's law: two-sample KS tests at α = 1e-3
(fixed seeds) on the distance to the footpoint and on coordinates of the direction; a footpoint off
the manifold must be refused every time, and ``sample`` keeps nothing of a footpoint between
calls (a kept footpoint would make a repeated one faster: a timing channel)."""

import pickle

import numpy as np
import pytest
from scipy import stats

from manifold_dp import Euclidean, Hyperbolic, KendallShape2D, SPDAffineInvariant, SPDLogEuclidean, Sphere, private_frechet_mean
from manifold_dp.privacy import RiemannianLaplace
from manifold_dp.privacy.single_draws import _SingleRadius

ALPHA = 1e-3
N_SINGLE = 3000
N_BATCH = 6000


def _far_spd(k, low, high, seed):
    """An SPD footpoint with eigenvalues spread from ``low`` to ``high``, in a random frame."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((k, k)))
    return (q * np.geomspace(low, high, k)) @ q.T


def _spd(k):
    m = SPDAffineInvariant(k)
    return m, 0.3 / m.laplace_integrability_constant


# (manifold, σ, footpoint): the footpoints sit away from the origin, some far from it
CASES = {
    "S2": (Sphere(2), 0.1, np.array([0.6, 0.0, 0.8])),
    "S2_wide": (Sphere(2), 2.0, Sphere(2).origin),
    "S5": (Sphere(5), 0.8, Sphere(5).random_point(Sphere(5).origin, 1.0, rng=1)),
    "S3_radius2": (Sphere(3, radius=2.0), 0.6, Sphere(3, radius=2.0).origin),
    "S40": (Sphere(40), 0.02, Sphere(40).random_point(Sphere(40).origin, 1.0, rng=7)),
    "S70": (Sphere(70), 0.02, Sphere(70).random_point(Sphere(70).origin, 1.0, rng=8)),  # direction: random_unit_tangent
    "H2": (Hyperbolic(2), 0.5, Hyperbolic(2).random_point(Hyperbolic(2).origin, 2.0, rng=2)),
    "H2_near_limit": (Hyperbolic(2), 0.9, Hyperbolic(2).origin),
    "kendall5": (KendallShape2D(5), 0.3, KendallShape2D(5).random_point(KendallShape2D(5).origin, 0.5, rng=3)),
    "euclidean3": (Euclidean(3), 0.5, np.array([1.0, -2.0, 3.0])),
    "spd_ai2": (*_spd(2), np.eye(2)),
    "spd_ai2_far": (*_spd(2), _far_spd(2, 1e-3, 1e3, 4)),
    "spd_ai3": (*_spd(3), _far_spd(3, 0.5, 2.0, 5)),
    "spd_ai3_far": (*_spd(3), _far_spd(3, 1e-3, 1e3, 6)),
}


def _polar(m, eta, x):
    """Distance to the footpoint and the first and last coordinates of the unit direction (in an
    orthonormal basis of ``T_η``: uniform on the unit sphere for every law here)."""
    v = m.log(eta, x)
    rho = np.asarray(m.dist(eta, x), float)
    c = m.to_tangent_coordinates(eta, v) / rho[:, None]
    return rho, c[:, 0], c[:, -1]


@pytest.mark.parametrize("case", list(CASES))
def test_single_draws_follow_the_batched_law(case):
    m, sigma, eta = CASES[case]
    lap = RiemannianLaplace(m, sigma)
    rng = np.random.default_rng(sum(map(ord, case)))
    bound = lap.at(eta)
    single = np.stack([lap.sample(eta, rng=rng) for _ in range(N_SINGLE // 2)]
                      + [bound.sample(rng=rng) for _ in range(N_SINGLE // 2)])
    assert "_kept_sampler" in lap.__dict__ and not any("frame" in k for k in lap.__dict__)  # the fast path drew them
    assert single.shape == (N_SINGLE,) + tuple(m.point_shape)
    assert bool(np.all(m.belongs(single)))
    batch = RiemannianLaplace(m, sigma).sample(eta, size=N_BATCH, rng=rng)
    for what, a, b in zip(("distance", "first direction coordinate", "last direction coordinate"),
                          _polar(m, eta, single), _polar(m, eta, batch)):
        p = stats.ks_2samp(a, b).pvalue
        assert p > ALPHA, f"{case}: {what}, KS p = {p:.2e}"


@pytest.mark.parametrize("case", ["S2", "spd_ai3_far"])
def test_single_draws_are_reproducible_by_seed_and_fresh_without_one(case):
    m, sigma, eta = CASES[case]
    lap = RiemannianLaplace(m, sigma)
    first = [lap.sample(eta, rng=np.random.default_rng(7)) for _ in range(3)]
    again = [lap.sample(eta, rng=np.random.default_rng(7)) for _ in range(3)]
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert np.array_equal(lap.sample(eta, rng=11), lap.sample(eta, rng=11))
    assert np.array_equal(lap.at(eta).sample(rng=11), lap.sample(eta, rng=11))  # the same draw, bound or not
    fresh = [lap.sample(eta) for _ in range(2)]  # OS entropy: two draws never coincide
    assert not np.array_equal(fresh[0], fresh[1])
    x, acceptance = lap.sample_with_stats(eta, rng=3)
    assert x.shape == tuple(m.point_shape) and 0.0 < acceptance <= 1.0
    assert 1.0 / acceptance == round(1.0 / acceptance)  # one over the number of proposals


def test_a_law_that_kept_its_sampler_pickles_as_its_fields():
    m, sigma, eta = CASES["H2"]
    lap = RiemannianLaplace(m, sigma)
    x = lap.sample(eta, rng=5)
    copy = pickle.loads(pickle.dumps(lap))
    assert copy == lap and not any(k.startswith("_kept_") for k in vars(copy))
    assert np.array_equal(copy.sample(eta, rng=5), x)  # a fresh copy draws the same for the same seed


BAD_FOOTPOINTS = {
    "S2": [np.array([0.0, 0.0, 2.0]), np.array([np.nan, 0.0, 1.0]), np.zeros(3), np.array([0.0, 1.0])],
    "H2": [np.array([1.0, 0.5, 0.5]), np.array([-1.0, 0.0, 0.0]), np.array([np.inf, 0.0, 0.0])],
    "spd_ai2": [np.array([[1.0, 2.0], [2.0, 1.0]]), np.array([[1.0, 0.5], [0.0, 1.0]]), -np.eye(2),
                np.array([[1.0, np.nan], [np.nan, 1.0]])],
}


@pytest.mark.parametrize("case", list(BAD_FOOTPOINTS))
def test_a_bad_footpoint_is_refused_every_time(case):
    m, sigma, eta = CASES[case]
    lap = RiemannianLaplace(m, sigma)
    lap.sample(eta, rng=0)
    for bad in BAD_FOOTPOINTS[case]:
        for _ in range(2):  # and a refused one is not
            with pytest.raises(ValueError, match="footpoint"):
                lap.sample(bad, rng=0)
    # nothing of a footpoint is kept: the same array changed in place is checked again
    point = np.array(eta, dtype=float)
    lap.sample(point, rng=0)
    point[..., 0] = BAD_FOOTPOINTS[case][0][..., 0] + 5.0
    with pytest.raises(ValueError, match="footpoint"):
        lap.sample(point, rng=0)
    for bad in BAD_FOOTPOINTS[case]:  # at() checks too
        with pytest.raises(ValueError, match="footpoint"):
            lap.at(bad)


def _one_point_candidates(m, rng):
    """Valid points (SPD: condition numbers up to 1e15), points near the membership tolerance and
    hostile ones: NaN, inf, 1e308, subnormal coordinates, zero, off-norm, asymmetric, indefinite."""
    if isinstance(m, Sphere):
        size = m.dim + 1
        good = [m.random_point(m.origin, 2.0, rng=rng) for _ in range(20)] + [m.origin, -m.origin]
        edge = [x * (1.0 + f) for x in good[:4] for f in (-2e-6, -5e-7, 5e-7, 2e-6)]
        tiny = np.zeros(size)
        tiny[-1], tiny[0] = m.radius, 5e-324
        hostile = [np.full(size, np.nan), np.full(size, np.inf), np.full(size, 1e308), np.zeros(size), tiny,
                   np.full(size, 1e-200)]
    else:
        good = []
        for cond in (1.0, 1e3, 1e8, 1e12, 1e15):
            for _ in range(4):
                q, _ = np.linalg.qr(rng.standard_normal((2, 2)))
                good.append((q * (np.exp(rng.uniform(-20, 20)) * np.array([1.0, cond]))) @ q.T)
        good += [x * scale for x in good[:4] for scale in (1e-300, 1e-160, 1e160, 1e300)]  # every test is relative
        edge = [x + np.array([[0.0, f], [0.0, 0.0]]) * np.linalg.norm(x) for x in good[:4] for f in (3e-7, 2e-6)]
        hostile = [np.array([[1.0, 2.0], [2.0, 1.0]]), -np.eye(2), np.zeros((2, 2)), np.array([[1.0, 1.0], [1.0, 1.0]]),
                   np.array([[np.nan, 0.0], [0.0, 1.0]]), np.array([[np.inf, 0.0], [0.0, 1.0]]),
                   np.array([[1e308, 1e308], [1e308, 1e308]]), np.diag([5e-324, 1.0]), np.diag([1e-300, 1e-300])]
    return good + edge + hostile


@pytest.mark.parametrize("m", [Sphere(1), Sphere(2), Sphere(5, radius=3.0), Sphere(63), Sphere(64), SPDAffineInvariant(2),
                               SPDLogEuclidean(2), SPDAffineInvariant(3)], ids=repr)
def test_the_one_point_check_agrees_with_the_general_one(m):
    """``validate_point`` checks one point with Python floats where the space has such a path
    (single draws check their footpoint on every call): it must accept exactly what
    ``check_point`` accepts and return the same projection, and refuse the rest with its reason."""
    rng = np.random.default_rng(4)
    fast = 0
    for x in _one_point_candidates(m, rng):
        ok, reason = m.check_point(x)
        if m._validate_one(np.asarray(x, float)) is not None:
            fast += 1
            assert ok, "the fast path accepted a point the general check refuses"
        if ok:
            np.testing.assert_allclose(m.validate_point(x), m.project(x), rtol=4 * np.finfo(float).eps, atol=0)
        else:
            with pytest.raises(ValueError, match=f"footpoint is not a point of .*{reason.split(' (')[0][:20]}"):
                m.validate_point(x, "footpoint")
    big = (isinstance(m, Sphere) and m.dim + 1 > 64) or (isinstance(m, SPDAffineInvariant) and m.k > 2)
    assert fast == 0 if big else fast >= 20  # where the path exists it took the valid points


def test_at_refuses_batches_and_restricted_laws():
    m, sigma, eta = CASES["S2"]
    with pytest.raises(ValueError, match="batch"):
        RiemannianLaplace(m, sigma).at(np.stack([eta, eta]))
    with pytest.raises(ValueError, match="restricted"):
        RiemannianLaplace(m, sigma, restrict_to=(eta, 0.5)).at(eta)


def test_single_draws_keep_the_public_refusals():
    with pytest.raises(ValueError, match="not integrable"):
        RiemannianLaplace(Hyperbolic(3), 0.6).sample(Hyperbolic(3).origin, rng=0)
    m = SPDAffineInvariant(3)
    with pytest.raises(ValueError, match="accepts about"):  # pilot acceptance below 1e-3 near 1/c_k
        RiemannianLaplace(m, 0.999 / m.laplace_integrability_constant).sample(np.eye(3), rng=0)


def test_the_single_draw_envelope_refuses_a_log_density_that_is_not_concave():
    log_f = lambda r: np.log(r) + 0.5 * np.sin(8.0 * r) - r
    dlog_f = lambda r: 1.0 / r + 4.0 * np.cos(8.0 * r) - 1.0
    with pytest.raises(RuntimeError, match="not concave"):
        _SingleRadius(log_f, dlog_f, np.inf, "a wavy density")
    # the same construction accepts the concave density without the wave
    ok = _SingleRadius(lambda r: np.log(r) - r, lambda r: 1.0 / r - 1.0, np.inf, "Gamma(2, 1)")
    rho = np.array([ok.draw(np.random.default_rng(s))[0] for s in range(2000)])
    assert stats.kstest(rho, stats.gamma(2.0).cdf).pvalue > ALPHA


@pytest.mark.parametrize("d", [1, 2, 5])
def test_single_draws_work_on_spheres_of_any_radius(d):
    """Where ``ρ/R`` at the end ``πR`` of the radial range rounds an ulp past ``π`` (R = 3.7, 0.9,
    1/3, …) the log-volume's slope came out ``+huge`` there, the envelope took that end for the
    mode (``log f = −∞``) and every single draw failed: releases on those spheres were impossible."""
    for R in np.geomspace(0.1, 100.0, 37).tolist() + [1 / 3, 0.9, 1.8, 3.7]:
        m = Sphere(d, radius=R)
        for rel in (0.05, 1.0):
            law = RiemannianLaplace(m, rel * R)
            x = np.stack([law.sample(m.origin, rng=i) for i in range(5)])
            assert bool(np.all(m.belongs(x))), (R, rel)
    m = Sphere(2, radius=3.7)
    X = m.random_point(m.origin, 0.5, size=50, rng=1)
    assert m.belongs(private_frechet_mean(X, m, center=m.origin, radius=0.8, epsilon=1.0, rng=2).value)


def test_the_closed_form_2x2_square_root_holds_at_every_scale():
    """``sqrtm_spd_one`` (single draws' ``η^½`` on SPD(2)) against ``eigh``, from 1e-300 to 1e300 and
    condition numbers up to 1e12: a determinant formed without scaling overflowed past 1.3e154
    (a NaN draw) and lost its bits to subnormals near 1e-162 (a draw off by 10 %)."""
    from manifold_dp.manifolds.matrix import sqrtm_spd, sqrtm_spd_one

    rng = np.random.default_rng(9)
    for scale in (1e-300, 1e-162, 1e-100, 1.0, 1e100, 1.34e154, 1e300):
        for cond in (1.0, 1e3, 1e8, 1e12):
            if scale / cond < 1e-290:  # keep the small eigenvalue a normal float
                continue
            for q in (np.eye(2), np.linalg.qr(rng.standard_normal((2, 2)))[0]):  # diagonal (q = 0) and rotated
                a = (q * (scale * np.array([1.0, 1.0 / cond]))) @ q.T
                a = 0.5 * (a + a.T)
                ours, ref = sqrtm_spd_one(a), sqrtm_spd(a)[0]
                assert np.linalg.norm(ours - ref) <= 64 * np.finfo(float).eps * cond * np.linalg.norm(ref), (scale, cond)
