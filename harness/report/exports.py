"""Export formats for other tools, by name: `harness export RUN_DIR --NAME OUT`.

Each entry is "module:function" with the signature `(run_dir, out, metrics) -> (count,
skipped)`: how many benchmarks, metrics or runs it wrote and which it left out. Adding a
format is one module and one line here, plus its flag in harness/commands/export.py
(docs/architecture.md). `measurements()` is what the benchmark dashboards share: a cell's
median and range per metric. `matrix()` is what the training dashboards share (TensorBoard,
MLflow): every cell-repeat as a run of its own, its params, numbers and series on the wall
clock, and the metrics the matrix is judged by.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import UserError

if TYPE_CHECKING:
    from harness.runs.record import Record
    from harness.runs.view import RunView

Exporter = Callable[[Path, Any, list[str] | None], tuple[int, list[str]]]  # out: a Path, or --mlflow's URI

EXPORTS: dict[str, str] = {
    "pyperf": "harness.report.pyperf:export",
    "bmf": "harness.report.bmf:export",
    "github_action": "harness.report.github_action:export",
    "tensorboard": "harness.report.tensorboard:export",
    "mlflow": "harness.report.mlflow:export",
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


Param = str | float | bool  # a param's value as training dashboards take it
SERIES = "series/"  # a series' name in a training dashboard: series/<metric>, beside the metric's own


@dataclass(frozen=True)
class Point:
    """One sample of a cell-repeat's series on the wall clock."""

    metric: str
    step: int  # milliseconds since the cell's probe started (negative: sampled before it)
    wall: float  # Unix seconds
    value: float


@dataclass
class CellRepeat:
    """One cell-repeat as a training run: what a TensorBoard or MLflow run is made of."""

    record: Record
    label: str  # the cell's label (harness.runs.record.cell_label)
    params: dict[str, Param]  # every param, and "suite"
    explicit: list[str]  # the params that name the cell (not at the suite's defaults)
    metrics: dict[str, float]  # every finite number it measured
    start: float | None  # Unix seconds at the series' t_s = 0 (the probe's start)
    end: float | None  # Unix seconds when it ended
    clock_exact: bool  # False: start is the cell's start in whole seconds (older records)
    points: list[Point] = field(default_factory=list)  # its series, in time order

    @property
    def benchmark(self) -> str:
        """The cell as every report names it, `suite[label]`."""
        return f"{self.record.suite}[{self.label}]"

    @property
    def name(self) -> str:
        return f"{self.benchmark} r{self.record.repeat}"


@dataclass
class Matrix:
    """A run as training dashboards take it: a run per cell-repeat, and the metrics the
    matrix is judged by (each suite's headline rate, its other declared rates and its quality
    metrics, or the --metric list)."""

    meta: dict[str, Any]
    runs: list[CellRepeat]
    judged_by: list[str]
    name: str  # the run directory's name


def matrix(run_dir: Path, metrics: list[str] | None) -> Matrix:
    """Every cell-repeat of the run with its series; `metrics` (the --metric list) limits the
    numbers, the series and the metrics judged by to those names."""
    from harness.report.figures import load_series
    from harness.runs.record import explicit_params
    from harness.runs.series import series_origin
    from harness.runs.store import RunStore, unix_seconds
    from harness.runs.view import build_view

    store = RunStore.open(run_dir)
    meta = store.meta()
    view = build_view(store.records(), meta)
    wanted = set(metrics) if metrics else None
    runs = []
    for rec in view.records:
        origin = series_origin(rec)
        numbers = {k: v for k in rec.metrics if (v := rec.number(k)) is not None and (wanted is None or k in wanted)}
        run = CellRepeat(
            record=rec,
            label=rec.label,
            params={"suite": rec.suite, **{k: param_value(v) for k, v in rec.params.items()}},
            explicit=sorted(explicit_params(rec.suite, rec.params)),
            metrics=numbers,
            start=origin[0] if origin else None,
            end=unix_seconds(rec.ended),
            clock_exact=bool(origin and origin[1]),
        )
        series = load_series(run_dir, rec) if origin else None
        for metric, (times, values) in (series or {}).items():
            if origin is None or (wanted is not None and metric not in wanted):
                continue
            run.points += [
                Point(metric, round(1000 * t), origin[0] + t, float(v))
                for t, v in zip(times, values, strict=True)
                if math.isfinite(v)
            ]
        run.points.sort(key=lambda p: p.step)
        runs.append(run)
    if not runs:
        raise UserError(f"{run_dir}: the run has no cell-repeat to export yet")
    if wanted is not None and not any(r.metrics or r.points for r in runs):
        raise UserError(f"{run_dir}: no cell-repeat has {', '.join(sorted(wanted))}")
    return Matrix(meta, runs, judged_by(view, wanted), Path(run_dir).resolve().name)


def judged_by(view: RunView, wanted: set[str] | None) -> list[str]:
    """The metrics a training dashboard compares the matrix by, in the suites' order: each
    suite's headline rate (harness.runs.view), its other declared rates and its quality
    metrics, those that some ok repeat measured; or the --metric list."""
    if wanted is not None:
        return sorted(wanted)
    names: dict[str, None] = {}
    for suite in view.suites.values():
        words = suite.cells[0].vocabulary
        declared = [suite.rate, *(r.metric for r in words.rates), *(r.per_s for r in words.rates)]
        declared += [q.metric for q in words.quality]
        for name in declared:
            if name and name in suite.present:
                names.setdefault(name, None)
    return list(names)


def param_value(value: Any) -> Param:
    """A param as a dashboard's value: strings, finite numbers and booleans as they are,
    anything else (None, lists, tables, infinities) as its JSON text."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value) if isinstance(value, float) else value
    return json.dumps(value, sort_keys=True, default=str)


def viewer(name: str, out: Any) -> str | None:
    """The command that shows what an export wrote: its module's `view(out)`, where it has one
    (the training dashboards), else None."""
    module = importlib.import_module(EXPORTS[name].partition(":")[0])
    view = getattr(module, "view", None)
    return view(out) if view is not None else None


def exporter(name: str) -> Exporter:
    module, _, function = EXPORTS[name].partition(":")
    return getattr(importlib.import_module(module), function)
