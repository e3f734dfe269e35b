"""``center="auto"``: a private ball, then the release in it (docs/private_ball.md).

In the style of CoinPress (Biswas, Dong, Kamath & Ullman, NeurIPS 2020) and the private ranges
of Karwa & Vadhan (ITCS 2018), brought to manifolds. Stages, every one fixed by public values
(``n``, ε, δ, the manifold, ``AutoCenter``, ``AutoRadius``) before the data are read:

1. **centre** (``ball_first_stage``): a rough private centre from a statistic whose sensitivity
   needs no ball (sphere: the extrinsic mean; Kendall: the top eigenvector of the mean
   ``ww*``; SPD: the mean of clipped logs; hyperbolic: clipped ``log_e0``; Euclidean: the clipped
   mean; the flat-chart ones shrunk towards the origin by a James–Stein factor, post-processing),
   share ``budget`` (0.2) of ε;
2. ``rounds`` times (default 1; 2 under (ε, δ) where the first stage works in a bounded chart,
   ``_resolve``): a **radius** around the current centre — the exponential mechanism over a
   public grid with the quantile utility (``radius_selection``), a base measure that mildly
   favours smaller radii (``ball_log_weights``), or under (ε, δ) with Gaussian stages a noisy
   binary search (``radius_selection.noisy_binary_search``), share ``radius_budget`` (0.1) — and,
   except in the last round, a **re-centring** release at that radius (share ``recentre_budget``), clamped back into
   the first stage's safe region;
3. the **release** with the chosen mechanism at the final ``(centre, radius)`` with the rest of ε.

Small ``n·ε``: when the exponential mechanism could pick a radius below every record with
probability above about 5 % (``ε_r·n·q/2 < ln G + 3 + 2``, public), or the search's count noise
is too large (``search_is_reliable``), the radius stage is replaced by the public fallback
``fallback_index`` and its share goes to the centre. A given radius skips the radius stages. With
``delta`` and a Gaussian mechanism the centre, the radius searches, the re-centring rounds and
the release are Gaussian stages that share one μ-GDP budget (``gaussian_stage_shares``);
otherwise the shares add up by basic composition, the radii are exponential mechanisms and the
rounds are K-norm. The accountant is
charged once, for every stage's event, before the records are read; the stages' outputs are each
post-processing of a mechanism's output, and every later stage is a mechanism for every value of them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._typing import Array, FloatArray
from .._validation import _is_real, check_delta, check_epsilon, check_n, check_radius
from ..manifolds.base import Manifold
from ..records import is_dask
from . import radius_selection as _selection
from .accounting import gaussian_dp_event, pure_dp_event
from .ball_first_stage import first_stage, supports
from .ball_refine import round_scale, round_sensitivity, tangent_round
from .calibration import gaussian_noise_ratio, shared_gaussian_shares
from .certificate import BallStage, CenterSelection, MechanismSelection
from .measurements import gaussian_scale
from .public import PublicParams, ignoring_float_errors

if TYPE_CHECKING:
    from .accounting import DpEvent, PrivacyAccountant
    from .ball_first_stage import FirstStage
    from .release import Calibration, Plan, PrivateRelease

__all__ = ["AutoCenter", "auto_center", "AutoBallExpectation", "expected_auto_ball", "FallbackRelease", "expected_fallback",
           "BallPlan", "plan_private_ball", "ball_grid", "ball_log_weights", "fallback_index",
           "BALL_GRID_POINTS", "BALL_GRID_SPAN"]

BALL_GRID_POINTS = 64  # ratio 1.116 between neighbours: the release error grows with the radius (benchmarks/private_ball.py)
BALL_GRID_SPAN = 2.0**-10  # candidates from top·2^-10 to top
BALL_GRID_TOP = 1.0 - 2.0**-10
MAX_CURVATURE_FACTOR = 2.0  # candidates whose release sensitivity is at most 2× the flat 2r/n (L/h ≤ 2 on the sphere)
SMALLER_RADIUS_TILT = 2.0  # nats between the smallest and the largest candidate (ball_log_weights)
RELIABILITY_MARGIN = 3.0  # ln(1/0.05): a radius below every record with probability ≲ 5 %
UNSUPPORTED_MECHANISMS = ("riemannian_gaussian",)  # its charge depends on Δ's curvature profile at the centre
ROUND_THEOREM = "ℓ2 K-norm mechanism (Hardt & Talwar 2010): density ∝ exp(−‖z − T‖/σ), σ = 2R/(nε)"
GAUSSIAN_ROUND_THEOREM = ("Gaussian mechanism N(T, σ²I), σ = zΔ with a public multiplier z: 1/z-GDP (Dong, Roth & Su 2022, "
                          "Thm 2.7), composed with the other Gaussian stages as one μ-GDP mechanism")
DEFAULT_SHARES: dict[int, dict[str, float]] = {  # rounds → shares (docs/private_ball.md, "Why these shares")
    1: {"budget": 0.2, "radius_budget": 0.1, "recentre_budget": 0.1},
    2: {"budget": 0.15, "radius_budget": 0.05, "recentre_budget": 0.1},
}
# radius="auto": the exponential mechanism aims at the 0.8-quantile, then takes the next candidate (×1.116): about
# the 0.9-quantile, with twice the 0.9-quantile's penalty (ε·(1 − q)·n/2) for a radius beyond every record, where
# distances concentrate in high dimension (docs/private_ball.md, "Stage 2: the radius")
BALL_QUANTILE = 0.8
BALL_HEADROOM = 1
# under (ε, δ) with Gaussian stages the radius is a noisy binary search (radius_selection.noisy_binary_search): its
# count error is a few records, not the exponential mechanism's ~2 ln G/ε_r, so it aims at the 0.9-quantile itself
SEARCH_QUANTILE = 0.9
SEARCH_HEADROOM = 0
SEARCH_RELIABILITY = 2.0  # standard deviations of the count noise (search_is_reliable)
SEARCH_THEOREM = ("Gaussian mechanism on counts of sensitivity 1, K = ⌈log₂ G⌉ adaptive steps of σ = √K·z: 1/z-GDP "
                  "(Dong, Roth & Su 2022, Thm 2.7 and Cor. 3.3), composed with the other Gaussian stages as one μ-GDP "
                  "mechanism")
EM_THEOREM = "McSherry & Talwar 2007, Thm 6, quantile utility (Smith 2011), base measure ∝ e^(−2j/(G−1)) (smaller radii)"


@dataclass(frozen=True)
class AutoCenter:
    """How ``center="auto"`` builds the private ball (``center="auto"`` is ``AutoCenter()``).

    Every ``None`` is resolved before the data are read (``resolved``): one round with shares 0.2
    (centre) / 0.1 (radius); with ``rounds ≥ 2``, 0.15 / 0.05 per radius / 0.1 per re-centring
    round. The release gets the rest of ε. ``rounds=None`` with no share given is two rounds under
    (ε, δ) where the first stage works in a bounded chart (SPD, hyperbolic, Euclidean), the
    radius searches can run at two rounds' shares and the round is expected to bring the centre
    closer (``_resolve``), one otherwise. A round pays where the first stage's
    error (``manifold-dp plan`` prints it) is larger than the data's spread; measured in
    docs/private_ball.md.

    Parameters
    ----------
    budget : float or None
        Share of ε for the first stage (the rough centre).
    radius_budget : float or None
        Share of ε for each private radius (with ``radius="auto"`` the exponential mechanism aims
        at the 0.8-quantile and takes the next candidate up, ``BALL_QUANTILE``, and a noisy binary
        search at the 0.9-quantile, ``SEARCH_QUANTILE``; with an ``AutoRadius``, its ``quantile``
        and ``grid`` apply and its ``budget`` does not).
    rounds : int or None
        Private radii (default: 1, or 2 as above); each but the last is followed by a re-centring round at that
        radius: the noisy mean of the clipped logs at the current centre (``ball_refine``; Gaussian
        in the shared μ-GDP budget of an (ε, δ) release, K-norm otherwise).
    recentre_budget : float or None
        Share of ε for each re-centring round (``rounds ≥ 2``).
    bound : float or None
        The first stage's public bound: SPD ``b`` (``|log λ| ≤ b``, default 5), hyperbolic ``B``
        (``‖log_e0 x‖ ≤ B``, default 4), Euclidean ``B`` (``‖x‖ ≤ B``, default 10). Ignored on the
        sphere and Kendall shapes, which need none.
    """

    budget: float | None = None
    radius_budget: float | None = None
    rounds: int | None = None
    recentre_budget: float | None = None
    bound: float | None = None

    def __post_init__(self) -> None:
        for name in ("budget", "radius_budget", "recentre_budget"):
            value = getattr(self, name)
            if value is None:
                continue
            if not _is_real(value) or not 0.0 < value < 1.0:
                raise ValueError(f"AutoCenter.{name} must be a number in (0, 1) or None, got {value!r}")
            object.__setattr__(self, name, float(value))
        if self.rounds is not None:
            if isinstance(self.rounds, bool) or not isinstance(self.rounds, (int, np.integer)) or not 1 <= self.rounds <= 8:
                raise ValueError(f"AutoCenter.rounds must be an integer in [1, 8] or None, got {self.rounds!r}")
            object.__setattr__(self, "rounds", int(self.rounds))
        if self.bound is not None and (not _is_real(self.bound) or not 0.0 < self.bound < math.inf):
            raise ValueError(f"AutoCenter.bound must be a finite number > 0 or None, got {self.bound!r}")

    def resolved(self) -> AutoCenter:
        """Every ``None`` filled in: one round unless asked, and the default shares of that many
        rounds (``DEFAULT_SHARES``)."""
        rounds = 1 if self.rounds is None else self.rounds
        shares = DEFAULT_SHARES[min(rounds, 2)]
        return dataclasses.replace(self, rounds=rounds, **{k: v if getattr(self, k) is None else getattr(self, k)
                                                           for k, v in shares.items()})


def radius_is_reliable(epsilon: float, n: int, quantile: float, grid_size: int) -> bool:
    """Whether the exponential mechanism at ``epsilon`` can tell the data's scale (public): it picks
    a radius below every record with probability below about 5 % when
    ``ε·n·q/2 ≥ ln G + 3 + 2`` (McSherry & Talwar's bound with ``e^−3`` plus the base measure's tilt)."""
    return epsilon * n * quantile / 2.0 >= math.log(grid_size) + RELIABILITY_MARGIN + SMALLER_RADIUS_TILT


def auto_center(center: object) -> AutoCenter | None:
    """The ``AutoCenter`` that ``center`` asks for, or ``None`` for a point."""
    if isinstance(center, AutoCenter):
        return center
    if isinstance(center, str) and center == "auto":
        return AutoCenter()
    return None


def ball_grid(manifold: Manifold, stage: FirstStage) -> FloatArray:
    """The public candidate radii around a centre of the first stage's safe region:
    ``BALL_GRID_POINTS`` geometric points from ``top·2^-10`` to ``top·(1 − 2^-10)``, where ``top``
    is ``r*`` (sphere, Kendall), ``max_reach − B`` (hyperbolic), or ``2b√k`` / ``2B`` (SPD: the
    distance between two points of the safe region in either metric, ``‖log c‖_F + ‖log x‖_F``;
    Euclidean: two points of the ball ``B``)."""
    top = float(manifold.assumption_radius)
    if np.isfinite(manifold.max_reach):
        top = min(top, float(manifold.max_reach) - float(cast(float, manifold.exp_coordinate_offset(stage.reference))))
    if math.isinf(top):
        top = stage.diameter  # spaces without a finite r* have a bound
    return np.geomspace(top * BALL_GRID_SPAN, top * BALL_GRID_TOP, BALL_GRID_POINTS)


def round_grid(manifold: Manifold, stage: FirstStage, grid: FloatArray, given: object = None) -> FloatArray:
    """The candidate radii of a re-centring round (``ball_refine``), which has no curvature factor
    and so is not held below ``r*``: on the sphere and Kendall shapes the release's grid stretched up
    to ``(1 − 2^-10)`` of the injectivity radius (``πR``, ``π/2``), so that a first-stage centre
    farther than ``r*`` from the records still finds a radius that reaches them; elsewhere (and
    for a grid the user gave) the release's grid."""
    top = float(manifold.injectivity_radius)
    if given is not None or not math.isfinite(top) or top <= float(grid[-1]):
        return grid
    return np.geomspace(top * BALL_GRID_SPAN, top * BALL_GRID_TOP, BALL_GRID_POINTS)


