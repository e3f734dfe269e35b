"""Privacy budgets: an accountant that composes releases and refuses one that would overspend.

Pure ε-DP releases compose by adding ε (basic composition). Gaussian releases compose exactly:
mechanisms with noise multipliers ``z_i = σ_i/Δ_i`` together are a Gaussian mechanism with
``z = (Σ z_i⁻²)^(−½)`` (Dong, Roth & Su 2022, μ-GDP: ``μ² = Σ μ_i²``), whose ε at a given δ comes
from the exact curve of Balle & Wang 2018. The total ε is the pure part plus the Gaussian part
at the budget's δ, a valid (ε, δ) guarantee by basic composition of the two groups.
"""

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from .._validation import check_epsilon, check_positive
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

    ``spend(event)`` records a release or raises ``BudgetExceededError`` and records nothing.
    """

    def __init__(self, epsilon, delta=0.0):
        self.epsilon = check_epsilon(epsilon)
        if not (isinstance(delta, (int, float)) and 0 <= delta < 1):
            raise ValueError(f"delta must be a number in [0, 1), got {delta!r}")
        self.delta = float(delta)
        self._events = []

    @property
    def events(self):
        return tuple(self._events)

    def spent(self, events=None):
        """``(ε, δ)`` spent by ``events`` (default: the recorded ones)."""
        events = self._events if events is None else events
        pure = sum(e.epsilon for e in events if isinstance(e, PureEvent))
        gauss = [e.noise_multiplier for e in events if isinstance(e, GaussianEvent)]
        if not gauss:
            return pure, 0.0
        if self.delta <= 0:
            return np.inf, 0.0
        z = float(np.sum(np.asarray(gauss) ** -2.0) ** -0.5)
        return pure + gaussian_epsilon(z, self.delta), self.delta

    def remaining(self):
        return max(self.epsilon - self.spent()[0], 0.0)

    def can_spend(self, event):
        eps, _ = self.spent(self._events + [event])
        return eps <= self.epsilon * (1 + 1e-12)

    def spend(self, event):
        if not self.can_spend(event):
            raise BudgetExceededError(
                f"this release would exceed the budget epsilon={self.epsilon!r}, delta={self.delta!r} "
                f"(spent so far: epsilon={self.spent()[0]:.6g})"
            )
        self._events.append(event)
