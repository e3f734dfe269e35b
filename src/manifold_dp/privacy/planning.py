"""What a release can be expected to deliver, from public values only, before any data are read.

A mechanism's noise scale is a function of the public parameters ``(manifold, n, center,
radius, ε, δ)`` (stage 2 of ``privacy.release``), and ``expected_noise_distance`` turns a scale
into the expected distance of the noise from the mean (``d·σ`` for the Laplace-type laws,
``σ·√d`` for the Gaussian ones, ``D`` for the ambient ones). So the expected error of every
mechanism at every radius, the ``n`` or ``ε`` a target error needs, and the mechanism with the
smallest expected error (``mechanism="auto"``) are public; this module computes them without a
record in sight.

- ``supports(manifold, mechanism)``: the capability rule that ``check_public`` applies and the
  CLI's tables read;
- ``expected_error``: one mechanism's expected noise distance, or why it is refused;
- ``choose_mechanism``: ``mechanism="auto"``, the smallest expected noise distance;
- ``choose_ball_mechanism``: ``mechanism="auto"`` with ``center="auto"``, the whole pipelines compared;
- ``required_n`` / ``required_epsilon``: the ``n`` (or ``ε``) for a target error;
- ``plan_table`` / ``format_plan``: ``manifold-dp plan``.

The expected distance is a planning figure, not a guarantee: it is the mean of the noise's
distance, the mechanism's exact law is in its theorem (docs/theory.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

from numpy.typing import ArrayLike

from .._threads import blas_limited
from ..manifolds.base import Manifold
from . import measurements
from .certificate import MechanismCandidate, MechanismSelection
from .float64_reach import check_reach, fits_float64
from .mechanism_specs import GAUSSIAN_MECHANISMS, MECHANISM_NAMES
from .mechanism_specs import MECHANISMS as MECHANISM_SPECS
from .public import PublicParams
from .radius_selection import AutoRadius

if TYPE_CHECKING:
    from .private_ball import AutoBallExpectation, AutoCenter


# The release pipeline's stages, read through ``Any``: ``privacy.release`` imports this module for
# mechanism="auto", so it is imported on first use, and this module type-checks on its own.
def _release() -> Any:
    from . import release

    return release


def _frechet_mean() -> Any:
    from . import frechet_mean

    return frechet_mean


_measurements: Any = measurements

__all__ = ["supports", "candidate_mechanisms", "Expectation", "expected_error", "MechanismChoice", "choose_mechanism",
           "choose_ball_mechanism", "choose_mechanism_over_radii", "sample_radii",
           "required_n", "required_epsilon", "default_radii", "PlanRow", "plan_table", "format_plan", "auto_ball_summary",
           "STEEP_GROWTH", "radius_growth", "steep_radius", "MECHANISMS", "GAUSSIAN_MECHANISMS"]

MECHANISMS = MECHANISM_NAMES  # the registry's names (privacy.mechanism_specs), as privacy.release.MECHANISMS
# The Riemannian Gaussian's σ on a curved space comes from a privacy profile by quadrature (seconds on a first
# call). mechanism="auto" calibrates it only when half the flat-space analytic Gaussian σ at the same Δ could win:
# measured, the profile's σ is 0.9-1.1 times the flat one on the sphere and Kendall shapes (0.91 on Kendall(8) at
# r = 0.9 r*, 1.08 on S² at r = 0.7 with n = 86) and above it on negatively curved spaces. A screen, not a theorem:
# were it wrong, "auto" would pick a mechanism with a larger expected error, never a less private one.
RIEMANNIAN_GAUSSIAN_SCREEN = 0.5
MAX_N = 10**12
SOLVER_STEPS = 12
RESTRICTED_NOTE = "restricted to the ball: its sampler's acceptance is checked at release time"


def supports(manifold: Manifold, mechanism: str) -> bool:
    """Whether ``mechanism`` runs on ``manifold``, read off its declared capabilities: the
    registry's rule (``MechanismSpec.supports``), which ``privacy.release.check_public`` applies
    and the CLI's tables read; ``False`` for a name not in the registry."""
    spec = MECHANISM_SPECS.get(mechanism)
    return spec is not None and spec.supports(manifold)


def candidate_mechanisms(manifold: Manifold, delta: float | None, exclude: Sequence[str] = ()) -> tuple[str, ...]:
    """The mechanisms ``mechanism="auto"`` compares: those ``manifold`` supports, the
    (ε, δ) ones only when ``delta`` is given, none in ``exclude``."""
    return tuple(m for m in MECHANISMS if supports(manifold, m) and m not in exclude
                 and (delta is not None or m not in GAUSSIAN_MECHANISMS))


@dataclass(frozen=True)
class Expectation:
    """One mechanism at public parameters: ``expected_distance`` (``expected_noise_distance`` of
    its calibrated scale) and ``scale``, or ``None`` with ``note`` saying why it is refused or was
    not calibrated. ``note`` may also qualify a value (e.g. a law restricted to the ball)."""

    mechanism: str
    expected_distance: float | None
    scale: float | None
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.expected_distance is not None


