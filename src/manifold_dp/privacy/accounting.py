"""Privacy budgets: an accountant that composes releases and refuses one that would overspend.

Pure ε-DP releases compose by adding ε (basic composition). Gaussian releases compose exactly:
mechanisms with noise multipliers ``z_i = σ_i/Δ_i`` together are a Gaussian mechanism with
``z = (Σ z_i⁻²)^(−½)`` (Dong, Roth & Su 2022, μ-GDP: ``μ² = Σ μ_i²``), whose ε at a given δ comes
from the exact curve of Balle & Wang 2018. The total ε is the pure part plus the Gaussian part
at the budget's δ, a valid (ε, δ) guarantee by basic composition of the two groups.
"""

import math
import threading
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from .._validation import _is_real, check_epsilon, check_positive
from .calibration import gaussian_delta


@dataclass(frozen=True)
class PureEvent:
    """An ε-DP release."""

    epsilon: float


@dataclass(frozen=True)
class GaussianEvent:
    """A Gaussian release with noise multiplier ``σ/Δ`` (ℓ2 sensitivity ``Δ``)."""

    noise_multiplier: float


class BudgetExceededError(ValueError):
    """A release would spend more than the accountant's budget."""


def gaussian_epsilon(noise_multiplier, delta):
    """Smallest ε with ``δ_Gauss(ε) ≤ delta`` for a Gaussian mechanism of multiplier ``z``."""
    z = check_positive(noise_multiplier, "noise_multiplier")
    if gaussian_delta(z, 1.0, 0.0) <= delta:
        return 0.0
    f = lambda e: gaussian_delta(z, 1.0, e) - delta
    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
    return float(brentq(f, 0.0, hi, xtol=1e-13))


class PrivacyAccountant:
    """Tracks releases against a budget ``(epsilon, delta)``; ``delta=0`` allows only pure ones.

    ``charge(event)`` atomically checks the budget and records the release, or raises
    ``BudgetExceededError`` and records nothing; ``spend`` is the same method. A release path
    charges *before* it touches the data, so a release that fails afterwards still counts: its
    computation may already have depended on the data. All methods are thread-safe: the check
    and the record happen under one lock, so concurrent releases can never overspend. The
    budget is fixed at construction (read-only ``epsilon`` and ``delta``).
    """

    def __init__(self, epsilon, delta=0.0):
        self._epsilon = check_epsilon(epsilon)
        if not (_is_real(delta) and 0 <= delta < 1):
            raise ValueError(f"delta must be a real number in [0, 1), got {delta!r}")
        self._delta = float(delta)
        self._events = []
        self._lock = threading.Lock()

    epsilon = property(lambda self: self._epsilon, doc="The ε budget (read-only).")
    delta = property(lambda self: self._delta, doc="The δ budget (read-only).")

    def __repr__(self):
        return f"PrivacyAccountant(epsilon={self._epsilon!r}, delta={self._delta!r})"

    @property
    def events(self):
        """The recorded events, as an immutable snapshot (a tuple)."""
        with self._lock:
            return tuple(self._events)

    def spent(self, events=None):
        """``(ε, δ)`` spent by ``events`` (default: the recorded ones)."""
        if events is None:
            with self._lock:
                return self._spent(self._events)
        return self._spent(list(events))

    def remaining(self):
        """ε left in the budget (never negative)."""
        with self._lock:
            return max(self._epsilon - self._spent(self._events)[0], 0.0)

    def can_spend(self, event):
        """Whether ``event`` would fit now (a later ``charge`` may still be refused if others
        charge in between: only ``charge`` is an atomic check-and-record)."""
        _check_event(event)
        with self._lock:
            return self._fits(event)

    def charge(self, event):
        """Record ``event`` if it fits the budget, atomically; otherwise raise
        ``BudgetExceededError`` (or ``TypeError``/``ValueError`` for a malformed event) and
        record nothing."""
        _check_event(event)
        with self._lock:
            if not self._fits(event):
                raise BudgetExceededError(
                    f"this release would exceed the budget epsilon={self._epsilon!r}, delta={self._delta!r} "
                    f"(spent so far: epsilon={self._spent(self._events)[0]:.6g})"
                )
            self._events.append(event)

    spend = charge

    # the helpers below assume the caller holds the lock where it reads self._events
    def _fits(self, event):
        eps, _ = self._spent(self._events + [event])
        return eps <= self._epsilon * (1 + 1e-12)

    def _spent(self, events):
        pure = sum(e.epsilon for e in events if isinstance(e, PureEvent))
        gauss = [e.noise_multiplier for e in events if isinstance(e, GaussianEvent)]
        if not gauss:
            return pure, 0.0
        if self._delta <= 0:
            return np.inf, 0.0
        z = float(np.sum(np.asarray(gauss, dtype=float) ** -2.0) ** -0.5)
        return pure + gaussian_epsilon(z, self._delta), self._delta


def _check_event(event):
    """An event must be one this accountant knows how to compose, with a value that cannot
    refund budget (a negative or NaN ε would)."""
    if isinstance(event, PureEvent):
        if not (_is_real(event.epsilon) and math.isfinite(event.epsilon) and event.epsilon >= 0):
            raise ValueError(f"PureEvent.epsilon must be a finite number >= 0, got {event.epsilon!r}")
    elif isinstance(event, GaussianEvent):
        if not (_is_real(event.noise_multiplier) and event.noise_multiplier > 0):
            raise ValueError(f"GaussianEvent.noise_multiplier must be a number > 0, got {event.noise_multiplier!r}")
    else:
        raise TypeError(f"event must be a PureEvent or a GaussianEvent, got {type(event).__name__}")


def check_accountant(accountant):
    """``accountant`` itself if it is a ``PrivacyAccountant`` or ``None``; otherwise ``TypeError``."""
    if accountant is None or isinstance(accountant, PrivacyAccountant):
        return accountant
    raise TypeError(f"accountant must be a PrivacyAccountant or None, got {type(accountant).__name__}")
