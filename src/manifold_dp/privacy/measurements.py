"""Mechanisms as measurements: the one place where ε (and δ) become a noise scale.

A measurement is built from public facts only — the manifold, a sensitivity bound, ε, δ, the
restriction ball — by one constructor per mechanism, and is immutable. It knows its scale, the
rule and theorem that give it, its privacy event for the accountant, and samples its law
(``manifold_dp.privacy.mechanisms``). ``private_frechet_mean``, the audit, the experiments and
the benchmarks all build mechanisms here; no other module computes a scale from ε.

The rule for pure ε-DP laws ``∝ exp(−ρ(η, x)/σ)`` (2021 Thm 1, 2022 Thm 1) is written once, in
``pure_scale``: the privacy loss of ``y`` is ``(ρ(η', y) − ρ(η, y))/σ ≤ Δ/σ`` plus the log ratio
of the normalising constants. Where that constant does not depend on the footpoint (an
unrestricted Laplace on a homogeneous space) the ratio is 1 and ``σ = Δ/ε``; where it does
(restricted to a ball, or KNG, whose constant depends on the data) it can add another ``Δ/σ``
and ``σ = 2Δ/ε``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike

from .._disk_cache import disk_cached, is_floats
from .._random import RngLike
from .._validation import check_delta, check_epsilon, check_positive
from ..manifolds.base import Manifold
from . import gdp
from .calibration import analytic_gaussian_sigma, classical_gaussian_sigma
from .mechanisms import (
    AmbientNoise,
    KNormGradient,
    RiemannianGaussian,
    RiemannianLaplace,
    TangentGaussian,
    WrappedNoise,
    ball_sampler_applies,
    is_hadamard,
)

if TYPE_CHECKING:
    from .accounting import DpEvent

__all__ = ["pure_scale", "gaussian_scale", "Measurement", "laplace", "kng", "tangent_gaussian", "ambient",
           "riemannian_gaussian", "wrapped", "paper_variant"]

AMBIENT_MECHANISMS = ("ambient_laplace", "ambient_gaussian", "coordinate_laplace")
CALIBRATIONS = ("analytic", "classical")
WRAPPED_MECHANISMS = ("wrapped_laplace", "wrapped_gaussian")
SIGMA_BISECTIONS = 30  # halvings of the log-σ bracket: σ within a factor 2^(2^-30·log2(bracket)) of the smallest


def pure_scale(sensitivity: float, epsilon: float, footpoint_free: bool) -> float:
    """``σ`` of an ε-DP law ``∝ exp(−ρ(η, x)/σ)`` with sensitivity ``Δ`` of its footpoint:
    ``Δ/ε`` when its normalising constant is the same for every footpoint (and every dataset),
    else ``2Δ/ε`` (2021 Thm 1 and its homogeneous case; 2022 Thm 1)."""
    return _finite((1.0 if footpoint_free else 2.0) * sensitivity / epsilon, epsilon)


def gaussian_scale(sensitivity: float, epsilon: float, delta: float, calibration: str = "analytic") -> float:
    """``σ`` of the Gaussian mechanism for ``(ε, δ)``: the analytic calibration (Balle & Wang
    2018, every ε) or the classical one (Dwork & Roth 2014 Thm A.1, ε < 1)."""
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    return _finite((analytic_gaussian_sigma if calibration == "analytic" else classical_gaussian_sigma)(
        epsilon, delta, sensitivity), epsilon)


def _finite(sigma: float, epsilon: float) -> float:
    """Python floats overflow to inf silently: refuse a scale float64 cannot hold."""
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"epsilon={epsilon!r} gives a noise scale that is not a finite positive float64; use a larger epsilon")
    return float(sigma)


@dataclass(frozen=True)
class Measurement:
    """A calibrated mechanism: its guarantee, its scale and the law it draws from.

    ``mechanism`` is the name it was asked for (``"laplace"``, ``"kng"``, …) and round-trips;
    ``title`` is for people. ``delta`` is 0 for a pure ε-DP measurement. ``statistic`` names what
    ``sample`` perturbs: ``"frechet_mean"`` (a point), ``"gradient_field"`` (``(records, mean)``:
    KNG perturbs the whole ∇F of the data) or ``"ambient_mean"`` (a vector of the embedding)."""

    mechanism: str
    title: str
    theorem: str
    epsilon: float
    delta: float
    sensitivity: float
    scale: float
    scale_rule: str
    restriction: str
    sampler: str
    statistic: str
    law: Any = field(repr=False)  # a law of ``privacy.mechanisms`` (what ``sample`` takes depends on ``statistic``)
    acceptance_public: bool = True  # whether the sampler's acceptance depends on public values only
    restricted: bool = False  # whether the law lives on the public ball B_r(center)
    certified: bool = True  # False for a paper calibration below the proven scale (``paper_variant``): never release it
    gdp_mu: float | None = None  # μ-GDP of a law whose privacy loss is not the Gaussian mechanism's (Riemannian Gaussian)
    gdp_slack: float = 0.0  # additive δ its μ-GDP claim needs (a numerical check that stops at a tail; ``slack_dp_event``)

    @property
    def event(self) -> DpEvent:
        """The release as a ``dp_accounting`` event (``privacy.accounting``); an uncertified
        measurement has none (``ValueError``), so charging it fails before any data are read."""
        from .accounting import gaussian_dp_event, pure_dp_event, slack_dp_event

        if not self.certified:
            raise ValueError(f"the {self.title!r} measurement is not certified (a paper calibration below the proven "
                             "scale): it has no privacy guarantee and must not be released")

        if self.gdp_mu is not None:  # μ-GDP is dominated by the Gaussian mechanism of multiplier 1/μ
            gauss = gaussian_dp_event(math.nextafter(1.0 / self.gdp_mu, 0.0))  # rounded to charge at least μ
            if self.gdp_slack > 0:
                from dp_accounting import dp_event

                return dp_event.ComposedDpEvent([gauss, slack_dp_event(self.gdp_slack)])
            return gauss
        if self.delta > 0:
            return gaussian_dp_event(self.scale / self.sensitivity)
        return pure_dp_event(self.epsilon)

    def sample(self, statistic: Any, size: int | tuple[int, ...] | None = None, *, rng: RngLike = None) -> Any:
        """Draws of the mechanism around ``statistic`` (see the class docstring), shape
        ``size + point_shape``."""
        return self.sample_with_stats(statistic, size, rng=rng)[0]

    def sample_with_stats(self, statistic: Any, size: int | tuple[int, ...] | None = None, *,
                          rng: RngLike = None) -> tuple[Any, float | None]:
        """``(draws, acceptance)``; ``acceptance`` is ``None`` where it depends on the data."""
        law = self.law
        if self.statistic == "gradient_field":
            records, mean = statistic
            if isinstance(law, RiemannianLaplace):  # KNG on a flat space: the restricted Laplace at the mean
                return law.sample(mean, size=size, rng=rng), None
            return law.sample_with_stats(records, mean, size=size, rng=rng)[0], None
        if isinstance(law, RiemannianLaplace):
            draws, acceptance = law.sample_with_stats(statistic, size=size, rng=rng)
            return draws, (acceptance if self.acceptance_public else None)
        return law.sample(statistic, size=size, rng=rng), 1.0


def laplace(manifold: Manifold, sensitivity: float, epsilon: float, *,
            restrict_to: tuple[Any, float] | None = None) -> Measurement:
    """The Riemannian Laplace mechanism (Reimherr, Bharath, Soto 2021, Thm 1): ε-DP for a
    footpoint of sensitivity ``Δ``. Unrestricted on a homogeneous space (``manifold.homogeneous``)
    ``σ = Δ/ε``; restricted to ``restrict_to = (center, radius)`` (2021 Thm 3) ``σ = 2Δ/ε``.
    An unrestricted law that is not integrable at that ``σ`` raises ``ValueError``; a restricted
    one that cannot be sampled in reasonable time too (public parameters only)."""
    sensitivity, epsilon = check_positive(sensitivity, "sensitivity"), check_epsilon(epsilon)
    restricted = restrict_to is not None
    sigma = pure_scale(sensitivity, epsilon, footpoint_free=manifold.homogeneous and not restricted)
    law = RiemannianLaplace(manifold, sigma, restrict_to=restrict_to)
    law.check_samplable()
    if restricted:
        law.check_restricted_feasible()
        rule = "σ = 2Δ/ε (restricted to the ball: normalising constant depends on the footpoint)"
    elif manifold.homogeneous:
        rule = "σ = Δ/ε (unrestricted law on a homogeneous space: normalising constant independent of the footpoint)"
    else:
        rule = "σ = 2Δ/ε (normalising constant depends on the footpoint)"
    sampler = manifold.laplace_sampler.description
    if restricted:
        sampler += "; a fixed public number of proposals per draw, the first inside the ball"
    return Measurement("laplace", "Riemannian Laplace",
                       "Reimherr et al. 2021, Thm 1 (" + ("Thm 3 restriction" if restricted else "homogeneous case") + ")",
                       epsilon, 0.0, sensitivity, sigma, rule,
                       f"B_r(center), r = {cast('tuple[Any, float]', restrict_to)[1]:g}" if restricted else "none",
                       f"exact ({sampler})",
                       "frechet_mean", law, acceptance_public=not restricted, restricted=restricted)


def kng(manifold: Manifold, sensitivity: float, epsilon: float, *, center: ArrayLike, radius: float) -> Measurement:
    """The K-norm gradient mechanism (Soto, Bharath, Reimherr, Slavković 2022, Thm 1) on
    ``B_r(center)``: density ``∝ exp(−‖∇F(x; D)‖/σ)``, ε-DP with ``σ = 2Δ_KNG/ε`` (its
    normalising constant depends on the data). On a flat space ``‖∇F(x)‖ = ρ(x̄, x)``, so the
    law is the Laplace restricted to the ball around the mean and is drawn as such."""
    sensitivity, epsilon = check_positive(sensitivity, "sensitivity"), check_epsilon(epsilon)
    sigma = pure_scale(sensitivity, epsilon, footpoint_free=False)
    flat = tuple(manifold.curvature_bounds) == (0.0, 0.0)
    law: RiemannianLaplace | KNormGradient
    if flat:
        law = RiemannianLaplace(manifold, sigma, restrict_to=(center, radius))
        law.check_restricted_feasible()
        sampler = "exact: the Laplace law restricted to the ball around the mean, a fixed public number of proposals per draw"
    else:
        law = KNormGradient(manifold, sigma, center, radius)
        if ball_sampler_applies(manifold):
            sampler = ("exact rejection from a proposal drawn inside the ball (radius from its cap-weighted marginal, "
                       "direction from the cap; 2022 Lemma 1 envelope, data-adaptive radial envelope on the sphere); "
                       "its running time depends on the data: do not publish it")
        else:
            # refuse, from public values, a law whose Lemma 1 proposal almost never lands in the ball: the
            # sampler's success would then depend on where the data sit (an adversarial review found
            # success at the centre and failure at the boundary when this check was skipped)
            RiemannianLaplace(manifold, sigma / law.h, restrict_to=(center, radius)).check_restricted_feasible()
            sampler = ("exact rejection (2022 Lemma 1 envelope; a data-adaptive radial envelope on positively curved "
                       "spaces); its running time depends on the data: do not publish it")
    return Measurement("kng", "K-norm gradient (KNG)", "Soto et al. 2022, Thm 1", epsilon, 0.0, sensitivity, sigma,
                       "σ = 2Δ/ε (normalising constant depends on the data)", f"B_r(center), r = {radius:g}", sampler,
                       "gradient_field", law, acceptance_public=False, restricted=True)


def tangent_gaussian(manifold: Manifold, sensitivity: float, epsilon: float, delta: float | None, *,
                     calibration: str = "analytic") -> Measurement:
    """The tangent Gaussian mechanism (Utpala, Vepakomma, Miolane 2023, Thm 4): Gaussian noise in
    a flat chart (``manifold.flat_chart``: log-Euclidean SPD, Euclidean), ``(ε, δ)``-DP with the
    Gaussian ``σ`` for the chart sensitivity ``Δ``."""
    sensitivity, epsilon = check_positive(sensitivity, "sensitivity"), check_epsilon(epsilon)
    delta = check_delta(delta)
    sigma = gaussian_scale(sensitivity, epsilon, delta, calibration)
    source = "Balle & Wang 2018" if calibration == "analytic" else "Dwork & Roth 2014, Thm A.1"
    return Measurement("tangent_gaussian", "tangent Gaussian", f"Utpala et al. 2023, Thm 4 ({calibration} calibration: {source})",
                       epsilon, delta, sensitivity, sigma, f"{calibration} Gaussian σ for (ε, δ) and Δ", "none",
                       "exact (Gaussian in the flat chart)", "frechet_mean", TangentGaussian(manifold, sigma))


def ambient(manifold: Manifold, mechanism: str, sensitivity: float, epsilon: float, delta: float | None = None, *,
            calibration: str = "analytic", floor: float = 1e-12) -> Measurement:
    """Euclidean noise on the mean of the embedded records (``manifold.to_ambient``), projected
    back (post-processing) — the papers' baselines. ``Δ`` is the ℓ2 sensitivity of that mean.
    ``"ambient_laplace"``: the ℓ2 K-norm mechanism ``∝ exp(−‖z‖/σ)``, ``σ = Δ/ε`` (Hardt & Talwar
    2010); ``"coordinate_laplace"``: iid Laplace, ``b = √D·Δ/ε`` (ℓ1 ≤ √D ℓ2); ``"ambient_gaussian"``:
    the Gaussian mechanism for ``(ε, δ)``."""
    if mechanism not in AMBIENT_MECHANISMS:
        raise ValueError(f"mechanism must be one of {AMBIENT_MECHANISMS}, got {mechanism!r}")
    sensitivity, epsilon = check_positive(sensitivity, "sensitivity"), check_epsilon(epsilon)
    kind = {"ambient_laplace": "l2_laplace", "ambient_gaussian": "gaussian",
            "coordinate_laplace": "coordinate_laplace"}[mechanism]
    if manifold.ambient_dim is None:
        raise ValueError(f"mechanism={mechanism!r} needs an ambient embedding; {manifold!r} has none")
    D = manifold.ambient_dim
    if kind == "gaussian":
        delta = check_delta(delta)
        sigma = gaussian_scale(sensitivity, epsilon, delta, calibration)
        rule, thm = f"{calibration} Gaussian σ", "Gaussian mechanism (Balle & Wang 2018)"
    elif kind == "l2_laplace":
        delta, sigma, rule = 0.0, pure_scale(sensitivity, epsilon, footpoint_free=True), "σ = Δ_E/ε"
        thm = "ℓ2 K-norm mechanism (Hardt & Talwar 2010; 2021 App. A.4)"
    else:
        delta, sigma = 0.0, np.sqrt(D) * pure_scale(sensitivity, epsilon, footpoint_free=True)
        rule, thm = "b = √D·Δ_E/ε (ℓ1 ≤ √D ℓ2)", "Laplace mechanism, coordinate-wise (Dwork et al. 2006)"
    law = AmbientNoise(manifold, kind, float(sigma), project=True, floor=floor)
    return Measurement(mechanism, f"ambient {kind} on the Euclidean mean, projected", thm, epsilon, delta, sensitivity,
                       float(sigma), rule, "none (projection back onto the manifold is post-processing)", "exact",
                       "ambient_mean", law)


def riemannian_gaussian(manifold: Manifold, sensitivity: float, epsilon: float, delta: float | None) -> Measurement:
    """The Riemannian Gaussian mechanism (Jiang et al. 2023, NeurIPS): density
    ``∝ exp(−ρ²(η, x)/(2σ²))`` around a footpoint of sensitivity ``Δ``, ``(ε, δ)``-DP and μ-GDP.

    Calibration (docs/gaussian_family.md; ``privacy.gdp``), on a homogeneous space only (the
    normalising constant does not depend on ``η``): flat spaces — the law is the Gaussian mechanism,
    ``σ`` analytic (Balle & Wang 2018) and ``μ = Δ/σ``; sphere and hyperbolic space — the smallest
    ``σ`` (bisection, rounded up) whose exact privacy profile, by quadrature with its error added,
    is ``≤ δ`` at ``ε``; Kendall shapes — the same with the law of cosines of curvature ``κmin = 1``
    (Toponogov: an upper bound on the loss); affine-invariant SPD — the smaller of the
    triangle-inequality bound ``L ≤ (Δ² + 2Δρ)/(2σ²)`` and Toponogov's comparison with ``κmin = −1/2``
    over a uniform direction, both over a bounded radius density (loose: μ there is above ``Δ/σ``).
    ``μ``: the smallest with the profile below the μ-GDP curve on a grid of ε (``gdp.gdp_mu``); the
    privacy event is ``gaussian_dp_event(1/μ)``.

    Parameters
    ----------
    manifold : Manifold
        A homogeneous space (every registered one is).
    sensitivity : float
        ``Δ ≥ sup ρ(η(D), η(D'))`` over neighbouring datasets.
    epsilon : float
        ε > 0.
    delta : float
        δ ∈ (0, 1).

    Returns
    -------
    Measurement
        ``mechanism="riemannian_gaussian"``, ``scale = σ``, ``gdp_mu = μ``; its ``scale_rule``
        states the method, μ and the range of ε where the μ-GDP envelope was checked.

    Raises
    ------
    ValueError
        On a space that is not homogeneous, for ``δ`` outside ``(0, 1)``, ``ε ≤ 0``, or where the
        exact sampler would be hopeless (public parameters only)."""
    sensitivity, epsilon = check_positive(sensitivity, "sensitivity"), check_epsilon(epsilon)
    delta = check_delta(delta)
    method = gdp.profile_method(manifold)
    if method == "exact":
        sigma = gaussian_scale(sensitivity, epsilon, delta, "analytic")
        mu, reach = sensitivity / sigma, np.inf
        rule = "analytic Gaussian σ for (ε, δ) and Δ (flat space: the law is the Gaussian mechanism); μ = Δ/σ"
        slack = 0.0
    else:
        sigma, mu, reach = _profile_calibration(manifold, float(sensitivity), float(epsilon), float(delta))
        how = ("exact privacy profile by 2-D quadrature (radius × angle, law of cosines) at t = Δ, the sup over "
               "footpoint distances t ≤ Δ (quasi-convexity of the distance; beyond a quarter circle the triangle bound, "
               "on the sphere the exact sup over t by an upper Riemann sum where smaller), quadrature error added"
               if method == "profile" else
               "smaller of the triangle bound δ(ε) ≤ E[(1 − e^(ε − (Δ² + 2Δρ)/(2σ²)))_+] and Toponogov's comparison "
               "(κmin = −1/2, uniform direction) over the radius law (Jensen bound of its density)")
        # beyond ε_K the profile is below GDP_TAIL: μ-GDP up to an additive GDP_TAIL, charged as a (0, δ) part
        room = 1.0 - float(gdp.gaussian_delta_mu(mu, 0.0))
        if not room > 1e-3:  # μ ≳ 6.6: no useful μ-GDP event (the bound on SPD-AI at large σ)
            raise ValueError(f"the Riemannian Gaussian on {manifold!r} at epsilon={epsilon!r}, delta={delta!r} is certified "
                             f"only as μ-GDP with μ = {mu:.3g} ({method} bound), too loose to compose; use a larger epsilon, "
                             "a smaller radius, or mechanism='wrapped_gaussian' (exact on Hadamard spaces)")
        slack = gdp.GDP_TAIL / room
        rule = (f"smallest σ (bisection, rounded up) with the {how} ≤ δ; μ = {mu:.6g} "
                f"(profile below the μ-GDP curve for ε ≤ {reach:.3g}, where it falls below {gdp.GDP_TAIL:g}; "
                f"charged as μ-GDP composed with a (0, {slack:.3g}) part)")
    law = RiemannianGaussian(manifold, sigma)
    law.check_samplable()
    sampler = ("eigenvalue construction (Said et al. 2017), two-stage rejection" if not manifold.radial
               else "log-concave radial rejection + uniform direction")
    return Measurement("riemannian_gaussian", "Riemannian Gaussian",
                       f"Jiang et al. 2023 (Riemannian Gaussian law); privacy by {method} calibration "
                       "(docs/gaussian_family.md); μ-GDP: Dong, Roth & Su 2022, Cor. 2.13",
                       epsilon, delta, sensitivity, _finite(sigma, epsilon), rule + f"; μ-GDP with μ = {mu:.6g}", "none",
                       f"exact ({sampler})", "frechet_mean", law, gdp_mu=float(mu), gdp_slack=slack)


@lru_cache(maxsize=256)
@disk_cached("riemannian_gaussian_calibration", is_floats(3))
def _profile_calibration(manifold: Manifold, sensitivity: float, epsilon: float, delta: float) -> tuple[float, float, float]:
    """``(σ, μ, ε_K)`` of the Riemannian Gaussian by its numerical calibration, once per public
    ``(manifold, Δ, ε, δ)``: a release, an audit or ``radius="auto"`` asking again (another
    record set of the same size, another seed) reuses it instead of redoing the quadratures, and a
    new process reads it from the disk cache (``manifold_dp._disk_cache``)."""
    sigma = _profile_sigma(manifold, sensitivity, epsilon, delta)
    mu, reach = gdp.gdp_mu(manifold, sensitivity, sigma)
    return sigma, float(mu), float(reach)


def _profile_sigma(manifold: Manifold, sensitivity: float, epsilon: float, delta: float,
                   profile: Callable[[Manifold, float, float, float], float] = gdp.privacy_profile) -> float:
    """The smallest ``σ`` (to the bisection's resolution, on the safe side) whose profile bound
    (``gdp.privacy_profile``, or ``profile`` with its signature) is ``≤ δ`` at ``ε``. The value
    returned is one at which the bound was checked, whether or not the bound is monotone in ``σ``."""
    def ok(s: float) -> bool:  # a bound the quadrature cannot produce (its window left float64) certifies nothing
        try:
            return bool(profile(manifold, sensitivity, s, epsilon) <= delta)
        except (ValueError, IndexError, FloatingPointError):
            return False

    start = gaussian_scale(sensitivity, epsilon, delta, "analytic")  # the flat space's σ: a bracket
    lo, hi = 0.5 * start, 2.0 * start
    for _ in range(60):
        if ok(hi):
            break
        lo, hi = hi, 2.0 * hi
    else:
        raise ValueError(f"no noise scale up to {hi:.3g} makes the Riemannian Gaussian (epsilon={epsilon!r}, "
                         f"delta={delta!r}) private on {manifold!r} by its calibration; use a larger epsilon or a smaller radius"
                         + ("; on hyperbolic space its privacy loss does not vanish as σ grows (the radius drifts like "
                            "(d−1)σ²)" if manifold.curvature_bounds[1] < 0 and manifold.radial else "")
                         + (", or mechanism='wrapped_gaussian'" if gdp.profile_method(manifold) == "triangle" else ""))
    for _ in range(60):
        if not ok(lo) or lo < 1e-300:
            break
        lo, hi = 0.5 * lo, lo
    for _ in range(SIGMA_BISECTIONS):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return float(hi)


def wrapped(manifold: Manifold, kind: str, sensitivity: float, epsilon: float, delta: float | None = None, *,
            base: ArrayLike) -> Measurement:
    """Exponential-wrapped noise at the public base point ``base``: ``exp_b(log_b(η) + Z)``.

    On a Hadamard manifold (``is_hadamard``: affine-invariant and log-Euclidean SPD, hyperbolic,
    Euclidean) ``log_b`` is 1-Lipschitz, so the footpoint sensitivity ``Δ`` bounds that of
    ``log_b(η)`` in ``(T_b M, g_b)`` (docs/gaussian_family.md). ``kind="laplace"``: ℓ2 K-norm
    noise ``∝ exp(−‖z‖/σ)``, ε-DP with ``σ = Δ/ε`` (Hardt & Talwar 2010); ``kind="gaussian"``:
    ``N(0, σ²I)``, ``(ε, δ)``-DP with the analytic ``σ`` (Balle & Wang 2018), ``Δ/σ``-GDP. Exp is
    post-processing.

    Parameters
    ----------
    manifold : Manifold
        A Hadamard manifold (``mechanisms.is_hadamard``).
    kind : {"laplace", "gaussian"}
    sensitivity : float
        ``Δ``, the footpoint sensitivity (it bounds that of ``log_b(η)``).
    epsilon : float
        ε > 0.
    delta : float, optional
        δ ∈ (0, 1), required for ``kind="gaussian"``.
    base : array_like
        The public base point ``b`` (the release's ``center``), chosen without the data.

    Returns
    -------
    Measurement
        ``mechanism="wrapped_laplace"`` or ``"wrapped_gaussian"``.

    Raises
    ------
    ValueError
        On positively curved spaces (sphere, Kendall), where ``log_b`` expands distances and is
        not defined everywhere; for a bad ``kind``, ``ε ≤ 0`` or ``δ`` outside ``(0, 1)``. The
        messages quote parameters only."""
    if kind not in ("laplace", "gaussian"):
        raise ValueError(f"kind must be 'laplace' or 'gaussian', got {kind!r}")
    sensitivity, epsilon = check_positive(sensitivity, "sensitivity"), check_epsilon(epsilon)
    if not is_hadamard(manifold):
        raise ValueError(f"mechanism='wrapped_{kind}' needs a non-positively curved, simply connected space "
                         f"(a Hadamard manifold: SPDAffineInvariant, SPDLogEuclidean, Hyperbolic, Euclidean), got "
                         f"{manifold!r} with curvature bounds {tuple(manifold.curvature_bounds)}")
    if kind == "laplace":
        delta, sigma = 0.0, pure_scale(sensitivity, epsilon, footpoint_free=True)
        rule, thm = "σ = Δ/ε (ℓ2 K-norm noise in T_b M)", "ℓ2 K-norm mechanism in T_b M (Hardt & Talwar 2010)"
    else:
        delta = check_delta(delta)
        sigma = gaussian_scale(sensitivity, epsilon, delta, "analytic")
        rule = f"analytic Gaussian σ for (ε, δ) and Δ in T_b M; μ = Δ/σ = {sensitivity / sigma:.6g}"
        thm = "Gaussian mechanism in T_b M (Balle & Wang 2018)"
    law = WrappedNoise(manifold, kind, sigma, base)
    return Measurement(f"wrapped_{kind}", f"exponential-wrapped {kind}",
                       thm + "; log_b is 1-Lipschitz on a Hadamard manifold (docs/gaussian_family.md)",
                       epsilon, delta, sensitivity, sigma, rule, "none (exp_b is post-processing)",
                       "exact (" + ("Gamma(d, σ)" if kind == "laplace" else "σ·χ_d") + " radius, uniform direction in T_b M)",
                       "frechet_mean", law)


def paper_variant(measurement: Measurement, factor: float, reason: str) -> Measurement:
    """A copy of ``measurement`` with its scale multiplied by ``factor``: how a paper calibrated a
    figure, run by the same law and sampler (``manifold_dp.experiments``; docs/theory.md §4,
    "Calibrations the papers used").

    Every law here is monotone in its scale: an ε-DP law ``∝ exp(−ρ/σ)`` loses at most ``Δ/σ`` or
    ``2Δ/σ``, and the Gaussian's ``(ε, δ)`` curve only improves with ``σ``. So ``factor ≥ 1`` keeps
    the guarantee of a certified measurement (labelled "paper calibration (certified, noisier)"),
    while ``factor < 1`` voids its proof: the copy is labelled "paper calibration — NOT
    certified", has ``certified=False`` and no privacy ``event``, and must never be released.
    ``reason`` (required) says where the factor comes from. A larger scale is checked again from
    public values (integrability; feasibility of a restricted law), as the constructors do."""
    factor = check_positive(factor, "factor")
    if not (isinstance(reason, str) and reason.strip()):
        raise ValueError(f"reason must be a non-empty string saying where the factor comes from, got {reason!r}")
    certified = measurement.certified and factor >= 1.0
    law = replace(measurement.law, sigma=measurement.law.sigma * factor)
    if factor > 1.0 and measurement.restricted:
        if isinstance(law, RiemannianLaplace):
            law.check_restricted_feasible()
        elif isinstance(law, KNormGradient) and not ball_sampler_applies(law.manifold):
            RiemannianLaplace(law.manifold, law.sigma / law.h, restrict_to=(law.center, law.radius)).check_restricted_feasible()
    label = "paper calibration (certified, noisier)" if certified else "paper calibration — NOT certified"
    return replace(measurement, title=f"{measurement.title}, {label}", scale=float(law.sigma),
                   scale_rule=f"{factor:g} × [{measurement.scale_rule}] — {label}: {reason}", law=law,
                   certified=certified)
