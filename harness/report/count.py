"""A counted A/B's results (harness.count.cells.CountedCell) as a line per counted run, a
terminal table and markdown (ab.md: what a CI job summary shows): the counts, the waits and
the time A/B beside them, every process's count, and where counted work grew."""

from __future__ import annotations

import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.ab.experiment import ABOptions, exit_code
from harness.ab.sequential import Interval
from harness.count.cells import CountedCell
from harness.count.experiment import CountOptions
from harness.count.window import Counted
from harness.report.ab import STYLE, VERDICTS
from harness.report.markdown import md
from harness.report.terminal import console_for_stdout

COLUMNS = (
    "cell",
    "counted work cand/base [runs]",
    "time on the CPU [waits]",
    "time A/B [cpu, runq]",
    "decision",
    "why",
)


def run_line(run: Counted) -> str:
    """One line per counted run, as it ends."""
    first, second = run.halves_per_unit
    busy = [p for p in run.processes if sum(p.halves)]
    return (
        f"  counted {run.label}: {run.per_unit:,.0f} instructions per unit of {run.counter} "
        f"over {sum(run.units):g} units (halves {first:,.0f} / {second:,.0f}), {len(busy)} of {len(run.processes)} "
        f"process(es) counted, {run.wall_s:.0f} s"
    )


def _interval(iv: Interval | None) -> str:
    if iv is None or iv.n == 0 or not math.isfinite(iv.estimate):
        return "-"
    ratio, low, high = iv.ratios()
    return f"{ratio:.3f} [{low:.3f}-{high:.3f}]"


def _counts(r: CountedCell) -> str:
    v = r.counts.verdict
    if v is None or v.ratio is None:
        return "-" if v is None else v.decision
    return f"{v.ratio:.4f} [{v.low:.4f}-{v.high:.4f}]"


def rows(results: list[CountedCell]) -> list[list[str]]:
    return [
        [f"{r.cell.suite} {r.label}", _counts(r), _interval(r.waits_interval), _interval(r.time), r.decision, r.reason]
        for r in results
    ]


def process_rows(r: CountedCell) -> list[list[str]]:
    """Each counted run's processes: what each counted in the window's halves."""
    out = []
    for run in r.counts.base + r.counts.candidate:
        for p in run.processes:
            out.append([run.label, str(p.pid), p.command[:80], f"{p.halves[0]:,}", f"{p.halves[1]:,}",
                        "marks" if p.marked else p.how])  # fmt: skip
    return out


def render_counted(results: list[CountedCell], title: str, console: Console | None = None) -> None:
    console = console or console_for_stdout()
    table = Table(title=title, title_justify="left")
    for col in COLUMNS:
        table.add_column(col)
    for row, result in zip(rows(results), results, strict=True):
        table.add_row(*(escape(x) for x in row), style=STYLE.get(result.decision) or None)
    console.print(table)
    for r in results:
        if r.counts.growth:
            grew = Table(title=f"{r.cell.suite} {r.label}: where counted work grew (own instructions per unit)",
                         title_justify="left")  # fmt: skip
            for col in ("function", "base", "candidate", "change"):
                grew.add_column(col, justify="left" if col == "function" else "right")
            for g in r.counts.growth:
                grew.add_row(escape(g.function), f"{g.base:,.0f}", f"{g.candidate:,.0f}", f"{g.change:+,.0f}")
            console.print(grew)


def markdown(results: list[CountedCell], title: str, opts: CountOptions, ab_opts: ABOptions) -> str:
    """The counted A/B as markdown: its verdict (the exit code's), the table, every process's
    counts, where counted work grew, and how to read them."""
    code = exit_code(results)  # type: ignore[arg-type]
    lines = [
        f"## harness ab: {VERDICTS.get(code, 'undecided')} (exit {code})",
        "",
        f"{title}; counted: tolerance {100 * opts.tolerance:g} %, {opts.runs} runs a side in "
        f"{opts.layouts} memory layout(s); waits: tolerance "
        f"{100 * ab_opts.tolerance:g} %, confidence {100 * (1 - ab_opts.alpha):g} %, budget {ab_opts.budget_s:g} s per cell.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
        *("| " + " | ".join(md(x) for x in row) + " |" for row in rows(results)),
        "",
    ]
    for r in results:
        procs = process_rows(r)
        if procs:
            lines += [f"**{md(r.cell.suite + ' ' + r.label)}: instructions counted per process**", "",
                      "| run | pid | command | first half | second half | |", "|---|---|---|---|---|---|",
                      *("| " + " | ".join(md(x) for x in row) + " |" for row in procs), ""]  # fmt: skip
        if r.counts.growth:
            lines += ["**where counted work grew** (own instructions per unit)", "",
                      "| function | base | candidate | change |", "|---|---|---|---|",
                      *(f"| {md(g.function)} | {g.base:,.0f} | {g.candidate:,.0f} | {g.change:+,.0f} |"
                        for g in r.counts.growth), ""]  # fmt: skip
    lines.append(
        "Counted work: instructions per unit of the program's progress, every process summed, under callgrind; "
        "a regression when every pairing of runs in one memory layout exceeds 1 + tolerance. Time on the CPU: the share of a unit's "
        "time (run-queue waits taken out) spent on a CPU, decided natively: it falls when sleeps, I/O or locks "
        "grow, which counts cannot see. Time A/B: the time-sliced interval of the same blocks, not decided on."
    )
    return "\n".join(lines) + "\n"
