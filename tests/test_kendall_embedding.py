"""Kendall shapes' Veronese–Whitney embedding ``x ↦ w w*`` (``w = H x``): the ambient mechanisms'
sensitivity rests on its chord ``√2 sin ρ`` and its projection back on the top eigenvector."""

import math

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
    with pytest.warns(Warning):
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
