"""A run as a pyperf BenchmarkSuite, so `python -m pyperf compare_to a.json b.json` (and
pyperf's stats, hist, ...) work on our results.

One pyperf benchmark per cell and metric, one pyperf run per repeat holding that
repeat's value. pyperf treats every value as a cost (lower is better) and knows the units
second, byte and integer, so values are converted:

- rates (`*_per_s`, `*_per_min`, higher is better) become the time per unit, 1/rate in
  seconds: 400 iterations/s is exported as 2.5 ms per iteration, and pyperf's "faster" then
  means what it says;
- times (`*_s`, `*_ms`, `*_us`, `*_ns`) become seconds; sizes (`*_mb`) become bytes;
- other lower-is-better values (a suite's quality metrics, e.g. a distance from equilibrium)
  are exported as they are with unit "integer" (pyperf's unitless number).

Values that are zero or missing are left out (pyperf requires values > 0); a benchmark
with no value left is skipped and named in the returned list.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import math
import re
from pathlib import Path

from harness.analysis.baselines import load_run
from harness.errors import UserError
from harness.runs.files import make_dirs, replacing
from harness.runs.record import CellGroup

_TIME_SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
_RATE_SCALE = {"s": 1.0, "min": 60.0, "h": 3600.0}


def convert(metric: str, value: float) -> tuple[float, str] | None:
    """(pyperf value, pyperf unit) for one of our values, or None when pyperf cannot hold it."""
    if value is None or not math.isfinite(value) or value <= 0:
        return None
    if rate := re.search(r"_per_(s|min|h)$", metric):
        return _RATE_SCALE[rate.group(1)] / value, "second"
    if time := re.search(r"(?:^|_)(s|ms|us|ns)(?:_|$)", metric):
        return value * _TIME_SCALE[time.group(1)], "second"
    if re.search(r"(?:^|_)mb(?:_|$)", metric):
        return value * 2**20, "byte"
    return value, "integer"


def default_metrics(cells: list[CellGroup]) -> list[str]:
    names: dict[str, None] = {}
    for cell in cells:
        for rec in cell.records:
            for m in rec.metrics:
                if re.search(r"_per_(s|min|h)$", m) and cell.vocabulary.direction(m) == "higher":
                    names.setdefault(m, None)
    return list(names)


def benchmark_name(cell: CellGroup, metric: str) -> str:
    shown = f"{metric} (time per unit)" if re.search(r"_per_(s|min|h)$", metric) else metric
    return f"{cell.suite}[{cell.label}] {shown}"


def export(run_dir: Path, out: Path, metrics: list[str] | None = None) -> tuple[int, list[str]]:
    import pyperf

    run = load_run(run_dir)
    metrics = metrics or default_metrics(run.cells)
    for metric in metrics:
        owners = [c for c in run.cells if any(metric in r.metrics for r in c.records)]
        if all(c.vocabulary.direction(metric) is None for c in owners):
            raise UserError(f"--metric {metric}: pyperf needs lower-is-better values and this name says neither way")
    meta = run.run
    common = {
        k: str(v)
        for k, v in (("commit_id", meta.get("git_commit")), ("hostname", meta.get("hostname")),
                     ("cpu_model_name", meta.get("cpu_model")), ("date", meta.get("started")))
        if v
    }  # fmt: skip
    benchmarks, skipped = [], []
    for cell in run.cells:
        for metric in metrics:
            runs = []
            for repeat, value in cell.by_repeat(metric).items():
                converted = convert(metric, value)
                if converted is None:
                    continue
                number, unit = converted
                md = {"name": benchmark_name(cell, metric), "unit": unit, "harness_metric": metric,
                      "harness_cell": cell.id, "harness_repeat": repeat, **common}  # fmt: skip
                runs.append(pyperf.Run([number], metadata=md, collect_metadata=False))
            if runs:
                benchmarks.append(pyperf.Benchmark(runs))
            elif any(metric in r.metrics for r in cell.records):
                skipped.append(benchmark_name(cell, metric))
    if not benchmarks:
        raise UserError(f"{run_dir}: nothing to export for metrics {', '.join(metrics) or '(none found)'}")
    make_dirs(out.parent, "the export's folder")
    with replacing(out, "the pyperf export", mode="wb") as raw:  # whole or not at all, as pyperf's own files
        with gzip.GzipFile(fileobj=raw, mode="wb") if out.suffix == ".gz" else contextlib.nullcontext(raw) as binary:
            text = io.TextIOWrapper(binary, encoding="utf-8")
            pyperf.BenchmarkSuite(benchmarks).dump(text)
            text.detach()
    return len(benchmarks), skipped
