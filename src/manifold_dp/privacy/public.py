"""Stage 1 of every release: the public parameters checked, in a fixed order, and normalised
into one frozen ``PublicParams`` (``check_public``); the records' container is checked too (its
size ``n`` is public), never its values. Errors name the parameter and its public value."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar, cast

import numpy as np

from .._typing import Array
from .._validation import check_delta, check_epsilon, check_radius
from ..manifolds.base import Manifold, check_order
from ..records import is_dask
from . import measurements
from . import radius_selection as _selection
from .accounting import PrivacyAccountant, check_accountant
from .certificate import MechanismSelection
from .mechanism_specs import GAUSSIAN_MECHANISMS, MECHANISM_NAMES
from .mechanism_specs import MECHANISMS as MECHANISM_SPECS
from .radius_selection import AutoRadius
from .sensitivity import BOUNDS

_P = ParamSpec("_P")
_R = TypeVar("_R")

__all__ = ["PublicParams", "check_public", "validate_center", "record_count", "ignoring_float_errors"]


@dataclass(frozen=True, eq=False)  # eq=False: ``center`` is an array, which has no truth value to compare by
class PublicParams:
    """The normalised public parameters of a release (``check_public``); change one with
    ``dataclasses.replace``.

    ``radius`` is ``None`` when ``radius="auto"``, and then ``auto`` holds the selection's
    parameters; ``mechanism`` is the one ``mechanism="auto"`` chose, and ``mechanism_selection``
    the certificate's record of that choice (``None`` for a named mechanism)."""

    n: int
    center: Array
    radius: float | None
    epsilon: float
    delta: float | None
    mechanism: str
    bound: str
    calibration: str
    restrict: bool
    accountant: PrivacyAccountant | None = None
    auto: AutoRadius | None = None
    strict: bool = False
    mechanism_selection: MechanismSelection | None = None

    @property
    def given_radius(self) -> float:
        """The public radius, where one was given (not ``radius="auto"``)."""
        if self.radius is None:
            raise TypeError("radius='auto': the release's radius is chosen privately, not given")
        return self.radius


def validate_center(manifold: Manifold, center: Any) -> Array:
    """The public centre as one point of ``manifold`` (no batch axes), or a ``ValueError``/``TypeError``
    naming ``center``. Layouts in ``manifold.user_point_shapes`` (Kendall: real landmarks) too."""
    from .private_ball import auto_center

    if auto_center(center) is not None:  # "auto" or an AutoCenter
        raise ValueError("center='auto' (the private ball) is available for private_frechet_mean; for this statistic "
                         "release the mean with center='auto' first and pass its point (and radius) here: that reuse is "
                         "post-processing, and the two releases' epsilons add up")
    if isinstance(center, (str, bytes, np.ma.MaskedArray)):
        raise TypeError(f"center must be a numeric array holding one point of {manifold!r}, got {type(center).__name__}")
    try:
        c = np.asarray(center)
    except (ValueError, TypeError, OverflowError):
        raise TypeError(f"center must be a numeric array holding one point of {manifold!r}") from None
    if c.dtype.kind not in "biufc":
        raise TypeError(f"center must be a numeric array holding one point of {manifold!r}, got dtype kind {c.dtype.kind!r}")
    if np.iscomplexobj(c) and not np.issubdtype(np.dtype(manifold.dtype), np.complexfloating):
        raise TypeError(f"center must be real for {manifold!r}, got a complex array")
    if c.shape not in (tuple(manifold.point_shape),) + tuple(manifold.user_point_shapes):
        raise ValueError(f"center must be one point of shape {tuple(manifold.point_shape)} for {manifold!r}, got shape {c.shape}")
    with np.errstate(all="ignore"):
        c = manifold.as_points(c)
    return manifold.validate_point(c, "center")


def record_count(manifold: Manifold, X: Any) -> int:
    """``n`` (public) after checking the container: a numeric array ``(n, *point_shape)`` (or a
    layout of ``manifold.user_point_shapes``), ``n ≥ 1``. Masked arrays, strings, dates and
    objects are refused rather than guessed at."""
    if isinstance(X, np.ma.MaskedArray):
        raise TypeError("X is a masked array: the mask would be ignored; drop or fill the masked records first")
    if is_dask(X):
        shape, kind = X.shape, np.dtype(X.dtype).kind
    else:
        try:
            arr = np.asarray(X)
        except (ValueError, TypeError, OverflowError):
            raise TypeError(f"X must be a numeric array of records of {manifold!r}") from None
        shape, kind = arr.shape, arr.dtype.kind
    if kind not in "biufc":
        raise TypeError(f"X must be a numeric array of records of {manifold!r}, got dtype kind {kind!r}")
    if kind == "c" and not np.issubdtype(np.dtype(manifold.dtype), np.complexfloating):
        raise TypeError(f"X must be real-valued for {manifold!r}, got complex records")
    point = tuple(manifold.point_shape)
    layouts = (point,) + (tuple(manifold.user_point_shapes) if kind != "c" else ())  # user layouts are real
    if len(shape) < 1 or tuple(shape[1:]) not in layouts:
        raise ValueError(f"X must have shape (n, {', '.join(map(str, point))}), got {tuple(shape)}")
    if shape[0] == 0:
        raise ValueError("X must hold at least one record (n >= 1)")
    return int(shape[0])


