"""The privacy accountant: dp_accounting events, the REPLACE_ONE conventions, composition bounds,
atomic check-and-spend under threads (also through ``private_frechet_mean``), a release charged
even when it fails after the budget check, validation, immutable snapshots."""

import math
import subprocess
import sys
import threading

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import comb

from manifold_dp import Sphere, private_frechet_mean
from manifold_dp.privacy import BudgetExceededError, PrivacyAccountant, frechet_mean, gaussian_dp_event, pure_dp_event
from manifold_dp.privacy.accounting import PLD_DISCRETIZATION, _Composition, _pure_epsilon, check_accountant
from manifold_dp.privacy.calibration import DELTA_FLOAT_ERROR, analytic_gaussian_sigma, gaussian_delta, gaussian_epsilon


def _pld(*events):
    """A bare REPLACE_ONE PLD accountant with ``events`` composed one at a time."""
    import dp_accounting
    from dp_accounting.pld import PLDAccountant

    acc = PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE, value_discretization_interval=PLD_DISCRETIZATION)
    for event in events:
        acc.compose(event)
    return acc


def _exact_gaussian_epsilon(noise_multiplier, delta):
    """Oracle: the ε solving Balle & Wang's exact ``δ(ε) = delta`` (Thm 8), by root finding."""
    return brentq(lambda e: gaussian_delta(noise_multiplier, 1.0, e) - delta, 0.0, 200.0, xtol=1e-14)


def _exact_rr_epsilon(epsilon, k, delta):
    """Oracle: ε at ``delta`` of k-fold binary RR(ε) (Kairouz, Oh & Viswanath 2015, Thm 3.3), from
    its privacy-loss law: loss ``(k − 2j)ε`` with probability ``C(k, j) q^(k−j) (1−q)^j``."""
    q = 1.0 / (1.0 + math.exp(-epsilon))
    j = np.arange(k + 1)
    loss, prob = (k - 2 * j) * epsilon, comb(k, j) * q ** (k - j) * (1 - q) ** j
    delta_of = lambda e: float(np.sum(prob * np.clip(1.0 - np.exp(e - loss), 0.0, None)))
    return brentq(lambda e: delta_of(e) - delta, 0.0, k * epsilon, xtol=1e-12)


# --- the events ---------------------------------------------------------------------------------

@pytest.mark.parametrize("epsilon", [0.01, 0.1, 0.5, 1.0, 3.0, 10.0])
def test_one_pure_event_gives_epsilon_at_delta_zero_under_pld(epsilon):
    # binary RR with noise 2/(1+e^ε) has maximal privacy loss exactly ε; the PLD grid rounds up
    # (to a multiple of the interval, itself computed in floating point: hence the 1e-12)
    pld_epsilon = _pld(pure_dp_event(epsilon)).get_epsilon(0.0)
    assert epsilon * (1 - 1e-12) <= pld_epsilon <= epsilon + PLD_DISCRETIZATION * (1 + 1e-9)


@pytest.mark.parametrize("epsilon", [1e-9, 1e-6, 1e-3, 0.01, 0.5, 1.0, 5.0, 50.0, 700.0])
def test_pure_event_charges_at_least_its_epsilon(epsilon):
    event = pure_dp_event(epsilon)
    assert event.num_buckets == 2
    assert np.isclose(event.noise_parameter, 2.0 / (1.0 + math.exp(epsilon)), rtol=1e-12, atol=0)
    recovered = _pure_epsilon(event)
    assert recovered >= epsilon  # rounded toward the side that never undercharges
    assert recovered - epsilon <= max(1e-12 * epsilon, 1e-15)  # a few ulps of p: relative 1e-7 at ε = 1e-9


@pytest.mark.parametrize("noise_multiplier", [0.5, 1.0, 2.0, 5.0, 20.0])
def test_one_gaussian_event_matches_the_exact_analytic_gaussian(noise_multiplier):
    # REPLACE_ONE: dp_accounting's GaussianDpEvent(m) has sensitivity 2, so σ/Δ = z is GaussianDpEvent(2z)
    event = gaussian_dp_event(noise_multiplier)
    assert event.noise_multiplier == 2.0 * noise_multiplier
    exact = _exact_gaussian_epsilon(noise_multiplier, 1e-5)
    pld_epsilon = _pld(event).get_epsilon(1e-5)
    assert abs(pld_epsilon - exact) / exact < 1e-3, (pld_epsilon, exact)
    spent, delta = PrivacyAccountant(1e3, 1e-5).spent([event])
    assert abs(spent - exact) / exact < 1e-9 and delta == 1e-5


