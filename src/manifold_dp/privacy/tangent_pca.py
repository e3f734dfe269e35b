"""Private tangent PCA: a private Fréchet mean, then a private second moment of the records
log-mapped there (principal geodesic analysis in the tangent space at a private mean).

Two releases, composed in one certificate (docs/pipelines.md):

1. the mean ``μ̃ = private_frechet_mean(X, …)`` with the share ``mean_share`` of ε (and of δ when
   its mechanism uses δ);
2. with ``μ̃`` now public, each record's tangent coordinates ``v_i`` at ``μ̃`` (an orthonormal basis
   of ``T_μ̃ M``, ``manifold.to_tangent_coordinates``) clipped to the public norm bound
   ``C = min(ρ(μ̃, center) + radius, inj M)``, and the second moment ``S = (1/n) Σ v_i v_iᵀ`` released
   by the Analyze-Gauss mechanism (Dwork, Talwar, Thakurta & Zhang, STOC 2014): ``S`` plus a
   symmetric matrix of independent ``N(0, σ²)`` entries on and above the diagonal, with
   ``σ`` the Gaussian scale of the replace-one sensitivity ``Δ_S = √2·C²/n``
   (``second_moment_sensitivity``).

The eigen-decomposition of the released matrix is post-processing. The accountant (if any) is
charged for both parts before the records are read, all at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._typing import Array, FloatArray
from .._validation import _is_real, check_delta, check_epsilon
from ..manifolds.base import Manifold, check_order
from ..records import is_dask
from . import measurements
from .accounting import PrivacyAccountant, gaussian_dp_event
from .certificate import Certificate, JsonRecord
from .frechet_mean import FRECHET_MEAN
from .public import PublicParams, ignoring_float_errors
from .release import (
    GRID_ABOVE_ULP,
    GRID_BELOW_SCALE,
    PrivateRelease,
    ReleaseWarning,
    _warn,
    _warn_if_seeded_and_composed,
    check_public,
    check_strict,
    prepare_records,
    release_statistic,
    warn_about_delta,
)

__all__ = ["second_moment_sensitivity", "tangent_clip_norm", "AnalyzeGauss", "analyze_gauss",
           "SecondMomentCertificate", "TangentPCACertificate", "TangentPCARelease", "private_tangent_pca"]

SCHEMA_ID = "manifold_dp.tangent_pca_certificate/1"
UNIT_ROUNDOFF = 2.0**-53
CLIP_SLACK = 1e-12  # relative: the computed norm of a clipped row may exceed C by a few ulps
ANALYZE_GAUSS_THEOREM = ("Analyze Gauss (Dwork, Talwar, Thakurta & Zhang, STOC 2014) for the replace-one Frobenius "
                         "sensitivity √2·C²/n; Gaussian mechanism calibration of Balle & Wang 2018 (analytic) or "
                         "Dwork & Roth 2014, Thm A.1 (classical)")
SENSITIVITY_BOUND = ("√2·C²/n: ‖vvᵀ − wwᵀ‖_F² = ‖v‖⁴ + ‖w‖⁴ − 2(v·w)² ≤ 2C⁴ for rows clipped to norm C, and the "
                     "upper triangle's ℓ2 norm is at most the Frobenius norm; plus the float error of both sums, "
                     "2·dim·γ_n·C² (γ_n = n·u/(1 − n·u))")
CLIP_RULE = ("C = min(ρ(μ̃, center) + radius, injectivity radius): every record lies in B_radius(center), so "
             "‖log_μ̃ x‖ = ρ(μ̃, x) ≤ C; every row is clipped to norm C anyway (a data-independent treatment: the "
             "bound holds whatever the records and the geometry's float error)")


def second_moment_sensitivity(n: int, clip_norm: float, dim: int) -> float:
    """Replace-one sensitivity of ``S = (1/n) Σ v_i v_iᵀ`` for rows ``‖v_i‖ ≤ C``, measured as the
    ℓ2 norm of the upper triangle (diagonal included) — the vector Analyze-Gauss perturbs.

    Proof. Replacing ``v`` by ``w`` changes ``S`` by ``M = (vvᵀ − wwᵀ)/n``. Since
    ``tr(vvᵀ wwᵀ) = (v·w)²``, ``‖vvᵀ − wwᵀ‖_F² = ‖v‖⁴ + ‖w‖⁴ − 2(v·w)² ≤ 2C⁴``, with equality
    for orthogonal ``v``, ``w`` of norm ``C``. The upper triangle of a symmetric ``M`` has squared
    norm ``(‖M‖_F² + Σ M_ii²)/2 ≤ ‖M‖_F²``. So the sensitivity is ``√2·C²/n`` (tight: the
    orthogonal pair attains it on the diagonal alone). The rows are clipped to ``C(1 + 1e-12)``
    to cover the rounding of the clip, and ``S`` is a float sum: each computed entry is within
    ``γ_n·C²`` of the exact one (``γ_n = n·u/(1 − n·u)``, any summation order), so two computed
    matrices differ by at most ``2·dim·γ_n·C²`` more in Frobenius norm."""
    c = float(clip_norm) * (1.0 + CLIP_SLACK)
    gamma = n * UNIT_ROUNDOFF / (1.0 - n * UNIT_ROUNDOFF)
    return math.sqrt(2.0) * c * c / n + 2.0 * dim * gamma * c * c


def tangent_clip_norm(manifold: Manifold, mean: ArrayLike, center: ArrayLike, radius: float) -> float:
    """``C = min(ρ(μ̃, center) + radius, inj M)``: a bound on ``‖log_μ̃ x‖`` for every ``x`` in
    ``B_radius(center)`` (triangle inequality; ``ρ(μ̃, x) ≤ inj M`` where ``log`` is defined), a
    function of the released mean and public values only."""
    reach = float(manifold.dist(mean, center)) + float(radius)
    return float(min(reach, manifold.injectivity_radius)) if math.isfinite(reach) else float(manifold.injectivity_radius)


@dataclass(frozen=True)
class AnalyzeGauss:
    """The Analyze-Gauss mechanism for a ``dim × dim`` symmetric matrix at unit-sensitivity
    multiplier ``noise_multiplier = σ/Δ`` (a function of ε, δ and the calibration only, fixed
    before any data are read); ``scale(Δ)`` is the standard deviation at sensitivity ``Δ``."""

    epsilon: float
    delta: float
    calibration: str
    noise_multiplier: float

    @property
    def event(self) -> Any:
        """The ``dp_accounting`` event: a Gaussian of multiplier ``σ/Δ``."""
        return gaussian_dp_event(self.noise_multiplier)

    def scale(self, sensitivity: float) -> float:
        """``σ = z·Δ``: the Gaussian's privacy curve depends on ``σ/Δ`` only (Balle & Wang 2018,
        Thm 8), so this is the calibrated scale at ``Δ``."""
        return self.noise_multiplier * float(sensitivity)

    def sample(self, matrix: ArrayLike, sigma: float, *, rng: RngLike = None) -> FloatArray:
        """``matrix`` plus symmetric noise: ``N(0, σ²)`` on and above the diagonal, mirrored."""
        rng = as_generator(rng)
        matrix = np.asarray(matrix, float)
        noise = np.triu(rng.standard_normal(matrix.shape) * sigma)
        return matrix + noise + np.triu(noise, 1).T


def analyze_gauss(epsilon: float, delta: float, calibration: str = "analytic") -> AnalyzeGauss:
    """Analyze-Gauss at ``(ε, δ)``: its multiplier is ``measurements.gaussian_scale(1, ε, δ)``."""
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    return AnalyzeGauss(epsilon, delta, calibration, measurements.gaussian_scale(1.0, epsilon, delta, calibration))


@dataclass(frozen=True)
class SecondMomentCertificate:
    """The second part of a tangent PCA release: the tangent second moment by Analyze-Gauss."""

    mechanism: str
    mechanism_title: str
    theorem: str
    epsilon: float
    delta: float
    dimension: int
    clip_norm: float
    clip_rule: str
    sensitivity: float
    sensitivity_bound: str
    scale: float
    scale_rule: str
    output_grid_spacing: float


@dataclass(frozen=True)
class TangentPCACertificate(JsonRecord):
    """What a tangent PCA release guarantees: ``(epsilon, delta)`` is the basic composition of
    its two parts (``mean``, a Fréchet mean ``Certificate``; ``second_moment``), and
    ``composed_epsilon`` the ε at ``delta`` that a ``PrivacyAccountant`` gives for the two events
    (never larger). Every field is a function of public parameters and the released mean."""

    statistic: str
    manifold: str
    n: int
    radius: float
    n_components: int
    epsilon: float
    delta: float
    mean_share: float
    composed_epsilon: float
    composition: str
    mean: Certificate
    second_moment: SecondMomentCertificate
    post_processing: str
    library_version: str
    schema: str = SCHEMA_ID

    def summary(self) -> str:
        sm = self.second_moment
        return "\n".join([
            f"private tangent PCA: ({self.epsilon:g}, {self.delta:g})-DP, {self.n_components} "
            f"component{'s' if self.n_components != 1 else ''} on {self.manifold}, "
            f"n = {self.n}; accountant: ε = {self.composed_epsilon:.6g} at δ = {self.delta:g}",
            f"  composition: {self.composition}",
            "  mean: " + self.mean.summary().replace("\n", "\n  "),
            f"  second moment: {sm.mechanism_title} ({sm.epsilon:g}, {sm.delta:g})-DP, C = {sm.clip_norm:.6g}, "
            f"Δ = {sm.sensitivity:.6g}, σ = {sm.scale:.6g} ({sm.scale_rule})",
            f"  post-processing: {self.post_processing}",
        ])


@dataclass(frozen=True)
class TangentPCARelease:
    """A private tangent PCA: ``mean`` (a point), ``components`` (``(n_components,
    *point_shape)``, orthonormal tangent vectors at ``mean``, by decreasing variance),
    ``explained_variance`` (``(n_components,)``, the released eigenvalues, clipped to ``[0, C²]``),
    ``second_moment`` (the released ``dim × dim`` matrix in the tangent coordinates of ``mean``;
    everything else here is post-processing of it and of ``mean``), ``component_coordinates``
    (the components in those coordinates, ``(n_components, dim)``), ``certificate`` and
    ``mean_release`` (the mean's own ``PrivateRelease``)."""

    mean: Array
    components: Array
    explained_variance: FloatArray
    second_moment: FloatArray = field(repr=False)
    component_coordinates: FloatArray = field(repr=False)  # the components in tangent coordinates, (n_components, dim)
    certificate: TangentPCACertificate = field(repr=False)
    mean_release: PrivateRelease = field(repr=False)


def _check_share(mean_share: Any) -> float:
    if not (_is_real(mean_share) and 0 < mean_share < 1):
        raise ValueError(f"mean_share must be a number in (0, 1), got {mean_share!r}")
    return float(mean_share)


def _check_components(n_components: object, dim: int) -> int:
    if isinstance(n_components, (bool, np.bool_)) or not isinstance(n_components, (int, np.integer)):
        raise TypeError(f"n_components must be an int, got {type(n_components).__name__}")
    if not 1 <= n_components <= dim:
        raise ValueError(f"n_components must be between 1 and the manifold's dimension {dim}, got {int(n_components)}")
    return int(n_components)


def _check_radius_given(radius: object) -> None:
    if not _is_real(radius):
        raise ValueError(f"radius must be a number for private_tangent_pca (radius='auto' is not supported: the "
                         f"second moment needs the radius before the records are read), got {radius!r}")


def _tangent_rows(manifold: Manifold, records: Array, mean: Array, clip_norm: float) -> FloatArray:
    """The records' orthonormal tangent coordinates at ``mean``, each row clipped to ``clip_norm``;
    a non-finite row (a record beyond float64 from the mean) becomes 0. Row by row: each row is a
    function of its own record and public values only."""
    with np.errstate(all="ignore"):
        rows = np.asarray(manifold.to_tangent_coordinates(mean, manifold.log(mean, records)), dtype=float)
        rows = np.where(np.all(np.isfinite(rows), axis=1, keepdims=True), rows, 0.0)
        norms = np.linalg.norm(rows, axis=1)
        scale = np.where(norms > clip_norm, clip_norm / np.where(norms > 0, norms, 1.0), 1.0)
    return rows * scale[:, None]


def _grid(sigma: float, clip_norm: float) -> float:
    """The public output grid of the released matrix: ~2^-20 of σ, at least 2^12 float spacings of C²."""
    g = max(sigma * GRID_BELOW_SCALE, clip_norm * clip_norm * GRID_ABOVE_ULP, np.finfo(float).tiny)
    return float(2.0 ** math.ceil(math.log2(g)))


def _principal(manifold: Manifold, mean: Array, matrix: FloatArray, n_components: int,
               largest: float) -> tuple[Array, FloatArray, FloatArray]:
    """Post-processing: the top eigenpairs of the released matrix (descending; each eigenvector's
    largest-magnitude coordinate made positive), as tangent vectors at ``mean``; the eigenvalues
    clipped to ``[0, largest]`` (``C²``: no variance of rows of norm at most ``C`` exceeds it)."""
    values, vectors = np.linalg.eigh(matrix)
    order = np.argsort(values)[::-1][:n_components]
    values, vectors = values[order], vectors[:, order].T
    signs = np.sign(vectors[np.arange(n_components), np.argmax(np.abs(vectors), axis=1)])
    vectors = vectors * np.where(signs == 0, 1.0, signs)[:, None]
    components = manifold.from_tangent_coordinates(mean, vectors)
    return components, np.clip(values, 0.0, largest), vectors


@ignoring_float_errors
def private_tangent_pca(X: ArrayLike, manifold: Manifold, *, center: ArrayLike, radius: float, epsilon: float,
                        delta: float, n_components: int, mean_mechanism: str = "auto", mean_share: float = 0.5,
                        calibration: str = "analytic", accountant: PrivacyAccountant | None = None,
                        rng: RngLike = None, strict: bool = False) -> TangentPCARelease:
    """Release an ``(ε, δ)``-DP tangent PCA of the records: a private Fréchet mean, then the top
    ``n_components`` principal directions of the records' tangent vectors at it.

    Neighbouring datasets replace one record; ``n``, ``center`` and ``radius`` are public.
    Records are validated, replaced and clipped into ``B_radius(center)`` as by
    ``private_frechet_mean`` (``strict=True`` refuses invalid ones before anything is charged).

    Parameters
    ----------
    X : array_like, shape ``(n, *manifold.point_shape)``
        The records (in memory; Dask arrays are refused).
    manifold : Manifold
    center : array_like
        The public centre of the ball, chosen without looking at the data.
    radius : float
        The public ball's radius (a number: ``"auto"`` is not supported here).
    epsilon, delta : float
        The total guarantee, ``ε > 0`` and ``δ ∈ (0, 1)`` (Analyze-Gauss needs ``δ > 0``).
    n_components : int
        How many principal directions, ``1 ≤ n_components ≤ manifold.dim``.
    mean_mechanism : str
        The mean's mechanism (``private_frechet_mean``'s ``mechanism``); ``"auto"`` (default): the
        one with the smallest expected noise distance at the mean's share of ``(ε, δ)``, from
        public values (the certificate's ``mean.mechanism_selection``).
    mean_share : float
        The mean gets ``mean_share·ε`` and, if its mechanism uses δ, ``mean_share·δ``; the second
        moment the rest (all of δ after a pure ε-DP mean). ``0 < mean_share < 1``.
    calibration : {"analytic", "classical"}
        The Gaussian calibration of the second moment (and of a Gaussian mean).
    accountant : PrivacyAccountant, optional
        Charged for both parts, as one composed event, before the records are read.
    rng : numpy.random.Generator, int or None
        ``None``: OS entropy. A seed only for tests.
    strict : bool
        Refuse invalid records instead of replacing them by the centre.

    Returns
    -------
    TangentPCARelease
        ``mean``, ``components``, ``explained_variance``, ``second_moment`` and ``certificate``.

    Raises
    ------
    ValueError, TypeError
        A public parameter is invalid (messages quote parameters only).
    BudgetExceededError
        The accountant cannot carry both parts (nothing is charged).

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp import Euclidean
    >>> from manifold_dp.privacy.tangent_pca import private_tangent_pca
    >>> X = np.random.default_rng(0).normal(size=(2000, 3)) * [1.0, 0.3, 0.1]
    >>> rel = private_tangent_pca(X, Euclidean(3), center=np.zeros(3), radius=4.0, epsilon=2.0, delta=1e-6,
    ...                           n_components=1, rng=1)
    >>> rel.components.shape, bool(abs(rel.components[0, 0]) > 0.95)
    ((1, 3), True)
    >>> round(rel.certificate.epsilon, 12), rel.certificate.second_moment.mechanism
    (2.0, 'analyze_gauss')
    """
    check_order(X, manifold, "private_tangent_pca")
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    share = _check_share(mean_share)
    k = _check_components(n_components, manifold.dim)
    _check_radius_given(radius)
    if is_dask(X):
        raise ValueError("private_tangent_pca reads the records in memory: Dask arrays are not supported")
    _warn_if_seeded_and_composed(rng, accountant)
    rng = as_generator(rng)
    mean_epsilon = share * epsilon
    p = check_public(X, manifold, center=center, radius=radius, epsilon=mean_epsilon, delta=share * delta,
                     mechanism=mean_mechanism, bound="tight", calibration=calibration, restrict=False,
                     accountant=accountant, strict=strict)
    mean_measurement = FRECHET_MEAN.stages(manifold, p, p.given_radius, p.epsilon, "auto")[0].measurement
    moment_delta = delta - mean_measurement.delta  # all of δ after a pure ε-DP mean
    gauss = analyze_gauss((1.0 - share) * epsilon, moment_delta, calibration)
    events = [mean_measurement.event, gauss.event]
    check_strict(manifold, X, p.strict)
    if p.accountant is not None:  # both parts at once, before the records are read
        from dp_accounting import dp_event

        p.accountant.charge(dp_event.ComposedDpEvent(events))
    mean_release = release_statistic(FRECHET_MEAN, X, manifold, center=p.center, radius=p.given_radius,
                                     epsilon=mean_epsilon, delta=share * delta, mechanism=mean_mechanism,
                                     calibration=calibration, rng=rng, warn_delta=False)
    warn_about_delta(X, manifold, delta, "auto")  # the whole δ, which the second moment always uses
    mean = mean_release.point
    n, dim = p.n, manifold.dim
    clip_norm = tangent_clip_norm(manifold, mean, p.center, p.given_radius)
    records = np.asarray(prepare_records(manifold, X, p.center, p.given_radius)[0])  # counted (warned) by the mean
    rows = _tangent_rows(manifold, records, mean, clip_norm)
    sensitivity = second_moment_sensitivity(n, clip_norm, dim)
    sigma = gauss.scale(sensitivity)
    _warn_if_moment_mostly_noise(sigma, clip_norm, dim, n, gauss.epsilon)
    grid = _grid(sigma, clip_norm)
    released = np.round(gauss.sample(rows.T @ rows / n, sigma, rng=rng) / grid) * grid
    components, variances, coordinates = _principal(manifold, mean, released, k, clip_norm**2)
    certificate = _certificate(p, mean_release.certificate, gauss, events, k, share, clip_norm, sensitivity, sigma,
                               grid, dim, delta)
    return TangentPCARelease(mean, components, variances, released, coordinates, certificate, mean_release)


def _warn_if_moment_mostly_noise(sigma: float, clip_norm: float, dim: int, n: int, epsilon: float) -> None:
    """``ReleaseWarning`` when the noise's spectral norm (about ``2σ√dim``) exceeds ``C²``, the
    largest eigenvalue the clipped second moment can have (public: σ, C, dim)."""
    noise = 2.0 * sigma * math.sqrt(dim)
    if noise > clip_norm**2:
        _warn(f"the second moment's noise (spectral norm ≈ 2σ√dim = {noise:.3g}) exceeds C² = {clip_norm**2:.3g}, the "
              f"largest variance the clipped records allow: the components are mostly noise. σ falls like 1/(n·epsilon) "
              f"(n = {n}, epsilon = {epsilon:g} for the second moment): n·epsilon must grow at least "
              f"{noise / clip_norm**2:.3g}-fold for the noise to fall to C², and more for it to fall below the records' "
              "own variances, which may be far smaller than C²", ReleaseWarning)


def _certificate(p: PublicParams, mean_certificate: Certificate, gauss: AnalyzeGauss, events: list[Any], k: int,
                 share: float, clip_norm: float, sensitivity: float, sigma: float, grid: float, dim: int,
                 delta: float) -> TangentPCACertificate:
    from .. import __version__

    composed = PrivacyAccountant(epsilon=p.epsilon + gauss.epsilon, delta=delta).spent(events=events)[0]
    rule = (f"σ = z·Δ with z = {gauss.noise_multiplier:.6g}, the {gauss.calibration} Gaussian scale at unit sensitivity "
            f"for (ε, δ) = ({gauss.epsilon:g}, {gauss.delta:g})")
    moment = SecondMomentCertificate(
        mechanism="analyze_gauss", mechanism_title="Analyze Gauss (symmetric Gaussian noise on the second moment)",
        theorem=ANALYZE_GAUSS_THEOREM, epsilon=gauss.epsilon, delta=gauss.delta, dimension=dim, clip_norm=clip_norm,
        clip_rule=CLIP_RULE, sensitivity=sensitivity, sensitivity_bound=SENSITIVITY_BOUND, scale=sigma, scale_rule=rule,
        output_grid_spacing=grid)
    total_epsilon = mean_certificate.epsilon + gauss.epsilon
    composition = (f"basic composition (sequential; the second part's parameters depend on the released mean, its "
                   f"guarantee does not): epsilon = {mean_certificate.epsilon:g} (mean) + {gauss.epsilon:g} (second "
                   f"moment), delta = {mean_certificate.delta:g} + {gauss.delta:g}; a PrivacyAccountant (adaptive) "
                   "composing the two events gives composed_epsilon at this delta")
    return TangentPCACertificate(
        statistic="tangent_pca", manifold=mean_certificate.manifold, n=p.n, radius=p.given_radius, n_components=k,
        epsilon=total_epsilon, delta=mean_certificate.delta + gauss.delta, mean_share=share,
        composed_epsilon=float(composed), composition=composition, mean=mean_certificate,
        second_moment=moment,
        post_processing=(f"the released matrix snapped to a public grid of {grid!r}; its top {k} eigenpairs (numpy eigh, "
                         "descending, sign fixed by the largest coordinate; eigenvalues clipped to [0, C²]) mapped to tangent "
                         "vectors at the released mean"),
        library_version=__version__)
