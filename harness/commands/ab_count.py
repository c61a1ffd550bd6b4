"""The counted A/B over cells that `harness ab --measure instructions` and `harness gate
--against REV --measure instructions` share: the count flags checked, valgrind found before
anything runs, both revisions in worktrees at paths of equal length, every cell's counts and
waits (harness.count.cells) with ab.json kept current, the table and ab.md.

Imported by those commands when they run, not when the CLI starts (harness.commands.options)."""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness.ab.experiment import ABOptions, CellAB, exit_code
from harness.ab.revisions import Side, equal_sides, repo_root
from harness.commands.ab_run import AB_JSON, AB_MD, check_sliceable, side_facts
from harness.count import callgrind, hardware
from harness.count.cells import CountedCell, run_counted
from harness.count.experiment import CountOptions
from harness.count.window import Counted
from harness.errors import UserError
from harness.report.ab import progress_line
from harness.report.count import markdown, render_counted, run_line
from harness.running import interrupts
from harness.running.matrix import Cell
from harness.runs.files import write_atomic, write_json_atomic
from harness.runs.store import utc_now

MEASURES = ("time", "instructions")
TOOLS = ("callgrind", "perf")


def counting_tools(opts: CountOptions) -> dict[str, str]:
    """What the count needs, checked before anything runs or is recorded (a UserError, exit 2,
    naming what is missing): valgrind's tools, or this machine's hardware counters."""
    if opts.tool == "callgrind":
        return callgrind.tools()
    told = hardware.available()
    if not told.usable:
        raise UserError(f"--count-with perf: this machine has no hardware instruction counters ({told.said}); "
                        "count with callgrind (--count-with callgrind, the default)")  # fmt: skip
    return {}


def count_options(
    measure: str,
    tolerance: str,
    runs: int,
    lines: int,
    tool: str = "callgrind",
    timeout_s: float = 600.0,
    layouts: int = 2,
) -> CountOptions | None:
    """The counted A/B's options from the command line (None: --measure time), each checked."""
    from harness.analysis.gating import parse_tolerance

    if measure not in MEASURES:
        raise UserError(f"--measure {measure!r}: one of {', '.join(MEASURES)}")
    if tool not in TOOLS:
        raise UserError(f"--count-with {tool!r}: one of {', '.join(TOOLS)}")
    if measure == "time":
        return None
    if not 2 <= runs <= 10:
        raise UserError(f"--count-runs {runs}: 2 to 10 counted runs per side (their agreement is evidence; default 2)")
    if not 1 <= layouts <= 5:
        raise UserError(
            f"--count-layouts {layouts}: 1 to 5 memory layouts per side (1: the program's own only; default 2)"
        )
    if not 1 <= lines <= 1000:
        raise UserError(f"--count-lines {lines}: 1 to 1000 progress lines per half of the window (default 1)")
    if not 30 <= timeout_s <= 7200 or not math.isfinite(timeout_s):
        raise UserError(f"--count-timeout {timeout_s:g}: 30 to 7200 seconds per counted run (default 600)")
    opts = CountOptions(
        tolerance=parse_tolerance(tolerance), runs=runs, lines=lines, tool=tool, timeout_s=timeout_s, layouts=layouts
    )
    if not 0 < opts.tolerance < 0.5 or not math.isfinite(opts.tolerance):
        raise UserError(f"--count-tolerance {tolerance}: more than 0 and less than 50 % (default 0.5%)")
    return opts


def document(
    base: Side, cand: Side, opts: CountOptions, ab_opts: ABOptions, results: list[CountedCell], state: str
) -> dict[str, Any]:
    return {
        "state": state,
        "written": utc_now(),
        "measure": "instructions",
        "base": side_facts(base),
        "candidate": side_facts(cand),
        "options": {"count": asdict(opts), "waits": asdict(ab_opts)},
        "exit_code": exit_code(results) if state == "finished" else None,  # type: ignore[arg-type]
        "cells": [r.to_json() for r in results],
    }


def counted_ab(
    cells: list[Cell],
    base_rev: str,
    cand_rev: str | None,
    root: Path,
    opts: CountOptions,
    ab_opts: ABOptions,
    quiet: bool,
    title: str = "A/B by counts",
    found: dict[str, str] | None = None,
) -> tuple[list[CountedCell], Side, Side]:
    """Every cell's counted A/B in `root` (ab.json, ab.md); the results and the two sides.
    `found`: valgrind's tools (callgrind.tools(), which the caller asks before it records
    anything: a missing valgrind is bad input, exit 2)."""
    found = found if found is not None else counting_tools(opts)
    refused = check_sliceable(cells)
    if refused:
        lines = "; ".join(f"{c.suite} {c.id}: {why}" for c, why in refused)
        raise UserError(f"these cells cannot be counted: {lines}")
    path = root / AB_JSON
    results: list[CountedCell] = []

    def on_run(run: Counted) -> None:
        if not quiet:
            print(run_line(run), flush=True)

    def on_block(result: CellAB) -> None:
        if not quiet:
            print(progress_line(result), flush=True)

    with equal_sides(repo_root(Path.cwd()), base_rev, cand_rev) as (base, cand):

        def on_cell(done: list[CountedCell]) -> None:
            results[:] = done
            write_json_atomic(path, document(base, cand, opts, ab_opts, done, "running"))

        print(
            f"A/B by counts: base {base.describe()} vs candidate {cand.describe()}; {len(cells)} cell(s), "
            f"count tolerance {100 * opts.tolerance:g} %, {opts.runs} runs a side"
            f"{f' and one in each of {opts.layouts - 1} other memory layout(s)' if opts.layouts > 1 else ''}; waits: tolerance "
            f"{100 * ab_opts.tolerance:g} %, budget {ab_opts.budget_s:g} s per cell",
            flush=True,
        )
        try:
            with interrupts.deferred():
                results = run_counted(cells, base, cand, root, opts, ab_opts, on_run, on_block, on_cell, found)
        except KeyboardInterrupt:
            write_json_atomic(path, document(base, cand, opts, ab_opts, results, "interrupted"))
            raise
        write_json_atomic(path, document(base, cand, opts, ab_opts, results, "finished"))
        full = f"{title}: candidate {cand.describe()} / base {base.describe()}"
        for r in results:
            print(f"{r.cell.suite} {r.label}: {r.decision}: {r.reason}", flush=True)
        render_counted(results, full)
        write_atomic(root / AB_MD, markdown(results, full, opts, ab_opts), "the A/B's markdown table")
    return results, base, cand
