"""The release pipeline, and the private statistics declared on it.

Stages, in this order (docs/security.md, public-only control flow):

1. ``check_public`` — the public parameters and the records' container (errors quote
   parameters only);
2. calibrate — a sensitivity bound for the statistic, then a measurement from
   ``privacy.measurements`` (scale, event, every refusal: float overflow, an unsamplable
   restricted law, a hyperbolic ball beyond float precision) — public values only;
3. ``charge`` the accountant: from here on a failure still counts as spent;
4. ``prepare_records`` (bad ones → centre, clip into the ball; numpy and Dask alike), then the
   certified statistic by a number of steps fixed in advance;
5. ``finish`` — the public representative (``manifold.canonical``) and the public output grid
   (float-safe by default) — and the ``Certificate``.

A private statistic is a small declaration on top: ``private_frechet_mean`` and
``private_frechet_variance`` below. Whether a release succeeds, which error it raises, what it
warns and (up to the samplers' noise, docs/security.md) how long it runs depend on public
parameters only. The non-private statistic never leaves this module.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.special import gammainccinv

from .._random import as_generator
from .._validation import check_delta, check_epsilon, check_positive, check_radius
from ..manifolds import Euclidean
from ..manifolds.base import check_order
from ..records import is_dask
from ..stats.frechet import (MAX_CERTIFIED_ITERATIONS, certified_frechet_mean, certified_iterations, hessian_upper_bound,
                              mean_squared_distance)
from . import measurements
from numpy.typing import ArrayLike

from .._random import RngLike
from ..manifolds.base import Manifold
from .accounting import PrivacyAccountant, check_accountant
from .certificate import Certificate
from .sensitivity import ambient_sensitivity, frechet_mean_sensitivity, hessian_lower_bound

__all__ = ["ReleaseWarning", "PrivateRelease", "validate_center", "record_count", "check_public",
           "Calibration", "mean_accuracy", "calibrate", "check_reach", "charge", "prepare_records",
           "prepared", "ambient_mean", "output_grid", "finish", "check_round_to", "Plan",
           "plan_release", "private_frechet_mean", "frechet_variance_sensitivity",
           "private_frechet_variance"]

MECHANISMS = ("laplace", "kng", "tangent_gaussian") + measurements.AMBIENT_MECHANISMS
OPTIMISATION_SLACK = 1e-6  # the mean is certified within max(OPTIMISATION_SLACK·Δ, FLOAT_FLOOR·r) of the exact one
FLOAT_FLOOR = 1e-10
LOG_FLOAT_MAX = 700.0  # exp overflows float64 past ~709.78
GRID_BELOW_SCALE = 2.0**-20  # default output grid: ~1e-6 of the noise scale ...
GRID_ABOVE_ULP = 2.0**-40  # ... and at least 2^12 float spacings of the coordinates


class ReleaseWarning(UserWarning):
    """A warning about a release; its text is a function of public parameters only."""


@dataclass(frozen=True)
class PrivateRelease:
    """A private statistic and its certificate. ``value`` (``point`` for a mean) is the only
    data-dependent value."""

    value: object
    certificate: Certificate = field(repr=False)

    point = property(lambda self: self.value, doc="The released point (a private mean).")
    epsilon = property(lambda self: self.certificate.epsilon)
    delta = property(lambda self: self.certificate.delta)
    mechanism = property(lambda self: self.certificate.mechanism)
    sensitivity = property(lambda self: self.certificate.sensitivity)
    scale = property(lambda self: self.certificate.scale)

    def to_dict(self, value=None):
        """``{"value": …, "certificate": …}``; ``value`` overrides the layout of the value (the
        CLI passes Kendall landmarks). Complex values become ``{"real", "imag"}``."""
        v = np.asarray(self.value if value is None else value)
        out = {"real": v.real.tolist(), "imag": v.imag.tolist()} if np.iscomplexobj(v) else v.tolist()
        return {"value": out, "certificate": self.certificate.to_dict()}

    def to_json(self, value=None, **kwargs):
        """``to_dict`` as JSON (the CLI's output; the certificate part follows ``CERTIFICATE_SCHEMA``)."""
        return json.dumps(self.to_dict(value), **kwargs)

    def summary(self):
        return self.certificate.summary()


# --- stage 1: public parameters and the records' container --------------------------------

def validate_center(manifold, center):
    """The public centre as one point of ``manifold`` (no batch axes), or a ``ValueError``/``TypeError``
    naming ``center``. Layouts in ``manifold.user_point_shapes`` (Kendall: real landmarks) too."""
    if isinstance(center, (str, bytes)) or isinstance(center, np.ma.MaskedArray):
        raise TypeError(f"center must be a numeric array holding one point of {manifold!r}, got {type(center).__name__}")
    try:
        c = np.asarray(center)
    except (ValueError, TypeError, OverflowError):
        raise TypeError(f"center must be a numeric array holding one point of {manifold!r}") from None
    if c.dtype.kind not in "biufc":
        raise TypeError(f"center must be a numeric array holding one point of {manifold!r}, got dtype kind {c.dtype.kind!r}")
    if np.iscomplexobj(c) and not np.issubdtype(np.dtype(manifold.dtype), np.complexfloating):
        raise TypeError(f"center must be real for {manifold!r}, got a complex array")
    if c.shape not in (tuple(manifold.point_shape),) + tuple(manifold.user_point_shapes):
        raise ValueError(f"center must be one point of shape {tuple(manifold.point_shape)} for {manifold!r}, got shape {c.shape}")
    with np.errstate(all="ignore"):
        c = manifold.as_points(c)
    return manifold.validate_point(c, "center")


def record_count(manifold, X):
    """``n`` (public) after checking the container: a numeric array ``(n, *point_shape)`` (or a
    layout of ``manifold.user_point_shapes``), ``n ≥ 1``. Masked arrays, strings, dates and
    objects are refused rather than guessed at."""
    if isinstance(X, np.ma.MaskedArray):
        raise TypeError("X is a masked array: the mask would be ignored; drop or fill the masked records first")
    if is_dask(X):
        shape, kind = X.shape, np.dtype(X.dtype).kind
    else:
        try:
            arr = np.asarray(X)
        except (ValueError, TypeError, OverflowError):
            raise TypeError(f"X must be a numeric array of records of {manifold!r}") from None
        shape, kind = arr.shape, arr.dtype.kind
    if kind not in "biufc":
        raise TypeError(f"X must be a numeric array of records of {manifold!r}, got dtype kind {kind!r}")
    if kind == "c" and not np.issubdtype(np.dtype(manifold.dtype), np.complexfloating):
        raise TypeError(f"X must be real-valued for {manifold!r}, got complex records")
    point = tuple(manifold.point_shape)
    layouts = (point,) + (tuple(manifold.user_point_shapes) if kind != "c" else ())  # user layouts are real
    if len(shape) < 1 or tuple(shape[1:]) not in layouts:
        raise ValueError(f"X must have shape (n, {', '.join(map(str, point))}), got {tuple(shape)}")
    if shape[0] == 0:
        raise ValueError("X must hold at least one record (n >= 1)")
    return int(shape[0])


def check_public(X, manifold, *, center, radius, epsilon, delta, mechanism, bound, calibration, restrict, accountant):
    """Stage 1: every public parameter checked, in a fixed order; returns them normalised."""
    check_order(X, manifold, "a private release")
    epsilon = check_epsilon(epsilon)
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    gaussian = mechanism in ("tangent_gaussian", "ambient_gaussian")
    delta = check_delta(delta, required=gaussian) if gaussian or delta is not None else None
    if calibration not in measurements.CALIBRATIONS:
        raise ValueError(f"calibration must be 'analytic' or 'classical', got {calibration!r}")
    if bound not in ("tight", "paper"):
        raise ValueError(f"bound must be 'tight' or 'paper', got {bound!r}")
    if not isinstance(restrict, (bool, np.bool_)):
        raise TypeError(f"restrict must be True or False, got {type(restrict).__name__}")
    accountant = check_accountant(accountant)
    radius = check_radius(manifold, radius)
    center = validate_center(manifold, center)
    if mechanism == "tangent_gaussian" and not manifold.flat_chart:
        raise ValueError(f"mechanism='tangent_gaussian' needs a manifold with a flat chart (SPDLogEuclidean, Euclidean), got {manifold!r}")
    if mechanism in measurements.AMBIENT_MECHANISMS and manifold.ambient_dim is None:
        raise ValueError(f"mechanism={mechanism!r} needs an ambient embedding; {manifold!r} has none")
    if mechanism == "kng" and is_dask(X):
        raise ValueError("mechanism='kng' evaluates ∇F over all records at every proposal: not supported on Dask arrays")
    n = record_count(manifold, X)
    return dict(n=n, center=center, radius=radius, epsilon=epsilon, delta=delta, mechanism=mechanism, bound=bound,
                calibration=calibration, restrict=bool(restrict), accountant=accountant)


# --- stage 2: calibration, from public values only ------------------------------------------

@dataclass(frozen=True)
class Calibration:
    """Everything about a release that is fixed before the data are read."""

    measurement: measurements.Measurement
    accuracy: float  # how close the computed statistic's footpoint is guaranteed to be to the exact one
    sensitivity_bound: str
    optimisation: str

    sigma = property(lambda self: self.measurement.scale)
    sensitivity = property(lambda self: self.measurement.sensitivity)
    restricted = property(lambda self: self.measurement.restricted)


def mean_accuracy(manifold, center, radius, base_sensitivity):
    """How close the certified mean is guaranteed to be to the exact minimiser (public)."""
    return max(OPTIMISATION_SLACK * base_sensitivity, FLOAT_FLOOR * radius) + manifold.float_error(center, radius)


def calibrate(manifold, mechanism, *, n, center, radius, epsilon, delta, bound, calibration, restrict):
    """Stage 2 of the Fréchet mean: its sensitivity, then the measurement.

    The sensitivity includes the public optimisation slack ``2·accuracy`` and the float error of
    the geometry (``manifold.float_error``), so the guarantee holds for the computed, not the
    ideal, mean (KNG's density is ∇F itself: there the computed mean only shapes the proposal,
    except on a flat space, where KNG is drawn as the Laplace restricted to the ball around it).
    Laplace: unrestricted when asked and when that law is integrable and fits float64, else
    restricted to the ball (the measurement gives the scale in both cases)."""
    if mechanism in measurements.AMBIENT_MECHANISMS:
        sens = ambient_sensitivity(manifold, n=n, radius=radius, center=center)
        meas = measurements.ambient(manifold, mechanism, sens, epsilon, delta, calibration=calibration,
                                    floor=manifold.ambient_floor(center, radius))
        return Calibration(meas, 0.0, "ambient ball radius r_E (2021 Prop. 1 / chord)", "exact Euclidean mean of the embedded records")
    kind = "kng" if mechanism == "kng" else "laplace"
    base = frechet_mean_sensitivity(manifold, n=n, radius=radius, kind=kind, bound=bound)
    base *= 1.0 + 2.0 * manifold.float_error(center, radius) / radius
    accuracy = mean_accuracy(manifold, center, radius, base)
    flat = tuple(manifold.curvature_bounds) == (0.0, 0.0)
    sens = float(base if kind == "kng" and not flat else base + 2.0 * accuracy)
    if mechanism == "tangent_gaussian":
        meas = measurements.tangent_gaussian(manifold, sens, epsilon, delta, calibration=calibration)
    elif mechanism == "kng":
        meas = measurements.kng(manifold, sens, epsilon, center=center, radius=radius)
    else:
        meas = _laplace(manifold, sens, epsilon, center, radius, restrict)
    return Calibration(meas, accuracy, _bound_name(manifold, bound, kind), _optimisation_note(manifold, radius, accuracy))


def _laplace(manifold, sens, epsilon, center, radius, restrict):
    """The unrestricted Laplace where it is integrable and its draws fit float64, else restricted."""
    note = ""
    if not restrict:
        try:
            meas = measurements.laplace(manifold, sens, epsilon)
        except ValueError:
            note = f"; the unrestricted law is not integrable at this Δ/ε (needs σ < {manifold.laplace_sigma_limit:.4g})"
        else:
            if _fits_float64(manifold, center, radius, meas.scale, False):
                return meas
            note = "; the unrestricted law would overflow float64 (its tail reaches past exp's range)"
    meas = measurements.laplace(manifold, sens, epsilon, restrict_to=(center, radius))
    return dataclasses.replace(meas, scale_rule=meas.scale_rule + note)


def _optimisation_note(manifold, radius, accuracy):
    if manifold.flat_chart:
        return "closed-form mean; float error included in the sensitivity"
    kmin, kmax = manifold.curvature_bounds
    h, H = hessian_lower_bound(radius, kmax), hessian_upper_bound(4 * radius, kmin)
    steps = certified_iterations(h, H, radius, accuracy)
    if steps > MAX_CERTIFIED_ITERATIONS:  # refused here, from public values, before the accountant is charged
        raise ValueError(
            f"certifying the Fréchet mean to {accuracy:.3g} at radius={radius!r} on {manifold!r} needs {steps} "
            f"gradient steps (h = {h:.3g}, H = {H:.3g}); use a smaller radius")
    return (f"mean within {accuracy:.3g} of the exact minimiser after a fixed {steps} projected gradient steps "
            "(strong convexity and smoothness on the ball); twice that is included in the sensitivity")


def _bound_name(manifold, bound, kind):
    if manifold.curvature_bounds[1] <= 0:
        return "2r/n (non-positive curvature: h = L = 1)" if kind == "laplace" else "2r/n (KNG, non-positive curvature)"
    if bound == "tight":
        return "tight: L = 2r√κ/sin(2r√κ) (Rauch comparison)"
    return "paper: L = 2 − h (Karcher; 2021 Thm 2 / 2022 Thm 2)"


def check_reach(manifold, center, radius, sigma, restricted):
    """Refuse, from public parameters only, a release that float64 cannot carry: a ball beyond
    ``manifold.max_reach`` from the origin (hyperbolic), or a noise scale whose draw would
    overflow ``exp`` (eigenvalues ``e^λ`` on SPD, ``cosh ρ`` on hyperbolic space) with
    probability above 1e-12."""
    check_ball(manifold, center, radius)
    if not _fits_float64(manifold, center, radius, sigma, restricted):
        raise ValueError(f"the noise scale sigma={sigma:.4g} is too large for a float64 release on {manifold!r}; "
                         "increase epsilon or n, or shrink radius")


def check_ball(manifold, center, radius):
    """Refuse a public ball beyond ``manifold.max_reach`` from the origin (hyperbolic): farther out
    float64 coordinates lose the precision the sensitivity bounds need."""
    offset = manifold.exp_coordinate_offset(center)
    if np.isfinite(manifold.max_reach) and offset + radius > manifold.max_reach:
        raise ValueError(
            f"on {manifold!r} the ball must lie within distance {manifold.max_reach:g} of the origin "
            f"(ρ(origin, center) + radius = {offset + radius:.4g}): farther out the coordinates lose the precision "
            "the sensitivity bound needs; move the data and centre towards the origin by an isometry first")


def _fits_float64(manifold, center, radius, sigma, restricted):
    """Whether a draw at scale ``sigma`` keeps ``exp``-grown coordinates inside float64 except
    with probability 1e-12. Public values only."""
    base = manifold.exp_coordinate_offset(center)
    if base is None:
        return True
    if restricted:
        reach = radius
    else:
        rate = 1.0 / sigma - 1.0 / manifold.laplace_sigma_limit  # the radial law's exponential tail
        reach = float(gammainccinv(manifold.dim, 1e-12)) / rate if rate > 0 else np.inf
    return base + radius + reach <= LOG_FLOAT_MAX


# --- stage 3: the accountant ------------------------------------------------------------------

def charge(accountant, measurement):
    """Charge ``measurement``'s event before the data are read: what fails later still counts."""
    if accountant is not None:
        accountant.charge(measurement.event)


# --- stage 4: the records ---------------------------------------------------------------------

def prepare_records(manifold, X, center, radius):
    """Record by record: non-finite or off-manifold records become ``center``
    (data-independent), the rest are projected onto the manifold and clipped into
    ``B_radius(center)``. Returns ``(records, n_replaced)``; ``n_replaced`` is not private.
    Users' layouts (``manifold.user_point_shapes``) are converted first."""
    X = np.asarray(X)
    with np.errstate(all="ignore"):
        X = np.asarray(manifold.as_points(X), dtype=manifold.dtype)
        ok = manifold.belongs(X)
        safe = np.where(manifold._expand(ok), X, center)
        X = np.where(manifold._expand(ok), manifold.project(safe), center)
        X = manifold.clip_to_ball(X, center, radius)
    return X, int(np.sum(~ok))


def prepared(manifold, X, center, radius):
    """The prepared records, in memory or (Dask) prepared block by block on the workers."""
    if not is_dask(X):
        return prepare_records(manifold, X, center, radius)[0]
    X = X.rechunk({i: -1 for i in range(1, X.ndim)})
    return X.map_blocks(_prepare_block, manifold, center, radius, dtype=manifold.dtype)


def _prepare_block(block, manifold, center, radius):
    return prepare_records(manifold, block, center, radius)[0]


def ambient_mean(manifold, records):
    """The Euclidean mean of the embedded records (``manifold.to_ambient``)."""
    if is_dask(records):
        D = manifold.ambient_dim
        return records.map_blocks(manifold.to_ambient, dtype=float, drop_axis=list(range(2, records.ndim)),
                                  chunks=(records.chunks[0], (D,))).mean(axis=0).compute()
    return np.mean(manifold.to_ambient(records), axis=0)


# --- stage 5: the output's representative and grid ------------------------------------------

def output_grid(manifold, sigma, center, radius):
    """The default public grid spacing of a release: a power of two ≈ ``2^-20`` of the noise scale
    in coordinates, and at least ``2^12`` float spacings of the coordinates' public magnitude
    (``manifold.grid_scales``), so the low-order bits of a float sampler (Mironov 2012) are
    rounded away (docs/security.md)."""
    move, scale = manifold.grid_scales(center, radius, sigma)
    g = max(move * GRID_BELOW_SCALE, scale * GRID_ABOVE_ULP)
    return float(2.0 ** math.ceil(math.log2(g)))


def finish(manifold, points, center, grid, sigma):
    """Post-processing of raw draws (batch or single): canonical representative, snap to ``grid``
    (``None``: no snapping), back onto the manifold, and refuse a non-representable point."""
    points = manifold.canonical(center, np.asarray(points))  # Kendall: rotated against the public centre
    if grid is not None:
        if np.iscomplexobj(points):
            points = np.round(points.real / grid) * grid + 1j * (np.round(points.imag / grid) * grid)
        else:
            points = np.round(points / grid) * grid
        with np.errstate(all="ignore"):
            points = manifold.snap(points, grid)
    if not manifold.check_point(points)[0]:
        raise ValueError(f"the release at noise scale sigma={sigma:.4g} is not representable in float64 on {manifold!r}; nothing was released")
    return points


def check_round_to(round_to, grid_auto):
    """The output grid: ``"auto"`` (the public default), a spacing, or ``None`` (raw, warned)."""
    if isinstance(round_to, str):
        if round_to != "auto":
            raise ValueError(f"round_to must be 'auto', None or a grid spacing > 0, got {round_to!r}")
        return grid_auto
    if round_to is None:
        warnings.warn("round_to=None releases raw float64 output, whose low-order bits can leak the data "
                      "(docs/security.md); the default round_to='auto' removes that", ReleaseWarning, stacklevel=4)
        return None
    g = check_positive(round_to, "round_to")
    if g > grid_auto * 2.0**19:  # coarser than half the noise scale in coordinates: the grid would be the release
        raise ValueError(f"round_to={round_to!r} is coarser than the noise; use at most {grid_auto * 2.0**19:.3g} (or 'auto')")
    return g


def _grid_note(grid):
    return ("none (raw float64: round_to=None)" if grid is None else
            f"snapped to a public grid of {grid!r} in array coordinates, then projected (post-processing)")


# --- the pipeline -------------------------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    """A calibrated, charged release ready to draw: the statistic stays inside. ``draw(size)``
    gives finished releases exactly as the public function returns them (the audit draws many
    from one plan); ``certificate(acceptance)`` their certificate."""

    manifold: object
    center: np.ndarray
    grid: float | None
    calibration: Calibration
    public: dict = field(repr=False)
    _statistic: object = field(repr=False)
    _post: object = field(repr=False, default=None)

    def draw(self, size=None, *, rng=None):
        return self.draw_with_stats(size, rng=rng)[0]

    def draw_with_stats(self, size=None, *, rng=None):
        """``(releases, acceptance)``; the acceptance is ``None`` where it depends on the data."""
        raw, acceptance = self.calibration.measurement.sample_with_stats(self._statistic, size, rng=as_generator(rng))
        if self._post is not None:
            raw = self._post(raw)
        return finish(self.manifold, raw, self.center, self.grid, self.calibration.sigma), acceptance

    def certificate(self, acceptance):
        m, cal = self.calibration.measurement, self.calibration
        from .. import __version__

        return Certificate(
            statistic=self.public["statistic"], mechanism=m.mechanism, mechanism_title=m.title, theorem=m.theorem,
            epsilon=m.epsilon, delta=m.delta, manifold=repr(self.public["manifold"]), n=self.public["n"],
            radius=self.public["radius"], sensitivity=m.sensitivity, sensitivity_bound=cal.sensitivity_bound,
            scale=m.scale, scale_rule=m.scale_rule, restriction=m.restriction, sampler=m.sampler,
            sampler_acceptance=None if acceptance is None else round(float(acceptance), 4),
            optimisation=cal.optimisation, output_grid=_grid_note(self.grid), output_grid_spacing=self.grid,
            library_version=__version__)


def plan_release(X: ArrayLike, manifold: Manifold, *, center: ArrayLike, radius: float, epsilon: float,
                 delta: float | None = None, mechanism: str = "laplace", bound: str = "tight", calibration: str = "analytic",
                 restrict: bool = False, round_to: float | str | None = "auto", accountant: PrivacyAccountant | None = None) -> Plan:
    """Stages 1–4 of ``private_frechet_mean`` without the draw (audits and experiments draw many
    releases from one calibrated plan). Charges ``accountant`` once."""
    p = check_public(X, manifold, center=center, radius=radius, epsilon=epsilon, delta=delta, mechanism=mechanism,
                     bound=bound, calibration=calibration, restrict=restrict, accountant=accountant)
    center, radius = p["center"], p["radius"]
    cal = calibrate(manifold, mechanism, n=p["n"], center=center, radius=radius, epsilon=p["epsilon"], delta=p["delta"],
                    bound=bound, calibration=calibration, restrict=p["restrict"])
    gaussian = cal.measurement.delta > 0
    check_reach(manifold, center, radius, 3.0 * cal.sigma if gaussian else cal.sigma, cal.restricted)
    grid = check_round_to(round_to, output_grid(manifold, cal.sigma, center, radius))
    charge(p["accountant"], cal.measurement)
    records = prepared(manifold, X, center, radius)
    statistic = cal.measurement.statistic
    if statistic == "ambient_mean":
        value = ambient_mean(manifold, records)
    else:
        with np.errstate(all="ignore"):
            mean = certified_frechet_mean(manifold, records, center, radius, cal.accuracy)
        value = (records, mean) if statistic == "gradient_field" else mean
    public = dict(statistic="frechet_mean", manifold=manifold, n=p["n"], radius=radius)
    return Plan(manifold, center, grid, cal, public, value)


def private_frechet_mean(X: ArrayLike, manifold: Manifold, *, center: ArrayLike, radius: float, epsilon: float,
                         delta: float | None = None, mechanism: str = "laplace", bound: str = "tight",
                         calibration: str = "analytic", restrict: bool = False, round_to: float | str | None = "auto",
                         accountant: PrivacyAccountant | None = None, rng: RngLike = None) -> PrivateRelease:
    """Release an ε-DP (or (ε, δ)-DP) Fréchet mean of the records ``X`` on ``manifold``.

    ``center`` and ``radius`` are public: the records are clipped into ``B_radius(center)``,
    ``radius < r*`` (Assumption 1), in the manifold's geodesic distance (radians on the unit
    sphere, ``‖Logm‖_F`` on SPD). Neighbouring datasets replace one record; ``n = len(X)`` is public.

    Mechanisms (``privacy.measurements``): ``"laplace"`` (Riemannian Laplace, 2021 Thm 1/3),
    ``"kng"`` (2022 Thm 1), ``"tangent_gaussian"`` (flat chart: log-Euclidean SPD or Euclidean,
    2023 Thm 4; needs ``delta``), ``"ambient_laplace"`` / ``"coordinate_laplace"`` /
    ``"ambient_gaussian"``: noise on the Euclidean mean of the embedded records, projected back
    (baselines; sphere, SPD, Euclidean). Laplace uses ``σ = Δ/ε`` unrestricted when that law is
    integrable, else (or with ``restrict=True``) ``σ = 2Δ/ε`` restricted to the ball; the
    certificate says which. A pure ε-DP release reports ``delta = 0`` whatever ``delta`` is given.

    Output: a representative fixed by public information (Kendall: rotated against the public
    centre). ``round_to="auto"`` (default) snaps the release to a public power-of-two grid
    (``output_grid``) — post-processing — which removes float low-order-bit leaks; a number sets
    the grid; ``None`` opts out (with a warning). ``accountant`` is charged before the data are
    read: a release that fails later still counts. ``rng``: a seed or Generator for
    reproducibility, ``None`` (default) for OS entropy.
    """
    rng = as_generator(rng)
    plan = plan_release(X, manifold, center=center, radius=radius, epsilon=epsilon, delta=delta, mechanism=mechanism,
                        bound=bound, calibration=calibration, restrict=restrict, round_to=round_to, accountant=accountant)
    point, acceptance = plan.draw_with_stats(None, rng=rng)
    return PrivateRelease(point, plan.certificate(acceptance))


def frechet_variance_sensitivity(n, radius, accuracy=0.0):
    """Sensitivity of the Fréchet variance ``V(D) = min_x (1/n) Σ ρ²(x, x_i)`` for ``n`` records in
    ``B_r(m0)``, ``r < r*`` (docs/statistics.md): ``4r²/n``, plus ``2a(4r + a)`` when ``V`` is
    evaluated at a point within ``a`` of the exact minimiser.

    Proof. Both minimisers lie in the ball (geodesic convexity of ``F`` on ``B_r``, Assumption 1).
    If ``D'`` replaces ``x_j`` by ``x_j'``, ``V(D') ≤ F_D'(x̄_D) = V(D) + (ρ²(x̄_D, x_j') − ρ²(x̄_D,
    x_j))/n ≤ V(D) + (2r)²/n``, and symmetrically. Evaluating at ``x̂`` with ``ρ(x̂, x̄) ≤ a``
    changes each ``ρ²(·, x_i) ≤ (2r)²`` by at most ``a(4r + a)`` (triangle inequality)."""
    return 4.0 * radius**2 / n + 2.0 * accuracy * (4.0 * radius + accuracy)


def private_frechet_variance(X: ArrayLike, manifold: Manifold, *, center: ArrayLike, radius: float, epsilon: float,
                             round_to: float | str | None = "auto", accountant: PrivacyAccountant | None = None,
                             rng: RngLike = None) -> PrivateRelease:
    """Release an ε-DP Fréchet variance ``V = min_x (1/n) Σ ρ²(x, x_i)`` of the records in
    ``B_radius(center)`` (clipped there, as for the mean): the certified mean, ``V`` at it, plus
    Laplace noise of scale ``Δ_V/ε`` on the real line (``Δ_V = frechet_variance_sensitivity``),
    then clamped to ``[0, r²]`` (``V ≤ F(center) ≤ r²``; post-processing). Same stages, checks,
    accountant and certificate as ``private_frechet_mean``; the value is a float."""
    rng = as_generator(rng)
    p = check_public(X, manifold, center=center, radius=radius, epsilon=epsilon, delta=None, mechanism="laplace",
                     bound="tight", calibration="analytic", restrict=False, accountant=accountant)
    center, radius, n = p["center"], p["radius"], p["n"]
    check_ball(manifold, center, radius)
    accuracy = mean_accuracy(manifold, center, radius, 2.0 * radius / n)
    sens = frechet_variance_sensitivity(n, radius, accuracy) + 8.0 * radius * manifold.float_error(center, radius)
    line = Euclidean(1)
    meas = measurements.laplace(line, sens, p["epsilon"])
    cal = Calibration(meas, accuracy, "4r²/n (+ optimisation slack; docs/statistics.md)", _optimisation_note(manifold, radius, accuracy))
    grid = check_round_to(round_to, output_grid(line, meas.scale, np.zeros(1), radius**2))
    charge(p["accountant"], meas)
    records = prepared(manifold, X, center, radius)
    with np.errstate(all="ignore"):
        mean = certified_frechet_mean(manifold, records, center, radius, accuracy)
        variance = mean_squared_distance(manifold, records, mean)
    plan = Plan(line, np.zeros(1), grid, cal, dict(statistic="frechet_variance", manifold=manifold, n=n, radius=radius),
                np.array([variance]), _post=lambda y: np.clip(y, 0.0, radius**2))
    value, acceptance = plan.draw_with_stats(None, rng=rng)
    return PrivateRelease(float(value[0]), plan.certificate(acceptance))
