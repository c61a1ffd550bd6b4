"""summary.csv (one row per cell) and cells.csv (one row per repeat): tidy, units in names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.runs.results import cells_frame, summary_frame


def write_csv(run_dir: Path, records: list[dict[str, Any]]) -> list[Path]:
    summary_path, cells_path = run_dir / "summary.csv", run_dir / "cells.csv"
    summary_frame(records).to_csv(summary_path, index=False)
    cells_frame(records).to_csv(cells_path, index=False)
    return [summary_path, cells_path]
