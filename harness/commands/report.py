"""`harness report RUN_DIR`: the terminal table; --csv/--html/--markdown (re)write reports."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.commands import options


@options.command(epilog=options.exit_codes({0: "the table printed, the reports asked for written"}))
def report(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    csv: bool = typer.Option(False, "--csv", help="(re)write summary.csv and cells.csv"),
    html: bool = typer.Option(False, "--html", help="(re)write report.html (self-contained, opens offline)"),
    markdown: bool = typer.Option(False, "--markdown", help="write summary.md (for CI step summaries)"),
) -> int:
    """Print a run's table; --csv, --html, --markdown write those reports into the run directory."""
    from harness.commands.common import run_view, write_reports
    from harness.report.terminal import render
    from harness.runs.store import RunStore

    store = RunStore.open(run_dir)
    view = run_view(store, store.records())
    render(view)
    if csv or html or markdown:
        paths = write_reports(store, view, html=html, markdown=markdown)
        for path in paths if csv else paths[2:]:
            print(path)
    return 0
