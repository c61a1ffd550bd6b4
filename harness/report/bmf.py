"""A run as Bencher Metric Format JSON, for `bencher run --adapter json --file OUT`.

BMF (bencher.dev/docs/reference/bencher-metric-format) is an object of benchmarks, each an
object of measures, each `{"value": n, "lower_value": n, "upper_value": n}` (only value is
required). A benchmark here is a cell, named `suite[label]` as in every harness report; its
measures are the exported metrics (default: every rate), with the median over the cell's
successful repeats as value and the lowest and highest repeat as the bounds Bencher's
thresholds can use. Bencher keeps which way a measure is better itself, so rates and
latencies may share one file.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.report.exports import measurements
from harness.runs.files import write_atomic


def export(run_dir: Path, out: Path, metrics: list[str] | None = None) -> tuple[int, list[str]]:
    _, found = measurements(run_dir, metrics)
    document: dict[str, dict[str, dict[str, float]]] = {}
    for m in found:
        document.setdefault(m.benchmark, {})[m.metric] = {"value": m.median, "lower_value": m.low, "upper_value": m.high}
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, json.dumps(document, indent=2) + "\n", "the Bencher export")
    return len(found), []