def fallback_index(manifold: Manifold, radii: Sequence[float], calibrations: Sequence[Calibration]) -> int:
    """The radius when ``n·ε`` is too small to choose one (public values only): the largest
    candidate whose release is not mostly noise (``expected_noise_distance ≤ radius``: it clips
    least among those where the data can still move the release); if there is none, the smallest
    (then no ball lets the data speak, and a small one keeps the release near the first stage's
    centre, which shrinks towards the origin when it is noise)."""
    from .release import expected_noise_distance

    useful = [j for j, (r, cal) in enumerate(zip(radii, calibrations))
              if expected_noise_distance(manifold, cal.measurement) <= r]
    return useful[-1] if useful else 0


def _fallback(manifold: Manifold, radii: Sequence[float],
              calibrations: Sequence[tuple[Calibration, float | None]]) -> tuple[int, float]:
    """``fallback_index`` of the candidates and the expected noise distance of its release."""
    from .release import expected_noise_distance

    j = fallback_index(manifold, radii, [cal[0] for cal in calibrations])
    return j, float(expected_noise_distance(manifold, calibrations[j][0].measurement))


def ball_log_weights(utility: ArrayLike, epsilon: float) -> FloatArray:
    """``ε·u/2 − SMALLER_RADIUS_TILT·j/(G − 1)``: the exponential mechanism for a utility of
    sensitivity 1 (ε-DP, McSherry & Talwar 2007, Thm 6) with a public base measure
    ``∝ e^(−2j/(G−1))`` that mildly favours smaller radii: every candidate beyond the farthest
    record has the same utility, and without it the draw would be uniform over them (up to ``top``,
    where the release's noise is largest). Where the utility is flat because there are too few
    records to tell, the radius stage is not run at all (``reliable``): ``fallback_index`` is
    used. A base measure does not enter the privacy loss (``radius_selection``)."""
    u = np.asarray(utility, float)
    return 0.5 * epsilon * u - SMALLER_RADIUS_TILT * np.arange(u.size) / max(u.size - 1, 1)


