"""A run's records as pandas DataFrames: one row per cell-repeat, or one per cell.

Scalar metrics become columns; histograms and other nested values stay in cells.jsonl.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.model.stats import spread_pct
from harness.runs.record import Record
from harness.runs.store import RunStore

ID_COLUMNS = ["id", "suite", "repeat", "status", "reason"]
RATE_SUFFIXES = ("_per_s", "_per_min")  # rates get a spread column: (max - min) / median, %


def _scalar(value: Any) -> bool:
    return isinstance(value, int | float | str | bool) or value is None


def cells_frame(records: list[Record]) -> pd.DataFrame:
    """One row per cell-repeat: ids, status, params, then scalar metrics."""
    rows = []
    param_names = param_columns(records)
    metric_names: dict[str, None] = {}
    for rec in records:
        for key, value in rec.metrics.items():
            if _scalar(value):
                metric_names.setdefault(key, None)
    for rec in records:
        row = {k: getattr(rec, k) for k in ID_COLUMNS}
        for key in param_names:
            row[key] = _cell_value(rec.params.get(key))
        for key in metric_names:
            column = key if key not in param_names and key not in ID_COLUMNS else f"{key}_metric"
            value = rec.metrics.get(key)
            row[column] = value if _scalar(value) else None
        rows.append(row)
    # With no records the frame still has its header, so the CSV reads back.
    return pd.DataFrame(rows, columns=None if rows else ID_COLUMNS)


def _cell_value(value: Any) -> Any:
    """A param as one CSV field: lists and tables as JSON, so they read back unambiguously."""
    return value if _scalar(value) else json.dumps(value, sort_keys=True, default=str)


def param_columns(records: list[Record]) -> list[str]:
    names: dict[str, None] = {}
    for rec in records:
        for key in rec.params:
            names.setdefault(key, None)
    return list(names)


def summary_frame(records: list[Record]) -> pd.DataFrame:
    """One row per cell: params, repeat counts by status, then median/min/max of each
    numeric metric over its successful repeats."""
    cells = cells_frame(records)
    if cells.empty:
        return cells
    params = param_columns(records)
    metric_cols = [c for c in cells.columns if c not in ID_COLUMNS and c not in params]
    rows = []
    for cell_id, group in cells.groupby("id", sort=False):
        first = group.iloc[0]
        row: dict[str, Any] = {"id": cell_id, "suite": first["suite"]}
        row.update({p: first[p] for p in params})
        row["repeats"] = len(group)
        row["ok"] = int((group["status"] == "ok").sum())
        row["status"] = "ok" if row["ok"] == len(group) else ",".join(sorted(set(group["status"])))
        failed = group[group["status"] != "ok"]
        row["reason"] = failed["reason"].iloc[0] if len(failed) else None
        good = group[group["status"] == "ok"]
        for col in metric_cols:
            values = pd.to_numeric(good[col], errors="coerce").dropna()
            if values.empty:
                continue
            row[f"{col}_median"] = float(np.median(values))
            row[f"{col}_min"] = float(values.min())
            row[f"{col}_max"] = float(values.max())
            if col.endswith(RATE_SUFFIXES) and len(values) > 1:
                row[f"{col}_spread_pct"] = spread_pct(values.tolist())
        rows.append(row)
    return pd.DataFrame(rows)


def load(run_dir: str | Path) -> pd.DataFrame:
    """A run directory's cells as a DataFrame (one row per cell-repeat), for notebooks."""
    return cells_frame(RunStore.open(Path(run_dir)).records())
