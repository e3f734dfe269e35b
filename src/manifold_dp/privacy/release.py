"""The public path: ``private_frechet_mean``.

Stages, in this order (SPEC §9, public-only control flow):

1. validate the public parameters and the records' shape and type (errors quote parameters only);
2. calibrate: sensitivity, scale, privacy event, and every refusal (float overflow, an
   unsamplable restricted law, a hyperbolic ball beyond float precision) — from public values only;
3. charge the accountant: from here on a failure still counts as spent;
4. prepare the records (bad ones → centre, clip into the ball), compute the mean by a number of
   steps fixed in advance (``certified_frechet_mean``), draw the noise;
5. finish: a public canonical representative (Kendall: rotated against the public centre) and a
   public output grid (float-safe by default), then the representability check.

Whether a release succeeds, which error it raises, what it warns and (up to the noise of the
samplers, docs/security.md) how long it runs depend on public parameters only. The non-private
mean never leaves this module.
"""

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.special import gammainccinv

from .._random import as_generator
from .._validation import check_delta, check_epsilon, check_positive, check_radius
from ..manifolds import Euclidean, Hyperbolic, KendallShape2D, SPDAffineInvariant, SPDLogEuclidean
from ..manifolds._matrix import funm_sym
from ..stats._records import is_dask
from ..stats.frechet import certified_frechet_mean, certified_iterations, hessian_upper_bound
from .accounting import GaussianEvent, PureEvent, check_accountant
from .calibration import analytic_gaussian_sigma, classical_gaussian_sigma
from .mechanisms import AmbientNoise, KNormGradient, RiemannianLaplace, TangentGaussian, laplace_sigma_limit
from .sensitivity import ambient_sensitivity, frechet_mean_sensitivity, hessian_lower_bound

MECHANISMS = ("laplace", "kng", "tangent_gaussian", "ambient_laplace", "ambient_gaussian", "coordinate_laplace")
OPTIMISATION_SLACK = 1e-6  # the mean is certified within max(OPTIMISATION_SLACK·Δ, FLOAT_FLOOR·r) of the exact one
FLOAT_FLOOR = 1e-10
HYPERBOLIC_MAX_REACH = 8.0  # ρ(e0, centre) + r: beyond it hyperboloid coordinates lose the precision Δ needs
LOG_FLOAT_MAX = 700.0  # exp overflows float64 past ~709.78
GRID_BELOW_SCALE = 2.0**-20  # default output grid: ~1e-6 of the noise scale ...
GRID_ABOVE_ULP = 2.0**-40  # ... and at least 2^12 float spacings of the coordinates


class ReleaseWarning(UserWarning):
    """A warning about a release; its text is a function of public parameters only."""


@dataclass(frozen=True)
class PrivateRelease:
    """A private Fréchet mean and its certificate. ``point`` is the only data-dependent value."""

    point: np.ndarray
    epsilon: float
    delta: float
    mechanism: str
    sensitivity: float
    scale: float
    certificate: dict = field(repr=False)

    def to_dict(self):
        p = np.asarray(self.point)
        point = {"real": p.real.tolist(), "imag": p.imag.tolist()} if np.iscomplexobj(p) else p.tolist()
        return {"point": point, "certificate": self.certificate}

    def summary(self):
        c = self.certificate
        lines = [f"{c['mechanism']}: ({c['epsilon']:g}, {c['delta']:g})-DP — {c['theorem']}"]
        for key in ("manifold", "n", "radius", "sensitivity", "sensitivity_bound", "scale", "scale_rule",
                    "restriction", "sampler", "sampler_acceptance", "output_grid"):
            lines.append(f"  {key}: {c[key]}")
        return "\n".join(lines)


# --- stage 1: public parameters and the records' container --------------------------------

