"""`harness ab BASE_REV [CAND_REV] [SPEC.toml | --suite S --set k=v ...]`: two revisions'
cells time-sliced against each other on this machine, each cell until the sequential test
decides (regression / no regression beyond the tolerance) or its budget is spent.

Its A/B flags become ABOptions here (build_options, also for `harness gate --against REV`);
the A/B run over the cells is harness.commands.ab_run, which gate shares."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from harness.commands import options
from harness.errors import UserError

if TYPE_CHECKING:
    from harness.ab.experiment import ABOptions
    from harness.count.experiment import CountOptions
    from harness.running.matrix import Cell, Overrides


EXITS = options.exit_codes(
    """
    0 every cell ok: no regression beyond --tolerance
    1 a cell regressed, or a side's cell failed
    2 bad input, an unknown revision, or a cell that cannot be time-sliced
    3 no regression, but a cell stayed undecided at its budget (it says what budget would decide)
    """
)


@options.command(cls=options.ProgramTail, epilog=EXITS)
def ab(
    ctx: typer.Context,
    base_rev: str = typer.Argument(..., help="the base revision (commit, branch, tag: HEAD~1, origin/main)"),
    rest: list[str] = typer.Argument(None, help="[CAND_REV] (default: the working tree) [SPEC.toml]"),
    suite: str = typer.Option(None, "--suite", help="this suite's cells (or its entries of the spec)"),
    workers: str = typer.Option(None, "--workers", help="comma list: one cell per value"),
    backend: str = typer.Option(None, "--backend", help="comma list: one cell per value"),
    set_: list[str] = options.SetOpt,
    tolerance: str = typer.Option(None, "--tolerance", help="slowdown allowed, e.g. 5% (default 3%)"),
    budget: float = typer.Option(
        None,
        "--budget",
        help="A/B seconds per cell, pooled over the cells, before a cell is called undecided (default 180)",
    ),
    confidence: float = typer.Option(0.95, "--confidence", help="A/B: 1 - each decision's error rate"),
    slice_s: float = typer.Option(None, "--slice", help="A/B: minimum slice length in seconds (default 1)"),
    settle: float = typer.Option(None, "--settle", help="A/B: seconds after SIGCONT not measured (default 0)"),
    pairs: int = typer.Option(
        None, "--pairs", help="A/B: measured pairs per launch of fresh processes (default: chosen per block, 1-6)"
    ),
    warmup_pairs: int = typer.Option(None, "--warmup-pairs", help="A/B: pairs discarded after each launch (default 1)"),
    min_blocks: int = typer.Option(
        None,
        "--min-blocks",
        help="A/B: blocks run whatever the budget (default: the fewest that can decide, 6 at 95 %)",
    ),
    seed: int = typer.Option(None, "--seed", help="A/B: seed of the pair orders (default: drawn and recorded)"),
    out: Path = options.OutOpt,
    label: str = typer.Option(None, "--label", help="name in the A/B's directory"),
    quiet: bool = typer.Option(False, "--quiet", help="no line per block"),
    progress: list[str] = options.ProgressOpt,
    progress_file: list[str] = options.ProgressFileOpt,
    measure: str = options.MeasureOpt,
    count_tolerance: str = options.CountToleranceOpt,
    count_runs: int = options.CountRunsOpt,
    count_lines: int = options.CountLinesOpt,
    count_with: str = options.CountWithOpt,
    count_timeout: float = options.CountTimeoutOpt,
    count_layouts: int = options.CountLayoutsOpt,
) -> int:
    """A/B two revisions on this machine, time-sliced or by counted instructions (your program
    after --, run in each revision's worktree): regression, ok or undecided per cell."""
    from harness.commands.ab_count import count_options
    from harness.commands.sweep import build_overrides

    opts = build_options(tolerance=tolerance, budget=budget, confidence=confidence, slice_s=slice_s, settle=settle,
                         pairs=pairs, seed=seed, warmup_pairs=warmup_pairs, min_blocks=min_blocks)  # fmt: skip
    counting = count_options(
        measure, count_tolerance, count_runs, count_lines, count_with, count_timeout, count_layouts
    )
    program = options.program_of(ctx, progress, progress_file)
    cand_rev, spec_path = split_positionals(list(rest or []))
    if spec_path is None and suite is None and program is None:
        raise UserError(
            "nothing to compare: give a sweep spec (SPEC.toml), --suite NAME [--set k=v ...] or your program after --"
        )
    overrides = build_overrides(suite, workers, backend, set_, {}, label, program)
    return main(base_rev=base_rev, cand_rev=cand_rev, spec_path=spec_path, overrides=overrides, opts=opts, out=out,
                quiet=quiet, counting=counting)  # fmt: skip


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
    from harness.ab.experiment import DEFAULT_BUDGET_S, ABOptions
    from harness.ab.sequential import DEFAULT_TOLERANCE
    from harness.ab.slicing import SliceOptions
    from harness.analysis.gating import parse_tolerance

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
            raise UserError(f"--pairs {pairs}: measured pairs per block, 1 to 1000 (default: chosen per block)")
        slicing.pairs = pairs
    if warmup_pairs is not None:
        if not 0 <= warmup_pairs <= 100:
            raise UserError(f"--warmup-pairs {warmup_pairs}: 0 to 100 (default {slicing.warmup_pairs})")
        slicing.warmup_pairs = warmup_pairs
    if min_blocks is not None and not 0 <= min_blocks <= 1000:
        raise UserError(f"--min-blocks {min_blocks}: 0 to 1000 (default: the fewest that can decide, 6 at 95 %)")
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


def main(
    *,
    base_rev: str,
    cand_rev: str | None,
    spec_path: Path | None,
    overrides: Overrides,
    opts: ABOptions,
    out: Path,
    quiet: bool,
    counting: CountOptions | None = None,
) -> int:
    """The A/B of every cell of the spec with the command line's overrides, in a run
    directory of its own (run.json, ab.json); the exit code of its decisions. With
    `counting`, decided by counted instructions and waits (harness.commands.ab_count)."""
    from harness.ab.experiment import exit_code
    from harness.ab.revisions import repo_root, sides
    from harness.commands.ab_run import AB_JSON, AB_MD, check_sliceable, run_ab, side_facts
    from harness.report.ab import markdown, render_ab
    from harness.running import metadata
    from harness.running.matrix import Spec, apply_overrides, expand, load_spec
    from harness.runs.files import write_atomic
    from harness.runs.store import RunStore, utc_now

    spec = apply_overrides(load_spec(spec_path) if spec_path is not None else Spec(), overrides)
    cells = expand(spec)
    if counting is not None:
        return main_counted(spec.label, cells, base_rev, cand_rev, opts, counting, out, quiet)
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
    title = f"A/B: candidate {cand.describe()} / base {base.describe()}"
    render_ab(results, title)
    write_atomic(store.root / AB_MD, markdown(results, title, opts), "the A/B's markdown table")
    code = exit_code(results)
    print(f"ab: exit {code}; written: {store.root / AB_JSON}, {store.root / AB_MD}")
    return code


def main_counted(
    label: str | None,
    cells: list[Cell],
    base_rev: str,
    cand_rev: str | None,
    opts: ABOptions,
    counting: CountOptions,
    out: Path,
    quiet: bool,
) -> int:
    """harness ab --measure instructions: the counted A/B of the cells in a run directory of
    its own (run.json, ab.json, ab.md, count/ with every counted run's dumps and output)."""
    from harness.ab.experiment import exit_code
    from harness.commands.ab_count import counted_ab, counting_tools
    from harness.commands.ab_run import AB_JSON, AB_MD
    from harness.running import metadata
    from harness.runs.store import RunStore, utc_now

    found = counting_tools(counting)  # a missing valgrind is bad input, said before anything is recorded
    meta = {**metadata.collect(sys.argv), "label": label or "ab", "started": utc_now(), "kind": "ab",
            "measure": "instructions", "cells": [c.to_json() for c in cells]}  # fmt: skip
    store = RunStore.create(out, f"ab-{label}" if label else "ab", meta)
    results, _, _ = counted_ab(cells, base_rev, cand_rev, store.root, counting, opts, quiet, found=found)
    store.update_meta(ended=utc_now(), state="finished")
    code = exit_code(results)  # type: ignore[arg-type]
    print(f"ab: exit {code}; written: {store.root / AB_JSON}, {store.root / AB_MD}")
    return code
