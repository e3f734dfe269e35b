"""``radius="auto"`` through the release pipeline (``privacy.release``): a private radius, then
the release at it.

Every candidate of a public grid (``privacy.radius_selection``) passes the statistic's stage 2
before the data are read, or is dropped; both parts — the exponential mechanism's ε₁ and an event
that dominates the release's at every kept candidate (``_dominating_event``) — are charged at
once, before the records' distances are read; the radius is drawn (Gumbel-max), then stages 4–5
at that radius (``AutoPlan``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._typing import Array, FloatArray
from .._validation import check_radius
from ..manifolds.base import Manifold
from . import gdp
from . import radius_selection as _selection
from .accounting import pure_dp_event
from .certificate import RadiusSelection
from .public import PublicParams, ignoring_float_errors
from .radius_selection import AutoRadius
from .release import (
    Calibration,
    Plan,
    PrivateRelease,
    ReleaseWarning,
    Statistic,
    _distance_cap,
    _warn,
    build_plan,
    check_round_to,
    check_strict,
    prepared,
    record_distances,
    warn_if_mostly_noise,
)

if TYPE_CHECKING:
    from .accounting import DpEvent

__all__ = ["AutoPlan", "SELECTION_THEOREM", "SELECTION_UTILITY"]

SELECTION_THEOREM = ("McSherry & Talwar 2007, Thm 6 (utility of sensitivity 1: weights exp(ε₁·u/2)·b(g), a public base "
                     "measure ∝ g up to a safe radius, halving per step above it); quantile utility of Smith 2011")
SELECTION_UTILITY = "u(g) = −|#{i : ρ(center, x_i) ≤ g} − q·n|, sensitivity 1 under replace-one; invalid records at distance 0"


def _warn_if_selection_unreliable(auto: AutoRadius, n: int, selection_epsilon: float, log_base: ArrayLike) -> None:
    """``ReleaseWarning`` (public values only) when the exponential mechanism may well pick a
    radius outside the data's range. A candidate beyond every record has utility ``−(1 − q)·n``,
    one below every record ``−q·n``; with a base measure ``b`` the mechanism picks one whose
    utility is below the best by more than ``2(ln(B/b(g*)) + s)/ε₁`` with probability at most
    ``e^−s`` (McSherry & Talwar 2007, Thm 6; ``B = Σ b``, ``g*`` the best candidate), and
    ``b(g*) ≥ min b``; so with ``s = 3`` (5 %) it is reliable when
    ``ε₁·n·min(q, 1 − q) ≥ 2(ln(B/min b) + 3)``. Below that the base measure, which favours larger
    radii, mostly decides: the radius is then likely above the data (a noisier release), seldom
    below them."""
    q = auto.quantile
    w = np.asarray(log_base, dtype=float)
    have = selection_epsilon * n * min(q, 1.0 - q)
    need = 2.0 * (float(np.logaddexp.reduce(w - np.min(w))) + 3.0)
    if have < need:
        _warn(f"radius='auto' is unreliable here: the exponential mechanism over {w.size} candidates may choose a "
              f"radius outside the data's range, most likely a larger one (a noisier release; it needs "
              f"epsilon·budget·n·min(q, 1−q) ≥ {need:.3g}, and {selection_epsilon:g}·{n}·{min(q, 1.0 - q):g} = "
              f"{have:.3g}); use a larger budget, epsilon or n, a quantile nearer 0.5, a shorter grid "
              "(AutoRadius(grid=...)), or give the radius", ReleaseWarning)


def _dominating_event(events: Sequence[DpEvent]) -> DpEvent:
    """One event that charges at least as much as each of ``events`` (the release's at every
    candidate radius), whichever candidate the selection picks.

    Each event is a composition of leaves (``accounting._leaf_events``): pure ε (randomized
    response), Gaussian (μ-GDP) and ``(0, δ)`` slack. Leaves of one kind are ordered by strength —
    ε-DP implies ε'-DP for ε' ≥ ε, μ-GDP implies μ'-GDP for μ' ≥ μ (Dong, Roth & Su 2022, the
    trade-off function ``G_μ`` decreases in μ), ``(0, δ)`` implies ``(0, δ')`` — so the result
    composes, per kind and per position (each event's leaves of that kind sorted from the
    strongest), the weakest leaf of the candidates: each candidate's leaf is dominated by the one
    charged in its place, and composition is monotone in each argument (Dong, Roth & Su 2022, §3:
    ``f ≥ f'``, ``g ≥ g'`` ⟹ ``f ⊗ g ≥ f' ⊗ g'``); a leaf a candidate lacks only adds to the
    charge. No heuristic across kinds: events of different kinds are both charged. For one kind
    with one leaf (a Laplace at every candidate: the same ε₂ by construction) it is the largest."""
    from dp_accounting import dp_event

    from .accounting import SlackDpEvent, _leaf_events

    # per kind: how to rank leaves (larger key = more privacy loss)
    kinds: dict[type, Callable[[DpEvent], float]] = {dp_event.RandomizedResponseDpEvent: lambda e: -e.noise_parameter,
             dp_event.GaussianDpEvent: lambda e: -e.noise_multiplier,
             SlackDpEvent: lambda e: e.delta}
    slots: dict[type, list[DpEvent]] = {}
    for event in events:
        leaves = _leaf_events(event)
        for kind, key in kinds.items():
            mine = sorted((leaf for leaf in leaves if type(leaf) is kind), key=key, reverse=True)
            column = slots.setdefault(kind, [])
            for position, leaf in enumerate(mine):
                if position == len(column):
                    column.append(leaf)
                elif key(leaf) > key(column[position]):
                    column[position] = leaf
    charged = [leaf for kind in kinds for leaf in slots.get(kind, [])]
    return charged[0] if len(charged) == 1 else dp_event.ComposedDpEvent(charged)


def _noise_inflation(kept: Sequence[float], kept_stages: Sequence[tuple[Calibration, float | None]],
                     power: float) -> FloatArray:
    """Each kept candidate's noise per unit of the statistic's scale ``r^power``
    (``Statistic.scale_power``: ``σ/r`` for the mean, ``σ/r²`` for the variance), over the
    smallest: public, from the calibrations. Curvature (``L/h`` near ``r*`` on the sphere) or a
    switch to the restricted law raises it."""
    ratio = np.array([cal.sigma / g**power for g, (cal, _) in zip(kept, kept_stages)])
    return cast(FloatArray, ratio / np.min(ratio))


def _numerical_calibration(manifold: Manifold, mechanism: str) -> bool:
    """Whether the release's calibration at each candidate is a numerical search over quadratures
    (the Riemannian Gaussian off flat spaces: seconds per candidate) — public: the space and the
    mechanism. Its default grid is then ``thinned_grid`` (a public rule, before the data are read)."""
    return mechanism == "riemannian_gaussian" and gdp.profile_method(manifold) != "exact"


def _auto_plan(X: Any, manifold: Manifold, p: PublicParams, round_to: float | str | None, statistic: Statistic) -> AutoPlan:
    """Filter the grid by the public stages, charge both parts, read the distances."""
    auto, center, n = cast(AutoRadius, p.auto), p.center, p.n  # radius='auto': the caller's branch
    given = auto.grid is not None
    grid = np.asarray(auto.grid) if given else _selection.default_grid(manifold, center)
    if not given and _numerical_calibration(manifold, p.mechanism):
        grid = _selection.thinned_grid(grid)
    selection_epsilon = auto.budget * p.epsilon
    release_epsilon = p.epsilon - selection_epsilon
    kept: list[float]
    kept_stages: list[tuple[Calibration, float | None]]
    kept, kept_stages = [], []
    for g in grid:
        try:
            radius = check_radius(manifold, float(g))
            kept_stages.append(statistic.stages(manifold, p, radius, release_epsilon, round_to, warn=False))
            kept.append(radius)
        except (ValueError, ArithmeticError):  # public: this candidate would refuse; drop it
            continue
    where = f"{grid.size} {'given' if given else 'default'} candidate radii" + (
        f" from {grid[0]:.4g} to {grid[-1]:.4g}" if grid.size else "")
    if not kept:
        raise ValueError(f"radius='auto': none of the {where} passes the public checks on {manifold!r} at n={n}, "
                         f"epsilon={release_epsilon:g} for the release (after {selection_epsilon:g} for the radius); "
                         "give a radius, an AutoRadius grid, or a larger epsilon or n")
    if round_to is None:
        check_round_to(None, 0.0)  # the public warning, once
    inflation = _noise_inflation(kept, kept_stages, statistic.scale_power)
    safe = _selection.safe_radius(manifold, kept, given, inflation)
    log_base = _selection.base_log_weights(kept, safe, grid, inflation)
    _warn_if_selection_unreliable(auto, n, selection_epsilon, log_base)
    check_strict(manifold, X, p.strict)
    if p.accountant is not None:  # both parts at once, before the data are read
        from dp_accounting import dp_event

        p.accountant.charge(dp_event.ComposedDpEvent([
            pure_dp_event(selection_epsilon), _dominating_event([cal.measurement.event for cal, _ in kept_stages])]))
    utility = _selection.quantile_utility(record_distances(manifold, X, center, cap=_distance_cap(kept)), kept,
                                          auto.quantile)
    rule = ("as given" if given else "geometric: top·2⁻¹² to just below top = min(r*, float64 reach); "
            "1e-3 to 1e3 where top is infinite")
    note = (f"{where} ({rule}); {len(kept)} pass the public checks (the rest were dropped before the data were read); "
            f"base measure b(g) ∝ (g/s)^{_selection.LARGER_RADIUS_POWER:g} up to s = {safe:.4g}, halving per grid step "
            "above it and divided by the growth of the noise per unit radius there (favours larger radii up to s)")
    return AutoPlan(manifold, statistic, n, auto, tuple(kept), tuple(kept_stages), float(p.epsilon),
                    float(selection_epsilon), note, _selection.selection_log_weights(utility, selection_epsilon, log_base),
                    lambda radius, cal, grid: build_plan(statistic, manifold, p, radius, cal, grid, prepared(
                        manifold, X, center, radius, *statistic.reads(manifold, cal, radius, n))),
                    log_base=log_base)


@dataclass(frozen=True)
class AutoPlan:
    """``radius="auto"``, calibrated at every kept candidate and charged for both parts; the
    selection's weights (data-dependent) stay inside.

    ``select(size)`` draws candidate indices by the exponential mechanism (Gumbel-max);
    ``plan_at(i)`` is the ``Plan`` at candidate ``i`` (built on first use: it reads the
    records); ``draw(size)`` gives ``(radii, releases)``, each pair one complete release with
    its own selection (the audit draws many); ``release(rng)`` is what the public functions
    return. ``candidates`` and ``stages`` (calibration, output grid per candidate) are public."""

    manifold: Manifold
    statistic: Statistic
    n: int
    auto: AutoRadius
    candidates: tuple[float, ...]
    stages: tuple[tuple[Calibration, float | None], ...] = field(repr=False)
    epsilon: float  # the total
    selection_epsilon: float
    grid_note: str
    _log_weights: FloatArray = field(repr=False)
    _build: Callable[[float, Calibration, float | None], Plan] = field(repr=False)  # reads the records
    _plans: dict[int, Plan] = field(repr=False, default_factory=dict)
    log_base: FloatArray | None = field(repr=False, default=None)  # the public base measure over ``candidates``

    def select(self, size: int | None = None, *, rng: RngLike = None) -> Any:
        return _selection.gumbel_select(self._log_weights, size, rng=as_generator(rng))

    def plan_at(self, index: int) -> Plan:
        index = int(index)
        if index not in self._plans:
            cal, grid = self.stages[index]
            self._plans[index] = self._build(self.candidates[index], cal, grid)
        return self._plans[index]

    @ignoring_float_errors
    def draw(self, size: int | None = None, *, rng: RngLike = None) -> tuple[Any, Any]:
        index: Any
        rng = as_generator(rng)
        if size is None:
            index = int(self.select(None, rng=rng))
            return self.candidates[index], self.plan_at(index).draw(None, rng=rng)
        index = np.asarray(self.select(int(size), rng=rng))
        out: Array | None = None
        for i in np.unique(index):
            where = np.flatnonzero(index == i)
            points = np.asarray(self.plan_at(i).draw(where.size, rng=rng))
            out = np.empty((index.size,) + points.shape[1:], dtype=points.dtype) if out is None else out
            out[where] = points
        return np.asarray(self.candidates)[index], out

    def selection_record(self, radius: float) -> RadiusSelection:
        release = self.epsilon - self.selection_epsilon
        delta = self.stages[0][0].measurement.delta
        return RadiusSelection(
            mechanism="exponential mechanism over a public grid (Gumbel-max draw)", theorem=SELECTION_THEOREM,
            utility=SELECTION_UTILITY, epsilon=self.selection_epsilon, release_epsilon=release,
            quantile=self.auto.quantile, grid=self.grid_note, candidates=len(self.candidates), chosen_radius=radius,
            composition=(f"basic composition (sequential): epsilon = {self.selection_epsilon:g} (radius, pure ε) + "
                         f"{release:g} (release at that radius)" + (f"; delta = {delta:g}, the release's" if delta else "")))

    @ignoring_float_errors
    def release(self, *, rng: RngLike = None) -> PrivateRelease:
        """One private release: the radius, then the statistic at it (a ``PrivateRelease``
        whose certificate carries both parts)."""
        rng = as_generator(rng)
        index = int(self.select(None, rng=rng))
        radius, (cal, _) = self.candidates[index], self.stages[index]
        warn_if_mostly_noise(self.manifold, self.statistic, cal.measurement, radius, self.n)  # a function of the private radius
        plan = self.plan_at(index)
        value, acceptance = plan.draw_with_stats(None, rng=rng)
        certificate = dataclasses.replace(plan.certificate(acceptance), epsilon=self.epsilon,
                                          radius_selection=self.selection_record(radius))
        return PrivateRelease(self.statistic.released(value), certificate)
