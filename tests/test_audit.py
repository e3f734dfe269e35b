"""The privacy audit's own machinery: the ε lower bound on known pairs, the float-bit and phase
statistics, the under-noising of the power check, argument checks. Every scenario is audited (and
power-checked, slow) in test_contract_mechanisms.py; the full audit: `manifold-dp audit --samples
1000000`. Significance: each ε lower bound holds with 99 % confidence (Clopper–Pearson, held-out
selection); seeds are fixed."""

import numpy as np
import pytest

from manifold_dp.audit import SCENARIOS, audit, clopper_pearson, epsilon_lower_bound, float_bit_features, under_noised
from manifold_dp.privacy import release


def test_under_noised_changes_the_pipeline_and_restores_it():
    from manifold_dp import Sphere
    S = Sphere(2)
    X = S.random_point(S.origin, 0.3, size=10, rng=0)
    kw = dict(center=S.origin, radius=0.4, epsilon=1.0)
    sigma = release.plan_release(X, S, **kw).calibration.sigma
    with under_noised(0.5):
        assert release.plan_release(X, S, **kw).calibration.sigma == pytest.approx(0.5 * sigma)
    assert release.plan_release(X, S, **kw).calibration.sigma == sigma


def test_lower_bound_is_sound_on_a_known_pair():
    # randomized response with ε = 1: the bound must stay below 1 and get close with many samples
    rng = np.random.default_rng(3)
    p = np.e / (1 + np.e)
    a = (rng.uniform(size=200_000) < p).astype(float)
    b = (rng.uniform(size=200_000) < 1 - p).astype(float)
    lb = epsilon_lower_bound(a, b)
    assert 0.9 < lb <= 1.0
    lo, hi = clopper_pearson(5, 10, 0.01)
    assert 0 < lo < 0.5 < hi < 1


def test_bit_features_catch_a_low_bit_leak():
    # a "mechanism" whose last mantissa bit is the secret: the categorical score must find it
    rng = np.random.default_rng(4)
    x = rng.laplace(size=(40_000, 1))
    bits = x.view(np.uint64)
    a = (bits & ~np.uint64(1)).view(np.float64)
    b = (bits | np.uint64(1)).view(np.float64)
    fa, fb = float_bit_features(a), float_bit_features(b)
    lb, stat = epsilon_lower_bound(fa, fb, categorical=list(fa))
    assert lb > 5 and stat in ("low8[0]", "trailing_zeros[0]")


def test_phase_statistic_catches_a_data_aligned_kendall_release():
    # the issue-11 leak: releases rotated to the data mean's phase. The audit's phase statistic
    # must give ε_LB far above 1 on such a mechanism (built here by rotating honest releases).
    from manifold_dp.audit import _statistics
    from manifold_dp.manifolds.kendall import hermitian
    m = SCENARIOS["laplace-kendall"].manifold
    rng = np.random.default_rng(5)
    mu = m.exp(m.origin, 0.2 * m.random_unit_tangent(m.origin, rng=rng))
    mu2 = m.exp(m.origin, 0.2 * m.random_unit_tangent(m.origin, rng=rng))
    y = m.exp(m.origin, 0.1 * m.random_unit_tangent(m.origin, size=20_000, rng=rng))
    align = lambda z, ref: z * np.exp(-1j * np.angle(hermitian(ref, z)))[:, None]
    sa = _statistics(m, align(y, mu), mu, mu2, None)
    sb = _statistics(m, align(y, mu2), mu, mu2, None)
    lb, stat = epsilon_lower_bound(sa, sb, categorical=[k for k in sa if "[" in k])
    assert lb > 3 and stat.startswith("phase")


def test_audit_rejects_bad_arguments():
    with pytest.raises(ValueError, match="unknown audit scenario"):
        audit("nope")
    with pytest.raises(ValueError, match="samples"):
        audit("laplace-euclidean", samples=10)


def test_under_noised_also_sharpens_the_radius_selection_and_restores_it():
    # radius="auto": the power check must under-noise both parts, so the selection's ε₁ grows by 1/factor
    from manifold_dp import Euclidean
    from manifold_dp.privacy import radius_selection
    from manifold_dp.privacy.radius_selection import AutoRadius
    E = Euclidean(1)
    X = np.linspace(-1, 1, 20)[:, None]
    kw = dict(center=E.origin, radius=AutoRadius(quantile=0.5, grid=(0.25, 0.5, 1.0)), epsilon=1.0)
    base = release.plan_release(X, E, **kw)
    with under_noised(0.5):
        sharp = release.plan_release(X, E, **kw)
    prior = base.log_base  # the public base measure is not sharpened
    assert np.array_equal(prior, radius_selection.base_log_weights(np.array([0.25, 0.5, 1.0]), 1.0))
    assert np.allclose(sharp._log_weights - prior, 2 * (base._log_weights - prior)) and np.any(base._log_weights != prior)
    assert [c.sigma for c, _ in sharp.stages] == pytest.approx([0.5 * c.sigma for c, _ in base.stages])
    assert radius_selection.selection_log_weights(np.array([-2.0]), 1.0, np.zeros(1))[0] == -1.0  # restored
    assert np.array_equal(release.plan_release(X, E, **kw)._log_weights, base._log_weights)
