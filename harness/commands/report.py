"""`harness report RUN_DIR`: the terminal table; --csv/--html/--markdown (re)write reports."""

from __future__ import annotations

from pathlib import Path

from harness.commands.common import run_view, write_reports
from harness.report.terminal import render
from harness.runs.store import RunStore


def main(run_dir: Path, csv: bool, html: bool = False, markdown: bool = False) -> int:
    store = RunStore.open(run_dir)
    view = run_view(store, store.records())
    render(view)
    if csv or html or markdown:
        paths = write_reports(store, view, html=html, markdown=markdown)
        for path in paths if csv else paths[2:]:
            print(path)
    return 0
