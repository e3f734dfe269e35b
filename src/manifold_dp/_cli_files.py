"""Files for the ``manifold-dp`` command line: records read from ``.npy``/``.csv``/``.json``
and checked against the manifold's layouts, the ``--center`` argument, and the ``--output`` path
checked before any work and written whole or not at all. Messages give positions, shapes and
types, never values from the files."""

import contextlib
import dataclasses
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from .manifolds import REGISTRY

__all__ = ["CliError", "load_records", "build_manifold", "size_option", "parse_center", "check_output_path",
           "write_atomically"]

DATA_FORMATS = (".npy", ".csv", ".json")
# The option that sets a manifold's size, by the first field of its class (``Sphere.dim``, ...).
SIZE_OPTIONS = {"dim": "--dim", "k": "--k", "k_landmarks": "--landmarks"}


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def load_records(path):
    """Records from ``.npy``, ``.csv`` (one record per row, matrices flattened) or ``.json``
    (a list of records, or ``{"records": [...]}``). Returns a float array ``(n, ...)``."""
    path = Path(path)
    if not path.is_file():
        raise CliError(f"data file not found: {path}")
    suffix = path.suffix.lower()
    if suffix not in DATA_FORMATS:
        hint = " (for .npz, save the array with numpy.save)" if suffix == ".npz" else ""
        raise CliError(f"unsupported data format {suffix or '(no extension)'!r}: use .npy, .csv or .json{hint}")
    try:
        data = _read_array(path, suffix)
    except Exception as err:  # the parser's own message may quote file contents: do not repeat it
        raise CliError(_unreadable(path, suffix, err)) from None
    if not isinstance(data, np.ndarray) or data.dtype.kind not in "fiu" or data.ndim < 2 or data.shape[0] == 0:
        raise CliError(f"{path.name} must hold a non-empty numeric array with one record per row")
    return data.astype(float)


def _read_array(path, suffix):
    if suffix == ".npy":
        return np.load(path, allow_pickle=False)  # an .npz archive renamed .npy comes back as NpzFile
    if suffix == ".csv":
        return np.loadtxt(path, delimiter=",", ndmin=2, dtype=float)
    obj = json.loads(path.read_text(encoding="utf-8"))
    return np.asarray(obj["records"] if isinstance(obj, dict) else obj, dtype=float)


def _unreadable(path, suffix, err):
    """Why ``path`` could not be read, from positions and types only, never from its contents."""
    message = f"could not read {path.name} as a {suffix[1:]} array of numbers"
    if isinstance(err, OverflowError):
        return f"{message}: a number is too large for float64"
    if isinstance(err, json.JSONDecodeError):
        return f"{message}: invalid JSON at line {err.lineno}, column {err.colno}"
    if suffix == ".csv":
        where = _csv_problem(path)
        return f"{message}{f': {where}' if where else ''} (remove any header row; one record per row, comma-separated)"
    return message


def _csv_problem(path):
    """The first line of a CSV file that is not a row of numbers, by position (numpy's own message
    quotes the offending text, and its row numbers skip blank and comment lines)."""
    width = None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                cells = line.split("#", 1)[0].strip()
                if not cells:
                    continue
                cells = cells.split(",")
                for column, cell in enumerate(cells, 1):
                    try:
                        float(cell)
                    except ValueError:
                        return f"line {lineno}, column {column} is not a number"
                if width is not None and len(cells) != width:
                    return f"line {lineno} has {len(cells)} values where earlier lines have {width}"
                width = len(cells)
    except OSError:
        return None
    return None


def _layout(manifold):
    """The array layout of one record in files: the first of the manifold's user layouts (Kendall:
    real landmarks ``(k, 2)``), else its point shape."""
    return tuple((tuple(manifold.user_point_shapes) or (tuple(manifold.point_shape),))[0])


