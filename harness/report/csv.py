"""summary.csv (one row per cell) and cells.csv (one row per repeat): tidy, units in names."""

from __future__ import annotations

from pathlib import Path

from harness.runs.files import replacing
from harness.runs.results import cells_frame
from harness.runs.view import RunView


def write_csv(run_dir: Path, view: RunView) -> list[Path]:
    summary_path, cells_path = run_dir / "summary.csv", run_dir / "cells.csv"
    with replacing(summary_path, "the run's summary", newline="") as fh:
        view.summary.to_csv(fh, index=False)
    with replacing(cells_path, "the run's cells table", newline="") as fh:
        cells_frame(view.records).to_csv(fh, index=False)
    return [summary_path, cells_path]
