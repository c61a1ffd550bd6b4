"""`harness history`: a metric's median across runs and commits, table and HTML chart."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape
from rich.table import Table

from harness.registry import vocabulary_of
from harness.report.history_html import write_chart
from harness.report.terminal import console_for_stdout
from harness.trend import collect


def main(suite: str | None, metric: str | None, results: Path, html: Path | None) -> int:
    metric, rows = collect(results, suite, metric)
    better = vocabulary_of(rows[0]["suite"]).direction(metric)
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