@pytest.mark.parametrize("epsilon", [0, 0.0, -0.5, float("nan"), float("inf"), True, "1", None, 700.5, 1e300])
def test_pure_dp_event_validates_epsilon(epsilon):
    with pytest.raises(ValueError, match="epsilon"):
        pure_dp_event(epsilon)


@pytest.mark.parametrize("z", [0, 0.0, -1.0, float("nan"), float("inf"), False, "2", None, 1e308])
def test_gaussian_dp_event_validates_noise_multiplier(z):
    with pytest.raises(ValueError, match="noise_multiplier"):
        gaussian_dp_event(z)


# --- composition --------------------------------------------------------------------------------

@pytest.mark.parametrize("k,epsilon", [(2, 0.5), (4, 0.5), (10, 0.3), (7, 1.2)])
def test_k_pure_events_compose_to_at_least_k_epsilon(k, epsilon):
    # regression: dp_accounting 0.6.0 ignores `count` for RR events (4 x 0.5 with count=4 gives 0.5)
    from dp_accounting import dp_event

    for budget_delta in (0.0, 1e-5):
        acc = PrivacyAccountant(100.0, budget_delta)
        at_zero = _Composition(0.0).extended([pure_dp_event(epsilon)] * k).spent()[0]
        assert at_zero >= k * epsilon and np.isclose(at_zero, k * epsilon, rtol=1e-12)
        assert acc.spent([pure_dp_event(epsilon)] * k) == acc.spent([dp_event.ComposedDpEvent([pure_dp_event(epsilon)] * k)])
    # at δ > 0 the PLD bound is the optimal composition of KOV 2015, up to its pessimistic grid
    exact = _exact_rr_epsilon(epsilon, k, 1e-5)
    ours, delta = PrivacyAccountant(100.0, 1e-5, adaptive=False).spent([pure_dp_event(epsilon)] * k)
    assert exact <= ours <= exact + k * PLD_DISCRETIZATION and delta in (0.0, 1e-5)


def test_two_half_epsilon_releases_fit_a_budget_of_one_exactly():
    acc = PrivacyAccountant(1.0)
    acc.charge(pure_dp_event(0.5))
    acc.charge(pure_dp_event(0.5))  # the PLD grid alone would say 1.0002
    assert np.isclose(acc.spent()[0], 1.0, rtol=1e-12) and acc.spent()[1] == 0.0
    assert _pld(pure_dp_event(0.5), pure_dp_event(0.5)).get_epsilon(0.0) > 1.0001
    with pytest.raises(BudgetExceededError):
        acc.charge(pure_dp_event(1e-6))


@pytest.mark.parametrize("epsilon", [1e-12, 1e-9, 1e-6, 1e-5, 1e-4, 1e-3, 1.0])
def test_a_release_asking_for_exactly_the_budget_is_admitted_at_small_epsilon(epsilon):
    # below ε ≈ 1e-4 randomized response's noise parameter is a float near 1 that resolves ε only to
    # 2.2e-16: more than the budget's relative 1e-12 slack, which used to refuse such a release
    if epsilon < 1e-6:  # a pure event's slack is at most 1e-9 of its ε: exact below ≈ 2e-7 no longer
        assert not PrivacyAccountant(epsilon).can_spend(pure_dp_event(epsilon * 1.001))
    else:
        _exactly_admitted_pure(epsilon)
    for delta in (1e-6, 0.01, 0.5):  # a Gaussian calibrated at (ε, δ): its δ curve is flat in floats at small ε
        z = analytic_gaussian_sigma(epsilon, delta)
        assert PrivacyAccountant(epsilon, delta).can_spend(gaussian_dp_event(z))
        assert not PrivacyAccountant(epsilon, delta).can_spend(gaussian_dp_event(z * (1 - 1e-4)))