def _public(manifold: Manifold, mechanism: str, n: int, center: Any, delta: float | None, bound: str,
            calibration: str, restrict: bool, radius: float, epsilon: float) -> PublicParams:
    """The normalised public parameters stage 2 of ``privacy.release`` reads."""
    return PublicParams(n=int(n), center=center, radius=radius, epsilon=epsilon, delta=delta, mechanism=mechanism,
                        bound=bound, calibration=calibration, restrict=bool(restrict))


def _distance(manifold: Manifold, mechanism: str, scale: float) -> float:
    return float(_release().expected_noise_distance(manifold, SimpleNamespace(mechanism=mechanism, scale=scale)))


def _laplace_type_scale(manifold: Manifold, mechanism: str, p: PublicParams, radius: float,
                        epsilon: float) -> tuple[float, str]:
    """The Laplace or KNG scale as ``privacy.release.calibrate`` sets it, without estimating a
    restricted law's acceptance (tens of seconds on SPD 28×28): the scale does not depend on it,
    and the release still checks it (and refuses when it is hopeless)."""
    release = _release()
    center, n = p.center, p.n
    sens, accuracy = _frechet_mean().mean_sensitivity(manifold, "kng" if mechanism == "kng" else "laplace", n=n, center=center,
                                      radius=radius, bound=p.bound)
    release._optimisation_note(manifold, radius, accuracy, n)  # the release refuses too many certified steps
    if mechanism == "laplace" and not p.restrict:
        try:
            meas = measurements.laplace(manifold, sens, epsilon)
        except ValueError:  # not integrable at this Δ/ε: the release restricts it
            meas = None
        if meas is not None and fits_float64(manifold, center, radius, meas.scale, False):
            check_reach(manifold, center, radius, meas.scale, False)
            return float(meas.scale), ""
    sigma = _measurements.pure_scale(sens, epsilon, footpoint_free=False)
    check_reach(manifold, center, radius, sigma, True)
    return float(sigma), RESTRICTED_NOTE


@blas_limited
def expected_error(manifold: Manifold, mechanism: str, *, n: int, radius: float, epsilon: float,
                   delta: float | None = None, center: ArrayLike | None = None, bound: str = "tight",
                   calibration: str = "analytic", restrict: bool = False, full: bool = True) -> Expectation:
    """The expected noise distance of ``mechanism`` at public parameters (no data), or why the
    release would refuse it. ``center`` defaults to ``manifold.origin``. ``full=False`` skips the
    estimate of a restricted Laplace or KNG law's acceptance (its ``note`` says so): the scale is
    the same, the release still checks it."""
    release = _release()
    center = manifold.origin if center is None else center
    p = _public(manifold, mechanism, n, center, delta, bound, calibration, restrict, radius, epsilon)
    try:
        if not full and mechanism in ("laplace", "kng"):
            scale, note = _laplace_type_scale(manifold, mechanism, p, radius, epsilon)
            return Expectation(mechanism, _distance(manifold, mechanism, scale), scale, note)
        cal, _ = _frechet_mean().FRECHET_MEAN.stages(manifold, p, radius, epsilon, "auto", warn=False)
    except (ValueError, ArithmeticError) as err:
        return Expectation(mechanism, None, None, "refused: " + " ".join(str(err).split()))
    note = RESTRICTED_NOTE.split(":")[0] if mechanism == "laplace" and cal.restricted else ""
    return Expectation(mechanism, float(release.expected_noise_distance(manifold, cal.measurement)), float(cal.sigma), note)


def _flat_gaussian_bound(manifold: Manifold, p: PublicParams, radius: float, epsilon: float) -> float:
    """``RIEMANNIAN_GAUSSIAN_SCREEN ×`` the flat analytic Gaussian's expected distance at the
    Riemannian Gaussian's Δ (``min(Δ, 2r)``, as ``calibrate`` takes it): the screen of ``auto``."""
    sens, _ = _frechet_mean().mean_sensitivity(manifold, "laplace", n=p.n, center=p.center, radius=radius,
                                          bound=p.bound)
    sigma = float(_measurements.gaussian_scale(min(sens, 2.0 * radius), epsilon, p.delta, "analytic"))
    return RIEMANNIAN_GAUSSIAN_SCREEN * sigma * math.sqrt(manifold.dim)


@dataclass(frozen=True)
class MechanismChoice:
    """``mechanism="auto"``: the chosen ``mechanism`` and every candidate compared (in
    ``MECHANISMS`` order), with the rule that chose."""

    mechanism: str
    candidates: tuple[Expectation, ...]
    rule: str

    @property
    def selection(self) -> MechanismSelection:
        """The certificate's record of the choice (``mechanism_selection``)."""
        candidates = tuple(MechanismCandidate(e.mechanism, e.expected_distance, e.scale, e.note) for e in self.candidates)
        return MechanismSelection(rule=self.rule, chosen=self.mechanism, candidates=candidates)


def _refusals(found: Mapping[str, Expectation], names: Sequence[str]) -> str:
    """Why each mechanism was refused, one reason per group of mechanisms refused for it (in
    ``names`` order): "laplace, kng: refused: ...; ambient_gaussian: refused: ..."."""
    groups: dict[str, list[str]] = {}
    for m in names:
        groups.setdefault(found[m].note.split(";")[0], []).append(m)
    return "; ".join(f"{', '.join(ms)}: {reason}" for reason, ms in groups.items())


