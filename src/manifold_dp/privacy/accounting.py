"""Privacy budgets: an accountant that composes releases and refuses one that would overspend.

Events. A release is described by a Google ``dp_accounting`` event, built only by this module:

- ``pure_dp_event(ε)``: an ε-DP release of *any* mechanism (a Riemannian Laplace, a KNG, …). It
  is stored as binary randomized response with ``noise_parameter = 2/(1+e^ε)``, whose pair of
  output laws ``(Bern(e^ε/(1+e^ε)), Bern(1/(1+e^ε)))`` is a dominating pair of every ε-DP
  mechanism: the privacy region of any ε-DP mechanism lies inside that of this RR, so composing
  RR bounds the composition of any ε-DP releases (Kairouz, Oh & Viswanath 2015, optimal
  composition Thm 3.3; Murtagh & Vadhan 2016 for heterogeneous ε_i), also mixed with other
  mechanisms (dominating pairs compose: Zhu, Dong & Wang 2022). ``LaplaceDpEvent`` would be
  wrong here: it is the 1-D Laplace law, whose privacy loss is spread over ``[−ε, ε]`` and
  composes better than a general ε-DP release (a Riemannian Laplace on a curved space is not it).
- ``gaussian_dp_event(z)``: a Gaussian release with noise multiplier ``z = σ/Δ``.

Neighbouring relation. Datasets of this library are neighbours when one record is *replaced*
(``NeighboringRelation.REPLACE_ONE``), and ``Δ`` is the replace-one ℓ2 sensitivity. Under
REPLACE_ONE, ``dp_accounting`` models ``GaussianDpEvent(m)`` as the pair ``N(−1, m²)``,
``N(+1, m²)``: a sensitivity of 2. So our multiplier ``z`` is stored as ``GaussianDpEvent(2z)``
(measured with 0.6.0: ``GaussianDpEvent(1)`` gives ε ≈ 9.997 at δ = 1e-5 under REPLACE_ONE,
which is the exact Gaussian ε of ``z = 0.5``, against 4.377 under ADD_OR_REMOVE_ONE).

Upstream bug. ``PLDAccountant.compose(RandomizedResponseDpEvent, count)`` in ``dp_accounting``
0.6.0 ignores ``count`` (so does ``SelfComposedDpEvent`` of one): four RR events of ε = 0.5
composed with ``count=4`` give ε(δ=0) = 0.5, not 2. This module composes every event one at a
time with ``count=1`` and refuses ``SelfComposedDpEvent``.

Spent ε. The ε spent at the budget's δ is the smaller of two upper bounds on the same composed
mechanism, each a valid ``(ε, δ)`` guarantee on its own, so their minimum is one too:
(a) the privacy-loss-distribution (PLD) accountant's ε at δ, with the pessimistic
discretisation of ``dp_accounting`` (a true upper bound, tight up to its grid); (b) basic
composition of two groups: the pure releases, ``Σ ε_i`` at δ = 0, and the Gaussian ones, which
together are one Gaussian mechanism of multiplier ``(Σ z_i⁻²)^(−½)`` (μ-GDP, ``μ² = Σ μ_i²``,
Dong, Roth & Su 2022, Cor. 3.3) whose ε at δ is the exact curve of Balle & Wang 2018 (Thm 8).
(b) keeps δ = 0 budgets exact (two releases of ε = 0.5 spend exactly 1.0; the PLD grid says
1.0002) and is exact for Gaussian releases alone; (a) is smaller for pure releases mixed with
Gaussian ones, and for many pure releases when δ > 0 (optimal composition instead of a sum).
(a) is computed only where it can win: δ > 0 and at least one pure release. A δ = 0 budget
admits no Gaussian release.

Adaptivity. Both bounds are composition theorems for a sequence of releases. Where the
parameters of later releases are chosen from earlier outputs and the budget stops them (a
privacy filter), the results we know cover (b)'s ingredients (basic composition: Rogers, Roth,
Ullman & Vadhan 2016; μ-GDP: Smith & Thakurta 2022), not PLD accounting of heterogeneous
releases. So the accountant is **adaptive by default**: it admits and reports by (b) alone.
``PrivacyAccountant(..., adaptive=False)`` — for a sequence of releases whose parameters are
fixed in advance — admits and reports by the smaller of (a) and (b).

``dp_accounting`` is imported inside the functions that need it: it costs about a second, and
``import manifold_dp`` must stay fast.
"""