def _exactly_admitted_pure(epsilon):
    from dp_accounting import dp_event

    assert PrivacyAccountant(epsilon).can_spend(pure_dp_event(epsilon))
    parts = dp_event.ComposedDpEvent([pure_dp_event(0.3 * epsilon), pure_dp_event(0.7 * epsilon)])
    assert PrivacyAccountant(epsilon).can_spend(parts)
    assert not PrivacyAccountant(epsilon).can_spend(pure_dp_event(epsilon * (1 + 1e-8)))


def test_the_float_slack_stays_relative():
    # each pure event's slack is at most a relative 1e-9 of its ε: many tiny events cannot add up to
    # more than the budget (100 000 events of 2e-16 into 1e-12 would be 20 times over)
    from dp_accounting import dp_event

    assert not PrivacyAccountant(1e-12).can_spend(dp_event.ComposedDpEvent([pure_dp_event(2e-16)] * 10_000))
    assert not PrivacyAccountant(1e-14).can_spend(pure_dp_event(1.1e-14))
    # a Gaussian of tiny μ 10 % over its δ (admitted while the δ curve cancelled there)
    assert not PrivacyAccountant(1.7782794100389227e-14, 1.3386846394419391e-15).can_spend(
        gaussian_dp_event(56234132519034.914))


@pytest.mark.parametrize("mu", [1e-14, 1e-10, 1e-6, 9.9e-4])
def test_the_gaussian_delta_curve_has_no_cancellation_at_small_mu(mu):
    # Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) cancels for small μ (100 % wrong at μ = 1e-14); the curve is
    # the privacy-loss integral there: checked against an independent quadrature of
    # E[(1 − e^(ε − L))₊], L = μZ + μ²/2, Z ~ N(0, 1), to 1e-9
    from scipy.integrate import quad
    from scipy.stats import norm

    for x in (0.0, 0.5, 2.0, 6.0):
        eps = x * mu
        t = eps / mu - mu / 2
        ref = quad(lambda z: norm.pdf(z) * -math.expm1(-mu * (z - t)), t, t + 40, epsabs=0, epsrel=1e-13, limit=200)[0]
        assert ref <= gaussian_delta(1.0 / mu, 1.0, eps) <= ref * (1.0 + DELTA_FLOAT_ERROR) * (1.0 + 1e-9)


@pytest.mark.parametrize("delta", [1e-300, 1e-150, 9.614868513706016e-16])
def test_gaussian_epsilon_is_found_at_extreme_parameters(delta):
    # the computed δ curve is flat and noisy there: the root search bisects, and the accountant refuses
    # (or admits) instead of raising ZeroDivisionError or RuntimeError
    z = 177827941003892.28 if delta > 1e-20 else 1.0
    e = gaussian_epsilon(z, delta)
    assert e > 0 and gaussian_delta(z, 1.0, e) <= delta
    assert PrivacyAccountant(1.0, delta).can_spend(gaussian_dp_event(z)) in (True, False)


def test_a_gaussian_with_slightly_less_noise_than_the_budget_allows_is_refused():
    # the δ-side slack of the accountant (relative 1e-9) is far below what 1e-7 less noise spends
    z = analytic_gaussian_sigma(1.0, 1e-6)
    assert PrivacyAccountant(1.0, 1e-6).can_spend(gaussian_dp_event(z))
    assert not PrivacyAccountant(1.0, 1e-6).can_spend(gaussian_dp_event(z * (1 - 1e-7)))
    assert not PrivacyAccountant(1e-3, 1e-6).can_spend(pure_dp_event(1e-3 * (1 + 1e-10)))


def test_delta_zero_budget_admits_no_gaussian_release():
    acc = PrivacyAccountant(1e3)
    assert not acc.can_spend(gaussian_dp_event(1e6))
    with pytest.raises(BudgetExceededError):
        acc.charge(gaussian_dp_event(1e6))
    assert acc.spent([gaussian_dp_event(1e6)]) == (math.inf, 0.0)