def validate_center(manifold, center):
    """The public centre as one point of ``manifold`` (no batch axes), or a ``ValueError``/``TypeError``
    naming ``center``. Kendall also takes real landmarks ``(k, 2)``."""
    if isinstance(center, (str, bytes)) or isinstance(center, np.ma.MaskedArray):
        raise TypeError(f"center must be a numeric array holding one point of {manifold!r}, got {type(center).__name__}")
    try:
        c = np.asarray(center)
    except (ValueError, TypeError, OverflowError):
        raise TypeError(f"center must be a numeric array holding one point of {manifold!r}") from None
    if c.dtype.kind not in "biufc":
        raise TypeError(f"center must be a numeric array holding one point of {manifold!r}, got dtype kind {c.dtype.kind!r}")
    if isinstance(manifold, KendallShape2D) and not np.iscomplexobj(c) and c.shape == (manifold.k_landmarks, 2):
        c = manifold.to_complex(c)
    if np.iscomplexobj(c) and not np.issubdtype(np.dtype(manifold.dtype), np.complexfloating):
        raise TypeError(f"center must be real for {manifold!r}, got a complex array")
    if c.shape != tuple(manifold.point_shape):
        raise ValueError(f"center must be one point of shape {tuple(manifold.point_shape)} for {manifold!r}, got shape {c.shape}")
    if isinstance(manifold, KendallShape2D):
        c = manifold.preshape(c)
    return manifold.validate_point(c, "center")


def record_count(manifold, X):
    """``n`` (public) after checking the container: a numeric array ``(n, *point_shape)``, ``n ≥ 1``.
    Masked arrays, strings, dates and objects are refused rather than guessed at. Kendall also
    takes raw landmarks ``(n, k, 2)``."""
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
    raw_kendall = isinstance(manifold, KendallShape2D) and kind != "c" and tuple(shape[1:]) == point + (2,)
    if not raw_kendall and (len(shape) != len(point) + 1 or tuple(shape[1:]) != point):
        raise ValueError(f"X must have shape (n, {', '.join(map(str, point))}), got {tuple(shape)}")
    if shape[0] == 0:
        raise ValueError("X must hold at least one record (n >= 1)")
    return int(shape[0])


def prepare_records(manifold, X, center, radius):
    """SPEC §5, record by record: non-finite or off-manifold records become ``center``
    (data-independent), the rest are projected onto the manifold and clipped into
    ``B_radius(center)``. Returns ``(records, n_replaced)``; ``n_replaced`` is not private.
    Kendall accepts raw configurations ``(n, k, 2)`` or pre-shapes ``(n, k)``."""
    X = np.asarray(X)
    with np.errstate(all="ignore"):
        if isinstance(manifold, KendallShape2D) and not np.iscomplexobj(X) and X.ndim == 3 and X.shape[-1] == 2:
            X = manifold.preshape(X)
        X = np.asarray(X, dtype=manifold.dtype)
        ok = manifold.belongs(X)
        safe = np.where(manifold._expand(ok), X, center)
        X = np.where(manifold._expand(ok), manifold.project(safe), center)
        X = manifold.clip_to_ball(X, center, radius)
    return X, int(np.sum(~ok))


def _prepare_dask(manifold, X, center, radius):
    """SPEC §5 inside the map step: each block of records is sanitised and clipped on its worker."""
    X = X.rechunk({i: -1 for i in range(1, X.ndim)})
    return X.map_blocks(_prepare_block, manifold, center, radius, dtype=manifold.dtype)


def _prepare_block(block, manifold, center, radius):
    return prepare_records(manifold, block, center, radius)[0]


# --- stage 2: calibration, from public values only ------------------------------------------

@dataclass(frozen=True)
class Calibration:
    """Everything about a release that is fixed before the data are read."""

    mechanism: str
    sigma: float
    sensitivity: float
    event: object
    accuracy: float  # how close the computed mean is guaranteed to be to the exact minimiser
    restricted: bool
    certificate: dict


