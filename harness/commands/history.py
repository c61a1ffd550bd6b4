"""`harness history`: a metric's median across runs and commits, table and HTML chart."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.commands import options
from harness.runs import DEFAULT_RESULTS


@options.command(epilog=options.exit_codes({0: "the table printed, the chart written"}))
def history(
    suite: str = typer.Option(None, "--suite", help="only this suite's cells"),
    metric: str = typer.Option(None, "--metric", help="default: the suite's headline rate"),
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="directory holding run directories"),
    html: Path = typer.Option(None, "--html", help="chart path (default RESULTS/history-SUITE-METRIC.html)"),
) -> int:
    """Every run's median of a metric in time order, with its git commit: table and HTML chart."""
    from rich.markup import escape
    from rich.table import Table

    from harness.analysis.trend import collect
    from harness.model.registry import vocabulary_of
    from harness.report.history_html import write_chart
    from harness.report.terminal import console_for_stdout

    metric, rows = collect(results, suite, metric)
    better = vocabulary_of(rows[0]["suite"]).direction(metric)
    title = f"{metric} per run" + (f" ({better} is better)" if better else "")
    console = console_for_stdout()
    machines = list(dict.fromkeys(r["machine"] for r in rows))
    for machine in machines:
        table = Table(title=f"{title} on {escape(machine)}", title_justify="left")
        for col in ("cell", "started", "commit", "median", "min-max", "n", "change"):
            table.add_column(col, justify="right" if col in ("median", "n") else "left")
        for r in (r for r in rows if r["machine"] == machine):
            change = "" if r["change"] is None else f"{100 * r['change']:+.1f} % (p {r['change_p']:.3f})"
            table.add_row(
                escape(r["cell"]),
                r["started"],
                r["commit"],
                f"{r['median']:.4g}",
                f"{r['min']:.4g}-{r['max']:.4g}",
                str(r["n"]),
                change,
                style="bold" if change else None,
            )
        console.print(table)
    changes = sum(r["change"] is not None for r in rows)
    console.print(
        f"{changes} change point(s) over {len(machines)} machine(s): E-divisive means, permutation p <= 0.05, "
        "at least 3 runs on each side",
        highlight=False,
    )
    path = html or results / f"history-{suite or 'all'}-{metric}.html"
    write_chart(path, metric, rows)
    print(f"chart: {path}")
    return 0