from __future__ import annotations

import copy
import math
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from .._validation import _is_real, _shown, check_epsilon, check_positive
from .calibration import gaussian_delta, gaussian_epsilon

__all__ = ["BudgetExceededError", "pure_dp_event", "gaussian_dp_event", "slack_dp_event", "gaussian_epsilon",
           "PrivacyAccountant", "check_accountant", "SlackDpEvent"]

DpEvent: TypeAlias = Any  # a ``dp_accounting`` event (that package has no type information), or a ``SlackDpEvent``
PLD_DISCRETIZATION = 1e-4  # value_discretization_interval of the PLD accountant (its default)
MAX_PURE_EPSILON = 700.0  # 2/(1+e^ε) stays a normal float64 up to here


class BudgetExceededError(ValueError):
    """A release would spend more than the accountant's budget."""


def pure_dp_event(epsilon: float) -> DpEvent:
    """The ``dp_accounting`` event of an ε-DP release of any mechanism:
    ``RandomizedResponseDpEvent(noise_parameter=2/(1+e^ε), num_buckets=2)``.

    Binary randomized response with that parameter reports its input bit with probability
    ``e^ε/(1+e^ε)``; its privacy-loss pair dominates that of every ε-DP mechanism (Kairouz, Oh &
    Viswanath 2015, Thm 3.3; Murtagh & Vadhan 2016), so composing it is a valid composition of
    any ε-DP release, with exactly ε at δ = 0 for one release. ``0 < ε ≤ 700``."""
    epsilon = check_epsilon(epsilon)
    if epsilon > MAX_PURE_EPSILON:
        raise ValueError(f"epsilon must be <= {MAX_PURE_EPSILON:g} to be represented as randomized response, got {epsilon!r}")
    from dp_accounting import dp_event

    tail = math.exp(-epsilon)  # 2e^{-ε}/(1+e^{-ε}) = 2/(1+e^ε), without overflow
    noise = 2.0 * tail / (1.0 + tail)
    # the largest float p that charges at least ε: ε lies in (ε(p⁺), ε(p)], p⁺ the next float above p
    # (an interval of 2.2e-16 for small ε: relative 1e-7 at ε = 1e-9; ``representation_step``)
    while _epsilon_of_noise(noise) < epsilon:
        noise = math.nextafter(noise, 0.0)
    while _epsilon_of_noise(math.nextafter(noise, 1.0)) >= epsilon:
        noise = math.nextafter(noise, 1.0)
    return dp_event.RandomizedResponseDpEvent(noise_parameter=noise, num_buckets=2)


def gaussian_dp_event(noise_multiplier: float) -> DpEvent:
    """The ``dp_accounting`` event of a Gaussian release with noise multiplier ``σ/Δ``, ``Δ`` the
    replace-one ℓ2 sensitivity: ``GaussianDpEvent(2σ/Δ)``, because ``dp_accounting`` models
    REPLACE_ONE Gaussians with a sensitivity of 2 (module docstring)."""
    noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
    if not math.isfinite(2.0 * noise_multiplier):
        raise ValueError(f"noise_multiplier must be a finite number > 0, got {noise_multiplier!r}")
    from dp_accounting import dp_event

    return dp_event.GaussianDpEvent(noise_multiplier=2.0 * noise_multiplier)


@dataclass(frozen=True)
class SlackDpEvent:
    """A ``(0, δ)``-DP part of a release (``slack_dp_event``). ``dp_accounting`` has no event for
    it, so this accountant composes it itself, by adding the ``δ``'s; it may sit inside a
    ``dp_accounting`` ``ComposedDpEvent``."""

    delta: float


def slack_dp_event(delta: float) -> SlackDpEvent:
    """The event of a ``(0, δ)``-DP part of a release: ``SlackDpEvent(δ)``.

    A release whose privacy profile is within an additive ``τ`` of a μ-GDP curve (a numerical
    calibration whose check stops where the profile falls below ``τ``: ``gdp.gdp_mu``) is charged
    as the composition of the Gaussian event and this one with ``δ = τ/(1 − δ_μ(0))``: that pair's
    profile ``δ + (1 − δ)·δ_μ(ε)`` is ``≥ δ_μ(ε) + τ`` for every ``ε ≥ 0``. The accountant adds the
    ``δ``'s of such events to what it spends (basic composition of the ``(0, δ)`` parts)."""
    if not (_is_real(delta) and 0 < delta < 1):
        raise ValueError(f"delta must be a real number in (0, 1), got {_shown(delta)}")
    return SlackDpEvent(float(delta))


