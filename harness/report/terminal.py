"""The terminal table: one table per suite, the params that vary, status and headline metrics."""

from __future__ import annotations

from typing import Any

import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.results import param_columns, summary_frame

HEADLINE = (
    "iterations_per_s",
    "games_per_min",
    "moves_per_s",
    "nn_evals_per_s",
    "env_steps_per_s",
    "updates_per_s",
    "units_per_s",
    "round_trips_per_s",
    "batch_mean",
    "wait_ms_p95",
    "exploitability",
    "nash_conv",
    "mean_return",
    "work_done",
    "work_requested",
    "cpu_util_mean",
    "rss_peak_mb",
    "gpu_util_mean",
)
MAX_METRICS = 7


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return escape(str(value))


def render(records: list[dict[str, Any]], console: Console | None = None) -> None:
    console = console or Console()
    summary = summary_frame(records)
    if summary.empty:
        console.print("no finished cells")
        return
    for suite, group in summary.groupby("suite", sort=False):
        suite_records = [r for r in records if r["suite"] == suite]
        params = [p for p in param_columns(suite_records) if p in group and group[p].astype(str).nunique() > 1]
        metrics = [m for m in HEADLINE if f"{m}_median" in group and group[f"{m}_median"].notna().any()]
        metrics = metrics[:MAX_METRICS]
        table = Table(title=f"{suite} ({len(group)} cells)", title_justify="left")
        for col in ["id", *params, "status"]:
            table.add_column(col)
        for metric in metrics:
            table.add_column(f"{metric}\nmedian [min-max]" if group["repeats"].max() > 1 else metric, justify="right")
        for _, row in group.iterrows():
            cells = [_fmt(row["id"]), *(_fmt(row[p]) for p in params)]
            status = row["status"] if row["status"] == "ok" else f"[red]{row['status']}[/red]: {_fmt(row['reason'])}"
            cells.append(status)
            for metric in metrics:
                median = row.get(f"{metric}_median")
                text = _fmt(median)
                if row["repeats"] > 1 and not pd.isna(median):
                    text += f" [{_fmt(row[f'{metric}_min'])}-{_fmt(row[f'{metric}_max'])}]"
                cells.append(text)
            table.add_row(*cells)
        console.print(table)
