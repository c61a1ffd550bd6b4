"""Two runs side by side: per matched cell (same id: same suite and params) and numeric
metric, the ratio of medians B/A with a bootstrap 95 % interval and a verdict.

Only successful repeats count. A metric whose vocabulary direction is None (counters,
utilisation) gets its ratio but no verdict.

Throughputs also get a `decision` with the A/B's statistics (harness.ab.sequential): the
interval of the mean log-ratio (Welch's, both runs' repeats being independent and seen
once) against the tolerance: regression (the whole interval below 1 - tolerance), ok (the
whole interval above it) or undecided; `harness compare --fail-on regression` exits by it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.ab.sequential import DEFAULT_TOLERANCE, decide, final, welch_interval
from harness.analysis.gating import is_throughput
from harness.model.stats import ratio_of_medians, verdict
from harness.runs.record import CellGroup, Record, group_by_cell, number
from harness.runs.store import RunStore

NO_DIRECTION = "n/a"


@dataclass
class Comparison:
    run_a: Path
    run_b: Path
    meta_a: dict[str, Any]
    meta_b: dict[str, Any]
    # one row per matched cell and metric
    rows: list[dict[str, Any]] = field(default_factory=list)
    # cells only one run has, and matched cells with no successful repeat on a side
    only_a: list[dict[str, Any]] = field(default_factory=list)
    only_b: list[dict[str, Any]] = field(default_factory=list)
    unusable: list[dict[str, Any]] = field(default_factory=list)


def _describe(cell: CellGroup) -> dict[str, Any]:
    statuses = sorted({r.status for r in cell.records})
    return {
        "id": cell.id,
        "suite": cell.suite,
        "label": cell.label,
        "status": ",".join(statuses),
        "reason": next((r.reason for r in cell.records if r.reason), None),
    }


def compare_records(
    records_a: list[Record],
    records_b: list[Record],
    tolerance: float = 0.0,
    decision_tolerance: float = DEFAULT_TOLERANCE,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows, only in A, only in B, matched but without successful repeats on a side)."""
    cells_a = {c.id: c for c in group_by_cell(records_a)}
    cells_b = {c.id: c for c in group_by_cell(records_b)}
    rows, unusable = [], []
    for cell_id, a in cells_a.items():
        b = cells_b.get(cell_id)
        if b is None:
            continue
        if not a.ok or not b.ok:
            desc = _describe(CellGroup(a.id, a.suite, a.params, a.budget, a.records + b.records))
            desc["status_a"] = _describe(a)["status"]
            desc["status_b"] = _describe(b)["status"]
            unusable.append(desc)
            continue
        names: dict[str, None] = {}
        for rec in a.ok + b.ok:
            for key, value in rec.metrics.items():
                if number(value) is not None:
                    names.setdefault(key, None)
        words = a.vocabulary
        for metric in names:
            values_a, values_b = a.values(metric), b.values(metric)
            interval = ratio_of_medians(values_a, values_b) if values_a and values_b else None
            if interval is None:
                continue  # absent on a side, or a zero baseline: no ratio to give
            way = words.direction(metric)
            decision = None
            if is_throughput(a, metric):
                fixed = welch_interval(values_a, values_b)
                decision = {
                    "decision": final(decide(fixed, decision_tolerance)),
                    "decision_low": float(np.exp(fixed.low)),
                    "decision_high": float(np.exp(fixed.high)),
                }
            rows.append(
                {
                    "id": cell_id,
                    "suite": a.suite,
                    "label": a.label,
                    "metric": metric,
                    "direction": way or "",
                    "median_a": a.median(metric),
                    "median_b": b.median(metric),
                    "ratio": interval["ratio"],
                    "low": interval["low"],
                    "high": interval["high"],
                    "n_a": len(values_a),
                    "n_b": len(values_b),
                    "verdict": verdict(interval, way == "higher", tolerance) if way else NO_DIRECTION,
                    **(decision or {"decision": None}),
                }
            )
    only_a = [_describe(c) for cid, c in cells_a.items() if cid not in cells_b]
    only_b = [_describe(c) for cid, c in cells_b.items() if cid not in cells_a]
    return rows, only_a, only_b, unusable


def compare_runs(
    run_a: Path, run_b: Path, tolerance: float = 0.0, decision_tolerance: float = DEFAULT_TOLERANCE
) -> Comparison:
    store_a, store_b = RunStore.open(run_a), RunStore.open(run_b)
    rows, only_a, only_b, unusable = compare_records(
        store_a.records(), store_b.records(), tolerance, decision_tolerance
    )
    return Comparison(run_a, run_b, store_a.meta(), store_b.meta(), rows, only_a, only_b, unusable)