def _epsilon_of_noise(p: float) -> float:
    """ε of binary RR with noise parameter ``p``: ``log((2−p)/p)``, accurate for p near 0 and 1."""
    return math.log1p(2.0 * (1.0 - p) / p)


def _pure_epsilon(event: DpEvent) -> float:
    return _epsilon_of_noise(event.noise_parameter)


def representation_step(event: DpEvent) -> float:
    """``ε(p) − ε(p⁺)`` of a pure event (``p⁺`` the float above its noise parameter): the width of
    the interval of ε's that ``pure_dp_event`` represents by the same float. About 2.2e-16 for a
    small ε, whose ``p`` is a float near 1 — larger than the budget's relative ``10⁻¹²`` slack
    for ε below about 1e-4; the accountant admits it on top, up to a relative 10⁻⁹ of the
    event's ε (``_pure_slack``)."""
    p = event.noise_parameter
    return _epsilon_of_noise(p) - _epsilon_of_noise(math.nextafter(p, 1.0))


def _pure_slack(event: DpEvent) -> float:
    """What the budget check allows a pure event beyond its charge: its ``representation_step``,
    at most a relative ``PURE_SLACK`` of its ε (so that many tiny events cannot add up to more)."""
    return min(representation_step(event), PURE_SLACK * _pure_epsilon(event))


def _gaussian_mu(event: DpEvent) -> float:
    """μ = Δ/σ of a Gaussian event (it stores ``2σ/Δ``)."""
    mu: float = 2.0 / event.noise_multiplier
    return mu


def _leaf_events(event: DpEvent) -> list[DpEvent]:
    """The pure and Gaussian events that ``event`` is made of, validated; ``TypeError`` for an
    object that is not an event of this module, ``ValueError`` for a malformed one. The checks
    matter: a negative or NaN parameter would refund budget."""
    from dp_accounting import dp_event

    kind = type(event)
    if kind is dp_event.ComposedDpEvent:
        if not isinstance(event.events, (list, tuple)):
            raise ValueError(f"ComposedDpEvent.events must be a list of events, got {type(event.events).__name__}")
        return [leaf for inner in event.events for leaf in _leaf_events(inner)]
    if kind is dp_event.RandomizedResponseDpEvent:
        p = event.noise_parameter
        if event.num_buckets != 2 or not (_is_real(p) and 0 < p < 1) or not math.isfinite(_pure_epsilon(event)):
            raise ValueError(
                "RandomizedResponseDpEvent must have num_buckets=2 and 0 < noise_parameter < 1 "
                f"(build it with pure_dp_event), got num_buckets={event.num_buckets!r}, noise_parameter={p!r}"
            )
        return [event]
    if kind is dp_event.GaussianDpEvent:
        m = event.noise_multiplier
        if not (_is_real(m) and math.isfinite(m) and m > 0):
            raise ValueError(f"GaussianDpEvent.noise_multiplier must be a finite number > 0, got {m!r}")
        return [event]
    if kind is SlackDpEvent:
        if not (_is_real(event.delta) and 0 < event.delta < 1):
            raise ValueError(f"SlackDpEvent.delta must be a real number in (0, 1), got {event.delta!r}")
        return [event]
    raise TypeError(
        "event must be built by pure_dp_event, gaussian_dp_event or slack_dp_event (or be a ComposedDpEvent of such events), "
        f"got {kind.__name__}"
    )


GAUSSIAN_DELTA_SLACK = 1e-9  # relative; the δ curve's float accuracy at small ε (_Composition.fits)
PURE_SLACK = 1e-9  # relative, at most: a pure event's representation step (_pure_slack)