def check_public(X: Any, manifold: Manifold, *, center: Any, radius: Any, epsilon: Any, delta: Any, mechanism: str,
                 bound: str, calibration: str, restrict: bool, accountant: Any, strict: bool = False,
                 mechanisms: Sequence[str] = MECHANISM_NAMES, auto_mechanism: bool = True) -> PublicParams:
    """Stage 1: every public parameter checked, in a fixed order; returns them normalised.
    ``radius`` may be ``"auto"`` or an ``AutoRadius`` (then ``radius`` is ``None`` and ``auto``
    holds the selection's parameters). ``mechanisms`` are those the statistic may be released
    with (``Statistic.mechanisms``), ``auto_mechanism`` whether ``mechanism="auto"`` may choose."""
    check_order(X, manifold, "a private release")
    epsilon = check_epsilon(epsilon)
    if mechanism not in MECHANISM_SPECS and mechanism != "auto":
        raise ValueError(f"mechanism must be one of {MECHANISM_NAMES} or 'auto', got {mechanism!r}")
    if (mechanism == "auto" and not auto_mechanism) or (mechanism != "auto" and mechanism not in mechanisms):
        raise ValueError(f"mechanism must be one of {tuple(mechanisms)} for this statistic, got {mechanism!r}")
    gaussian = mechanism in GAUSSIAN_MECHANISMS
    delta = check_delta(delta, required=gaussian) if gaussian or delta is not None else None
    if calibration not in measurements.CALIBRATIONS:
        raise ValueError(f"calibration must be 'analytic' or 'classical', got {calibration!r}")
    if bound not in BOUNDS:
        raise ValueError(f"bound must be one of {BOUNDS}, got {bound!r}")
    if not isinstance(restrict, (bool, np.bool_)):
        raise TypeError(f"restrict must be True or False, got {type(restrict).__name__}")
    if not isinstance(strict, (bool, np.bool_)):
        raise TypeError(f"strict must be True or False, got {type(strict).__name__}")
    accountant = check_accountant(accountant)
    auto = _selection.auto_radius(radius)
    radius = check_radius(manifold, radius) if auto is None else None
    if auto is not None and is_dask(X):
        raise ValueError("radius='auto' reads every record's distance from the centre in memory: not supported on "
                         "Dask arrays; give a number, or choose it on a sample you may spend budget on")
    center = validate_center(manifold, center)
    unsupported = None if mechanism == "auto" else MECHANISM_SPECS[mechanism].unsupported(manifold, dask=is_dask(X))
    if unsupported is not None:
        raise ValueError(unsupported)
    n = record_count(manifold, X)
    selection = None
    if mechanism == "auto":  # public values only, before any record is read
        mechanism, selection = _auto_mechanism(manifold, n=n, center=center, radius=radius, auto=auto, epsilon=epsilon,
                                               delta=delta, bound=bound, calibration=calibration, restrict=bool(restrict),
                                               dask=is_dask(X))
    return PublicParams(n=n, center=center, radius=radius, epsilon=epsilon, delta=delta, mechanism=mechanism, bound=bound,
                        calibration=calibration, restrict=bool(restrict), accountant=accountant, auto=auto,
                        strict=bool(strict), mechanism_selection=selection)


def _auto_mechanism(manifold: Manifold, *, n: int, center: Array, radius: float | None, auto: AutoRadius | None,
                    epsilon: float, delta: float | None, bound: str, calibration: str, restrict: bool,
                    dask: bool) -> tuple[str, MechanismSelection]:
    """``mechanism="auto"``: the mechanism with the smallest expected noise distance at the public
    parameters (``privacy.planning.choose_mechanism``) and the certificate's record of the choice.
    With ``radius="auto"`` they are compared at four radii spread over the public candidate grid,
    with the release's share of ε (``planning.choose_mechanism_over_radii``)."""
    from .planning import choose_mechanism, choose_mechanism_over_radii, sample_radii

    exclude = tuple(name for name, spec in MECHANISM_SPECS.items() if dask and spec.on_dask)
    if auto is not None:
        grid = np.asarray(auto.grid) if auto.grid is not None else _selection.default_grid(manifold, center)
        if not grid.size:
            raise ValueError(f"mechanism='auto': radius='auto' has no candidate radius around this centre on {manifold!r}")
        choice = choose_mechanism_over_radii(manifold, n=n, radii=sample_radii(grid), epsilon=epsilon * (1.0 - auto.budget),
                                             delta=delta, center=center, bound=bound, calibration=calibration,
                                             restrict=restrict, exclude=exclude)
    else:
        choice = choose_mechanism(manifold, n=n, radius=cast(float, radius), epsilon=epsilon, delta=delta, center=center,
                                  bound=bound, calibration=calibration, restrict=restrict, exclude=exclude)
    return choice.mechanism, choice.selection


def ignoring_float_errors(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a release under ``np.errstate(all="ignore")``: a caller's ``np.seterr`` (``raise`` or
    ``warn`` on underflow, say) must not turn a rounding event of one record into an exception or a
    warning — a difference between neighbouring datasets. Every decision of the pipeline is made on
    values (finite, in the ball), never on numpy's floating-point flags."""
    @functools.wraps(function)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with np.errstate(all="ignore"):
            return function(*args, **kwargs)

    return run