def _shares(ac: AutoCenter, radius_private: bool, reliable: bool) -> tuple[float, list[float], list[float], float]:
    """``(centre, [radius per round], [recentre per round], release)`` shares of ε (public), for a
    ``resolved`` ``AutoCenter``."""
    rounds, budget = cast(int, ac.rounds), cast(float, ac.budget)
    radius_budget, recentre_budget = cast(float, ac.radius_budget), cast(float, ac.recentre_budget)
    radius = [radius_budget if radius_private and reliable else 0.0] * rounds
    recentre = [recentre_budget] * (rounds - 1)
    centre = budget + (radius_budget * rounds if radius_private and not reliable else 0.0)
    release = 1.0 - centre - sum(radius) - sum(recentre)
    if not release > 0.05:
        raise ValueError(f"center='auto': the stages' shares leave {release:.3g} of epsilon for the release; lower "
                         "AutoCenter.budget, radius_budget, recentre_budget or rounds")
    return centre, radius, recentre, release


def gaussian_stage_shares(shares: tuple[float, list[float], list[float], float], epsilon: float,
                          delta: float, radius_gaussian: bool = False) -> tuple[float, list[float], list[float], float] | None:
    """The shares of ε when the centre, the re-centring rounds and the release — and, with
    ``radius_gaussian``, the private radii (``noisy_binary_search``) — are Gaussian mechanisms
    (analytic calibration), from public values only. Gaussians compose exactly as one of
    ``μ² = Σ μᵢ²`` (μ-GDP; Dong, Roth & Su 2022, Thm 3.2 and Cor. 3.3, adaptive composition),
    so instead of splitting ``(ε, δ)`` between them by basic composition they split one Gaussian
    budget (``calibration.shared_gaussian_shares``): the ε left by any pure radius stages (basic
    composition with them, the accountant's adaptive bound; all of ε when the radii are Gaussian
    too), in parts of ``μ²`` proportional to the stages' shares (the centre's 0.2, each radius's
    0.1, the release's 0.7 by default, with one round). Each stage is calibrated at its own
    ``(εᵢ, δ/k)`` (``k`` Gaussian stages, ``gaussian_stage_delta``); they add up to more than 1 —
    the gain of composing the Gaussians exactly. ``None`` where a stage would need more noise than
    any ε > 0 calibrates (a large δ with a small ε): the shares then stay those of basic
    composition, the radii are exponential mechanisms and rounds are K-norm. Proof:
    docs/private_ball.md, "Gaussian stages"."""
    centre, radius, recentre, release = shares
    searched = [r for r in radius if r > 0.0] if radius_gaussian else []
    gaussian = [centre, *searched, *recentre, release]
    total = math.fsum(gaussian)
    pure = 0.0 if radius_gaussian else math.fsum(radius)
    split = shared_gaussian_shares(epsilon, pure, delta, [g / total for g in gaussian],
                                   gaussian_stage_delta(delta, len(gaussian)))
    if split is None:
        return None
    if radius_gaussian:
        found = iter(split[1:1 + len(searched)])
        radius = [next(found) if r > 0.0 else 0.0 for r in radius]
    return split[0], radius, split[1 + len(searched):-1], split[-1]


def search_is_reliable(sigma: float, n: int, quantile: float) -> bool:
    """Whether a noisy binary search with count noise ``σ`` can tell the data's scale (public):
    ``SEARCH_RELIABILITY·σ ≤ q·n/2``: a candidate holding half the target count passes for it
    with probability at most ``1 − Φ(2)`` ≈ 2.3 % per step."""
    return SEARCH_RELIABILITY * sigma <= 0.5 * quantile * n


def _release_delta(delta: float, others: list[float]) -> float:
    """``delta`` less the other stages' δ's, rounded down until all of them add up to at most
    ``delta`` exactly (the certificate's total)."""
    rest = delta - math.fsum(others)
    while math.fsum([*others, rest]) > delta:
        rest = math.nextafter(rest, 0.0)
    return rest


def _budget_release_delta(delta: float, budget: _StageBudget) -> float:
    """The release's δ under ``budget``'s Gaussian stages: what the centre (``δ/k``), the rounds in
    the shared budget and the searches leave of ``delta`` (``_release_delta``)."""
    first = gaussian_stage_delta(delta, budget.gaussian_stages)
    _, radius, recentre, _ = budget.shares
    return _release_delta(delta, [first] + [first if budget.composed else 0.0] * len(recentre)
                          + ([first] * len(radius) if budget.searched else []))


def gaussian_stage_delta(delta: float, stages: int) -> float:
    """Each Gaussian stage's δ when ``stages`` of them share the budget (the release takes what
    the others leave, ``δ − (k − 1)·δ/k``, within an ulp of it)."""
    return delta / stages


