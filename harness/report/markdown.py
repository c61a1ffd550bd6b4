"""summary.md: the cells table and the findings, for CI step summaries (GitHub renders
HTML inside markdown, so user text is HTML-escaped as well as kept off the table's pipes)."""

from __future__ import annotations

import html
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis import scaling
from harness.diagnosis.findings import severity_rank
from harness.model.numbers import readable
from harness.report import evidence
from harness.report.html_page import fmt
from harness.runs import nodes
from harness.runs.files import write_atomic
from harness.runs.record import Record
from harness.runs.results import NODES_COLUMN
from harness.runs.view import RunView

MARKDOWN_FILE = "summary.md"
MAX_METRICS = 4


def md(value: Any) -> str:
    """One table cell: HTML-escaped, pipes escaped, on one line."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "–"
    text = fmt(value) if not isinstance(value, str) else value
    text = html.escape(text, quote=False).replace("|", "\\|")
    return " ".join(text.split())


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(cells) + " |"


def cells_table(view: RunView) -> list[str]:
    lines = []
    for suite, group in view.summary.groupby("suite", sort=False):
        words = view.suites[str(suite)]
        varying, rate = words.varying, words.rate
        metrics = [m for m in (rate, "work_done", "cpu_util_mean", "mem_pss_peak_mb") if m and f"{m}_median" in group]
        metrics = metrics[:MAX_METRICS]
        lines += [f"### {md(suite)}", ""]
        where = [NODES_COLUMN] if NODES_COLUMN in group else []  # a sweep on Ray: where its repeats ran
        headers = ["id", *varying, "status", "ok/repeats", *(f"{m} (median)" for m in metrics), *where, "reason"]
        lines.append(_row([md(h) for h in headers]))
        lines.append(_row(["---"] * len(headers)))
        for _, row in group.iterrows():
            cells = [
                md(row["id"]),
                *(md(row[p]) for p in varying),
                "ok" if row["status"] == "ok" else f"**{md(row['status'])}**",
                f"{int(row['ok'])}/{int(row['repeats'])}",
                *(md(row[f"{m}_median"]) for m in metrics),
                *(md(row[c]) for c in where),
                md(row["reason"]) if isinstance(row["reason"], str) else "",
            ]
            lines.append(_row(cells))
        lines.append("")
        fitted = [f"- {md(scaling.line(g))}" for g in scaling.of_suite(view, str(suite))]
        lines += [*fitted, ""] if fitted else []
    return lines


def findings_lines(findings: list[dict[str, Any]] | None) -> list[str]:
    lines = ["## Findings", ""]
    if findings is None:
        return lines + ["No diagnosis was run.", ""]
    if not findings:
        return lines + ["No findings.", ""]
    lines.append(_row(["severity", "rule", "cells", "evidence", "finding"]))
    lines.append(_row(["---"] * 5))
    for f in sorted(findings, key=lambda f: severity_rank(str(f.get("severity", "")))):
        cells = f.get("cells") or []
        shown = "<br>".join(
            md(f"{label}: {text}" if label else text) for label, text in evidence.rows(f.get("evidence"))
        )
        lines.append(
            _row(
                [
                    md(f.get("severity", "")),
                    md(f.get("rule", "")),
                    md(", ".join(map(str, cells)) if isinstance(cells, list) else cells),
                    shown,
                    md(f.get("hint", "")),
                ]
            )
        )
    return lines + [""]


def nodes_lines(view: RunView) -> list[str]:
    """The Ray nodes the run's cells ran on: when each joined and was lost, what ran there
    (harness.runs.nodes); nothing for a run that did not run on Ray."""
    found = nodes.rows(view.records, view.meta)
    if not found:
        return []
    lines = ["## Ray nodes", ""]
    lines.append(_row(["node", "role", "joined", "lost", "cell-repeats recorded (ok)", "lost with it (run again)"]))
    lines.append(_row(["---"] * 6))
    for row in found:
        lost = f"{row.lost}: {row.why}" if row.lost else ""
        lines.append(
            _row(
                [
                    md(row.label), row.role, md(row.joined), md(lost), f"{row.recorded} ({row.ok})",
                    md(", ".join(row.cells_lost)),
                ]
            )
        )  # fmt: skip
    return lines + [""]


STATES = {
    "finished": "finished",
    "interrupted": "interrupted (harness sweep --resume RUN_DIR finishes a sweep)",
    "failed": "failed",
    "running": "running: no end recorded (still running, or its harness was killed; --resume finishes a sweep)",
}


def _expected(meta: dict[str, Any]) -> int | None:
    """Cell-repeats the run asked for (run.json's cells and their repeats), when it says."""
    counts = [c.get("repeats") for c in meta.get("cells") or [] if isinstance(c, dict)]
    if not counts or not all(isinstance(n, int) for n in counts):
        return None
    return sum(counts)


def _seconds(started: Any, ended: Any) -> str:
    try:
        span = datetime.fromisoformat(str(ended)) - datetime.fromisoformat(str(started))
    except ValueError:
        return ""
    return f" ({readable(span.total_seconds())} s)"


def run_end(meta: dict[str, Any], records: list[Record]) -> str:
    """How the run ended, the line report.html and summary.md open with: its state, its
    cell-repeats (recorded of asked, failed by status), its start and end. Shared so both
    say the same thing, read from run.json as it is when the report is written."""
    state = str(meta.get("state") or "unknown")
    expected = _expected(meta)
    cells = f"{len(records)} cell-repeats"
    if expected is not None and expected != len(records):
        cells = f"{len(records)} of {expected} cell-repeats recorded"
    statuses = Counter(r.status for r in records if not r.ok)
    failed = sum(statuses.values())
    cells += f", {failed} failed ({', '.join(f'{n} {s}' for s, n in sorted(statuses.items()))})" if failed else ""
    started, ended = meta.get("started") or "?", meta.get("ended")
    when = f"{started} to {ended}{_seconds(started, ended)}" if ended else f"started {started}, no end recorded"
    resumed = f"; resumed {meta['resumed']}" if meta.get("resumed") else ""
    said = STATES.get(state, state)
    if state == "interrupted" and meta.get("stopped_by"):  # a write the disk refused (runs.files)
        said += f"; stopped by a file it could not write: {meta['stopped_by']}"
    if state == "interrupted" and meta.get("cluster_lost"):  # the Ray head (harness.errors.ClusterLost)
        said += f"; stopped: {meta['cluster_lost']}"
    return f"{said} · {cells} · {when}{resumed}"


def render(view: RunView) -> str:
    meta, records = view.meta, view.records
    findings = view.findings_json()
    title = meta.get("label") or "run"
    gpu = "; ".join(str(g.get("name", "?")) for g in meta.get("gpus") or []) or f"none ({meta.get('gpu_reason')})"
    lines = [
        f"## Benchmark: {md(title)}",
        "",
        f"{md(run_end(meta, records))}",
        "",
        f"commit {md(meta.get('git_commit') or 'unknown')}; {md(meta.get('cpu_cores', '?'))} cores; GPU: {md(gpu)}",
        "",
    ]
    if not records:
        lines += ["No finished cells.", ""]
    lines += cells_table(view) if records else []
    lines += nodes_lines(view)
    lines += findings_lines(findings)
    lines += [f"{md(line)}  " for line in view.refused_lines()]
    return "\n".join(lines)


def write_markdown(run_dir: Path, view: RunView) -> Path:
    path = run_dir / MARKDOWN_FILE
    write_atomic(path, render(view), "the run's summary")
    return path
