"""The ``manifold-dp`` command: ``release`` a private Fréchet mean from a file, ``audit`` the
mechanisms, ``reproduce`` the papers' experiments. Errors print one line on stderr and exit with
status 2; messages never quote the data."""

import argparse
import contextlib
import importlib.util
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

from . import __version__
from .manifolds import REGISTRY
from .privacy.release import MECHANISMS, private_frechet_mean

MANIFOLD_NAMES = tuple(REGISTRY)
DATA_FORMATS = (".npy", ".csv", ".json")
EXPERIMENT_EXTRAS = ("matplotlib", "sklearn", "ktch")  # import names of the [experiments] extra
EXTRAS_HINT = 'pip install "manifold_dp[experiments]"'
MIN_AUDIT_SAMPLES = 100
# Errors the library raises on bad parameters or numerical failure; their messages quote
# parameters only, never data (SPEC / STYLE §6), so they are printed as they are.
LIBRARY_ERRORS = (ValueError, TypeError, RuntimeError, OverflowError, MemoryError, OSError)


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


def build_manifold(name, data, sphere_radius=1.0):
    """The manifold named ``name`` (``manifolds.REGISTRY``) with its size read off the data's
    record width."""
    if name not in REGISTRY:
        raise CliError(f"unknown manifold {name!r}")
    n, width = data.shape[0], int(np.prod(data.shape[1:]))
    options = {"radius": sphere_radius} if name == "sphere" else {}
    try:
        manifold = REGISTRY[name].from_width(width, **options)
    except ValueError as err:
        raise CliError(str(err)) from None
    return manifold, data.reshape((n,) + _layout(manifold))


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


def cmd_release(args):
    output = check_output_path(args.output) if args.output else None
    data = load_records(args.data)
    manifold, records = build_manifold(args.manifold, data, args.sphere_radius)
    center = parse_center(args.center, manifold)
    rel = private_frechet_mean(records, manifold, center=center, radius=args.radius, epsilon=args.epsilon,
                               delta=args.delta, mechanism=args.mechanism, bound=args.bound,
                               calibration=args.calibration, restrict=args.restrict, round_to=args.round_to, rng=args.seed)
    text = rel.to_json(value=manifold.to_user(rel.point), indent=2)
    if output is not None:
        write_atomically(output, text + "\n")
    else:
        print(text)


def cmd_reproduce(args):
    missing = [name for name in EXPERIMENT_EXTRAS if importlib.util.find_spec(name) is None]
    if missing:
        raise CliError(f"reproduce needs optional packages that are not installed ({', '.join(missing)}): {EXTRAS_HINT}")
    try:
        from .experiments import reproduce

        results, (md, page) = reproduce(args.experiments, profile=args.profile, out_dir=args.out, seed=args.seed)
    except ModuleNotFoundError as err:  # an optional dependency of one experiment
        raise CliError(f"reproduce needs the optional package {err.name or 'that is missing'}: {EXTRAS_HINT}") from None
    print(f"wrote {md} and {page} ({len(results)} experiments)")


def cmd_audit(args):
    from .audit import SCENARIOS, audit, power_check

    names = args.scenarios or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise CliError(f"unknown audit scenario {unknown[0]!r}; choose from {', '.join(SCENARIOS)}")
    print("| scenario | claimed ε (δ) | audited ε_LB | statistic | float bits alone ε_LB | under-noised (σ ×) ε_LB "
          "| pair distance / Δ | releases per dataset |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |", flush=True)
    failed, weak = [], []
    for i, name in enumerate(names):
        progress = _progress(name, 2 * args.samples)
        r = audit(name, samples=args.samples, rng=args.seed + i, progress=progress)
        power = power_check(name, samples=args.samples, rng=args.seed + 100 + i,
                            progress=progress and (lambda done, total: progress(args.samples + done, total)))
        if progress:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
        failed += [name] if not (r.passed() and r.epsilon_lb_bits <= r.epsilon) else []
        weak += [name] if power.passed() else []
        print(f"| {name} | {r.epsilon:g} ({r.delta:g}) | {r.epsilon_lb:.3f} | {r.statistic} | {r.epsilon_lb_bits:.3f} | "
              f"({power.noise_factor:.3g}) {power.epsilon_lb:.3f} | {r.slack:.3f} | {r.samples:,} |", flush=True)
    if weak:
        print(f"note: the under-noised mechanism was not caught for {', '.join(weak)} (too few releases for power)",
              file=sys.stderr)
    if failed:
        raise CliError(f"the audited ε_LB exceeded the claimed ε for {', '.join(failed)}")


