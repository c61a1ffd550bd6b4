"""The A/B run over cells that `harness ab` and `harness gate --against REV` share: the cells
that cannot be time-sliced, and every cell's A/B with ab.json kept current (and marked
interrupted on Ctrl-C).

Imported by those commands when they run, not when the CLI starts (harness.commands.options)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness.ab.experiment import ABOptions, CellAB, exit_code, refusal, run_all
from harness.ab.revisions import Side
from harness.report.ab import progress_line
from harness.running import interrupts
from harness.running.matrix import Cell
from harness.runs.files import write_json_atomic
from harness.runs.store import utc_now

AB_JSON = "ab.json"
AB_MD = "ab.md"  # harness ab's table as markdown (harness.report.ab.markdown)


def check_sliceable(cells: list[Cell]) -> list[tuple[Cell, str]]:
    """(cell, why) for every cell that cannot be time-sliced."""
    return [(cell, why) for cell in cells if (why := refusal(cell)) is not None]


def side_facts(side: Side) -> dict[str, Any]:
    return {"rev": side.rev, "commit": side.commit, "dirty": side.dirty, "describe": side.describe()}


def ab_document(base: Side, cand: Side, opts: ABOptions, results: list[CellAB], state: str) -> dict[str, Any]:
    return {
        "state": state,
        "written": utc_now(),
        "base": side_facts(base),
        "candidate": side_facts(cand),
        "options": {**asdict(opts)},
        "exit_code": exit_code(results) if state == "finished" else None,
        "cells": [r.to_json() for r in results],
    }


def run_ab(cells: list[Cell], base: Side, cand: Side, root: Path, opts: ABOptions, quiet: bool) -> list[CellAB]:
    """Every cell's A/B, ab.json rewritten after each cell (and marked interrupted on Ctrl-C)."""
    path = root / AB_JSON
    results: list[CellAB] = []

    def on_block(result: CellAB) -> None:
        if not quiet:
            print(progress_line(result), flush=True)

    def on_cell(done: list[CellAB]) -> None:
        results[:] = done
        r = done[-1]
        print(f"{r.cell.suite} {r.label}: {r.decision}: {r.reason}", flush=True)
        write_json_atomic(path, ab_document(base, cand, opts, done, "running"))

    print(
        f"A/B: base {base.describe()} vs candidate {cand.describe()}; {len(cells)} cell(s), "
        f"tolerance {100 * opts.tolerance:g} %, budget {opts.budget_s:g} s per cell",
        flush=True,
    )
    try:
        with interrupts.deferred():  # Ctrl-C and SIGTERM act between slices (harness.running.interrupts)
            results = run_all(cells, base, cand, root, opts, on_block, on_cell)
    except KeyboardInterrupt:
        write_json_atomic(path, ab_document(base, cand, opts, results, "interrupted"))
        raise
    write_json_atomic(path, ab_document(base, cand, opts, results, "finished"))
    return results