def plan_private_ball(X: Any, manifold: Manifold, *, center: Any, radius: Any, epsilon: float, delta: float | None,
                      mechanism: str, bound: str, calibration: str, restrict: bool, round_to: float | str | None,
                      accountant: PrivacyAccountant | None, strict: bool) -> BallPlan:
    """Stages 1–3 before the draws: public checks, every stage calibrated, the accountant
    charged once, the first stage's statistic read. Returns a ``BallPlan``."""
    from . import release as rel

    ac = cast(AutoCenter, auto_center(center))  # the release path comes here for an AutoCenter only
    radius = "auto" if radius is None else radius  # center="auto" implies a private radius unless one is given
    if not supports(manifold):
        raise ValueError(f"center='auto' has no first stage for {manifold!r}")
    if mechanism in UNSUPPORTED_MECHANISMS:
        raise ValueError(f"center='auto' does not support mechanism={mechanism!r} yet; use 'laplace', 'kng', "
                         "'tangent_gaussian', an ambient or a wrapped mechanism")
    if is_dask(X):
        raise ValueError("center='auto' reads the records several times in memory: not supported on Dask arrays")
    fs_probe = first_stage(manifold, 1, 1.0, None, ac.bound)  # the safe region, from public values
    selection = None
    if mechanism == "auto":  # the whole pipelines compared, from public values only, before any record is read
        mechanism, selection = _auto_mechanism(X, manifold, ac, fs_probe.reference, radius, epsilon, delta, bound,
                                               calibration, restrict)
    p = rel.check_public(X, manifold, center=fs_probe.reference, radius=radius, epsilon=epsilon, delta=delta,
                         mechanism=mechanism, bound=bound, calibration=calibration, restrict=restrict,
                         accountant=accountant, strict=strict)
    p = dataclasses.replace(p, mechanism_selection=selection)
    n, eps, auto = p.n, p.epsilon, p.auto
    radius_private = auto is not None
    # radius="auto" (not an AutoRadius): the ball's own target and headroom; an AutoRadius's quantile as given
    ball_default = radius_private and not isinstance(radius, _selection.AutoRadius)
    given_quantile = None if ball_default or not radius_private else cast(_selection.AutoRadius, auto).quantile
    given_grid = auto.grid if auto is not None else None
    grid = (np.asarray(given_grid) if given_grid is not None else ball_grid(manifold, fs_probe)) \
        if radius_private else np.array([p.given_radius])
    gaussian = p.delta is not None and mechanism in rel.GAUSSIAN_MECHANISMS
    ac, budget = _resolve(ac, fs_probe, radius_private, given_quantile, n, eps, p.delta if gaussian else None,
                          gaussian and calibration == "analytic", len(grid))  # rounds and shares: public values only
    shares, reliable, gaussian_composed, searched = budget.shares, budget.reliable, budget.composed, budget.searched
    quantile = budget.quantile
    headroom = (SEARCH_HEADROOM if searched else BALL_HEADROOM) if ball_default else 0
    centre_share, radius_shares, recentre_shares, release_share = shares
    # δ: each Gaussian stage's (the rounds and radii are Gaussian only in the shared budget); the release the rest
    delta_first = (gaussian_stage_delta(cast(float, p.delta), budget.gaussian_stages) if gaussian else 0.0)
    round_delta = delta_first if gaussian_composed else 0.0
    radius_delta = delta_first if searched else 0.0
    round_multipliers = tuple(gaussian_scale(1.0, s * eps, round_delta) for s in recentre_shares) \
        if gaussian_composed else ()
    radius_multipliers = (budget.search_multiplier,) * len(radius_shares) if searched else ()
    steps = _selection.search_steps(len(grid))  # K of every search (a round's grid has as many candidates)
    p_final = dataclasses.replace(p, delta=_budget_release_delta(cast(float, p.delta), budget) if gaussian else p.delta,
                                  center=fs_probe.reference)
    stage = first_stage(manifold, n, centre_share * eps, delta_first or None, ac.bound, calibration)
    if stage.swamped:  # public values only, before any record is read
        rel._warn(f"center='auto' at n={n}, epsilon={eps:g}: the rough centre's expected error E1 = "
                  f"{stage.expected_error:.3g} is at least half the largest it can be ({stage.largest_error:.3g}), so the "
                  "private ball can hardly locate the records: the release may land far from them, however small its "
                  "own noise. Give a public centre from domain knowledge, or more records or epsilon (manifold-dp plan "
                  "prints E1)", rel.ReleaseWarning)
    kept, kept_cals = _candidates(manifold, p_final, grid, release_share * eps, round_to)
    if not kept:
        raise ValueError(f"center='auto': none of the {len(grid)} candidate radii passes the public checks on {manifold!r} "
                         f"at n={n}, epsilon={eps:g}; give a radius or a larger epsilon or n")
    if not reliable:
        j, noise = _fallback(manifold, kept, kept_cals)
        kept, kept_cals = kept[j:j + 1], kept_cals[j:j + 1]
        if radius_private:  # public values only, before any record is read
            useful = noise <= kept[0]
            why = ("the largest candidate whose release is not mostly noise" if useful else
                   "the smallest candidate: at this n·epsilon every candidate's release is mostly noise, and a small "
                   "ball keeps the release near the private centre")
            rel._warn(f"center='auto' at n={n}, epsilon={eps:g}: n·epsilon is too small for the radius stage to tell "
                      f"the records' scale, so the radius is the public fallback {kept[0]:.4g} ({why}) and its share "
                      "went to the centre; records farther than that from the private centre are clipped",
                      rel.ReleaseWarning)
    if round_to is None:
        rel.check_round_to(None, 0.0)  # the public warning, once
    rel.check_strict(manifold, X, p.strict)
    if p.accountant is not None:  # every stage at once, before the data are read
        from dp_accounting import dp_event

        events = [_first_event(stage)]
        # the radii: noisy binary searches (Gaussian of multiplier z, charged a hair below z) or exponential mechanisms
        events += ([gaussian_dp_event(z * (1.0 - 2.0**-50)) for z in radius_multipliers] if radius_multipliers
                   else [pure_dp_event(s * eps) for s in radius_shares if s > 0])
        # the rounds (ball_refine): Gaussian of multiplier z (charged a hair below z: at least their μ) or K-norm
        events += ([gaussian_dp_event(z * (1.0 - 2.0**-50)) for z in round_multipliers] if round_multipliers
                   else [pure_dp_event(s * eps) for s in recentre_shares])
        events.append(_largest_event([cal[0].measurement.event for cal in kept_cals]))

        p.accountant.charge(dp_event.ComposedDpEvent(events))
    points, _, ok = rel._validity(manifold, X)
    sanitised = rel._sanitised(manifold, points, ok, manifold.origin)
    rounds_grid = tuple(kept) if not (radius_private and reliable) else tuple(round_grid(manifold, fs_probe, grid, given_grid))
    return BallPlan(manifold, X, p_final, ac, stage, tuple(kept), rounds_grid, radius_private and reliable, quantile, shares,
                    round_to, reliable, stage.statistic(sanitised), gaussian_composed, round_multipliers, round_delta,
                    headroom, tuple(math.sqrt(steps) * z for z in radius_multipliers), radius_delta, steps)


