"""The private Fréchet mean on the release pipeline (``privacy.release``).

``FRECHET_MEAN`` declares it: its sensitivity for what each mechanism's law is drawn around
(``calibrate``: the footpoint's, 2021 Thm 2 / 2023 Thm 3 with the certified mean's slack; KNG's
gradient field, 2022 Thm 2; the embedded records' mean for the ambient mechanisms), the records
it reads, and the certified mean itself; ``private_frechet_mean`` releases it with any mechanism of
``privacy.mechanism_specs.MECHANISMS`` (``"auto"``: the one with the smallest expected error), a
public or private radius, and a public or private centre (``center="auto"``,
``privacy.private_ball``). The proofs: docs/theory.md and docs/security.md.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike
from .._typing import Array
from ..manifolds.base import Manifold
from ..stats.frechet import certified_frechet_mean, certified_schedule
from . import measurements
from . import private_ball as _private_ball
from .accounting import PrivacyAccountant
from .float64_reach import check_reach
from .mechanism_specs import MECHANISM_NAMES
from .mechanism_specs import MECHANISMS as MECHANISM_SPECS
from .public import PublicParams
from .radius_selection import AutoRadius
from .release import (
    RADIUS_UNITS,
    AutoPlan,
    Calibration,
    Plan,
    PrivateRelease,
    ReleaseWarning,
    Statistic,
    _optimisation_note,
    _warn,
    ambient_mean,
    check_round_to,
    expected_noise_distance,
    mean_accuracy,
    output_grid,
    plan_statistic,
    release_statistic,
)
from .sensitivity import ambient_sensitivity, bound_rule, frechet_mean_sensitivity

__all__ = ["FrechetMean", "FRECHET_MEAN", "calibrate", "mean_sensitivity", "warn_if_near_limit", "plan_release",
           "private_frechet_mean"]


# --- stage 2: the sensitivity of what the law perturbs, then the measurement ----------------------

def calibrate(manifold: Manifold, mechanism: str, *, n: int, center: Array, radius: float, epsilon: float,
              delta: float | None, bound: str, calibration: str, restrict: bool) -> Calibration:
    """Stage 2 of the Fréchet mean: its sensitivity, then the measurement of ``mechanism``
    (``privacy.mechanism_specs.MECHANISMS``).

    The sensitivity is that of what the mechanism's law is drawn around (``spec.perturbs``): the
    embedded records' Euclidean mean for the ambient mechanisms; otherwise the certified mean's
    footpoint (or, for KNG, its gradient field), including the public optimisation slack
    ``2·accuracy`` and the float error of the geometry (``manifold.float_error``), so the
    guarantee holds for the computed, not the ideal, mean (KNG's density is ∇F itself: there the
    computed mean only shapes the proposal, except on a flat space, where KNG is drawn as the
    Laplace restricted to the ball around it)."""
    spec = MECHANISM_SPECS[mechanism]
    footing = dict(epsilon=epsilon, delta=delta, calibration=calibration, center=center, radius=radius, restrict=restrict)
    if spec.perturbs == "ambient_mean":
        sens = ambient_sensitivity(manifold, n=n, radius=radius, center=center)
        return Calibration(spec.measure(manifold, sens, **footing), 0.0,
                           "ambient ball radius r_E (2021 Prop. 1 / chord) and the float64 mean's rounding",
                           "Euclidean mean of the embedded records in float64, its rounding in Δ_E")
    kind = "kng" if spec.perturbs == "gradient_field" else "laplace"
    sens, accuracy = mean_sensitivity(manifold, kind, n=n, center=center, radius=radius, bound=bound)
    if not math.isfinite(sens):
        raise ValueError(f"radius={radius!r}: the mean's sensitivity bound at this radius (with the geometry's "
                         f"float error there) is not finite in float64 on {manifold!r}; give a radius about the records' "
                         "distance from the centre (manifold-dp plan compares radii)")
    meas = spec.measure(manifold, sens, **footing)
    return Calibration(meas, accuracy, _bound_name(manifold, radius, bound, kind),
                       _optimisation_note(manifold, radius, accuracy, n))


def mean_sensitivity(manifold: Manifold, kind: str, *, n: int, center: Array, radius: float,
                     bound: str) -> tuple[float, float]:
    """``(Δ, accuracy)`` of the certified Fréchet mean for the intrinsic mechanisms (``kind``
    ``"laplace"`` or ``"kng"``): the bound of ``frechet_mean_sensitivity`` widened by the float
    error of the geometry, plus twice the public optimisation slack (not for KNG on a curved space,
    whose density is ∇F itself). Public values only."""
    base = frechet_mean_sensitivity(manifold, n=n, radius=radius, kind=kind, bound=bound)
    base *= 1.0 + 2.0 * manifold.float_error(center, radius) / radius
    accuracy = mean_accuracy(manifold, center, radius, base)
    flat = tuple(manifold.curvature_bounds) == (0.0, 0.0)
    return float(base if kind == "kng" and not flat else base + 2.0 * accuracy), accuracy


def _bound_name(manifold: Manifold, radius: float, bound: str, kind: str) -> str:
    if manifold.curvature_bounds[1] <= 0:
        return "2r/n (non-positive curvature: h = L = 1)" if kind == "laplace" else "2r/n (KNG, non-positive curvature)"
    return bound_rule(manifold, radius, bound)


def warn_if_near_limit(manifold: Manifold, radius: float, mechanism: str, bound: str) -> None:
    """``ReleaseWarning`` (public) when ``radius`` is so close to ``r*`` that the sensitivity
    factor (``L/h``; ``L`` for KNG) exceeds ``planning.STEEP_GROWTH`` times its value at ``r*/2``:
    there the noise scale grows steeply (it diverges at ``r*``). Not for the ambient mechanisms,
    whose sensitivity is the chord of the ball."""
    perturbs = MECHANISM_SPECS[mechanism].perturbs
    if perturbs == "ambient_mean":
        return
    from .planning import STEEP_GROWTH, radius_growth, steep_radius

    kind = "kng" if perturbs == "gradient_field" else "laplace"
    growth = radius_growth(manifold, radius, bound=bound, kind=kind)
    if growth is not None and growth > STEEP_GROWTH:
        safe = steep_radius(manifold, bound=bound, kind=kind)
        _warn(f"radius={radius:g} is close to r* = {manifold.assumption_radius:.4g} on {manifold!r}: the sensitivity "
              f"factor ({'L' if kind == 'kng' else 'L/h'}) is {growth:.3g} times its value at r*/2, so the noise scale "
              f"grows steeply here and diverges at r*; a radius up to {safe:.3g} keeps it within {STEEP_GROWTH:g} times "
              "(manifold-dp plan compares radii)", ReleaseWarning)


class FrechetMean(Statistic):
    """The Fréchet mean ``argmin_x (1/n) Σ ρ²(x, x_i)`` of the records clipped into the public
    ball, certified by a public schedule of steps (``stats.frechet.certified_frechet_mean``);
    every registered mechanism, ``mechanism="auto"`` and ``center="auto"``."""

    name: str = "frechet_mean"
    mechanisms: tuple[str, ...] = MECHANISM_NAMES
    auto_mechanism: bool = True
    private_ball: bool = True
    options: tuple[str, ...] = ("delta", "bound", "calibration", "restrict")
    cli_name: str = "mean"

    def stages(self, manifold: Manifold, p: PublicParams, radius: float, epsilon: float,
               round_to: float | str | None, warn: bool = True) -> tuple[Calibration, float | None]:
        """Stage 2 of the mean at ``radius`` and ``epsilon``: ``(calibration, output grid)``, or a
        ``ValueError`` — public values only."""
        center = p.center
        cal = calibrate(manifold, p.mechanism, n=p.n, center=center, radius=radius, epsilon=epsilon, delta=p.delta,
                        bound=p.bound, calibration=p.calibration, restrict=p.restrict)
        spec = MECHANISM_SPECS[cal.measurement.mechanism]
        if spec.gaussian_tail:
            check_reach(manifold, center, radius, cal.sigma, cal.restricted, gaussian=True)
        else:
            check_reach(manifold, center, radius, cal.sigma, cal.restricted, tail=spec.tail)
        return cal, check_round_to(round_to, output_grid(manifold, cal.sigma, center, radius), warn=warn)

    def reads(self, manifold: Manifold, cal: Calibration, radius: float, n: int) -> tuple[bool, bool]:
        """Whether the mean reads the prepared records, and their log mean at the centre (public:
        the space, the mechanism and the certified mean's schedule). On a flat chart the mean is
        ``exp_center`` of the clipped log mean alone; schedules from the extrinsic mean do not
        start from the log mean (KNG's gradient field reads the same certified mean)."""
        statistic = cal.measurement.statistic
        footpoint = statistic == "frechet_mean"
        if manifold.flat_chart or statistic not in ("frechet_mean", "gradient_field"):
            return not (manifold.flat_chart and footpoint), True
        return True, certified_schedule(manifold, radius, cal.accuracy, n).start != "extrinsic"

    def compute(self, manifold: Manifold, p: PublicParams, radius: float, cal: Calibration, records: Any) -> Any:
        """What the measurement's law is drawn around: the certified mean, ``(records, mean)`` for
        KNG's gradient field, the embedded records' Euclidean mean for the ambient mechanisms."""
        statistic = cal.measurement.statistic
        if statistic == "ambient_mean":
            return ambient_mean(manifold, records)
        with np.errstate(all="ignore"):
            mean = certified_frechet_mean(manifold, records, p.center, radius, cal.accuracy)
        return (records, mean) if statistic == "gradient_field" else mean

    def before_charge(self, manifold: Manifold, p: PublicParams, radius: float) -> None:
        warn_if_near_limit(manifold, radius, p.mechanism, p.bound)

    def noise_against_room(self, manifold: Manifold, measurement: measurements.Measurement,
                           radius: float) -> tuple[float, float, str, str, str]:
        """The noise's expected distance (``expected_noise_distance``) against the radius."""
        noise = expected_noise_distance(manifold, measurement)
        what = (f"the expected distance of the noise from the mean (≈ {noise:.3g} for mechanism={measurement.mechanism!r}, "
                f"scale {measurement.scale:.3g}, dimension {manifold.dim})")
        return noise, radius, what, f"the ball radius {radius:g}", "; on a curved space a smaller radius also helps"


FRECHET_MEAN: FrechetMean = FrechetMean()


# --- the public functions -----------------------------------------------------------------------

def plan_release(X: ArrayLike, manifold: Manifold, *, center: ArrayLike, radius: float | str | AutoRadius | None = None,
                 epsilon: float, delta: float | None = None, mechanism: str = "laplace", bound: str = "tight",
                 calibration: str = "analytic", restrict: bool = False, round_to: float | str | None = "auto",
                 accountant: PrivacyAccountant | None = None,
                 strict: bool = False) -> Plan | AutoPlan | _private_ball.BallPlan:
    """Stages 1–4 of ``private_frechet_mean`` without the draw (audits and experiments draw many
    releases from one calibrated plan). Charges ``accountant`` once. A ``privacy.release.Plan``;
    with ``radius="auto"`` an ``AutoPlan``, whose draws are pairs ``(radius, release)``; with
    ``center="auto"`` a ``privacy.private_ball.BallPlan``, whose ``release(rng)`` runs every stage."""
    return plan_statistic(FRECHET_MEAN, X, manifold, center=center, radius=radius, epsilon=epsilon, delta=delta,
                          mechanism=mechanism, bound=bound, calibration=calibration, restrict=restrict, round_to=round_to,
                          accountant=accountant, strict=strict)


def private_frechet_mean(X: ArrayLike, manifold: Manifold, *, center: ArrayLike, radius: float | str | AutoRadius | None = None,
                         epsilon: float, delta: float | None = None, mechanism: str = "laplace", bound: str = "tight",
                         calibration: str = "analytic", restrict: bool = False, round_to: float | str | None = "auto",
                         accountant: PrivacyAccountant | None = None, rng: RngLike = None,
                         strict: bool = False) -> PrivateRelease:
    """Release an ε-DP (or (ε, δ)-DP) Fréchet mean of the records ``X`` on ``manifold``.

    Neighbouring datasets replace one record; ``n = len(X)``, ``center`` and ``radius`` are
    public. Records are clipped into ``B_radius(center)``; non-finite or off-manifold records are
    replaced by ``center`` (``strict=True`` refuses them instead). The steps are in the module
    docstring; the proofs in docs/theory.md and docs/security.md.

    Parameters
    ----------
    X : array_like, shape ``(n, *manifold.point_shape)``
        The records (or a layout of ``manifold.user_point_shapes``, e.g. real Kendall
        landmarks ``(n, k, 2)``); a Dask array is read block by block.
    manifold : Manifold
        The space (``manifold_dp.manifolds.REGISTRY``).
    center : array_like, "auto" or AutoCenter
        The public centre: one point of ``manifold``, chosen without looking at the data.
        ``"auto"`` (``AutoCenter()``): a private ball instead (``privacy.private_ball``,
        docs/private_ball.md): a rough private centre that needs no ball (0.2·ε), a private
        radius around it (0.1·ε; a number given as ``radius`` skips it; ``radius`` left out means
        ``"auto"`` here, and is required otherwise), the release with the rest; every stage in the
        certificate's ``center_selection``. In-memory records only.
    RADIUS_UNITS
    epsilon : float
        ε > 0 of the guarantee (the total, with ``radius="auto"`` or ``center="auto"``).
    delta : float, optional
        δ ∈ (0, 1), required by the Gaussian mechanisms; a pure ε-DP release reports
        ``delta = 0`` whatever is given.
    mechanism : str
        One of ``"laplace"``, ``"kng"``, ``"tangent_gaussian"``, ``"ambient_laplace"``, ``"coordinate_laplace"``,
        ``"ambient_gaussian"``, ``"riemannian_gaussian"``, ``"wrapped_laplace"``, ``"wrapped_gaussian"``.
        ``"laplace"``: Riemannian Laplace (Reimherr et al. 2021, Thm 1/3), ``σ = Δ/ε``
        unrestricted when that law is integrable and fits float64, else (or with
        ``restrict=True``) ``σ = 2Δ/ε`` restricted to the ball. ``"kng"``: K-norm gradient (Soto
        et al. 2022, Thm 1). ``"tangent_gaussian"``: Gaussian in a flat chart (SPD log-Euclidean,
        Euclidean; Utpala et al. 2023, Thm 4; needs ``delta``). The ambient ones: Euclidean
        noise on the mean of the embedded records, projected back (baselines on the sphere,
        SPD and Euclidean; ``"ambient_gaussian"`` needs ``delta``). ``"riemannian_gaussian"``:
        density ``∝ exp(−ρ²/(2σ²))`` around the certified mean (Jiang et al. 2023), ``(ε, δ)``-DP
        by a numerical privacy profile, the certificate's rule gives μ (GDP); needs ``delta``.
        ``"wrapped_laplace"`` / ``"wrapped_gaussian"``: ℓ2 K-norm / Gaussian noise added to
        ``log_center(mean)`` in the tangent space at the public centre, mapped back with ``exp``
        (non-positively curved spaces only; docs/gaussian_family.md).
    bound : {"tight", "rauch", "paper"}
        The constant ``L`` of the sensitivity on positively curved spaces (``frechet_mean_sensitivity``):
        ``"tight"`` the smallest proven one (on a ``Sphere`` the proven spread constant where it is
        below the Rauch constant), ``"rauch"`` the Rauch constant, ``"paper"`` the papers' ``2 − h``.
    calibration : {"analytic", "classical"}
        The Gaussian calibration (Balle & Wang 2018; Dwork & Roth 2014, Thm A.1, ε < 1).
    restrict : bool
        Force the Laplace law restricted to the ball.
    round_to : "auto", float or None
        ``"auto"``: snap the output to a public power-of-two grid (post-processing that removes
        float low-order-bit leaks); a number sets the grid; ``None`` opts out, with a
        ``ReleaseWarning``.
    accountant : PrivacyAccountant, optional
        Charged before the data are read (both parts, with ``radius="auto"``): a release that
        fails later still counts.
    rng : numpy.random.Generator, int or None
        ``None`` (default): OS entropy. A seed only for tests: it reveals the noise.
    strict : bool
        Refuse (``InvalidRecordsError``, before the charge) when any record is non-finite or not
        on the manifold, instead of replacing it by the centre.

    Returns
    -------
    PrivateRelease
        ``point`` (a representative fixed by public information; Kendall: rotated against the
        centre) and its ``certificate`` (``radius_selection`` set with ``radius="auto"``).

    Raises
    ------
    ValueError, TypeError
        A public parameter or the records' container is invalid, or the release cannot be
        carried out at these public values (float64 reach, an unsamplable restricted law, too
        many certified steps; with ``radius="auto"``, no candidate radius passes); messages
        quote parameters, never data.
    BudgetExceededError
        The accountant's budget would be exceeded (nothing is charged).
    InvalidRecordsError
        ``strict=True`` and some records are invalid (counts only; a data-dependent event).
    RuntimeError
        A sampler failed after the charge (probability ≤ 2⁻⁴⁵, docs/security.md).

    Warns
    -----
    ReleaseWarning
        Public: ``round_to=None``; the noise's expected distance (``expected_noise_distance``)
        exceeds the radius, so the release is mostly noise.
    RecordsWarning
        For the data holder only: how many records were replaced or clipped (counts only;
        skipped for Dask arrays). Filter it where warnings reach untrusted parties.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp import Sphere, private_frechet_mean
    >>> S = Sphere(2)
    >>> X = S.random_point(S.origin, 0.3, size=1000, rng=0)
    >>> rel = private_frechet_mean(X, S, center=S.origin, radius=0.4, epsilon=1.0, rng=1)
    >>> bool(S.dist(S.origin, rel.point) < 0.5), rel.certificate.mechanism
    (True, 'laplace')
    >>> auto = private_frechet_mean(X, S, center=S.origin, radius="auto", epsilon=1.0, rng=1)
    >>> sel = auto.certificate.radius_selection
    >>> round(sel.epsilon + sel.release_epsilon, 12), auto.radius == sel.chosen_radius
    (1.0, True)
    """
    return release_statistic(FRECHET_MEAN, X, manifold, center=center, radius=radius, epsilon=epsilon, delta=delta,
                             mechanism=mechanism, bound=bound, calibration=calibration, restrict=restrict,
                             round_to=round_to, accountant=accountant, rng=rng, strict=strict)


if private_frechet_mean.__doc__:  # None under python -OO
    private_frechet_mean.__doc__ = private_frechet_mean.__doc__.replace("RADIUS_UNITS", RADIUS_UNITS)
