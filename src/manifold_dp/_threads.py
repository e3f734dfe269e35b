"""The BLAS thread limit of manifold_dp's small-matrix work, decided once per process.

The library's linear algebra is many small problems — an ``eigh`` of a ``k × k`` matrix per
record, ``k ≤ 100`` — for which a multi-threaded BLAS only adds synchronisation. On a loaded
machine it is far worse than that: OpenBLAS's threads spin while waiting for cores, and one
``30 × 30`` ``eigh`` was measured at 23.6 ms (median) instead of 127 µs single-threaded, so
running times became a matter of luck. Functions decorated with ``blas_limited``
therefore run with BLAS limited to ``BLAS_THREADS`` threads (default 1) and restore the previous
setting when they return; nesting and concurrent calls are counted, so the limit is set by the
first entry and lifted by the last exit.

``BLAS_THREADS`` is read once, at import, from the environment variable
``MANIFOLD_DP_BLAS_THREADS``: a positive integer, or ``none`` to leave BLAS alone. The limit is
process-wide (BLAS has no per-thread setting): other threads of the process that call BLAS while a
decorated function runs get the same limit. It is applied through ``threadpoolctl``, imported on
first use (never by ``import manifold_dp``); without it nothing is limited.
"""

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TypeVar, cast

_P = ParamSpec("_P")
_R = TypeVar("_R")

__all__ = ["ENVIRONMENT_VARIABLE", "BLAS_THREADS", "blas_limit", "blas_limited", "blas_limited_unless_tiny", "describe"]

ENVIRONMENT_VARIABLE = "MANIFOLD_DP_BLAS_THREADS"


def _read_setting(raw: str | None) -> int | None:
    """``None`` (leave BLAS alone) or a positive thread count, from the variable's text."""
    raw = (raw if raw is not None else "1").strip().lower()
    if raw in ("none", "off", ""):
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{ENVIRONMENT_VARIABLE} must be a positive integer or 'none', got {raw!r}") from None
    if value < 1:
        raise ValueError(f"{ENVIRONMENT_VARIABLE} must be a positive integer or 'none', got {raw!r}")
    return value


BLAS_THREADS = _read_setting(os.environ.get(ENVIRONMENT_VARIABLE))

_lock = threading.Lock()
_depth = 0
_saved: tuple[Any, ...] = ()
_libraries: tuple[Any, ...] | None = None


def _blas_libraries() -> tuple[Any, ...]:
    """The BLAS libraries loaded in this process (``threadpoolctl`` controllers), found once."""
    global _libraries
    if _libraries is None:
        try:
            from threadpoolctl import ThreadpoolController

            _libraries = tuple(ThreadpoolController().select(user_api="blas").lib_controllers)
        except Exception:  # noqa: BLE001  # threadpoolctl missing or unable to inspect this BLAS: nothing to limit
            _libraries = ()
    return _libraries


def _enter() -> None:
    global _depth, _saved
    with _lock:
        if _depth == 0:
            libraries = _blas_libraries()
            _saved = tuple(lib.get_num_threads() for lib in libraries)
            for lib, threads in zip(libraries, _saved):
                if threads is None or threads > BLAS_THREADS:
                    lib.set_num_threads(BLAS_THREADS)
        _depth += 1


def _exit() -> None:
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0:
            for lib, threads in zip(_blas_libraries(), _saved):
                if threads is not None and threads > BLAS_THREADS:
                    lib.set_num_threads(threads)


def blas_limited(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``func`` with BLAS limited to ``BLAS_THREADS`` threads (the identity when the setting
    is ``none``). Costs about a microsecond per call; nested calls cost a counter increment."""
    if BLAS_THREADS is None:
        return func

    @functools.wraps(func)
    def limited(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        _enter()
        try:
            return func(*args, **kwargs)
        finally:
            _exit()

    return limited


TINY = 16  # a single matrix with fewer rows never starts BLAS threads worth limiting


def blas_limited_unless_tiny(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """``blas_limited`` for functions of one matrix or a batch of them: the limit is applied when an
    argument is a batch (``ndim > 2``) or a matrix of ``TINY`` rows or more. A single draw of a
    sampler on SPD(2) should not pay a few microseconds for a limit its matrices never need."""
    if BLAS_THREADS is None:
        return func
    limited = blas_limited(func)

    @functools.wraps(func)
    def dispatch(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if any(getattr(a, "ndim", 0) > 2 or (getattr(a, "ndim", 0) == 2 and a.shape[-1] >= TINY)
               for a in cast("tuple[Any, ...]", args)):
            return limited(*args, **kwargs)
        return func(*args, **kwargs)

    return dispatch


@contextlib.contextmanager
def blas_limit() -> Iterator[None]:
    """The limit of ``blas_limited`` as a ``with`` block."""
    if BLAS_THREADS is None:
        yield
        return
    _enter()
    try:
        yield
    finally:
        _exit()


def describe() -> str:
    """One line for benchmark tables and bug reports."""
    if BLAS_THREADS is None:
        return f"no BLAS thread limit ({ENVIRONMENT_VARIABLE}=none)"
    return (f"BLAS limited to {BLAS_THREADS} thread{'s' if BLAS_THREADS > 1 else ''} inside its small-matrix work "
            f"({ENVIRONMENT_VARIABLE}={BLAS_THREADS}; 'none' leaves BLAS alone)")
