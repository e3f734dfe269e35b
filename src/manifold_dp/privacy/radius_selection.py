"""A private radius: an ε-DP quantile of the records' distances from the public centre.

``radius="auto"`` (or an ``AutoRadius``) in ``private_frechet_mean`` and
``private_frechet_variance`` spends ``ε₁ = budget·ε`` here and the rest, ``ε₂ = ε − ε₁``, on
the release at the radius chosen (``privacy.release``). This module is the functional core of
the selection; the pipeline (candidate filtering, charging, the release) lives in ``release.py``.

**Mechanism.** The exponential mechanism (McSherry & Talwar 2007, Thm 6) over a public grid
of candidate radii ``g_1 < … < g_G``, with the quantile utility of Smith 2011 ("Privacy-preserving
statistical estimation with optimal convergence rates", STOC) restricted to that grid::

    u(g; D) = −| #{i : ρ(c, x_i) ≤ g} − q·n |

(``c`` the public centre, ``q`` the target quantile; records that are non-finite or not on the
manifold count at distance 0, as they are replaced by the centre before the release). Replacing
one record changes each count by at most 1, so the utility's sensitivity is 1 and drawing ``g``
with probability ``∝ exp(ε₁·u(g; D)/2)·b(g)`` is ε₁-DP for any public base measure ``b``
(``base_log_weights``: it favours the larger, safe radii, so that where the utility cannot tell
the candidates apart — few records — the draw keeps the records rather than clipping them all
onto the centre). The release at ``g`` is ε₂-DP (or
``(ε₂, δ)``-DP) for every fixed ``g``, so the pair (radius, release) is ``(ε₁ + ε₂, δ)``-DP by
basic composition (Dwork & Roth 2014, §3.5; sequential: the second mechanism is chosen by the
first one's output). McSherry & Talwar's mechanism ``∝ exp(ε·q)`` is ``2εΔq``-DP (their Thm 6);
with ``Δu = 1`` the weights ``exp(ε₁·u/2)`` give ε₁.

**Draw.** Gumbel-max: ``argmax_g (ε₁·u(g)/2 + G_g)`` with ``G_g`` iid standard Gumbel has
exactly the law ``∝ exp(ε₁·u(g)/2)``. It is one vectorised pass over the whole grid, so its
running time does not depend on the data; so is the count (a branch-free comparison of every
distance with every candidate, in blocks of a public size).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike

from .._typing import FloatArray
from .._validation import _is_real

if TYPE_CHECKING:
    from ..manifolds.base import Manifold

__all__ = ["AutoRadius", "auto_radius", "default_grid", "thinned_grid", "safe_radius", "quantile_counts", "quantile_utility",
           "base_log_weights", "selection_log_weights", "selection_probabilities", "gumbel_select", "GRID_POINTS",
           "search_steps", "noisy_binary_search"]

GRID_POINTS = 48
GRID_SPAN = 2.0**-12  # the default grid runs from top·2⁻¹² ...
GRID_TOP = 1.0 - 2.0**-10  # ... to just below its cap
UNBOUNDED_GRID = (1e-3, 1e3)  # where neither r* nor the float64 reach caps the radius
LARGER_RADIUS_POWER = 1.0  # the base measure ∝ (g/s)^β below the safe radius s (base_log_weights)
MAX_NOISE_INFLATION = 2.5  # the safe radius: noise per unit radius at most this times the smallest (safe_radius)
UNBOUNDED_SAFE_RADIUS = 1.0  # the safe radius of the unbounded default grid: its geometric middle
THINNED_GRID_POINTS = 12  # candidates where each costs a numerical calibration (thinned_grid)
COUNT_BLOCK = 1 << 14  # records compared with the grid at a time: bounds temporary memory


@dataclass(frozen=True)
class AutoRadius:
    """How ``radius="auto"`` chooses the radius (``radius="auto"`` is ``AutoRadius()``).

    Parameters
    ----------
    quantile : float, default 0.9
        The target quantile ``q ∈ (0, 1)`` of the distances from the centre to the records.
    budget : float, default 0.2
        The fraction of ε spent on the selection, in ``(0, 1)``; the release gets the rest.
    grid : sequence of float or None, default None
        Public candidate radii (in the manifold's geodesic distance). ``None``: ``default_grid``
        (48 geometric points up to ``r*``, or ``1e-3 … 1e3`` where ``r*`` is infinite).
    """

    quantile: float = 0.9
    budget: float = 0.2
    grid: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if not _is_real(self.quantile) or not 0.0 < self.quantile < 1.0:
            raise ValueError(f"AutoRadius.quantile must be a number in (0, 1), got {self.quantile!r}")
        if not _is_real(self.budget) or not 0.0 < self.budget < 1.0:
            raise ValueError(f"AutoRadius.budget must be a number in (0, 1), got {self.budget!r}")
        object.__setattr__(self, "quantile", float(self.quantile))
        object.__setattr__(self, "budget", float(self.budget))
        if self.grid is not None:
            try:
                g = np.asarray(self.grid, dtype=float).ravel()
            except (TypeError, ValueError):
                raise TypeError("AutoRadius.grid must be a sequence of radii (numbers > 0) or None") from None
            if g.size == 0 or not np.all(np.isfinite(g)) or np.any(g <= 0):
                raise ValueError(f"AutoRadius.grid must hold finite radii > 0, got {g.size} values that do not")
            object.__setattr__(self, "grid", tuple(float(v) for v in np.unique(g)))


def auto_radius(radius: object) -> AutoRadius | None:
    """The ``AutoRadius`` that ``radius`` asks for, or ``None`` for a number."""
    if isinstance(radius, AutoRadius):
        return radius
    if isinstance(radius, str):
        if radius != "auto":
            raise ValueError(f"radius must be a number > 0, 'auto' or an AutoRadius, got {radius!r}")
        return AutoRadius()
    return None


def default_grid(manifold: Manifold, center: Any) -> FloatArray:
    """The default public candidates: ``GRID_POINTS`` = 48 geometric points from ``top·2⁻¹²`` to
    ``top·(1 − 2⁻¹⁰)``, where ``top = min(r*, max_reach − ρ(origin, center))`` (``r*`` of
    Assumption 1; ``max_reach``: the float64 reach of hyperbolic coordinates), or from ``1e-3`` to
    ``1e3`` where ``top`` is infinite (SPD, Euclidean). Public: the manifold and the centre only.
    Returns an empty array when the centre already sits beyond the reach."""
    top = float(manifold.assumption_radius)
    offset = manifold.exp_coordinate_offset(center)
    if np.isfinite(manifold.max_reach):
        top = min(top, float(manifold.max_reach) - (offset or 0.0))
    if not top > 0:
        return np.empty(0)
    if math.isinf(top):
        return np.geomspace(*UNBOUNDED_GRID, GRID_POINTS)
    return np.geomspace(top * GRID_SPAN, top * GRID_TOP, GRID_POINTS)


def thinned_grid(grid: ArrayLike, points: int | None = None) -> FloatArray:
    """Every ``⌈G/points⌉``-th candidate of ``grid``, counted down from its largest (kept): at most
    ``points`` (default ``THINNED_GRID_POINTS`` = 12) candidates over the same range. For releases
    whose calibration at each candidate is expensive (the Riemannian Gaussian's quadratures); a
    public rule."""
    g = np.asarray(grid, dtype=float)
    step = max(1, math.ceil(g.size / (THINNED_GRID_POINTS if points is None else points)))
    return g[::-1][::step][::-1]


def safe_radius(manifold: Manifold, candidates: ArrayLike, given: bool, inflation: ArrayLike | None = None) -> float:
    """The radius the base measure favours (public: the manifold, the candidates that passed the
    public checks and their noise): the largest candidate — it clips fewest records — whose noise
    per unit of the statistic's scale is at most ``MAX_NOISE_INFLATION`` = 2.5 times the smallest
    candidate's (``inflation``, e.g. ``σ(g)/g`` for the mean, normalised; near ``r*`` on the sphere
    ``L/h`` and with it the noise blows up); on the unbounded default grid (``1e-3 … 1e3``: SPD,
    Euclidean), where the largest is 10⁶ times the smallest, at most ``UNBOUNDED_SAFE_RADIUS`` = 1
    (the grid's geometric middle)."""
    g = np.asarray(candidates, dtype=float)
    ok = np.ones(g.shape, bool) if inflation is None else np.asarray(inflation, dtype=float) <= MAX_NOISE_INFLATION
    top = float(np.max(g[ok])) if ok.any() else float(np.min(g))
    if not given and math.isinf(float(manifold.assumption_radius)) and not np.isfinite(manifold.max_reach):
        return max(min(UNBOUNDED_SAFE_RADIUS, top), float(np.min(g)))
    return top


def base_log_weights(candidates: ArrayLike, safe: float, grid: ArrayLike | None = None,
                     inflation: ArrayLike | None = None) -> FloatArray:
    """The public base measure of the selection over ``candidates`` (kept from ``grid``, default
    the candidates themselves; its step ``h = ln(max/min)/(G − 1)``): ``b(g) ∝ (g/s)^β`` up to
    ``s`` = ``safe_radius``, ``β`` = ``LARGER_RADIUS_POWER``, and above it halving per grid step
    and divided by the growth of the noise inflation (``safe_radius``) from ``s``:
    ``log b(g) = −ln 2·ln(g/s)/h − ln(I(g)/I(s))₊``. (Near ``r*`` on the sphere the mean's noise
    grows a hundredfold within a grid step or two: halving alone would not keep the draw off it.)

    Why larger radii: a radius below every record clips them all onto the centre (the release is
    the centre, whatever the data); one above every record costs only noise, ``∝ r``. Where the
    utility is flat — few records, ``ε₁·n`` small, or every candidate below the records — the base
    measure decides, and it must not decide for the bottom of a grid spanning ``2¹²``. Above ``s``
    the noise grows faster than the radius (curvature) or the grid runs far past any plausible
    scale (``1e3``): every candidate beyond the records has the same utility, and halving keeps
    the draw near the first of them. A function of the grid and ``s`` only (never of the
    records), so it does not enter the privacy loss: it cancels in the ratio of the two datasets'
    probabilities up to the normalising constants, each within ``e^(ε₁/2)`` (McSherry & Talwar
    2007, Thm 6, with a base measure)."""
    g = np.asarray(candidates, dtype=float)
    full = g if grid is None else np.asarray(grid, dtype=float)
    span = math.log(float(np.max(full) / np.min(full))) if full.size > 1 else 0.0
    if not span > 0.0:
        return np.zeros(g.shape)
    up = np.log(g / safe)
    above = -math.log(2.0) * up * (full.size - 1) / span
    if inflation is not None:
        grows = np.log(np.asarray(inflation, dtype=float) / np.asarray(inflation, dtype=float)[np.argmin(np.abs(up))])
        above = above - np.maximum(grows, 0.0)
    return np.where(up <= 0.0, LARGER_RADIUS_POWER * up, above)


def quantile_counts(distances: ArrayLike, grid: ArrayLike) -> Any:
    """``#{i : d_i ≤ g}`` for every ``g`` of ``grid``: every distance is compared with every
    candidate (no sort, no early exit), in blocks of a public size."""
    d = np.asarray(distances, dtype=float).ravel()
    g = np.asarray(grid, dtype=float)
    counts = np.zeros(g.size, dtype=np.int64)
    for i in range(0, d.size, COUNT_BLOCK):
        counts += np.count_nonzero(d[i:i + COUNT_BLOCK, None] <= g[None, :], axis=0)
    return counts


def quantile_utility(distances: ArrayLike, grid: ArrayLike, quantile: float) -> Any:
    """``u(g) = −|#{i : d_i ≤ g} − q·n|`` (sensitivity 1 under replace-one)."""
    n = np.asarray(distances).size
    return -np.abs(quantile_counts(distances, grid) - quantile * n)


def selection_log_weights(utility: ArrayLike, epsilon: float, log_base: ArrayLike) -> FloatArray:
    """Log-weights ``ε·u/2 + log b`` of the exponential mechanism for a utility of sensitivity 1
    with the public base measure ``log_base`` (``base_log_weights``; McSherry & Talwar 2007, Thm 6):
    ε-DP whatever ``b``, as long as it does not depend on the data."""
    u = np.asarray(utility, dtype=float)
    return cast(FloatArray, 0.5 * epsilon * u + np.asarray(log_base, dtype=float))


def selection_probabilities(log_weights: ArrayLike) -> FloatArray:
    """The exponential mechanism's law over the grid (normalised ``exp(log_weights)``)."""
    w = np.asarray(log_weights, dtype=float)
    p = np.exp(w - np.max(w))
    return cast(FloatArray, p / p.sum())


def gumbel_select(log_weights: ArrayLike, size: int | tuple[int, ...] | None = None, *, rng: np.random.Generator) -> Any:
    """Indices drawn with probability ``∝ exp(log_weights)`` by Gumbel-max over the whole grid
    (one vectorised argmax: the work is the same for every dataset)."""
    w = np.asarray(log_weights, dtype=float)
    shape = cast("tuple[int, ...]",
                 () if size is None else ((size,) if np.isscalar(size) else tuple(cast("tuple[int, ...]", size))))
    return np.argmax(w + rng.gumbel(size=shape + w.shape), axis=-1)


def search_steps(grid_size: int) -> int:
    """``⌈log₂ G⌉``: the count queries ``noisy_binary_search`` makes over ``G`` candidates (public)."""
    return max(1, math.ceil(math.log2(max(int(grid_size), 1))))


def noisy_binary_search(distances: ArrayLike, grid: ArrayLike, target: float, sigma: float, *,
                        rng: np.random.Generator, steps: int | None = None) -> int:
    """The quantile's index on ``grid`` by a binary search on noisy counts: ``search_steps(G)``
    steps, each compares ``#{i : d_i ≤ g_mid} + N(0, σ²)`` with ``target`` (``q·n``) and keeps the
    half where the first candidate whose count reaches it lies. Replacing one record changes each
    count by at most 1, so each step is the Gaussian mechanism with multiplier ``σ`` (``1/σ``-GDP),
    and the ``K`` steps, adaptively chosen, compose to ``√K/σ``-GDP (Dong, Roth & Su 2022, Cor.
    3.3); the index is post-processing of the noisy counts. Always ``K`` steps and one count over
    every record each (once the interval is a single candidate the steps keep it), so the work does
    not depend on the data. ``steps``: the ``K`` that ``σ`` was calibrated for (default
    ``search_steps(G)``); ``ValueError`` if it cannot reach every candidate (``2^K < G``)."""
    d = np.asarray(distances, dtype=float).ravel()
    g = np.asarray(grid, dtype=float)
    k = search_steps(g.size) if steps is None else int(steps)
    if 2**k < g.size:
        raise ValueError(f"a noisy binary search of steps={k} cannot reach {g.size} candidates")
    lo, hi = 0, g.size - 1
    for _ in range(k):
        mid = (lo + hi) // 2
        noisy = float(np.count_nonzero(d <= g[mid])) + sigma * float(rng.standard_normal())
        if noisy >= target:
            hi = mid
        else:
            lo = min(mid + 1, hi)
    return lo