class _Composition:
    """Recorded releases in the forms the two bounds at ``delta`` need: the pure ε's with their
    composed PLD, and the Gaussian μ²'s. Never changed once built; ``extended`` returns a new one.

    The Gaussian releases enter the PLD as one Gaussian of ``μ² = Σ μ_i²``: their composition
    *is* that Gaussian (independent shifts ``μ_i`` along orthogonal axes), so this is exact, and
    it costs one Gaussian PLD per check instead of one composition per recorded release. Bound
    (a) is skipped where it provably cannot beat (b) (``test_skipped_pld_bound_never_wins``):
    at δ = 0 (a composition of RR has privacy loss ``Σ ε_i`` with positive probability, and a
    Gaussian's is unbounded) and when every release is Gaussian ((b) is then exact)."""

    def __init__(self, delta: float, pure: Iterable[float] = (), mu_squares: Iterable[float] = (), pure_pld: Any = None,
                 tight: bool = False, slack: Iterable[float] = (), pure_slack: Iterable[float] = ()) -> None:
        self.delta, self.pure, self.mu_squares, self._pure_pld = delta, tuple(pure), tuple(mu_squares), pure_pld
        self.slack = tuple(slack)  # the δ's of (0, δ) parts (slack_dp_event), composed by summing
        self.rest = delta - math.fsum(self.slack)  # the δ left for the pure and Gaussian parts
        self.tight = tight  # whether bound (a) may be used (releases fixed in advance)
        self.pure_slack = tuple(pure_slack)  # each pure release's _pure_slack
        self._spent: tuple[float, float] | None = None  # computed on first use: bound (a) can take a second for a large total μ

    def extended(self, leaves: Sequence[DpEvent]) -> _Composition:
        from dp_accounting import dp_event

        pure, mu_squares, pure_pld, slack = list(self.pure), list(self.mu_squares), None, list(self.slack)
        pure_slack = list(self.pure_slack)
        for leaf in leaves:
            if isinstance(leaf, SlackDpEvent):
                slack.append(leaf.delta)
                continue
            if isinstance(leaf, dp_event.GaussianDpEvent):
                mu_squares.append(_gaussian_mu(leaf) ** 2)
                continue
            pure.append(_pure_epsilon(leaf))
            pure_slack.append(_pure_slack(leaf))
            if self.delta > 0 and self.tight:
                pure_pld = self._copied_pld() if pure_pld is None else pure_pld
                pure_pld.compose(leaf, count=1)  # one at a time: upstream ignores count for RR events
        return _Composition(self.delta, pure, mu_squares, self._pure_pld if pure_pld is None else pure_pld, self.tight, slack,
                            pure_slack)

    def _copied_pld(self) -> Any:
        from dp_accounting import NeighboringRelation
        from dp_accounting.pld import PLDAccountant

        if self._pure_pld is None:
            return PLDAccountant(NeighboringRelation.REPLACE_ONE, value_discretization_interval=PLD_DISCRETIZATION)
        return copy.deepcopy(self._pure_pld)

    def pld_epsilon(self) -> float:
        """Bound (a): the PLD accountant's ε at ``delta`` for all releases (δ > 0, some pure)."""
        pld = self._copied_pld()
        if self.mu_squares:
            from dp_accounting import dp_event

            mu = math.sqrt(math.fsum(self.mu_squares))
            pld.compose(dp_event.GaussianDpEvent(noise_multiplier=2.0 / mu), count=1)
        return float(pld.get_epsilon(self.rest)) if self.rest > 0 else math.inf

    def basic_epsilon(self) -> float:
        """Bound (b): ``Σ ε_i`` plus the exact ε at ``delta`` of the Gaussians' μ-GDP."""
        pure = math.fsum(self.pure)
        if self.rest < 0 or (self.mu_squares and self.rest <= 0):
            return math.inf
        if not self.mu_squares:
            return pure
        return pure + gaussian_epsilon(1.0 / math.sqrt(math.fsum(self.mu_squares)), self.rest)

    def spent(self) -> tuple[float, float]:
        """``(ε, δ')``: the smaller ε of the two bounds; ``δ' = 0`` where it holds at δ = 0
        (only pure releases, bound (b)), else ``delta``. Not thread-safe: callers share a
        composition only under the accountant's lock."""
        if self._spent is None:
            self._spent = self._smaller_bound()
        return self._spent

    def fits(self, limit: float) -> bool:
        """Whether the spent ε is ``≤ limit``; bound (b) decides alone when it fits. For the
        Gaussian part, also where its δ at the ε that bound (b) leaves it is within relative
        ``GAUSSIAN_DELTA_SLACK`` of ``rest``: at small ε the δ curve is so flat that float64 resolves
        its ε only to a relative 1e-11–1e-4, and the Gaussian calibrated for exactly the budget
        (its δ ≤ ``delta`` as the calibration computes it) would otherwise be refused (the computed
        curve is an upper bound on the exact one wherever δ is a normal float:
        ``calibration.gaussian_delta``)."""
        return self.basic_epsilon() <= limit or self._gaussian_fits_in_delta(limit) or self.spent()[0] <= limit

    def _gaussian_fits_in_delta(self, limit: float) -> bool:
        left = limit - math.fsum(self.pure)
        if not (self.mu_squares and self.rest > 0 and left > 0):
            return False
        mu = math.sqrt(math.fsum(self.mu_squares))
        return gaussian_delta(1.0 / mu, 1.0, left) <= self.rest * (1.0 + GAUSSIAN_DELTA_SLACK)

    def _smaller_bound(self) -> tuple[float, float]:
        if not (self.pure or self.mu_squares or self.slack):
            return 0.0, 0.0
        basic = (self.basic_epsilon(), self.delta if (self.mu_squares or self.slack) else 0.0)
        if self.rest <= 0 or not self.pure or not self.tight:
            return basic
        pld_epsilon = self.pld_epsilon()
        return (pld_epsilon, self.delta) if pld_epsilon < basic[0] else basic