AUTO_RULE = ("the smallest expected noise distance (privacy.release.expected_noise_distance) among the mechanisms the "
             "manifold supports (the (ε, δ) ones only when delta is given), each calibrated at the public n, centre, "
             "radius, epsilon and delta before any record was read; ties go to the earlier in MECHANISMS")


@blas_limited
def choose_mechanism(manifold: Manifold, *, n: int, radius: float, epsilon: float, delta: float | None = None,
                     center: ArrayLike | None = None, bound: str = "tight", calibration: str = "analytic",
                     restrict: bool = False, exclude: Sequence[str] = ()) -> MechanismChoice:
    """``mechanism="auto"``: the candidate (``candidate_mechanisms``) with the smallest
    ``expected_noise_distance``, from public parameters only, so the choice is the same for
    every dataset of ``n`` records.

    Each candidate is calibrated as the release would calibrate it, except for two shortcuts
    that cannot change the choice's privacy and rarely its outcome: a restricted Laplace or KNG
    law's acceptance is estimated only if it wins (tens of seconds on SPD 28×28; refused, the
    next candidate is taken); the Riemannian Gaussian on a curved space is calibrated only when
    ``RIEMANNIAN_GAUSSIAN_SCREEN`` times the flat analytic Gaussian's expected distance at its Δ
    is below the best of the others (its quadrature takes seconds; the screen is measured, not
    proven: see the constant). Raises ``ValueError`` when every candidate is refused."""
    from .gdp import profile_method

    center = manifold.origin if center is None else center
    names = candidate_mechanisms(manifold, delta, exclude)
    slow = {"riemannian_gaussian"} if manifold.homogeneous and profile_method(manifold) != "exact" else set()
    found = {m: expected_error(manifold, m, n=n, radius=radius, epsilon=epsilon, delta=delta, center=center, bound=bound,
                               calibration=calibration, restrict=restrict, full=False) for m in names if m not in slow}
    best = min((e.expected_distance for e in found.values() if e.expected_distance is not None), default=math.inf)
    for m in slow & set(names):
        screen = _flat_gaussian_bound(manifold, _public(manifold, m, n, center, delta, bound, calibration, restrict, radius,
                                                        epsilon),
                                      radius, epsilon)
        found[m] = (Expectation(m, None, None, f"not calibrated: at least about {screen:.3g} (half the flat Gaussian's), "
                                               f"above the best other candidate's {best:.3g}") if screen >= best else
                    expected_error(manifold, m, n=n, radius=radius, epsilon=epsilon, delta=delta, center=center,
                                   bound=bound, calibration=calibration, restrict=restrict))
    while True:
        ranked = sorted((e.expected_distance, names.index(m), m) for m, e in found.items() if e.expected_distance is not None)
        if not ranked:
            reasons = _refusals(found, names)
            raise ValueError(f"mechanism='auto': no mechanism passes at n={n}, radius={radius!r}, epsilon={epsilon!r}, "
                             f"delta={delta!r} on {manifold!r} ({reasons})")
        winner = ranked[0][2]
        if found[winner].note != RESTRICTED_NOTE:
            break
        found[winner] = expected_error(manifold, winner, n=n, radius=radius, epsilon=epsilon, delta=delta, center=center,
                                       bound=bound, calibration=calibration, restrict=restrict)  # its acceptance, now
    return MechanismChoice(winner, tuple(found[m] for m in names), AUTO_RULE)


BALL_AUTO_RULE = ("center='auto': each mechanism's whole private ball (its first stage, radius stages and rounds, and "
                  "the release; with delta the Gaussian ones share one μ-GDP budget) is expected to err about "
                  "a(r)·√(P² + Q²·s²) for records of spread s, with a(r) the release's expected noise distance per unit "
                  "of radius at r and P, Q from the stages' shares and the centre's expected error "
                  "(private_ball.expected_auto_ball; a given radius: Q alone); the ratio of two such errors is monotone "
                  "in s, so its largest value over every spread is at s → 0 or s → ∞; chosen: the mechanism whose "
                  "largest ratio to the best, over both ends and four radii spread over the public grid, is smallest, "
                  "from public values only; ties go to the earlier in MECHANISMS")
RADIUS_AUTO_RULE = ("radius='auto': the expected noise distance of each mechanism with the release's share of epsilon at "
                    "four radii spread over the public candidate grid; chosen: the mechanism whose largest ratio to the "
                    "best there is smallest, from public values only; ties go to the earlier in MECHANISMS")


def sample_radii(grid: Iterable[float]) -> list[float]:
    """Four public radii spread over a candidate grid: at 1/8, 3/8, 5/8 and 7/8 of its log range
    (a mechanism's noise per unit of radius can grow steeply near ``r*``: compared at one radius,
    the order could be that of radii no release uses)."""
    values = [float(g) for g in grid]
    low, high = min(values), max(values)
    return [low * (high / low) ** f for f in (0.125, 0.375, 0.625, 0.875)]


