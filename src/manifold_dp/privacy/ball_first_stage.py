"""The first stage of ``center="auto"``: a rough private centre that needs no ball from the user.

Each space has one statistic ``T(D) = (1/n) Σ φ(x_i)`` of a vector space ``R^D`` whose replace-one
ℓ2 sensitivity is bounded *without* a centre or a radius (proofs in docs/private_ball.md):

============  ==========================================================  =====================
space         ``φ(x)`` (in ``R^D``, an isometric coordinate system)          ``Δ = sup‖T(D) − T(D')‖``
============  ==========================================================  =====================
sphere S^d    the point itself, a vector of norm ``R`` in ``R^(d+1)``         ``2R/n``
Kendall       ``w w*``, ``w = H z`` (Helmert ``H``, ``z`` the unit pre-shape),  ``√2/n``
              a Hermitian ``(k−1)×(k−1)`` matrix as ``R^((k−1)²)``
SO(3)         ``q qᵀ`` (``q`` a unit quaternion of the rotation; ``±q`` alike),  ``√2/n``
              a symmetric ``4×4`` matrix as ``R^10`` (``vecd``)
SPD (both)    ``log x`` clipped to the Frobenius ball of radius ``B = b√k``    ``2B/n``
              (``vecd``: ``Sym(k)`` as ``R^(k(k+1)/2)``)
hyperbolic    ``log_e0(x)`` (spatial part) clipped to the norm ball ``B``      ``2B/n``
Euclidean     ``x`` clipped to the norm ball ``B``                             ``2B/n``
============  ==========================================================  =====================

Records that are non-finite or not on the manifold are replaced by the public ``origin`` first
(they then contribute a valid ``φ``, inside the same bound). ``T`` is released with the ℓ2 K-norm
mechanism (density ``∝ exp(−‖z‖/σ)``, ``σ = Δ/ε``: radius ``Gamma(D, σ)``, uniform direction;
Hardt & Talwar 2010), ε-DP; or, given ``δ``, the Gaussian mechanism (Balle & Wang 2018). The
noisy vector is snapped to a public grid ``2^-20·σ`` (float bits, Mironov 2012) and mapped to a
point (post-processing): normalised (sphere; ``0`` → origin), top eigenvector (Kendall, SO(3)), ``exp``
of the log mean with its eigenvalues clamped to ``[−b, b]`` (SPD), ``exp_e0`` of the mean clamped
to the ball ``B`` (hyperbolic, Euclidean). The point always lies in the stage's public *safe
region* (``reference``: a worst-case point of it, for the public checks of later stages).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np
from numpy.typing import ArrayLike

from .._typing import Array, FloatArray
from ..manifolds import SO3, Euclidean, Hyperbolic, KendallShape2D, Sphere
from ..manifolds.base import Manifold
from ..manifolds.matrix import expm_sym, invvecd, logm_spd, vecd
from ..manifolds.spd import _SPD
from ..records import pairwise_sum, sum_rows
from .measurements import gaussian_scale, pure_scale
from .sensitivity import ambient_sum_rows, mean_rounding

_T = TypeVar("_T")

__all__ = ["FirstStage", "first_stage", "l2_laplace_noise", "snapped", "SPD_LOG_EIGENVALUE_BOUND", "HYPERBOLIC_BOUND",
           "EUCLIDEAN_BOUND"]

SPD_LOG_EIGENVALUE_BOUND = 5.0  # b: eigenvalues in [e^-5, e^5] ≈ [0.0067, 148]; B = b·√k
HYPERBOLIC_BOUND = 4.0  # ‖log_e0 x‖ ≤ 4: the centre stays within 4 of e0, leaving radii up to 4 below max_reach = 8
EUCLIDEAN_BOUND = 10.0  # ‖x‖ ≤ 10 in the data's units: set AutoCenter(bound=...) for other scales
FIRST_STAGE_BLOCK = 4096  # records per block (bounds temporary memory; public)
FIRST_STAGE_GRID = 2.0**-20  # the noisy statistic is snapped to 2^-20 of its noise scale


def l2_laplace_noise(dimension: int, scale: float, rng: np.random.Generator) -> FloatArray:
    """A draw of the ℓ2 K-norm law ``∝ exp(−‖z‖/scale)`` on ``R^dimension``: radius
    ``Gamma(dimension, scale)`` (the polar density ``∝ ρ^(D−1) e^(−ρ/σ)``), uniform direction."""
    g = rng.standard_normal(dimension)
    norm = np.linalg.norm(g)
    g = g / norm if norm > 0 else np.eye(dimension)[0]
    return g * rng.gamma(dimension, scale)


def snapped(statistic: FloatArray, noise: FloatArray, scale: float) -> FloatArray:
    """``statistic + noise`` rounded to the public grid ``2^⌈log₂(2^−20·scale)⌉`` (float low-order
    bits, Mironov 2012): the output of the first stage and of a re-centring round."""
    grid = 2.0 ** math.ceil(math.log2(scale * FIRST_STAGE_GRID))
    out: FloatArray = np.round((statistic + noise) / grid) * grid
    return out


def _clip_rows(v: FloatArray, bound: float) -> FloatArray:
    """Rows of ``v`` scaled into the ℓ2 ball of radius ``bound`` (a projection: norm ≤ bound)."""
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    return cast(FloatArray, v * np.minimum(1.0, bound / np.maximum(norms, np.finfo(float).tiny)))


class _SphereStage:
    title = "extrinsic mean of the records in R^(d+1)"
    bound_name = None
    shrinks = False  # only the direction is used

    def dimension(self, m: Sphere) -> int:
        return m.dim + 1

    def sensitivity(self, m: Sphere, n: int, bound: float | None) -> float:
        return 2.0 * m.radius / n

    def rule(self, m: Sphere, bound: float | None) -> str:
        return "Δ = 2R/n: every record has norm R, so one replaced record moves the mean by ≤ 2R/n"

    def rows(self, m: Sphere, points: ArrayLike, bound: float | None) -> FloatArray:
        return np.asarray(points, float)

    def to_point(self, m: Sphere, z: FloatArray, bound: float | None) -> Array:
        return m.from_ambient(z)

    def clamp(self, m: Sphere, x: Array, bound: float | None) -> Array:
        return x

    def reference(self, m: Sphere, bound: float | None) -> Array:
        return m.origin

    def diameter(self, m: Sphere, bound: float | None) -> float:
        return math.inf  # the radius is capped by r* instead

    def expected_error(self, m: Sphere, noise: float) -> float:
        return float(m.radius) * math.atan(noise / float(m.radius))


class _KendallStage:
    title = "dominant eigenvector of (1/n)Σ w_i w_i* (w_i = H z_i, Helmert coordinates of the pre-shapes)"
    bound_name = None
    shrinks = False  # only the top eigenvector is used

    def dimension(self, m: KendallShape2D) -> int:
        return (m.k_landmarks - 1) ** 2

    def sensitivity(self, m: KendallShape2D, n: int, bound: float | None) -> float:
        return math.sqrt(2.0) / n

    def rule(self, m: KendallShape2D, bound: float | None) -> str:
        return "Δ = √2/n: ‖ww* − vv*‖_F² = 2 − 2|⟨w, v⟩|² ≤ 2 for unit w, v"

    def rows(self, m: KendallShape2D, points: ArrayLike, bound: float | None) -> FloatArray:
        return m.to_ambient(points)  # w w*, w = H z: unit w, so ‖φ‖_F = 1

    def to_point(self, m: KendallShape2D, z: FloatArray, bound: float | None) -> Array:
        return m.from_ambient(z)  # the top eigenvector

    def clamp(self, m: KendallShape2D, x: Array, bound: float | None) -> Array:
        return x

    def reference(self, m: KendallShape2D, bound: float | None) -> Array:
        return m.origin

    def diameter(self, m: KendallShape2D, bound: float | None) -> float:
        return math.inf  # the radius is capped by r* instead

    def expected_error(self, m: KendallShape2D, noise: float) -> float:
        return math.atan(noise / math.sqrt(m.k_landmarks - 1))


class _RotationStage:
    title = "dominant eigenvector of (1/n)Σ q_i q_iᵀ (q_i unit quaternions of the rotations)"
    bound_name = None
    shrinks = False  # only the top eigenvector is used

    def dimension(self, m: SO3) -> int:
        return 10

    def sensitivity(self, m: SO3, n: int, bound: float | None) -> float:
        return math.sqrt(2.0) / n  # as Kendall's: ‖qqᵀ − ppᵀ‖_F ≤ √2

    def rule(self, m: SO3, bound: float | None) -> str:
        return "Δ = √2/n: ‖qqᵀ − ppᵀ‖_F² = 2 − 2⟨q, p⟩² ≤ 2 for unit q, p"

    def rows(self, m: SO3, points: ArrayLike, bound: float | None) -> FloatArray:
        q = np.asarray(points, float)
        return vecd(q[:, :, None] * q[:, None, :])

    def to_point(self, m: SO3, z: FloatArray, bound: float | None) -> Array:
        return m.project(np.linalg.eigh(invvecd(z, 4))[1][:, -1])

    def clamp(self, m: SO3, x: Array, bound: float | None) -> Array:
        return x

    def reference(self, m: SO3, bound: float | None) -> Array:
        return m.origin

    def diameter(self, m: SO3, bound: float | None) -> float:
        return math.inf  # the radius is capped by r* instead

    def expected_error(self, m: SO3, noise: float) -> float:
        return 2.0 * math.atan(noise * math.sqrt(3.0 / 20.0))


class _SPDStage:
    title = "mean of the matrix logarithms clipped to the Frobenius ball ‖log x‖_F ≤ B = b·√k"
    bound_name = "b (|log λ| ≤ b for the centre's eigenvalues; records' logs clipped to B = b√k)"
    shrinks = True

    def dimension(self, m: _SPD) -> int:
        return m.k * (m.k + 1) // 2

    def sensitivity(self, m: _SPD, n: int, bound: float) -> float:
        return 2.0 * bound * math.sqrt(m.k) / n

    def rule(self, m: _SPD, bound: float) -> str:
        return f"Δ = 2B/n, B = b√k = {bound * math.sqrt(m.k):.4g}: each clipped log lies in the Frobenius ball of radius B"

    def rows(self, m: _SPD, points: ArrayLike, bound: float) -> FloatArray:
        # Through the release's own record preparation at the centre I and radius B (in either metric
        # ρ(I, x) = ‖log x‖_F): one scaled eigendecomposition per record, the same operations for every
        # record, and no record that LAPACK cannot decompose (a record of 1e308 entries made eigh raise:
        # a failure for one neighbour only). The prepared records lie in the ball, so their logarithms
        # are the clipped logs, well conditioned.
        from .release import prepare_records

        B = bound * math.sqrt(m.k)
        records, _ = prepare_records(m, np.asarray(points, float), np.eye(m.k), B, keep=True, log_mean=False)
        return _clip_rows(vecd(logm_spd(np.asarray(records, float))), B)

    def to_point(self, m: _SPD, z: FloatArray, bound: float) -> Array:
        return expm_sym(self._clamped_log(invvecd(z, m.k), bound))

    @staticmethod
    def _clamped_log(s: FloatArray, bound: float) -> FloatArray:
        w, u = np.linalg.eigh(0.5 * (s + s.T))
        return cast(FloatArray, (u * np.clip(w, -bound, bound)) @ u.T)

    def clamp(self, m: _SPD, x: Array, bound: float) -> Array:
        # the eigenvalues clipped to [e^−b, e^b] (= exp of the clipped log): a round's exp_c of a long tangent
        # vector can come out of float64 with an eigenvalue ≤ 0 (a condition number past 1e16), whose log is NaN
        x = np.asarray(x, float)
        if not np.all(np.isfinite(x)):  # an exp that overflowed: the public reference point
            return self.reference(m, bound)
        w, u = np.linalg.eigh(0.5 * (x + np.swapaxes(x, -1, -2)))
        return cast(Array, (u * np.clip(w, math.exp(-bound), math.exp(bound))) @ u.T)

    def reference(self, m: _SPD, bound: float) -> Array:
        logs = np.zeros(m.k)
        logs[0], logs[-1] = bound, -bound  # the worst condition number of the safe region, e^(2b)
        return np.diag(np.exp(logs))

    def diameter(self, m: _SPD, bound: float) -> float:
        """``2b√k``: in either metric ``ρ(c, x) ≤ ‖log c‖_F + ‖log x‖_F`` (triangle inequality through ``I``)."""
        return 2.0 * bound * math.sqrt(m.k)

    def expected_error(self, m: _SPD, noise: float) -> float:
        return noise


class _FlatBallStage:
    """Hyperbolic space (tangent vectors at ``e0``) and Euclidean space (the points)."""

    shrinks = True

    def __init__(self, hyperbolic: bool) -> None:
        self.hyperbolic = hyperbolic
        self.title = ("mean of log_e0(x) clipped to the norm ball B" if hyperbolic else
                      "mean of the records clipped to the norm ball B around 0")
        self.bound_name = "B (norm bound of " + ("log_e0(x))" if hyperbolic else "the records)")

    def dimension(self, m: Manifold) -> int:
        return m.dim

    def sensitivity(self, m: Manifold, n: int, bound: float) -> float:
        return 2.0 * bound / n

    def rule(self, m: Manifold, bound: float) -> str:
        return f"Δ = 2B/n, B = {bound:g}: each clipped vector has norm ≤ B"

    def _vectors(self, m: Manifold, points: ArrayLike) -> FloatArray:
        points = np.asarray(points, float)
        if self.hyperbolic:
            return m.log(m.origin, points)[..., 1:]
        return points

    def rows(self, m: Manifold, points: ArrayLike, bound: float) -> FloatArray:
        return _clip_rows(self._vectors(m, points), bound)

    def to_point(self, m: Manifold, z: FloatArray, bound: float) -> Array:
        z = _clip_rows(np.asarray(z, float)[None], bound)[0]
        if self.hyperbolic:
            return m.exp(m.origin, np.concatenate([[0.0], z]))
        return z

    def clamp(self, m: Manifold, x: Array, bound: float) -> Array:
        return self.to_point(m, self._vectors(m, np.asarray(x)[None])[0], bound)

    def reference(self, m: Manifold, bound: float) -> Array:
        z = np.zeros(m.dim)
        z[0] = bound
        return self.to_point(m, z, bound)

    def diameter(self, m: Manifold, bound: float) -> float:
        return 2.0 * bound

    def expected_error(self, m: Manifold, noise: float) -> float:
        return noise


STAGES: dict[type[Manifold], Any] = {Sphere: _SphereStage(), KendallShape2D: _KendallStage(), SO3: _RotationStage(),
          _SPD: _SPDStage(), Hyperbolic: _FlatBallStage(True), Euclidean: _FlatBallStage(False)}
DEFAULT_BOUNDS: dict[type[Manifold], float] = {_SPD: SPD_LOG_EIGENVALUE_BOUND, Hyperbolic: HYPERBOLIC_BOUND,
                                               Euclidean: EUCLIDEAN_BOUND}


def _lookup(table: dict[type[Manifold], _T], manifold: Manifold) -> _T | None:
    for cls in type(manifold).__mro__:
        if cls in table:
            return table[cls]
    return None


@dataclass(frozen=True)
class FirstStage:
    """The first stage, calibrated from public values (``first_stage``): what it computes, its
    sensitivity and noise. ``sample(X, rng)`` reads the records."""

    manifold: Manifold
    n: int
    bound: float | None
    epsilon: float
    delta: float
    noise: str  # "l2_laplace" or "gaussian"
    sensitivity: float
    scale: float

    @property
    def _stage(self) -> Any:
        return _lookup(STAGES, self.manifold)

    title = property(lambda self: self._stage.title)
    dimension = property(lambda self: self._stage.dimension(self.manifold))
    rule = property(lambda self: self._stage.rule(self.manifold, self.bound))

    def statistic(self, points: Array) -> FloatArray:
        """``T(D) = (1/n) Σ φ(x_i)`` of the sanitised records (in memory, block by block), summed
        as ``sensitivity.mean_rounding`` bounds its rounding (which ``sensitivity`` includes)."""
        parts, rows_per_sum = [], ambient_sum_rows(self.n)
        for start in range(0, len(points), FIRST_STAGE_BLOCK):
            with np.errstate(all="ignore"):
                rows = self._stage.rows(self.manifold, points[start:start + FIRST_STAGE_BLOCK], self.bound)
                # a row float64 could not compute (a valid but nearly singular SPD record) counts as φ = 0, which keeps
                # every sensitivity bound (‖φ(x) − 0‖ ≤ R, 1, B); the same operations for every row
                parts.append(sum_rows(np.where(np.all(np.isfinite(rows), axis=-1, keepdims=True), rows, 0.0),
                                      rows_per_sum))
        return (pairwise_sum(parts) if parts else np.zeros(self.dimension)) / self.n

    def noisy(self, statistic: FloatArray, rng: np.random.Generator) -> FloatArray:
        """``T + noise``, snapped to the public grid ``2^-20·σ`` (the mechanism's output)."""
        D = self.dimension
        noise = (rng.normal(0.0, self.scale, D) if self.noise == "gaussian" else l2_laplace_noise(D, self.scale, rng))
        return snapped(statistic, noise, self.scale)

    @property
    def expected_noise_norm(self) -> float:
        """``E‖noise‖`` in the statistic's coordinates (public): ``Dσ`` for the K-norm law, about
        ``σ√(D − 1/2)`` for the Gaussian."""
        D = self.dimension
        return float(D if self.noise == "l2_laplace" else math.sqrt(D - 0.5)) * self.scale

    @property
    def expected_error(self) -> float:
        """The first stage's expected error as a distance on the manifold, from public values only
        (a planning aid, ``manifold-dp plan``): the noise norm ``N = expected_noise_norm`` carried
        to the point — sphere of radius ``R``: the angle ``atan(N/R)`` of a unit-length mean, times
        ``R``; Kendall shapes: the rotation ``atan(N/√(k−1))`` of the top eigenvector of a rank-one
        mean (first-order perturbation, ``‖E u‖ ≈ N/√(k−1)`` for isotropic noise); SO(3): twice the
        turn ``atan(N√(3/20))`` of the top eigenvector of ``qqᵀ + E`` (``ρ = 2α``); flat charts
        (SPD, hyperbolic, Euclidean): ``N`` itself, the error in the chart at the origin (larger far
        from the origin, where ``exp`` stretches the chart, and before the shrinkage), at most the
        safe region's diameter."""
        return min(float(self._stage.expected_error(self.manifold, self.expected_noise_norm)), self.diameter)

    @property
    def largest_error(self) -> float:
        """``expected_error`` as the noise grows without bound: ``πR/2`` on the sphere, ``π/2`` on
        Kendall shapes, ``π`` on SO(3), the safe region's diameter on the flat charts (public)."""
        return min(float(self._stage.expected_error(self.manifold, math.inf)), self.diameter)

    @property
    def swamped(self) -> bool:
        """``expected_error`` is at least half ``largest_error``: the noisy statistic says little
        about where the records lie (on the sphere, a noise norm at least the mean's largest, ``R``;
        on the flat charts, at least ``B√k`` or ``B``). Public: ``n``, ε, δ, the space and its
        bound; ``center="auto"`` warns before the data are read."""
        return self.expected_error >= 0.5 * self.largest_error

    @property
    def noise_second_moment(self) -> float:
        """``E‖noise‖²`` (public): ``D(D+1)σ²`` for the K-norm law (radius ``Gamma(D, σ)``),
        ``Dσ²`` for the Gaussian."""
        D = self.dimension
        return float(D * (D + 1) if self.noise == "l2_laplace" else D) * self.scale**2

    def shrunk(self, z: FloatArray) -> FloatArray:
        """Positive-part James–Stein shrinkage of the noisy vector towards 0 (the public origin's
        coordinates): ``z·max(0, 1 − E‖noise‖²/‖z‖²)``. Post-processing of ``z``: where the
        noise swamps the statistic (few records, many dimensions, a wide bound) the centre falls
        back towards the origin instead of a random point at the edge of the safe region; where the
        statistic dominates it is nearly unchanged. Spaces whose point is a direction or an
        eigenvector (sphere, Kendall) do not shrink."""
        if not self._stage.shrinks:
            return z
        norm2 = float(np.dot(z, z))
        factor = max(0.0, 1.0 - self.noise_second_moment / norm2) if norm2 > 0 else 0.0
        return z * factor

    def privatise(self, statistic: FloatArray, rng: np.random.Generator) -> Array:
        """``noisy``, shrunk (``shrunk``), mapped to a point of the safe region (post-processing)."""
        z = self.shrunk(self.noisy(statistic, rng))
        with np.errstate(all="ignore"):
            return cast(Array, self._stage.to_point(self.manifold, z, self.bound))

    def clamp(self, point: Array) -> Array:
        """A point moved into the stage's public safe region (post-processing of a release)."""
        with np.errstate(all="ignore"):
            return cast(Array, self._stage.clamp(self.manifold, point, self.bound))

    @property
    def reference(self) -> Array:
        """A public point of the safe region where later stages' public checks are hardest."""
        return cast(Array, self._stage.reference(self.manifold, self.bound))

    @property
    def diameter(self) -> float:
        """How far apart two points of the safe region can be (``inf`` on the sphere, Kendall shapes, SO(3))."""
        return float(self._stage.diameter(self.manifold, self.bound))

    @property
    def theorem(self) -> str:
        if self.noise == "gaussian":
            return "Gaussian mechanism, analytic calibration (Balle & Wang 2018)"
        return "ℓ2 K-norm mechanism (Hardt & Talwar 2010): density ∝ exp(−‖z‖/σ), σ = Δ/ε"


def supports(manifold: Manifold) -> bool:
    return _lookup(STAGES, manifold) is not None


def first_stage(manifold: Manifold, n: int, epsilon: float, delta: float | None = None, bound: float | None = None,
                calibration: str = "analytic") -> FirstStage:
    """Calibrate the first stage from public values: ``delta`` given → Gaussian noise, else the
    ℓ2 K-norm mechanism. ``bound`` (SPD: ``b``; hyperbolic, Euclidean: ``B``) defaults to the
    documented public defaults; it is ignored (``None``) on the sphere, Kendall shapes and SO(3)."""
    stage = _lookup(STAGES, manifold)
    if stage is None:
        raise ValueError(f"center='auto' has no first stage for {manifold!r}")
    default = _lookup(DEFAULT_BOUNDS, manifold)
    if default is None:
        bound = None
    else:
        bound = float(default if bound is None else bound)
        if not (math.isfinite(bound) and bound > 0):
            raise ValueError(f"AutoCenter.bound must be a finite number > 0, got {bound!r}")
        if np.isfinite(manifold.max_reach) and not bound < manifold.max_reach:
            raise ValueError(f"AutoCenter.bound must be < {manifold.max_reach:g} on {manifold!r} (the float64 reach "
                             f"from e0), got {bound!r}")
    exact = stage.sensitivity(manifold, n, bound)
    # the computed T: every row has norm ≤ nΔ (R, 1, 1, B√k, B, within rounding), its sum's rounding is mean_rounding
    sens = exact * (1.0 + 2.0**-40) + 2.0 * mean_rounding(n, stage.dimension(manifold), n * exact * (1.0 + 2.0**-40))
    if delta:
        return FirstStage(manifold, n, bound, float(epsilon), float(delta), "gaussian", sens,
                          gaussian_scale(sens, epsilon, delta, calibration))
    return FirstStage(manifold, n, bound, float(epsilon), 0.0, "l2_laplace", sens,
                      pure_scale(sens, epsilon, footpoint_free=True))
