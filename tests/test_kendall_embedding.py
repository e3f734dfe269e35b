"""Kendall shapes' Veronese–Whitney embedding ``x ↦ w w*`` (``w = H x``): the ambient mechanisms'
sensitivity rests on its chord ``√2 sin ρ`` and its projection back on the top eigenvector."""

import math
import warnings

import numpy as np
import pytest

from manifold_dp import SO3, KendallShape2D, private_frechet_mean
from manifold_dp.privacy.sensitivity import ambient_sensitivity


@pytest.mark.parametrize("k", [3, 5, 18])
def test_the_chord_is_root_two_sine_of_the_distance_and_rotations_do_not_move_it(k):
    M = KendallShape2D(k)
    rng = np.random.default_rng(k)
    x = M.random_point(M.origin, 1.0, size=200, rng=rng)
    y = M.random_point(M.origin, 1.4, size=200, rng=rng)
    chord = np.linalg.norm(M.to_ambient(x) - M.to_ambient(y), axis=-1)
    assert np.allclose(chord, math.sqrt(2.0) * np.sin(M.dist(x, y)), atol=1e-12)
    turned = x * np.exp(1j * rng.uniform(0, 2 * np.pi, size=(200, 1)))
    assert np.allclose(M.to_ambient(turned), M.to_ambient(x), atol=1e-14)
    assert np.allclose(np.linalg.norm(M.to_ambient(x), axis=-1), 1.0, atol=1e-14)
    for r in (0.05, 0.3, 0.39):
        assert M.ambient_radius(M.origin, r) == pytest.approx(math.sqrt(2.0) * math.sin(r), rel=1e-15)
        assert ambient_sensitivity(M, n=100, radius=r) == pytest.approx(2 * math.sqrt(2.0) * math.sin(r) / 100, rel=1e-15)


def test_the_chord_bounds_every_record_of_the_ball():
    """The worst case of the ambient mean's sensitivity: two records on the boundary of ``B_r(c)``
    lie within ``2·√2 sin r`` of each other in the embedding."""
    M = KendallShape2D(6)
    rng = np.random.default_rng(1)
    c = M.random_point(M.origin, 1.0, rng=rng)
    r = 0.35
    v = M.random_unit_tangent(c, size=500, rng=rng)
    edge = M.exp(c, r * v)
    gaps = np.linalg.norm(M.to_ambient(edge) - M.to_ambient(c), axis=-1)
    assert np.all(gaps <= M.ambient_radius(c, r) * (1 + 1e-12))
    assert gaps.max() >= M.ambient_radius(c, r) * (1 - 1e-9)  # tight: every boundary point is at the chord


def test_projecting_back_gives_the_shape_and_the_procrustes_mean():
    M = KendallShape2D(7)
    rng = np.random.default_rng(2)
    x = M.random_point(M.origin, 1.2, size=50, rng=rng)
    assert np.all(M.dist(M.from_ambient(M.to_ambient(x)), x) < 1e-7)
    mean = M.from_ambient(np.mean(M.to_ambient(x), axis=0))
    stats = M.mean_start_stats(x, np.full(50, 1 / 50))
    assert float(M.dist(mean, M.mean_start(stats))) < 1e-7  # the full Procrustes mean (Kent 1994)


