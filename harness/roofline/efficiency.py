"""How far a cell is from the limit its suite declares: achieved rate over the curve.

A suite's limit benchmark (vocabulary `limits`) names the metric a cell achieves (e.g.
nn_evals_per_s), the metric giving its size (batch_mean), and which measured curves apply
to which cells; `efficiency_pct` is the achieved rate as a percentage of the curve's rate
at the cell's size (100 = as fast as the bare piece at that size).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from harness.errors import UserError
from harness.model.registry import vocabulary_of
from harness.roofline import SUITE
from harness.runs.record import Record
from harness.runs.store import RunStore


def load_limits(run_dir: Path) -> list[Record]:
    """The records of a `harness limits` run (RunStore errors name a corrupt file)."""
    return [r for r in RunStore.open(run_dir).records() if r.suite == SUITE]


def latest_limits(results_dir: Path) -> list[Record]:
    """The records of the newest `harness limits` run among a results directory's runs
    (run directories sort by their UTC timestamp), or [] when there is none."""
    for run_dir in sorted(results_dir.glob("*-limits*"), reverse=True):
        try:
            return load_limits(run_dir)
        except UserError:
            continue
    return []


def rate_at(curve: dict[str, float], size: float) -> float | None:
    """The curve's rate at a (fractional) size: linear in log2(size) between the measured
    sizes, held flat beyond the first and last."""
    points = sorted((int(b), float(v)) for b, v in curve.items())
    if not points or not size or size <= 0 or math.isnan(size):
        return None
    if size <= points[0][0]:
        return points[0][1]
    if size >= points[-1][0]:
        return points[-1][1]
    for (b0, v0), (b1, v1) in zip(points, points[1:], strict=False):
        if b0 <= size <= b1:
            w = (math.log2(size) - math.log2(b0)) / (math.log2(b1) - math.log2(b0))
            return v0 + w * (v1 - v0)
    return None


def efficiency(record: Record, limits: list[Record]) -> float | None:
    """The cell's achieved rate over the first applicable curve at its size (1.0 = as fast
    as the bare benchmark); None when the suite declares no limit or none was measured."""
    for bench in vocabulary_of(record.suite).limits:
        achieved, size = record.number(bench.achieved), record.number(bench.at)
        if achieved is None or size is None:
            continue
        kind = f"{record.suite}.{bench.name}"
        for lim in limits:
            if lim.params.get("part") != kind or not lim.ok or not bench.applies(record.params, lim.params):
                continue
            limit = rate_at(lim.metrics.get(f"{bench.unit}_per_s_curve", {}), size)
            if limit:
                return achieved / limit
    return None


def with_efficiency(records: list[Record], limits: list[Record]) -> list[Record]:
    """Copies of the records with `efficiency_pct` wherever a curve applies; the stored
    records are left as measured."""
    if not limits:
        return records
    out = []
    for record in records:
        ratio = efficiency(record, limits)
        if ratio is not None:
            record = replace(record, metrics={**record.metrics, "efficiency_pct": 100.0 * ratio})
        out.append(record)
    return out