def _worst_ratios(figures: Mapping[str, Sequence[tuple[float, ...] | None]]) -> dict[str, float]:
    """Each mechanism's largest ratio to the best, over the sampled radii where it passes (``None``:
    refused there) and the figures compared at each (the ends of the spread range, or one
    distance); mechanisms that pass nowhere are left out."""
    def ratio(x: float, best: float) -> float:
        return x / best if best > 0 else (1.0 if x == 0 else math.inf)

    best: dict[tuple[int, int], float] = {}  # (radius, figure) → the smallest over the mechanisms
    for rows in figures.values():
        for i, row in enumerate(rows):
            for j, x in enumerate(row or ()):
                best[i, j] = min(best.get((i, j), math.inf), x)
    worst = {}
    for m, rows in figures.items():
        ratios = [ratio(x, best[i, j]) for i, row in enumerate(rows) for j, x in enumerate(row or ())]
        if ratios:
            worst[m] = max(ratios)
    return worst


def _least_worst(worst: dict[str, float], names: Sequence[str]) -> str:
    """The first mechanism, in ``names`` order, whose worst ratio is the smallest (within 1e-9: a
    tie of two laws with the same scale up to rounding goes to the earlier)."""
    low = min(worst.values())
    return next(m for m in names if m in worst and worst[m] <= low * (1.0 + 1e-9))


@blas_limited
def choose_ball_mechanism(manifold: Manifold, *, n: int, epsilon: float, delta: float | None = None,
                          auto: AutoCenter | None = None, radius: float | None = None,
                          auto_radius: AutoRadius | None = None, bound: str = "tight", calibration: str = "analytic",
                          restrict: bool = False) -> MechanismChoice:
    """``mechanism="auto"`` with ``center="auto"`` (``auto``: its ``AutoCenter``; ``radius``: a
    given radius, else chosen, with ``auto_radius`` the user's ``AutoRadius`` if one was given):
    the rule ``BALL_AUTO_RULE``, which compares whole pipelines rather than releases, because the
    centre's stage differs with the kind of noise (the K-norm mechanism's error grows like ``D``,
    the Gaussian's like ``√D``, and the Gaussian stages share δ). Each candidate's
    ``expected_distance`` is its pipeline's expected error for records of spread ``r`` (the
    second sampled radius, or the given one); its ``note`` gives ``a``, ``P``, ``Q`` there and the
    largest ratio to the best. A restricted law that would win has its acceptance estimated
    (``expected_error``) and is passed over where the release would refuse it. A function of
    public values only. Raises ``ValueError`` when every candidate is refused."""
    from .ball_first_stage import first_stage
    from .private_ball import UNSUPPORTED_MECHANISMS, AutoCenter, ball_grid, expected_auto_ball

    auto = AutoCenter() if auto is None else auto
    probe = first_stage(manifold, 1, 1.0, None, auto.bound)  # the safe region, from public values
    reference = probe.reference  # where the ball checks its candidates
    given_grid = auto_radius.grid if auto_radius is not None else None
    grid = given_grid if given_grid is not None else ball_grid(manifold, probe)
    radii = [float(radius)] if radius is not None else sample_radii(grid)
    shown = radii[min(1, len(radii) - 1)]
    names = candidate_mechanisms(manifold, delta, UNSUPPORTED_MECHANISMS)
    pipelines: dict[bool, AutoBallExpectation | str] = {}  # by the kind of noise; a str: why it is refused
    figures: dict[str, list[tuple[float, ...] | None]] = {}
    found: dict[str, Expectation] = {}
    for m in names:
        gaussian = m in GAUSSIAN_MECHANISMS and delta is not None
        if gaussian not in pipelines:
            try:
                pipelines[gaussian] = expected_auto_ball(
                    manifold, n=n, epsilon=epsilon, delta=delta, gaussian=gaussian, auto=auto,
                    radius_private=radius is None, given_quantile=auto_radius.quantile if auto_radius is not None else None,
                    grid_size=len(grid), calibration=calibration)
            except (ValueError, ArithmeticError) as err:  # its stages cannot be calibrated (classical at ε ≥ 1, say)
                pipelines[gaussian] = "refused: " + " ".join(str(err).split())
        pipeline = pipelines[gaussian]
        if isinstance(pipeline, str):
            found[m], figures[m] = Expectation(m, None, None, pipeline), [None] * len(radii)
            continue
        P, Q = pipeline.limits
        rows: list[tuple[float, ...] | None] = []
        for r in radii:
            e = expected_error(manifold, m, n=n, radius=r, epsilon=epsilon, delta=delta, center=reference, bound=bound,
                               calibration=calibration, restrict=restrict, full=False)
            a = None if e.expected_distance is None else e.expected_distance / r
            rows.append(None if a is None else (a * Q,) if radius is not None else (a * P, a * Q))
            if r == shown:
                found[m] = e if a is None else Expectation(m, a * math.hypot(P, Q * r), e.scale, "; ".join(
                    x for x in (f"about {a:.3g}·√({P:.3g}² + {Q:.3g}²·s²) at r = {r:.3g}", e.note) if x))
        figures[m] = rows
    while True:
        worst = _worst_ratios(figures)
        if not worst:
            reasons = _refusals(found, names)
            raise ValueError(f"mechanism='auto': no mechanism passes for center='auto' at n={n}, epsilon={epsilon!r}, "
                             f"delta={delta!r} on {manifold!r} ({reasons})")
        winner = _least_worst(worst, names)
        if RESTRICTED_NOTE not in found[winner].note:
            break
        full = expected_error(manifold, winner, n=n, radius=shown, epsilon=epsilon, delta=delta, center=reference,
                              bound=bound, calibration=calibration, restrict=restrict)
        if full.expected_distance is not None:
            found[winner] = dataclasses.replace(found[winner], note=found[winner].note.replace(RESTRICTED_NOTE, full.note
                                                                                                or "restricted law"))
            break
        found[winner], figures[winner] = full, [None] * len(radii)  # its acceptance: the release would refuse it
    for m, w in worst.items():
        found[m] = dataclasses.replace(found[m], note=f"{found[m].note}; at most {w:.3g}× the best")
    return MechanismChoice(winner, tuple(found[m] for m in names), BALL_AUTO_RULE)


