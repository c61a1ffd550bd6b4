"""A run as github-action-benchmark's custom JSON (benchmark-action/github-action-benchmark,
`tool: customBiggerIsBetter` or `customSmallerIsBetter`), for its GitHub Pages charts and
regression alerts.

The format is a JSON array of `{"name", "unit", "value"}` with optional `range` and `extra`
strings, and one tool (one direction) per file. So the metrics exported together must share
a direction: the default, every rate, is bigger-is-better; `--metric` may pick lower-is-better
ones instead (latencies, memory), and a mix is refused naming both kinds. A metric whose
direction is unknown is skipped and named. Each entry is one cell's metric: its median over
the successful repeats, the range of the repeats, and the commit and cell in `extra`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.report.exports import measurements
from harness.runs.files import write_atomic

TOOLS = {"higher": "customBiggerIsBetter", "lower": "customSmallerIsBetter"}


def unit_of(metric: str) -> str:
    """The unit a metric's name carries: games_per_min -> games/min, wait_ms_p95 -> ms."""
    if rate := re.fullmatch(r"(.+)_per_(s|min|h)", metric):
        return f"{rate.group(1)}/{rate.group(2)}"
    for token in reversed(metric.split("_")):
        if token in ("s", "ms", "us", "ns", "mb", "pct"):
            return {"mb": "MB", "pct": "%"}.get(token, token)
    return "value"


def export(run_dir: Path, out: Path, metrics: list[str] | None = None) -> tuple[int, list[str]]:
    meta, found = measurements(run_dir, metrics)
    skipped = sorted({f"{m.metric} (no known direction)" for m in found if m.direction not in TOOLS})
    kept = [m for m in found if m.direction in TOOLS]
    directions = {m.direction for m in kept}
    if len(directions) > 1:
        by = {d: sorted({m.metric for m in kept if m.direction == d}) for d in directions}
        raise UserError(
            "github-action-benchmark takes one direction per file: export "
            f"{', '.join(by['higher'])} (customBiggerIsBetter) and {', '.join(by['lower'])} "
            "(customSmallerIsBetter) to two files with --metric"
        )
    if not kept:
        raise UserError(f"{run_dir}: no exported metric has a direction; github-action-benchmark needs one")
    commit = str(meta.get("git_commit") or "unknown")[:12]
    entries: list[dict[str, Any]] = []
    for m in kept:
        entries.append(
            {
                "name": f"{m.benchmark} {m.metric}",
                "unit": unit_of(m.metric),
                "value": m.median,
                "range": f"{m.low:.6g}-{m.high:.6g} over {m.repeats} repeat{'s' if m.repeats != 1 else ''}",
                "extra": f"median of {m.repeats}; cell {m.cell}; commit {commit}; tool {TOOLS[m.direction or '']}",
            }
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, json.dumps(entries, indent=2) + "\n", "the github-action-benchmark export")
    return len(entries), skipped
