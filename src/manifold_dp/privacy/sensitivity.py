"""Sensitivity bounds of the Fréchet mean for data in a geodesic ball ``B_r(m0)`` (docs/theory.md §3).

Neighbouring datasets replace one of ``n`` records. Curvature enters through
``h(r, κ) = 2r√κ cot(2r√κ)`` (strong convexity of ``F`` on the ball) and a constant ``L`` with
``‖log_m x − log_m y‖ ≤ 2rL`` for ``m, x, y`` in the ball: a Lipschitz constant of ``log_m``, or on
the sphere the smaller proven spread constant (``spread_bound``).
"""

import functools
import json
import math
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_n, check_radius
from ..manifolds.base import Manifold
from ..stats.frechet import hessian_lower_bound as hessian_lower_bound  # re-exported: the privacy API names it

__all__ = ["log_lipschitz", "spread_bound", "frechet_mean_sensitivity", "ambient_radius", "ambient_sensitivity",
           "ambient_float_error", "ambient_sum_rows", "mean_rounding"]

BOUNDS = ("tight", "rauch", "paper")
# the computer-assisted proof's table (experiments/sphere_spread.py): proven upper bounds C_j on the spread constant of
# the unit sphere at radii r_j = π·num/den·(1 + 2^-w); read as data, python-flint is not needed at run time
SPREAD_TABLE = Path(__file__).resolve().parent.parent / "experiments" / "sphere_spread_table.json"
SPREAD_PAD = 1e-15  # relative error allowed for float64's r_j and r√κ (a few roundings, each ≤ 2^-53)


def log_lipschitz(radius: float, kappa_max: float, bound: str = "tight") -> float:
    """Lipschitz constant of ``x ↦ log_m x`` over ``B_r(m0)``.

    ``"paper"``: ``2 − h(r, κ)`` (Karcher 1977, as used by 2021 Thm 2 and 2022 Thm 2).
    ``"tight"`` and ``"rauch"``: ``2r√κ / sin(2r√κ)``, by Rauch comparison: with sectional curvature ``≤ κ``,
    ``‖d exp_m(v) w‖ ≥ (sin(√κ|v|)/(√κ|v|))‖w‖`` for ``w ⊥ v`` and radial directions are
    isometric, so ``‖d log_m‖ ≤ √κ t / sin(√κ t)`` at distance ``t ≤ 2r`` (docs/theory.md §3). Both are 1
    when ``κ ≤ 0``. The tight one is never larger: ``a/sin a ≤ 2 − a cot a`` on ``(0, π/2)``.
    """
    if bound not in BOUNDS:
        raise ValueError(f"bound must be one of {BOUNDS}, got {bound!r}")
    if kappa_max <= 0:
        return 1.0
    a = 2.0 * radius * np.sqrt(kappa_max)
    if bound == "paper":
        return 2.0 - hessian_lower_bound(radius, kappa_max)
    return float(a / np.sin(a))


@functools.cache
def _spread_table() -> tuple[tuple[float, float], ...]:
    """``(r_j, C_j)`` of the stored proof by increasing ``r_j``: on the unit 2-sphere
    ``‖log_m x − log_m y‖ ≤ 2r_jC_j`` for ``m, x, y`` in a closed ball of radius ``r_j``; ``r_j``
    is ``π·num/den·(1 + 2^-w)`` up to float64 rounding (``SPREAD_PAD``)."""
    table = json.loads(SPREAD_TABLE.read_text(encoding="utf-8"))
    widening = 1.0 + 2.0 ** -int(table["radius_widening_log2"])
    rows = []
    for fraction, row in table["radii"].items():
        num, den = (int(v) for v in fraction.split("/"))
        rows.append((math.pi * num / den * widening, float(row["proven_upper_bound"])))
    return tuple(sorted(rows))


def _spread_rows(rho: float) -> list[tuple[float, float]]:
    """The table's ``(r_j, C_j)`` whose ball certainly contains one of radius ``rho`` (``r_j ≥ rho``)."""
    return [(r_j, c_j) for r_j, c_j in _spread_table() if r_j * (1.0 - SPREAD_PAD) >= rho * (1.0 + SPREAD_PAD)]