def _resolve(ac: AutoCenter, stage: FirstStage, radius_private: bool, given_quantile: float | None, n: int,
             epsilon: float, delta: float | None, shared: bool, grid_size: int) -> tuple[AutoCenter, _StageBudget]:
    """``ac`` resolved (``AutoCenter.resolved``) and its stages' budget (``_stage_budget``), from
    public values. Where neither ``rounds`` nor a share is given, two rounds when the first stage
    works in a bounded chart (SPD, hyperbolic, Euclidean: its error grows with the bound, not with
    the data's spread), the radii can be noisy binary searches at two rounds' shares, and the
    re-centring round is expected to bring the centre closer than one round's first stage even for
    records at one point (``AutoBallExpectation.limits``: ``P`` smaller with two rounds; where the
    round's noise is about its radius, it cannot); one otherwise."""
    defaults = ac.budget is None and ac.radius_budget is None and ac.recentre_budget is None  # no share was set
    one = ac.resolved()
    one_budget = _stage_budget(one, radius_private, given_quantile, n, epsilon, delta, shared, grid_size)
    if ac.rounds is None and defaults and stage.bound is not None and radius_private and shared:
        two = dataclasses.replace(ac, rounds=2).resolved()
        budget = _stage_budget(two, radius_private, given_quantile, n, epsilon, delta, shared, grid_size)
        if budget.searched and (_expectation(stage.manifold, two, budget, n, epsilon, delta, "analytic").limits[0]
                                < _expectation(stage.manifold, one, one_budget, n, epsilon, delta, "analytic").limits[0]):
            return two, budget
    return one, one_budget


@dataclass(frozen=True)
class _StageBudget:
    shares: tuple[float, list[float], list[float], float]
    reliable: bool  # the radius stage runs (else the public fallback)
    composed: bool  # the Gaussian stages share one μ-GDP budget
    searched: bool  # the radii are noisy binary searches (Gaussian stages of that budget)
    quantile: float | None
    gaussian_stages: int  # how many stages are Gaussian (each gets δ/k)
    search_multiplier: float = 0.0  # z of each search (1/z-GDP; its K counts draw σ = √K·z each); 0: no search


def _gaussian_stage_count(shares: tuple[float, list[float], list[float], float], *, composed: bool,
                          searched: bool) -> int:
    """``k``, the Gaussian stages of an (ε, δ) ball, each of which gets ``δ/k`` (the release the rest):
    the centre and the release, the searches (``searched``) and, in the shared budget (``composed``),
    the re-centring rounds."""
    _, radius, recentre, _ = shares
    return 2 + (sum(1 for r in radius if r > 0.0) if searched else 0) + (len(recentre) if composed else 0)


def _stage_budget(ac: AutoCenter, radius_private: bool, given_quantile: float | None, n: int, epsilon: float,
                  delta: float | None, shared: bool, grid_size: int) -> _StageBudget:
    """The shares of every stage, whether the radius stages run and in which form (public values
    only). With Gaussian stages that can share one μ-GDP budget (``shared``) and a private radius,
    the radii are noisy binary searches in that budget where their count noise lets them tell the
    data's scale (``search_is_reliable``), else the public fallback (its share to the centre). Where
    the stages cannot share a budget (pure ε, the classical calibration, or no ε calibrating a
    stage), the radii are exponential mechanisms of pure ε where ``radius_is_reliable``, else the
    public fallback."""
    if shared and radius_private:
        q = SEARCH_QUANTILE if given_quantile is None else given_quantile
        searching = _shares(ac, True, True)
        composed = gaussian_stage_shares(searching, epsilon, cast(float, delta), radius_gaussian=True)
        if composed is not None:
            k = _gaussian_stage_count(searching, composed=True, searched=True)
            z = gaussian_scale(1.0, composed[1][0] * epsilon, gaussian_stage_delta(cast(float, delta), k))
            if search_is_reliable(math.sqrt(_selection.search_steps(grid_size)) * z, n, q):
                return _StageBudget(composed, True, True, True, q, k, z)
            fallback = gaussian_stage_shares(_shares(ac, True, False), epsilon, cast(float, delta))
            if fallback is not None:
                return _StageBudget(fallback, False, True, False, q,
                                    _gaussian_stage_count(fallback, composed=True, searched=False))
    em_q = (BALL_QUANTILE if given_quantile is None else given_quantile) if radius_private else None
    reliable = (not radius_private) or radius_is_reliable(cast(float, ac.radius_budget) * epsilon, n, cast(float, em_q),
                                                          grid_size)
    shares = _shares(ac, radius_private, reliable)
    composed = gaussian_stage_shares(shares, epsilon, cast(float, delta)) if shared else None
    stages = _gaussian_stage_count(shares, composed=composed is not None, searched=False) if delta is not None else 0
    return _StageBudget(composed if composed is not None else shares, reliable, composed is not None, False, em_q, stages)


@dataclass(frozen=True)
class AutoBallExpectation:
    """What ``center="auto"`` (default ``AutoCenter``/``AutoRadius``) is expected to do at public
    ``(manifold, n, ε, δ)``, before any data are read (``expected_auto_ball``)."""

    centre_share: float
    release_share: float
    reliable: bool
    noise: str
    dimension: int
    centre_error: float
    release_strength: float  # the release's 1/noise over a single release's with the whole (ε, δ)
    rounds: int = 1
    round_error: float = 0.0  # a Gaussian round's expected error per unit of its radius, √d·2z/n (two rounds)
    composed: bool = False  # the Gaussian stages share one μ-GDP budget
    searched: bool = False  # the radii are noisy binary searches
    swamped: bool = False  # the first stage's expected error is at least half the largest it can be (it warns)

    def ratio(self, spread: float) -> float:
        """The release's expected error over that of a ball around the true centre with radius
        ``spread`` and the whole budget: ``√(E² + s²)/(w·s)`` with ``w = release_strength`` (the
        final ball's radius is about the records' distance from the private centre; the error is
        proportional to it and to the noise scale: ``w`` is the release's share of ε for pure ε,
        its μ over a single Gaussian's at ``(ε, δ)`` for the Gaussian stages). ``E`` is the first
        stage's error ``E₁``, or with a re-centring round the round's, ``round_error·√(E₁² + s²)``
        (its radius about the records' distance from the first stage's centre)."""
        error = self.centre_error if self.rounds == 1 else self.round_error * math.hypot(self.centre_error, spread)
        return math.hypot(error, spread) / (self.release_strength * spread)

    @property
    def limits(self) -> tuple[float, float]:
        """``(P, Q)`` with ``ratio(s)·s = √(P² + Q²·s²)``: the release's radius over its strength
        for records at one point (``P``, the centre's error) and per unit of spread far beyond it
        (``Q``). The release's expected error is about its noise distance per unit of radius
        times ``√(P² + Q²·s²)``."""
        w = self.release_strength
        if self.rounds == 1:
            return self.centre_error / w, 1.0 / w
        return self.round_error * self.centre_error / w, math.sqrt(1.0 + self.round_error**2) / w