def calibrate(manifold, mechanism, *, n, center, radius, epsilon, delta, bound, calibration, restrict):
    """Sensitivity, scale and privacy event of a release: the one place where ε becomes σ.

    Laplace: ``σ = Δ/ε`` unrestricted on a homogeneous space when that law is integrable (the
    normalising constant does not depend on the footpoint, 2021 Thm 1), else ``σ = 2Δ/ε``
    restricted to the ball (2021 Thm 3). KNG: ``σ = 2Δ_KNG/ε`` (2022 Thm 1: the constant depends
    on the data). Gaussian: the analytic (Balle & Wang 2018) or classical σ for ``(ε, δ)``.
    Ambient baselines: ``Δ_E/ε`` (ℓ2 K-norm) or ``√D Δ_E/ε`` (coordinate Laplace).
    The sensitivity includes the public optimisation slack ``2·accuracy`` and the float error of
    the geometry (``_float_error``), so the guarantee holds for the computed, not the ideal, mean.
    """
    cert = {"manifold": repr(manifold), "n": n, "radius": radius, "epsilon": epsilon, "delta": delta or 0.0}
    if mechanism in ("ambient_laplace", "ambient_gaussian", "coordinate_laplace"):
        return _calibrate_ambient(manifold, mechanism, n, center, radius, epsilon, delta, calibration, cert)
    kind = "kng" if mechanism == "kng" else "laplace"
    base = frechet_mean_sensitivity(manifold, n=n, radius=radius, kind=kind, bound=bound)
    base *= 1.0 + 2.0 * _float_error(manifold, center, radius) / radius
    accuracy = max(OPTIMISATION_SLACK * base, FLOAT_FLOOR * radius) + _float_error(manifold, center, radius)
    # KNG's density is ∇F itself: the computed mean only shapes its proposal, so no slack is
    # needed — except on a flat space, where KNG is drawn as the Laplace law restricted to the
    # ball around the computed mean (‖∇F(x)‖ = ρ(x̄, x) there)
    flat = tuple(manifold.curvature_bounds) == (0.0, 0.0)
    sens = float(base if kind == "kng" and not flat else base + 2.0 * accuracy)
    _check_sigma(2.0 * sens / epsilon, epsilon)  # Python floats: an overflow is inf, not a warning
    cert.update(sensitivity=sens, sensitivity_bound=_bound_name(manifold, bound, kind),
                optimisation=_optimisation_note(manifold, radius, accuracy))
    restricted = False
    if mechanism == "tangent_gaussian":
        sigma = (analytic_gaussian_sigma if calibration == "analytic" else classical_gaussian_sigma)(epsilon, delta, sens)
        event = GaussianEvent(sigma / sens)
        cert.update(mechanism="tangent Gaussian", theorem=f"Utpala et al. 2023, Thm 4 ({calibration} calibration: "
                    + ("Balle & Wang 2018" if calibration == "analytic" else "Dwork & Roth 2014, Thm A.1") + ")",
                    scale_rule=f"{calibration} Gaussian σ for (ε, δ) and Δ", restriction="none",
                    sampler="exact (Gaussian in log coordinates)")
    elif mechanism == "laplace":
        # restricted when asked, when the unrestricted law is not integrable, or when its draws
        # would overflow float64 (a public test: the law's tail quantile against exp's range)
        restricted = (restrict or sens / epsilon >= laplace_sigma_limit(manifold)
                      or not _fits_float64(manifold, center, radius, sens / epsilon, False))
        sigma = (2.0 if restricted else 1.0) * sens / epsilon
        event = PureEvent(epsilon)
        cert.update(mechanism="Riemannian Laplace", theorem="Reimherr et al. 2021, Thm 1 ("
                    + ("Thm 3 restriction" if restricted else "homogeneous case") + ") with Thm 2 sensitivity",
                    scale_rule=_laplace_rule(manifold, sens, epsilon, restricted, restrict),
                    restriction=f"B_r(center), r = {radius:g}" if restricted else "none",
                    sampler="exact (" + ("eigenvalue construction, two-stage rejection" if isinstance(manifold, SPDAffineInvariant)
                                         else "log-concave radial rejection + uniform direction")
                    + ("; a fixed public number of proposals per draw, the first inside the ball" if restricted else "") + ")")
    else:
        restricted = True
        sigma = 2.0 * sens / epsilon
        event = PureEvent(epsilon)
        cert.update(mechanism="K-norm gradient (KNG)", theorem="Soto et al. 2022, Thm 1 with Thm 2 sensitivity",
                    scale_rule="σ = 2Δ/ε (normalising constant depends on the data)",
                    restriction=f"B_r(center), r = {radius:g}",
                    sampler="exact: the Laplace law restricted to the ball around the mean, a fixed public number of proposals per draw"
                    if flat else "exact rejection (2022 Lemma 1 envelope; a data-adaptive radial envelope on positively curved spaces); "
                    "its running time depends on the data: do not publish it")
    _check_sigma(sigma, epsilon)
    cert["scale"] = sigma
    return Calibration(mechanism, float(sigma), float(sens), event, accuracy, restricted, cert)