def test_hundred_gaussian_releases_compose_far_below_naive_summation():
    z, delta = 5.0, 1e-5
    acc = PrivacyAccountant(1e3, delta)
    for _ in range(100):
        acc.charge(gaussian_dp_event(z))
    composed = acc.spent()[0]
    naive = 100 * _exact_gaussian_epsilon(z, delta)  # basic composition, at δ = 100 · 1e-5 even
    assert composed < naive / 5, f"composed ε = {composed:.4f} vs naive sum {naive:.4f} (z = {z}, δ = {delta})"
    assert np.isclose(composed, _exact_gaussian_epsilon(z / 10, delta), rtol=1e-9)  # μ-GDP: z/√100
    print(f"100 Gaussian releases, z = {z}: composed ε = {composed:.4f}, naive sum = {naive:.4f} at δ = {delta}")


def test_mixed_releases_use_the_smaller_of_the_two_bounds():
    delta = 1e-5
    events = [gaussian_dp_event(5.0), pure_dp_event(0.05)] * 20
    composition = _Composition(delta, tight=True).extended(events)
    pld, basic = composition.pld_epsilon(), composition.basic_epsilon()
    assert pld < basic  # the PLD bound wins when pure and Gaussian releases are mixed
    assert PrivacyAccountant(10.0, delta, adaptive=False).spent(events) == (pld, delta)
    # adaptive (the default): only bounds valid as privacy filters, basic composition + μ-GDP
    assert PrivacyAccountant(10.0, delta).spent(events) == (basic, delta)
    pure_only = _Composition(delta, tight=True).extended([pure_dp_event(0.05)] * 100)
    assert pure_only.spent() == (pure_only.pld_epsilon(), delta) and pure_only.pld_epsilon() < 2.0 < 5.0


def test_skipped_pld_bound_never_wins():
    # where _Composition skips bound (a) it cannot beat (b): δ = 0, or Gaussian releases only
    pure = [pure_dp_event(e) for e in (0.05, 0.5, 1.0, 0.3)] * 5
    composition = _Composition(0.0).extended(pure)
    assert _pld(*pure).get_epsilon(0.0) >= composition.basic_epsilon()
    gaussian = [gaussian_dp_event(z) for z in (1.0, 3.0, 7.0)] * 3
    composition = _Composition(1e-6).extended(gaussian)
    # the exact GDP bound carries the δ curve's raise of a relative DELTA_FLOAT_ERROR (an upper bound in float64)
    assert composition.pld_epsilon() >= composition.basic_epsilon() * (1.0 - DELTA_FLOAT_ERROR)
    assert _pld(*gaussian).get_epsilon(1e-6) >= composition.basic_epsilon() * (1.0 - DELTA_FLOAT_ERROR)


def test_cached_spend_equals_a_fresh_composition_of_the_recorded_events():
    acc = PrivacyAccountant(5.0, 1e-6)
    for event in [pure_dp_event(0.2), gaussian_dp_event(8.0), pure_dp_event(0.1), gaussian_dp_event(12.0)] * 3:
        acc.charge(event)
        assert acc.spent() == acc.spent(acc.events)


def test_composed_event_is_charged_atomically_and_recorded_as_its_parts():
    from dp_accounting import dp_event

    acc = PrivacyAccountant(1.0)
    parts = [pure_dp_event(0.3), pure_dp_event(0.4)]
    acc.charge(dp_event.ComposedDpEvent(parts))
    assert acc.events == tuple(parts)
    with pytest.raises(BudgetExceededError):
        acc.charge(dp_event.ComposedDpEvent([pure_dp_event(0.2), pure_dp_event(0.2)]))  # 0.2 alone would fit
    assert acc.events == tuple(parts)


# --- the accountant: atomicity, snapshots, validation -------------------------------------------

def _spend_concurrently(acc, threads, calls, events):
    barrier = threading.Barrier(threads)

    def worker(i):
        barrier.wait()  # start together: maximise interleaving of check and record
        for c in range(calls):
            try:
                acc.spend(events[(i + c) % len(events)])
            except BudgetExceededError:
                pass

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()


def test_concurrent_spends_never_overspend():
    # 8 threads x 25 calls of ε = 0.01 against ε = 1: exactly 100 fit, in every trial
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so an unlocked check-then-record races
    try:
        counts = []
        for _ in range(50):
            acc = PrivacyAccountant(1.0)
            _spend_concurrently(acc, threads=8, calls=25, events=[pure_dp_event(0.01)])
            counts.append(len(acc.events))
            assert acc.spent()[0] <= 1.0 * (1 + 1e-12)
    finally:
        sys.setswitchinterval(old)
    assert counts == [100] * 50


