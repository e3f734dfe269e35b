"""Single draws of the unrestricted Laplace law's radius, one proposal at a time.

A single draw through the vectorised rounds of ``privacy.samplers`` pays numpy's per-call overhead
on 16-element arrays a dozen times over. Here the same laws are drawn with Python floats, one
proposal at a time, from envelopes built once per ``(manifold, σ)`` (public parameters only):

- ``ScalarPieces``: any ``_PiecewiseExponential`` envelope read with floats (the affine-invariant
  SPD sampler's radius stage uses it too, ``privacy.spd_sampler``);
- ``laplace_radius_single_sampler``: the radial law ``∝ e^(−ρ/σ) J(ρ)`` of ``sample_laplace_radius``
  from a finer envelope: on each cell the tangent of the concave ``log f`` at the midpoint (above
  ``log f``) and its chord (below). A proposal under the chord is accepted without evaluating
  ``log f`` (a squeeze), so almost every draw is one proposal and a few ``math`` calls.

Both are exact rejection samplers of the same targets as the batched ones: the law of a draw is
the same, the stream of random numbers it reads is not.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from .._typing import FloatArray
from .samplers import (
    MAX_ROUNDS,
    LogDensity,
    ScalarOrArray,
    _crossing,
    _log_piece_mass,
    _mode_bracket,
    _PiecewiseExponential,
    laplace_radius_log_density,
)

if TYPE_CHECKING:
    from ..manifolds.base import Manifold

__all__ = ["ScalarPieces", "laplace_radius_single_sampler"]

SINGLE_CELLS, SINGLE_MAX_CELLS = 64, 4096  # initial cells of the single-draw envelope, and the cap on halving
SINGLE_GAP = 0.01  # cells whose tangent rises more than this above the chord are halved (squeeze misses < 1 %)
SINGLE_TAIL = 40.0  # cells holding less than e^-40 of the largest cell's envelope mass are never halved


class ScalarPieces:
    """A ``_PiecewiseExponential`` read with Python floats: ``draw(u, v) -> (j, ρ)`` picks piece
    ``j`` by ``u`` and ``ρ`` in it by the inverse CDF at ``v`` (the same formulas as
    ``_PiecewiseExponential.sample``); ``log_envelope(j, ρ)`` is its log height there."""

    __slots__ = ("alpha", "beta", "cdf", "kind", "last", "left", "right", "stretch")

    cdf: list[float]
    left: list[float]
    right: list[float]
    alpha: list[float]
    beta: list[float]
    stretch: list[float]
    kind: list[int]
    last: int

    def __init__(self, env: _PiecewiseExponential) -> None:
        with np.errstate(over="ignore", invalid="ignore"):
            bw = env.beta * (env.right - env.left)
            kind = np.where(np.abs(bw) < 1e-12, 0, np.where(env.beta < 0, 1, 2))
            stretch = np.where(kind == 1, np.expm1(bw), np.where(kind == 2, np.expm1(-bw), env.right - env.left))
        self.cdf, self.kind, self.stretch = env._cdf.tolist(), kind.tolist(), stretch.tolist()
        self.left, self.right, self.alpha, self.beta = (a.tolist() for a in (env.left, env.right, env.alpha, env.beta))
        self.last = len(self.cdf) - 1

    def draw(self, u: float, v: float) -> tuple[int, float]:
        j = min(bisect_right(self.cdf, u), self.last)
        a, b, kind = self.left[j], self.right[j], self.kind[j]
        if kind == 0:
            r = a + v * self.stretch[j]
        elif kind == 1:  # falling: from the left end; an infinite last piece has stretch −1
            r = a + math.log1p(v * self.stretch[j]) / self.beta[j]
        else:
            r = b + math.log1p((1.0 - v) * self.stretch[j]) / self.beta[j]
        return j, min(max(r, a), b)

    def log_envelope(self, j: int, r: float) -> float:
        return self.alpha[j] + self.beta[j] * (r - self.left[j])


class _SingleRadius:
    """The single-draw envelope of a log-concave radius law ``∝ exp(log_f)`` on ``[0, upper]``:
    cells on ``[0, end]`` (``end``: where ``log_f`` has fallen ``SINGLE_TAIL`` below its maximum,
    or ``upper``), each with its midpoint tangent (an upper bound, by concavity) and its chord (a
    lower bound), and beyond ``end`` one tail piece under the tangent at ``end`` (no squeeze).
    Cells whose tangent and chord differ by more than ``SINGLE_GAP`` and whose mass is not
    negligible are halved. Everything is relative to ``top ≥ max log_f``; a function of public
    parameters only."""

    def __init__(self, log_f: LogDensity, dlog_f: LogDensity, upper: float, what: str) -> None:
        f: ScalarOrArray = lambda t: np.asarray(log_f(np.asarray(t, float)), float)
        df: ScalarOrArray = lambda t: np.asarray(dlog_f(np.asarray(t, float)), float)
        self.log_f, self.what = log_f, what
        with np.errstate(all="ignore"):
            _p, q, top = _mode_bracket(f, df, 0.0, upper, None)
            if np.isfinite(upper) and f(upper) >= top - SINGLE_TAIL:
                end = upper
            else:
                bracket = _crossing(lambda t: f(t) < top - SINGLE_TAIL, q, upper)
                if bracket is None:
                    raise ValueError("the density does not decay: it is not integrable")
                end = float(bracket[1])
            t = np.linspace(0.0, end, SINGLE_CELLS + 1)
            for _ in range(60):
                cells = self._cells(f, df, t, top)
                a, b, _, _, low, slope = cells
                gap = np.nan_to_num(-np.minimum(low, low + slope * (b - a)), nan=np.inf)  # tangent − chord, worse end
                log_mass = _log_piece_mass(*cells[:4])
                split = (gap > SINGLE_GAP) & (log_mass > np.max(log_mass) - SINGLE_TAIL)
                if not split.any() or t.size + split.sum() > SINGLE_MAX_CELLS:
                    break
                t = np.sort(np.concatenate([t, 0.5 * (t[:-1] + t[1:])[split]]))
            else:
                cells = self._cells(f, df, t, top)
            left, right, alpha, beta, low, slope = cells
            self._check_concave(f, df, t, top, alpha, beta, low, slope)
            if end < upper:  # the tail under the tangent at ``end``
                s = float(df(end))
                if not (s < 0 or np.isfinite(upper)):
                    raise ValueError("the density does not decay: it is not integrable")
                left, right = np.append(left, end), np.append(right, upper)
                alpha, beta = np.append(alpha, float(f(end)) - top), np.append(beta, s)
                low, slope = np.append(low, -np.inf), np.append(slope, 0.0)
        self.top, self.pieces = float(top), ScalarPieces(_PiecewiseExponential(left, right, alpha, beta))
        # a margin below the chord keeps the squeeze under log_f whatever the rounding
        self.low = (low - 1e-9 * (1.0 + np.abs(alpha))).tolist()
        self.slope = slope.tolist()

    @staticmethod
    def _cells(f: ScalarOrArray, df: ScalarOrArray, t: FloatArray, top: float) -> tuple[FloatArray, ...]:
        """Per cell ``[a, b]``: ``(a, b, α, β, low, slope)`` — the midpoint tangent as ``α + β(ρ − a)``
        (relative to ``top``) and the chord minus the tangent as ``low + slope·(ρ − a)`` (≤ 0;
        ``low = −∞`` where ``log_f(a) = −∞``)."""
        a, b = t[:-1], t[1:]
        c = 0.5 * (a + b)
        fa, fb, fc, beta = f(a), f(b), f(c), df(c)
        alpha = fc + beta * (a - c) - top
        low = fa - top - alpha
        slope = np.where(np.isfinite(low), (fb - fa) / (b - a) - beta, 0.0)
        return a, b, alpha, beta, np.where(np.isfinite(low), low, -np.inf), slope

    def _check_concave(self, f: ScalarOrArray, df: ScalarOrArray, t: FloatArray, top: float, alpha: FloatArray,
                       beta: FloatArray, low: FloatArray, slope: FloatArray) -> None:
        """The tangent above and the chord below ``log_f`` at seven points inside every cell: a
        ``log_f`` that is not concave (a broken volume density) is refused here, once. The
        tolerance allows for rounding the point itself (``|log_f'|·ulp``: steep near a zero of ``J``)."""
        a, w = t[:-1, None], np.diff(t)[:, None]
        offset = w * np.arange(1, 8) / 8.0
        x = a + offset
        value = f(x) - top
        upper = alpha[:, None] + beta[:, None] * offset
        lower = upper + low[:, None] + slope[:, None] * offset
        tol = 1e-9 * (1.0 + np.abs(upper)) + 4.0 * np.finfo(float).eps * np.abs(x * df(x))
        if np.any(value > upper + tol) or np.any(value < lower - tol):
            raise RuntimeError(f"{self.what}: envelope violated (the log-density is not concave)")

    def draw(self, rng: np.random.Generator) -> tuple[float, int]:
        """``(ρ, proposals)``: one exact draw and the number of proposals it took."""
        pieces, low, slope = self.pieces, self.low, self.slope
        for proposals in range(1, MAX_ROUNDS + 1):
            u, v, w = rng.random(3).tolist()
            j, r = pieces.draw(u, v)
            offset = r - pieces.left[j]
            if w < math.exp(low[j] + slope[j] * offset):  # under the chord: accepted without log_f
                return r, proposals
            bound = pieces.log_envelope(j, r)
            with np.errstate(all="ignore"):
                gap = float(self.log_f(np.float64(r))) - self.top - bound
            if gap > 1e-9 * (1.0 + abs(self.top) + abs(bound)):
                raise RuntimeError(f"{self.what}: envelope violated (the log-density is not concave)")
            if w < math.exp(gap):
                return r, proposals
        raise RuntimeError(f"{self.what}: rejection sampler made no progress in {MAX_ROUNDS} rounds: its envelope is broken")


class _GammaRadius:
    """The unbounded flat case: ``Gamma(d, σ)`` exactly, one proposal."""

    def __init__(self, d: int, sigma: float) -> None:
        self.d, self.sigma = d, sigma

    def draw(self, rng: np.random.Generator) -> tuple[float, int]:
        return float(rng.gamma(self.d, self.sigma)), 1


@lru_cache(maxsize=256)
def laplace_radius_single_sampler(manifold: Manifold, sigma: float) -> _SingleRadius | _GammaRadius:
    """A sampler of one radius of the unrestricted law of ``sample_laplace_radius`` at a time:
    ``.draw(rng) -> (ρ, proposals)`` (a Python float and how many proposals it took). ``Gamma(d, σ)``
    on unbounded flat spaces, else one proposal at a time from the envelope of ``_SingleRadius`` —
    the same law. Built once per ``(manifold, σ)``, public parameters only."""
    sigma = float(sigma)
    if tuple(manifold.curvature_bounds) == (0.0, 0.0) and np.isinf(manifold.radial_range[1]):
        return _GammaRadius(manifold.dim, sigma)
    if sigma >= manifold.laplace_sigma_limit:
        raise ValueError(f"the Laplace law with sigma={sigma!r} is not integrable on {manifold!r}; restrict it to a ball")
    log_f, dlog_f = laplace_radius_log_density(manifold, sigma)
    what = f"Laplace radius sampler on {manifold!r} (sigma={sigma!r}, single draws)"
    return _SingleRadius(log_f, dlog_f, float(manifold.radial_range[1]), what)