def _record_layouts(manifold):
    """Record shapes accepted from files: flat rows, the point shape and the user layouts."""
    layout = _layout(manifold)
    return {(int(np.prod(layout)),), tuple(manifold.point_shape), *map(tuple, manifold.user_point_shapes)}


def size_option(name):
    """``--dim``, ``--k`` or ``--landmarks``: the option that sets the size of manifold ``name``."""
    return SIZE_OPTIONS[dataclasses.fields(REGISTRY[name])[0].name]


def build_manifold(name, data, sphere_radius=1.0, size=None, source="the file"):
    """The manifold named ``name`` (``manifolds.REGISTRY``), of the given ``size`` or, without
    one, of the size read off the data's record width; and the records in its layout. Refuses
    records whose width or shape is not a layout of that manifold (messages give shapes, never
    values)."""
    if name not in REGISTRY:
        raise CliError(f"unknown manifold {name!r}")
    cls, record_shape = REGISTRY[name], tuple(data.shape[1:])
    width = int(np.prod(record_shape))
    options = {"radius": sphere_radius} if name == "sphere" else {}
    try:
        manifold = cls.from_width(width, **options) if size is None else cls(size, **options)
    except ValueError as err:
        raise CliError(str(err)) from None
    expected = int(np.prod(_layout(manifold)))
    if width != expected:
        transposed = data.ndim == 2 and data.shape[0] == expected
        raise CliError(f"--manifold {name} {size_option(name)} {size} expects records of {expected} numbers; "
                       f"{source} has records of {width} numbers{' (is the file transposed?)' if transposed else ''}")
    if record_shape not in _record_layouts(manifold):
        fits = [other for other in REGISTRY if other != name and _fits(other, record_shape)]
        raise CliError(f"{source} holds records of shape {record_shape}, not a layout of {name} points "
                       f"({' or '.join(map(str, sorted(_record_layouts(manifold))))})"
                       f"{'; they fit --manifold ' + ' or '.join(fits) if fits else ''}")
    return manifold, data.reshape((data.shape[0],) + _layout(manifold))


def _fits(name, record_shape):
    """Whether records of ``record_shape`` are a layout of manifold ``name`` (for a hint)."""
    try:
        return record_shape in _record_layouts(REGISTRY[name].from_width(int(np.prod(record_shape))))
    except ValueError:
        return False


def parse_center(text, manifold):
    """``origin`` (north pole, identity, e0, regular polygon, zero) or a file / comma list of numbers."""
    if text == "origin":
        return manifold.origin
    values = _center_values(text)
    layout = _layout(manifold)
    size = int(np.prod(layout))
    if values.size != size:
        raise CliError(f"--center must have {size} numbers for {manifold!r}, got {values.size}")
    return manifold.as_points(values.reshape(layout))


def _center_values(text):
    """The numbers of ``--center`` as a flat float array (the centre is public, but its file may
    not be: the parser's messages are not repeated)."""
    if text.lower().endswith(".npy"):
        if not Path(text).is_file():
            raise CliError(f"--center file not found: {text}")
        try:
            values = np.load(text, allow_pickle=False)
        except Exception:
            values = None
    else:
        try:
            values = np.array([float(v) for v in text.split(",")])
        except ValueError:
            values = None
    if not isinstance(values, np.ndarray) or values.dtype.kind not in "fiu":
        raise CliError("--center must be 'origin', a comma-separated list of numbers or a .npy file of numbers")
    return values.astype(float).ravel()


def check_output_path(text):
    """The ``--output`` path, checked before anything is computed: its directory must exist and
    be writable, and it must not itself be a directory."""
    path = Path(text)
    parent = path.parent
    if path.is_dir():
        raise CliError(f"--output {text} is a directory; give a file name")
    if not parent.is_dir():
        raise CliError(f"--output directory does not exist: {parent}")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise CliError(f"--output is not writable: {text}")
    return path


def write_atomically(path, text):
    """Write ``text`` to ``path`` through a temporary file in the same directory, so that an
    error leaves no partial output (and an existing file untouched)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