def test_concurrent_charges_of_gaussian_events_stay_within_budget():
    acc = PrivacyAccountant(1.0, 1e-6)
    _spend_concurrently(acc, threads=8, calls=10, events=[gaussian_dp_event(20.0)])
    assert acc.spent()[0] <= 1.0 * (1 + 1e-12)
    with pytest.raises(BudgetExceededError):
        acc.charge(gaussian_dp_event(20.0))  # the budget was filled, not merely approached


def test_concurrent_mixed_charges_stay_within_budget_and_match_a_fresh_composition():
    acc = PrivacyAccountant(1.0, 1e-6)
    _spend_concurrently(acc, threads=4, calls=8, events=[pure_dp_event(0.05), gaussian_dp_event(15.0)])
    assert acc.spent()[0] <= 1.0 * (1 + 1e-12)
    assert acc.spent() == acc.spent(acc.events)
    assert not acc.can_spend(pure_dp_event(0.05)) or not acc.can_spend(gaussian_dp_event(15.0))


def test_charge_records_or_raises_and_records_nothing():
    acc = PrivacyAccountant(1.0)
    acc.charge(pure_dp_event(0.7))
    with pytest.raises(BudgetExceededError, match="exceed"):
        acc.charge(pure_dp_event(0.4))
    assert acc.events == (pure_dp_event(0.7),)
    assert acc.can_spend(pure_dp_event(0.3)) and not acc.can_spend(pure_dp_event(0.31))
    assert np.isclose(acc.remaining(), 0.3)
    assert PrivacyAccountant.spend is PrivacyAccountant.charge  # spend is an alias


def test_events_is_an_immutable_snapshot():
    acc = PrivacyAccountant(1.0)
    acc.charge(pure_dp_event(0.1))
    snapshot = acc.events
    assert isinstance(snapshot, tuple)
    with pytest.raises(AttributeError):
        snapshot.append(pure_dp_event(0.5))  # a tuple: no way to record an event behind the lock
    with pytest.raises(AttributeError):
        snapshot[0].noise_parameter = 1.0  # and its events are frozen: no way to refund budget
    acc.charge(pure_dp_event(0.2))
    assert snapshot == (pure_dp_event(0.1),)  # later charges do not change an earlier snapshot
    assert acc.events == (pure_dp_event(0.1), pure_dp_event(0.2))


def test_budget_cannot_be_changed_after_construction():
    acc = PrivacyAccountant(1.0, 1e-6)
    with pytest.raises(AttributeError):
        acc.epsilon = 10.0
    with pytest.raises(AttributeError):
        acc.delta = 0.5


@pytest.mark.parametrize("delta", [True, False, "0.1", None, 1.0, 1, -1e-9, float("nan"), float("inf"), [0.1]])
def test_delta_must_be_a_real_number_in_0_1(delta):
    with pytest.raises(ValueError, match="delta"):
        PrivacyAccountant(1.0, delta)


@pytest.mark.parametrize("delta", [0, 0.0, 1e-6, np.float64(1e-5), np.float32(0.5)])
def test_valid_deltas_are_accepted(delta):
    assert PrivacyAccountant(1.0, delta).delta == float(delta)


def _malformed_events():
    from dp_accounting import dp_event

    rr = lambda p, k=2: dp_event.RandomizedResponseDpEvent(noise_parameter=p, num_buckets=k)
    gauss = lambda m: dp_event.GaussianDpEvent(noise_multiplier=m)
    return [
        (rr(-0.5), ValueError), (rr(float("nan")), ValueError), (rr(0.0), ValueError), (rr(1.0), ValueError),
        (rr(1.5), ValueError), (rr("0.5"), ValueError), (rr(0.5, 3), ValueError), (rr(5e-324), ValueError),
        (gauss(0.0), ValueError), (gauss(-1.0), ValueError), (gauss(float("nan")), ValueError),
        (gauss(float("inf")), ValueError), (gauss(None), ValueError),
        (dp_event.ComposedDpEvent([pure_dp_event(0.1), gauss(-1.0)]), ValueError),
        (0.5, TypeError), ("eps", TypeError), (None, TypeError),
        (dp_event.LaplaceDpEvent(1.0), TypeError), (dp_event.NonPrivateDpEvent(), TypeError),
        (dp_event.SelfComposedDpEvent(pure_dp_event(0.1), 4), TypeError),  # upstream drops its count for RR
        (dp_event.ComposedDpEvent([pure_dp_event(0.1), dp_event.LaplaceDpEvent(1.0)]), TypeError),
    ]


