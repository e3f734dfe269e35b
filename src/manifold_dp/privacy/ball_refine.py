"""A re-centring round of ``center="auto"``: the ℓ2 K-norm mean of clipped logs at the current centre.

Given a centre ``c`` and a radius ``R`` that are outputs of earlier private stages (public to this
one), the statistic is

    T(D) = (1/n) Σ clip_R(log_c x̃_i)      in orthonormal coordinates of T_c M ≅ R^dim,

where ``x̃_i`` is the record as the release prepares it at ``(c, R)`` (non-finite or off-manifold
records replaced by ``c``, the rest clipped into ``B_R(c)``: ``release.prepare_records``) and
``clip_R`` is the projection onto the Euclidean ball of radius ``R`` (a guard on the float64
rounding of the logs). Every row has norm ``≤ R``, so under replace-one neighbours
``‖T(D) − T(D')‖ ≤ 2R/n``, with no assumption on curvature, ``r*`` or the records, and the computed
mean adds at most twice its rounding (``sensitivity.mean_rounding``; the rows are clipped after they
are computed, so their own rounding does not count). ``T`` is released
with the ℓ2 K-norm mechanism (density ``∝ exp(−‖z − T‖/σ)``, ``σ = 2R/(nε)``; ε-DP, Hardt & Talwar
2010, as the first stage) or, where the private ball's Gaussian stages share one μ-GDP budget, the
Gaussian mechanism ``N(T, σ²I)`` with ``σ = zΔ`` for a public multiplier ``z`` (``1/z``-GDP at every
radius, Dong, Roth & Su 2022, Thm 2.7), snapped to the public grid ``2^⌈log₂(2^−20 σ)⌉``, and mapped
to the point ``exp_c(z)`` (post-processing). Unlike a Fréchet-mean release at ``(c, R)`` its sensitivity has no
curvature factor (the Laplace's ``L/h`` grows without bound as ``R → r*``), and it needs no certified
optimisation. Proof and measurements: docs/private_ball.md.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from .._typing import Array, FloatArray
from ..manifolds.base import Manifold
from ..records import pairwise_sum, sum_rows
from .ball_first_stage import FIRST_STAGE_BLOCK, _clip_rows, l2_laplace_noise, snapped
from .measurements import pure_scale
from .sensitivity import ambient_sum_rows, mean_rounding

__all__ = ["ROUND_GRAIN", "round_sensitivity", "round_scale", "clipped_log_mean", "noisy_statistic", "tangent_round"]

ROUND_GRAIN = 2.0**-40  # rows are clipped to R·(1 − 2^-40) so that the computed norms stay ≤ R


def round_sensitivity(n: int, radius: float) -> float:
    """``2R/n`` plus twice the rounding of the computed mean (``sensitivity.mean_rounding``):
    replace-one sensitivity of the computed mean of ``n`` rows of norm ``≤ R``."""
    return 2.0 * float(radius) / int(n) + 2.0 * mean_rounding(int(n), 0, float(radius))


def clipped_log_mean(manifold: Manifold, X: object, center: Array, radius: float, n: int) -> FloatArray:
    """``T(D)``: the mean of ``log_c x̃_i`` in orthonormal tangent coordinates, each row projected
    onto the ball of radius ``R`` (blocks of ``FIRST_STAGE_BLOCK`` records; the same operations for
    every record)."""
    from .release import prepare_records

    records, _ = prepare_records(manifold, cast(np.ndarray, X), center, radius, keep=True, log_mean=False)
    points = np.asarray(records)
    parts, rows_per_sum = [], ambient_sum_rows(n)
    bound = float(radius) * (1.0 - ROUND_GRAIN)
    for start in range(0, len(points), FIRST_STAGE_BLOCK):
        with np.errstate(all="ignore"):
            block = points[start:start + FIRST_STAGE_BLOCK]
            rows = np.asarray(manifold.to_tangent_coordinates(center, manifold.log(center, block)), float)
            rows = _clip_rows(np.where(np.all(np.isfinite(rows), axis=-1, keepdims=True), rows, 0.0), bound)  # 0 keeps it
            parts.append(sum_rows(rows, rows_per_sum))
    return (pairwise_sum(parts) if parts else np.zeros(manifold.dim)) / n


def round_scale(n: int, radius: float, epsilon: float) -> float:
    """``σ = Δ/ε = 2R/(nε)``: the K-norm scale of a round (ε-DP at sensitivity ``Δ``)."""
    return pure_scale(round_sensitivity(n, radius), epsilon, footpoint_free=True)  # the K-norm law's constant is free of T


def noisy_statistic(statistic: FloatArray, sigma: float, rng: np.random.Generator) -> FloatArray:
    """``T + noise`` (the ℓ2 K-norm law of scale ``σ``), snapped to the grid ``2^⌈log₂(2^−20 σ)⌉``:
    the round's mechanism output."""
    return snapped(statistic, l2_laplace_noise(statistic.size, sigma, rng), sigma)


def tangent_round(manifold: Manifold, X: object, center: Array, radius: float, n: int, epsilon: float,
                  rng: np.random.Generator, reach: float, multiplier: float | None = None) -> tuple[Array, float]:
    """One round: ``(exp_c(z'), σ)`` with ``z`` the K-norm release of ``clipped_log_mean`` at
    ``epsilon`` — or, given a Gaussian ``multiplier`` ``z``, its Gaussian release with
    ``σ = z·round_sensitivity`` (``epsilon`` is then unused) — and ``z'`` it scaled to norm
    ``≤ reach`` (public: the safe region's diameter, so that ``exp`` stays finite; post-processing)."""
    statistic = clipped_log_mean(manifold, X, center, radius, n)
    if multiplier is None:
        sigma = round_scale(n, radius, epsilon)
        z = noisy_statistic(statistic, sigma, rng)
    else:
        sigma = float(multiplier) * round_sensitivity(n, radius)
        z = snapped(statistic, rng.normal(0.0, sigma, statistic.size), sigma)
    norm = float(np.sqrt(np.dot(z, z)))
    if norm > reach:
        z = z * (reach / norm)
    with np.errstate(all="ignore"):
        return manifold.exp(center, manifold.from_tangent_coordinates(center, z)), sigma
