"""The ``manifold-dp`` command: ``release`` a private Fréchet mean from a file, list which
``mechanisms`` run on which manifold, ``audit`` the mechanisms, ``reproduce`` the papers'
experiments. Every error prints one line on stderr and exits with status 2 (130 when interrupted);
messages never quote the data."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import sys
import textwrap
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn, cast

import numpy as np

from . import __version__
from ._cli_files import (
    INPUTS,
    LAYOUTS,
    SIZE_OPTIONS,
    SPD_NAMES,
    CliError,
    CliNote,
    RecordReader,
    build_manifold,
    check_output_path,
    expand_triangle,
    latlon_to_unit,
    load_records,
    parse_center,
    size_option,
    unit_to_latlon,
    write_atomically,
)
from ._threads import blas_limited
from ._typing import Array
from ._validation import check_delta, check_epsilon, check_positive, check_radius
from .manifolds import REGISTRY
from .manifolds.base import Manifold
from .privacy.mechanism_specs import GAUSSIAN_MECHANISMS, MECHANISM_NAMES
from .privacy.mechanism_specs import MECHANISMS as MECHANISM_SPECS
from .privacy.planning import auto_ball_summary, format_plan, plan_table, steep_radius
from .privacy.radius_selection import AutoRadius
from .privacy.release import (
    STATISTICS,
    RecordsWarning,
    ReleaseWarning,
    release_statistic,
    validate_center,
)
from .privacy.tangent_pca import private_tangent_pca

__all__ = ["main", "parser", "mechanism_support", "mechanism_table", "radius_help", "CliError", "LIBRARY_ERRORS"]

MANIFOLD_NAMES = tuple(REGISTRY)
EXPERIMENT_EXTRAS = ("matplotlib", "sklearn", "ktch", "pyriemann")  # import names of the [experiments] extra
EXTRAS_HINT = 'pip install "manifold_dp[experiments]"'
MIN_AUDIT_SAMPLES = 100
MECHANISMS = MECHANISM_NAMES  # the registry's (privacy.mechanism_specs)
# the statistics of the registry that have a command-line name, and tangent PCA (a pipeline of two releases)
STATISTIC_BY_CLI_NAME = {s.cli_name: s for s in STATISTICS.values() if s.cli_name}
STATISTIC_CHOICES = (*STATISTIC_BY_CLI_NAME, "tangent-pca")
DELTA_MECHANISMS = GAUSSIAN_MECHANISMS  # (ε, δ)-DP: they need --delta
# Errors the library raises on bad parameters or numerical failure; their messages quote
# parameters only, never data (docs/security.md, STYLE §6), so they are printed as they are.
# Any other exception is reported by its type name alone: its message could quote data.
LIBRARY_ERRORS = (ValueError, TypeError, RuntimeError, OverflowError, MemoryError, OSError)
EXIT_ERROR, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 2, 130, 141  # 130, 141: as a shell reports SIGINT, SIGPIPE
_NUMBER = r"(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
# A value that starts with '-' and is a number or a comma list of numbers (--center -0.45,0.2,0.87) is a
# value, not an option: argparse's own rule takes a single negative number only.
NEGATIVE_VALUE = re.compile(rf"^-{_NUMBER}(?:\s*,\s*[-+]?{_NUMBER})*$")


def cmd_release(args: argparse.Namespace) -> None:
    size = _explicit_size(args)
    _check_record_options(args, size)
    _check_statistic_options(args)
    if args.radius is None and args.center.strip() != "auto":
        raise CliError("--radius is required with a given --center (a number, or 'auto'); only --center auto "
                       "chooses the radius privately by itself")
    if args.mechanism in GAUSSIAN_MECHANISMS and args.delta is None:
        raise CliError(f"--mechanism {args.mechanism} is (epsilon, delta)-DP: give --delta, a number in (0, 1) well "
                       "below 1/n (1e-6 is usual)")
    output = check_output_path(args.output) if args.output else None
    data = load_records(args.data)
    sphere_radius = 1.0 if args.sphere_radius is None else args.sphere_radius
    source = Path(args.data).name
    if args.layout != "full":
        data = expand_triangle(data, args.layout, size, source)
    elif args.input == "latlon":
        data = latlon_to_unit(data, source) * sphere_radius
    manifold, records = build_manifold(args.manifold, data, sphere_radius, size, source=source)
    center = parse_center(args.center, manifold, *_center_reader(args, manifold))
    radius = args.radius
    if radius == "auto":
        radius = AutoRadius(quantile=args.radius_quantile, budget=args.radius_budget)
    elif args.radius_quantile != AutoRadius.quantile or args.radius_budget != AutoRadius.budget:
        raise CliError("--radius-quantile and --radius-budget apply to --radius auto only")
    if args.statistic == "tangent-pca":
        text = _tangent_pca_text(args, records, manifold, center, radius)
    else:
        text = _release_text(args, records, manifold, center, radius)
    if output is not None:
        write_atomically(output, text + "\n")
    else:
        print(text)


def _release_text(args: argparse.Namespace, records: Any, manifold: Manifold, center: Any, radius: Any) -> str:
    """A statistic of the registry (``privacy.release.STATISTICS``, by its ``cli_name``) released
    through ``release_statistic``, as JSON or a summary."""
    statistic = STATISTIC_BY_CLI_NAME[args.statistic]
    rel = release_statistic(statistic, records, manifold, center=center, radius=radius, epsilon=args.epsilon,
                            delta=args.delta, mechanism=args.mechanism or statistic.mechanisms[0], bound=args.bound,
                            calibration=args.calibration, restrict=args.restrict, round_to=args.round_to,
                            strict=args.strict, rng=args.seed)
    point = np.ndim(rel.value) > 0  # a point of the manifold, or a number (the variance)
    value = manifold.to_user(rel.value) if point else float(rel.value)
    latlon = point and args.input == "latlon"
    shown = unit_to_latlon(cast(Array, value)) if latlon else value
    if args.format == "summary":
        return f"value{' (latitude, longitude)' if latlon else ''}: {json.dumps(np.asarray(shown).tolist())}\n" \
               f"{rel.summary()}"
    return rel.to_json(value=shown, indent=2)


def _tangent_pca_text(args: argparse.Namespace, records: Any, manifold: Manifold, center: Any, radius: Any) -> str:
    """A private tangent PCA (``private_tangent_pca``): the mean, the components at it (in the
    manifold's layout) and their variances, as JSON or a summary."""
    rel = private_tangent_pca(records, manifold, center=center, radius=radius, epsilon=args.epsilon, delta=args.delta,
                              n_components=args.components, mean_mechanism=args.mechanism or "auto",
                              calibration=args.calibration, strict=args.strict, rng=args.seed)
    mean = manifold.to_user(rel.mean)
    out = {"mean": _jsonable(unit_to_latlon(mean) if args.input == "latlon" else mean),
           "components": _jsonable(rel.components),
           "explained_variance": np.asarray(rel.explained_variance).tolist()}
    if args.format == "summary":
        return "\n".join(f"{key}: {json.dumps(value)}" for key, value in out.items()) + "\n" + rel.certificate.summary()
    return json.dumps({**out, "certificate": rel.certificate.to_dict()}, indent=2)


def _mechanism_list(names: Sequence[str]) -> str:
    return "every mechanism" if tuple(names) == tuple(MECHANISMS) else ", ".join(names)


def _jsonable(values: Any) -> Any:
    """An array as nested lists; a complex one (Kendall tangent vectors) as ``{"real", "imag"}``."""
    v = np.asarray(values)
    return {"real": v.real.tolist(), "imag": v.imag.tolist()} if np.iscomplexobj(v) else v.tolist()


def _check_statistic_options(args: argparse.Namespace) -> None:
    """Options that apply to some statistics only, refused elsewhere before reading the data."""
    statistic = args.statistic
    registered = STATISTIC_BY_CLI_NAME.get(statistic)  # None: tangent-pca, a pipeline of two releases
    for option, value in (("--radius-quantile", args.radius_quantile), ("--radius-budget", args.radius_budget)):
        if not 0.0 < value < 1.0:  # NaN too
            raise CliError(f"{option} must be a number in (0, 1), got {value!r}")
    if not (registered is not None and registered.private_ball) and args.center.strip() == "auto":
        raise CliError(f"--center auto (the private ball) is the mean's; for --statistic {statistic} release the "
                       "mean with --center auto first and pass its value as --center (that reuse is post-processing; "
                       "the two epsilons add up)")
    if not (registered is not None and registered.radius_auto) and args.radius == "auto":
        raise CliError(f"--radius auto does not apply to --statistic {statistic}: give a number")
    if (args.components is not None) != (statistic == "tangent-pca"):
        raise CliError("--components K is required by --statistic tangent-pca, and applies to it only")
    if statistic == "tangent-pca" and args.delta is None:
        raise CliError("--statistic tangent-pca is (epsilon, delta)-DP (its second moment is a Gaussian mechanism): "
                       "give --delta, a number in (0, 1) well below 1/n (1e-6 is usual)")
    options = (("--mechanism", args.mechanism, None), ("--delta", args.delta, None), ("--bound", args.bound, "tight"),
               ("--calibration", args.calibration, "analytic"), ("--restrict", args.restrict, False),
               ("--round-to", args.round_to, "auto"))
    if registered is None:
        used = ("--mechanism", "--delta", "--calibration")
    else:
        used = ("--round-to", *(f"--{o}" for o in registered.options),
                *(("--mechanism",) if len(registered.mechanisms) > 1 or registered.auto_mechanism else ()))
    given = [option for option, value, default in options if option not in used and value != default]
    if given:
        raise CliError(f"{', '.join(given)} does not apply to --statistic {statistic} (docs/statistics.md, "
                       "docs/pipelines.md)")


def _check_record_options(args: argparse.Namespace, size: int | None) -> None:
    """``--layout`` (SPD only) and ``--input latlon`` (S² only), refused elsewhere before reading."""
    if args.layout != "full" and args.manifold not in SPD_NAMES:
        raise CliError(f"--layout {args.layout} applies to --manifold {' or '.join(SPD_NAMES)} only, not {args.manifold}")
    if args.input == "latlon" and (args.manifold != "sphere" or size not in (None, 2)):
        raise CliError("--input latlon applies to --manifold sphere with --dim 2 (the 2-sphere) only, not "
                       f"{args.manifold}{'' if size is None else f' {size_option(args.manifold)} {size}'}")


def _center_reader(args: argparse.Namespace, manifold: Manifold) -> tuple[RecordReader | None, int | None]:
    """How ``--center`` may also be typed as the file's records are (a triangle, a latitude and
    longitude), and how many numbers that takes."""
    if args.layout != "full":
        k = int(manifold.point_shape[-1])
        return (lambda rows: expand_triangle(rows, args.layout, k, "--center")), k * (k + 1) // 2
    if args.input == "latlon":
        radius = float(getattr(manifold, "radius", 1.0))

        def latlon(rows: Array) -> Array:
            if not np.all(np.abs(rows[:, 0]) <= 90.0):  # the centre is public: its value may be quoted
                raise CliError(f"--center latitude must be in [-90, 90] degrees, got {float(rows[0, 0]):g}")
            return latlon_to_unit(rows, "--center") * radius

        return latlon, 2
    return None, None


def _explicit_size(args: argparse.Namespace) -> int | None:
    """The value of the manifold's own size option, or ``None``; refuses an option that belongs
    to another manifold (before anything is read)."""
    own = size_option(args.manifold)
    for option in SIZE_OPTIONS.values():
        if getattr(args, option[2:]) is not None and option != own:
            raise CliError(f"{option} does not apply to --manifold {args.manifold}; "
                           + (f"its size option is {own}" if own else "it has one size and no size option"))
    if args.sphere_radius is not None and args.manifold != "sphere":
        raise CliError(f"--sphere-radius applies to --manifold sphere only, not {args.manifold}")
    size: int | None = None if own is None else getattr(args, own[2:])
    return size


def mechanism_support(manifold: Manifold, mechanism: str) -> bool:
    """Whether ``mechanism`` runs on ``manifold``, read off its declared capabilities: the
    registry's rule (``privacy.mechanism_specs``), which ``privacy.release.check_public`` applies."""
    return MECHANISM_SPECS[mechanism].supports(manifold)


def example_manifold(name: str) -> Manifold:
    """The first example of manifold ``name`` (``REGISTRY``): the tables read its capabilities."""
    cls: Any = REGISTRY[name]  # each class has examples() (not part of the Manifold protocol)
    example: Manifold = cls.examples()[0]
    return example


def mechanism_table() -> str:
    """The text of ``manifold-dp mechanisms``: mechanism × manifold, read off the capabilities of
    one example of each manifold in ``REGISTRY``, then how each mechanism runs."""
    spaces = {name: example_manifold(name) for name in REGISTRY}
    header = ["mechanism", "guarantee", *spaces]
    rows = [[mechanism, "(ε, δ)-DP" if mechanism in DELTA_MECHANISMS else "ε-DP",
             *("yes" if mechanism_support(m, mechanism) else "-" for m in spaces.values())] for mechanism in MECHANISMS]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    table = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |"
             for row in [header, ["-" * w for w in widths], *rows]]
    return "\n".join(table + [""] + _mechanism_notes(spaces))


