"""center="auto" against an oracle ball, on data whose location the library is not told.

    python benchmarks/private_ball.py            # n ∈ {100, 300, 1000}, ε ∈ {0.5, 1, 2}, 6 spaces, 15 seeds
    python benchmarks/private_ball.py --quick    # n = 300, ε = 1, 5 seeds
    python benchmarks/private_ball.py --figure docs/private_ball_ratio.png   # and the figure
    python benchmarks/private_ball.py --real     # the data sets that ship offline (experiments/_offline_data.py):
                                                 # world cities, fMRI connectomes, the karate club's hyperbolic embedding;
                                                 # with ktch installed (the experiments extra), mosquito wings and
                                                 # trilobite cephala (Kendall shapes)

Synthetic data: a cluster (``random_point`` of the space, spread ``s``) around a centre drawn at a
fixed distance from the origin, in a random direction (S², S⁹⁹, SPD-AI(5), SPD-LE(16), H¹⁰, Kendall
shapes of 18 landmarks). Error: the geodesic distance from the release to the records' Fréchet
mean. ``auto``: ``center="auto", radius="auto"`` (the defaults). ``oracle``: the release at the
true cluster centre, with radius the 0.9-quantile of the records' distances to it, same total ε.
Both with ``mechanism="laplace"`` (pure ε) unless ``--mechanism`` says otherwise: a registry name (both
releases use it, at the same total ε and, for an (ε, δ) mechanism, the same total δ, ``--delta``,
default 1e-6) or ``auto``: both releases with ``mechanism="auto"`` and ``delta`` — what a data holder
gets: ``center="auto"`` compares the whole pipelines (``planning.choose_ball_mechanism``), the oracle
ball the releases at its own centre and radius (``planning.choose_mechanism``, every mechanism).
A space where a named mechanism does not run with ``center="auto"`` gets an n/a row.
The table gives the median error over seeds and their ratio, with a 95 % paired bootstrap interval
over the seeds (and, off the default, the mechanism used). Writes markdown to stdout (``--output FILE``
also writes it there). Uses every core (``--jobs``).

    python benchmarks/private_ball.py --mechanism auto --delta 1e-6 --n 300 1000 --eps 1
"""

import argparse
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np

SPACES = {  # name: (constructor, spread, distance of the cluster centre from the origin)
    "S²": ("Sphere(2)", 0.3, 2.0),
    "S⁹⁹": ("Sphere(99)", 0.3, 2.0),
    "SPD-AI(5)": ("SPDAffineInvariant(5)", 0.5, 2.5),
    "SPD-LE(16)": ("SPDLogEuclidean(16)", 0.5, 2.5),
    "H¹⁰": ("Hyperbolic(10)", 0.5, 2.5),
    "Kendall(18)": ("KendallShape2D(18)", 0.1, 1.0),
}


def _space(expr):
    import manifold_dp

    return eval(expr, vars(manifold_dp))  # a fixed table of constructors above


def one_case(args):
    """Median errors (auto, oracle), the plan's ratio, seconds and the mechanisms used for one
    (space, n, ε); the errors ``nan`` where no mechanism of ``--mechanism`` runs on the space."""
    name, n, eps, seeds, rounds, mechanism, delta = args
    from manifold_dp import private_frechet_mean
    from manifold_dp.privacy.mechanism_specs import GAUSSIAN_MECHANISMS
    from manifold_dp.privacy.planning import supports
    from manifold_dp.privacy.private_ball import UNSUPPORTED_MECHANISMS, AutoCenter, expected_auto_ball

    expr, spread, distance = SPACES[name]
    M = _space(expr)
    auto, oracle, spreads, used = [], [], [], []
    start = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in range(seeds):
            rng = np.random.default_rng([s, n])
            c = M.exp(M.origin, distance * M.random_unit_tangent(M.origin, rng=rng))
            X = M.random_point(c, spread, size=n, rng=rng)
            mean = _reference_mean(M, X, c)
            r90 = float(np.quantile(M.dist(c, X), 0.9))
            spreads.append(r90)
            key = [s, n, round(1000 * eps)]  # independent draws at every ε, and for each of the two releases
            if mechanism == "laplace":  # the calls as they always were: the pure-ε table stays the same
                options = {}
            elif mechanism == "auto":
                options = {"mechanism": "auto", "delta": delta}
            else:
                if not supports(M, mechanism) or mechanism in UNSUPPORTED_MECHANISMS:
                    return name, n, eps, float("nan"), float("nan"), float("nan"), time.time() - start, (), (np.nan,) * 2
                options = {"mechanism": mechanism, "delta": delta if mechanism in GAUSSIAN_MECHANISMS else None}
            a = private_frechet_mean(X, M, center=AutoCenter(rounds=rounds), radius="auto", epsilon=eps,
                                     rng=np.random.default_rng(key + [0]), **options)
            o = private_frechet_mean(X, M, center=c, radius=r90, epsilon=eps, rng=np.random.default_rng(key + [1]),
                                     **options)
            auto.append(float(M.dist(mean, a.point)))
            oracle.append(float(M.dist(mean, o.point)))
            used.append(f"{a.mechanism} / {o.mechanism}" if mechanism == "auto" else a.mechanism)
    spread = float(np.median(spreads))
    if mechanism == "auto":
        predicted = _predicted_auto(M, n, eps, delta, rounds, spread)
    else:
        gaussian = mechanism in GAUSSIAN_MECHANISMS
        plan = expected_auto_ball(M, n=n, epsilon=eps, delta=delta if gaussian else None, gaussian=gaussian)
        predicted = plan.ratio(spread)
    return (name, n, eps, float(np.median(auto)), float(np.median(oracle)), predicted, time.time() - start,
            tuple(dict.fromkeys(used)), ratio_interval(auto, oracle))


