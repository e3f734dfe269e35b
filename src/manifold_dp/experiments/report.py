"""Writes the experiments' report — ``report.md``, a self-contained ``report.html`` and
``summary.json`` — from one structure, and regenerates the reproduction table of ``docs/results.md``
from ``summary.json`` (``python -m manifold_dp.experiments.report docs/results.md results/summary.json``).
"""

import base64
import html
import json
import platform
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ._common import VERDICTS, ExperimentResult
from ._findings import is_finding

TITLE = "manifold_dp — reproduction of the papers' experiments"
PAPERS = {
    "R21": ("M. Reimherr, K. Bharath, C. Soto. Differential Privacy over Riemannian Manifolds. Advances in Neural "
            "Information Processing Systems 34 (NeurIPS 2021)."),
    "S22": ("C. Soto, K. Bharath, M. Reimherr, A. Slavković. Shape and Structure Preserving Differential Privacy. "
            "Advances in Neural Information Processing Systems 35 (NeurIPS 2022); arXiv:2209.12667."),
    "U23": ("S. Utpala, P. Vepakomma, N. Miolane. Differentially Private Fréchet Mean on the Manifold of Symmetric "
            "Positive Definite (SPD) Matrices with log-Euclidean Metric. Transactions on Machine Learning Research, "
            "02/2023; arXiv:2208.04245."),
    "J23": ("Y. Jiang, X. Chang, Y. Liu, L. Ding, L. Kong, B. Jiang. Gaussian Differential Privacy on Riemannian "
            "Manifolds. Advances in Neural Information Processing Systems 36 (NeurIPS 2023); arXiv:2311.10101."),
}
HOW_TO_READ = (
    "Each experiment re-runs one figure or claim of a paper; its code names the paper (R21, S22, U23 below) and the "
    "figure. The summary table gives, in one line each, the verdict on the paper's claim, the paper's own number, ours "
    "under the paper's calibration and ours under the certified calibration; the section of each experiment below it "
    "gives the full numbers and the explanation. The paper's calibration is the noise scale the paper "
    "used, recovered from its text or from its plotted numbers; it is run by the same mechanisms with the scale "
    "multiplied, and marked NOT certified where no proof makes it differentially private. The certified calibration "
    "is the scale that a proof in docs/theory.md makes private, the one manifold-dp releases with. Every number in "
    "the text is computed by this run, except those labelled as the paper's. In the figures one colour is one "
    "mechanism throughout; solid lines are certified, dash-dot lines the paper's calibration where it is still "
    "private (only noisier), dotted lines the paper's calibration where it is not certified, dashed lines "
    "extrapolated; bands are ±2 standard errors of the mean. Experiments whose verdict begins with \"new result\" "
    "are not reproductions: they test a claim of ours, their verdict states that claim with the numbers "
    "this run measured, and the paper column gives a paper's number only where a paper states one.")
VERDICT_MEANING = {
    VERDICTS[0]: "the claim holds under the certified calibration",
    VERDICTS[1]: "the claim holds with the paper's noise scale but not with a certified one",
    VERDICTS[2]: "some parts of the claim hold, others do not",
    VERDICTS[3]: "the claim does not hold",
}
UNAVAILABLE = [
    ("SPD: fMRI connectome correlation matrices (86 subjects, 28×28)",
     "shipped inside the geomstats wheel, whose last release (2.8.0) does not import with numpy ≥ 2.4; reading its data "
     "files needs a download of that wheel at run time, which this offline run does not do"),
    ("Sphere: palaeomagnetic directions",
     "no package installed offline here ships them; the sphere experiments use synthetic caps"),
    ("Kendall shapes: the corpus callosa of S22",
     "not public (ADNI); the landmark data sets shipped by ktch stand in"),
    ("U23: MedMNIST images", "downloads; the images shipped by scikit-learn stand in"),
]
COLUMNS = ("experiment", "verdict", "paper", "ours, paper's calibration", "ours, certified", "seconds")
README_START, README_END = "<!-- reproduction-table:start -->", "<!-- reproduction-table:end -->"