def test_an_ambient_gaussian_release_with_a_private_ball_on_shapes():
    """Kendall shapes get an (ε, δ) mechanism that ``center="auto"`` supports: the release lands
    near the cluster's mean, and its output is the representative aligned with the public centre."""
    M = KendallShape2D(8)
    rng = np.random.default_rng(3)
    c = M.exp(M.origin, 1.0 * M.random_unit_tangent(M.origin, rng=rng))
    X = M.random_point(c, 0.1, size=2000, rng=rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # whether records were clipped depends on the private ball's draw
        rel = private_frechet_mean(X, M, epsilon=2.0, delta=1e-6, center="auto", radius="auto",
                                   mechanism="ambient_gaussian", rng=4)
    assert rel.certificate.mechanism == "ambient_gaussian"
    assert float(M.dist(rel.value, c)) < 0.1


@pytest.mark.parametrize("space", [KendallShape2D(5), KendallShape2D(18), SO3()], ids=repr)
def test_the_planners_ambient_noise_factor_is_what_the_projection_does(space):
    """``ambient_noise_factor``: the distance the projection back moves a point per unit norm of
    isotropic ambient noise (the planner's and ``mechanism="auto"``'s expected distance). Fixed
    seed; 400 draws: the median agrees within 20 %."""
    rng = np.random.default_rng(7)
    c = space.random_point(space.origin, 0.5, rng=rng)
    mean = np.mean(space.to_ambient(space.random_point(c, 0.05, size=500, rng=rng)), axis=0)
    sigma = 1e-3
    noise = rng.normal(0.0, sigma, size=(400, space.ambient_dim))
    moved = np.median(space.dist(space.from_ambient(mean), space.from_ambient(mean + noise)))
    assert moved / (sigma * math.sqrt(space.ambient_dim)) == pytest.approx(space.ambient_noise_factor, rel=0.2)


def _ambient_spaces():
    from manifold_dp.manifolds import REGISTRY

    return [cls.examples()[0] for cls in REGISTRY.values() if cls.examples()[0].ambient_dim is not None]


@pytest.mark.parametrize("radius", [1e-16, 1e-14, 1e-12, 1e-6, 0.05])
@pytest.mark.parametrize("space", _ambient_spaces(), ids=repr)
def test_the_ambient_sensitivity_covers_the_computed_means_rounding(space, radius, monkeypatch):
    """``Δ_E`` bounds the distance between the *computed* embedded means of neighbouring
    datasets (captured where the release adds its noise), whose rounding does not shrink with the
    radius: a record on the boundary either way, one far outside (clipped), one given as another
    representative of the same point (a turned pre-shape, ``−q``)."""
    import warnings

    from manifold_dp.privacy import mechanisms

    seen = []
    draw = mechanisms.AmbientNoise.sample
    monkeypatch.setattr(mechanisms.AmbientNoise, "sample",
                        lambda self, z, size=None, *, rng=None: (seen.append(np.array(z, float)), draw(self, z, size, rng=rng))[1])
    rng = np.random.default_rng(11)
    c = space.random_point(space.origin, 1.0 if space.dim > 1 else 0.3, rng=rng)
    worst = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(25):
            u = space.random_unit_tangent(c, rng=rng)
            records = [space.exp(c, sign * f * radius * u) for sign in (1, -1) for f in (1.0, 50.0)]
            records += [space.random_point(c, 1.0, rng=rng) if space.dim > 1 else space.exp(c, 3.0 * u)]
            if np.iscomplexobj(c):
                records.append(c * np.exp(1j * rng.uniform(0, 2 * np.pi)))  # the centre, turned
            elif isinstance(space, SO3):
                records.append(-c)  # the centre's other quaternion
            means, bound = [], None
            for x in records:
                seen.clear()
                rel = private_frechet_mean(np.stack([x, c]), space, center=c, radius=radius, epsilon=1.0,
                                           mechanism="ambient_laplace", rng=0)
                means.append(seen[-1])
                bound = rel.certificate.sensitivity
            Z = np.array(means)
            worst = max(worst, float(np.max(np.linalg.norm(Z[:, None] - Z[None], axis=-1))) / bound)
    assert worst <= 1.0


def test_a_callers_numpy_error_setting_changes_nothing():
    """``np.errstate(under="raise")`` (or ``"warn"``) around a release: a record whose embedding
    underflows must neither raise nor warn where its neighbour does not (releases run under
    ``np.errstate(all="ignore")``)."""
    import warnings

    M = KendallShape2D(4)
    s = 2**-0.5
    c = np.array([0, 0, s, -s], complex)
    rest = M.random_point(c, 0.2, size=4, rng=0)
    for mode in ("raise", "warn"):
        for mech, delta in (("ambient_laplace", None), ("ambient_gaussian", 1e-6), ("laplace", None)):
            outcomes = []
            for first in (np.array([1e-200, 0, s, -s], complex), c):
                with warnings.catch_warnings(record=True) as caught, np.errstate(under=mode):
                    warnings.simplefilter("always")
                    rel = private_frechet_mean(np.vstack([first[None], rest]), M, center=c, radius=0.3, epsilon=1.0,
                                               delta=delta, mechanism=mech, rng=0)
                outcomes.append(sorted(str(w.category.__name__) for w in caught if issubclass(w.category, RuntimeWarning)))
                assert rel.value.shape == (4,)
            assert outcomes[0] == outcomes[1] == []


@pytest.mark.parametrize("scale", [1e-300, 1e-160, 1.0, 1e200, 1e300])
def test_landmarks_at_any_scale_keep_their_shape(scale):
    """Real landmarks near float64's end are shapes like any other (scaled by a power of two
    first), not records to replace; and no overflow warning."""
    import warnings

    M = KendallShape2D(4)
    shape = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.3, 0.7]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = M.preshape(shape * scale)
    assert np.all(np.isfinite(x)) and float(M.dist(x, M.preshape(shape))) < 1e-15