def ratio_interval(auto, oracle, level=0.95, resamples=4000):
    """A paired bootstrap interval of the ratio of median errors: the seeds resampled with
    replacement (the same seeds for both releases, which share each seed's records), fixed stream."""
    auto, oracle = np.asarray(auto), np.asarray(oracle)
    idx = np.random.default_rng(0).integers(0, len(auto), size=(resamples, len(auto)))
    ratios = np.median(auto[idx], axis=1) / np.median(oracle[idx], axis=1)
    return tuple(float(q) for q in np.quantile(ratios, [(1 - level) / 2, (1 + level) / 2]))


def _predicted_auto(M, n, eps, delta, rounds, spread):
    """``mechanism="auto"``'s expected error ratio before the data: its pipeline's ``a·√(P² + Q²s²)``
    (``planning.choose_ball_mechanism``), or where the radius is the public fallback its release's
    expected error there (``private_ball.expected_fallback``: its noise, and ``E1`` beyond the
    ball), over the oracle's ``mechanism="auto"``
    expected noise distance at radius ``s`` (the cluster's median 0.9-quantile spread)."""
    from manifold_dp.privacy.ball_first_stage import first_stage
    from manifold_dp.privacy.mechanism_specs import GAUSSIAN_MECHANISMS
    from manifold_dp.privacy.planning import choose_ball_mechanism, choose_mechanism, expected_error
    from manifold_dp.privacy.private_ball import AutoCenter, ball_grid, expected_auto_ball, expected_fallback

    auto = AutoCenter(rounds=rounds)
    chosen = choose_ball_mechanism(M, n=n, epsilon=eps, delta=delta, auto=auto).mechanism
    oracle = choose_mechanism(M, n=n, radius=min(spread, 0.99 * M.assumption_radius), epsilon=eps, delta=delta)
    best = min(c.expected_distance for c in oracle.candidates if c.ok)
    gaussian = chosen in GAUSSIAN_MECHANISMS
    fallback = expected_fallback(M, n=n, epsilon=eps, delta=delta if gaussian else None, mechanism=chosen, auto=auto)
    if fallback is not None:  # the public fallback radius: its release's noise, whatever the spread, or E1 beyond it
        return fallback.error / best
    grid = ball_grid(M, first_stage(M, 1, 1.0, None))
    r = float(np.sqrt(grid[0] * grid[-1]))
    P, Q = expected_auto_ball(M, n=n, epsilon=eps, delta=delta, gaussian=gaussian, auto=auto).limits
    a = expected_error(M, chosen, n=n, radius=r, epsilon=eps, delta=delta, full=False).expected_distance / r
    return a * float(np.hypot(P, Q * spread)) / best


def _reference_mean(M, X, start):
    """The records' Fréchet mean (Karcher iterations from the true centre; closed form on flat charts)."""
    x = np.asarray(start)
    for _ in range(100):
        v = np.mean(M.log(x, X), axis=0)
        x = M.exp(x, v)
        if float(M.norm(x, v)) < 1e-12:
            break
    return x


