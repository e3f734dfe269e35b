"""Writes the experiments' report: ``report.md`` and a self-contained ``report.html``."""

import base64
import html
import platform
from datetime import datetime, timezone

import numpy as np


def write_report(results, out_dir, profile, seed):
    head = (f"Profile `{profile}`, seed {seed}, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
            f"Python {platform.python_version()}, numpy {np.__version__}, {platform.machine()} ({platform.processor() or 'cpu'}).")
    md = ["# manifold_dp — reproduction of the papers' experiments", "", head, "",
          "| experiment | paper | ours | seconds |", "| --- | --- | --- | --- |"]
    for r in results:
        md.append(f"| {r.id} | {r.paper_claim} | {r.ours} | {r.seconds:.1f} |")
    md.append("")
    for r in results:
        md += [f"## {r.id}: {r.title}", ""]
        md += [f"![{r.id}]({f})" for f in r.figures]
        md += ["", f"**Paper:** {r.paper_claim}", "", f"**Ours:** {r.ours}", "", f"**Difference:** {r.comparison}", ""]
    (out_dir / "report.md").write_text("\n".join(md), encoding="utf-8")

    parts = ["<!doctype html><meta charset='utf-8'><title>manifold_dp report</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}img{max-width:100%}td,th{border:1px solid #ccc;padding:4px;vertical-align:top}table{border-collapse:collapse}</style>",
             "<h1>manifold_dp — reproduction of the papers' experiments</h1>", f"<p>{html.escape(head)}</p>"]
    for r in results:
        parts.append(f"<h2>{html.escape(r.id)}: {html.escape(r.title)}</h2>")
        for f in r.figures:
            data = base64.b64encode((out_dir / f).read_bytes()).decode()
            parts.append(f"<img alt='{html.escape(r.id)}' src='data:image/png;base64,{data}'>")
        parts.append("<table>" + "".join(f"<tr><th>{k}</th><td>{html.escape(v)}</td></tr>" for k, v in
                                         (("paper", r.paper_claim), ("ours", r.ours), ("difference", r.comparison), ("seconds", f"{r.seconds:.1f}"))) + "</table>")
    (out_dir / "report.html").write_text("\n".join(parts), encoding="utf-8")
    return out_dir / "report.md", out_dir / "report.html"
