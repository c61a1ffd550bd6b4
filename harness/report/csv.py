"""summary.csv (one row per cell) and cells.csv (one row per repeat): tidy, units in names."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.analysis import scaling
from harness.runs.files import replacing
from harness.runs.results import cells_frame
from harness.runs.view import RunView


def summary_with_scaling(view: RunView) -> pd.DataFrame:
    """summary.csv's frame: the view's, and the USL columns of the cells in a scaling group
    (harness.analysis.scaling.summary_columns) when the run has one."""
    columns = scaling.summary_columns(view)
    frame = view.summary
    if not columns or frame.empty:
        return frame
    extra = pd.DataFrame.from_dict(columns, orient="index", columns=list(scaling.COLUMNS))
    return frame.join(extra, on="id")


def write_csv(run_dir: Path, view: RunView) -> list[Path]:
    summary_path, cells_path = run_dir / "summary.csv", run_dir / "cells.csv"
    with replacing(summary_path, "the run's summary", newline="") as fh:
        summary_with_scaling(view).to_csv(fh, index=False)
    with replacing(cells_path, "the run's cells table", newline="") as fh:
        cells_frame(view.records).to_csv(fh, index=False)
    return [summary_path, cells_path]
