"""The release pipeline: every private statistic goes through the same stages.

Stages, in this order (docs/security.md, public-only control flow):

1. ``check_public`` (``privacy.public``) — the public parameters and the records' container,
   normalised into a ``PublicParams`` (errors quote parameters only);
2. ``Statistic.stages`` — a sensitivity bound for the statistic, then a measurement from
   ``privacy.measurements`` through the mechanism's spec (``privacy.mechanism_specs``): scale,
   event, every refusal (float overflow, an unsamplable restricted law, a hyperbolic ball beyond
   float precision) — public values only;
3. ``charge`` the accountant: from here on a failure still counts as spent;
4. ``prepare_records`` (bad ones → centre, clip into the ball; numpy and Dask alike), then the
   certified statistic by a number of steps fixed in advance (``Statistic.compute``);
5. ``finish`` — the public representative (``manifold.canonical``) and the public output grid
   (float-safe by default) — and the ``Certificate``.

``plan_statistic`` runs stages 1–4 for any ``Statistic`` and ``release_statistic`` adds the draw;
a private statistic is one module declaring a ``Statistic`` and a public function on top
(``privacy.frechet_mean``, ``privacy.frechet_variance``, ``privacy.median``; ``STATISTICS`` lists
them). Whether a
release succeeds, which error it raises, what it warns (``ReleaseWarning``) and (up to the
samplers' noise, docs/security.md) how long it runs depend on public parameters only. The
non-private statistic never leaves a ``Plan``.

Two things are deliberately *not* public, and are for the trusted data holder only:
``RecordsWarning`` (how many records were replaced or clipped, counts only) and, with
``strict=True``, ``InvalidRecordsError`` (raised before the charge, nothing released).

``radius="auto"`` (``AutoRadius``; ``privacy.auto_radius``) adds a private stage: a radius drawn
by the exponential mechanism from a public grid (``privacy.radius_selection``), every candidate of
which has passed stage 2 beforehand, then stages 4–5 at that radius; both parts are charged before
the data are read.
"""
from __future__ import annotations

import json
import math
import os
import sys
import warnings
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._threads import blas_limited
from .._typing import Array, BoolArray, FloatArray
from .._validation import check_positive
from ..manifolds.base import Manifold, finite_rows, select
from ..records import CHUNK, PreparedBlocks, is_dask, pairwise_sum, sum_rows
from ..stats.frechet import (
    MAX_CERTIFIED_ITERATIONS,
    PreparedRecords,
    certified_schedule,
)
from . import measurements
from . import private_ball as _private_ball
from .accounting import PrivacyAccountant
from .certificate import Certificate, MechanismSelection
from .float64_reach import check_ball, check_reach
from .mechanism_specs import GAUSSIAN_MECHANISMS, MECHANISM_NAMES
from .mechanism_specs import MECHANISMS as MECHANISM_SPECS
from .public import PublicParams, check_public, ignoring_float_errors, record_count, validate_center
from .radius_selection import AutoRadius
from .sensitivity import ambient_sum_rows

if TYPE_CHECKING:
    from types import FrameType


__all__ = ["ReleaseWarning", "RecordsWarning", "InvalidRecordsError", "PrivateRelease", "validate_center",
           "record_count", "check_public", "PublicParams", "Calibration", "mean_accuracy", "calibrate", "check_reach",
           "check_ball", "MECHANISMS", "GAUSSIAN_MECHANISMS", "STATISTICS", "Statistic", "build_plan", "plan_statistic",
           "release_statistic", "expected_noise_distance", "warn_if_mostly_noise", "charge", "RecordCounts",
           "prepare_records", "prepared", "record_distances", "check_strict", "warn_records", "ambient_mean",
           "output_grid", "finish", "check_round_to", "Plan", "AutoRadius", "AutoPlan", "plan_release",
           "private_frechet_mean", "frechet_variance_sensitivity", "private_frechet_variance"]

MECHANISMS = MECHANISM_NAMES  # the registry's names (privacy.mechanism_specs), in its order
OPTIMISATION_SLACK = 1e-6  # the mean is certified within max(OPTIMISATION_SLACK·Δ, FLOAT_FLOOR·r) of the exact one
FLOAT_FLOOR = 1e-10
GRID_BELOW_SCALE = 2.0**-20  # default output grid: ~1e-6 of the noise scale ...
GRID_ABOVE_ULP = 2.0**-40  # ... and at least 2^12 float spacings of the coordinates


class ReleaseWarning(UserWarning):
    """A warning about a release; its text is a function of public parameters only (and, with
    ``radius="auto"``, of the private radius, which is released anyway). Safe to show anyone."""


class RecordsWarning(UserWarning):
    """Diagnostics about the records themselves: how many were replaced by the centre
    (non-finite, or not on the manifold) and how many were clipped into the ball — counts only,
    never values. **Data-dependent**: meant for the trusted data holder's own terminal, never
    part of a certificate or of the released JSON. A service that forwards warnings to untrusted
    parties must filter it: ``warnings.simplefilter("ignore", RecordsWarning)``."""


class InvalidRecordsError(ValueError):
    """``strict=True`` and some records are non-finite or not on the manifold (the message gives
    counts only). Raised before the accountant is charged; nothing is released. Whether it is
    raised depends on the data: it is for the data holder's own checks (docs/security.md)."""


