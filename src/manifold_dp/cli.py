"""The ``manifold-dp`` command: ``release`` a private Fréchet mean from a file, ``reproduce`` the
papers' experiments. Errors print one line on stderr and exit with status 2; messages never
quote the data."""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from .manifolds import Euclidean, Hyperbolic, KendallShape2D, Sphere, SPDAffineInvariant, SPDLogEuclidean
from .privacy.release import MECHANISMS, private_frechet_mean

MANIFOLD_NAMES = ("sphere", "spd-ai", "spd-le", "hyperbolic", "kendall2d", "euclidean")


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def load_records(path):
    """Records from ``.npy``, ``.csv`` (one record per row, matrices flattened) or ``.json``
    (a list of records, or ``{"records": [...]}``). Returns a float array ``(n, ...)``."""
    path = Path(path)
    if not path.is_file():
        raise CliError(f"data file not found: {path}")
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            data = np.load(path, allow_pickle=False)
        elif suffix == ".csv":
            data = np.loadtxt(path, delimiter=",", ndmin=2, dtype=float)
        elif suffix == ".json":
            obj = json.loads(path.read_text(encoding="utf-8"))
            data = np.asarray(obj["records"] if isinstance(obj, dict) else obj, dtype=float)
        else:
            raise CliError(f"unsupported data format {suffix!r}: use .npy, .csv or .json")
    except CliError:
        raise
    except Exception:  # the parser's own message may quote file contents: do not repeat it
        raise CliError(f"could not read {path.name} as a {suffix[1:]} array of numbers") from None
    if data.dtype.kind not in "fiu" or data.ndim < 2 or data.shape[0] == 0:
        raise CliError(f"{path.name} must hold a non-empty numeric array with one record per row")
    return data.astype(float)


def build_manifold(name, data, sphere_radius=1.0):
    """The manifold named ``name`` with its size read off the data's record shape."""
    n, rest = data.shape[0], data.shape[1:]
    width = int(np.prod(rest))
    if name == "sphere":
        return Sphere(width - 1, radius=sphere_radius), data.reshape(n, width)
    if name == "euclidean":
        return Euclidean(width), data.reshape(n, width)
    if name == "hyperbolic":
        return Hyperbolic(width - 1), data.reshape(n, width)
    if name in ("spd-ai", "spd-le"):
        k = int(round(np.sqrt(width)))
        if k * k != width:
            raise CliError(f"SPD records must have k*k entries, got {width}")
        return (SPDAffineInvariant(k) if name == "spd-ai" else SPDLogEuclidean(k)), data.reshape(n, k, k)
    if name == "kendall2d":
        if width % 2 or width < 6:
            raise CliError(f"kendall2d records must hold 2k >= 6 numbers (x1, y1, x2, y2, ...), got {width}")
        return KendallShape2D(width // 2), data.reshape(n, width // 2, 2)
    raise CliError(f"unknown manifold {name!r}")


def parse_center(text, manifold):
    """``origin`` (north pole, identity, e0, regular polygon, zero) or a file / comma list of numbers."""
    if text == "origin":
        return manifold.origin
    try:
        values = np.load(text) if text.endswith(".npy") else np.array([float(v) for v in text.split(",")])
    except Exception:
        raise CliError("--center must be 'origin', a comma-separated list of numbers or a .npy file") from None
    if isinstance(manifold, KendallShape2D):
        values = np.asarray(values, float).reshape(-1, 2)
        return manifold.preshape(values)
    size = int(np.prod(manifold.point_shape))
    if values.size != size:
        raise CliError(f"--center must have {size} numbers for {manifold!r}, got {values.size}")
    return np.asarray(values, float).reshape(manifold.point_shape)


def cmd_release(args):
    data = load_records(args.data)
    manifold, records = build_manifold(args.manifold, data, args.sphere_radius)
    center = parse_center(args.center, manifold)
    rel = private_frechet_mean(records, manifold, center=center, radius=args.radius, epsilon=args.epsilon,
                               delta=args.delta, mechanism=args.mechanism, bound=args.bound,
                               calibration=args.calibration, restrict=args.restrict, round_to=args.round_to, rng=args.seed)
    point = manifold.to_landmarks(rel.point) if isinstance(manifold, KendallShape2D) else rel.point
    out = {"point": np.asarray(point).tolist(), "certificate": rel.certificate}
    text = json.dumps(out, indent=2, default=float)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)


def cmd_reproduce(args):
    from .experiments import reproduce

    results, (md, page) = reproduce(args.experiments, profile=args.profile, out_dir=args.out, seed=args.seed)
    print(f"wrote {md} and {page} ({len(results)} experiments)")


def cmd_audit(args):
    from .audit import SCENARIOS, audit, power_check

    names = args.scenarios or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise CliError(f"unknown audit scenario {unknown[0]!r}; choose from {', '.join(SCENARIOS)}")
    print("| mechanism | claimed ε (δ) | audited ε_LB | under-noised ε_LB | pair distance / Δ | samples per dataset |")
    print("| --- | --- | --- | --- | --- | --- |")
    failed = False
    for i, name in enumerate(names):
        r = audit(name, samples=args.samples, rng=args.seed + i)
        power = power_check(name, samples=args.samples, rng=args.seed + 100 + i) if name.startswith("laplace") else None
        failed |= not r.passed() and "mcmc" not in name
        print(f"| {name} | {r.epsilon:g} ({r.delta:g}) | {r.epsilon_lb:.3f} | {'—' if power is None else f'{power.epsilon_lb:.3f}'} "
              f"| {r.slack:.3f} | {r.samples:,} |", flush=True)
    if failed:
        raise CliError("an exact mechanism's audited ε_LB exceeded its claimed ε")


def parser():
    p = argparse.ArgumentParser(prog="manifold-dp", description="Differentially private Fréchet means on Riemannian manifolds.")
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
    r.add_argument("--round-to", type=float, default=None, help="snap the release to a public grid (float-leak mitigation)")
    r.add_argument("--sphere-radius", type=float, default=1.0)
    r.add_argument("--seed", type=int, default=None, help="reproducible noise (default: OS entropy)")
    r.add_argument("--output", help="write the JSON here instead of stdout")
    r.set_defaults(func=cmd_release)
    q = sub.add_parser("reproduce", help="run the papers' experiments and write figures and a report")
    q.add_argument("experiments", nargs="*", help="e.g. R21-F1ab R21-F1cd R21-F2 S22-F1 S22-F23 U23-F1 U23-F23 U23-F4 (default: all)")
    q.add_argument("--profile", default="quick", choices=("quick", "full"))
    q.add_argument("--out", default="results")
    q.add_argument("--seed", type=int, default=2024)
    q.set_defaults(func=cmd_reproduce)
    a = sub.add_parser("audit", help="empirical privacy audit: lower bounds on ε from neighbouring releases")
    a.add_argument("scenarios", nargs="*", help="scenario names (default: all); see manifold_dp.audit.SCENARIOS")
    a.add_argument("--samples", type=int, default=1_000_000, help="releases drawn from each of the two datasets")
    a.add_argument("--seed", type=int, default=7)
    a.set_defaults(func=cmd_audit)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        args.func(args)
    except (CliError, ValueError, TypeError, OSError) as err:
        print(f"manifold-dp: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