def spread_bound(radius: float, kappa: float, slack: float = 0.0) -> float | None:
    """A proven ``C`` with ``‖log_m x − log_m y‖ ≤ 2rC`` for ``m, x, y`` in a ball of radius
    ``r + slack`` of the sphere of curvature ``κ > 0`` (any dimension), or ``None`` where the table
    has no radius ``≥ (r + slack)√κ``.

    The computer-assisted proof (``experiments/sphere_spread.py``, docs/theory.md §3) bounds the
    spread constant ``C(r_j) = sup ‖log_m x − log_m y‖/(2r_j)`` of the unit 2-sphere at the radii
    ``r_j`` of its table, and the bound carries to every ``S^d`` (three points lie on a great
    2-sphere). A ball of radius ``ρ ≤ r_j`` (in unit-sphere units, ``ρ = (r + slack)√κ``) lies in
    one of radius ``r_j``, so ``‖log_m x − log_m y‖ ≤ 2r_jC(r_j)/√κ``: the constant at ``r`` is
    ``min r_jC(r_j)/(r√κ)`` over the tabulated ``r_j ≥ ρ``. A tabulated radius below ``ρ`` proves
    nothing about the larger ball. ``slack``: the float error of the records' distances (a release
    passes ``manifold.float_error``). Public values only.
    """
    if not kappa > 0:
        raise ValueError(f"the spread constant is tabulated for the sphere (κ > 0), got κ = {kappa!r}")
    root = math.sqrt(kappa)
    rows = _spread_rows((radius + slack) * root)
    if not rows:
        return None
    return min(r_j * c_j for r_j, c_j in rows) * (1.0 + SPREAD_PAD) / (radius * root * (1.0 - SPREAD_PAD))


def sphere_constant(manifold: Manifold, radius: float, bound: str) -> float:
    """The ``L`` of ``frechet_mean_sensitivity``: ``log_lipschitz``, and with ``bound="tight"`` on a
    round sphere (``manifold.round_sphere``) the smaller of the Rauch constant and the proven spread
    bound (``spread_bound``). Kendall shape spaces (curvature in ``[1, 4]``, not a sphere) keep the
    Rauch constant."""
    kmax = manifold.curvature_bounds[1]
    L = log_lipschitz(radius, kmax, bound)
    if bound == "tight" and manifold.round_sphere:
        spread = spread_bound(radius, kmax, manifold.float_error(manifold.origin, radius))
        if spread is not None:
            L = min(L, spread)
    return L


def bound_rule(manifold: Manifold, radius: float, bound: str) -> str:
    """Which constant ``L`` a release at ``radius`` uses, in words (the certificate's ``sensitivity_bound``)."""
    if bound == "paper":
        return "paper: L = 2 − h (Karcher; 2021 Thm 2 / 2022 Thm 2)"
    rauch = "L = 2r√κ/sin(2r√κ) (Rauch comparison)"
    if bound == "rauch" or not manifold.round_sphere:
        return f"{bound}: {rauch}"
    kmax = manifold.curvature_bounds[1]
    slack = manifold.float_error(manifold.origin, radius)
    L, spread = log_lipschitz(radius, kmax, bound), spread_bound(radius, kmax, slack)
    if spread is None or spread >= L:
        return f"tight: {rauch}; the proven spread constant of the sphere is not smaller here"
    r_j, c_j = min(_spread_rows((radius + slack) * math.sqrt(kmax)), key=lambda row: row[0] * row[1])
    return (f"tight: L = {spread:.6g} = r_j·C(r_j)/(r√κ), the sphere's proven spread constant C(r_j) ≤ {c_j:.6f} at "
            f"r_j = {r_j:.6g} ≥ r√κ (interval-arithmetic proof, docs/theory.md §3), below the Rauch {L:.6g}")