def _calibrate_ambient(manifold, mechanism, n, center, radius, epsilon, delta, calibration, cert):
    sens = ambient_sensitivity(manifold, n=n, radius=radius, center=center)
    kind = {"ambient_laplace": "l2_laplace", "ambient_gaussian": "gaussian", "coordinate_laplace": "coordinate_laplace"}[mechanism]
    D = AmbientNoise(manifold, kind, 1.0).ambient_dim
    if kind == "gaussian":
        sigma = (analytic_gaussian_sigma if calibration == "analytic" else classical_gaussian_sigma)(epsilon, delta, sens)
        event, rule, thm = GaussianEvent(sigma / sens), f"{calibration} Gaussian σ", "Gaussian mechanism (Balle & Wang 2018)"
    elif kind == "l2_laplace":
        sigma, event, rule = sens / epsilon, PureEvent(epsilon), "σ = Δ_E/ε"
        thm = "ℓ2 K-norm mechanism (Hardt & Talwar 2010; 2021 App. A.4)"
    else:
        sigma, event, rule = np.sqrt(D) * sens / epsilon, PureEvent(epsilon), "b = √D·Δ_E/ε (ℓ1 ≤ √D ℓ2)"
        thm = "Laplace mechanism, coordinate-wise (Dwork et al. 2006)"
    _check_sigma(sigma, epsilon)
    cert.update(mechanism=f"ambient {kind} on the Euclidean mean, projected", theorem=thm, sensitivity=sens,
                sensitivity_bound="ambient ball radius r_E (2021 Prop. 1 / chord)", scale=sigma, scale_rule=rule,
                restriction="none (projection back onto the manifold is post-processing)", sampler="exact")
    return Calibration(mechanism, float(sigma), float(sens), event, 0.0, False, cert)


def _laplace_rule(manifold, sens, epsilon, restricted, restrict):
    if not restricted:
        return "σ = Δ/ε (unrestricted law on a homogeneous space: normalising constant independent of the footpoint)"
    rule = "σ = 2Δ/ε (restricted to the ball: normalising constant depends on the footpoint)"
    limit = laplace_sigma_limit(manifold)
    if sens / epsilon >= limit:
        rule += f"; the unrestricted law is not integrable at σ = Δ/ε (needs σ < {limit:.4g})"
    elif not restrict:
        rule += "; the unrestricted law at σ = Δ/ε would overflow float64 (its tail reaches past exp's range)"
    return rule


def _check_sigma(sigma, epsilon):
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"epsilon={epsilon!r} gives a noise scale that is not a finite positive float64; use a larger epsilon")


