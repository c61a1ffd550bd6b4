"""summary.csv (one row per cell) and cells.csv (one row per repeat): tidy, units in names."""

from __future__ import annotations

from pathlib import Path

from harness.runs.results import cells_frame
from harness.runs.view import RunView


def write_csv(run_dir: Path, view: RunView) -> list[Path]:
    summary_path, cells_path = run_dir / "summary.csv", run_dir / "cells.csv"
    view.summary.to_csv(summary_path, index=False)
    cells_frame(view.records).to_csv(cells_path, index=False)
    return [summary_path, cells_path]