@pytest.mark.parametrize("case", range(21))
def test_malformed_events_are_refused_and_not_recorded(case):
    cases = _malformed_events()
    assert len(cases) == 21
    event, error = cases[case]
    acc = PrivacyAccountant(1.0, 1e-6)
    for call in (acc.charge, acc.can_spend, lambda e: acc.spent([e])):
        with pytest.raises(error):
            call(event)
    assert acc.events == () and acc.spent() == (0.0, 0.0)


def test_check_accountant():
    acc = PrivacyAccountant(1.0)
    assert check_accountant(acc) is acc
    assert check_accountant(None) is None
    for bad in (1.0, "acc", object(), {"epsilon": 1.0}):
        with pytest.raises(TypeError, match=f"accountant must be a PrivacyAccountant or None, got {type(bad).__name__}"):
            check_accountant(bad)


def test_importing_manifold_dp_does_not_import_dp_accounting():
    code = "import manifold_dp, manifold_dp.privacy, sys; assert 'dp_accounting' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_fixed_seed_with_an_accountant_is_warned():
    import warnings as _w

    from manifold_dp import ReleaseWarning, Sphere, private_frechet_mean
    from manifold_dp.data import sphere_cap

    s, X = Sphere(2), sphere_cap(50, rng=1)
    with pytest.warns(ReleaseWarning, match="fixed seed"):
        private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=0.5, accountant=PrivacyAccountant(1.0), rng=3)
    with _w.catch_warnings():
        _w.simplefilter("error", ReleaseWarning)  # OS entropy, or a seed without an accountant: no warning
        private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=0.5, accountant=PrivacyAccountant(1.0))
        private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=0.5, rng=3)


def test_slack_events_spend_delta_and_are_validated():
    from dp_accounting import dp_event

    from manifold_dp.privacy.accounting import slack_dp_event

    acc = PrivacyAccountant(epsilon=1.0, delta=1e-6)
    acc.charge(dp_event.ComposedDpEvent([gaussian_dp_event(5.0), slack_dp_event(4e-7)]))
    eps_with, delta_with = acc.spent()
    alone = PrivacyAccountant(epsilon=1.0, delta=1e-6)
    alone.charge(gaussian_dp_event(5.0))
    # the Gaussian part is accounted at δ − 4e-7: a larger ε than with the whole δ
    assert delta_with == 1e-6 and eps_with > alone.spent()[0]
    from manifold_dp.privacy.accounting import gaussian_epsilon

    assert abs(eps_with - gaussian_epsilon(5.0, 6e-7)) < 1e-9
    # slack alone beyond the δ budget does not fit; pure releases with slack need δ > 0
    assert not acc.can_spend(slack_dp_event(7e-7))
    assert not PrivacyAccountant(epsilon=1.0).can_spend(slack_dp_event(1e-12))
    pure_only = PrivacyAccountant(epsilon=1.0, delta=1e-9)
    pure_only.charge(dp_event.ComposedDpEvent([pure_dp_event(0.5), slack_dp_event(1e-10)]))
    assert pure_only.spent() == (pytest.approx(0.5), 1e-9)
    from manifold_dp.privacy.accounting import SlackDpEvent

    for bad in (SlackDpEvent(-1e-9), SlackDpEvent(float("nan")), SlackDpEvent(1.0)):
        with pytest.raises(ValueError):
            acc.charge(bad)


@pytest.mark.parametrize("make", [lambda: PrivacyAccountant(10**400), lambda: pure_dp_event(10**400),
                                  lambda: PrivacyAccountant(1.0, 10**400)])
def test_an_integer_too_large_for_a_float_is_a_value_error_naming_the_parameter(make):
    with pytest.raises(ValueError, match=r"(epsilon|delta) must be .*characters"):
        make()


