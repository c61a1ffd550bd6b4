"""An A/B's results (harness.ab.experiment.CellAB) as progress lines, a terminal table and
markdown (ab.md beside ab.json: what a CI job summary or a pull-request comment shows)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.ab.experiment import EXIT_OK, EXIT_REGRESSION, ABOptions, CellAB, exit_code
from harness.report.markdown import md
from harness.report.terminal import console_for_stdout

STYLE = {"regression": "bold red", "error": "bold red", "undecided": "yellow", "ok": ""}
COLUMNS = ("cell", "metric", "candidate/base [interval]", "blocks run", "pairs", "time", "decision", "why")


def _interval(result: CellAB) -> str:
    iv = result.interval
    if iv is None or iv.n == 0:
        return "-"
    ratio, low, high = iv.ratios()
    return f"{ratio:.3f} [{low:.3f}-{high:.3f}]"


def progress_line(result: CellAB) -> str:
    """One line after each block: what the test sees so far."""
    block = result.blocks[-1]
    values = []
    for estimand in result.estimands:
        v = block.value_of(estimand)
        values.append(f"{'-' if v is None else f'{v:+.4f}'}{'' if estimand == 'wall' else f' {estimand}'}")
    return (
        f"  {result.cell.suite} {result.label}: block {block.index + 1} log-ratio {', '.join(values)} "
        f"({len(block.log_ratios(result.estimands[0]))} pairs, {block.elapsed_s:.1f} s); "
        f"so far {_interval(result)} at {result.elapsed_s:.0f} s"
    )


def rows(results: list[CellAB]) -> list[list[str]]:
    out = []
    for r in results:
        pairs = sum(len(b.log_ratios(r.estimands[0])) for b in r.blocks)
        out.append(
            [
                f"{r.cell.suite} {r.label}",
                r.metric or "-",
                _interval(r),
                str(len(r.blocks)),
                str(pairs),
                f"{r.elapsed_s:.0f} s",
                r.decision,
                "; ".join([r.reason, *r.notes]),
            ]
        )
    return out


def render_ab(results: list[CellAB], title: str, console: Console | None = None) -> None:
    console = console or console_for_stdout()
    table = Table(title=title, title_justify="left")
    for col in COLUMNS:
        table.add_column(col, justify="right" if col in ("blocks run", "pairs", "time") else "left")
    for row, result in zip(rows(results), results, strict=True):
        table.add_row(*(escape(x) for x in row), style=STYLE.get(result.decision) or None)
    console.print(table)


VERDICTS = {EXIT_OK: "no regression", EXIT_REGRESSION: "regression"}  # else undecided


def markdown(results: list[CellAB], title: str, opts: ABOptions) -> str:
    """The A/B as markdown: its verdict (the exit code's), the table the terminal prints (its
    cells escaped as summary.md's), and how to read it."""
    code = exit_code(results)
    verdict = VERDICTS.get(code, "undecided")
    lines = [
        f"## harness ab: {verdict} (exit {code})",
        "",
        f"{title}; tolerance {100 * opts.tolerance:g} %, confidence {100 * (1 - opts.alpha):g} %, "
        f"budget {opts.budget_s:g} s per cell.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
        *("| " + " | ".join(md(x) for x in row) + " |" for row in rows(results)),
        "",
        "A regression: the anytime-valid interval of the median block's candidate/base lies wholly below "
        "1 - tolerance. Undecided: the budget ran out before the interval cleared the tolerance either way "
        "(a noisy machine, or a difference near the tolerance).",
    ]
    return "\n".join(lines) + "\n"