def _real_sets():
    """The offline data sets (experiments/_offline_data.py): name → (manifold, records)."""
    from manifold_dp import Hyperbolic, SPDAffineInvariant, SPDLogEuclidean, Sphere
    from manifold_dp.experiments import _offline_data as offline

    sets = {}
    cities, reason = offline.load_cities()
    if cities is not None:
        sets["world cities (S²)"] = (Sphere(2), cities[0])
    connectomes, reason2 = offline.load_connectomes()
    if connectomes is not None:
        sets["fMRI connectomes (SPD-AI(28))"] = (SPDAffineInvariant(28), connectomes)
        sets["fMRI connectomes (SPD-LE(28))"] = (SPDLogEuclidean(28), connectomes)
    karate, reason3 = offline.load_karate_embedding()
    if karate is not None:
        sets["karate club embedding (H²)"] = (Hyperbolic(2), karate)
    try:  # landmark shapes shipped by ktch (the experiments extra)
        from manifold_dp.experiments.s22_kendall import load

        for name in ("mosquito wings", "trilobite cephala"):
            M, coords = load(name)
            X = M.preshape(coords)
            sets[f"{name} (Kendall({M.k_landmarks}))"] = (M, X[np.all(np.isfinite(X), axis=1)])
    except ImportError:
        pass
    if not sets:
        print(f"no offline data: {reason}; {reason2}; {reason3}", file=sys.stderr)
    return sets