def _optimisation_note(manifold, radius, accuracy):
    if isinstance(manifold, (Euclidean, SPDLogEuclidean)):
        return "closed-form mean; float error included in the sensitivity"
    kmin, kmax = manifold.curvature_bounds
    steps = certified_iterations(hessian_lower_bound(radius, kmax), hessian_upper_bound(4 * radius, kmin), radius, accuracy)
    return (f"mean within {accuracy:.3g} of the exact minimiser after a fixed {steps} projected gradient steps "
            "(strong convexity and smoothness on the ball); twice that is included in the sensitivity")


def _float_error(manifold, center, radius):
    """A public bound on the float64 error of distances and clipping near the ball (absolute)."""
    eps = np.finfo(float).eps
    if isinstance(manifold, Hyperbolic):
        return 16 * eps * np.cosh(float(manifold.dist(manifold.origin, center)) + radius) ** 2
    if isinstance(manifold, Euclidean):
        return 16 * eps * (float(np.max(np.abs(center))) + radius)
    if isinstance(manifold, (SPDAffineInvariant, SPDLogEuclidean)):
        w = np.linalg.eigvalsh(center)
        return 16 * eps * (w[-1] / w[0]) * np.exp(2 * radius)
    return 16 * eps * (1.0 + radius)


def check_reach(manifold, center, radius, sigma, restricted):
    """Refuse, from public parameters only, a release that float64 cannot carry: a hyperbolic ball
    beyond ``HYPERBOLIC_MAX_REACH`` from e0, or a noise scale whose draw would overflow ``exp``
    (eigenvalues ``e^λ`` on SPD, ``cosh ρ`` on hyperbolic space) with probability above 1e-12."""
    if isinstance(manifold, Hyperbolic):
        reach = float(manifold.dist(manifold.origin, center)) + radius
        if reach > HYPERBOLIC_MAX_REACH:
            raise ValueError(
                f"on {manifold!r} the ball must lie within distance {HYPERBOLIC_MAX_REACH:g} of e0 "
                f"(ρ(e0, center) + radius = {reach:.4g}): farther out hyperboloid coordinates lose the precision "
                "the sensitivity bound needs; move the data and centre towards e0 by an isometry first")
    if not _fits_float64(manifold, center, radius, sigma, restricted):
        raise ValueError(f"the noise scale sigma={sigma:.4g} is too large for a float64 release on {manifold!r}; "
                         "increase epsilon or n, or shrink radius")


def _fits_float64(manifold, center, radius, sigma, restricted):
    """Whether a draw at scale ``sigma`` stays inside exp's float64 range (eigenvalues ``e^λ`` on
    SPD, ``cosh ρ`` on hyperbolic space) except with probability 1e-12. Public values only."""
    if not isinstance(manifold, (SPDAffineInvariant, SPDLogEuclidean, Hyperbolic)):
        return True
    if isinstance(manifold, Hyperbolic):
        base = float(manifold.dist(manifold.origin, center))
    else:
        base = float(np.max(np.abs(np.log(np.linalg.eigvalsh(center)))))
    if restricted:
        reach = 0.0 if isinstance(manifold, Hyperbolic) else radius
    else:
        c = manifold.laplace_integrability_constant if isinstance(manifold, SPDAffineInvariant) else manifold.volume_growth_rate
        rate = 1.0 / sigma - c  # the radial law's exponential tail
        reach = float(gammainccinv(manifold.dim, 1e-12)) / rate if rate > 0 else np.inf
    return base + radius + reach <= LOG_FLOAT_MAX


# --- stage 5: the output's representative and grid ------------------------------------------