@blas_limited
def choose_mechanism_over_radii(manifold: Manifold, *, n: int, radii: Sequence[float], epsilon: float,
                                delta: float | None = None, center: ArrayLike | None = None, bound: str = "tight",
                                calibration: str = "analytic", restrict: bool = False,
                                exclude: Sequence[str] = ()) -> MechanismChoice:
    """``mechanism="auto"`` with ``radius="auto"`` (``RADIUS_AUTO_RULE``): ``choose_mechanism`` at
    each of ``radii`` (``sample_radii`` of the public grid), then the mechanism whose largest
    ratio to the best is smallest. Each candidate's figures are those at the second radius, its
    note gives its largest ratio. Public values only."""
    choices, at, refusal = [], [], None
    for r in radii:  # a radius where every mechanism is refused (a grid's top on SPD, say) is left out
        try:
            choices.append(choose_mechanism(manifold, n=n, radius=r, epsilon=epsilon, delta=delta, center=center,
                                            bound=bound, calibration=calibration, restrict=restrict, exclude=exclude))
            at.append(r)
        except ValueError as err:
            refusal = err
    if not choices:
        raise cast(ValueError, refusal)
    radii, shown_radius = at, at[min(1, len(at) - 1)]
    names = [c.mechanism for c in choices[0].candidates]
    figures = {m: [(c.expected_distance,) if c.expected_distance is not None else None
                   for choice in choices for c in choice.candidates if c.mechanism == m] for m in names}
    worst = _worst_ratios(figures)
    shown = choices[min(1, len(choices) - 1)]
    notes = {c.mechanism: c.note for c in shown.candidates}
    while RESTRICTED_NOTE in notes.get(winner := _least_worst(worst, names), ""):  # its acceptance, now
        full = expected_error(manifold, winner, n=n, radius=shown_radius, epsilon=epsilon, delta=delta,
                              center=center, bound=bound, calibration=calibration, restrict=restrict)
        if full.expected_distance is not None:
            break
        del worst[winner]
        if not worst:
            raise ValueError(f"mechanism='auto': no mechanism passes at n={n} over radii {[f'{r:.3g}' for r in radii]}, "
                             f"epsilon={epsilon!r}, delta={delta!r} on {manifold!r} ({winner}: {full.note})")
    candidates = tuple(dataclasses.replace(c, note="; ".join(x for x in (
        c.note, f"at r = {shown_radius:.3g}", f"at most {worst[c.mechanism]:.3g}× the best over "
        f"{len(radii)} radii" if c.mechanism in worst else "") if x)) for c in shown.candidates)
    return MechanismChoice(winner, candidates, RADIUS_AUTO_RULE)


def _solve(f: Callable[[float], float | None], x0: float, target: float, *, integer: bool, low: float,
           high: float) -> float | None:
    """About the smallest ``x`` in ``[low, high]`` with ``f(x) ≤ target`` for a decreasing ``f``
    (``None``: refused there): secant steps on ``log f`` against ``log x`` from ``x0`` (slope −1
    to start: scales fall like ``1/(nε)``), then small steps up until ``f(x) ≤ target``."""
    def clamp(x: float) -> float:
        x = min(max(x, low), high)
        return float(math.ceil(x)) if integer else x

    x, y, slope = clamp(x0), f(clamp(x0)), -1.0
    for _ in range(SOLVER_STEPS):
        if y is None:  # refused (e.g. float64 reach at a large scale): more n or ε
            if x >= high:
                return None
            x = clamp(x * 4.0)
            y = f(x)
            continue
        if target * 0.995 <= y <= target:
            break
        step = clamp(math.exp(math.log(x) + (math.log(target) - math.log(y)) / slope))
        if step == x:
            break
        y_step = f(step)
        if y_step is not None and y_step != y:
            slope = min(max((math.log(y_step) - math.log(y)) / (math.log(step) - math.log(x)), -3.0), -0.05)
        x, y = step, y_step
    for _ in range(40):
        if y is not None and y <= target:
            return x
        if x >= high:
            return None
        x = clamp(x * 1.01 + (1 if integer else 0))
        y = f(x)
    return None


def required_n(manifold: Manifold, mechanism: str, *, target: float, radius: float, epsilon: float,
               delta: float | None = None, center: ArrayLike | None = None, bound: str = "tight",
               calibration: str = "analytic", restrict: bool = False, start: int = 100) -> int | None:
    """About the smallest ``n`` (within 1 %) whose expected noise distance is at most ``target``
    (public values only), or ``None`` up to ``MAX_N``."""
    def f(n: float) -> float | None:
        return expected_error(manifold, mechanism, n=int(n), radius=radius, epsilon=epsilon, delta=delta, center=center,
                              bound=bound, calibration=calibration, restrict=restrict, full=False).expected_distance

    x = _solve(f, float(start), target, integer=True, low=1.0, high=float(MAX_N))
    return None if x is None else int(x)