def _warn(message: str, category: type[Warning], emit: bool = True) -> None:
    """``warnings.warn`` pointing at the first caller outside manifold_dp; ``emit=False`` does all
    the work but the final call (``warn_records``: the same work whether or not there is a warning)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame: FrameType | None
    frame, level = sys._getframe(0), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    if emit:
        warnings.warn(message, category, stacklevel=level)


@dataclass(frozen=True)
class PrivateRelease:
    """A private statistic and its certificate, as ``private_frechet_mean`` and
    ``private_frechet_variance`` return them.

    Parameters
    ----------
    value : array_like or float
        The released statistic: a point of the manifold (a mean) or a float (a variance). With
        the certificate's ``radius`` when ``radius="auto"`` chose it, the only data-dependent
        output; everything else is public.
    certificate : Certificate
        What the release guarantees (``privacy.certificate``; ``to_json`` for the JSON form).

    Attributes
    ----------
    point : numpy.ndarray
        The released point (``value``, for a mean).
    epsilon, delta, mechanism, sensitivity, scale, radius
        The certificate's fields; with ``radius="auto"`` ``epsilon`` and ``delta`` are the
        totals and ``radius`` the chosen one.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp import Sphere, private_frechet_mean
    >>> S = Sphere(2)
    >>> X = S.random_point(S.origin, 0.3, size=100, rng=0)
    >>> rel = private_frechet_mean(X, S, center=S.origin, radius=0.4, epsilon=1.0, rng=1)
    >>> rel.point.shape, rel.epsilon, rel.certificate.schema
    ((3,), 1.0, 'manifold_dp.certificate/3')
    >>> import json; sorted(json.loads(rel.to_json()))
    ['certificate', 'value']
    """

    value: Any
    certificate: Certificate = field(repr=False)

    point = property(lambda self: self.value, doc="The released point (a private mean).")
    epsilon = property(lambda self: self.certificate.epsilon)
    delta = property(lambda self: self.certificate.delta)
    mechanism = property(lambda self: self.certificate.mechanism)
    sensitivity = property(lambda self: self.certificate.sensitivity)
    scale = property(lambda self: self.certificate.scale)
    radius = property(lambda self: self.certificate.radius, doc="The public (or privately chosen) ball radius.")

    def to_dict(self, value: Any = None) -> dict[str, Any]:
        """``{"value": …, "certificate": …}``; ``value`` overrides the layout of the value (the
        CLI passes Kendall landmarks). Complex values become ``{"real", "imag"}``."""
        v = np.asarray(self.value if value is None else value)
        out = {"real": v.real.tolist(), "imag": v.imag.tolist()} if np.iscomplexobj(v) else v.tolist()
        return {"value": out, "certificate": self.certificate.to_dict()}

    def to_json(self, value: Any = None, **kwargs: Any) -> str:
        """``to_dict`` as JSON (the CLI's output; the certificate part follows ``CERTIFICATE_SCHEMA``)."""
        return json.dumps(self.to_dict(value), **kwargs)

    def summary(self) -> str:
        return self.certificate.summary()


# --- stage 2: calibration, from public values only ------------------------------------------

@dataclass(frozen=True)
class Calibration:
    """Everything about a release that is fixed before the data are read."""

    measurement: measurements.Measurement
    accuracy: float  # how close the computed statistic's footpoint is guaranteed to be to the exact one
    sensitivity_bound: str
    optimisation: str

    sigma = property(lambda self: self.measurement.scale)
    sensitivity = property(lambda self: self.measurement.sensitivity)
    restricted = property(lambda self: self.measurement.restricted)


def mean_accuracy(manifold: Manifold, center: Array, radius: float, base_sensitivity: float) -> float:
    """How close the certified mean is guaranteed to be to the exact minimiser (public)."""
    return max(OPTIMISATION_SLACK * base_sensitivity, FLOAT_FLOOR * radius) + manifold.float_error(center, radius)


def _optimisation_note(manifold: Manifold, radius: float, accuracy: float, n: int) -> str:
    if manifold.flat_chart:
        return "closed-form mean; float error included in the sensitivity"
    plan = certified_schedule(manifold, radius, accuracy, n)
    if plan.passes > MAX_CERTIFIED_ITERATIONS:  # refused here, from public values, before the accountant is charged
        raise ValueError(
            f"certifying the Fréchet mean to {accuracy:.3g} at radius={radius!r} on {manifold!r} needs {plan.passes} "
            f"gradient steps (h = {plan.h:.3g}, H = {plan.H:.3g}); use a smaller radius")
    return plan.describe(accuracy)


def expected_noise_distance(manifold: Manifold, measurement: measurements.Measurement) -> float:
    """About how far the noise moves the statistic, from public values only (the
    measurement's mechanism and scale, the manifold's dimension ``d`` or ambient dimension
    ``D``): the rule behind the "mostly noise" warning, each mechanism's ``noise_distance``
    (``privacy.mechanism_specs``).

    - Laplace-type radial laws ``∝ exp(−ρ/σ)·J(ρ)`` (``"laplace"``, restricted or not, and
      ``"kng"``, whose ``‖∇F‖`` grows like ``ρ``, and ``"wrapped_laplace"``): ``d·σ`` (exact in
      ``R^d``, where ``ρ ~ Gamma(d, σ)``);
    - the intrinsic Gaussians (``"tangent_gaussian"``, ``"riemannian_gaussian"``,
      ``"wrapped_gaussian"``): ``σ·√d`` (``E‖N(0, σ²I_d)‖ ≈ σ√d``);
    - ``"ambient_laplace"`` (ℓ2 K-norm in ``R^D``): ``D·σ``; ``"coordinate_laplace"`` (iid
      Laplace ``b``): ``b·√(2D)``; ``"ambient_gaussian"``: ``σ·√D``.
    """
    return MECHANISM_SPECS[measurement.mechanism].noise_distance(manifold, measurement.scale)


def warn_if_mostly_noise(manifold: Manifold, statistic: Statistic, measurement: measurements.Measurement, radius: float,
                         n: int, total_epsilon: float | None = None) -> None:
    """``ReleaseWarning`` (public) when the noise swamps what the ball lets the data say
    (``statistic.noise_against_room``: for a mean, ``expected_noise_distance`` above the radius;
    for the variance, which lies in ``[0, r²]``, a Laplace scale above ``r²``). The scale falls like
    ``1/(n·ε)``, so the message says by how much ``n·ε`` would have to grow (``total_epsilon``: the
    release is one stage of a budget of that ε, and the message says so)."""
    noise, room, what, where, advice = statistic.noise_against_room(manifold, measurement, radius)
    if noise > room:
        _warn(f"{what} exceeds {where}: the release is mostly noise. The scale falls like 1/(n·epsilon) "
              f"(n = {n}, epsilon = {measurement.epsilon:g}"
              + (f", this stage's share of the total {total_epsilon:g}" if total_epsilon is not None else "")
              + f"): n·epsilon must grow at least {noise / room:.3g}-fold for the noise to fall to that size"
              + advice, ReleaseWarning)


# --- stage 3: the accountant ------------------------------------------------------------------

def _warn_if_seeded_and_composed(rng: RngLike, accountant: PrivacyAccountant | None) -> None:
    """A fixed seed (an int or ``SeedSequence``) with an accountant: releases that share a seed draw
    the same noise, so differences of releases on overlapping data are noise-free while the
    accountant composes them as independent (an adversarial review reconstructed records that
    way through cross-validation). Public: the parameters only."""
    if accountant is not None and isinstance(rng, (int, np.integer, np.random.SeedSequence)) \
            and not isinstance(rng, (bool, np.bool_)):
        _warn("rng is a fixed seed and an accountant is composing the releases: releases that share a seed draw "
              "the same noise, which differencing removes, so the accountant's total does not hold for them; "
              "use rng=None (OS entropy) for releases anyone else will see", ReleaseWarning)


def warn_about_delta(X: Any, manifold: Manifold, delta: Any, mechanism: str) -> None:
    """A ``ReleaseWarning`` (public: δ, the mechanism, ``n``) when a given ``delta`` is unused by a
    pure-ε mechanism named by the caller, or when it is at least ``1/n``, where an (ε, δ) guarantee
    would let a mechanism publish a whole record. Values ``check_public`` refuses are left to it."""
    if isinstance(delta, (bool, np.bool_)) or not isinstance(delta, (int, float, np.integer, np.floating)) \
            or not 0.0 < float(delta) < 1.0:
        return
    if mechanism in MECHANISM_NAMES and mechanism not in GAUSSIAN_MECHANISMS:
        _warn(f"delta={float(delta):g} is not used: mechanism={mechanism!r} is pure epsilon-DP (its certificate says "
              "delta = 0); mechanism='auto' or a Gaussian-type mechanism would use it", ReleaseWarning)
        return
    try:
        n = record_count(manifold, X)
    except (ValueError, TypeError):  # check_public says why, in its own order
        return
    if float(delta) >= 1.0 / n:
        _warn(f"delta={float(delta):g} is at least 1/n = {1.0 / n:.3g}: an (epsilon, delta) guarantee with delta that "
              "large allows publishing a record outright; take delta well below 1/n (1e-6 or smaller is usual)",
              ReleaseWarning)


def charge(accountant: PrivacyAccountant | None, measurement: measurements.Measurement) -> None:
    """Charge ``measurement``'s event before the data are read: what fails later still counts.
    An uncertified measurement (a paper calibration, ``measurements.paper_variant``) is refused
    here whether or not there is an accountant: no release may come out of it."""
    if not measurement.certified:
        raise ValueError(f"{measurement.title}: not certified, never released")
    if accountant is not None:
        accountant.charge(measurement.event)


# --- stage 4: the records ---------------------------------------------------------------------

class RecordCounts(NamedTuple):
    """What ``prepare_records`` did to the ``n`` records: how many it replaced by the centre
    because they were non-finite, or finite but not on the manifold, and how many the clip moved
    into the ball. Data-dependent: for the data holder only (``RecordsWarning``)."""

    n: int
    non_finite: int
    off_manifold: int
    clipped: int

    @property
    def replaced(self) -> int:
        return self.non_finite + self.off_manifold


def _validity(manifold: Manifold, X: ArrayLike) -> tuple[Array, BoolArray, BoolArray]:
    """``(points, finite, ok)``: the records in the manifold's layout, which were finite as given,
    and which are finite points of the manifold (``manifold.belongs``)."""
    X = np.asarray(X)
    n = X.shape[0]
    with np.errstate(all="ignore"):
        finite = finite_rows(X.reshape(n, int(np.prod(X.shape[1:], dtype=np.int64))), 1)
        points = np.asarray(manifold.as_points(X), dtype=manifold.dtype)
        ok = manifold.belongs(points)
    return points, finite, ok


def _sanitised(manifold: Manifold, points: Array, ok: BoolArray, center: Array) -> Array:
    """Invalid records replaced by ``center``, the others projected onto the manifold."""
    keep = manifold._expand(ok)
    with np.errstate(all="ignore"):
        return select(keep, manifold.project(select(keep, points, center)), center)


PREPARE_BLOCK = 1 << 15  # array entries per block of prepare_records (its temporaries stay under a MiB or so at any n),
PREPARE_MIN_ROWS = 256  # but at least this many records (per-block work: the centre's decomposition)


def prepare_records(manifold: Manifold, X: ArrayLike, center: Array, radius: float, keep: bool = True,
                    log_mean: bool = True, total: int | None = None) -> tuple[PreparedRecords, RecordCounts]:
    """Record by record: non-finite or off-manifold records become ``center``
    (data-independent), the rest are projected onto the manifold and clipped into
    ``B_radius(center)``. Users' layouts (``manifold.user_point_shapes``) are converted first.

    Returns ``(records, counts)``: ``records`` a ``PreparedRecords`` array, which also carries
    ``(1/n) Σ log_center(x_i)`` from the clipping's own pass (``manifold.clip_and_log_sum``: the
    certified mean's first gradient, and its closed form on a flat chart); ``counts`` a
    ``RecordCounts`` (not private: for the data holder's diagnostics only). The counts cost no
    extra pass: finiteness and the manifold check are the ones the replacement needs, and a record
    counts as clipped when the clip moved it. Blocks of ``PREPARE_BLOCK`` entries: the memory
    beyond the output is a small multiple of one block, whatever ``n``.

    ``keep=False`` (the mean on a flat chart, which is ``exp_center(log_mean)``): the clipped
    records are not built, only their log mean and the counts; ``records`` then holds no record
    (a statistic that reads them fails instead of reading unclipped ones). ``log_mean=False``
    (public: the certified mean's schedule does not start from it): a space's fused pass may
    skip the log mean (the sphere's then takes no ``arctan2``), and ``records.log_mean`` is
    ``None`` where it did. ``total``: the number of records the sums are weighted over, when ``X``
    is one block of them (a Dask block: weights ``1/total``); by default ``X``'s own."""
    X = np.asarray(X)
    n = X.shape[0]
    total = n if total is None else int(total)
    shape = ((n if keep else 0),) + tuple(manifold.point_shape)
    out = np.empty(shape, dtype=manifold.dtype, order=manifold.records_order)
    rows = _prepare_rows(manifold, X, total, log_mean)  # the release's n (public): a Dask block's passes as in memory
    log_sum: Any
    start_stats: Any
    log_sum, non_finite, off_manifold, clipped = 0.0, 0, 0, 0
    # the extrinsic start of the certified mean's Newton steps, where it takes them (public: radius, n)
    newton = None if manifold.flat_chart else manifold.newton_constants(radius, total)
    start_stats = 0.0 if keep and newton is not None and newton.extrinsic is not None else None
    dest: Any
    for start in range(0, n, rows):
        dest = out[start:start + rows] if keep else None
        block, finite, ok, moved, part = _prepare_chunk(manifold, X[start:start + rows], center, radius, 1.0 / total,
                                                        keep, log_mean, dest)
        if keep and block is not dest:
            dest[...] = block
        log_sum = None if part is None else log_sum + part
        if start_stats is not None:  # around the centre: the records are within r of it (rounding ε·r, not ε·R)
            start_stats = start_stats + manifold.centred_start_stats(block, center, 1.0 / total)
        bad, off, moved_here = _block_counts(finite, ok, moved, min(rows, n - start))
        non_finite, off_manifold, clipped = non_finite + bad, off_manifold + off, clipped + moved_here
    return PreparedRecords(out, center, log_sum, start_stats, radius), RecordCounts(int(n), non_finite, off_manifold, clipped)


def _prepare_rows(manifold: Manifold, X: Array, total: int, log_mean: bool) -> int:
    """Records per block of ``prepare_records`` (and of ``record_distances``' fused pass): blocks
    of ``PREPARE_BLOCK`` entries, at least ``PREPARE_MIN_ROWS`` records, as the space adjusts them."""
    rows = max(PREPARE_MIN_ROWS, PREPARE_BLOCK // max(1, int(np.prod(X.shape[1:], dtype=np.int64))))
    return manifold.prepare_rows(rows, total, log_mean)


def _block_counts(finite: Any, ok: Any, moved: Any, m: int) -> tuple[int, int, int]:
    """``(non-finite, off-manifold, clipped)`` of a block of ``m`` records from its masks, or from
    the counts (finite records, points among them, moved records) that a fused pass which counts as
    it goes returns in their place (``Euclidean(1)``: no per-record output)."""
    if isinstance(finite, int):
        return m - finite, finite - int(ok), int(moved)
    return len(finite) - int(np.count_nonzero(finite)), int(np.count_nonzero(finite & ~ok)), int(np.count_nonzero(moved))


def _prepare_chunk(manifold: Manifold, X: Array, center: Array, radius: float, weight: float, keep: bool = True,
                   log_sum: Any = True, out: Array | None = None) -> tuple[Any, ...]:  # log_sum: a flag, then the sum
    """One block of ``prepare_records``: ``(records, finite, ok, moved, Σ weight·log_center)``
    (``records`` is ``None`` when ``keep`` is false: the clipped records are not built; the sum
    may be ``None`` when ``log_sum`` is false; ``records`` may be ``out`` itself, written in place)."""
    fused = manifold.prepare_block(X, center, radius, weight, log_sum, keep, out)
    if fused is not None:
        return fused
    points, finite, ok = _validity(manifold, X)
    inside = _sanitised(manifold, points, ok, center)
    with np.errstate(all="ignore"):
        if not keep:
            moved, log_sum = manifold.clipped_log_sum(inside, center, radius, np.full(len(ok), weight))
            return None, finite, ok, moved, log_sum
        X, moved, log_sum = manifold.clip_and_log_sum(inside, center, radius, np.full(len(ok), weight))
    return X, finite, ok, moved, log_sum


@blas_limited
def prepared(manifold: Manifold, X: Any, center: Array, radius: float, keep: bool = True, log_mean: bool = True) -> Any:
    """The prepared records, in memory, or (Dask) prepared block by block on the workers in every
    pass (``privacy.dask_records``: one first pass for the counts and the certified mean's start,
    the clipped records never gathered); either way one ``RecordsWarning`` giving the counts when
    any record was replaced or clipped. ``keep=False``: only the clipped records' log mean
    (``prepare_records``)."""
    if not is_dask(X):
        records, counts = prepare_records(manifold, X, center, radius, keep, log_mean)
        warn_records(manifold, counts, radius)
        return records
    from .dask_records import prepare_blocks

    return prepare_blocks(manifold, X, center, radius, keep, log_mean)


def record_distances(manifold: Manifold, X: ArrayLike, center: Array, cap: float | None = None) -> FloatArray:
    """``ρ(center, x_i)`` of every record as the release sees it: invalid records (non-finite, off
    the manifold) at distance 0, since they are replaced by the centre. In memory only.

    With a public ``cap``, the distances of the records prepared at radius ``cap``
    (``prepare_records``): ``min(ρ, cap)`` to rounding, from the preparation's one robust pass, so
    that no record (``1e308`` entries on SPD) can make a decomposition raise for one neighbour
    only (a space's ``prepared_distances`` gives them from that pass's own decomposition). The
    radius selections pass a cap just above their largest candidate: a record beyond it is beyond
    every candidate either way."""
    if cap is not None:
        X = np.asarray(X)
        rows = _prepare_rows(manifold, X, len(X), False)  # the blocks prepare_records takes
        parts = [manifold.prepared_distances(X[s:s + rows], center, cap) for s in range(0, len(X), rows)]
        if parts and all(p is not None for p in parts):
            return cast(FloatArray, np.concatenate(cast(list[FloatArray], parts)).astype(float, copy=False))
        records, _ = prepare_records(manifold, X, center, cap, keep=True, log_mean=False)
        with np.errstate(all="ignore"):
            return cast(FloatArray, np.asarray(manifold.dist(center, np.asarray(records)), float))
    points, _, ok = _validity(manifold, X)
    with np.errstate(all="ignore"):
        return select(ok, manifold.dist(center, _sanitised(manifold, points, ok, center)), 0.0)


def _distance_cap(candidates: Sequence[float]) -> float:
    """Public: a radius just above the largest candidate, at which ``record_distances`` prepares."""
    return float(max(candidates)) * (1.0 + 2.0**-20)


def _invalid_counts(block: ArrayLike, manifold: Manifold) -> Array:
    _, finite, ok = _validity(manifold, block)
    return np.array([np.sum(~finite), np.sum(finite & ~ok)], dtype=np.int64)


def check_strict(manifold: Manifold, X: Any, strict: bool) -> None:
    """``strict=True``: one validity pass over the records (numpy in blocks, or Dask), and
    ``InvalidRecordsError`` (counts only) when any is non-finite or not on the manifold. Run
    before the accountant is charged: a refusal here releases nothing and spends nothing, and is
    itself a data-dependent event, for the data holder's own checks (docs/security.md)."""
    if not strict:
        return
    if is_dask(X):
        import dask

        X = X.rechunk({i: -1 for i in range(1, X.ndim)})
        parts = dask.compute(*[dask.delayed(_invalid_counts)(b, manifold) for b in X.to_delayed().ravel()])
    else:
        X = np.asarray(X)
        parts = [_invalid_counts(X[i:i + CHUNK], manifold) for i in range(0, len(X), CHUNK)]
    non_finite, off_manifold = (int(v) for v in np.sum(parts, axis=0))
    if non_finite or off_manifold:
        raise InvalidRecordsError(
            f"strict=True: of {len(X)} records, {non_finite} are non-finite and {off_manifold} are not points of "
            f"{manifold!r}; nothing was released and the accountant was not charged")


def warn_records(manifold: Manifold, counts: RecordCounts, radius: float) -> None:
    """One ``RecordsWarning`` with the counts (never values) when any record was replaced or
    clipped; nothing when all counts are zero. The message is built and the caller's frame found
    in both cases, so that only the ``warnings.warn`` call itself differs: that work (frame walk,
    formatting) cost ~15 µs and, done only for bad data, gave a timing adversary ε_LB ≈ 3–4
    (docs/security.md, Timing)."""
    parts = [(counts.non_finite, f"{counts.non_finite} replaced by the centre because non-finite (NaN or inf)"),
             (counts.off_manifold, f"{counts.off_manifold} replaced by the centre because not points of {manifold!r} "
                                   "(check the layout, the scale and the coordinates the manifold expects)"),
             (counts.clipped, f"{counts.clipped} clipped into the ball of radius {radius:g} around the centre (they "
                              "lay outside it)")]
    message = f"of {counts.n} records, " + "; ".join(text for count, text in parts if count)
    hint = f". On {manifold!r}, {manifold.points_hint}" if manifold.points_hint else ""
    if counts.replaced == counts.n:
        message += f". Every record was replaced: the release is the centre plus noise{hint}"
    elif counts.clipped + counts.replaced == counts.n:
        message += (". No valid record lay inside the ball: its centre is far from the records (a typed centre: "
                    f"check its coordinates and signs), and the release stays within the ball, near the centre{hint}")
    _warn(message + " [RecordsWarning: about your data, for your terminal only]", RecordsWarning,
          emit=bool(counts.replaced or counts.clipped))


def ambient_mean(manifold: Manifold, records: Any) -> FloatArray:
    """The Euclidean mean of the embedded records (``manifold.to_ambient``), summed as
    ``sensitivity.ambient_float_error`` bounds its rounding: each block's rows in sub-blocks of
    ``ambient_sum_rows(n)``, the sub-blocks' sums, then the blocks' sums (a release's Dask records,
    ``PreparedBlocks``, in one pass) pairwise."""
    rows = ambient_sum_rows(len(records) if not isinstance(records, PreparedBlocks) else records.n)
    with np.errstate(all="ignore"):  # bounded values: only underflow can happen, and it must not be observable
        if isinstance(records, PreparedBlocks):
            return pairwise_sum(records.map(_blk_ambient_sum, manifold, rows)) / records.n
        return sum_rows(manifold.to_ambient(records), rows) / len(records)


def _blk_ambient_sum(block: Array, w: Any, n: int, manifold: Manifold, rows: int) -> FloatArray:
    with np.errstate(all="ignore"):
        return sum_rows(manifold.to_ambient(block), rows)


# --- stage 5: the output's representative and grid ------------------------------------------

def output_grid(manifold: Manifold, sigma: float, center: Array, radius: float) -> float:
    """The default public grid spacing of a release: a power of two ≈ ``2^-20`` of the noise scale
    in coordinates, and at least ``2^12`` float spacings of the coordinates' public magnitude
    (``manifold.grid_scales``), so the low-order bits of a float sampler (Mironov 2012) are
    rounded away (docs/security.md)."""
    move, scale = manifold.grid_scales(center, radius, sigma)
    g = max(move * GRID_BELOW_SCALE, scale * GRID_ABOVE_ULP)
    if not math.isfinite(g):  # public: the centre, the radius and the scale reach float64's end
        raise ValueError(f"center and radius={radius!r} on {manifold!r} (noise scale {sigma:.3g}) reach beyond "
                         "float64's range: no output grid exists; use a centre and radius of smaller magnitude")
    return float(2.0 ** math.ceil(math.log2(g)))


def finish(manifold: Manifold, points: ArrayLike, center: Array, grid: float | None, sigma: float) -> Array:
    """Post-processing of raw draws (batch or single): canonical representative, snap to ``grid``
    (``None``: no snapping), back onto the manifold, and refuse a non-representable point."""
    points = manifold.canonical(center, np.asarray(points))  # Kendall: rotated against the public centre
    if grid is not None:
        if np.iscomplexobj(points):
            points = np.round(points.real / grid) * grid + 1j * (np.round(points.imag / grid) * grid)
        else:
            points = np.round(points / grid) * grid
        with np.errstate(all="ignore"):
            points = manifold.snap(points, grid)
    if grid is None and not manifold.check_point(points)[0]:  # raw: the projection of ``snap`` (SPD: its
        with np.errstate(all="ignore"):                          # relative eigenvalue floor), on the draw alone
            points = manifold.snap(points, 0.0)
    if not manifold.check_point(points)[0]:
        raise RuntimeError(f"the release at noise scale sigma={sigma:.4g} is not representable in float64 on {manifold!r}; "
                           "nothing was released")
    return points


def check_round_to(round_to: float | str | None, grid_auto: float, *, warn: bool = True) -> float | None:
    """The output grid: ``"auto"`` (the public default), a spacing, or ``None`` (raw; warned
    unless ``warn=False``)."""
    if isinstance(round_to, str):
        if round_to != "auto":
            raise ValueError(f"round_to must be 'auto', None or a grid spacing > 0, got {round_to!r}")
        return grid_auto
    if round_to is None:
        if warn:
            _warn("round_to=None releases raw float64 output, whose low-order bits can leak the data "
                  "(docs/security.md); the default round_to='auto' removes that", ReleaseWarning)
        return None
    g = check_positive(round_to, "round_to")
    if g > grid_auto * 2.0**19:  # coarser than half the noise scale in coordinates: the grid would be the release
        raise ValueError(f"round_to={round_to!r} is coarser than the noise; use at most {grid_auto * 2.0**19:.3g} (or 'auto')")
    return g


def _grid_note(grid: float | None) -> str:
    return ("none (raw float64: round_to=None)" if grid is None else
            f"snapped to a public grid of {grid!r} in array coordinates, then projected (post-processing)")


# --- the pipeline: a statistic, planned and drawn ------------------------------------------------

class Statistic(ABC):
    """A private statistic on the pipeline: what the stages need to know of it. A statistic is
    one module (``privacy.frechet_mean``, ``privacy.frechet_variance``) defining a subclass, its
    instance, and a public function that calls ``release_statistic``; ``STATISTICS`` lists them.

    ``name`` is the certificate's ``statistic``; ``mechanisms`` the names of
    ``privacy.mechanism_specs.MECHANISMS`` it may be released with (``check_public`` refuses the
    others); ``auto_mechanism`` whether ``mechanism="auto"`` may choose among them,
    ``private_ball`` whether ``center="auto"`` is offered and ``radius_auto`` whether
    ``radius="auto"`` is; ``options`` which of the release's other options it reads (``delta``,
    ``bound``, ``calibration``, ``restrict``: the command line refuses the others by name);
    ``cli_name`` its name for ``manifold-dp release --statistic`` (``""``: not offered there);
    ``scale_power`` how the statistic's
    range grows with the radius (``r`` for a point, ``r²`` for the variance: ``radius="auto"``
    compares the noise per unit of it). Every method reads public values only, except
    ``compute``, which reads the prepared records after the charge."""

    name: str = ""
    mechanisms: tuple[str, ...] = ("laplace",)
    auto_mechanism: bool = False
    private_ball: bool = False
    radius_auto: bool = True
    options: tuple[str, ...] = ()
    cli_name: str = ""
    scale_power: float = 1.0

    @abstractmethod
    def stages(self, manifold: Manifold, p: PublicParams, radius: float, epsilon: float,
               round_to: float | str | None, warn: bool = True) -> tuple[Calibration, float | None]:
        """Stage 2 at ``radius`` and ``epsilon``: ``(calibration, output grid)``, or a
        ``ValueError`` (public values only; ``warn=False``: no warning about ``round_to``)."""

    def reads(self, manifold: Manifold, cal: Calibration, radius: float, n: int) -> tuple[bool, bool]:
        """``(keep, log_mean)`` of ``prepared``: whether ``compute`` reads the prepared records
        and their log mean at the centre (public values only)."""
        return True, True

    @abstractmethod
    def compute(self, manifold: Manifold, p: PublicParams, radius: float, cal: Calibration, records: Any) -> Any:
        """The non-private value the measurement's law is drawn around, from the prepared records
        (stage 4, after the charge). It never leaves the ``Plan``."""

    def sample(self, measurement: measurements.Measurement, value: Any, size: int | tuple[int, ...] | None,
               rng: np.random.Generator) -> tuple[Any, float | None]:
        """Raw draws of ``measurement`` around ``value`` (what ``compute`` returned) and the
        sampler's acceptance (``None`` where it depends on the data): ``sample_with_stats`` of the
        measurement, unless the statistic's law is drawn otherwise."""
        return measurement.sample_with_stats(value, size, rng=rng)

    def output_space(self, manifold: Manifold, center: Array) -> tuple[Manifold, Array]:
        """The space the draws are finished in (``finish``: representative, grid, check) and its
        public reference point: the records' manifold and the centre for a point statistic."""
        return manifold, center

    def post(self, raw: Any, radius: float) -> Any:
        """Post-processing of raw draws before they are finished (the variance's clamp)."""
        return raw

    def released(self, point: Array) -> Any:
        """The ``PrivateRelease.value`` of one finished draw."""
        return point

    def before_charge(self, manifold: Manifold, p: PublicParams, radius: float) -> None:
        """Public warnings of a release at a given radius, before the charge (the mean: near ``r*``);
        none by default."""
        return None

    @abstractmethod
    def noise_against_room(self, manifold: Manifold, measurement: measurements.Measurement,
                           radius: float) -> tuple[float, float, str, str, str]:
        """``(noise, room, what, where, advice)`` of the "mostly noise" warning
        (``warn_if_mostly_noise``): it is raised when ``noise > room``."""


@dataclass(frozen=True)
class Plan:
    """A calibrated, charged release ready to draw: the statistic's value stays inside
    (``_statistic``). ``draw(size)`` gives finished releases exactly as the public function
    returns them (the audit draws many from one plan); ``certificate(acceptance)`` their
    certificate. ``manifold`` and ``center`` are the output space's (``Statistic.output_space``);
    ``source`` the records' manifold."""

    manifold: Manifold
    center: Array
    grid: float | None
    calibration: Calibration
    statistic: Statistic = field(repr=False)
    source: Manifold = field(repr=False)
    n: int
    radius: float
    mechanism_selection: MechanismSelection | None = field(repr=False)
    _statistic: Any = field(repr=False)

    @ignoring_float_errors
    def draw(self, size: int | tuple[int, ...] | None = None, *, rng: RngLike = None) -> Array:
        return self.draw_with_stats(size, rng=rng)[0]

    @ignoring_float_errors
    def draw_with_stats(self, size: int | tuple[int, ...] | None = None, *,
                        rng: RngLike = None) -> tuple[Array, float | None]:
        """``(releases, acceptance)``; the acceptance is ``None`` where it depends on the data."""
        raw, acceptance = self.statistic.sample(self.calibration.measurement, self._statistic, size, as_generator(rng))
        raw = self.statistic.post(raw, self.radius)
        return finish(self.manifold, raw, self.center, self.grid, self.calibration.sigma), acceptance

    def certificate(self, acceptance: float | None) -> Certificate:
        m, cal = self.calibration.measurement, self.calibration
        from .. import __version__

        return Certificate(
            statistic=self.statistic.name, mechanism=m.mechanism, mechanism_title=m.title, theorem=m.theorem,
            epsilon=m.epsilon, delta=m.delta, manifold=repr(self.source), n=self.n,
            radius=self.radius, sensitivity=m.sensitivity, sensitivity_bound=cal.sensitivity_bound,
            scale=m.scale, scale_rule=m.scale_rule, restriction=m.restriction, sampler=m.sampler,
            sampler_acceptance=None if acceptance is None else round(float(acceptance), 4),
            optimisation=cal.optimisation, output_grid=_grid_note(self.grid), output_grid_spacing=self.grid,
            library_version=__version__, mechanism_selection=self.mechanism_selection)


def build_plan(statistic: Statistic, manifold: Manifold, p: PublicParams, radius: float, cal: Calibration,
               grid: float | None, records: Any) -> Plan:
    """Stage 4 of ``statistic`` at ``radius`` on the ``prepared`` records (charged already)."""
    value = statistic.compute(manifold, p, radius, cal, records)
    space, reference = statistic.output_space(manifold, p.center)
    return Plan(space, reference, grid, cal, statistic, manifold, p.n, radius, p.mechanism_selection, value)


RADIUS_UNITS = """radius : float, "auto" or AutoRadius
        The public ball ``B_radius(center)`` the records are clipped into, ``0 < radius < r*``
        (Assumption 1), in the manifold's geodesic distance: radians on the unit sphere (times
        the radius of ``Sphere(dim, radius=R)``); ``‖Logm(C^-½ X C^-½)‖_F`` on ``spd-ai``;
        ``‖Logm X − Logm C‖_F`` on ``spd-le``; the hyperbolic distance on the hyperboloid; the
        Procrustes distance in radians on ``kendall2d``; the rotation angle of ``C⁻¹X`` on ``so3``;
        the Euclidean norm on ``euclidean`` (each space's ``radius_units``).
        ``"auto"`` (``AutoRadius()``) or an ``AutoRadius``: a private quantile of the records'
        distances from ``center`` chosen with ``budget·epsilon`` (default 0.2·ε, quantile 0.9,
        ``privacy.radius_selection``), the release at that radius with the rest. In-memory
        records only."""


@ignoring_float_errors
def plan_statistic(statistic: Statistic, X: ArrayLike, manifold: Manifold, *, center: Any, radius: Any, epsilon: float,
                   delta: float | None = None, mechanism: str = "laplace", bound: str = "tight",
                   calibration: str = "analytic", restrict: bool = False, round_to: float | str | None = "auto",
                   accountant: PrivacyAccountant | None = None,
                   strict: bool = False) -> Plan | AutoPlan | _private_ball.BallPlan:
    """Stages 1–4 of a release of ``statistic`` without the draw; the accountant is charged once.
    With ``radius="auto"`` an ``AutoPlan``; with ``center="auto"`` (where the statistic offers it)
    a ``privacy.private_ball.BallPlan``."""
    if not statistic.radius_auto and isinstance(radius, (str, AutoRadius)):
        raise ValueError(f"radius must be a number for {statistic.name} (it offers no private radius), got {radius!r}: "
                         "give a public radius, or choose one with the mean's radius='auto' and reuse it (the two "
                         "epsilons add up)")
    if statistic.private_ball and _private_ball.auto_center(center) is not None:
        return _private_ball.plan_private_ball(
            X, manifold, center=center, radius=radius, epsilon=epsilon, delta=delta, mechanism=mechanism, bound=bound,
            calibration=calibration, restrict=restrict, round_to=round_to, accountant=accountant, strict=strict)
    p = check_public(X, manifold, center=center, radius=radius, epsilon=epsilon, delta=delta, mechanism=mechanism,
                     bound=bound, calibration=calibration, restrict=restrict, accountant=accountant, strict=strict,
                     mechanisms=statistic.mechanisms, auto_mechanism=statistic.auto_mechanism)
    if p.auto is not None:
        return _auto_plan(X, manifold, p, round_to, statistic)
    radius = p.given_radius
    cal, grid = statistic.stages(manifold, p, radius, p.epsilon, round_to)
    statistic.before_charge(manifold, p, radius)
    warn_if_mostly_noise(manifold, statistic, cal.measurement, radius, p.n)
    check_strict(manifold, X, p.strict)
    charge(p.accountant, cal.measurement)
    records = prepared(manifold, X, p.center, radius, *statistic.reads(manifold, cal, radius, p.n))
    return build_plan(statistic, manifold, p, radius, cal, grid, records)


@ignoring_float_errors
@blas_limited
def release_statistic(statistic: Statistic, X: ArrayLike, manifold: Manifold, *, center: Any, radius: Any,
                      epsilon: float, delta: float | None = None, mechanism: str = "laplace", bound: str = "tight",
                      calibration: str = "analytic", restrict: bool = False, round_to: float | str | None = "auto",
                      accountant: PrivacyAccountant | None = None, rng: RngLike = None,
                      strict: bool = False, warn_delta: bool = True) -> PrivateRelease:
    """One private release of ``statistic``: every stage (``plan_statistic``), then one draw. The
    public functions (``private_frechet_mean``, ``private_frechet_variance``) are this with their
    statistic; their docstrings describe the parameters. ``warn_delta=False``: a caller that spends
    only part of its δ here (tangent PCA's mean) says what it has to say about δ itself."""
    _warn_if_seeded_and_composed(rng, accountant)
    rng = as_generator(rng)
    plan = plan_statistic(statistic, X, manifold, center=center, radius=radius, epsilon=epsilon, delta=delta,
                          mechanism=mechanism, bound=bound, calibration=calibration, restrict=restrict, round_to=round_to,
                          accountant=accountant, strict=strict)
    if warn_delta:  # the public checks passed
        warn_about_delta(X, manifold, delta, mechanism)
    if isinstance(plan, (AutoPlan, _private_ball.BallPlan)):
        return plan.release(rng=rng)
    point, acceptance = plan.draw_with_stats(None, rng=rng)
    return PrivateRelease(statistic.released(point), plan.certificate(acceptance))


# --- radius="auto" and the statistics declared on the pipeline, one module each ------------------
# (imported last: each builds on the stages above; their public names are re-exported here)
from .auto_radius import AutoPlan, _auto_plan  # noqa: E402
from .frechet_mean import FRECHET_MEAN, calibrate, plan_release, private_frechet_mean  # noqa: E402
from .frechet_variance import FRECHET_VARIANCE, frechet_variance_sensitivity, private_frechet_variance  # noqa: E402
from .median import FRECHET_MEDIAN  # noqa: E402

STATISTICS: dict[str, Statistic] = {statistic.name: statistic for statistic in (FRECHET_MEAN, FRECHET_VARIANCE, FRECHET_MEDIAN)}
