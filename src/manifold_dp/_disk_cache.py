"""A cache on disk for public set-up values, so that a new process does not redo them.

Some values a release needs are functions of public parameters only and cost far more than the
release itself the first time: the Riemannian Gaussian's calibration (σ by bisection over a
privacy-profile quadrature, μ-GDP on a grid of ε: about 0.3 s on SPD-AI(10)), the exact SPD
samplers' acceptance pilots and the certified optimisation schedules (``radius="auto"`` needs them
at every candidate radius). ``disk_cached`` keeps them in files, keyed by the function, its
arguments and a digest of the package's source code, numpy's and scipy's versions, Python's
version and the machine type, so a changed library never reads another's values (another machine
of the same type sharing the home directory, with another BLAS, may: its values are as valid a
calibration for the same public parameters, and releases the same law). Values are
stored exactly (floats as ``float.hex``): a process that reads them releases the same bits as one
that computed them.

No record, and nothing computed from records, is ever stored: the arguments are public parameters
(numbers and strings of Python's own types, and spaces of a registered type whose fields are such
numbers); any other argument bypasses the cache. What the files hold bounds the privacy of later
releases, so they get the protection of the installed code (docs/security.md): POSIX only; every
level of the cache — its base, the digest's directory, the function's directory, the file — must
be owned by the user and writable by no one else, and is opened without following symbolic links,
one level relative to the one before (no check-then-open race); missing levels are created with
mode 0700. Anything else — another owner, a shared folder, a damaged file, a value of the wrong
form, a read-only disk, two processes at once — falls back to computing.

``MANIFOLD_DP_CACHE``: unset — ``$XDG_CACHE_HOME/manifold_dp`` (or ``~/.cache/manifold_dp``);
a path — that directory; ``0``, ``off``, ``false``, ``no`` or empty — no disk cache.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import platform
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

__all__ = ["CACHE_ENV", "cache_directory", "disk_cached"]

CACHE_ENV = "MANIFOLD_DP_CACHE"
_OFF = ("", "0", "off", "false", "no")
_SUPPORTED = os.name == "posix" and os.open in os.supports_dir_fd and getattr(os, "O_NOFOLLOW", 0) != 0
_P = ParamSpec("_P")
_R = TypeVar("_R")


@functools.cache
def _code_digest() -> str:
    """A digest of every source file of the package, numpy's and scipy's versions, Python's
    version and the machine type."""
    import numpy
    import scipy

    root = Path(__file__).resolve().parent
    h = hashlib.sha256(f"numpy {numpy.__version__} scipy {scipy.__version__} python {sys.version} "
                       f"{platform.machine()}".encode())
    for path in sorted(root.rglob("*.py")):
        if path.is_file() and not path.is_symlink():
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:24]


def cache_directory() -> Path | None:
    """Where set-up values are kept (``None``: the disk cache is off or unavailable), read from
    the environment at each call."""
    setting = os.environ.get(CACHE_ENV)
    if not _SUPPORTED or (setting is not None and setting.strip().lower() in _OFF):
        return None
    try:
        if setting:
            base = Path(setting).expanduser()
        else:
            xdg = os.environ.get("XDG_CACHE_HOME", "")
            base = (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "manifold_dp"  # a relative one is ignored
        return base / _code_digest()
    except (OSError, RuntimeError, ValueError):  # no home directory, an unreadable source file
        return None


def _exact(value: Any) -> str | None:
    """A number or string of Python's own types as exact text; ``None`` for anything else."""
    if value is None or type(value) is bool:
        return repr(value)
    if type(value) is int:
        return f"i{value}"
    if type(value) is float:
        return value.hex()
    if type(value) is str:
        return json.dumps(value)
    return None


def _public_key(value: Any) -> str | None:
    """A stable text for a public argument, or ``None`` (the cache is bypassed): numbers and
    strings, and spaces of a registered type keyed by their fields."""
    from .manifolds import REGISTRY

    if type(value) in REGISTRY.values() and dataclasses.is_dataclass(value):
        parts = [_exact(getattr(value, f.name)) for f in dataclasses.fields(value)]
        if any(p is None for p in parts):
            return None
        return f"{type(value).__qualname__}({', '.join(str(p) for p in parts)})"
    return _exact(value)


