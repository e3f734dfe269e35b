"""Shared pieces of the experiments: progress bars, seeds, band plots, timings, the result record."""

import sys
import time
from dataclasses import dataclass, field

import numpy as np


@dataclass
class ExperimentResult:
    """What an experiment hands to the report: data for the figure and the comparison."""

    id: str
    title: str
    paper_claim: str
    ours: str
    comparison: str
    data: dict = field(default_factory=dict)
    figures: list = field(default_factory=list)
    seconds: float = 0.0


def progress(iterable, desc, total=None):
    """A tqdm bar on stderr when stderr is a terminal and tqdm is installed, the plain iterable
    otherwise (no bar in log files, pipes and CI)."""
    if not (getattr(sys.stderr, "isatty", None) and sys.stderr.isatty()):
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm ships with the experiments extra
        return iterable
    return tqdm(iterable, desc=desc, total=total, leave=False, dynamic_ncols=True)


def call_times(fn, repeat, warmup=1):
    """Seconds taken by each of ``repeat`` calls of ``fn`` (after ``warmup`` untimed calls).
    Timings are summarised by their median, which a stall of a shared machine does not move."""
    for _ in range(warmup):
        fn()
    out = np.empty(repeat)
    for i in range(repeat):
        t = time.perf_counter()
        fn()
        out[i] = time.perf_counter() - t
    return out


def chain_step_times(chain, steps, chunk=100):
    """Seconds per step of each ``chunk``-step piece of a ``steps``-step Markov chain;
    ``chain(n, state)`` runs ``n`` steps from ``state`` (its start when None), returns the last."""
    chunk = max(1, min(chunk, steps))
    out, state = np.empty(steps // chunk), None
    for i in range(len(out)):
        t = time.perf_counter()
        state = chain(chunk, state)
        out[i] = (time.perf_counter() - t) / chunk
    return out


def mean_se(values, axis=-1):
    v = np.asarray(values, float)
    return v.mean(axis=axis), v.std(axis=axis, ddof=1) / np.sqrt(v.shape[axis])


def band_plot(ax, x, curves, ylabel, xlabel="n", logy=False):
    """Mean ± 2 SE bands, one per named curve ``{label: (mean, se)}``."""
    for label, (m, se) in curves.items():
        line, = ax.plot(x, m, marker="o", ms=3, label=label)
        ax.fill_between(x, m - 2 * se, m + 2 * se, color=line.get_color(), alpha=0.2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def sensitivity_panel(ax, ns, points, bounds, logy=False):
    """Neighbouring-pair distances ρ(x̄, x̄') as dots, their mean, and bound lines ``{label: values}``."""
    for n, pts in zip(ns, points):
        ax.scatter(np.full(len(pts), n), pts, s=6, color="tab:blue", alpha=0.4)
    ax.plot(ns, [np.mean(p) for p in points], color="k", label="mean ρ(x̄, x̄')")
    for label, values in bounds.items():
        ax.plot(ns, values, label=label)
    ax.set_xlabel("n"); ax.set_ylabel("ρ(x̄, x̄')"); ax.legend(fontsize=7); ax.grid(alpha=0.3)
    if logy:
        ax.set_yscale("log")


def figure(ncols=2, width=5.0, height=3.8):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False)
    return fig, axes[0]


def save(fig, out_dir, name):
    import matplotlib.pyplot as plt

    path = out_dir / f"{name}.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def relative(a, b):
    """``"12% less"`` / ``"30% more"``: the error ``a`` against ``b``."""
    p = float(np.mean(pct_less(a, b)))
    return f"{abs(p):.0f}% {'less' if p >= 0 else 'more'}"


def pct_less(a, b):
    """How much smaller ``a`` is than ``b``, in percent of ``b``."""
    return 100.0 * (1.0 - np.asarray(a) / np.asarray(b))
