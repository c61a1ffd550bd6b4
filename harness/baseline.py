"""Baselines: a run's per-repeat metrics frozen into one JSON file, for `harness gate`.

A baseline keeps every repeat of every cell (not only medians: the gate's bootstrap
needs the distribution), the run's metadata (commit, machine, versions), and `bounds`:
the exact limits the correctness gate holds quality metrics to (exploitability and
NashConv of cells run at a fixed amount of work). A bound is the worst baseline repeat
times (1 + bound slack); it is plain JSON, so a reviewer can tighten it by hand.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.store import RUN_FILE, RunStore, utc_now, write_json_atomic

BASELINE_SCHEMA = 1
DEFAULT_BASELINE_DIR = Path("results/baselines")
DEFAULT_BOUND_SLACK = 0.10
QUALITY_METRICS = ("exploitability", "nash_conv")
RUN_FIELDS = (
    "label",
    "command",
    "started",
    "ended",
    "git_commit",
    "git_dirty",
    "hostname",
    "platform",
    "cpu_model",
    "cpu_cores",
    "memory_total_mb",
    "python",
    "versions",
    "harness_version",
    "gpus",
)


def scalar_metrics(metrics: dict[str, Any]) -> dict[str, float]:
    """The numeric metrics of a record (histograms and strings stay in cells.jsonl)."""
    return {k: v for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def ok_values(cell: dict[str, Any], metric: str) -> dict[int, float]:
    """repeat -> value, over the repeats that finished ok and have a finite value."""
    out = {}
    for rep in cell["repeats"]:
        value = rep["metrics"].get(metric)
        if rep["status"] == "ok" and value is not None and math.isfinite(value):
            out[rep["repeat"]] = float(value)
    return out


def fixed_work(cell: dict[str, Any]) -> bool:
    return (cell.get("budget") or {}).get("work") is not None


def cells_of(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records grouped by cell id, in first-seen order, each repeat with its status and
    numeric metrics."""
    cells: dict[str, dict[str, Any]] = {}
    for rec in records:
        try:
            cid, suite, params, repeat, status = rec["id"], rec["suite"], rec["params"], rec["repeat"], rec["status"]
        except (KeyError, TypeError) as exc:
            raise UserError(f"a cell record lacks the field {exc}; is this a run directory's cells.jsonl?") from None
        cell = cells.setdefault(
            cid, {"id": cid, "suite": suite, "params": params, "budget": rec.get("budget"), "repeats": []}
        )
        cell["repeats"].append(
            {
                "repeat": repeat,
                "status": status,
                "reason": rec.get("reason"),
                "metrics": scalar_metrics(rec.get("metrics") or {}),
            }
        )
    for cell in cells.values():
        cell["repeats"].sort(key=lambda r: r["repeat"])
    return list(cells.values())


def load_run(run_dir: Path) -> dict[str, Any]:
    """A run directory as the same shape a baseline has: {"run": meta, "cells": [...]}."""
    store = RunStore.open(run_dir)
    meta = store.meta()
    if not isinstance(meta, dict):
        raise UserError(f"{run_dir / RUN_FILE}: expected a JSON object")
    cells = cells_of(store.records())
    return {"run": {k: meta.get(k) for k in RUN_FIELDS}, "cells": cells, "source": str(run_dir)}


def compute_bounds(cells: list[dict[str, Any]], slack: float) -> dict[str, dict[str, float]]:
    bounds: dict[str, dict[str, float]] = {}
    for cell in cells:
        if not fixed_work(cell):
            continue
        for metric in QUALITY_METRICS:
            values = [r["metrics"][metric] for r in cell["repeats"] if r["status"] == "ok" and metric in r["metrics"]]
            if values:
                bounds.setdefault(cell["id"], {})[metric] = max(values) * (1 + slack)
    return bounds


def baseline_path(name: str, directory: Path = DEFAULT_BASELINE_DIR) -> Path:
    if not name or "/" in name or name.startswith("."):
        raise UserError(f"baseline name {name!r}: use a plain name such as 'quick' (saved as {directory}/NAME.json)")
    return directory / f"{name.removesuffix('.json')}.json"


def save(
    run_dir: Path, name: str, directory: Path = DEFAULT_BASELINE_DIR, bound_slack: float = DEFAULT_BOUND_SLACK
) -> Path:
    run = load_run(run_dir)
    if not run["cells"]:
        raise UserError(f"{run_dir}: no finished cells to save as a baseline")
    path = baseline_path(name, directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "schema": BASELINE_SCHEMA,
        "name": path.stem,
        "created": utc_now(),
        "source": str(run_dir),
        "run": run["run"],
        "bound_slack": bound_slack,
        "bounds": compute_bounds(run["cells"], bound_slack),
        "cells": run["cells"],
    }
    write_json_atomic(path, data)
    return path


def available(directory: Path) -> list[str]:
    return sorted(p.stem for p in directory.glob("*.json")) if directory.is_dir() else []


def load(name: str, directory: Path = DEFAULT_BASELINE_DIR) -> dict[str, Any]:
    """A baseline by name (in `directory`), by path to its JSON file, or a run directory
    used directly as the baseline."""
    as_path = Path(name)
    if as_path.is_dir() and (as_path / RUN_FILE).exists():
        run = load_run(as_path)
        return {"name": str(as_path), "bounds": compute_bounds(run["cells"], DEFAULT_BOUND_SLACK), **run}
    path = as_path if name.endswith(".json") and as_path.exists() else baseline_path(name, directory)
    if not path.is_file():
        names = ", ".join(available(directory)) or "none"
        raise UserError(
            f"unknown baseline {name!r}: {path} does not exist (baselines in {directory}: {names}); "
            "create one with: harness baseline save RUN_DIR --name NAME"
        )
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise UserError(f"{path}: not a baseline (no 'cells' list); create one with harness baseline save")
    if data.get("schema") != BASELINE_SCHEMA:
        raise UserError(f"{path}: baseline schema {data.get('schema')!r}, this harness reads {BASELINE_SCHEMA}")
    data.setdefault("bounds", {})
    data.setdefault("name", path.stem)
    return data


def cmd_baseline_save(run_dir: Path, name: str, directory: Path, bound_slack: float) -> int:
    path = save(run_dir, name, directory, bound_slack)
    data = json.loads(path.read_text())
    repeats = sum(len(c["repeats"]) for c in data["cells"])
    print(
        f"baseline {data['name']}: {len(data['cells'])} cells, {repeats} repeats, commit {data['run'].get('git_commit')}"
    )
    print(f"written: {path}")
    return 0