def _mechanism_notes(spaces: dict[str, Manifold]) -> list[str]:
    """One line per mechanism, its registry ``summary`` with the manifolds it runs on."""
    notes = []
    for name, spec in MECHANISM_SPECS.items():
        where = ", ".join(label for label, m in spaces.items() if spec.supports(m)) or "none"
        notes.append(f"{name}: {spec.summary.format(where=where)}")
    return notes + [
        "auto (--mechanism auto): the supported mechanism with the smallest expected noise distance at the public n, "
        "radius, epsilon and delta (the (ε, δ) ones only with --delta; with --center auto the whole private balls "
        "are compared), chosen before the data are read; manifold-dp plan prints the figures it compares."]


def cmd_mechanisms(args: argparse.Namespace) -> None:
    print(mechanism_table())


def cmd_reproduce(args: argparse.Namespace) -> None:
    missing = [name for name in EXPERIMENT_EXTRAS if importlib.util.find_spec(name) is None]
    if missing:
        raise CliError(f"reproduce needs optional packages that are not installed ({', '.join(missing)}): {EXTRAS_HINT}")
    try:
        from .experiments import reproduce

        with _BuiltinDataWarnings() as records:
            results, (md, page) = reproduce(args.experiments, profile=args.profile, out_dir=args.out, seed=args.seed,
                                            log=records.log)
    except ModuleNotFoundError as err:  # an optional dependency of one experiment
        raise CliError(f"reproduce needs the optional package {err.name or 'that is missing'}: {EXTRAS_HINT}") from None
    print(f"wrote {md} and {page} ({len(results)} experiments)")