def test_the_embedding_rounds_within_its_contract():
    """``to_ambient`` within ``(4D + 64)·2⁻⁵³·‖φ‖`` of the exact ``w w*`` (computed in extended
    precision), as ``ambient_float_error`` budgets."""
    from scipy.linalg import helmert

    for k in (3, 5, 18, 40):
        M = KendallShape2D(k)
        x = M.random_point(M.origin, 1.2, size=300, rng=np.random.default_rng(k))
        H = helmert(k).astype(np.longdouble)
        xr, xi = x.real.astype(np.longdouble), x.imag.astype(np.longdouble)
        wr, wi = xr @ H.T, xi @ H.T
        re = wr[:, :, None] * wr[:, None, :] + wi[:, :, None] * wi[:, None, :]
        im = wi[:, :, None] * wr[:, None, :] - wr[:, :, None] * wi[:, None, :]
        iu = np.triu_indices(k - 1, 1)
        exact = np.concatenate([np.diagonal(re, axis1=1, axis2=2), np.sqrt(np.longdouble(2)) * re[:, iu[0], iu[1]],
                                np.sqrt(np.longdouble(2)) * im[:, iu[0], iu[1]]], axis=-1)
        err = np.sqrt(np.sum((M.to_ambient(x).astype(np.longdouble) - exact) ** 2, axis=-1)).astype(float)
        assert np.all(err <= (4 * M.ambient_dim + 64) * 2.0**-53)


def test_tangent_pca_and_plans_ignore_a_callers_numpy_error_setting():
    """Tangent PCA, and plans drawn later (``Plan.draw``, a private ball's or radius's
    ``release``), run under ``np.errstate(all="ignore")`` as the releases do."""
    from manifold_dp import Sphere
    from manifold_dp.privacy.frechet_mean import plan_release
    from manifold_dp.privacy.tangent_pca import private_tangent_pca

    S = Sphere(2)
    X = S.random_point(S.origin, 0.3, size=200, rng=1)
    with np.errstate(all="raise"):
        private_tangent_pca(X, S, center=S.origin, radius=0.5, epsilon=1.0, delta=1e-6, n_components=1, rng=2)
        for kw in (dict(center=S.origin, radius=0.5), dict(center=S.origin, radius="auto"), dict(center="auto")):
            plan = plan_release(X, S, epsilon=1.0, delta=1e-6, mechanism="ambient_gaussian", **kw)
            (plan.release if hasattr(plan, "release") else plan.draw)(rng=3)


def test_the_private_balls_first_stage_budgets_its_sums_rounding():
    """The first stage's ``Δ`` covers the rounding of its computed mean: all records at one point
    and one at the antipode (the sum's rounding is largest when every term is alike)."""
    from manifold_dp import Sphere
    from manifold_dp.privacy.ball_first_stage import first_stage

    worst = 0.0
    for n in range(3, 3000, 7):
        stage = first_stage(Sphere(1), n, 1.0)
        X = np.tile([1.0, 0.0], (n, 1))
        Y = X.copy()
        Y[0] = [-1.0, 0.0]
        worst = max(worst, float(np.linalg.norm(stage.statistic(X) - stage.statistic(Y))) / stage.sensitivity)
    assert worst <= 1.0