def output_grid(manifold, sigma, center, radius):
    """The default public grid spacing of a release: a power of two ≈ ``2^-20`` of the noise scale
    in coordinates, and at least ``2^12`` float spacings of the coordinates' public magnitude, so
    the low-order bits of a float sampler (Mironov 2012) are rounded away (docs/security.md)."""
    if isinstance(manifold, (SPDAffineInvariant, SPDLogEuclidean)):
        w = np.linalg.eigvalsh(center)
        move, scale = sigma * w[0] * np.exp(-radius), w[-1] * np.exp(radius + min(sigma, 50.0))
    elif isinstance(manifold, Hyperbolic):
        move, scale = sigma, np.cosh(float(manifold.dist(manifold.origin, center)) + radius + min(sigma, 1.0))
    elif isinstance(manifold, Euclidean):
        move, scale = sigma, float(np.max(np.abs(center))) + radius + sigma
    else:
        move, scale = min(sigma, float(np.max(np.abs(manifold.origin)))), float(np.max(np.abs(manifold.origin)))
    g = max(move * GRID_BELOW_SCALE, scale * GRID_ABOVE_ULP)
    return float(2.0 ** math.ceil(math.log2(g)))


def canonical(manifold, points, center):
    """The released representative of an equivalence class, fixed by public information: a Kendall
    pre-shape is rotated so that ``⟨center, y⟩`` is real and ≥ 0 (SPEC §9). Other spaces: as is."""
    if isinstance(manifold, KendallShape2D):
        return manifold.align(center, points)
    return points


def finish(manifold, points, center, grid, sigma):
    """Post-processing of raw draws (batch or single): canonical representative, snap to ``grid``
    (``None``: no snapping), project back, and refuse a non-representable point."""
    points = canonical(manifold, np.asarray(points), center)
    if grid is not None:
        if np.iscomplexobj(points):
            points = np.round(points.real / grid) * grid + 1j * (np.round(points.imag / grid) * grid)
        else:
            points = np.round(points / grid) * grid
        with np.errstate(all="ignore"):
            points = manifold.project(points)
            if isinstance(manifold, (SPDAffineInvariant, SPDLogEuclidean)):  # keep SPD: eigenvalues floored at the grid
                points = funm_sym(points, lambda w: np.maximum(w, grid))
    if not manifold.check_point(points)[0]:
        raise ValueError(f"the release at noise scale sigma={sigma:.4g} is not representable in float64 on {manifold!r}; nothing was released")
    return points


def _check_round_to(round_to, manifold, grid_auto):
    if isinstance(round_to, str):
        if round_to != "auto":
            raise ValueError(f"round_to must be 'auto', None or a grid spacing > 0, got {round_to!r}")
        return grid_auto
    if round_to is None:
        warnings.warn("round_to=None releases raw float64 output, whose low-order bits can leak the data "
                      "(docs/security.md); the default round_to='auto' removes that", ReleaseWarning, stacklevel=3)
        return None
    g = check_positive(round_to, "round_to")
    if g > grid_auto * 2.0**19:  # coarser than half the noise scale in coordinates: the grid would be the release
        raise ValueError(f"round_to={round_to!r} is coarser than the noise; use at most {grid_auto * 2.0**19:.3g} (or 'auto')")
    return g


# --- the pipeline ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _Plan:
    """A calibrated release, ready to draw: the mean stays inside. ``draw(size)`` gives finished
    releases exactly as ``private_frechet_mean`` returns them (the audit draws many from one plan)."""

    manifold: object
    center: np.ndarray
    grid: float | None
    calibration: Calibration
    _sample: object = field(repr=False)

    def draw(self, size=None, rng=None):
        return self.draw_with_stats(size, rng)[0]

    def draw_with_stats(self, size=None, rng=None):
        """``(releases, acceptance)``; the acceptance is withheld (``None``) where it depends on the data."""
        raw, acceptance = self._sample(size, as_generator(rng))
        return finish(self.manifold, raw, self.center, self.grid, self.calibration.sigma), acceptance


