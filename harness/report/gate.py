"""A gate result (harness.analysis.gating.evaluate) as a terminal table and as markdown for CI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.report.terminal import console_for_stdout
from harness.runs.files import write_atomic

STYLE = {
    "regression": "bold red",
    "improvement": "green",
    "ok": "",
    "new": "yellow",
    "missing": "yellow",
    "undecided": "yellow",
}
COLUMNS = ("cell", "check", "baseline", "run", "ratio [interval]", "p", "verdict", "note")


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:.4g}"


def _ratio(check: dict[str, Any]) -> str:
    if check.get("ratio") is None:
        return "-"
    return f"{check['ratio']:.3f} [{check['low']:.3f}-{check['high']:.3f}]"


def rows(result: dict[str, Any]) -> list[list[str]]:
    out = []
    for c in result["checks"]:
        out.append(
            [
                f"{c['suite']} {c['label']}",
                c["metric"] or ("status" if c["kind"] == "correctness" else c["kind"]),
                _num(c["baseline"]),
                _num(c["candidate"]),
                _ratio(c),
                "-" if c.get("p_value") is None else f"{c['p_value']:.3g}",
                c["verdict"],
                c["note"],
            ]
        )
    return out


def headline(result: dict[str, Any]) -> str:
    opts = result["options"]
    norm = f", normalized by {opts['normalize']}" if opts.get("normalize") else ""
    against = []
    if result.get("baseline"):
        against.append(f"baseline {result['baseline']['name']}")
    if result.get("against"):
        against.append(f"A/B against {result['against']['rev']}")
    undecided = f", {result.get('undecided', 0)} undecided" if result.get("undecided") else ""
    return (
        f"gate {result['verdict'].upper()}: {result['regressions']} regression(s){undecided}, "
        f"{result['improvements']} improvement(s) vs {' and '.join(against)} "
        f"(tolerance {100 * opts['tolerance']:g}%, {100 * opts['confidence']:g}% interval{norm})"
    )


def render_gate(result: dict[str, Any], console: Console | None = None) -> None:
    # CI logs are not terminals: give the table room instead of rich's default 80 columns.
    console = console or console_for_stdout()
    table = Table(title=headline(result), title_justify="left")
    for col in COLUMNS:
        table.add_column(col, justify="right" if col in ("baseline", "run", "p") else "left")
    for row, check in zip(rows(result), result["checks"], strict=True):
        style = STYLE.get(check["verdict"], "dim")
        table.add_row(*(escape(x) for x in row), style=style or None)
    console.print(table)
    for note in result["notes"]:
        console.print(f"note: {escape(note)}")


def markdown(result: dict[str, Any]) -> str:
    base, run = result["baseline"], result["run"]
    lines = [
        f"## {headline(result)}",
        "",
        f"- run: `{run.get('source')}` commit `{run.get('git_commit')}` on {run.get('hostname')}, started {run.get('started')}",
    ]
    if base:
        lines.append(
            f"- baseline: `{base.get('name')}` commit `{base.get('git_commit')}` on {base.get('hostname')}, "
            f"started {base.get('started')}"
        )
    if result.get("against"):
        lines.append(
            f"- speed: each cell time-sliced against `{result['against']['rev']}` on this machine; a regression "
            "only when the whole anytime-valid interval of candidate/base lies below 1 - tolerance, undecided "
            f"when the budget ran out first (raw slices: `{result['against']['ab']}`)"
        )
    else:
        lines.append("- speed checks fail only when the whole interval of the ratio of medians lies beyond the tolerance")
    lines.append("")
    lines += [f"- note: {note}" for note in result["notes"]]
    if result["notes"]:
        lines.append("")
    bad = [r for r, c in zip(rows(result), result["checks"], strict=True) if c["verdict"] in ("regression", "missing")]
    for title, table in (("Regressions", bad), ("All checks", rows(result))):
        if title == "Regressions" and not table:
            continue
        lines += [f"### {title}", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(x.replace("|", "\\|") for x in row) + " |" for row in table]
        lines.append("")
    lines.append("cell ids: " + ", ".join(f"{c['suite']} {c['label']} = {c['cell']}" for c in _unique_cells(result)))
    return "\n".join(lines) + "\n"


def _unique_cells(result: dict[str, Any]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for c in result["checks"]:
        seen.setdefault(c["cell"], c)
    return list(seen.values())


def write_markdown(path: Path, result: dict[str, Any]) -> None:
    write_atomic(path, markdown(result), "the gate's report")
