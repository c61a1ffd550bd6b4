"""`harness gate RUN_DIR [--baseline NAME] [--against REV]`: exit 1 on a regression (or a
missing cell), 3 when an A/B stayed undecided, 0 otherwise.

With --against, every cell of the run that finished ok is A/B'd against the same cell of
REV on this machine (harness.commands.ab_run, the engine of `harness ab`) with the working
tree as the candidate, and that gives the speed checks; a baseline, when named too, gives the
quality bounds and the cells that must be present."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from harness.commands import options
from harness.errors import UserError

if TYPE_CHECKING:
    from harness.ab.experiment import ABOptions
    from harness.analysis import baselines
    from harness.analysis.gating import GateOptions
    from harness.count.experiment import CountOptions

GATE_JSON = "gate.json"
GATE_MD = "gate.md"
EXIT = {"pass": 0, "fail": 1, "undecided": 3}


EXITS = options.exit_codes(
    """
    0 pass
    1 a regression, a correctness failure, or a baseline cell or metric missing from the run (unless --allow-missing)
    3 no failure, but an A/B (--against) stayed undecided at its budget
    """
)


@options.command(epilog=EXITS)
def gate(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    baseline: str = typer.Option(
        None, "--baseline", help="baseline name (in --dir), a baseline .json, or a run directory"
    ),
    against: str = typer.Option(
        None, "--against", help="REV: A/B every ok cell of the run against this revision (speed checks)"
    ),
    directory: Path = options.BaselineDirOpt,
    tolerance: str = typer.Option(
        None, "--tolerance", help="slowdown allowed, e.g. 5% (default 2%; with --against, 3%: the A/B's)"
    ),
    metric: list[str] = typer.Option(
        None, "--metric", help="metrics to speed-gate against the baseline (default: every throughput); repeatable"
    ),
    normalize: str = typer.Option(
        None, "--normalize", help="SUITE: divide throughputs by that suite's reference cell of the same run"
    ),
    confidence: float = typer.Option(0.95, "--confidence", help="interval confidence; with --against, 1 - error rate"),
    ignore_param: list[str] = typer.Option(
        None, "--ignore-param", help="match cells as if this param were equal (e.g. a path that differs); repeatable"
    ),
    allow_missing: bool = typer.Option(
        False, "--allow-missing", help="a baseline cell or metric missing from the run is reported, not failed"
    ),
    budget: float = typer.Option(
        None, "--budget", help="with --against: A/B seconds per cell, pooled over the cells (default 180)"
    ),
    slice_s: float = typer.Option(None, "--slice", help="with --against: minimum slice length in seconds (default 1)"),
    pairs: int = typer.Option(
        None, "--pairs", help="with --against: measured pairs per launch (default: chosen per block, 1-6)"
    ),
    warmup_pairs: int = typer.Option(
        None, "--warmup-pairs", help="with --against: pairs discarded per launch (default 1)"
    ),
    min_blocks: int = typer.Option(
        None,
        "--min-blocks",
        help="with --against: blocks run whatever the budget (default: the fewest that can decide, 6 at 95 %)",
    ),
    seed: int = typer.Option(
        None, "--seed", help="with --against: seed of the pair orders (default: drawn and recorded)"
    ),
    measure: str = options.MeasureOpt,
    count_tolerance: str = options.CountToleranceOpt,
    count_runs: int = options.CountRunsOpt,
    count_lines: int = options.CountLinesOpt,
    count_with: str = options.CountWithOpt,
    count_timeout: float = options.CountTimeoutOpt,
    count_layouts: int = options.CountLayoutsOpt,
) -> int:
    """Gate a run: correctness against a baseline, speed against the baseline or by an A/B against a revision."""
    from harness.analysis.gating import DEFAULT_TOLERANCE, GateOptions, parse_metrics, parse_tolerance
    from harness.commands.ab import build_options
    from harness.commands.ab_count import count_options

    counting = count_options(
        measure, count_tolerance, count_runs, count_lines, count_with, count_timeout, count_layouts
    )
    if counting is not None and against is None:
        raise UserError("--measure instructions decides an A/B: give --against REV")
    if counting is not None:
        from harness.commands.ab_count import counting_tools

        counting_tools(counting)  # a missing valgrind is bad input, said before anything runs
    ab_opts = build_options(tolerance=None, budget=budget, confidence=confidence, slice_s=slice_s, settle=None,
                            pairs=pairs, seed=seed, warmup_pairs=warmup_pairs, min_blocks=min_blocks)  # fmt: skip
    if baseline is None and against is None:
        raise UserError("nothing to gate against: give --baseline NAME, --against REV, or both")
    if against is not None and normalize is not None:
        raise UserError("--normalize applies to --baseline speed checks; an A/B (--against) pairs slices: drop one")
    if against is not None and metric:
        raise UserError("--metric chooses baseline speed checks; an A/B measures each cell's headline rate: drop one")
    if against is not None and tolerance is None:
        gate_tolerance = ab_opts.tolerance  # the A/B's own default (harness.ab.sequential)
    else:
        gate_tolerance = parse_tolerance(tolerance) if tolerance is not None else DEFAULT_TOLERANCE
    ab_opts.tolerance = gate_tolerance
    opts = GateOptions(
        tolerance=gate_tolerance,
        metrics=parse_metrics(metric),
        normalize=normalize,
        confidence=confidence,
        ignore_params=list(ignore_param or []),
        allow_missing=allow_missing,
    )
    return main(run_dir=run_dir, baseline=baseline, directory=directory, against=against, opts=opts, ab_opts=ab_opts,
                counting=counting)  # fmt: skip


def main(
    *,
    run_dir: Path,
    baseline: str | None,
    directory: Path,
    against: str | None,
    opts: GateOptions,
    ab_opts: ABOptions,
    counting: CountOptions | None = None,
) -> int:
    """The gate's checks against the baseline `baseline` (in `directory`) and the A/B against
    REV `against`, either or both; gate.json and gate.md written into the run."""
    from harness.analysis import baselines
    from harness.analysis.gating import evaluate
    from harness.report.gate import render_gate, write_markdown
    from harness.runs.files import write_json_atomic

    base = baselines.load(baseline, directory) if baseline is not None else None
    run = baselines.load_run(run_dir)
    ab = run_against(run_dir, run, against, ab_opts, counting) if against is not None else None
    result = evaluate(run, base, opts, ab)
    if ab is not None:
        result["against"] = {"rev": against, "ab": str(run_dir / "ab.json")}
    render_gate(result)
    write_json_atomic(run_dir / GATE_JSON, result)
    write_markdown(run_dir / GATE_MD, result)
    print(
        f"gate {result['verdict']}: {result['regressions']} regression(s), {result['failures']} failing check(s), "
        f"{result['undecided']} undecided; written: {run_dir / GATE_JSON}, {run_dir / GATE_MD}"
    )
    return EXIT[result["verdict"]]


def run_against(
    run_dir: Path, run: baselines.Snapshot, rev: str, opts: ABOptions, counting: CountOptions | None = None
) -> list[dict]:
    """A/B of the run's cells that finished ok: REV as the base, the working tree as the
    candidate (with `counting`, by counted instructions and waits: harness.commands.ab_count).
    Cells that cannot be sliced come back as refused, with the reason."""
    from harness.ab.revisions import repo_root, sides
    from harness.commands.ab_run import check_sliceable, run_ab
    from harness.running.execute import stored_cells
    from harness.runs.store import RunStore

    store = RunStore.open(run_dir)
    ok_ids = {c.id for c in run.cells if c.ok and len(c.ok) == len(c.records)}
    cells = [c for c in stored_cells(store) if c.id in ok_ids]
    if not cells:
        raise UserError(f"{run_dir}: no cell finished ok, nothing to A/B (the correctness checks say why)")
    refused = dict((c.id, why) for c, why in check_sliceable(cells))
    if counting is not None:
        from harness.commands.ab_count import counted_ab

        kept = [c for c in cells if c.id not in refused]
        counted, _, cand = counted_ab(kept, rev, None, run_dir, counting, opts, quiet=False, title="gate by counts")
        run_commit = run.run.get("git_commit")
        if run_commit and cand.commit and run_commit != cand.commit:
            print(f"note: the run was made at {run_commit[:10]}, the working tree is at {cand.commit[:10]}")
        out = [r.to_json() for r in counted]
        return out + [{"cell": cid, "refused": why, "decision": "skipped"} for cid, why in refused.items()]
    repo = repo_root(Path.cwd())
    with sides(repo, rev, None) as (base, cand):
        run_commit = run.run.get("git_commit")
        if run_commit and cand.commit and run_commit != cand.commit:
            print(f"note: the run was made at {run_commit[:10]}, the working tree is at {cand.commit[:10]}")
        results = run_ab([c for c in cells if c.id not in refused], base, cand, run_dir, opts, quiet=False)
    out = [r.to_json() for r in results]
    out += [{"cell": cid, "refused": why, "decision": "skipped"} for cid, why in refused.items()]
    return out