def plan_release(X, manifold, *, center, radius, epsilon, delta=None, mechanism="laplace", bound="tight",
                 calibration="analytic", restrict=False, round_to="auto", accountant=None):
    """Stages 1–4 of ``private_frechet_mean`` without the draw (internal: audits and experiments
    draw many releases from the same calibrated plan). Charges ``accountant`` once."""
    epsilon = check_epsilon(epsilon)
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    gaussian = mechanism in ("tangent_gaussian", "ambient_gaussian")
    delta = check_delta(delta, required=gaussian) if gaussian or delta is not None else None
    if calibration not in ("analytic", "classical"):
        raise ValueError(f"calibration must be 'analytic' or 'classical', got {calibration!r}")
    if bound not in ("tight", "paper"):
        raise ValueError(f"bound must be 'tight' or 'paper', got {bound!r}")
    if not isinstance(restrict, (bool, np.bool_)):
        raise TypeError(f"restrict must be True or False, got {type(restrict).__name__}")
    accountant = check_accountant(accountant)
    radius = check_radius(manifold, radius)
    center = validate_center(manifold, center)
    if mechanism == "tangent_gaussian" and not isinstance(manifold, (SPDLogEuclidean, Euclidean)):
        raise ValueError(f"mechanism='tangent_gaussian' needs SPDLogEuclidean or Euclidean, got {manifold!r}")
    if mechanism == "kng" and is_dask(X):
        raise ValueError("mechanism='kng' evaluates ∇F over all records at every proposal: not supported on Dask arrays")
    n = record_count(manifold, X)
    cal = calibrate(manifold, mechanism, n=n, center=center, radius=radius, epsilon=epsilon, delta=delta,
                    bound=bound, calibration=calibration, restrict=bool(restrict))
    check_reach(manifold, center, radius, 3.0 * cal.sigma if gaussian else cal.sigma, cal.restricted)
    grid = _check_round_to(round_to, manifold, output_grid(manifold, cal.sigma, center, radius))
    mech = _mechanism(manifold, cal, center, radius)
    cal.certificate.update(output_grid="none (raw float64: round_to=None)" if grid is None else
                           f"snapped to a public grid of {grid!r} in array coordinates, then projected (post-processing)",
                           output_grid_spacing=grid)
    if accountant is not None:
        accountant.charge(cal.event)  # stage 3: what fails from here on still counts
    records = _prepare_dask(manifold, X, center, radius) if is_dask(X) else prepare_records(manifold, X, center, radius)[0]
    return _Plan(manifold, center, grid, cal, _sampler(manifold, mech, cal, records, center, radius))


def _mechanism(manifold, cal, center, radius):
    """The mechanism object, built from public values (its own checks raise before any data use)."""
    if cal.mechanism == "tangent_gaussian":
        return TangentGaussian(manifold, cal.sigma)
    if cal.mechanism == "laplace":
        mech = RiemannianLaplace(manifold, cal.sigma, restrict_to=(center, radius) if cal.restricted else None)
        if cal.restricted:
            mech.check_restricted_feasible()
        return mech
    if cal.mechanism == "kng" and tuple(manifold.curvature_bounds) == (0.0, 0.0):
        mech = RiemannianLaplace(manifold, cal.sigma, restrict_to=(center, radius))  # KNG's law on a flat space
        mech.check_restricted_feasible()
        return mech
    if cal.mechanism == "kng":
        kng = KNormGradient(manifold, cal.sigma, center, radius)
        RiemannianLaplace(manifold, cal.sigma / kng.h, restrict_to=(center, radius)).check_restricted_feasible()
        return kng
    kind = {"ambient_laplace": "l2_laplace", "ambient_gaussian": "gaussian", "coordinate_laplace": "coordinate_laplace"}[cal.mechanism]
    floor = float(np.linalg.eigvalsh(center)[0] * np.exp(-radius)) if isinstance(manifold, (SPDAffineInvariant, SPDLogEuclidean)) else 1e-12
    return AmbientNoise(manifold, kind, cal.sigma, project=True, floor=floor)


