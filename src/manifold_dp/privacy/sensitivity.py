"""Sensitivity bounds of the Fréchet mean for data in a geodesic ball ``B_r(m0)`` (docs/theory.md §3).

Neighbouring datasets replace one of ``n`` records. Curvature enters through
``h(r, κ) = 2r√κ cot(2r√κ)`` (strong convexity of ``F`` on the ball) and a Lipschitz constant
``L`` of ``log_m`` over the ball.
"""

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_n, check_radius
from ..manifolds.base import Manifold
from ..stats.frechet import hessian_lower_bound as hessian_lower_bound  # re-exported: the privacy API names it

__all__ = ["log_lipschitz", "frechet_mean_sensitivity", "ambient_radius", "ambient_sensitivity"]

BOUNDS = ("tight", "paper")


def log_lipschitz(radius: float, kappa_max: float, bound: str = "tight") -> float:
    """Lipschitz constant of ``x ↦ log_m x`` over ``B_r(m0)``.

    ``"paper"``: ``2 − h(r, κ)`` (Karcher 1977, as used by 2021 Thm 2 and 2022 Thm 2).
    ``"tight"``: ``2r√κ / sin(2r√κ)``, by Rauch comparison: with sectional curvature ``≤ κ``,
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


def frechet_mean_sensitivity(manifold: Manifold, *, n: int, radius: float,
                             kind: Literal["laplace", "kng", "log_euclidean"] | str = "laplace",
                             bound: Literal["tight", "paper"] | str = "tight") -> float:
    """Sensitivity of the Fréchet mean for ``n`` records in a ball of radius ``radius``.

    Neighbouring datasets replace one record; every record lies in ``B_r(m0)`` with ``r < r*``
    (Assumption 1). Proofs: docs/theory.md §3. This is the bound before the public optimisation
    and float64 slack that a release adds (``privacy.release.calibrate``).

    Parameters
    ----------
    manifold : Manifold
        The space; only its curvature bounds (and, for ``"log_euclidean"``, its flat chart) matter.
    n : int
        The number of records (public), ``≥ 1``.
    radius : float
        The radius ``r`` of the public ball, in the manifold's geodesic distance, ``0 < r < r*``.
    kind : {"laplace", "kng", "log_euclidean"}
        ``"laplace"``: ``sup ρ(x̄(D), x̄(D')) ≤ 2rL/(nh)`` (Reimherr et al. 2021, Thm 2, there with
        ``L = 2 − h``). ``"kng"``: ``sup_x ‖∇F(x; D) − ∇F(x; D')‖_x ≤ 2rL/n`` (Soto et al. 2022,
        Thm 2). ``"log_euclidean"``: ``2r/n`` in the log-Euclidean distance (Utpala et al. 2023,
        Thm 3); on ``SPDLogEuclidean`` and ``Euclidean`` this equals the ``laplace`` bound.
    bound : {"tight", "paper"}
        The Lipschitz constant ``L`` of ``log`` over the ball (``log_lipschitz``): the Rauch
        constant ``2r√κ/sin(2r√κ)`` (default) or the papers' ``2 − h``.

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
    >>> bool(np.isclose(frechet_mean_sensitivity(Sphere(2), n=n, radius=r), 2 * r * L / (n * h)))
    True
    >>> round(frechet_mean_sensitivity(Sphere(2), n=n, radius=r, kind="kng"), 6)
    0.008724
    """
    n = check_n(n)
    radius = check_radius(manifold, radius)
    kmax = manifold.curvature_bounds[1]
    L = log_lipschitz(radius, kmax, bound)
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


def ambient_sensitivity(manifold: Manifold, *, n: int, radius: float, center: ArrayLike | None = None) -> float:
    """``Δ_E = 2 r_E / n``: sensitivity of the Euclidean mean of the embedded records."""
    return 2.0 * ambient_radius(manifold, check_radius(manifold, radius), center) / check_n(n)