class _BuiltinDataWarnings:
    """The experiments release means of the library's own built-in data sets, whose records are
    clipped or replaced by design, at ε and n swept down to where the noise dominates: their
    ``RecordsWarning``s and ``ReleaseWarning``s (one per release, dozens a run) are counted per
    experiment and reported on its ``done`` line, not printed one by one. Every other warning
    goes on to the command's own handling (one line each, after the run)."""

    SUMMARISED = ((RecordsWarning, "RecordsWarning", "about the built-in data's clipped or replaced records"),
                  (ReleaseWarning, "ReleaseWarning", "public, e.g. mostly noise at the smallest swept epsilon or n"))

    def __init__(self) -> None:
        self._context = warnings.catch_warnings(record=True)
        self._caught: list[warnings.WarningMessage] = []
        self._start = 0

    def __enter__(self) -> _BuiltinDataWarnings:
        caught = self._context.__enter__()  # the (empty, so falsy) list the warnings go to
        self._caught = caught if caught is not None else []
        warnings.simplefilter("always")
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._context.__exit__(kind, error, trace)
        for w in self._caught:  # to the enclosing handler (the command's _run)
            if not issubclass(w.category, (RecordsWarning, ReleaseWarning)):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)

    def log(self, message: str) -> None:
        """``reproduce``'s log: an experiment's ``done`` line carries its count."""
        recent, self._start = self._caught[self._start:], len(self._caught)
        counts = [(sum(issubclass(w.category, kind) for w in recent), name, why) for kind, name, why in self.SUMMARISED]
        shown = [f"{count} {name}{'s' if count != 1 else ''} ({why})" for count, name, why in counts if count]
        if shown and " done " in message:
            message += f"; expected, not shown: {', '.join(shown)}"
        print(message, flush=True)


