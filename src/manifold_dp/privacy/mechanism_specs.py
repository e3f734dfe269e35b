"""The mechanisms a release can use: one frozen ``MechanismSpec`` each, in one registry.

A spec says what a mechanism is to the rest of the library — its name and title, whether it needs
δ, on which manifolds (and record containers) it runs and, if not, why (``unsupported``), what
its law is drawn around (``perturbs``, which decides the statistic's sensitivity), how a
sensitivity becomes a ``Measurement`` (``measure``: the constructor of ``privacy.measurements``
with the public facts it needs), how far its noise moves a release (``noise_distance``), and how
its tail is checked against float64 (``gaussian_tail``, ``tail``). ``MECHANISMS`` maps each name to
its spec; ``check_public``, ``calibrate``, ``mechanism="auto"`` (``privacy.planning``) and the
CLI's table all read it. Every refusal text is a function of public values only.

**Adding a mechanism**: its law in ``mechanisms.py``, its constructor in ``measurements.py``, and
one ``MechanismSpec`` below (the registry line).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from ..manifolds.base import Manifold
from . import measurements
from .float64_reach import fits_float64
from .mechanisms import is_hadamard

__all__ = ["MechanismSpec", "MECHANISMS", "MECHANISM_NAMES", "GAUSSIAN_MECHANISMS", "PERTURBS"]

# What a law is drawn around (``Measurement.statistic``), and so which sensitivity it needs:
# a point (the footpoint's), the whole gradient field of the data (KNG), or a vector of the embedding.
PERTURBS = ("footpoint", "gradient_field", "ambient_mean")


@dataclass(frozen=True)
class MechanismSpec:
    """One mechanism as the release path, the planner and the CLI see it.

    Parameters
    ----------
    name : str
        The ``mechanism=`` value (round-trips through the certificate).
    title : str
        For people (the CLI's table).
    needs_delta : bool
        An (ε, δ) mechanism: ``delta`` is required.
    perturbs : {"footpoint", "gradient_field", "ambient_mean"}
        What the law is drawn around; the statistic bounds the sensitivity of that.
    requires : callable
        ``requires(manifold) -> str | None``: why the mechanism does not run on ``manifold``
        (read off its declared capabilities), or ``None``.
    measure : callable
        ``measure(manifold, sensitivity, *, epsilon, delta, calibration, center, radius,
        restrict) -> Measurement``: the calibration, through the constructor of
        ``privacy.measurements`` (the only place where ε becomes a scale).
    noise_distance : callable
        ``noise_distance(manifold, scale) -> float``: about how far the noise moves the
        statistic (``expected_noise_distance``).
    gaussian_tail : bool
        The law's radius has a Gaussian tail (``float64_reach.check_reach(gaussian=True)``).
    tail : float
        Otherwise, the float64 check is that of a Laplace law of ``tail·σ``.
    on_dask : str or None
        Why the mechanism refuses Dask records, or ``None`` when it reads them block by block.
    summary : str
        One line for people (``manifold-dp mechanisms``): how it runs; ``{where}`` stands for the
        manifolds it runs on (read off ``supports``).
    """

    name: str
    title: str
    needs_delta: bool
    perturbs: str
    requires: Callable[[Manifold], str | None]
    measure: Callable[..., measurements.Measurement]
    noise_distance: Callable[[Manifold, float], float]
    gaussian_tail: bool = False
    tail: float = 1.0
    on_dask: str | None = None
    summary: str = "runs on {where}."

    def unsupported(self, manifold: Manifold, *, dask: bool) -> str | None:
        """Why this mechanism cannot run on ``manifold`` (with Dask records when ``dask``), or
        ``None`` (public values only): the text ``check_public`` raises."""
        reason = self.requires(manifold)
        if reason is None and dask:
            return self.on_dask
        return reason

    def supports(self, manifold: Manifold) -> bool:
        """Whether the mechanism runs on ``manifold`` (in-memory records): the CLI's table."""
        return self.unsupported(manifold, dask=False) is None


# --- what each mechanism needs of the manifold ---------------------------------------------------

def _anywhere(manifold: Manifold) -> str | None:
    return None


def _flat_chart(manifold: Manifold) -> str | None:
    if manifold.flat_chart:
        return None
    return ("mechanism='tangent_gaussian' needs a manifold with a flat chart (SPDLogEuclidean, Euclidean), "
            f"got {manifold!r}")


def _ambient(name: str) -> Callable[[Manifold], str | None]:
    def requires(manifold: Manifold) -> str | None:
        if manifold.ambient_dim is not None:
            return None
        return f"mechanism={name!r} needs an ambient embedding; {manifold!r} has none"
    return requires


def _hadamard(name: str) -> Callable[[Manifold], str | None]:
    def requires(manifold: Manifold) -> str | None:
        if is_hadamard(manifold):
            return None
        return (f"mechanism={name!r} needs a non-positively curved, simply connected space (SPDAffineInvariant, "
                f"SPDLogEuclidean, Hyperbolic, Euclidean), got {manifold!r} with curvature bounds "
                f"{tuple(manifold.curvature_bounds)}")
    return requires


def _homogeneous(manifold: Manifold) -> str | None:
    if manifold.homogeneous:
        return None
    return f"mechanism='riemannian_gaussian' needs a homogeneous space, got {manifold!r}"


# --- the calibrations: a sensitivity and public facts → a Measurement ------------------------------

def _laplace(manifold: Manifold, sensitivity: float, *, epsilon: float, center: Any, radius: float, restrict: bool,
             **_: Any) -> measurements.Measurement:
    """The unrestricted Laplace where it is integrable and its draws fit float64, else restricted."""
    note = ""
    if not restrict:
        try:
            meas = measurements.laplace(manifold, sensitivity, epsilon)
        except ValueError:
            note = f"; the unrestricted law is not integrable at this Δ/ε (needs σ < {manifold.laplace_sigma_limit:.4g})"
        else:
            if fits_float64(manifold, center, radius, meas.scale, False):
                return meas
            note = "; the unrestricted law would overflow float64 (its tail reaches past exp's range)"
    try:
        meas = measurements.laplace(manifold, sensitivity, epsilon, restrict_to=(center, radius))
    except ValueError as err:  # say which law was tried and why: restrict=False is the default already
        advice = _unrestricted_advice(manifold, sensitivity, epsilon, center, radius, restrict, note)
        raise ValueError(f"{err}{advice}") from None
    return dataclasses.replace(meas, scale_rule=meas.scale_rule + note)


def _unrestricted_advice(manifold: Manifold, sens: float, epsilon: float, center: Any, radius: float, restrict: bool,
                         note: str) -> str:
    """What a refusal of the restricted Laplace says about the unrestricted law (public values)."""
    if not restrict:
        return f" (the restricted law was used because{note.removeprefix(';')})"
    try:
        meas = measurements.laplace(manifold, sens, epsilon)
    except ValueError:
        return ""
    return "; or restrict=False (the unrestricted law, usable here)" if fits_float64(
        manifold, center, radius, meas.scale, False) else ""


def _kng(manifold: Manifold, sensitivity: float, *, epsilon: float, center: Any, radius: float,
         **_: Any) -> measurements.Measurement:
    return measurements.kng(manifold, sensitivity, epsilon, center=center, radius=radius)


def _tangent_gaussian(manifold: Manifold, sensitivity: float, *, epsilon: float, delta: float | None, calibration: str,
                      **_: Any) -> measurements.Measurement:
    return measurements.tangent_gaussian(manifold, sensitivity, epsilon, delta, calibration=calibration)


def _ambient_measure(name: str) -> Callable[..., measurements.Measurement]:
    def measure(manifold: Manifold, sensitivity: float, *, epsilon: float, delta: float | None, calibration: str,
                center: Any, radius: float, **_: Any) -> measurements.Measurement:
        return measurements.ambient(manifold, name, sensitivity, epsilon, delta, calibration=calibration,
                                    floor=manifold.ambient_floor(center, radius))
    return measure


def _riemannian_gaussian(manifold: Manifold, sensitivity: float, *, epsilon: float, delta: float | None, center: Any,
                         radius: float, **_: Any) -> measurements.Measurement:
    # both footpoints (certified means) lie in the ball, so they are at most 2r apart: with few records Δ
    # exceeds that (Kendall, n = 1: Δ ≈ 4.1 at r = 0.35) and the profile would be taken at a needless distance
    reach = 2.0 * (radius + manifold.float_error(center, radius)) * (1.0 + 1e-9)
    return measurements.riemannian_gaussian(manifold, min(sensitivity, reach), epsilon, delta)


def _wrapped(kind: str) -> Callable[..., measurements.Measurement]:
    def measure(manifold: Manifold, sensitivity: float, *, epsilon: float, delta: float | None, center: Any,
                **_: Any) -> measurements.Measurement:
        return measurements.wrapped(manifold, kind, sensitivity, epsilon, delta, base=center)
    return measure


# --- how far the noise moves a release ---------------------------------------------------------

def _intrinsic_laplace_distance(manifold: Manifold, sigma: float) -> float:
    """``d·σ``: a radial law ``∝ exp(−ρ/σ)·J(ρ)`` (exact in ``R^d``, where ``ρ ~ Gamma(d, σ)``)."""
    return manifold.dim * sigma


def _intrinsic_gaussian_distance(manifold: Manifold, sigma: float) -> float:
    """``σ·√d`` (``E‖N(0, σ²I_d)‖ ≈ σ√d``)."""
    return sigma * math.sqrt(manifold.dim)


def _ambient_dim(manifold: Manifold) -> int:
    return cast(int, manifold.ambient_dim)  # the ambient mechanisms need an embedding


_AMBIENT_NOTE = " on the mean of the embedded records, projected back"

_AMBIENT_SUMMARY = ("manifolds with an ambient Euclidean embedding ({where}): noise on the mean of the embedded records, "
                    "projected back")
_WRAPPED_SUMMARY = ("Hadamard manifolds only ({where}): noise in the tangent space at the public centre, mapped back "
                    "with exp")

MECHANISMS: dict[str, MechanismSpec] = {spec.name: spec for spec in (
    MechanismSpec("laplace", "Riemannian Laplace", False, "footpoint", _anywhere, _laplace, _intrinsic_laplace_distance,
                  summary="every manifold ({where}). Unrestricted (σ = Δ/ε) where its law is integrable and fits "
                          "float64, else restricted to the ball automatically (σ = 2Δ/ε); --restrict always restricts it."),
    MechanismSpec("kng", "K-norm gradient (KNG)", False, "gradient_field", _anywhere, _kng, _intrinsic_laplace_distance,
                  on_dask="mechanism='kng' evaluates ∇F over all records at every proposal: not supported on Dask arrays",
                  summary="every manifold ({where}; σ = 2Δ/ε). Flat: the Laplace restricted to the ball around the "
                          "mean. Curved: exact rejection whose running time depends on the data (do not publish it)."),
    MechanismSpec("tangent_gaussian", "tangent Gaussian", True, "footpoint", _flat_chart, _tangent_gaussian,
                  _intrinsic_gaussian_distance, gaussian_tail=True,
                  summary="manifolds with a flat chart only ({where}); needs --delta."),
    MechanismSpec("ambient_laplace", "ambient ℓ2 Laplace" + _AMBIENT_NOTE, False, "ambient_mean",
                  _ambient("ambient_laplace"), _ambient_measure("ambient_laplace"),
                  lambda m, sigma: _ambient_dim(m) * sigma * m.ambient_noise_factor, summary=_AMBIENT_SUMMARY + "."),
    MechanismSpec("ambient_gaussian", "ambient Gaussian" + _AMBIENT_NOTE, True, "ambient_mean",
                  _ambient("ambient_gaussian"), _ambient_measure("ambient_gaussian"),
                  lambda m, sigma: sigma * math.sqrt(_ambient_dim(m)) * m.ambient_noise_factor, tail=3.0,
                  summary=_AMBIENT_SUMMARY + "; needs --delta."),
    MechanismSpec("coordinate_laplace", "coordinate-wise Laplace" + _AMBIENT_NOTE, False, "ambient_mean",
                  _ambient("coordinate_laplace"), _ambient_measure("coordinate_laplace"),
                  lambda m, sigma: sigma * math.sqrt(2 * _ambient_dim(m)) * m.ambient_noise_factor,
                  summary=_AMBIENT_SUMMARY + " (ε-DP by ‖·‖₁ ≤ √D‖·‖₂)."),
    MechanismSpec("riemannian_gaussian", "Riemannian Gaussian", True, "footpoint", _homogeneous, _riemannian_gaussian,
                  _intrinsic_gaussian_distance, gaussian_tail=True,
                  summary="homogeneous manifolds ({where}); density ∝ exp(−ρ²/(2σ²)) around the mean, (ε, δ)-DP by a "
                          "numerical privacy profile (exact Gaussian mechanism on flat spaces), μ-GDP reported; needs "
                          "--delta (docs/gaussian_family.md)."),
    MechanismSpec("wrapped_laplace", "exponential-wrapped laplace", False, "footpoint", _hadamard("wrapped_laplace"),
                  _wrapped("laplace"), _intrinsic_laplace_distance, summary=_WRAPPED_SUMMARY + "."),
    MechanismSpec("wrapped_gaussian", "exponential-wrapped gaussian", True, "footpoint", _hadamard("wrapped_gaussian"),
                  _wrapped("gaussian"), _intrinsic_gaussian_distance, gaussian_tail=True,
                  summary=_WRAPPED_SUMMARY + "; needs --delta."),
)}

MECHANISM_NAMES = tuple(MECHANISMS)  # in the order ties of mechanism="auto" and the tables follow
GAUSSIAN_MECHANISMS = tuple(name for name, spec in MECHANISMS.items() if spec.needs_delta)  # need δ

