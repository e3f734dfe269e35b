"""Shared pieces of the experiments: the result record and its verdicts, one palette for every
figure, the figure checks, progress bars, timings."""

import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from .._typing import FloatArray

_T = TypeVar("_T")

VERDICTS = ("reproduced", "reproduced only under the paper's calibration", "partly reproduced", "not reproduced")


@dataclass
class ExperimentResult:
    """What an experiment hands to the report: a verdict on the paper's claim, the paper's number,
    ours under the paper's calibration and under the certified one, an explanation whose numbers
    all come from the run, and the figures with their captions."""

    id: str
    title: str
    paper_claim: str
    verdict: str
    paper_value: str
    paper_calibration: str
    certified: str
    explanation: str
    figures: list = field(default_factory=list)
    captions: dict = field(default_factory=dict)
    data_note: str = ""
    data: dict = field(default_factory=dict)
    seconds: float = 0.0
    # one-line forms of ``verdict`` (new results only), ``paper_value``, ``paper_calibration`` and ``certified`` for
    # the report's summary table, where the full text would be a paragraph; the section keeps the full text
    short: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")
        self._check_short()

    def _check_short(self):
        unknown = set(self.short) - {"verdict", "paper_value", "paper_calibration", "certified"}
        if unknown:
            raise ValueError(f"short takes verdict, paper_value, paper_calibration and certified, got {sorted(unknown)}")

    def summary(self, name: str) -> str:
        """The summary table's text for field ``name``: its one-line form where there is one."""
        return self.short.get(name) or getattr(self, name)

    @property
    def ours(self) -> str:
        """One line for the run log."""
        return f"{self.verdict}; certified calibration: {self.certified}"

    @property
    def comparison(self) -> str:
        return self.explanation


def verdict(paper_reading: bool, certified_reading: bool, *, partly: bool = False) -> str:
    """The verdict from whether the whole claim holds under the certified calibration, under the
    paper's, and (``partly``) whether some of its parts hold where the whole does not."""
    if certified_reading:
        return VERDICTS[0]
    if paper_reading:
        return VERDICTS[1]
    return VERDICTS[2] if partly else VERDICTS[3]


# One colour per mechanism in every figure (Okabe–Ito and a few distinct extras); the line style
# says how it was calibrated.
PALETTE = {
    "laplace": "#0072B2",                # Riemannian Laplace (any sampler, any metric)
    "kng": "#D55E00",                    # K-norm gradient mechanism
    "tangent_gaussian": "#009E73",       # tangent Gaussian, analytic calibration
    "tangent_gaussian_classical": "#56B4E9",
    "euclidean_laplace": "#E69F00",      # ℓ2 Laplace on the embedded mean, not projected
    "euclidean_laplace_projected": "#CC79A7",
    "extrinsic_gaussian": "#BCBD22",
    "landmark_joint": "#9467BD",         # coordinate-wise Laplace on all landmarks at once
    "landmark_split": "#8C564B",         # the 2022 paper's: budget split across landmarks
    "landmark_unaligned": "#17BECF",
    "mcmc_laplace": "#000000",           # the Laplace law sampled by Metropolis–Hastings
    "bound": "#000000",
    "data": "#8C8C8C",                   # records and neighbouring-pair distances (not a mechanism)
}
CALIBRATION_STYLE: dict[str, dict[str, Any]] = {
    "certified": dict(linestyle="-", marker="o"),
    "paper_noisier": dict(linestyle="-.", marker="s"),   # the paper's calibration, still certified
    "paper_uncertified": dict(linestyle=":", marker="D", markerfacecolor="none"),
    "proven": dict(linestyle=(0, (5, 1, 1, 1, 1, 1)), marker="^"),  # certified by a proof the releases do not use yet
    "extrapolated": dict(linestyle="--", marker=None),
}
LEGEND_SIZE = 8
BAND_NOTE = "Bands: mean ± 2 standard errors over the replicates."


def style(mechanism: str, calibration: str = "certified") -> dict[str, Any]:
    """``plot`` keyword arguments: the mechanism's colour and the calibration's line style."""
    return dict(color=PALETTE[mechanism], ms=4, **CALIBRATION_STYLE[calibration])