def summary_rows(results: Sequence[ExperimentResult]) -> list[dict[str, Any]]:
    """One short row per experiment (the one-line forms where a result gives them); each section below the table
    keeps the full texts and the explanation."""
    return [{"experiment": r.id, "title": r.title, "claim": r.paper_claim, "verdict": r.summary("verdict"),
             "paper": r.summary("paper_value"), "ours, paper's calibration": r.summary("paper_calibration"),
             "ours, certified": r.summary("certified"), "seconds": round(r.seconds, 1)} for r in results]


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """The summary table in Markdown (the reproduction table of ``docs/results.md`` is this, regenerated)."""
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    out += ["| " + " | ".join(_cell(row[c]) for c in COLUMNS) + " |" for row in rows]
    return "\n".join(out)


def _header(profile, seed, results):
    total = sum(r.seconds for r in results)
    return (f"Profile {profile}, seed {seed}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, Python "
            f"{platform.python_version()}, numpy {np.__version__}, {platform.machine()} "
            f"({platform.processor() or 'cpu'}); {len(results)} experiments in {total:.0f} s.")


def _data_sets(results):
    seen, notes = [], set()
    for r in results:
        if r.data_note and r.data_note not in notes:
            notes.add(r.data_note)
            seen.append((r.id, r.data_note))
    return seen


def _claim_label(result):
    return "Claim tested (a new result)" if is_finding(result) else "Paper's claim"


def _table(result):
    """The result's table (``data["table"]``: caption, columns, rows), or ``None``."""
    table = result.data.get("table") if isinstance(result.data, dict) else None
    return table if table and table.get("rows") else None


def _markdown_table(table):
    out = [f"*{table['caption']}*", "", "| " + " | ".join(_cell(c) for c in table["columns"]) + " |",
           "|" + " --- |" * len(table["columns"])]
    return out + ["| " + " | ".join(_cell(v) for v in row) + " |" for row in table["rows"]] + [""]


def _html_data_table(table):
    e = html.escape
    head = "".join(f"<th>{e(str(c))}</th>" for c in table["columns"])
    body = "".join("<tr>" + "".join(f"<td>{e(str(v))}</td>" for v in row) + "</tr>" for row in table["rows"])
    return f"<table><caption>{e(table['caption'])}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _markdown(results, profile, seed):
    md = [f"# {TITLE}", "", _header(profile, seed, results), "", "## How to read this report", "", HOW_TO_READ, "",
          "Verdicts: " + "; ".join(f"**{v}**: {m}" for v, m in VERDICT_MEANING.items()) + ".", "",
          "Papers: " + "; ".join(f"**{code}** = {ref.rstrip('.')}" for code, ref in PAPERS.items()) + ".", "",
          "## Summary", "", markdown_table(summary_rows(results)), ""]
    for r in results:
        md += [f"## {r.id}: {r.title}", "", f"**{_claim_label(r)}.** {r.paper_claim}", "", f"**Verdict: {r.verdict}.**", "",
               f"- **Paper:** {r.paper_value}",
               f"- **Ours:** under the paper's calibration, {r.paper_calibration}; certified, {r.certified}", "",
               r.explanation, ""]
        if _table(r):
            md += _markdown_table(_table(r))
        for f in r.figures:
            md += [f"![{r.id}]({f})", "", f"*{r.captions.get(f, '')}*", ""]
        md += [f"Data: {r.data_note} Run time {r.seconds:.1f} s.", ""]
    md += ["## Data sets and licences", ""] + [f"- {i}: {note}" for i, note in _data_sets(results)]
    md += ["", "Not available offline, and why:", ""] + [f"- {what}: {why}." for what, why in UNAVAILABLE]
    md += ["", "## References", ""] + [f"- **{code}**: {ref}" for code, ref in PAPERS.items()] + [""]
    return "\n".join(md)


