"""The privacy accountant: atomic check-and-spend under threads, validation, immutable snapshots."""

import sys
import threading

import numpy as np
import pytest

from manifold_dp.privacy import BudgetExceededError, GaussianEvent, PrivacyAccountant, PureEvent
from manifold_dp.privacy.accounting import check_accountant


def _spend_concurrently(acc, threads, calls, event):
    barrier = threading.Barrier(threads)

    def worker():
        barrier.wait()  # start together: maximise interleaving of check and record
        for _ in range(calls):
            try:
                acc.spend(event)
            except BudgetExceededError:
                pass

    pool = [threading.Thread(target=worker) for _ in range(threads)]
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
            _spend_concurrently(acc, threads=8, calls=25, event=PureEvent(0.01))
            counts.append(len(acc.events))
            assert acc.spent()[0] <= 1.0 * (1 + 1e-12)
    finally:
        sys.setswitchinterval(old)
    assert counts == [100] * 50


def test_concurrent_charges_of_gaussian_events_stay_within_budget():
    acc = PrivacyAccountant(1.0, 1e-6)
    _spend_concurrently(acc, threads=8, calls=10, event=GaussianEvent(20.0))
    assert acc.spent()[0] <= 1.0 * (1 + 1e-12)
    with pytest.raises(BudgetExceededError):
        acc.charge(GaussianEvent(20.0))  # the budget was filled, not merely approached


def test_charge_records_or_raises_and_records_nothing():
    acc = PrivacyAccountant(1.0)
    acc.charge(PureEvent(0.7))
    with pytest.raises(BudgetExceededError, match="exceed"):
        acc.charge(PureEvent(0.4))
    assert acc.events == (PureEvent(0.7),)
    assert acc.can_spend(PureEvent(0.3)) and not acc.can_spend(PureEvent(0.31))
    assert np.isclose(acc.remaining(), 0.3)
    assert PrivacyAccountant.spend is PrivacyAccountant.charge  # spend is an alias


def test_events_is_an_immutable_snapshot():
    acc = PrivacyAccountant(1.0)
    acc.charge(PureEvent(0.1))
    snapshot = acc.events
    assert isinstance(snapshot, tuple)
    with pytest.raises(AttributeError):
        snapshot.append(PureEvent(0.5))  # a tuple: no way to record an event behind the lock
    acc.charge(PureEvent(0.2))
    assert snapshot == (PureEvent(0.1),)  # later charges do not change an earlier snapshot
    assert acc.events == (PureEvent(0.1), PureEvent(0.2))


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


@pytest.mark.parametrize("event,error", [
    (PureEvent(-0.5), ValueError), (PureEvent(float("nan")), ValueError), (PureEvent(float("inf")), ValueError),
    (GaussianEvent(0.0), ValueError), (GaussianEvent(-1.0), ValueError), (GaussianEvent(float("nan")), ValueError),
    (0.5, TypeError), ("eps", TypeError), (None, TypeError),
])
def test_malformed_events_are_refused_and_not_recorded(event, error):
    acc = PrivacyAccountant(1.0, 1e-6)
    with pytest.raises(error):
        acc.charge(event)
    assert acc.events == ()


def test_check_accountant():
    acc = PrivacyAccountant(1.0)
    assert check_accountant(acc) is acc
    assert check_accountant(None) is None
    for bad in (1.0, "acc", object(), {"epsilon": 1.0}):
        with pytest.raises(TypeError, match=f"accountant must be a PrivacyAccountant or None, got {type(bad).__name__}"):
            check_accountant(bad)