def required_epsilon(manifold: Manifold, mechanism: str, *, target: float, n: int, radius: float,
                     delta: float | None = None, center: ArrayLike | None = None, bound: str = "tight",
                     calibration: str = "analytic", restrict: bool = False, start: float = 1.0) -> float | None:
    """About the smallest ``ε`` (within 1 %) whose expected noise distance is at most ``target``,
    or ``None`` up to ε = 1e4."""
    def f(eps: float) -> float | None:
        return expected_error(manifold, mechanism, n=n, radius=radius, epsilon=eps, delta=delta, center=center,
                              bound=bound, calibration=calibration, restrict=restrict, full=False).expected_distance

    return _solve(f, start, target, integer=False, low=1e-6, high=1e4)


# The sensitivity factor (L/h for the Laplace-type mechanisms, L for KNG) diverges as r nears r* on a positively
# curved space: past STEEP_GROWTH times its value at r*/2 a release warns (ReleaseWarning) that the scale grows steeply.
STEEP_GROWTH = 2.0


def _sensitivity_factor(manifold: Manifold, radius: float, bound: str, kind: str) -> float:
    """``L/h`` (or ``L``) at ``radius``; for ``bound="tight"`` with the Rauch constant, a smooth function of ``r``
    (the sphere's proven spread constant, a step function of its table's radii, only lowers the calibrated scale)."""
    from .sensitivity import frechet_mean_sensitivity

    trend = "rauch" if bound == "tight" else bound
    return float(frechet_mean_sensitivity(manifold, n=1, radius=radius, kind=kind, bound=trend)) / (2.0 * radius)


def radius_growth(manifold: Manifold, radius: float, *, bound: str = "tight", kind: str = "laplace") -> float | None:
    """How many times the sensitivity factor at ``radius`` exceeds its value at ``r*/2``: ``L/h``
    (``kind="laplace"``: the Laplace-type and Gaussian mechanisms; on a sphere of curvature κ with
    the Rauch constant ``1/cos(2r√κ)``, which ``bound="tight"`` uses here) or ``L`` (``kind="kng"``).
    ``None`` where ``r*`` is infinite (no blow-up). Public values only."""
    limit = float(manifold.assumption_radius)
    if not math.isfinite(limit):
        return None
    return _sensitivity_factor(manifold, radius, bound, kind) / _sensitivity_factor(manifold, 0.5 * limit, bound, kind)


def steep_radius(manifold: Manifold, *, bound: str = "tight", kind: str = "laplace") -> float | None:
    """The radius where ``radius_growth`` reaches ``STEEP_GROWTH`` (bisection), or ``None``
    where it never does (``r*`` infinite, or KNG's ``L`` bounded)."""
    limit = float(manifold.assumption_radius)
    if not math.isfinite(limit):
        return None
    lo, hi = 0.5 * limit, limit * (1.0 - 1e-9)
    if (radius_growth(manifold, hi, bound=bound, kind=kind) or 0.0) <= STEEP_GROWTH:
        return None
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if (radius_growth(manifold, mid, bound=bound, kind=kind) or 0.0) <= STEEP_GROWTH else (lo, mid)
    return lo


def default_radii(manifold: Manifold) -> tuple[float, ...]:
    """A few radii to compare: fractions of ``r*`` where it is finite (the scale grows steeply
    near it), else ``0.5, 1, 2, 4``."""
    limit = float(manifold.assumption_radius)
    if math.isfinite(limit):
        return tuple(float(f"{f * limit:.3g}") for f in (0.125, 0.25, 0.5, 0.75, 0.9))
    return (0.5, 1.0, 2.0, 4.0)


@dataclass(frozen=True)
class PlanRow:
    """One row of ``manifold-dp plan``: ``mechanism`` at ``radius`` with ``n`` records and
    ``epsilon``: its ``expected_error`` (``None`` with ``note`` when refused), ``scale``, and the
    ``n_needed`` or ``epsilon_needed`` for an expected error of ``target_error`` (``None`` when
    not reached)."""

    radius: float
    mechanism: str
    expected_error: float | None
    scale: float | None
    target_error: float
    n_needed: int | None
    epsilon_needed: float | None
    note: str = ""