def _sampler(manifold, mech, cal, records, center, radius):
    """Stage 4: the statistic (a fixed amount of work) and a closure drawing the noise around it."""
    if isinstance(mech, AmbientNoise):
        if is_dask(records):
            D = mech.ambient_dim
            mean = records.map_blocks(mech.to_ambient, dtype=float, drop_axis=list(range(2, records.ndim)),
                                      chunks=(records.chunks[0], (D,))).mean(axis=0).compute()
        else:
            mean = np.mean(mech.to_ambient(records), axis=0)
        return lambda size, rng: (mech.sample(mean, size=size, rng=rng), 1.0)
    with np.errstate(all="ignore"):
        mean = certified_frechet_mean(manifold, records, center, radius, cal.accuracy)
    if isinstance(mech, KNormGradient):
        return lambda size, rng: (mech.sample_with_stats(records, mean, size=size, rng=rng)[0], None)
    if isinstance(mech, TangentGaussian):
        return lambda size, rng: (mech.sample(mean, size=size, rng=rng), 1.0)
    if cal.restricted:  # fixed work per draw; its acceptance is not released
        return lambda size, rng: (mech.sample(mean, size=size, rng=rng), None)
    # unrestricted: the acceptance depends on σ and the noise only
    return lambda size, rng: mech.sample_with_stats(mean, size=size, rng=rng)


def private_frechet_mean(X, manifold, *, center, radius, epsilon, delta=None, mechanism="laplace",
                         bound="tight", calibration="analytic", restrict=False, round_to="auto", accountant=None, rng=None):
    """Release an ε-DP (or (ε, δ)-DP) Fréchet mean of the records ``X`` on ``manifold``.

    ``center`` and ``radius`` are public: the records are clipped into ``B_radius(center)``,
    ``radius < r*`` (Assumption 1), in the manifold's geodesic distance (radians on the unit
    sphere, ``‖Logm‖_F`` on SPD). Neighbouring datasets replace one record; ``n = len(X)`` is public.

    Mechanisms: ``"laplace"`` (Riemannian Laplace, 2021 Thm 1/3), ``"kng"`` (2022 Thm 1),
    ``"tangent_gaussian"`` (log-Euclidean SPD or Euclidean, 2023 Thm 4; needs ``delta``),
    ``"ambient_laplace"`` / ``"coordinate_laplace"`` / ``"ambient_gaussian"``: noise on the
    Euclidean mean of the embedded records, projected back (baselines; sphere, SPD, Euclidean).
    Laplace uses ``σ = Δ/ε`` unrestricted when that law is integrable, else (or with
    ``restrict=True``) ``σ = 2Δ/ε`` restricted to the ball; the certificate says which.

    Output: Kendall shapes are rotated against the public centre (a representative fixed by public
    information). ``round_to="auto"`` (default) snaps the release to a public power-of-two grid
    (``output_grid``) and projects back — post-processing, so the guarantee is unchanged — which
    removes float low-order-bit leaks; a number sets the grid; ``None`` opts out (with a warning).
    ``accountant`` is charged before the data are read: a release that fails later still counts.
    """
    rng = as_generator(rng)
    plan = plan_release(X, manifold, center=center, radius=radius, epsilon=epsilon, delta=delta, mechanism=mechanism,
                        bound=bound, calibration=calibration, restrict=restrict, round_to=round_to, accountant=accountant)
    point, acceptance = plan.draw_with_stats(None, rng)
    cal = plan.calibration
    cert = dict(cal.certificate, sampler_acceptance="withheld: it depends on the data" if acceptance is None else round(float(acceptance), 4))
    return PrivateRelease(point, cert["epsilon"], cert["delta"], cert["mechanism"], cal.sensitivity, cal.sigma, cert)


def _bound_name(manifold, bound, kind):
    if manifold.curvature_bounds[1] <= 0:
        return "2r/n (non-positive curvature: h = L = 1)" if kind == "laplace" else "2r/n (KNG, non-positive curvature)"
    if bound == "tight":
        return "tight: L = 2r√κ/sin(2r√κ) (Rauch comparison)"
    return "paper: L = 2 − h (Karcher; 2021 Thm 2 / 2022 Thm 2)"
