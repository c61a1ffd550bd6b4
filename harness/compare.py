"""Two runs side by side: per matched cell (same id: same suite and params) and numeric
metric, the ratio of medians B/A with a bootstrap 95 % interval and a verdict.

Only successful repeats count. A metric whose name does not say which way is better
(stats.direction is None: counters, utilisation) gets its ratio but no verdict.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.report.figures import cell_label, varying_params
from harness.stats import direction, ratio_of_medians, verdict
from harness.store import RunStore

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


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _by_cell(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    cells: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        cells.setdefault(rec["id"], []).append(rec)
    return cells


def _describe(recs: list[dict[str, Any]], varying: list[str]) -> dict[str, Any]:
    statuses = sorted({str(r.get("status")) for r in recs})
    return {
        "id": recs[0]["id"],
        "suite": recs[0].get("suite"),
        "label": cell_label(recs[0], varying),
        "status": ",".join(statuses),
        "reason": next((r.get("reason") for r in recs if r.get("reason")), None),
    }


def compare_records(
    records_a: list[dict[str, Any]], records_b: list[dict[str, Any]], tolerance: float = 0.0
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows, only in A, only in B, matched but without successful repeats on a side)."""
    cells_a, cells_b = _by_cell(records_a), _by_cell(records_b)
    varying = varying_params(records_a + records_b)
    rows, unusable = [], []
    for cell_id, recs_a in cells_a.items():
        recs_b = cells_b.get(cell_id)
        if recs_b is None:
            continue
        ok_a = [r for r in recs_a if r.get("status") == "ok"]
        ok_b = [r for r in recs_b if r.get("status") == "ok"]
        if not ok_a or not ok_b:
            desc = _describe(recs_a + recs_b, varying)
            desc["status_a"] = _describe(recs_a, varying)["status"]
            desc["status_b"] = _describe(recs_b, varying)["status"]
            unusable.append(desc)
            continue
        names: dict[str, None] = {}
        for rec in ok_a + ok_b:
            for key, value in rec.get("metrics", {}).items():
                if _numeric(value):
                    names.setdefault(key, None)
        label = cell_label(recs_a[0], varying)
        for metric in names:
            a = [r["metrics"][metric] for r in ok_a if _numeric(r.get("metrics", {}).get(metric))]
            b = [r["metrics"][metric] for r in ok_b if _numeric(r.get("metrics", {}).get(metric))]
            interval = ratio_of_medians(a, b) if a and b else None
            if interval is None:
                continue  # absent on a side, or a zero baseline: no ratio to give
            way = direction(metric)
            rows.append(
                {
                    "id": cell_id,
                    "suite": recs_a[0].get("suite"),
                    "label": label,
                    "metric": metric,
                    "direction": way or "",
                    "median_a": statistics.median(a),
                    "median_b": statistics.median(b),
                    "ratio": interval["ratio"],
                    "low": interval["low"],
                    "high": interval["high"],
                    "n_a": len(a),
                    "n_b": len(b),
                    "verdict": verdict(interval, way == "higher", tolerance) if way else NO_DIRECTION,
                }
            )
    only_a = [_describe(recs, varying) for cid, recs in cells_a.items() if cid not in cells_b]
    only_b = [_describe(recs, varying) for cid, recs in cells_b.items() if cid not in cells_a]
    return rows, only_a, only_b, unusable


def compare_runs(run_a: Path, run_b: Path, tolerance: float = 0.0) -> Comparison:
    store_a, store_b = RunStore.open(run_a), RunStore.open(run_b)
    rows, only_a, only_b, unusable = compare_records(store_a.records(), store_b.records(), tolerance)
    return Comparison(run_a, run_b, store_a.meta(), store_b.meta(), rows, only_a, only_b, unusable)


def cmd_compare(run_a: Path, run_b: Path, html: bool) -> int:
    """harness compare: the terminal table, and with --html B's compare-<A>.html."""
    from harness.report.terminal import render_compare

    comparison = compare_runs(run_a, run_b)
    render_compare(comparison)
    if html:
        from harness.report.html import render_compare as render_html

        path = run_b / f"compare-{run_a.resolve().name}.html"
        path.write_text(render_html(comparison), encoding="utf-8")
        print(f"comparison: {path}")
    return 0