def _progress(name, total):
    """A one-line progress report on stderr (a terminal only)."""
    if not sys.stderr.isatty():
        return None
    return lambda done, _: print(f"\raudit {name}: {done:,}/{total:,} releases", end="", file=sys.stderr, flush=True)


class _ArgumentParser(argparse.ArgumentParser):
    """argparse, with usage errors in the same one-line form as every other error."""

    def error(self, message):
        message = " ".join(str(message).split())
        self.exit(2, f"manifold-dp: error: {message} (see '{self.prog} --help')\n")


def _integer_at_least(minimum, why=""):
    """An argparse ``type=`` for integers ``>= minimum``: bad values fail before any output."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}{why}, got {text!r}")
        return value
    return parse


def _round_to(text):
    """``--round-to``: 'auto', 'none' or a number (the library checks the spacing)."""
    if text.strip().lower() in ("auto", "none"):
        return None if text.strip().lower() == "none" else "auto"
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be 'auto', 'none' or a grid spacing > 0, got {text!r}") from None


SEED = _integer_at_least(0)
AUDIT_SAMPLES = _integer_at_least(
    MIN_AUDIT_SAMPLES, " (the audit splits the releases into two halves, one to choose a threshold and one "
    "to bound epsilon, and needs enough releases beyond each threshold)")


def parser():
    p = _ArgumentParser(prog="manifold-dp", description="Differentially private Fréchet means on Riemannian manifolds.")
    p.add_argument("--version", action="version", version=f"manifold-dp {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("release", help="release a private Fréchet mean of the records in a file")
    r.add_argument("data", help=".npy, .csv (one record per row; matrices flattened) or .json")
    r.add_argument("--manifold", required=True, choices=MANIFOLD_NAMES)
    r.add_argument("--center", required=True, help="public centre of the data ball: 'origin', numbers 'a,b,c' or a .npy file")
    r.add_argument("--radius", required=True, type=float, help="public radius of the data ball (records outside are clipped)")
    r.add_argument("--epsilon", required=True, type=float)
    r.add_argument("--delta", type=float, default=None)
    r.add_argument("--mechanism", default="laplace", choices=MECHANISMS)
    r.add_argument("--bound", default="tight", choices=("tight", "paper"))
    r.add_argument("--calibration", default="analytic", choices=("analytic", "classical"))
    r.add_argument("--restrict", action="store_true", help="keep the Laplace output in the ball (σ = 2Δ/ε)")
    r.add_argument("--round-to", type=_round_to, default="auto",
                   help="snap the release to a public grid against float leaks: 'auto' (default), a spacing, "
                        "or 'none' (raw float64 output, whose low-order bits can leak the data)")
    r.add_argument("--sphere-radius", type=float, default=1.0)
    r.add_argument("--seed", type=SEED, default=None, help="reproducible noise (default: OS entropy)")
    r.add_argument("--output", help="write the JSON here instead of stdout")
    r.set_defaults(func=cmd_release)
    q = sub.add_parser("reproduce", help="run the papers' experiments and write figures and a report")
    q.add_argument("experiments", nargs="*", help="e.g. R21-F1ab R21-F1cd R21-F2 S22-F1 S22-F23 U23-F1 U23-F23 U23-F4 (default: all)")
    q.add_argument("--profile", default="quick", choices=("quick", "full"))
    q.add_argument("--out", default="results")
    q.add_argument("--seed", type=SEED, default=2024)
    q.set_defaults(func=cmd_reproduce)
    a = sub.add_parser("audit", help="empirical privacy audit: lower bounds on ε from neighbouring releases")
    a.add_argument("scenarios", nargs="*", help="scenario names (default: all); see manifold_dp.audit.SCENARIOS")
    a.add_argument("--samples", type=AUDIT_SAMPLES, default=1_000_000,
                   help=f"releases drawn from each of the two datasets (at least {MIN_AUDIT_SAMPLES})")
    a.add_argument("--seed", type=SEED, default=7)
    a.set_defaults(func=cmd_audit)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    # numpy's floating-point warnings are expected on extreme inputs (the library checks its
    # results); warnings the library issues become one line each, after a successful run.
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        try:
            args.func(args)
        except (CliError, *LIBRARY_ERRORS) as err:
            print(f"manifold-dp: error: {_one_line(err)}", file=sys.stderr)
            return 2
    for message in dict.fromkeys(" ".join(str(w.message).split()) for w in caught):
        print(f"manifold-dp: warning: {message}", file=sys.stderr)
    return 0


def _one_line(err):
    if isinstance(err, MemoryError):
        return "out of memory (try fewer records, or fewer --samples for an audit)"
    message = " ".join(str(err).split()) or type(err).__name__
    return f"numeric overflow: {message}" if isinstance(err, OverflowError) else message


if __name__ == "__main__":
    sys.exit(main())
