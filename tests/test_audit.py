"""Privacy audits at reduced size (the full size: `manifold-dp audit --samples 1000000`)."""

import numpy as np
import pytest

from manifold_dp.audit import SCENARIOS, audit, clopper_pearson, epsilon_lower_bound, power_check

EXACT = [s for s in SCENARIOS if "mcmc" not in s]


@pytest.mark.parametrize("name", EXACT)
def test_exact_mechanisms_pass_the_audit(name):
    r = audit(name, samples=20_000, rng=1)
    assert r.epsilon_lb <= r.epsilon
    assert 0 < r.slack <= 1 + 1e-9  # the audited pair never exceeds the sensitivity bound


@pytest.mark.parametrize("name", ["laplace-euclidean", "laplace-spd-le", "laplace-sphere", "laplace-spd-ai"])
def test_audit_catches_under_noised_mechanisms(name):
    r = power_check(name, samples=100_000, rng=2)
    assert r.epsilon_lb > r.epsilon


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


def test_mcmc_sampler_is_audited_and_reported():
    r = audit("kng-mcmc-sphere", samples=5_000, mcmc_steps=10, rng=4)
    assert np.isfinite(r.epsilon_lb)