class PrivacyAccountant:
    """Tracks releases against a budget ``(epsilon, delta)``; ``delta=0`` allows only pure ones.

    ``charge(event)`` atomically checks the budget and records the release, or raises
    ``BudgetExceededError`` and records nothing; ``spend`` is the same method. Events come from
    ``pure_dp_event`` and ``gaussian_dp_event`` (a ``ComposedDpEvent`` of them is charged as a
    whole and recorded as its parts); ``private_frechet_mean`` and ``private_frechet_variance``
    charge their own. A release path charges *before* it touches the data, so a release that
    fails afterwards still counts: its computation may already have depended on the data. All
    methods are thread-safe: the check and the record happen under one lock, so concurrent
    releases can never overspend. The budget is fixed at construction. Theory:
    docs/theory.md §4 ("Privacy events and composition").

    Parameters
    ----------
    epsilon : float
        The ε budget, finite and ``> 0``.
    delta : float
        The δ budget in ``[0, 1)``; with ``0`` (default) only pure ε-DP releases are admitted.
    adaptive : bool
        ``True`` (default): releases may be chosen from earlier outputs, and the spent ε is basic
        composition of the pure releases plus μ-GDP of the Gaussian ones, valid as a privacy
        filter. ``False``: the sequence is fixed in advance, and the spent ε is the smaller of that
        and the privacy-loss-distribution bound (module docstring).

    Attributes
    ----------
    epsilon : float
        The ε budget (read-only).
    delta : float
        The δ budget (read-only).
    events : tuple
        The recorded ``dp_accounting`` events.

    Raises
    ------
    ValueError
        If ``epsilon`` is not finite and positive or ``delta`` is not in ``[0, 1)``.
    TypeError
        If ``adaptive`` is not a bool.

    Examples
    --------
    >>> from manifold_dp import PrivacyAccountant
    >>> from manifold_dp.privacy import pure_dp_event
    >>> acc = PrivacyAccountant(epsilon=1.0)
    >>> acc.charge(pure_dp_event(0.5))
    >>> spent_epsilon, spent_delta = acc.spent()  # ε is rounded up by a few ulps, never down
    >>> round(spent_epsilon, 9), spent_delta, round(acc.remaining(), 9)
    (0.5, 0.0, 0.5)
    >>> acc.can_spend(pure_dp_event(0.75))
    False
    """

    def __init__(self, epsilon: float, delta: float = 0.0, *, adaptive: bool = True) -> None:
        self._epsilon = check_epsilon(epsilon)
        if not (_is_real(delta) and 0 <= delta < 1):
            raise ValueError(f"delta must be a real number in [0, 1), got {_shown(delta)}")
        if 0 < delta < sys.float_info.min:
            raise ValueError(f"delta must be 0 or at least {sys.float_info.min!r} (the smallest normal float64: below it "
                             f"the Gaussian δ curve cannot be computed to a known accuracy), got {_shown(delta)}")
        if not isinstance(adaptive, bool):
            raise TypeError(f"adaptive must be True or False, got {type(adaptive).__name__}")
        self._delta = float(delta)
        self._adaptive = adaptive
        self._events: list[DpEvent] = []
        self._composition = _Composition(self._delta, tight=not adaptive)
        self._lock = threading.Lock()

    epsilon = property(lambda self: self._epsilon, doc="The ε budget (read-only).")
    delta = property(lambda self: self._delta, doc="The δ budget (read-only).")

    def __repr__(self) -> str:
        return f"PrivacyAccountant(epsilon={self._epsilon!r}, delta={self._delta!r}, adaptive={self._adaptive!r})"

    def __getstate__(self) -> Any:
        # A copy (another process's, or a deep copy) would spend a budget of its own, and the
        # releases it admits would never reach this one: refuse rather than overspend.
        raise TypeError("a PrivacyAccountant cannot be pickled or copied (e.g. sent to joblib workers by "
                        "GridSearchCV(n_jobs>1)): the copy would spend its own budget, not the shared one; run the "
                        "releases in one process (n_jobs=1), or give each process an accountant for its share")

    @property
    def events(self) -> tuple[DpEvent, ...]:
        """The recorded events, as an immutable snapshot (a tuple of immutable events)."""
        with self._lock:
            return tuple(self._events)

    def spent(self, events: Iterable[DpEvent] | None = None) -> tuple[float, float]:
        """The privacy spent, at the budget's δ.

        Parameters
        ----------
        events : iterable of dp_accounting events, optional
            Events to evaluate instead of the recorded ones (nothing is recorded).

        Returns
        -------
        tuple of (float, float)
            ``(ε, δ)``; δ is 0 when the ε holds as pure DP (only pure releases).
        """
        if events is None:
            with self._lock:
                return self._composition.spent()
        leaves = [leaf for event in events for leaf in _leaf_events(event)]
        return _Composition(self._delta, tight=not self._adaptive).extended(leaves).spent()

    def remaining(self) -> float:
        """ε left in the budget (never negative), as a float."""
        with self._lock:
            return max(self._epsilon - self._composition.spent()[0], 0.0)

    def can_spend(self, event: DpEvent) -> bool:
        """Whether ``event`` would fit now, as a bool; nothing is recorded (a later ``charge`` may
        still be refused if others charge in between: only ``charge`` is an atomic
        check-and-record). Raises like ``charge`` for a malformed event."""
        leaves = _leaf_events(event)
        with self._lock:
            return self._extended_if_fits(leaves) is not None

    def charge(self, event: DpEvent) -> None:
        """Record ``event`` if it fits the budget, atomically; otherwise record nothing.

        Parameters
        ----------
        event : dp_accounting event
            From ``pure_dp_event`` or ``gaussian_dp_event``, or a ``ComposedDpEvent`` of them.

        Raises
        ------
        BudgetExceededError
            If the composition with ``event`` would exceed the budget.
        TypeError
            If ``event`` is not an event of this module.
        ValueError
            If ``event`` is malformed (e.g. a negative or NaN parameter, which would refund budget).
        """
        leaves = _leaf_events(event)
        with self._lock:
            composition = self._extended_if_fits(leaves)
            if composition is None:
                raise BudgetExceededError(
                    f"this release would exceed the budget epsilon={self._epsilon!r}, delta={self._delta!r} "
                    f"(spent so far: epsilon={self._composition.spent()[0]:.6g})"
                )
            self._composition = composition
            self._events.extend(leaves)

    spend = charge

    def _extended_if_fits(self, leaves: Sequence[DpEvent]) -> _Composition | None:
        """The composition with ``leaves`` added if it fits the budget, else ``None``; the
        caller holds the lock."""
        composition = self._composition.extended(leaves)
        # slack: relative 10⁻¹² for float rounding, and each pure event's representation step up to a
        # relative 10⁻⁹ of it (a pure release asking for exactly the budget is admitted for ε ≳ 2e-7;
        # docs/theory.md §4)
        limit = self._epsilon * (1 + 1e-12) + math.fsum(composition.pure_slack)
        return composition if composition.fits(limit) else None


def check_accountant(accountant: object) -> PrivacyAccountant | None:
    """``accountant`` itself if it is a ``PrivacyAccountant`` or ``None``; otherwise ``TypeError``."""
    if accountant is None or isinstance(accountant, PrivacyAccountant):
        return accountant
    raise TypeError(f"accountant must be a PrivacyAccountant or None, got {type(accountant).__name__}")