def cmd_audit(args: argparse.Namespace) -> None:
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
                            progress=progress and (lambda done, total, tick=progress: tick(args.samples + done, total)))
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


def _progress(name: str, total: int) -> Callable[[int, int], None] | None:
    """A one-line progress report on stderr (a terminal only)."""
    if not stderr_is_terminal():
        return None
    return lambda done, _: print(f"\raudit {name}: {done:,}/{total:,} releases", end="", file=sys.stderr, flush=True)


def stderr_is_terminal() -> bool:
    """Whether progress may be drawn: stderr is a terminal (not a log file, a pipe or CI)."""
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


class _ArgumentParser(argparse.ArgumentParser):
    """argparse, with usage errors in the same one-line form as every other error, and values
    such as ``-0.45,0.2,0.87`` read as values (``NEGATIVE_VALUE``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_VALUE

    def error(self, message: str) -> NoReturn:
        message = " ".join(str(message).split())
        self.exit(EXIT_ERROR, f"manifold-dp: error: {message} (see '{self.prog} --help')\n")


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Each option's default after its help, unless the help states it in words ("default: OS
    entropy") or the option is required; descriptions and epilogs as written; a help text's own
    line breaks kept (each line wrapped on its own, never inside an option name)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        return text if action.required or "default" in text else super()._get_help_string(action) or text

    def _split_lines(self, text: str, width: int) -> list[str]:
        return [part for line in text.splitlines()
                for part in textwrap.wrap(" ".join(line.split()), width, break_on_hyphens=False)]


def _integer_at_least(minimum: int, why: str = "") -> Callable[[str], int]:
    """An argparse ``type=`` for integers ``>= minimum``: bad values fail before any output."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}{why}, got {text!r}")
        return value
    return parse


