"""What several commands share: where results go, and the end of a run (reports, findings)."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.diagnosis import Finding, diagnose
from harness.errors import StorageError
from harness.report import where
from harness.report.csv import write_csv
from harness.report.terminal import console_for_stdout, render, render_findings
from harness.roofline.efficiency import latest_limits, with_efficiency
from harness.runs import nodes
from harness.runs.record import Record
from harness.runs.store import RunStore
from harness.runs.view import RunView, build_view


def all_ok(records: list[Record]) -> int:
    """0 when every cell-repeat finished ok, 1 otherwise (and when there are none)."""
    return 0 if records and all(r.ok for r in records) else 1


def run_view(store: RunStore, records: list[Record]) -> RunView:
    """The run's one view, built once for everything the command prints and writes: cells
    get `efficiency_pct` when a `harness limits` run sits beside this one, and the findings
    of every rule."""
    records = with_efficiency(records, latest_limits(store.root.parent))
    view = build_view(records, store.meta())
    view.findings = diagnose(view)
    return view


def write_reports(store: RunStore, view: RunView, html: bool = True, markdown: bool = False) -> list[Path]:
    """summary.csv and cells.csv, then report.html and summary.md when asked."""
    paths = write_csv(store.root, view)
    if html:
        from harness.report.html import write_html

        paths.append(write_html(store.root, view))
    if markdown:
        from harness.report.markdown import write_markdown

        paths.append(write_markdown(store.root, view))
    return paths


def finish_report(store: RunStore, records: list[Record], quiet: bool) -> list[Finding]:
    """The end of a sweep (and of a watch): reports written, the table, where the time went
    (for records the watch instruments filled) and the findings printed."""
    view = run_view(store, records)
    try:
        paths = write_reports(store, view, html=True)
    except StorageError as exc:  # the disk, not a bug: the run stops with the storage exit code
        exc.run_dir, exc.then = store.root, f"harness report {store.root} --html"
        raise
    except Exception as exc:  # a report bug must not cost the sweep's exit code or its CSVs
        print(
            f"warning: reports not written ({type(exc).__name__}: {exc}); retry: harness report {store.root} --html",
            file=sys.stderr,
        )
        paths = []
    if not quiet:
        render(view)
        where.render(view.records, console_for_stdout())
    findings = view.findings or []
    print_findings(findings, quiet)
    for line in view.refused_lines():
        print(line)
    for line in where.blind_lines(records):  # an empty table must not read as health
        print(f"warning: {line}")
    for row in nodes.rows(view.records, view.meta):  # a sweep on Ray: where cells ran, which nodes were lost
        if row.lost or not quiet:
            print(f"Ray node {row.line()}")
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
