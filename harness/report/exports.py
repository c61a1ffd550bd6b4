"""Export formats for other tools, by name: `harness export RUN_DIR --NAME OUT`.

Each entry is "module:function" with the signature `(run_dir, out, metrics) -> (count,
skipped)`: how many benchmarks or metrics it wrote and which it left out. Adding a format
is one module and one line here, plus its flag in harness/commands/export.py (docs/architecture.md).
`measurements()` is what the dashboard formats share: a cell's median and range per metric.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import UserError

Exporter = Callable[[Path, Path, list[str] | None], tuple[int, list[str]]]

EXPORTS: dict[str, str] = {
    "pyperf": "harness.report.pyperf:export",
    "bmf": "harness.report.bmf:export",
    "github_action": "harness.report.github_action:export",
}


@dataclass(frozen=True)
class Measurement:
    """One cell's metric over its successful repeats, as dashboards take it."""

    benchmark: str  # "suite[label]": the same name in every run, comparison and gate
    metric: str
    median: float
    low: float  # the lowest and highest repeat
    high: float
    repeats: int
    direction: str | None  # "higher" | "lower" | None (the suite's vocabulary)
    cell: str


def measurements(run_dir: Path, metrics: list[str] | None) -> tuple[dict[str, Any], list[Measurement]]:
    """run.json's facts and every (cell, metric) with a successful repeat; the default
    metrics are every rate (harness.report.pyperf.default_metrics)."""
    from harness.analysis.baselines import load_run
    from harness.report.pyperf import default_metrics

    run = load_run(run_dir)
    chosen = metrics or default_metrics(run.cells)
    out = []
    for cell in run.cells:
        for metric in chosen:
            spread = cell.spread(metric)
            if spread is not None:
                out.append(
                    Measurement(
                        f"{cell.suite}[{cell.label}]", metric, spread.median, spread.low, spread.high,
                        spread.n, cell.vocabulary.direction(metric), cell.id,
                    )
                )  # fmt: skip
    if not out:
        raise UserError(f"{run_dir}: no successful cell has {', '.join(chosen) or 'a rate'} to export")
    return run.run, out


def exporter(name: str) -> Exporter:
    module, _, function = EXPORTS[name].partition(":")
    return getattr(importlib.import_module(module), function)