def one_real_case(args):
    """Median error of center="auto" on one offline data set at one ε, and the data's spread."""
    from manifold_dp import private_frechet_mean
    from manifold_dp.privacy.mechanism_specs import GAUSSIAN_MECHANISMS

    name, eps, seeds, mechanism, delta = args
    M, X = _real_sets()[name]
    mean = _reference_mean(M, X, X[0])
    spread = float(np.median(M.dist(mean, X)))
    options = {}
    if mechanism != "laplace":
        options = {"mechanism": mechanism, "delta": delta if mechanism == "auto" or mechanism in GAUSSIAN_MECHANISMS
                   else None}
    errs, origin, used = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in range(seeds):
            rel = private_frechet_mean(X, M, center="auto", radius="auto", epsilon=eps, rng=s, **options)
            errs.append(float(M.dist(mean, rel.point)))
            used.append(rel.mechanism)
            rel = private_frechet_mean(X, M, center=M.origin, radius="auto", epsilon=eps, rng=s, **options)
            origin.append(float(M.dist(mean, rel.point)))
            used.append(rel.mechanism)
    return name, len(X), eps, float(np.median(errs)), float(np.median(origin)), spread, " / ".join(dict.fromkeys(used))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 300, ε = 1, 5 seeds")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=None, help="AutoCenter.rounds (default: the library's, 1)")
    ap.add_argument("--spaces", nargs="*", default=list(SPACES))
    ap.add_argument("--n", nargs="*", type=int, default=None, help="record counts (default 100 300 1000)")
    ap.add_argument("--eps", nargs="*", type=float, default=None, help="epsilons (default 0.5 1 2)")
    ap.add_argument("--mechanism", default="laplace",
                    help="both releases' mechanism: a registry name, or 'auto' (mechanism='auto' with delta for both: "
                         "center='auto' compares whole pipelines, the oracle ball the releases); default laplace")
    ap.add_argument("--delta", type=float, default=1e-6, help="total δ of both releases for an (ε, δ) mechanism")
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--real", action="store_true", help="the offline data sets instead")
    ap.add_argument("--output", default=None)
    ap.add_argument("--figure", default=None, help="also draw the ratios to this PNG (needs matplotlib)")
    ap.add_argument("--from-table", default=None, help="draw --figure from a table this script wrote, without running")
    a = ap.parse_args(argv)
    if a.from_table:
        title = "pure ε" if a.mechanism == "laplace" else f"mechanism={a.mechanism!r}, δ = {a.delta:g}"
        figure(_read_table(a.from_table), a.figure or "private_ball_ratio.png", title)
        return 0
    if a.real:
        cases = [(name, eps, a.seeds or 15, a.mechanism, a.delta) for name in _real_sets()
                 for eps in (a.eps or (0.5, 1.0, 2.0))]
        with ProcessPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            rows = list(pool.map(one_real_case, cases))
        lines = ["| data | n | ε | median error, `center=\"auto\"` | median error, public origin + `radius=\"auto\"` | "
                 "data's spread (median distance to the mean) | mechanism |", "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
        lines += [f"| {r[0]} | {r[1]} | {r[2]:g} | {r[3]:.4g} | {r[4]:.4g} | {r[5]:.4g} | {r[6]} |" for r in rows]
    else:
        ns, epss = ((300,), (1.0,)) if a.quick else ((100, 300, 1000), (0.5, 1.0, 2.0))
        ns, epss = a.n or ns, a.eps or epss
        seeds = a.seeds or (5 if a.quick else 15)
        cases = [(name, n, eps, seeds, a.rounds, a.mechanism, a.delta) for name in a.spaces for n in ns for eps in epss]
        with ProcessPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            rows = list(pool.map(one_case, cases))
        lines = _case_table(rows, a.mechanism)
        if a.figure:
            title = "pure ε" if a.mechanism == "laplace" else f"mechanism={a.mechanism!r}, δ = {a.delta:g}"
            figure([(r[0], r[1], r[2], r[3] / r[4], r[5]) for r in rows if r[7] or a.mechanism == "laplace"], a.figure,
                   title)
    text = "\n".join(lines)
    print(text)
    if a.output:
        with open(a.output, "w") as f:
            f.write(text + "\n")
    return 0


def _case_table(rows, mechanism):
    """The markdown rows of ``one_case``'s results; off the default, a last column names the
    mechanism used (n/a: none of ``mechanism`` runs on the space with ``center="auto"``)."""
    head = ("| space | n | ε | median error, center=\"auto\" | median error, oracle ball | ratio (95 % interval) | ratio predicted "
            "before the data (`plan`) |")
    if mechanism == "laplace":
        lines = [head, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        return lines + [f"| {r[0]} | {r[1]} | {r[2]:g} | {r[3]:.4g} | {r[4]:.4g} | {_ratio(r)} | {r[5]:.2f} |"
                        for r in rows]
    column = " mechanism (center=\"auto\" / oracle) |" if mechanism == "auto" else " mechanism |"
    lines = [head + column, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        if not r[7]:
            lines.append(f"| {r[0]} | {r[1]} | {r[2]:g} | n/a | n/a | n/a | n/a | does not run with center=\"auto\" |")
        else:
            lines.append(f"| {r[0]} | {r[1]} | {r[2]:g} | {r[3]:.4g} | {r[4]:.4g} | {_ratio(r)} | {r[5]:.2f} | "
                         f"{' / '.join(r[7])} |")
    return lines


def _ratio(row):
    """The ratio cell: the ratio of the median errors and its 95 % paired bootstrap interval."""
    lo, hi = row[8]
    return f"{row[3] / row[4]:.2f} ({lo:.2f}–{hi:.2f})"


def _read_table(path):
    """``(space, n, ε, ratio, predicted)`` rows of a table this script wrote."""
    rows = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) in (7, 8) and cells[1].isdigit() and cells[5] != "n/a":
            rows.append((cells[0], int(cells[1]), float(cells[2]), float(cells[5].split()[0]), float(cells[6])))
    return rows


def figure(rows, path, title="pure ε"):
    """One panel per space: the ratio to the oracle against n (log-log), a line per ε, the plan's
    prediction dashed, and the 2× target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    spaces = list(dict.fromkeys(r[0] for r in rows))
    fig, axes = plt.subplots(2, (len(spaces) + 1) // 2, figsize=(12, 6.5), sharex=True, sharey=True, squeeze=False)
    colours = {0.5: "#0072B2", 1.0: "#D55E00", 2.0: "#009E73"}
    for ax, space in zip(axes.flat, spaces):
        for eps in sorted({r[2] for r in rows if r[0] == space}):
            pts = sorted((r[1], r[3], r[4]) for r in rows if r[0] == space and r[2] == eps)
            n, ratio, predicted = zip(*pts)
            colour = colours.get(eps, "k")
            ax.plot(n, ratio, "o-", color=colour, label=f"measured, ε = {eps:g}")
            ax.plot(n, predicted, "--", color=colour, alpha=0.6, label=f"plan's prediction, ε = {eps:g}")
        ax.axhline(2.0, color="k", lw=0.8)
        ax.set(xscale="log", yscale="log", title=space)
        ax.set_xticks([100, 300, 1000], ["100", "300", "1000"])
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("median error / oracle ball's")
    for ax in axes[-1]:
        ax.set_xlabel("n")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles + [plt.Line2D([], [], color="k", lw=0.8)], labels + ["2× (the target)"], loc="lower center",
               ncol=4, frameon=False)
    fig.suptitle(f'center="auto", radius="auto" against an oracle ball (true centre, 0.9-quantile radius), {title}')
    fig.tight_layout(rect=(0, 0.08, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