def expected_auto_ball(manifold: Manifold, *, n: int, epsilon: float, delta: float | None = None,
                       gaussian: bool = False, auto: AutoCenter | None = None, radius_private: bool = True,
                       given_quantile: float | None = None, grid_size: int = BALL_GRID_POINTS,
                       calibration: str = "analytic") -> AutoBallExpectation:
    """``AutoBallExpectation`` of ``auto`` (default ``AutoCenter()``) from public values, as
    ``plan_private_ball`` sets the stages up: the shares (with the small-``n·ε`` decision,
    ``_stage_budget``) and the first stage's expected error (``FirstStage.expected_error``).
    ``gaussian``: the release is a Gaussian mechanism with ``delta``, so the first stage is
    Gaussian too (in one μ-GDP budget with the others under the analytic ``calibration``);
    ``radius_private``: the radius is chosen (else given); ``given_quantile`` and ``grid_size``:
    an ``AutoRadius``'s. With several rounds the last is modelled: its error per unit of its
    radius is ``√d·2z/n`` (Gaussian) or ``d·2/(n·ε_t)`` (K-norm)."""
    gaussian = gaussian and delta is not None
    shared = gaussian and calibration == "analytic"
    ac = AutoCenter() if auto is None else auto
    probe = first_stage(manifold, 1, 1.0, None, ac.bound)
    ac, budget = _resolve(ac, probe, radius_private, given_quantile, n, epsilon, delta if gaussian else None, shared,
                          grid_size)
    return _expectation(manifold, ac, budget, n, epsilon, delta if gaussian else None, calibration)


def _expectation(manifold: Manifold, ac: AutoCenter, budget: _StageBudget, n: int, epsilon: float,
                 delta: float | None, calibration: str) -> AutoBallExpectation:
    """``AutoBallExpectation`` of a resolved ``ac`` with its ``budget`` (``delta``: the stages are
    Gaussian, else K-norm)."""
    shares = budget.shares
    strength = shares[3]
    gaussian = delta is not None
    delta_first = gaussian_stage_delta(cast(float, delta), budget.gaussian_stages) if gaussian else None
    if gaussian:  # the release's μ over a single release's (at its δ/k)
        strength = gaussian_noise_ratio(epsilon, cast(float, delta), shares[3] * epsilon, cast(float, delta_first))
    stage = first_stage(manifold, n, shares[0] * epsilon, delta_first, ac.bound, calibration)
    rounds = cast(int, ac.rounds)
    round_error = 0.0
    if rounds > 1 and budget.composed:
        z = gaussian_scale(1.0, shares[2][-1] * epsilon, cast(float, delta_first))
        round_error = math.sqrt(manifold.dim) * 2.0 * z / n
    elif rounds > 1:  # a K-norm round: noise of mean norm d·σ, σ = 2R/(n·ε_t) (at R = 1)
        round_error = manifold.dim * round_scale(n, 1.0, shares[2][-1] * epsilon)
    return AutoBallExpectation(shares[0], shares[3], budget.reliable, stage.noise, stage.dimension, stage.expected_error,
                               strength, rounds, round_error, budget.composed, budget.searched, stage.swamped)


def _auto_mechanism(X: Any, manifold: Manifold, ac: AutoCenter, reference: Array, radius: Any, epsilon: Any, delta: Any,
                    bound: str, calibration: str, restrict: bool) -> tuple[str, MechanismSelection]:
    """``mechanism="auto"`` with ``center="auto"``: ``planning.choose_ball_mechanism`` at the
    public values as ``check_public`` normalises them (checked here with a mechanism every
    manifold supports, then again for the chosen one), and the certificate's record of the
    choice. ``epsilon``, ``delta`` and ``radius`` are the caller's, not yet checked."""
    from . import release as rel
    from .planning import choose_ball_mechanism

    p = rel.check_public(X, manifold, center=reference, radius=radius, epsilon=epsilon, delta=delta, mechanism="laplace",
                         bound=bound, calibration=calibration, restrict=restrict, accountant=None)
    choice = choose_ball_mechanism(manifold, n=p.n, epsilon=p.epsilon, delta=p.delta, auto=ac,
                                   radius=None if p.auto is not None else p.given_radius,
                                   auto_radius=radius if isinstance(radius, _selection.AutoRadius) else None,
                                   bound=bound, calibration=calibration, restrict=restrict)
    return choice.mechanism, choice.selection


def _largest_event(events: Sequence[DpEvent]) -> DpEvent:
    """Of events of one kind (a release's at every candidate), the one that charges most: the
    smallest Gaussian noise multiplier, or the largest pure ε (smallest RR noise parameter)."""
    return min(events, key=lambda e: getattr(e, "noise_multiplier", None) or e.noise_parameter)


def _first_event(stage: FirstStage) -> DpEvent:
    if stage.noise == "gaussian":
        return gaussian_dp_event(stage.scale / stage.sensitivity)
    return pure_dp_event(stage.epsilon)


