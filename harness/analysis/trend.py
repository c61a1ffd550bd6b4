"""A metric across runs: every run's per-cell median in time order, with its git commit,
per machine, and the runs where its level changed.

Scans a results directory for run directories (anything holding run.json; baselines are
skipped), so a series of nightly sweeps becomes a table and a chart. A run directory that
cannot be read is skipped with a warning: one broken run must not hide the others.
Without --metric, each suite's own headline rate (its vocabulary) is used.

Every run is keyed by its machine (host, CPU model, GPUs, from run.json): a series is one
machine's and one cell's runs, never a mix, since two machines differ by more than most
regressions. Each series gets its change points (harness.analysis.changes): the first run of a new
level carries `change`, the relative step from the level before.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from harness.analysis.baselines import Snapshot, load_run
from harness.analysis.changes import change_points
from harness.errors import UserError
from harness.runs.store import RUN_FILE
from harness.runs.view import headline_rate


def run_directories(results: Path) -> list[Path]:
    if not results.is_dir():
        raise UserError(f"--results {results}: no such directory (run a sweep first, or point at its --out)")
    return sorted(p.parent for p in results.glob(f"*/{RUN_FILE}"))


def collect(results: Path, suite: str | None, metric: str | None) -> tuple[str, list[dict[str, Any]]]:
    """(metric, rows): one row per (run, cell) with the median of `metric` over ok repeats."""
    runs: list[Snapshot] = []
    for run_dir in run_directories(results):
        try:
            runs.append(load_run(run_dir))
        except UserError as exc:
            warnings.warn(f"skipped {run_dir}: {exc}", stacklevel=2)
    cells = [(run, cell) for run in runs for cell in run.cells if suite is None or cell.suite == suite]
    if not cells:
        where = f" of suite {suite}" if suite else ""
        raise UserError(f"{results}: no run directory holds cells{where}")
    if metric is None:
        metric = headline_rate(r for _, cell in cells for r in cell.records)
        if metric is None:
            raise UserError("no throughput metric found; name one with --metric")
    rows = []
    for run, cell in cells:
        spread = cell.spread(metric)
        if spread is None:
            continue
        meta = run.run
        rows.append(
            {
                "machine": machine_of(meta),
                "started": meta.get("started") or "",
                "commit": (meta.get("git_commit") or "")[:10] + ("+dirty" if meta.get("git_dirty") else ""),
                "run": Path(run.source).name,
                "suite": cell.suite,
                "cell": f"{cell.suite} {cell.label}",
                "median": spread.median,
                "min": spread.low,
                "max": spread.high,
                "n": spread.n,
            }
        )
    if not rows:
        raise UserError(f"no run reports {metric}" + (f" for suite {suite}" if suite else ""))
    rows.sort(key=lambda r: (r["machine"], r["cell"], r["started"]))
    mark_changes(rows)
    return metric, rows


def machine_of(meta: dict[str, Any]) -> str:
    """'host / CPU model / GPUs' from a run's facts; runs without them say 'unknown'."""
    gpus = meta.get("gpus") or []
    names = sorted({g.get("name", "?") for g in gpus if isinstance(g, dict)})
    gpu = " + ".join(names) if names else "no GPU"
    return f"{meta.get('hostname') or 'unknown host'} / {meta.get('cpu_model') or 'unknown CPU'} / {gpu}"


def series(rows: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Rows by (machine, cell), each in time order: the lines of the table and chart."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault((row["machine"], row["cell"]), []).append(row)
    for mine in out.values():
        mine.sort(key=lambda r: r["started"])
    return out


def mark_changes(rows: list[dict[str, Any]]) -> None:
    """Set `change` (relative step, or None) and `change_p` on every row, per series."""
    for row in rows:
        row["change"], row["change_p"] = None, None
    for mine in series(rows).values():
        for change in change_points([r["median"] for r in mine]):
            mine[change.index]["change"] = change.relative
            mine[change.index]["change_p"] = change.p_value