def _round_to(text: str) -> float | str | None:
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


def _radius(text: str) -> float | str:
    """``--radius``: a number, or 'auto' (a private radius; the library checks the number)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a radius > 0 or 'auto', got {text!r}") from None


def radius_help() -> str:
    """``--radius`` help: the units and the upper limit ``r*`` per manifold, read off the classes."""
    lines = ["public radius r of the data ball around --center, chosen without looking at the data (records "
             "outside it are clipped into it), or 'auto': a private radius, the ε-DP --radius-quantile of the "
             "records' distances from the centre, chosen with --radius-budget of ε (the certificate shows both "
             f"parts; docs/statistics.md). {RADIUS_GROWTH} Its units (C: the centre, X: a record) and upper limit per "
             "manifold:"]
    for name in REGISTRY:
        m = example_manifold(name)
        limit = f"r < {m.assumption_radius:.4g}" if np.isfinite(m.assumption_radius) else "no upper limit"
        limit += " × --sphere-radius" if name == "sphere" else ""
        limit += f", but distance(origin, C) + r ≤ {m.max_reach:g}" if np.isfinite(m.max_reach) else ""
        steep = steep_radius(m)
        limit += f"; the noise grows steeply past r ≈ {steep:.3g}" if steep is not None else ""
        limit += " × --sphere-radius" if name == "sphere" and steep is not None else ""
        lines.append(f"- {name}: {REGISTRY[name].radius_units}; {limit}")
    return "\n".join(lines)


# Measured with privacy.release.calibrate (tests/test_planning.py checks these figures).
RADIUS_GROWTH = (
    "Near r* (sphere, kendall2d) the noise scale grows steeply: the sensitivity factor L/h (1/cos(2r√κ) with the "
    "Rauch constant) diverges at r*. On S² with n = 100 and --epsilon 1 the Laplace scale is 0.010 at r = 0.39 "
    "(about r*/2), 0.028 at 0.6, 0.064 at 0.7, 0.16 at 0.75, 0.36 at 0.77 and 1.04 at 0.78 (the proven spread "
    "constant; 0.011, 0.033, 0.082, 0.21, 0.50 and 1.45 with --bound rauch). A release warns once L/h (Rauch) is "
    "over twice its value at r*/2 (past the radius given below); manifold-dp plan compares radii before any data are "
    "read.")


RELEASE_EPILOG = """\
Which mechanism runs on which manifold: manifold-dp mechanisms.
The release (JSON: value and certificate) goes to stdout or --output. Errors print one line on
stderr and exit with status 2; nothing is written and no data value is quoted."""


def parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(prog="manifold-dp", formatter_class=_HelpFormatter,
                        description="Differentially private Fréchet means on Riemannian manifolds.",
                        epilog="Exit status: 0 success, 2 error (one line on stderr), 130 interrupted,\n"
                               "141 stdout closed early (e.g. by head).")
    p.add_argument("--version", action="version", version=f"manifold-dp {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    r = sub.add_parser("release", help="release a private Fréchet mean (or variance, median, tangent PCA) of the "
                                       "records in a file",
                       description="Release an ε-DP (or (ε, δ)-DP) Fréchet mean of the records in a file "
                                   "(--statistic: or their variance, median or tangent PCA).",
                       epilog=RELEASE_EPILOG, formatter_class=_HelpFormatter)
    _release_arguments(r)
    r.set_defaults(func=cmd_release)
    t = sub.add_parser("mechanisms", help="which mechanism runs on which manifold (a table)",
                       description="Mechanism × manifold support, from the manifolds' declared capabilities.",
                       formatter_class=_HelpFormatter)
    t.set_defaults(func=cmd_mechanisms)
    q = sub.add_parser("reproduce", help="run the papers' experiments and write figures and a report",
                       description="Run the papers' experiments; write one PNG per figure, report.md and report.html.",
                       formatter_class=_HelpFormatter)
    q.add_argument("experiments", nargs="*", help="experiment IDs, e.g. R21-F1ab R21-F1cd R21-F2 S22-F1 S22-F23 U23-F1 "
                                                 "U23-F23 U23-F4 (default: all)")
    q.add_argument("--profile", default="quick", choices=("quick", "full"),
                   help="'quick': reduced sizes (minutes); 'full': the papers' sizes")
    q.add_argument("--out", default="results", help="directory for the figures and the report")
    q.add_argument("--seed", type=SEED, default=2024, help="seed of the experiments' random streams")
    q.set_defaults(func=cmd_reproduce)
    pl = sub.add_parser("plan", help="expected error of every mechanism, and the n or ε a target error needs (no data)",
                        description="For every mechanism the manifold supports: the expected distance of the noise "
                                    "from the mean at the public n, radius, epsilon and delta, and the n and ε for an "
                                    "expected error at most --target-error. Reads no data.",
                        epilog="The figures are the public formula behind --mechanism auto and the 'mostly noise' "
                               "warning (privacy.release.expected_noise_distance): a planning aid, not a guarantee.",
                        formatter_class=_HelpFormatter)
    _plan_arguments(pl)
    pl.set_defaults(func=cmd_plan)
    a = sub.add_parser("audit", help="empirical privacy audit: lower bounds on ε from neighbouring releases",
                       description="Empirical lower bounds on ε from worst-case neighbouring datasets (a table).",
                       formatter_class=_HelpFormatter)
    a.add_argument("scenarios", nargs="*", help="scenario names (default: all; see manifold_dp.audit.SCENARIOS)")
    a.add_argument("--samples", type=AUDIT_SAMPLES, default=1_000_000,
                   help=f"releases drawn from each of the two datasets (at least {MIN_AUDIT_SAMPLES})")
    a.add_argument("--seed", type=SEED, default=7, help="seed of the audit's releases")
    a.set_defaults(func=cmd_audit)
    return p


def _plan_arguments(pl: argparse.ArgumentParser) -> None:
    pl.add_argument("--manifold", required=True, choices=MANIFOLD_NAMES, help="the space the records would live on")
    pl.add_argument("--dim", type=_integer_at_least(1), metavar="D", help="sphere S^D, hyperbolic H^D, euclidean R^D")
    pl.add_argument("--k", type=_integer_at_least(1), metavar="K", help="spd-ai, spd-le: k×k matrices")
    pl.add_argument("--landmarks", type=_integer_at_least(3), metavar="K", help="kendall2d: k landmarks")
    pl.add_argument("--sphere-radius", type=float, help="radius R of the sphere, --manifold sphere only (default: 1)")
    pl.add_argument("--n", required=True, type=_integer_at_least(1), help="the number of records (public)")
    pl.add_argument("--epsilon", required=True, type=float, help="privacy loss ε > 0")
    pl.add_argument("--delta", type=float, help="δ in (0, 1): shows the (ε, δ) mechanisms too (default: none, pure ε-DP)")
    pl.add_argument("--radius", type=_radii, help="the public radius, or several, comma-separated (default: a few "
                    "fractions of r* where it is finite, else 0.5,1,2,4)")
    pl.add_argument("--target-error", type=float, metavar="T", help="the expected error to solve n and ε for "
                    "(default: a quarter of each radius)")
    pl.add_argument("--center", default="origin", help="the public centre, as for release (matters on hyperbolic and "
                    "SPD spaces: float64 reach); 'auto': the table at the origin, and what center='auto' is expected "
                    "to do (printed in every case, below the table)")
    pl.add_argument("--mechanism", action="append", choices=MECHANISMS, help="only this mechanism (repeat for more; "
                    "default: every one the manifold supports)")
    pl.add_argument("--bound", default="tight", choices=("tight", "rauch", "paper"), help="as for release")
    pl.add_argument("--calibration", default="analytic", choices=("analytic", "classical"), help="as for release")
    pl.add_argument("--restrict", action="store_true", help="as for release")


def _radii(text: str) -> tuple[float, ...]:
    """``--radius`` of ``plan``: one or more numbers, comma-separated (the library checks them)."""
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be radii > 0, comma-separated, got {text!r}") from None


def cmd_plan(args: argparse.Namespace) -> None:
    size = _explicit_size(args)
    own = size_option(args.manifold)
    if size is None and own is not None:
        raise CliError(f"plan reads no file: give the size of --manifold {args.manifold} with {own}")
    cls: Any = REGISTRY[args.manifold]
    sphere_radius = 1.0 if args.sphere_radius is None else args.sphere_radius
    manifold: Manifold = cls(size, radius=sphere_radius) if args.manifold == "sphere" else cls() if size is None \
        else cls(size)
    epsilon = check_epsilon(args.epsilon)
    delta = None if args.delta is None else check_delta(args.delta)
    radii = None if args.radius is None else tuple(check_radius(manifold, r) for r in args.radius)
    if args.target_error is not None:
        check_positive(args.target_error, "--target-error")
    private_ball = args.center == "auto"  # the table at the public origin; the private ball's lines below
    center = validate_center(manifold, manifold.origin if private_ball else parse_center(args.center, manifold))
    rows = plan_table(manifold, n=args.n, epsilon=epsilon, delta=delta, radii=radii, target_error=args.target_error,
                      center=center, mechanisms=args.mechanism, bound=args.bound, calibration=args.calibration,
                      restrict=args.restrict)
    print(format_plan(rows, manifold, n=args.n, epsilon=epsilon, delta=delta))
    print()
    if private_ball:
        print("--center auto: the table above is for a ball at the public origin; the private ball's centre and "
              "radius are chosen privately, as below")
    print(auto_ball_summary(manifold, n=args.n, epsilon=epsilon, delta=delta, bound=args.bound,
                            calibration=args.calibration, restrict=args.restrict))


def _release_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("data", help=".npy (records along axis 0, flat or in the manifold's layout), .csv (one record "
                               "per row, matrices flattened, no header) or .json (a list of records, or "
                               "{\"records\": [...]})")
    r.add_argument("--manifold", required=True, choices=MANIFOLD_NAMES, help="the space the records live on")
    from_file = " (default: read off the file's record width)"
    r.add_argument("--dim", type=_integer_at_least(1), metavar="D",
                   help="sphere S^D, hyperbolic H^D: records of D+1 numbers; euclidean R^D: D numbers" + from_file)
    r.add_argument("--k", type=_integer_at_least(1), metavar="K",
                   help="spd-ai, spd-le: k×k matrices, records of k*k numbers" + from_file)
    r.add_argument("--landmarks", type=_integer_at_least(3), metavar="K",
                   help="kendall2d: k landmarks, records x1,y1,...,xk,yk of 2k numbers" + from_file)
    r.add_argument("--center", required=True, help="public centre of the data ball, chosen without looking at the "
                   "data: 'auto' (a private ball: a rough private centre, then a private radius unless --radius is a "
                   "number; docs/private_ball.md), 'origin' (north pole, identity, e0, regular polygon, zero), "
                   "numbers 'a,b,c' (a leading minus "
                   "is fine: --center -0.45,0.2,0.87 or --center=-0.45,0.2,0.87; with --layout or --input also as the "
                   "file's records are written) or a .npy file. On the sphere a typed direction within 1%% of unit norm "
                   "is normalised (with a note)")
    r.add_argument("--layout", default="full", choices=LAYOUTS, help="spd-ai, spd-le: how a row holds one k×k "
                   "matrix: 'full' (k*k numbers), 'triu' (the upper triangle row by row, k(k+1)/2 numbers, as "
                   "X[numpy.triu_indices(k)]) or 'tril' (the lower triangle row by row, as X[numpy.tril_indices(k)]); "
                   "values as they are, no √2 scaling; the released value is the full k×k matrix")
    r.add_argument("--input", default="records", choices=INPUTS, help="'records': points of the manifold; 'latlon' "
                   "(sphere, 2-sphere only): latitude, longitude in degrees per row, converted to unit vectors (times "
                   "--sphere-radius; a latitude outside [-90, 90] is an invalid record); --center may be a latitude, "
                   "longitude too, and the released value is a latitude, longitude (longitude in (-180, 180]: 200 "
                   "comes back as -160)")
    r.add_argument("--radius", type=_radius, help=radius_help() + " Required unless --center auto (then 'auto').")
    r.add_argument("--radius-quantile", type=float, default=AutoRadius.quantile, metavar="Q",
                   help="--radius auto: the quantile q of the records' distances from the centre to aim for")
    r.add_argument("--radius-budget", type=float, default=AutoRadius.budget, metavar="F",
                   help="--radius auto: the fraction of --epsilon spent choosing the radius (the release gets the rest)")
    r.add_argument("--strict", action="store_true", help="refuse to release (exit 2, nothing charged) when any "
                   "record is non-finite or off the manifold, instead of replacing it by the centre; records "
                   "outside the ball are still clipped. A refusal depends on the data: for your own checks")
    r.add_argument("--epsilon", required=True, type=float, help="privacy loss ε > 0: smaller is more private, noisier")
    r.add_argument("--delta", type=float, help="δ in (0, 1) of (ε, δ)-DP, needed by "
                   f"{' and '.join(DELTA_MECHANISMS)} (default: none, pure ε-DP)")
    r.add_argument("--mechanism", default=None, choices=(*MECHANISMS, "auto"),
                   help="how the noise is added (default: laplace; for tangent-pca's mean, auto); which manifolds each "
                        "supports: manifold-dp mechanisms. 'auto': the "
                        "one with the smallest expected noise distance at the public n, radius, epsilon and delta "
                        "(--radius auto: at four radii of its public grid; --center auto: the whole private balls "
                        "compared, the one whose expected error is never far from the best at any spread of the data; "
                        "chosen before the data are read; the certificate's mechanism_selection lists the candidates; "
                        "manifold-dp plan shows the same figures)")
    r.add_argument("--bound", default="tight", choices=("tight", "rauch", "paper"), help="sensitivity bound on "
                   "positively curved spaces: 'tight' (the Rauch constant L = 2r√κ/sin(2r√κ), on the sphere the proven "
                   "spread constant where smaller), 'rauch' (the Rauch constant) or 'paper' (papers' L = 2 − h)")
    r.add_argument("--calibration", default="analytic", choices=("analytic", "classical"), help="σ of the Gaussian "
                   "mechanisms: 'analytic' (Balle & Wang 2018, any ε) or 'classical' (Dwork & Roth 2014, ε < 1)")
    r.add_argument("--restrict", action="store_true", help="keep the Laplace output inside the ball (σ = 2Δ/ε); "
                   "without it the unrestricted law (σ = Δ/ε) is used where it is integrable")
    r.add_argument("--round-to", type=_round_to, default="auto",
                   help="snap the release to a public grid against float leaks: 'auto', a spacing, "
                        "or 'none' (raw float64 output, whose low-order bits can leak the data)")
    r.add_argument("--sphere-radius", type=float, help="radius R of the sphere, --manifold sphere only (default: 1)")
    r.add_argument("--seed", type=SEED, help="seed for reproducible noise, for testing only: anyone who knows it can "
                   "subtract the noise (default: fresh OS entropy)")
    r.add_argument("--output", help="write the JSON to this file, whole or not at all (default: stdout)")
    r.add_argument("--statistic", default="mean", choices=STATISTIC_CHOICES,
                   help="what to release: " + ", ".join(f"'{name}' ({s.name}: {_mechanism_list(s.mechanisms)})"
                                                      for name, s in STATISTIC_BY_CLI_NAME.items())
                        + " or 'tangent-pca' (a private mean, then the principal directions of the records' tangent "
                        "vectors at it; needs --delta and --components). See docs/statistics.md and docs/pipelines.md")
    r.add_argument("--components", type=_integer_at_least(1), metavar="K",
                   help="--statistic tangent-pca: how many principal directions to release")
    r.add_argument("--format", default="json", choices=("json", "summary"),
                   help="'json': the value and the whole certificate; 'summary': the value on one line, then the "
                        "certificate's summary (what ran, its guarantee and theorem, every stage)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, 2 on any error, 130 when interrupted,
    141 when stdout is a pipe closed early, as in ``manifold-dp release ... | head``)."""
    try:
        args = parser().parse_args(argv)
        status = _run(args)
        sys.stdout.flush()  # a pipe closed early fails here, not at interpreter exit
        return status
    except SystemExit as stop:  # --help, --version and usage errors, already printed
        return stop.code if isinstance(stop.code, int) else EXIT_ERROR if stop.code else 0
    except KeyboardInterrupt:
        print("manifold-dp: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_BROKEN_PIPE


@blas_limited
def _run(args: argparse.Namespace) -> int:
    # numpy's floating-point warnings are expected on extreme inputs (the library checks its
    # results); warnings the library issues become one line each, after a successful run.
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        try:
            args.func(args)
        except BrokenPipeError:
            raise
        except (CliError, *LIBRARY_ERRORS) as err:
            return _error(_one_line(err))
        except Exception as err:  # noqa: BLE001 - its message could quote data: the type name only
            return _error(f"unexpected {type(err).__name__} (message withheld: it could quote the data); "
                          "please report it with the command that raised it")
    for line in dict.fromkeys(map(_warning_line, caught)):
        print(line, file=sys.stderr)
    return 0


def _warning_line(caught: warnings.WarningMessage) -> str:
    """One stderr line: a ``CliNote`` as a note, anything else as a warning."""
    kind = "note" if issubclass(caught.category, CliNote) else "warning"
    return f"manifold-dp: {kind}: {' '.join(str(caught.message).split())}"


def _error(message: str) -> int:
    print(f"manifold-dp: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def _discard_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush into the closed pipe
    does not print a traceback (stdout without a file descriptor, as under pytest: nothing to do)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _one_line(err: BaseException) -> str:
    if isinstance(err, MemoryError):
        return "out of memory (try fewer records, or fewer --samples for an audit)"
    message = " ".join(str(err).split()) or type(err).__name__
    return f"numeric overflow: {message}" if isinstance(err, OverflowError) else message


if __name__ == "__main__":
    sys.exit(main())
