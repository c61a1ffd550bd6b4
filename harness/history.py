"""A metric across runs: every run's per-cell median in time order, with its git commit.

Scans a results directory for run directories (anything holding run.json; baselines are
skipped), so a series of nightly sweeps becomes a table and a chart. A run directory that
cannot be read is skipped with a warning: one broken run must not hide the others.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from harness.baseline import load_run, ok_values
from harness.errors import UserError
from harness.labels import cell_label
from harness.stats import direction
from harness.store import RUN_FILE

DEFAULT_METRIC_ORDER = (
    "iterations_per_s",
    "games_per_min",
    "nn_evals_per_s",
    "env_steps_per_s",
    "updates_per_s",
    "units_per_s",
    "round_trips_per_s",
)


def run_directories(results: Path) -> list[Path]:
    if not results.is_dir():
        raise UserError(f"--results {results}: no such directory (run a sweep first, or point at its --out)")
    return sorted(p.parent for p in results.glob(f"*/{RUN_FILE}"))


def collect(results: Path, suite: str | None, metric: str | None) -> tuple[str, list[dict[str, Any]]]:
    """(metric, rows): one row per (run, cell) with the median of `metric` over ok repeats."""
    runs = []
    for run_dir in run_directories(results):
        try:
            runs.append(load_run(run_dir))
        except UserError as exc:
            warnings.warn(f"skipped {run_dir}: {exc}", stacklevel=2)
    cells = [(run, cell) for run in runs for cell in run["cells"] if suite is None or cell["suite"] == suite]
    if not cells:
        where = f" of suite {suite}" if suite else ""
        raise UserError(f"{results}: no run directory holds cells{where}")
    if metric is None:
        present = {m for _, cell in cells for r in cell["repeats"] for m in r["metrics"]}
        metric = next((m for m in DEFAULT_METRIC_ORDER if m in present), None)
        if metric is None:
            raise UserError("no throughput metric found; name one with --metric")
    rows = []
    for run, cell in cells:
        values = list(ok_values(cell, metric).values())
        if not values:
            continue
        meta = run["run"]
        rows.append(
            {
                "started": meta.get("started") or "",
                "commit": (meta.get("git_commit") or "")[:10] + ("+dirty" if meta.get("git_dirty") else ""),
                "run": Path(run["source"]).name,
                "suite": cell["suite"],
                "cell": f"{cell['suite']} {cell_label(cell['suite'], cell['params'])}",
                "median": float(np.median(values)),
                "min": float(min(values)),
                "max": float(max(values)),
                "n": len(values),
            }
        )
    if not rows:
        raise UserError(f"no run reports {metric}" + (f" for suite {suite}" if suite else ""))
    rows.sort(key=lambda r: (r["started"], r["cell"]))
    return metric, rows


def cmd_history(suite: str | None, metric: str | None, results: Path, html: Path | None) -> int:
    from rich.markup import escape
    from rich.table import Table

    from harness.report.history_html import write_chart
    from harness.report.terminal import console_for_stdout

    metric, rows = collect(results, suite, metric)
    better = direction(metric)
    title = f"{metric} per run" + (f" ({better} is better)" if better else "")
    table = Table(title=title, title_justify="left")
    for col in ("started", "commit", "cell", "median", "min-max", "n"):
        table.add_column(col, justify="right" if col in ("median", "n") else "left")
    for r in rows:
        table.add_row(
            r["started"],
            r["commit"],
            escape(r["cell"]),
            f"{r['median']:.4g}",
            f"{r['min']:.4g}-{r['max']:.4g}",
            str(r["n"]),
        )
    console_for_stdout().print(table)
    path = html or results / f"history-{suite or 'all'}-{metric}.html"
    write_chart(path, metric, rows)
    print(f"chart: {path}")
    return 0
