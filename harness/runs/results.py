"""A run's records as pandas DataFrames: one row per cell-repeat, or one per cell.

Scalar metrics become columns; histograms and other nested values stay in cells.jsonl.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from harness.model.stats import spread_pct
from harness.runs.nodes import node_of
from harness.runs.record import CellGroup, Record
from harness.runs.store import RunStore

ID_COLUMNS = ["id", "suite", "repeat", "status", "reason"]
NODE_COLUMN = "ray_node"  # cells.csv: the Ray node a cell-repeat ran on
NODES_COLUMN = "ray_nodes"  # summary.csv: the Ray nodes a cell's repeats ran on
RATE_SUFFIXES = ("_per_s", "_per_min")  # rates get a spread column: (max - min) / median, %


def _scalar(value: Any) -> bool:
    return isinstance(value, int | float | str | bool) or value is None


def cells_frame(records: Sequence[Record]) -> pd.DataFrame:
    """One row per cell-repeat: ids, status, params, then scalar metrics."""
    rows = []
    param_names = param_columns(records)
    metric_names = _metric_names(records)
    on_nodes = any(node_of(r) for r in records)  # a sweep on Ray: the node each repeat ran on
    for rec in records:
        row = {k: getattr(rec, k) for k in ID_COLUMNS}
        if on_nodes:
            row[NODE_COLUMN] = node_of(rec)
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


def param_columns(records: Sequence[Record]) -> list[str]:
    names: dict[str, None] = {}
    for rec in records:
        for key in rec.params:
            names.setdefault(key, None)
    return list(names)


def _metric_names(records: Sequence[Record]) -> list[str]:
    """Scalar metrics, in first-seen order: the columns of cells.csv and summary.csv."""
    names: dict[str, None] = {}
    for rec in records:
        for key, value in rec.metrics.items():
            if _scalar(value):
                names.setdefault(key, None)
    return list(names)


def summary_frame(cells: Sequence[CellGroup], records: Sequence[Record]) -> pd.DataFrame:
    """One row per cell: params, repeat counts by status, then median/min/max of each
    numeric metric over its successful repeats: CellGroup.spread, the one median every
    report prints (finite values only: an infinite rate is no measurement)."""
    if not records:
        return cells_frame([])
    params = param_columns(list(records))
    taken = set(params) | set(ID_COLUMNS)
    metrics = [(name, name if name not in taken else f"{name}_metric") for name in _metric_names(records)]
    rows = []
    on_nodes = any(node_of(r) for r in records)
    for cell in cells:
        first = cell.records[0]
        row: dict[str, Any] = {"id": cell.id, "suite": cell.suite}
        if on_nodes:  # the nodes its repeats ran on, in the order they ran
            row[NODES_COLUMN] = ", ".join(dict.fromkeys(n for r in cell.records if (n := node_of(r))))
        row.update({p: _cell_value(first.params.get(p)) for p in params})
        statuses = [r.status for r in cell.records]
        row["repeats"] = len(statuses)
        row["ok"] = statuses.count("ok")
        row["status"] = "ok" if row["ok"] == len(statuses) else ",".join(sorted(set(statuses)))
        failed = [r for r in cell.records if not r.ok]
        row["reason"] = failed[0].reason if failed else None
        for name, column in metrics:
            spread = cell.spread(name)
            if spread is None:
                continue
            row[f"{column}_median"] = spread.median
            row[f"{column}_min"] = spread.low
            row[f"{column}_max"] = spread.high
            if column.endswith(RATE_SUFFIXES) and spread.n > 1:
                row[f"{column}_spread_pct"] = spread_pct(cell.values(name))
        rows.append(row)
    return pd.DataFrame(rows)


def load(run_dir: str | Path) -> pd.DataFrame:
    """A run directory's cells as a DataFrame (one row per cell-repeat), for notebooks."""
    return cells_frame(RunStore.open(Path(run_dir)).records())