@blas_limited
def plan_table(manifold: Manifold, *, n: int, epsilon: float, delta: float | None = None,
               radii: Sequence[float] | None = None, target_error: float | None = None,
               center: ArrayLike | None = None, mechanisms: Sequence[str] | None = None, bound: str = "tight",
               calibration: str = "analytic", restrict: bool = False, solve: bool = True) -> tuple[PlanRow, ...]:
    """For every radius (``default_radii`` when none) and every mechanism ``manifold`` supports
    (the (ε, δ) ones only with ``delta``): the expected error at ``n`` and ``epsilon``, and the
    ``n`` and ``ε`` for an expected error of ``target_error`` (default: a quarter of the radius).
    Public values only; no data are read. The Riemannian Gaussian on a curved space is calibrated
    at ``n`` only; its ``n``/``ε`` needed are those of the flat Gaussian at the same Δ, scaled by
    the ratio of the two at ``n`` (said in its note), and not searched where it is refused at ``n``."""
    from .gdp import profile_method

    center = manifold.origin if center is None else center
    names = [m for m in (mechanisms or candidate_mechanisms(manifold, delta)) if supports(manifold, m)]
    rows = []
    for radius in (default_radii(manifold) if radii is None else radii):
        target = radius / 4.0 if target_error is None else float(target_error)
        for m in names:
            if m in GAUSSIAN_MECHANISMS and delta is None:
                rows.append(PlanRow(radius, m, None, None, target, None, None, "needs delta"))
                continue
            e = expected_error(manifold, m, n=n, radius=radius, epsilon=epsilon, delta=delta, center=center, bound=bound,
                               calibration=calibration, restrict=restrict, full=False)
            args: dict[str, Any] = dict(target=target, radius=radius, delta=delta, center=center, bound=bound,
                                        calibration=calibration, restrict=restrict)
            need_n = need_eps = None
            note = e.note
            slow = m == "riemannian_gaussian" and profile_method(manifold) != "exact"
            if solve and slow and e.ok:
                need_n, need_eps, note = _scaled_gaussian_needs(manifold, e, n, epsilon, args)
            elif solve and slow:  # refused at n: no ratio to scale by, and each try of a search costs seconds
                note = f"{e.note}; n and ε needed not searched (each try is a quadrature of seconds)"
            elif solve:
                need_n = required_n(manifold, m, epsilon=epsilon, start=n, **args)
                need_eps = required_epsilon(manifold, m, n=n, start=epsilon, **args)
            rows.append(PlanRow(radius, m, e.expected_distance, e.scale, target, need_n, need_eps, note))
    return tuple(rows)


def _scaled_gaussian_needs(manifold: Manifold, e: Expectation, n: int, epsilon: float,
                           args: dict[str, Any]) -> tuple[int | None, float | None, str]:
    """The Riemannian Gaussian's ``n``/``ε`` needed from the flat analytic Gaussian at its Δ,
    times the ratio of the two at ``n`` (its quadrature takes seconds a call)."""
    def flat(n_: float, eps: float) -> float | None:
        p = _public(manifold, "riemannian_gaussian", int(n_), args["center"], args["delta"], args["bound"],
                    args["calibration"], args["restrict"], args["radius"], eps)
        try:
            return _flat_gaussian_bound(manifold, p, args["radius"], eps) / RIEMANNIAN_GAUSSIAN_SCREEN
        except (ValueError, ArithmeticError):
            return None

    at_n = flat(n, epsilon)
    if at_n is None or e.expected_distance is None:
        return None, None, e.note
    ratio = e.expected_distance / at_n
    target = args["target"]
    need_n = _solve(lambda x: None if (v := flat(x, epsilon)) is None else ratio * v, float(n), target, integer=True,
                    low=1.0, high=float(MAX_N))
    need_eps = _solve(lambda x: None if (v := flat(n, x)) is None else ratio * v, epsilon, target, integer=False,
                      low=1e-6, high=1e4)
    note = f"n and ε needed: the flat Gaussian's at the same Δ × {ratio:.3g} (the ratio at n = {n})"
    return None if need_n is None else int(need_n), need_eps, note


def format_plan(rows: Sequence[PlanRow], manifold: Manifold, *, n: int, epsilon: float, delta: float | None) -> str:
    """``plan_table`` as the Markdown table ``manifold-dp plan`` prints."""
    def num(value: float | None, fmt: str = ".3g") -> str:
        return "-" if value is None else format(value, fmt)

    guarantee = f"({epsilon:g}, {delta:g})-DP" if delta is not None else f"{epsilon:g}-DP"
    lines = [f"{manifold!r}, n = {n}, {guarantee}: expected distance of the noise from the mean (public formula, "
             "no data read); 'n needed' / 'ε needed': for an expected error at most the target", "",
             "| radius | mechanism | expected error | scale σ | target | n needed | ε needed | note |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r.radius:g} | {r.mechanism} | {num(r.expected_error)} | {num(r.scale)} | {r.target_error:.3g} | "
                     f"{'-' if r.n_needed is None else f'{r.n_needed:,}'} | {num(r.epsilon_needed)} | {r.note} |")
    lines.append("")
    for radius in dict.fromkeys(r.radius for r in rows):
        ok = [r for r in rows if r.radius == radius and r.expected_error is not None and r.mechanism in MECHANISMS]
        best = min(ok, key=lambda r: (r.expected_error, MECHANISMS.index(r.mechanism)), default=None)
        lines.append(f"radius {radius:g}: " + ("no mechanism passes" if best is None else
                     f"smallest expected error {best.expected_error:.3g} with {best.mechanism} (what --mechanism auto "
                     "compares; a restricted law is checked for samplability when it wins)"))
    return "\n".join(lines)