@dataclass(frozen=True)
class BallPlan:
    """``center="auto"`` calibrated and charged; ``release(rng)`` runs the private stages and the
    release (``draw(size)``: that many independent releases, for audits)."""

    manifold: Manifold
    _X: Any = field(repr=False)
    public: PublicParams = field(repr=False)
    auto: AutoCenter
    first: FirstStage
    candidates: tuple[float, ...]
    round_candidates: tuple[float, ...]
    select_radius: bool
    quantile: float | None
    shares: tuple[float, list[float], list[float], float]
    round_to: float | str | None
    reliable: bool
    _statistic: FloatArray = field(repr=False)
    gaussian_composed: bool = False  # the centre, the rounds and the release are Gaussian stages of one μ-GDP budget
    round_multipliers: tuple[float, ...] = ()  # each Gaussian round's σ/Δ; empty: K-norm rounds
    round_delta: float = 0.0  # each Gaussian round's δ
    headroom: int = 0  # candidates above the radius stage's choice (BALL_HEADROOM, SEARCH_HEADROOM; post-processing)
    search_sigmas: tuple[float, ...] = ()  # each noisy binary search's count noise σ = √K·z; empty: exponential mechanism
    radius_delta: float = 0.0  # each noisy binary search's δ
    search_steps: int = 0  # K, the count queries each search is calibrated for (and makes)

    @property
    def epsilon(self) -> float:
        return self.public.epsilon

    @ignoring_float_errors
    def draw(self, size: int | None = None, *, rng: RngLike = None) -> Array:
        rng = as_generator(rng)
        if size is None:
            return cast(Array, self.release(rng=rng).point)
        return np.stack([self.release(rng=rng).point for _ in range(int(size))])

    def centre(self, *, rng: RngLike = None) -> Array:
        """The first stage alone (its point), for audits of its noise."""
        return self.first.privatise(self._statistic, as_generator(rng))

    def _radius(self, center: Array, share: float, rng: np.random.Generator, candidates: tuple[float, ...],
                t: int = 0) -> float:
        """Round ``t``'s radius: the noisy binary search (``search_sigmas``) or the exponential
        mechanism over ``candidates`` (``ball_log_weights``), and ``headroom`` candidates above its
        choice (post-processing); the last candidate when the selection is skipped (a given radius,
        the small-n fallback)."""
        if not self.select_radius:
            return candidates[-1]
        from . import release as rel

        distances = rel.record_distances(self.manifold, self._X, center, cap=rel._distance_cap(candidates))
        if self.search_sigmas:
            j = _selection.noisy_binary_search(distances, candidates, cast(float, self.quantile) * self.public.n,
                                               self.search_sigmas[t], rng=rng, steps=self.search_steps)
            return candidates[min(j + self.headroom, len(candidates) - 1)]
        utility = _selection.quantile_utility(distances, candidates, cast(float, self.quantile))  # a selection has one
        j = int(_selection.gumbel_select(ball_log_weights(utility, share * self.epsilon), None, rng=rng))
        return candidates[min(j + self.headroom, len(candidates) - 1)]

    def _release_at(self, center: Array, radius: float, share: float,
                    rng: np.random.Generator) -> tuple[Array, Plan, Calibration, float | None]:
        """The chosen mechanism at ``(center, radius)`` with ``share·ε``; a centre whose public
        checks fail (they pass everywhere in the safe region: not expected) is replaced by the safe
        region's reference point, a function of the released centre only."""
        from . import release as rel
        from .frechet_mean import FRECHET_MEAN

        m, p = self.manifold, dataclasses.replace(self.public, center=center)
        with np.errstate(all="ignore"):  # float warnings of the calibration would depend on the released ball
            try:
                cal, grid = FRECHET_MEAN.stages(m, p, radius, share * self.epsilon, self.round_to, warn=False)
            except (ValueError, ArithmeticError):
                p = dataclasses.replace(self.public, center=self.first.reference)
                cal, grid = FRECHET_MEAN.stages(m, p, radius, share * self.epsilon, self.round_to, warn=False)
        rel.warn_if_mostly_noise(m, FRECHET_MEAN, cal.measurement, radius, p.n, self.epsilon)  # public: n, ε, the ball
        records = rel.prepared(m, self._X, p.center, radius, *FRECHET_MEAN.reads(m, cal, radius, p.n))
        plan = rel.build_plan(FRECHET_MEAN, m, p, radius, cal, grid, records)
        point, acceptance = plan.draw_with_stats(None, rng=rng)
        return point, plan, cal, acceptance

    @ignoring_float_errors
    def release(self, *, rng: RngLike = None) -> PrivateRelease:
        """One private release: centre, ``rounds`` × (radius, re-centre), release."""
        from .release import PrivateRelease

        rng = as_generator(rng)
        _centre_share, radius_shares, recentre_shares, release_share = self.shares
        center = self.first.privatise(self._statistic, rng)
        stages = [self._first_record()]
        rounds = cast(int, self.auto.rounds)  # resolved by plan_private_ball
        for t in range(rounds):
            last = t == rounds - 1
            radius = self._radius(center, radius_shares[t], rng, self.candidates if last else self.round_candidates, t)
            stages.append(self._radius_record(radius_shares[t], radius, t,
                                              len(self.candidates if last else self.round_candidates)))
            if not last:
                share = recentre_shares[t] * self.epsilon
                reach = min(self.first.diameter, float(self.manifold.injectivity_radius))
                z = self.round_multipliers[t] if self.round_multipliers else None
                point, sigma = tangent_round(self.manifold, self._X, center, radius, self.public.n, share, rng, reach, z)
                center = self.first.clamp(point)
                stages.append(self._round_record(share, sigma, radius, z is not None))
        point, plan, cal, acceptance = self._release_at(center, radius, release_share, rng)
        stages.append(_release_record("release", cal, radius))
        delta = math.fsum(s.delta for s in stages)
        pure = [s for s in stages if s.delta == 0.0 and s.epsilon > 0.0]
        if self.gaussian_composed:
            gaussian = self.epsilon - sum(s.epsilon for s in pure)
            which = ", ".join(["centre"] + (["radius searches"] if self.search_sigmas else [])
                              + (["re-centring rounds"] if rounds > 1 else []) + ["release"])
            composition = (f"the Gaussian stages ({which}) compose as one μ-GDP mechanism, μ² = Σ μᵢ² (Dong, "
                           f"Roth & Su 2022, Thm 3.2 and Cor. 3.3), which is ({gaussian:.6g}, {delta:g})-DP; with the pure "
                           "stages by basic composition: epsilon = " + "".join(f"{s.epsilon:.6g} + " for s in pure)
                           + f"{gaussian:.6g}; delta = {delta:g} (each Gaussian stage is listed with its own epsilon "
                           "at its delta)")
        else:
            composition = (f"basic composition (sequential) of {len(stages)} stages: epsilon = "
                           + " + ".join(f"{s.epsilon:.6g}" for s in stages) + f"; delta = {delta:g}")
        selection = CenterSelection(
            method="private ball: a rough centre needing no ball, then private radii and re-centring, then the release "
                   "(CoinPress, Biswas et al. 2020; Karwa & Vadhan 2018; docs/private_ball.md)",
            rounds=rounds, bound=self.first.bound, small_n_fallback=not self.reliable,
            composition=composition,
            stages=tuple(stages))
        certificate = dataclasses.replace(plan.certificate(acceptance), epsilon=self.epsilon, delta=delta,
                                          center_selection=selection)
        return PrivateRelease(point, certificate)

    def _first_record(self) -> BallStage:
        f = self.first
        return BallStage(stage="centre", mechanism=f.noise, theorem=f.theorem, statistic=f.title, sensitivity=f.sensitivity,
                         sensitivity_bound=f.rule, scale=f.scale, epsilon=f.epsilon, delta=f.delta, radius=None)

    def _round_record(self, epsilon: float, sigma: float, radius: float, gaussian: bool) -> BallStage:
        return BallStage(stage="recentre", mechanism="gaussian" if gaussian else "l2_laplace",
                         theorem=GAUSSIAN_ROUND_THEOREM if gaussian else ROUND_THEOREM,
                         statistic="(1/n) Σ clip_R(log_c x_i) in orthonormal coordinates of T_c M (ball_refine)",
                         sensitivity=round_sensitivity(self.public.n, radius),
                         sensitivity_bound="Δ = 2R/n: every clipped row has norm ≤ R", scale=sigma, epsilon=epsilon,
                         delta=self.round_delta if gaussian else 0.0, radius=float(radius))

    def _radius_record(self, share: float, radius: float, t: int = 0, searched_over: int = 0) -> BallStage:
        if not self.select_radius:
            why = ("the radius was given" if len(self.candidates) == 1 and self.public.auto is None else
                   "small n·epsilon: the radius stage could not tell the data's scale, so the public fallback "
                   "(the largest candidate whose release is not mostly noise, else the smallest) was used and its "
                   "share went to the centre")
            return BallStage(stage="radius", mechanism="none (public)", theorem=why, statistic="", sensitivity=0.0,
                             sensitivity_bound="", scale=None, epsilon=0.0, delta=0.0, radius=float(radius))
        headroom = f", then {self.headroom} candidate(s) up (post-processing)" if self.headroom else ""
        if self.search_sigmas:
            sigma = self.search_sigmas[t]
            return BallStage(stage="radius", mechanism="noisy binary search over a public grid (Gaussian counts)",
                             theorem=SEARCH_THEOREM, statistic=f"quantile {self.quantile:g} of ρ(centre, x_i) over "
                             f"{searched_over} candidates, {self.search_steps} steps of σ"
                             + headroom, sensitivity=1.0,
                             sensitivity_bound="#{i : ρ(c, x_i) ≤ g}: sensitivity 1 under replace-one", scale=sigma,
                             epsilon=share * self.epsilon, delta=self.radius_delta, radius=float(radius))
        return BallStage(stage="radius", mechanism="exponential mechanism over a public grid (Gumbel-max draw)",
                         theorem=EM_THEOREM, statistic=f"quantile {self.quantile:g} of ρ(centre, x_i) over "
                         f"{len(self.candidates)} candidates" + headroom, sensitivity=1.0,
                         sensitivity_bound="u(g) = −|#{i : ρ(c, x_i) ≤ g} − q·n|, sensitivity 1 under replace-one",
                         scale=None, epsilon=share * self.epsilon, delta=0.0, radius=float(radius))