def _encode(value: Any) -> Any:
    if type(value) is float:
        return {"f": value.hex()}
    if type(value) is tuple:
        return [_encode(v) for v in value]
    if value is None or type(value) in (bool, int, str):
        return value
    raise TypeError(f"a disk-cached value must be built of floats, ints, strings and tuples, not {type(value).__name__}")


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        return float.fromhex(value["f"])
    if isinstance(value, list):
        return tuple(_decode(v) for v in value)
    if value is None or type(value) in (bool, int, str):
        return value
    raise ValueError("not a stored value")


def _private(fd: int, kind: int) -> bool:
    """The object open at ``fd`` is of ``kind`` (``stat.S_IFDIR``/``S_IFREG``), the user's, and
    writable by no one else."""
    info = os.fstat(fd)
    return (stat.S_IFMT(info.st_mode) == kind and info.st_uid == os.getuid()
            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


@contextmanager
def _directory(levels: list[str], base: Path, create: bool) -> Iterator[int]:
    """The cache's leaf directory, opened level by level (no symbolic links followed after the
    base's own path), each level checked private; missing levels made 0700 when ``create``."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    if create:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in levels:
            if not _private(fd, stat.S_IFDIR):
                raise PermissionError("not a private directory")
            if create:
                try:
                    os.mkdir(name, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
            child = os.open(name, flags, dir_fd=fd)
            os.close(fd)
            fd = child
        if not _private(fd, stat.S_IFDIR):
            raise PermissionError("not a private directory")
        yield fd
    finally:
        os.close(fd)


def _read(root: Path, name: str, file: str, key: str, valid: Callable[[Any], bool]) -> tuple[bool, Any]:
    try:
        with _directory([root.name, name], root.parent, create=False) as leaf:
            fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=leaf)  # a FIFO never blocks
            with os.fdopen(fd, "r", encoding="utf-8") as handle:
                if not _private(handle.fileno(), stat.S_IFREG):
                    return False, None
                stored = json.loads(handle.read())
        if stored.get("key") != key:
            return False, None
        value = _decode(stored["value"])
        return (True, value) if valid(value) else (False, None)
    except (OSError, ValueError, LookupError, TypeError, AttributeError, RecursionError):  # a missing, foreign or
        # damaged file: compute instead
        return False, None


def _write(root: Path, name: str, file: str, key: str, encoded: Any) -> None:
    try:
        with _directory([root.name, name], root.parent, create=True) as leaf:
            temporary = f".tmp-{os.getpid()}-{file}"
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=leaf)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump({"key": key, "value": encoded}, out)
                os.replace(temporary, file, src_dir_fd=leaf, dst_dir_fd=leaf)
            except BaseException:
                os.unlink(temporary, dir_fd=leaf)
                raise
    except (OSError, ValueError, TypeError):  # a read-only disk, a foreign directory: the value is still returned
        pass


def disk_cached(name: str, valid: Callable[[Any], bool]) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Keep the results of a function of public parameters on disk (module docstring). The
    function must be deterministic and return floats, ints, strings, ``None`` or tuples of them;
    ``valid`` accepts a value of the form it returns (a file holding anything else is ignored);
    ``name`` names it in the cache (change it when the meaning of the result changes without a
    change of code). A computed value is returned as it would be read back."""
    def wrap(function: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(function)
        def cached(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            root = cache_directory()
            if root is None:
                return function(*args, **kwargs)
            parts = [("", _public_key(a)) for a in args] + [(f"{k}=", _public_key(v)) for k, v in sorted(kwargs.items())]
            if any(p is None for _, p in parts):
                return function(*args, **kwargs)
            key = f"{name}({', '.join(k + str(p) for k, p in parts)})"
            file = f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"
            found, value = _read(root, name, file, key, valid)
            if found:
                return value
            result = function(*args, **kwargs)
            try:
                encoded = _encode(result)
            except TypeError:
                return result
            _write(root, name, file, key, encoded)
            return _decode(encoded)

        return cached

    return wrap


def is_probability(value: Any) -> bool:
    """``valid`` for a probability: a float in ``[0, 1]``."""
    return type(value) is float and 0.0 <= value <= 1.0


def is_floats(count: int) -> Callable[[Any], bool]:
    """``valid`` for a tuple of ``count`` floats."""
    return lambda value: type(value) is tuple and len(value) == count and all(type(v) is float for v in value)