def frechet_mean_sensitivity(manifold: Manifold, *, n: int, radius: float,
                             kind: Literal["laplace", "kng", "log_euclidean"] | str = "laplace",
                             bound: Literal["tight", "rauch", "paper"] | str = "tight") -> float:
    """Sensitivity of the Fréchet mean for ``n`` records in a ball of radius ``radius``.

    Neighbouring datasets replace one record; every record lies in ``B_r(m0)`` with ``r < r*``
    (Assumption 1). Proofs: docs/theory.md §3. This is the bound before the public optimisation
    and float64 slack that a release adds (``privacy.release.calibrate``).

    Parameters
    ----------
    manifold : Manifold
        The space; only its curvature bounds, whether it is a round sphere (``round_sphere``) and
        (for ``"log_euclidean"``) its flat chart matter.
    n : int
        The number of records (public), ``≥ 1``.
    radius : float
        The radius ``r`` of the public ball, in the manifold's geodesic distance, ``0 < r < r*``.
    kind : {"laplace", "kng", "log_euclidean"}
        ``"laplace"``: ``sup ρ(x̄(D), x̄(D')) ≤ 2rL/(nh)`` (Reimherr et al. 2021, Thm 2, there with
        ``L = 2 − h``). ``"kng"``: ``sup_x ‖∇F(x; D) − ∇F(x; D')‖_x ≤ 2rL/n`` (Soto et al. 2022,
        Thm 2). ``"log_euclidean"``: ``2r/n`` in the log-Euclidean distance (Utpala et al. 2023,
        Thm 3); on ``SPDLogEuclidean`` and ``Euclidean`` this equals the ``laplace`` bound.
    bound : {"tight", "rauch", "paper"}
        The constant ``L`` with ``‖log_m x − log_m y‖ ≤ 2rL`` over the ball: ``"tight"`` (default)
        the smallest proven one, on a ``Sphere`` the smaller of the Rauch constant and the proven
        spread constant (``spread_bound``), elsewhere the Rauch constant; ``"rauch"`` the Rauch
        constant ``2r√κ/sin(2r√κ)`` everywhere; ``"paper"`` the papers' ``2 − h``.

    Returns
    -------
    float
        The sensitivity ``Δ`` (geodesic distance for ``"laplace"``, tangent norm for ``"kng"``).

    Raises
    ------
    ValueError
        If ``n`` is not an integer ``≥ 1``, ``radius`` is not in ``(0, r*)``, ``kind`` or
        ``bound`` is unknown, or ``"log_euclidean"`` is asked of a space without a flat chart.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp import Sphere, frechet_mean_sensitivity
    >>> r, n = np.pi / 8, 100
    >>> h = 2 * r / np.tan(2 * r)  # strong convexity on the ball, κ = 1
    >>> L = 2 * r / np.sin(2 * r)  # Rauch constant
    >>> bool(np.isclose(frechet_mean_sensitivity(Sphere(2), n=n, radius=r, bound="rauch"), 2 * r * L / (n * h)))
    True
    >>> round(frechet_mean_sensitivity(Sphere(2), n=n, radius=r, kind="kng", bound="rauch"), 6)
    0.008724
    >>> round(frechet_mean_sensitivity(Sphere(2), n=n, radius=r, kind="kng"), 6)  # proven C(π/8) ≤ 1.0265
    0.008062
    """
    n = check_n(n)
    radius = check_radius(manifold, radius)
    kmax = manifold.curvature_bounds[1]
    L = sphere_constant(manifold, radius, bound)
    h = hessian_lower_bound(radius, kmax)
    if kind == "laplace":
        return 2.0 * radius * L / (n * h)
    if kind == "kng":
        return 2.0 * radius * L / n
    if kind == "log_euclidean":
        if not manifold.flat_chart:
            raise ValueError(f"kind='log_euclidean' needs a manifold with a flat chart, got {manifold!r}")
        return 2.0 * radius / n
    raise ValueError(f"kind must be 'laplace', 'kng' or 'log_euclidean', got {kind!r}")


def ambient_radius(manifold: Manifold, radius: float, center: ArrayLike | None = None) -> float:
    """Radius ``r_E`` of a Euclidean ball (in the manifold's ambient embedding) that contains
    ``B_r(center)``: ``manifold.ambient_radius`` (sphere: the chord; SPD: ``λmax(center)(e^r − 1)``,
    2021 Prop. 1 and Duhamel's formula; Euclidean: ``r``). ``center`` defaults to the origin."""
    if manifold.ambient_dim is None:
        raise ValueError(f"no ambient (extrinsic) baseline is defined for {manifold!r}")
    return manifold.ambient_radius(manifold.origin if center is None else np.asarray(center), radius)


AMBIENT_EMBEDDING_ROUNDING = 64  # to_ambient's contract: each coordinate vector rounds within (4D + 64)·2⁻⁵³·A
AMBIENT_TREE_DEPTH = 64  # the Dask blocks' sums are added in a balanced tree of depth ≤ 64


def ambient_sum_rows(n: int) -> int:
    """Rows per sub-block of the ambient mean's sum (``release.ambient_mean``): ``⌈√n⌉``, so
    that the rounding bound ``γ_(rows + ⌈n/rows⌉ + 64)`` grows like ``2√n``, not ``n``."""
    return max(1, math.isqrt(max(int(n) - 1, 0)) + 1)