@blas_limited
def auto_ball_summary(manifold: Manifold, *, n: int, epsilon: float, delta: float | None = None, bound: str = "tight",
                      calibration: str = "analytic", restrict: bool = False) -> str:
    """What ``center="auto"`` is expected to do (``private_ball.expected_auto_ball``), in words:
    the first stage's expected error ``E₁`` and, for data of spread ``s``, the expected error
    over that of a ball around the true centre — within 2× once ``s ≳ E₁``. Public values only."""
    from .ball_first_stage import supports as has_first_stage
    from .private_ball import UNSUPPORTED_MECHANISMS, expected_auto_ball, expected_fallback

    if not has_first_stage(manifold):
        return f"center='auto': no first stage for {manifold!r}"
    try:
        choice: MechanismChoice | None = choose_ball_mechanism(manifold, n=n, epsilon=epsilon, delta=delta, bound=bound,
                                                                calibration=calibration, restrict=restrict)
    except ValueError as err:
        choice, refusal = None, str(err)
    names = candidate_mechanisms(manifold, delta, UNSUPPORTED_MECHANISMS)
    lines = []
    for gaussian in (False, True) if delta is not None else (False,):
        kind_names = [m for m in names if (m in GAUSSIAN_MECHANISMS) == gaussian]
        if choice is not None and choice.mechanism in kind_names:  # the chosen one first, then the others in order
            kind_names.insert(0, kind_names.pop(kind_names.index(choice.mechanism)))
        try:
            e = expected_auto_ball(manifold, n=n, epsilon=epsilon, delta=delta, gaussian=gaussian, calibration=calibration)
        except (ValueError, ArithmeticError) as err:
            lines.append(f"center='auto' ({'Gaussian' if gaussian else 'K-norm'} first stage): refused: {err}")
            continue
        kind = "Gaussian (with delta)" if gaussian else "K-norm (pure ε)"
        ratios = ", ".join(f"{e.ratio(k * e.centre_error):.2g}× at s = {k * e.centre_error:.3g}" for k in (0.25, 1.0, 4.0))
        fallback = "; small n·ε: a public fallback radius" if not e.reliable else ""
        shared = e.composed  # the Gaussian stages share one μ-GDP budget
        share = "" if shared else f" with {e.centre_share:g} of ε"
        stages = ", ".join(["centre"] + (["radius search"] if e.searched else [])
                           + (["re-centring round"] if e.rounds > 1 else []) + ["release"])
        release = (f"The stages ({stages}) share one μ-GDP budget (each at its "
                   f"own ε and a part of δ: the centre {e.centre_share * epsilon:.3g}, the release "
                   f"{e.release_share * epsilon:.3g}; the whole is (ε, δ)-DP), the release's μ {e.release_strength:.2f} "
                   "of a single release's with all of (ε, δ); it" if shared else f"The release, with {e.release_share:g} of ε,")
        centre = "E1" if e.rounds == 1 else f"the re-centring round's {e.round_error:.2g}·√(E1² + s²)"
        fb, shown = None, None
        for shown in ([] if e.reliable else kind_names):  # the first mechanism of this kind the release would run
            fb = expected_fallback(manifold, n=n, epsilon=epsilon, delta=delta if gaussian else None, mechanism=shown,
                                   bound=bound, calibration=calibration, restrict=restrict)
            if fb is not None:
                break
        advice = ("E1 falls like 1/(n·ε) until it reaches the safe region's size; if you expect s < E1, ask for "
                  "AutoCenter(rounds=2) in Python (a re-centring round)." if e.rounds == 1 else
                  "Two rounds: the first stage works in a bounded chart, and a round at the private radius brings "
                  "the centre to within a fraction of the records' distance from it.")
        swamped = (" That is at least half the largest it can be: at this n·ε the private ball can hardly locate the "
                   "records, and the release warns; a public centre from domain knowledge is worth more."
                   if e.swamped else "")
        expect = (f"then errs about √(E² + s²)/({e.release_strength:.2f}·s) times a release in a ball of radius s around "
                  f"the true centre, with E = {centre}, for records of spread s (0.9-quantile distance to their mean): "
                  f"{ratios}. {advice}") if fb is None else (
            f"has the public fallback radius {fb.radius:.3g} whatever the records' spread: with {shown}, where the "
            f"records lie within it of the private centre, it errs at most about {fb.noise:.3g} (its noise there, "
            f"calibrated at the safe region's worst point; the records' spread and E1 decide only whether they fit), "
            f"and more where they do not (they are clipped). More records or epsilon let the radius stage fit the "
            f"ball to the records." if fb.useful else
            f"has the public fallback radius {fb.radius:.3g}, the smallest candidate (with {shown} every candidate's "
            f"release is mostly noise at this n·epsilon): the release stays near the private centre and errs about "
            f"as much as it, about {fb.error:.3g}.")
        lines.append(f"center='auto' ({kind} first stage in D = {e.dimension}{share}{fallback}): the "
                     f"private centre errs about E1 = {e.centre_error:.3g}.{swamped} {release} {expect}")
    if choice is None:
        lines.append(f"center='auto' with mechanism='auto': {refusal}")
    else:
        compared = "; ".join(f"{c.mechanism} {c.note.split(';')[0]}" for c in choice.candidates if c.ok)
        lines.append(f"center='auto' with mechanism='auto' takes {choice.mechanism}: the whole pipeline's expected error "
                     f"for records of spread s, each at most so many times the best at any s ({compared}).")
    return "\n".join(lines)
