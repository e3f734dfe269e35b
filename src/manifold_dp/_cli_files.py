"""Files for the ``manifold-dp`` command line: records read from ``.npy``/``.csv``/``.json``
and checked against the manifold's layouts, the ``--center`` argument, and the ``--output`` path
checked before any work and written whole or not at all. Messages give positions, shapes and
types, never values from the files."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from .manifolds import REGISTRY, Sphere
from .manifolds.base import POINT_ATOL, Manifold

__all__ = ["CliError", "CliNote", "load_records", "build_manifold", "size_option", "parse_center", "check_output_path",
           "write_atomically", "LAYOUTS", "INPUTS", "expand_triangle", "latlon_to_unit", "unit_to_latlon"]

Array = NDArray[np.float64]
RecordReader = Callable[[Array], Array]  # rows of numbers as a file holds them -> records in a manifold's layout
DATA_FORMATS = (".npy", ".csv", ".json")
# The option that sets a manifold's size, by the first field of its class (``Sphere.dim``, ...).
SIZE_OPTIONS = {"dim": "--dim", "k": "--k", "k_landmarks": "--landmarks"}
LAYOUTS = ("full", "triu", "tril")  # how a file lays out one SPD record: k*k numbers, or one triangle's k(k+1)/2
INPUTS = ("records", "latlon")  # records as points of the manifold, or (latitude, longitude) in degrees on S²
CSV_DELIMITERS = {";": "semicolons", "\t": "tabs"}
# A typed sphere centre this far (relative) off the radius is normalised, with a note; farther off, refused
# (the centre is public: a rounded unit vector is the user's intent, not data).
SPHERE_CENTER_TOLERANCE = 1e-2


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


class CliNote(UserWarning):
    """A public note on how the command read its arguments (e.g. a normalised ``--center``):
    printed on stderr as ``manifold-dp: note: ...`` after a successful run."""


def load_records(path: str | os.PathLike[str]) -> Array:
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
    except Exception as err:  # noqa: BLE001 -- the parser's own message may quote file contents: do not repeat it
        raise CliError(_unreadable(path, suffix, err)) from None
    if not isinstance(data, np.ndarray) or data.dtype.kind not in "fiu" or data.ndim < 2 or data.shape[0] == 0:
        raise CliError(f"{path.name} must hold a non-empty numeric array with one record per row")
    return data.astype(float)


def _read_array(path: Path, suffix: str) -> object:
    if suffix == ".npy":
        return np.load(path, allow_pickle=False)  # an .npz archive renamed .npy comes back as NpzFile
    if suffix == ".csv":  # utf-8-sig: spreadsheets write a byte-order mark before the first cell
        try:
            return np.loadtxt(path, delimiter=",", ndmin=2, dtype=float, encoding="utf-8-sig")
        except ValueError:
            width = _trailing_comma_width(path)
            if width is None:
                raise
            return np.loadtxt(path, delimiter=",", ndmin=2, dtype=float, encoding="utf-8-sig", usecols=range(width))
    obj = json.loads(path.read_text(encoding="utf-8"))
    return np.asarray(obj["records"] if isinstance(obj, dict) else obj, dtype=float)


def _trailing_comma_width(path: Path) -> int | None:
    """The width without the last column when every row ends with a comma (an empty last column, as
    some exports write), else ``None`` (the file's layout only)."""
    widths = set()
    with open(path, encoding="utf-8-sig", errors="replace") as f:
        for line in f:
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            if not text.endswith(","):
                return None
            widths.add(text.count(","))
    return widths.pop() if len(widths) == 1 else None


def _unreadable(path: Path, suffix: str, err: Exception) -> str:
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


def _csv_problem(path: Path) -> str | None:
    """The first line of a CSV file that is not a row of numbers, by position (numpy's own message
    quotes the offending text, and its row numbers skip blank and comment lines): an empty cell,
    a cell that is not a number, another separator, or a row of another width."""
    width = None
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                text = line.split("#", 1)[0].strip()
                if not text:
                    continue
                other = [name for sep, name in CSV_DELIMITERS.items() if sep in text]
                if "," not in text and other:
                    return f"line {lineno} is separated by {other[0]}, not commas"
                cells = text.split(",")
                for column, cell in enumerate(cells, 1):
                    if not cell.strip():
                        return f"line {lineno}, column {column} is empty"
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


def _layout(manifold: Manifold) -> tuple[int, ...]:
    """The array layout of one record in files: the first of the manifold's user layouts (Kendall:
    real landmarks ``(k, 2)``), else its point shape."""
    return tuple((tuple(manifold.user_point_shapes) or (tuple(manifold.point_shape),))[0])


def _record_layouts(manifold: Manifold) -> set[tuple[int, ...]]:
    """Record shapes accepted from files: flat rows, the point shape and the user layouts."""
    layout = _layout(manifold)
    return {(int(np.prod(layout)),), tuple(manifold.point_shape), *map(tuple, manifold.user_point_shapes)}


def size_option(name: str) -> str | None:
    """``--dim``, ``--k`` or ``--landmarks``: the option that sets the size of manifold ``name``
    (its first dataclass field); ``None`` for a space of one size (its first field, if any, is
    not a size: SO(3))."""
    fields = dataclasses.fields(REGISTRY[name])
    return SIZE_OPTIONS.get(fields[0].name) if fields else None


_ONE_DIMENSIONAL = {  # a width-2 file is rarely the circle or the hyperbolic line: say so before reading on
    "sphere": "{source} has records of 2 numbers, which --manifold sphere reads as the circle S^1 (unit vectors "
              "(cos t, sin t)); give {option} 1 to confirm, or --input latlon for latitudes and longitudes in degrees",
    "hyperbolic": "{source} has records of 2 numbers, which --manifold hyperbolic reads as the line H^1 (hyperboloid "
                  "coordinates x0 >= 1); give {option} 1 to confirm. H^D takes D+1 numbers per record: from Poincare-ball "
                  "coordinates y, x = ((1 + |y|^2), 2y) / (1 - |y|^2)",
}


def build_manifold(name: str, data: Array, sphere_radius: float = 1.0, size: int | None = None,
                   source: str = "the file") -> tuple[Manifold, Array]:
    """The manifold named ``name`` (``manifolds.REGISTRY``), of the given ``size`` or, without
    one, of the size read off the data's record width; and the records in its layout. Refuses
    records whose width or shape is not a layout of that manifold (messages give shapes, never
    values)."""
    if name not in REGISTRY:
        raise CliError(f"unknown manifold {name!r}")
    cls: Any = REGISTRY[name]  # each class has from_width (not part of the Manifold protocol)
    record_shape = tuple(data.shape[1:])
    width = int(np.prod(record_shape))
    options = {"radius": sphere_radius} if name == "sphere" else {}
    if size is None and name in ("sphere", "hyperbolic") and width == 2:  # the file's shape only
        raise CliError(_ONE_DIMENSIONAL[name].format(source=source, option=size_option(name)))
    try:
        manifold = cls.from_width(width, **options) if size is None else cls(size, **options)
    except ValueError as err:
        transposed = size is None and data.ndim == 2 and _fits(name, (data.shape[0],))
        raise CliError(f"{err}{' (is the file transposed?)' if transposed else ''}{_triangle_hint(name, width)}") from None
    expected = int(np.prod(_layout(manifold)))
    if width != expected:
        transposed = data.ndim == 2 and data.shape[0] == expected
        raise CliError(f"--manifold {name} {size_option(name)} {size} expects records of {expected} numbers; "
                       f"{source} has records of {width} numbers{' (is the file transposed?)' if transposed else ''}"
                       f"{_triangle_hint(name, width)}")
    if record_shape not in _record_layouts(manifold):
        fits = [other for other in REGISTRY if other != name and _fits(other, record_shape)]
        raise CliError(f"{source} holds records of shape {record_shape}, not a layout of {name} points "
                       f"({' or '.join(map(str, sorted(_record_layouts(manifold))))})"
                       f"{'; they fit --manifold ' + ' or '.join(fits) if fits else ''}")
    return manifold, data.reshape((data.shape[0],) + _layout(manifold))


SPD_NAMES = ("spd-ai", "spd-le")


def _triangle_hint(name: str, width: int) -> str:
    """For SPD records of ``k(k+1)/2`` numbers (a triangle of a ``k × k`` matrix): the option that
    reads them (the file's shape only)."""
    k = int((math.isqrt(8 * width + 1) - 1) // 2)
    if name not in SPD_NAMES or k < 3 or k * (k + 1) // 2 != width or math.isqrt(width) ** 2 == width:
        return ""  # not a triangle, or also a full square matrix (36 = 6·6 = 8·9/2): no guess
    return f"; {width} = {k}·{k + 1}/2 numbers is a triangle of a {k} × {k} matrix: give --layout triu or --layout tril"


def _fits(name: str, record_shape: tuple[int, ...]) -> bool:
    """Whether records of ``record_shape`` are a layout of manifold ``name`` (for a hint)."""
    try:
        cls: Any = REGISTRY[name]
        return record_shape in _record_layouts(cls.from_width(int(np.prod(record_shape))))
    except ValueError:
        return False


def parse_center(text: str, manifold: Manifold, reader: RecordReader | None = None,
                 reader_width: int | None = None) -> Array | str:
    """``auto`` (a private ball, ``center="auto"``: passed through as the string), ``origin``
    (north pole, identity, e0, regular polygon, zero) or a file / comma list of
    numbers: a point in the manifold's layout or, with ``reader`` (``--layout``, ``--input``), one
    record as the file holds it (``reader_width`` numbers). On the sphere a typed direction a little
    off the radius (rounded digits) is normalised with a ``CliNote``; far off, refused."""
    if text == "auto":
        return "auto"
    if text == "origin":
        return np.asarray(manifold.origin)
    values = _center_values(text)
    layout = _layout(manifold)
    size = int(np.prod(layout))
    if reader is not None and values.size == reader_width and values.size != size:
        values = reader(values[None, :])[0].ravel()
    if values.size != size:
        also = f" (or {reader_width} as the file's records)" if reader is not None and reader_width else ""
        raise CliError(f"--center must have {size} numbers{also} for {manifold!r}, got {values.size}")
    return _onto_sphere(np.asarray(manifold.as_points(values.reshape(layout))), manifold)


def _onto_sphere(center: Array, manifold: Manifold) -> Array:
    """A sphere centre within ``SPHERE_CENTER_TOLERANCE`` (relative) of the radius, normalised
    with a ``CliNote``; the centre is public, so its norm may be quoted."""
    if type(manifold) is not REGISTRY["sphere"] or not np.all(np.isfinite(center)):
        return center
    norm, radius = float(np.linalg.norm(center)), float(cast(Sphere, manifold).radius)
    off = abs(norm / radius - 1.0)
    if off <= POINT_ATOL:
        return center
    if off > SPHERE_CENTER_TOLERANCE:
        raise CliError(f"--center is not on the sphere of radius {radius:g}: its norm is {norm:.6g}, {off:.2g} (relative) "
                       f"off; give a unit vector{' times --sphere-radius' if radius != 1.0 else ''} (one within "
                       f"{SPHERE_CENTER_TOLERANCE:g} is normalised)")
    warnings.warn(f"--center was normalised onto the sphere: its norm {norm:.8g} is {off:.2g} (relative) off the "
                  f"radius {radius:g}", CliNote, stacklevel=2)
    return center * (radius / norm)


def _triangle_size(width: int) -> int | None:
    """``k`` with ``k(k+1)/2 = width``, or ``None``."""
    k = (math.isqrt(8 * width + 1) - 1) // 2 if width > 0 else 0
    return k if k > 0 and k * (k + 1) // 2 == width else None


def expand_triangle(data: Array, layout: str, size: int | None = None, source: str = "the file") -> Array:
    """SPD records stored as one triangle, ``k(k+1)/2`` numbers a row, as symmetric ``(n, k, k)``
    matrices. ``"triu"``: the upper triangle row by row (``X[numpy.triu_indices(k)]``: X11, X12, …,
    X1k, X22, …); ``"tril"``: the lower triangle row by row (``X[numpy.tril_indices(k)]``: X11, X21,
    X22, X31, …). The values are taken as they are (no √2 scaling of off-diagonal or diagonal
    entries). ``size`` is ``--k``; without it ``k`` is read off the width."""
    if layout not in LAYOUTS[1:]:
        raise CliError(f"--layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    if data.ndim != 2:
        raise CliError(f"--layout {layout} needs one record per row; {source} holds an array of {data.ndim} axes")
    width = int(data.shape[1])
    k = _triangle_size(width) if size is None else size
    if k is None or k * (k + 1) // 2 != width:
        wanted = f"{size * (size + 1) // 2} numbers (--k {size})" if size is not None else "k(k+1)/2 numbers"
        turned = _triangle_size(int(data.shape[0])) if size is None else size * (size + 1) // 2 == data.shape[0]
        raise CliError(f"--layout {layout} expects records of {wanted}; {source} has records of {width} numbers"
                       f"{' (is the file transposed?)' if turned else ''}")
    rows, cols = np.triu_indices(k) if layout == "triu" else np.tril_indices(k)
    out = np.empty((data.shape[0], k, k))
    out[:, rows, cols] = data
    out[:, cols, rows] = data
    return out


def latlon_to_unit(data: Array, source: str = "the file") -> Array:
    """``(latitude, longitude)`` rows in degrees as unit vectors of S² ``(cos φ cos λ, cos φ sin λ,
    sin φ)`` (the north pole, latitude 90, is ``(0, 0, 1)``, the sphere's ``origin``). A latitude
    outside [−90, 90] is not a position: that row becomes the zero vector, a record that is not a
    point of the sphere (replaced by the centre, or refused with --strict, and counted as such);
    a row with a non-finite number stays non-finite (counted as such)."""
    if data.ndim != 2 or data.shape[1] != 2:
        turned = data.ndim == 2 and data.shape[0] == 2
        raise CliError(f"--input latlon expects records of 2 numbers (latitude, longitude in degrees); {source} has "
                       f"records of shape {tuple(data.shape[1:])}{' (is the file transposed?)' if turned else ''}")
    lat, lon = np.radians(data[:, 0]), np.radians(data[:, 1])
    with np.errstate(invalid="ignore"):
        out = np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=-1)
        out[(np.abs(data[:, 0]) > 90.0) & np.isfinite(data).all(axis=1)] = 0.0
    return out


def unit_to_latlon(points: Array) -> Array:
    """Points of S² (any radius) as ``(latitude, longitude)`` in degrees, longitude in (−180, 180]."""
    x, y, z = np.moveaxis(np.asarray(points, dtype=float), -1, 0)
    return np.stack([np.degrees(np.arctan2(z, np.hypot(x, y))), np.degrees(np.arctan2(y, x))], axis=-1)


def _center_values(text: str) -> Array:
    """The numbers of ``--center`` as a flat float array (the centre is public, but its file may
    not be: the parser's messages are not repeated)."""
    if text.lower().endswith(".npy"):
        if not Path(text).is_file():
            raise CliError(f"--center file not found: {text}")
        try:
            values = np.load(text, allow_pickle=False)
        except Exception:  # noqa: BLE001 -- any unreadable file is reported as such below, without its contents
            values = None
    else:
        try:
            values = np.array([float(v) for v in text.split(",")])
        except ValueError:
            values = None
    if not isinstance(values, np.ndarray) or values.dtype.kind not in "fiu":
        raise CliError("--center must be 'origin', a comma-separated list of numbers or a .npy file of numbers")
    return values.astype(float).ravel()


def check_output_path(text: str) -> Path:
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


def write_atomically(path: Path, text: str) -> None:
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


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
