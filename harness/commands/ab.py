"""`harness ab BASE_REV [CAND_REV] [SPEC.toml | --suite S --set k=v ...]`: two revisions'
cells time-sliced against each other on this machine, each cell until the sequential test
decides (regression / no regression beyond the tolerance) or its budget is spent.

Also the engine of `harness gate --against REV` (options, the A/B run, ab.json)."""

from __future__ import annotations

import math
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness.ab.experiment import (
    DEFAULT_BUDGET_S,
    ABOptions,
    CellAB,
    exit_code,
    refusal,
    run_all,
)
from harness.ab.revisions import Side, repo_root, sides
from harness.ab.sequential import DEFAULT_TOLERANCE
from harness.ab.slicing import SliceOptions
from harness.analysis.gating import parse_tolerance
from harness.commands.program import Program
from harness.commands.sweep import build_overrides
from harness.errors import UserError
from harness.report.ab import progress_line, render_ab
from harness.running import interrupts, metadata
from harness.running.matrix import Cell, Spec, apply_overrides, expand, load_spec
from harness.runs.store import RunStore, utc_now, write_json_atomic

AB_JSON = "ab.json"


def build_options(
    tolerance: str | None,
    budget: float | None,
    confidence: float,
    slice_s: float | None,
    settle: float | None,
    pairs: int | None,
    seed: int | None,
    warmup_pairs: int | None = None,
    min_blocks: int | None = None,
) -> ABOptions:
    """The A/B's options from the command line, each checked against what is allowed."""
    if not 0.5 <= confidence < 1:
        raise UserError(f"--confidence {confidence}: must lie in [0.5, 1) (e.g. 0.95: each decision errs <= 5 %)")
    if budget is not None and not (math.isfinite(budget) and budget > 0):
        raise UserError(f"--budget {budget}: seconds per cell, > 0 (default {DEFAULT_BUDGET_S:g})")
    slicing = SliceOptions()
    if slice_s is not None:
        if not 0.2 <= slice_s <= 60:
            raise UserError(f"--slice {slice_s}: seconds between 0.2 and 60 (default {slicing.slice_s:g})")
        slicing.slice_s = slice_s
        slicing.window_s = min(slicing.window_s, 0.9 * slice_s)
        slicing.max_slice_s = max(slicing.max_slice_s, 4 * slice_s)
    if settle is not None:
        if not 0 <= settle <= 5:
            raise UserError(f"--settle {settle}: seconds between 0 and 5 (default {slicing.settle_s:g})")
        slicing.settle_s = settle
    if pairs is not None:
        if not 1 <= pairs <= 1000:
            raise UserError(f"--pairs {pairs}: measured pairs per block, 1 to 1000 (default {slicing.pairs})")
        slicing.pairs = pairs
    if warmup_pairs is not None:
        if not 0 <= warmup_pairs <= 100:
            raise UserError(f"--warmup-pairs {warmup_pairs}: 0 to 100 (default {slicing.warmup_pairs})")
        slicing.warmup_pairs = warmup_pairs
    if min_blocks is not None and not 0 <= min_blocks <= 1000:
        raise UserError(f"--min-blocks {min_blocks}: 0 to 1000 (default: the fewest that can decide, 7 at 95 %)")
    if seed is not None and seed < 0:
        raise UserError(f"--seed {seed}: a non-negative integer")
    return ABOptions(
        tolerance=parse_tolerance(tolerance) if tolerance is not None else DEFAULT_TOLERANCE,
        alpha=1 - confidence,
        budget_s=budget if budget is not None else DEFAULT_BUDGET_S,
        min_blocks=min_blocks,
        slicing=slicing,
        seed=seed,
    )


def check_sliceable(cells: list[Cell]) -> list[tuple[Cell, str]]:
    """(cell, why) for every cell that cannot be time-sliced."""
    return [(cell, why) for cell in cells if (why := refusal(cell)) is not None]


def split_positionals(rest: list[str]) -> tuple[str | None, Path | None]:
    """[CAND_REV] [SPEC.toml]: an argument naming a .toml file is the spec."""
    cand, spec = None, None
    for arg in rest:
        if arg.endswith(".toml") or Path(arg).is_file():
            if spec is not None:
                raise UserError(f"two sweep specs given ({spec} and {arg}); give one")
            spec = Path(arg)
        elif cand is None:
            cand = arg
        else:
            raise UserError(f"unexpected argument {arg!r}: harness ab BASE_REV [CAND_REV] [SPEC.toml]")
    return cand, spec


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


def main(
    base_rev: str,
    rest: list[str] | None,
    suite: str | None,
    workers: str | None,
    backend: str | None,
    sets: list[str] | None,
    opts: ABOptions,
    out: Path,
    label: str | None,
    quiet: bool,
    program: Program | None = None,
) -> int:
    cand_rev, spec_path = split_positionals(list(rest or []))
    if spec_path is None and suite is None and program is None:
        raise UserError(
            "nothing to compare: give a sweep spec (SPEC.toml), --suite NAME [--set k=v ...] or your program after --"
        )
    overrides = build_overrides(suite, workers, backend, sets, {}, label, program)
    spec = apply_overrides(load_spec(spec_path) if spec_path is not None else Spec(), overrides)
    cells = expand(spec)
    refused = check_sliceable(cells)
    if refused:
        lines = "; ".join(f"{c.suite} {c.id}: {why}" for c, why in refused)
        raise UserError(f"these cells cannot be time-sliced: {lines}")
    repo = repo_root(Path.cwd())
    with sides(repo, base_rev, cand_rev) as (base, cand):
        meta = {
            **metadata.collect(sys.argv),
            "label": spec.label or "ab",
            "started": utc_now(),
            "kind": "ab",
            "ab": {"base": side_facts(base), "candidate": side_facts(cand)},
            "cells": [c.to_json() for c in cells],
        }
        store = RunStore.create(out, f"ab-{spec.label}" if spec.label else "ab", meta)
        results = run_ab(cells, base, cand, store.root, opts, quiet)
        store.update_meta(ended=utc_now(), state="finished")
    render_ab(results, f"A/B: candidate {cand.describe()} / base {base.describe()}")
    code = exit_code(results)
    print(f"ab: exit {code}; written: {store.root / AB_JSON}")
    return code
