"""Baselines: a run's per-repeat metrics frozen into one JSON file, for `harness gate`.

A baseline keeps every repeat of every cell (not only medians: the gate's bootstrap
needs the distribution), the run's metadata (commit, machine, versions), and `bounds`:
the exact limits the correctness gate holds quality metrics to (those a suite's
vocabulary says may be gated at a fixed amount of work, e.g. NashConv). A bound is the
worst baseline repeat widened by the bound slack; it is plain JSON, so a reviewer can
tighten it by hand. A run directory reads into the same `Snapshot` a baseline does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.runs.files import write_json_atomic
from harness.runs.record import CellGroup, Record, group_by_cell
from harness.runs.store import RUN_FILE, RunStore, utc_now

BASELINE_SCHEMA = 1
DEFAULT_BASELINE_DIR = Path("results/baselines")
DEFAULT_BOUND_SLACK = 0.10
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


@dataclass
class Snapshot:
    """A run's cells and facts, from its run directory or from a baseline file."""

    cells: list[CellGroup]
    run: dict[str, Any]
    source: str
    name: str | None = None
    bounds: dict[str, dict[str, float]] = field(default_factory=dict)


def scalar_metrics(metrics: dict[str, Any]) -> dict[str, float]:
    """The numeric metrics of a record (histograms and strings stay in cells.jsonl)."""
    return {k: v for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def load_run(run_dir: Path) -> Snapshot:
    store = RunStore.open(run_dir)
    meta = store.meta()
    return Snapshot(group_by_cell(store.records()), {k: meta.get(k) for k in RUN_FIELDS}, str(run_dir))


def compute_bounds(cells: list[CellGroup], slack: float) -> dict[str, dict[str, float]]:
    """cell id -> {quality metric: bound} for fixed-work cells: the worst repeat, widened."""
    bounds: dict[str, dict[str, float]] = {}
    for cell in cells:
        if not cell.fixed_work:
            continue
        for quality in cell.vocabulary.quality:
            if not quality.bound_at_fixed_work:
                continue
            values = cell.values(quality.metric)
            if not values:
                continue
            if quality.better == "lower":
                bound = max(values) * (1 + slack)
            else:
                bound = min(values) * (1 - slack)
            bounds.setdefault(cell.id, {})[quality.metric] = bound
    return bounds


def baseline_path(name: str, directory: Path = DEFAULT_BASELINE_DIR) -> Path:
    if not name or "/" in name or name.startswith("."):
        raise UserError(f"baseline name {name!r}: use a plain name such as 'quick' (saved as {directory}/NAME.json)")
    return directory / f"{name.removesuffix('.json')}.json"


def _cell_json(cell: CellGroup) -> dict[str, Any]:
    repeats = [
        {"repeat": r.repeat, "status": r.status, "reason": r.reason, "metrics": scalar_metrics(r.metrics)}
        for r in cell.records
    ]
    return {"id": cell.id, "suite": cell.suite, "params": cell.params, "budget": cell.budget, "repeats": repeats}


def _cell_from_json(data: dict[str, Any]) -> CellGroup:
    try:
        cid, suite, params = data["id"], data["suite"], data["params"]
        records = [
            Record(cid, suite, params, r["repeat"], r["status"], r.get("reason"), budget=data.get("budget"),
                   metrics=r.get("metrics") or {})
            for r in data["repeats"]
        ]  # fmt: skip
    except (KeyError, TypeError) as exc:
        raise UserError(f"a baseline cell lacks the field {exc}; save the baseline again") from None
    return CellGroup(cid, suite, params, data.get("budget"), sorted(records, key=lambda r: r.repeat))


def save(
    run_dir: Path, name: str, directory: Path = DEFAULT_BASELINE_DIR, bound_slack: float = DEFAULT_BOUND_SLACK
) -> Path:
    run = load_run(run_dir)
    if not run.cells:
        raise UserError(f"{run_dir}: no finished cells to save as a baseline")
    path = baseline_path(name, directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "schema": BASELINE_SCHEMA,
        "name": path.stem,
        "created": utc_now(),
        "source": str(run_dir),
        "run": run.run,
        "bound_slack": bound_slack,
        "bounds": compute_bounds(run.cells, bound_slack),
        "cells": [_cell_json(c) for c in run.cells],
    }
    write_json_atomic(path, data)
    return path


def available(directory: Path) -> list[str]:
    return sorted(p.stem for p in directory.glob("*.json")) if directory.is_dir() else []


def load(name: str, directory: Path = DEFAULT_BASELINE_DIR) -> Snapshot:
    """A baseline by name (in `directory`), by path to its JSON file, or a run directory
    used directly as the baseline."""
    as_path = Path(name)
    if as_path.is_dir() and (as_path / RUN_FILE).exists():
        run = load_run(as_path)
        run.name, run.bounds = str(as_path), compute_bounds(run.cells, DEFAULT_BOUND_SLACK)
        return run
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
    cells = [_cell_from_json(c) for c in data["cells"]]
    source = str(data.get("source") or path)
    return Snapshot(cells, data.get("run") or {}, source, data.get("name") or path.stem, data.get("bounds") or {})