def _candidates(manifold: Manifold, p: PublicParams, grid: ArrayLike, epsilon: float,
                round_to: float | str | None) -> tuple[list[float], list[tuple[Calibration, float | None]]]:
    """The candidate radii whose release (at ``epsilon``, the release's share) passes the public
    checks at ``p.center`` (the safe region's worst point) with a curvature factor at most
    ``MAX_CURVATURE_FACTOR``, and their calibrations. Public values only."""
    from .frechet_mean import FRECHET_MEAN

    kept: list[float] = []
    kept_cals: list[tuple[Calibration, float | None]] = []
    for g in np.asarray(grid, float):
        try:
            r = check_radius(manifold, float(g))
            with np.errstate(all="ignore"):
                cal = FRECHET_MEAN.stages(manifold, p, r, epsilon, round_to, warn=False)
        except (ValueError, ArithmeticError):
            continue
        if cal[0].sensitivity * p.n / (2.0 * r) > MAX_CURVATURE_FACTOR:  # near r*, h → 0: Δ blows up
            continue
        kept.append(r)
        kept_cals.append(cal)
    return kept, kept_cals


@dataclass(frozen=True)
class FallbackRelease:
    """The release of ``center="auto"`` where ``n·ε`` is too small for the radius stage: its public
    ``radius``, the expected noise distance of its release there (``noise``, at the release's
    share of ε and δ, calibrated at the safe region's worst point as the candidates are checked:
    where the release's own calibration at the private centre depends on it — affine-invariant
    and log-Euclidean SPD — the release's noise is at most this) and the first stage's expected
    error ``centre_error`` (``E1``)."""

    radius: float
    noise: float
    useful: bool  # noise ≤ radius: the largest such candidate (else the smallest candidate)
    centre_error: float

    @property
    def error(self) -> float:
        """The release's expected error: its noise, and the part of ``E1`` the ball cannot reach,
        ``√(noise² + max(0, E1 − radius)²)`` (records within the ball: the noise alone; a ball
        smaller than the centre's error: the release stays near the centre)."""
        return math.hypot(self.noise, max(0.0, self.centre_error - self.radius))


def expected_fallback(manifold: Manifold, *, n: int, epsilon: float, delta: float | None = None,
                      mechanism: str = "laplace", auto: AutoCenter | None = None, bound: str = "tight",
                      calibration: str = "analytic", restrict: bool = False) -> FallbackRelease | None:
    """Where ``center="auto", radius="auto"`` with ``mechanism`` takes the public fallback radius
    (small ``n·ε``), that radius and its release's expected noise distance, as
    ``plan_private_ball`` sets them up; ``None`` where the radius stage runs. Public values only.
    With records within the fallback radius of the private centre the release errs about
    ``noise``, whatever their spread (its ball is not fitted to them); with a ball smaller than
    the centre's error, about that error (``FallbackRelease.error``)."""
    from . import release as rel
    from .mechanism_specs import MECHANISM_NAMES

    if mechanism not in MECHANISM_NAMES:
        raise ValueError(f"mechanism must be one of {', '.join(MECHANISM_NAMES)}, got {mechanism!r}")
    n, epsilon = check_n(n), check_epsilon(epsilon)
    if mechanism in rel.GAUSSIAN_MECHANISMS and delta is None:
        raise ValueError(f"mechanism={mechanism!r} is (epsilon, delta)-DP: give delta")
    delta = None if delta is None else check_delta(delta)
    ac = AutoCenter() if auto is None else auto
    probe = first_stage(manifold, 1, 1.0, None, ac.bound)
    grid = ball_grid(manifold, probe)
    gaussian = delta is not None and mechanism in rel.GAUSSIAN_MECHANISMS
    ac, budget = _resolve(ac, probe, True, None, n, epsilon, delta if gaussian else None,
                          gaussian and calibration == "analytic", len(grid))
    if budget.reliable:
        return None
    shares = budget.shares
    release_delta = _budget_release_delta(cast(float, delta), budget) if gaussian else delta
    p = PublicParams(n=int(n), center=probe.reference, radius=None, epsilon=epsilon, delta=release_delta,
                     mechanism=mechanism, bound=bound, calibration=calibration, restrict=bool(restrict))
    kept, cals = _candidates(manifold, p, grid, shares[3] * epsilon, "auto")
    if not kept:
        return None
    j, noise = _fallback(manifold, kept, cals)
    centre = _expectation(manifold, ac, budget, n, epsilon, delta if gaussian else None, calibration).centre_error
    return FallbackRelease(kept[j], noise, noise <= kept[j], centre)


def _release_record(name: str, cal: Calibration, radius: float) -> BallStage:
    m = cal.measurement
    return BallStage(stage=name, mechanism=m.mechanism, theorem=m.theorem, statistic="frechet_mean",
                     sensitivity=m.sensitivity, sensitivity_bound=cal.sensitivity_bound, scale=m.scale,
                     epsilon=m.epsilon, delta=m.delta, radius=float(radius))