def test_an_accountant_cannot_be_copied_into_another_budget():
    import copy
    import pickle

    acc = PrivacyAccountant(1.0)
    with pytest.raises(TypeError, match="own budget"):
        pickle.dumps(acc)
    with pytest.raises(TypeError, match="own budget"):
        copy.deepcopy(acc)


def test_a_release_that_fails_after_the_budget_check_is_still_charged(monkeypatch):
    S = Sphere(2)
    X = S.random_point(S.origin, 0.2, size=10, rng=0)
    acct = PrivacyAccountant(epsilon=1.0)

    def broken(*args, **kwargs):
        raise RuntimeError("simulated failure after the budget check")

    monkeypatch.setattr(frechet_mean, "certified_frechet_mean", broken)
    with pytest.raises(RuntimeError, match="simulated"):
        private_frechet_mean(X, S, center=S.origin, radius=0.3, epsilon=0.4, accountant=acct)
    assert acct.spent()[0] == pytest.approx(0.4)


def test_concurrent_releases_never_overspend():
    import threading
    S = Sphere(2)
    X = S.random_point(S.origin, 0.2, size=10, rng=0)
    acct = PrivacyAccountant(epsilon=1.0)
    done, barrier = [], threading.Barrier(8)

    def worker():
        barrier.wait()
        for _ in range(20):
            try:
                private_frechet_mean(X, S, center=S.origin, radius=0.3, epsilon=0.01, accountant=acct, rng=0)
                done.append(1)
            except ValueError:
                pass

    pool = [threading.Thread(target=worker) for _ in range(8)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert len(done) <= 100 and acct.spent()[0] <= 1.0 + 1e-12


def _exact_delta_upper(mu: float, eps: float) -> float:
    """An upper bound on δ_μ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) in ball arithmetic (256 bits)."""
    import flint

    flint.ctx.prec = 256
    m, e = flint.arb(mu), flint.arb(eps)
    phi = lambda x: (-x / flint.arb(2).sqrt()).erfc() / 2
    d = phi(-e / m + m / 2) - e.exp() * phi(-e / m - m / 2)
    return min(1.0, float(d.mid() + d.rad()) * (1.0 + 2.0**-50))  # a δ is at most 1


def test_the_gaussian_delta_curve_is_an_upper_bound_of_the_exact_one():
    # where the two logs of the closed form nearly cancel (μ just above SMALL_MU, ε/μ large) float64
    # falls short of the exact δ by up to ~1e-8 relative (δ near 1e-300): the curve is raised by
    # DELTA_FLOAT_ERROR, so the computed δ, the calibration and the accountant's check are upper bounds;
    # 400 (μ, ε) of that regime and 400 of every regime (fixed seed), against ball arithmetic
    rng = np.random.default_rng(12)
    hard = [(mu, b * mu) for mu, b in zip(np.exp(rng.uniform(np.log(1e-3), np.log(3e-2), 400)), rng.uniform(3, 38, 400))]
    wide = list(zip(np.exp(rng.uniform(np.log(1e-4), np.log(30), 400)), np.exp(rng.uniform(np.log(1e-6), np.log(30), 400))))
    checked = 0
    for mu, eps in hard + wide:
        computed = gaussian_delta(1.0 / mu, 1.0, eps)
        if computed < 1e-300:
            continue
        assert computed >= _exact_delta_upper(float(mu), float(eps)), (mu, eps)
        checked += 1
    assert checked > 600
    for eps, delta in zip(np.exp(rng.uniform(np.log(1e-3), np.log(10), 60)), np.exp(rng.uniform(np.log(1e-300), np.log(0.5), 60))):
        sigma = analytic_gaussian_sigma(float(eps), float(delta))
        assert _exact_delta_upper(1.0 / sigma, float(eps)) <= delta, (eps, delta)


def test_a_subnormal_delta_is_refused():
    with pytest.raises(ValueError, match="smallest normal float64"):
        analytic_gaussian_sigma(1.0, 1e-310)
    with pytest.raises(ValueError, match="smallest normal float64"):
        PrivacyAccountant(1.0, 1e-310)
    assert PrivacyAccountant(1.0, 0.0).spent() == (0.0, 0.0)
