"""The private Fréchet variance on the release pipeline (``privacy.release``): the certified
mean, ``V`` at it, Laplace noise on the real line, clamped to ``[0, r²]``. The sensitivity and
its proof: ``frechet_variance_sensitivity``, docs/statistics.md."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike
from .._typing import Array
from ..manifolds import Euclidean
from ..manifolds.base import Manifold
from ..stats.frechet import certified_frechet_mean, mean_squared_distance
from . import measurements
from .accounting import PrivacyAccountant
from .float64_reach import check_ball
from .public import PublicParams
from .radius_selection import AutoRadius
from .release import (
    RADIUS_UNITS,
    Calibration,
    PrivateRelease,
    Statistic,
    _optimisation_note,
    check_round_to,
    mean_accuracy,
    output_grid,
    release_statistic,
)

__all__ = ["FrechetVariance", "FRECHET_VARIANCE", "frechet_variance_sensitivity", "private_frechet_variance"]

# A real value is a point of R¹: its representative is itself, and its output grid comes from its scale.
REAL_LINE = Euclidean(1)


def frechet_variance_sensitivity(n: int, radius: float, accuracy: float = 0.0) -> float:
    """Sensitivity of the Fréchet variance ``V(D) = min_x (1/n) Σ ρ²(x, x_i)`` for ``n`` records in
    ``B_r(m0)``, ``r < r*`` (docs/statistics.md): ``4r²/n``, plus ``2a(4r + a)`` when ``V`` is
    evaluated at a point within ``a`` of the exact minimiser.

    Proof. Both minimisers lie in the ball (geodesic convexity of ``F`` on ``B_r``, Assumption 1).
    If ``D'`` replaces ``x_j`` by ``x_j'``, ``V(D') ≤ F_D'(x̄_D) = V(D) + (ρ²(x̄_D, x_j') − ρ²(x̄_D,
    x_j))/n ≤ V(D) + (2r)²/n``, and symmetrically. Evaluating at ``x̂`` with ``ρ(x̂, x̄) ≤ a``
    changes each ``ρ²(·, x_i) ≤ (2r)²`` by at most ``a(4r + a)`` (triangle inequality)."""
    return 4.0 * radius**2 / n + 2.0 * accuracy * (4.0 * radius + accuracy)


class FrechetVariance(Statistic):
    """``V = min_x (1/n) Σ ρ²(x, x_i)`` of the records clipped into the public ball, evaluated at
    the certified mean; released by the Laplace mechanism on the real line (``REAL_LINE``) and
    clamped to ``[0, r²]``."""

    name: str = "frechet_variance"
    mechanisms: tuple[str, ...] = ("laplace",)
    cli_name: str = "variance"
    scale_power: float = 2.0  # V is at most r²: its noise per unit of the statistic's scale is σ/r²

    def stages(self, manifold: Manifold, p: PublicParams, radius: float, epsilon: float,
               round_to: float | str | None, warn: bool = True) -> tuple[Calibration, float | None]:
        """Stage 2 of the variance at ``radius`` and ``epsilon``: ``(calibration, output grid)``."""
        center, n = p.center, p.n
        check_ball(manifold, center, radius)
        accuracy = mean_accuracy(manifold, center, radius, 2.0 * radius / n)
        sens = frechet_variance_sensitivity(n, radius, accuracy) + 8.0 * radius * manifold.float_error(center, radius)
        meas = measurements.laplace(REAL_LINE, sens, epsilon)
        cal = Calibration(meas, accuracy, "4r²/n (+ optimisation slack; docs/statistics.md)",
                          _optimisation_note(manifold, radius, accuracy, n))
        return cal, check_round_to(round_to, output_grid(REAL_LINE, meas.scale, np.zeros(1), radius**2), warn=warn)

    def compute(self, manifold: Manifold, p: PublicParams, radius: float, cal: Calibration, records: Any) -> Any:
        """The certified mean, ``V`` at it (charged already)."""
        with np.errstate(all="ignore"):
            mean = certified_frechet_mean(manifold, records, p.center, radius, cal.accuracy)
            variance = mean_squared_distance(manifold, records, mean)
        return np.array([variance])

    def output_space(self, manifold: Manifold, center: Array) -> tuple[Manifold, Array]:
        return REAL_LINE, np.zeros(1)

    def post(self, raw: Any, radius: float) -> Any:
        """``V ≤ F(center) ≤ r²``: the draw clamped to ``[0, r²]`` (post-processing)."""
        return np.clip(raw, 0.0, radius**2)

    def released(self, point: Array) -> Any:
        return float(point[0])

    def noise_against_room(self, manifold: Manifold, measurement: measurements.Measurement,
                           radius: float) -> tuple[float, float, str, str, str]:
        """The Laplace scale against ``r²``, the largest variance the ball allows."""
        room = radius**2
        return (measurement.scale, room, f"the variance's Laplace scale ({measurement.scale:.3g})",
                f"r² = {room:.3g}, the largest variance the ball allows", "")


FRECHET_VARIANCE: FrechetVariance = FrechetVariance()


def private_frechet_variance(X: ArrayLike, manifold: Manifold, *, center: ArrayLike, radius: float | str | AutoRadius,
                             epsilon: float, round_to: float | str | None = "auto",
                             accountant: PrivacyAccountant | None = None, rng: RngLike = None,
                             strict: bool = False) -> PrivateRelease:
    """Release an ε-DP Fréchet variance ``V = min_x (1/n) Σ ρ²(x, x_i)`` of the records in
    ``B_radius(center)`` (clipped there, as for the mean): the certified mean, ``V`` at it, plus
    Laplace noise of scale ``Δ_V/ε`` on the real line (``Δ_V = frechet_variance_sensitivity``,
    ``4r²/n`` plus slack; proof in docs/statistics.md), then clamped to ``[0, r²]``
    (``V ≤ F(center) ≤ r²``; post-processing). Same stages, checks, accountant, warnings and
    certificate as ``private_frechet_mean``.

    Parameters
    ----------
    X : array_like, shape ``(n, *manifold.point_shape)``
        The records (numpy, a user layout, or Dask).
    manifold : Manifold
    center : array_like
        The public centre.
    RADIUS_UNITS
    epsilon : float
        ε > 0 (the total, with ``radius="auto"``).
    round_to : "auto", float or None
        The public output grid, as for the mean.
    accountant : PrivacyAccountant, optional
        Charged before the data are read.
    rng : numpy.random.Generator, int or None
        ``None``: OS entropy.
    strict : bool
        Refuse invalid records (``InvalidRecordsError``, before the charge).

    Returns
    -------
    PrivateRelease
        ``value`` is a float in ``[0, radius²]``, in squared units of the radius.

    Raises
    ------
    ValueError, TypeError, BudgetExceededError, InvalidRecordsError
        As for ``private_frechet_mean``.

    Warns
    -----
    ReleaseWarning
        When the Laplace scale exceeds ``radius²`` (the release is mostly noise), or
        ``round_to=None``.
    RecordsWarning
        Counts of replaced and clipped records, for the data holder only.

    Examples
    --------
    >>> from manifold_dp import Sphere, private_frechet_variance
    >>> S = Sphere(2)
    >>> X = S.random_point(S.origin, 0.3, size=500, rng=0)
    >>> rel = private_frechet_variance(X, S, center=S.origin, radius=0.4, epsilon=1.0, rng=1)
    >>> 0.0 <= rel.value <= 0.4**2, rel.certificate.statistic
    (True, 'frechet_variance')
    """
    return release_statistic(FRECHET_VARIANCE, X, manifold, center=center, radius=radius, epsilon=epsilon,
                             round_to=round_to, accountant=accountant, rng=rng, strict=strict)


if private_frechet_variance.__doc__:  # None under python -OO
    private_frechet_variance.__doc__ = private_frechet_variance.__doc__.replace("RADIUS_UNITS", RADIUS_UNITS)