def _html_table(rows):
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(row[c]))}</td>" for c in COLUMNS) + "</tr>" for row in rows)
    return f"<table class='summary'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _html(results, profile, seed, out_dir):
    e = html.escape
    parts = ["<!doctype html><html lang='en'><meta charset='utf-8'>", f"<title>{e(TITLE)}</title>",
             "<style>body{font-family:sans-serif;max-width:1150px;margin:auto;line-height:1.45;padding:0 1em}"
             "img{max-width:100%}figure{margin:1em 0}figcaption{font-size:90%;color:#333}"
             "td,th{border:1px solid #ccc;padding:4px;vertical-align:top;font-size:88%}table{border-collapse:collapse}"
             "th{background:#f2f2f2}.verdict{font-weight:bold}</style>",
             f"<h1>{e(TITLE)}</h1>", f"<p>{e(_header(profile, seed, results))}</p>",
             "<h2>How to read this report</h2>", f"<p>{e(HOW_TO_READ)}</p>",
             "<p>Verdicts: " + "; ".join(f"<b>{e(v)}</b>: {e(m)}" for v, m in VERDICT_MEANING.items()) + ".</p>",
             "<p>Papers: " + "; ".join(f"<b>{e(c)}</b> = {e(ref.rstrip('.'))}" for c, ref in PAPERS.items()) + ".</p>",
             "<h2>Summary</h2>", _html_table(summary_rows(results))]
    for r in results:
        parts += [f"<h2>{e(r.id)}: {e(r.title)}</h2>", f"<p><b>{_claim_label(r)}.</b> {e(r.paper_claim)}</p>",
                  f"<p class='verdict'>Verdict: {e(r.verdict)}.</p>",
                  f"<ul><li><b>Paper:</b> {e(r.paper_value)}</li><li><b>Ours:</b> under the paper's calibration, "
                  f"{e(r.paper_calibration)}; certified, {e(r.certified)}</li></ul>", f"<p>{e(r.explanation)}</p>"]
        if _table(r):
            parts.append(_html_data_table(_table(r)))
        for f in r.figures:
            data = base64.b64encode((out_dir / f).read_bytes()).decode()
            parts.append(f"<figure><img alt='{e(r.id)}: {e(f)}' src='data:image/png;base64,{data}'>"
                         f"<figcaption>{e(r.captions.get(f, ''))}</figcaption></figure>")
        parts.append(f"<p>Data: {e(r.data_note)} Run time {r.seconds:.1f} s.</p>")
    parts += ["<h2>Data sets and licences</h2><ul>"] + [f"<li>{e(i)}: {e(n)}</li>" for i, n in _data_sets(results)]
    parts += ["</ul><p>Not available offline, and why:</p><ul>"] + [f"<li>{e(w)}: {e(y)}.</li>" for w, y in UNAVAILABLE]
    parts += ["</ul><h2>References</h2><ul>"] + [f"<li><b>{e(c)}</b>: {e(ref)}</li>" for c, ref in PAPERS.items()]
    parts.append("</ul></html>")
    return "\n".join(parts)


def write_report(results: Sequence[ExperimentResult], out_dir: str | Path, profile: str, seed: int) -> tuple[Path, Path]:
    """``report.md``, ``report.html`` (figures inlined) and ``summary.json`` in ``out_dir``."""
    out_dir = Path(out_dir)
    (out_dir / "report.md").write_text(_markdown(results, profile, seed), encoding="utf-8")
    (out_dir / "report.html").write_text(_html(results, profile, seed, out_dir), encoding="utf-8")
    (out_dir / "summary.json").write_text(json.dumps({"profile": profile, "seed": seed, "rows": summary_rows(results)},
                                                     indent=1, ensure_ascii=False), encoding="utf-8")
    return out_dir / "report.md", out_dir / "report.html"


def update_readme(readme: str | Path, summary: Any) -> None:  # summary: the path of summary.json, then its contents
    """Replace the text between a page's reproduction-table markers (``docs/results.md``) by the table of
    ``summary.json`` (written by ``write_report``); the table is never edited by hand."""
    readme, summary = Path(readme), json.loads(Path(summary).read_text(encoding="utf-8"))
    text = readme.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(README_START) + ".*?" + re.escape(README_END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{readme} has no {README_START} … {README_END} markers")
    table = (f"{README_START}\n<!-- generated from summary.json of `manifold-dp reproduce --profile {summary['profile']}` "
             f"by `python -m manifold_dp.experiments.report`; do not edit -->\n{markdown_table(summary['rows'])}\n{README_END}")
    readme.write_text(pattern.sub(lambda _: table, text), encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover - a maintainer's command
    if len(sys.argv) != 3:
        sys.exit("usage: python -m manifold_dp.experiments.report docs/results.md results/summary.json")
    update_readme(*sys.argv[1:])
