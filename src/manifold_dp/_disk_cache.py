"""A cache on disk for public set-up values, so that a new process does not redo them.

Some values a release needs are functions of public parameters only and cost far more than the
release itself the first time: the Riemannian Gaussian's calibration (σ by bisection over a
privacy-profile quadrature, μ-GDP on a grid of ε: about 0.3 s on SPD-AI(10)), the exact SPD
samplers' acceptance pilots and the certified optimisation schedules (``radius="auto"`` needs them
at every candidate radius). ``disk_cached`` keeps them in files, keyed by the function, its
arguments and a digest of the package's source code, numpy's and scipy's versions, so a changed
library never reads another's values. Values are stored exactly (floats as ``float.hex``): a
process that reads them releases the same bits as one that computed them.

No record, and nothing computed from records, is ever stored: the arguments are public parameters
(``Manifold`` instances of a registered type, numbers, strings); any other argument bypasses the
cache. What the files hold bounds the privacy of later releases, so they are trusted as the
installed code is (docs/security.md): the directory is created private to the user (mode 0700),
and a file is read only if the user owns it and no one else may write it. Any problem reading or
writing (read-only disk, a damaged file, a race between processes) falls back to computing.

``MANIFOLD_DP_CACHE``: unset — ``$XDG_CACHE_HOME/manifold_dp`` (or ``~/.cache/manifold_dp``);
a path — that directory; ``0``, ``off``, ``false``, ``no`` or empty — no disk cache.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

__all__ = ["CACHE_ENV", "cache_directory", "disk_cached"]

CACHE_ENV = "MANIFOLD_DP_CACHE"
_OFF = ("", "0", "off", "false", "no")
_P = ParamSpec("_P")
_R = TypeVar("_R")


@functools.cache
def _code_digest() -> str:
    """A digest of every source file of the package and of numpy's and scipy's versions."""
    import numpy
    import scipy

    root = Path(__file__).resolve().parent
    h = hashlib.sha256(f"numpy {numpy.__version__} scipy {scipy.__version__}".encode())
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:24]


def cache_directory() -> Path | None:
    """Where set-up values are kept (``None``: the disk cache is off), read from the environment
    at each call."""
    setting = os.environ.get(CACHE_ENV)
    if setting is not None and setting.strip().lower() in _OFF:
        return None
    if setting:
        base = Path(setting)
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "manifold_dp"
    return base / _code_digest()


def _public_key(value: Any) -> str | None:
    """A stable text for a public argument, or ``None`` for anything else (the cache is bypassed)."""
    from .manifolds import REGISTRY

    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return f"i{value}"
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, str):
        return json.dumps(value)
    if type(value) in REGISTRY.values():
        return f"{type(value).__qualname__}:{value!r}"
    return None


def _encode(value: Any) -> Any:
    if isinstance(value, float):
        return {"f": value.hex()}
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    raise TypeError(f"a disk-cached value must be built of floats, ints, strings and tuples, not {type(value).__name__}")


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        return float.fromhex(value["f"])
    if isinstance(value, list):
        return tuple(_decode(v) for v in value)
    return value


def _trusted(path: Path) -> bool:
    """Owned by this user and writable by no one else (POSIX); elsewhere, a regular file."""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        return False
    if os.name != "posix":
        return True
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _read(path: Path, key: str) -> tuple[bool, Any]:
    try:
        if not _trusted(path):
            return False, None
        stored = json.loads(path.read_text(encoding="utf-8"))
        if stored.get("key") != key:
            return False, None
        return True, _decode(stored["value"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False, None


def _write(path: Path, key: str, value: Any) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump({"key": key, "value": _encode(value)}, out)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except (OSError, TypeError):
        pass


def disk_cached(name: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Keep the results of a function of public parameters on disk (module docstring). The
    function must be deterministic and return floats, ints, strings, ``None`` or tuples of them;
    ``name`` names it in the cache (change it when the meaning of the result changes without a
    change of code)."""
    def wrap(function: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(function)
        def cached(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            directory = cache_directory()
            parts = [_public_key(a) for a in args] + [f"{k}={_public_key(v)}" if _public_key(v) is not None else None
                                                      for k, v in sorted(kwargs.items())]
            if directory is None or any(p is None for p in parts):
                return function(*args, **kwargs)
            key = f"{name}({', '.join(str(p) for p in parts)})"
            path = directory / name / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"
            found, value = _read(path, key)
            if found:
                return value
            result = function(*args, **kwargs)
            _write(path, key, result)
            return result

        return cached

    return wrap
