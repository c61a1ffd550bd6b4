"""The terminal table: one table per suite, the params that vary, status and headline metrics."""

from __future__ import annotations

import sys
from typing import Any

import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.analysis import scaling
from harness.report import evidence
from harness.runs import provenance
from harness.runs.results import param_columns
from harness.runs.view import RunView

MAX_METRICS = 7
PIPE_WIDTH = 160  # when stdout is a file or CI log, 80 columns would fold every table


def console_for_stdout() -> Console:
    """A console as wide as the terminal, or PIPE_WIDTH when output goes to a log."""
    return Console(width=None if sys.stdout.isatty() else PIPE_WIDTH)


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return evidence.number(value)  # the one number format of every report
    return escape(str(value))


def render(view: RunView, console: Console | None = None) -> None:
    console = console or console_for_stdout()
    summary = view.summary
    if summary.empty:
        console.print("no finished cells")
        return
    for suite, group in summary.groupby("suite", sort=False):
        words = view.suites[str(suite)]
        params = [p for p in param_columns(words.records) if p in group and group[p].astype(str).nunique() > 1]
        metrics = words.columns[:MAX_METRICS]
        table = Table(title=f"{suite} ({len(group)} cells)", title_justify="left")
        for col in ["id", *params, "status"]:
            table.add_column(col)
        for metric in metrics:
            table.add_column(f"{metric}\nmedian [min-max]" if group["repeats"].max() > 1 else metric, justify="right")
        notes = {c.id: note for c in words.cells if (note := provenance.cell_note(c.records))}
        for _, row in group.iterrows():
            cells = [_fmt(row["id"]), *(_fmt(row[p]) for p in params)]
            status = row["status"] if row["status"] == "ok" else f"[red]{row['status']}[/red]: {_fmt(row['reason'])}"
            cells.append(status)
            for metric in metrics:
                median = row.get(f"{metric}_median")
                text = _fmt(median)
                if row["repeats"] > 1 and not pd.isna(median):
                    text += f" [{_fmt(row[f'{metric}_min'])}-{_fmt(row[f'{metric}_max'])}]"
                if metric == words.rate and row["id"] in notes:
                    text += f" [red]({notes[row['id']]})[/red]"
                cells.append(text)
            table.add_row(*cells)
        console.print(table)
        if words.provenance:
            console.print(f"[dim]headline[/dim] {escape(words.provenance)}", highlight=False)
        for warning in words.spread_warnings:
            console.print(f"[yellow]warning[/yellow]: {escape(warning)}", highlight=False)
        for group in scaling.of_suite(view, str(suite)):
            console.print(escape(scaling.line(group)), highlight=False)


SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def render_findings(findings: list[Any], console: Console | None = None) -> None:
    """Diagnoses (harness.diagnosis.Finding), most severe first: severity, rule and cells on
    one line, then indented the finding with its remedy and its evidence, one row a line
    (hints are long; a table column would fold them into a narrow strip)."""
    console = console or console_for_stdout()
    if not findings:
        console.print("diagnose: no findings")
        return
    console.print(f"[bold]diagnose: {len(findings)} finding{'s' if len(findings) != 1 else ''}[/bold]")
    for f in findings:
        style = SEVERITY_STYLE.get(f.severity, "")
        cells = ", ".join(f.cells[:6]) + (f" +{len(f.cells) - 6} more" if len(f.cells) > 6 else "")
        console.print(f"[{style}]{f.severity:<7}[/{style}] [bold]{f.rule}[/bold]  cells {escape(cells)}")
        console.print(f"        {escape(f.hint)}", highlight=False)
        for label, text in evidence.rows(f.evidence):
            console.print(f"          [dim]{escape(label)}[/dim] {escape(text)}", highlight=False)


VERDICT_STYLE = {"better": "green", "worse": "red", "same": "", "n/a": "dim"}


def render_compare(comparison: Any, console: Console | None = None) -> None:
    """Ratios B/A of the metrics that have a direction; counters and utilisation (no
    direction) are left to the HTML report."""
    console = console or console_for_stdout()
    directed = [r for r in comparison.rows if r["direction"]]
    table = Table(
        title=f"B / A: {escape(comparison.run_b.name)} over {escape(comparison.run_a.name)} (median ratio, 95% bootstrap interval)",
        title_justify="left",
    )
    for col in ("cell", "metric", "A median", "B median", "ratio [95% interval]", "n A/B", "verdict", "decision"):
        table.add_column(col, justify="right" if col in ("A median", "B median", "n A/B") else "left")
    for row in directed:
        style = VERDICT_STYLE.get(row["verdict"], "")
        table.add_row(
            escape(f"{row['suite']} {row['label']}"),
            escape(row["metric"]),
            _fmt(row["median_a"]),
            _fmt(row["median_b"]),
            f"{row['ratio']:.3f} [{row['low']:.3f}-{row['high']:.3f}]",
            f"{row['n_a']}/{row['n_b']}",
            f"[{style}]{row['verdict']}[/{style}]" if style else row["verdict"],
            row.get("decision") or "",
        )
    if directed:
        console.print(table)
    else:
        console.print("no matched cell has a metric with a known direction to compare")
    for title, cells in (
        (f"only in A ({comparison.run_a})", comparison.only_a),
        (f"only in B ({comparison.run_b})", comparison.only_b),
        ("matched, but without a successful repeat on one side", comparison.unusable),
    ):
        if cells:
            console.print(f"{escape(title)}:")
            for cell in cells:
                reason = f": {cell['reason']}" if cell.get("reason") else ""
                console.print(
                    f"  {escape(cell['id'])} {escape(str(cell['suite']))} {escape(cell['label'])} ({escape(cell['status'])}){escape(reason)}",
                    highlight=False,
                )
    counts = {v: sum(r["verdict"] == v for r in directed) for v in ("better", "worse", "same")}
    console.print(f"{counts['better']} better, {counts['worse']} worse, {counts['same']} same", highlight=False)