def mean_rounding(n: int, dimension: int, bound: float) -> float:
    """A public bound on the float64 error of ``(1/n) Σ φ_i`` for vectors of ``R^dimension`` with
    ``‖φ_i‖ ≤ bound``, each computed within ``(4·dimension + 64)·2⁻⁵³·bound`` of its exact value,
    summed in sub-blocks of ``B = ambient_sum_rows(n)`` rows (``kernels.arrays.sum_rows``), the
    sub-blocks' sums, then blocks' sums in a balanced tree of depth ``≤ 64``
    (``kernels.arrays.pairwise_sum``): any order of addition inside each stage errs within
    ``γ_(B + ⌈n/B⌉ + 64)·Σ‖φ_i‖ ≤ …·n·bound`` (Higham 2002, §4.2), and the division by ``n`` adds
    one rounding. Hence ``(B + ⌈n/B⌉ + 4·dimension + 130)·(2⁻⁵²·bound + 2⁻¹⁰⁷⁴)`` (``2⁻⁵²``: twice
    the unit roundoff, which absorbs the ``1/(1 − kε)`` of ``γ_k`` and the products of errors;
    ``2⁻¹⁰⁷⁴``: a rounding among subnormal numbers is absolute)."""
    rows = ambient_sum_rows(n)
    terms = rows + -(-n // rows) + 4 * dimension + AMBIENT_EMBEDDING_ROUNDING + AMBIENT_TREE_DEPTH + 2
    return float(terms * (2.0**-52 * bound + 2.0**-1074))


def ambient_float_error(manifold: Manifold, *, n: int, radius: float, center: ArrayLike | None = None) -> float:
    """``η``: a public bound on how far the float64 mean of the embedded records
    (``release.ambient_mean``) lies from the exact mean of the exact embeddings, for any records
    in the ball: ``mean_rounding`` with ``A = ‖φ(center)‖ + r_E`` a bound on every ``‖φ(x)‖``
    (``r_E`` at the radius widened by the clip's rounding; ``‖φ(center)‖`` taken with the vector
    scaled by a power of two, so it does not overflow). The per-record term covers
    ``to_ambient``'s own rounding (its contract) and the clip's rounding of each coordinate beyond
    the widened radius (a few ulps of ``A`` per coordinate)."""
    n = check_n(n)
    c = manifold.origin if center is None else np.asarray(center)
    r_e = manifold.ambient_radius(c, _widened(manifold, c, check_radius(manifold, radius)))
    return mean_rounding(n, int(manifold.ambient_dim or 0), _norm(manifold.to_ambient(c)) + r_e)


def _norm(v: ArrayLike) -> float:
    """``‖v‖`` without overflow or underflow (the vector scaled by a power of two first)."""
    v = np.asarray(v, float).ravel()
    top = float(np.max(np.abs(v))) if v.size else 0.0
    if not (top > 0.0 and math.isfinite(top)):
        return top
    e = math.frexp(top)[1]
    return math.ldexp(float(np.linalg.norm(np.ldexp(v, -e))), e)


def _widened(manifold: Manifold, center: ArrayLike, radius: float) -> float:
    """The radius a clipped record can reach: ``r`` plus the clip's rounding (``float_error``)."""
    return float(radius * (1.0 + 2.0**-40) + manifold.float_error(np.asarray(center), radius))


def ambient_sensitivity(manifold: Manifold, *, n: int, radius: float, center: ArrayLike | None = None) -> float:
    """``Δ_E = 2 r_E/n + 2η``: sensitivity of the computed (float64) Euclidean mean of the
    embedded records, ``r_E`` the ambient radius of the ball widened by the clip's rounding and
    ``η`` the mean's rounding (``ambient_float_error``): ``2r_E/n`` between the exact means of two
    neighbouring datasets, ``η`` between each exact mean and its computed value."""
    radius = check_radius(manifold, radius)
    c = manifold.origin if center is None else np.asarray(center)
    if manifold.ambient_dim is None:
        raise ValueError(f"no ambient (extrinsic) baseline is defined for {manifold!r}")
    r_e = manifold.ambient_radius(c, _widened(manifold, c, radius))
    return 2.0 * r_e / check_n(n) + 2.0 * ambient_float_error(manifold, n=n, radius=radius, center=c)
