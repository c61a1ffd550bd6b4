"""What several commands share: where results go, and the end of a run (reports, findings)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from harness.diagnosis import Finding, diagnose
from harness.report import where
from harness.report.csv import write_csv
from harness.report.terminal import console_for_stdout, render, render_findings
from harness.roofline.efficiency import latest_limits, with_efficiency
from harness.runs.record import Record
from harness.runs.store import RunStore


def all_ok(records: list[Record]) -> int:
    """0 when every cell-repeat finished ok, 1 otherwise (and when there are none)."""
    return 0 if records and all(r.ok for r in records) else 1


def write_reports(
    store: RunStore,
    records: list[Record],
    html: bool = True,
    markdown: bool = False,
    findings: list[Finding] | None = None,
) -> list[Path]:
    """summary.csv and cells.csv, then report.html and summary.md when asked. Cells get
    `efficiency_pct` when a `harness limits` run sits beside this one."""
    records = with_efficiency(records, latest_limits(store.root.parent))
    paths = write_csv(store.root, records)
    if html or markdown:
        if findings is None:
            findings = diagnose(records, store.meta())
        as_dicts: list[dict[str, Any]] = [f.to_json() for f in findings]
        meta = store.meta()
    if html:
        from harness.report.html import write_html

        paths.append(write_html(store.root, meta, records, as_dicts))
    if markdown:
        from harness.report.markdown import write_markdown

        paths.append(write_markdown(store.root, meta, records, as_dicts))
    return paths


def finish_report(store: RunStore, records: list[Record], quiet: bool) -> list[Finding]:
    """The end of a sweep (and of a watch): reports written, the table, where the time went
    (for records the watch instruments filled) and the findings printed."""
    findings = diagnose(records, store.meta())
    try:
        paths = write_reports(store, records, html=True, findings=findings)
    except Exception as exc:  # a report bug must not cost the sweep's exit code or its CSVs
        print(
            f"warning: reports not written ({type(exc).__name__}: {exc}); retry: harness report {store.root} --html",
            file=sys.stderr,
        )
        paths = []
    if not quiet:
        render(records)
        where.render(records, console_for_stdout())
    print_findings(findings, quiet)
    failed = sum(not r.ok for r in records)
    print(f"{len(records)} cell-repeats, {failed} failed; run directory: {store.root}")
    print("reports: " + ", ".join(str(p) for p in paths))
    return findings


def print_findings(findings: list[Finding], quiet: bool) -> None:
    """The diagnoses: a table, or plain lines with --quiet."""
    if not quiet:
        render_findings(findings)
        return
    for f in findings:
        print(f"{f.severity} {f.rule} [{', '.join(f.cells)}]: {f.hint}")