def series(ax: Any, x: ArrayLike, mean: ArrayLike, label: str, mechanism: str, calibration: str = "certified",
           se: ArrayLike | None = None) -> None:
    """One curve, with a ±2 SE band when ``se`` is given."""
    mean = np.asarray(mean, float)
    ax.plot(x, mean, label=label, **style(mechanism, calibration))
    if se is not None:
        se = np.asarray(se, float)
        ax.fill_between(x, mean - 2 * se, mean + 2 * se, color=PALETTE[mechanism], alpha=0.18, linewidth=0)


def figure(title: str, nrows: int = 1, ncols: int = 2, width: float = 4.6, height: float = 3.7) -> tuple[Any, Any]:
    """A figure with a suptitle and ``nrows × ncols`` panels (flat array)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows + 0.5), squeeze=False,
                             layout="constrained")
    fig.suptitle(title, fontsize=11)
    return fig, axes.ravel()


def finish(ax: Any, letter: str, title: str, xlabel: str, ylabel: str, *, logx: bool = False, logy: bool = False,
           legend: bool = True, loc: str = "best", xticks: Sequence[float] | None = None) -> None:
    """Panel letter and title, axis labels, log scales (ticks at ``xticks`` on a log x axis), grid
    and a readable legend (``loc="below"``: under the axes, one column)."""
    ax.set_title(f"({letter}) {title}", fontsize=9.5, loc="left")
    ax.set_xlabel(xlabel, fontsize=9)
    ax.set_ylabel(ylabel, fontsize=9)
    if logx:
        ax.set_xscale("log")
        if xticks is not None:
            log_ticks(ax, xticks)
    if logy:
        ax.set_yscale("log")
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.3, which="both" if (logx or logy) else "major")
    if legend and loc == "below":  # outside the axes, under them; the constrained layout makes room
        ax.legend(fontsize=LEGEND_SIZE, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1, frameon=False)
    elif legend:
        ax.legend(fontsize=LEGEND_SIZE, loc=loc, framealpha=0.85)


def shared_legend(fig: Any, axes: Any, ncol: int = 3) -> None:
    """One legend under the figure for the series of ``axes`` (an axes or a list; each label once)."""
    entries: dict[Any, Any] = {}
    for ax in np.atleast_1d(axes):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    fig.legend(list(entries.values()), list(entries), loc="outside lower center", ncol=ncol, fontsize=LEGEND_SIZE,
               frameon=False)


def log_ticks(ax: Any, values: Sequence[float]) -> None:
    """Tick marks at the sample sizes themselves on a log axis (n doubling)."""
    from matplotlib.ticker import FixedLocator, NullFormatter

    ax.xaxis.set_major_locator(FixedLocator(list(values)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(list(values), [f"{v:g}" for v in values])


FIGURE_HOOKS: list[Callable[[Any, str], Any]] = []  # callables (figure, name) run before a figure is written: the tests inspect figures here


def save(fig: Any, out_dir: Path, name: str) -> str:
    import matplotlib.pyplot as plt

    for hook in FIGURE_HOOKS:
        hook(fig, name)
    path = out_dir / f"{name}.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name


_UNDERSCORE_OUTSIDE_MATH = re.compile(r"^(?:[^$]*\$[^$]*\$)*[^$]*_")


def check_figure(fig: Any) -> list[str]:
    """Problems a reader would see: no title, unlabelled axes, several series without a legend,
    legends under 8 pt, literal underscores or backticks (mathtext not used), a strip-shaped figure."""
    problems = []
    sup = getattr(fig, "_suptitle", None)
    if sup is None or not sup.get_text().strip():
        problems.append("figure has no title")
    w, h = fig.get_size_inches()
    if w / h > 3.0:
        problems.append(f"figure is a strip ({w:.1f} × {h:.1f} in)")
    texts = [sup.get_text()] if sup is not None else []
    for legend in fig.legends:
        texts += [t.get_text() for t in legend.get_texts()]
        if any(t.get_fontsize() < LEGEND_SIZE for t in legend.get_texts()):
            problems.append(f"figure legend entries under {LEGEND_SIZE} pt")
    for i, ax in enumerate(fig.axes):
        drawn = ax.lines or ax.collections or ax.patches or ax.images
        if not (ax.get_visible() and drawn):
            continue
        where = f"panel {i}"
        if not ax.get_title(loc="left").strip() and not ax.get_title().strip():
            problems.append(f"{where} has no title")
        if not ax.get_xlabel().strip() or not ax.get_ylabel().strip():
            problems.append(f"{where} has an unlabelled axis")
        labels = [lab for lab in ax.get_legend_handles_labels()[1] if not lab.startswith("_")]
        series_drawn = len(ax.lines) + len([c for c in ax.collections if c.get_label() and not c.get_label().startswith("_")])
        legend = ax.get_legend()
        if max(len(labels), series_drawn) > 1 and legend is None and not fig.legends:
            problems.append(f"{where} draws {max(len(labels), series_drawn)} series without a legend")
        if legend is not None:
            small = [t.get_text() for t in legend.get_texts() if t.get_fontsize() < LEGEND_SIZE]
            if small:
                problems.append(f"{where} legend entries under {LEGEND_SIZE} pt: {small[:2]}")
            texts += [t.get_text() for t in legend.get_texts()]
        texts += [ax.get_title(loc="left"), ax.get_title(), ax.get_xlabel(), ax.get_ylabel(), *labels]
        texts += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
    for t in texts:
        if _UNDERSCORE_OUTSIDE_MATH.match(t) or "`" in t:
            problems.append(f"literal markup in {t!r}")
    return problems


def one_blas_thread() -> Any:
    """A context with one BLAS thread: k×k linear algebra gains nothing from more, and on a
    shared machine idle BLAS threads spinning for a core made single timings up to 100× slower."""
    try:
        from threadpoolctl import threadpool_limits  # ships with scikit-learn (the experiments extra)
    except ImportError:  # pragma: no cover
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(1)


def progress(iterable: Iterable[_T], desc: str, total: int | None = None) -> Iterable[_T]:
    """A tqdm bar on stderr when stderr is a terminal and tqdm is installed, the plain iterable
    otherwise (no bar in log files, pipes and CI)."""
    if not (getattr(sys.stderr, "isatty", None) and sys.stderr.isatty()):
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm ships with the experiments extra
        return iterable
    return tqdm(iterable, desc=desc, total=total, leave=False, dynamic_ncols=True)


def call_times(fn: Callable[[], Any], repeat: int, warmup: int = 1) -> FloatArray:
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


def chain_step_times(chain: Callable[[int, Any], Any], steps: int, chunk: int = 100) -> FloatArray:
    """Seconds per step of each ``chunk``-step piece of a ``steps``-step Markov chain;
    ``chain(n, state)`` runs ``n`` steps from ``state`` (its start when None), returns the last."""
    chunk = max(1, min(chunk, steps))
    out, state = np.empty(steps // chunk), None
    for i in range(len(out)):
        t = time.perf_counter()
        state = chain(chunk, state)
        out[i] = (time.perf_counter() - t) / chunk
    return out


def mean_se(values: ArrayLike, axis: int = -1) -> tuple[Any, Any]:
    v = np.asarray(values, float)
    return v.mean(axis=axis), v.std(axis=axis, ddof=1) / np.sqrt(v.shape[axis])


def span(values: ArrayLike, fmt: str = "{:.2f}", unit: str = "") -> str:
    """``"a–b"`` (or ``"a"`` when they agree at that precision) of the finite values."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return "n/a"
    lo, hi = fmt.format(v.min()) + unit, fmt.format(v.max()) + unit
    return lo if lo == hi else f"{lo}–{hi}"


def per(keys: Iterable[Any], values: Iterable[Any], fmt: str = "{:.2f}", key: str = "n") -> str:
    """``"n = 10: 0.91, n = 25: 0.80"``: one value per key, for claims that depend on it (``n/a``
    where the value is missing, e.g. a mechanism refused there)."""
    show = lambda v: fmt.format(v) if np.isfinite(v) else "n/a"
    return ", ".join(f"{k}: {show(v)}" if isinstance(k, str) else f"{key} = {k:g}: {show(v)}" for k, v in zip(keys, values))
