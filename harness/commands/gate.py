"""`harness gate RUN_DIR [--baseline NAME] [--against REV]`: exit 1 on a regression (or a
missing cell), 3 when an A/B stayed undecided, 0 otherwise.

With --against, every cell of the run that finished ok is A/B'd against the same cell of
REV on this machine (harness.ab, the engine of `harness ab`) with the working tree as the
candidate, and that gives the speed checks; a baseline, when named too, gives the quality
bounds and the cells that must be present."""

from __future__ import annotations

from pathlib import Path

from harness.ab.experiment import ABOptions
from harness.ab.revisions import repo_root, sides
from harness.analysis import baselines
from harness.analysis.gating import DEFAULT_TOLERANCE, GateOptions, evaluate, parse_metrics, parse_tolerance
from harness.commands.ab import check_sliceable, run_ab
from harness.errors import UserError
from harness.report.gate import render_gate, write_markdown
from harness.running.execute import stored_cells
from harness.runs.store import RunStore, write_json_atomic

GATE_JSON = "gate.json"
GATE_MD = "gate.md"
EXIT = {"pass": 0, "fail": 1, "undecided": 3}


def main(
    run_dir: Path,
    baseline_name: str | None,
    baseline_dir: Path,
    tolerance: str | None,
    metrics: list[str] | None,
    normalize: str | None,
    confidence: float,
    ignore_params: list[str] | None,
    allow_missing: bool = False,
    against: str | None = None,
    ab_opts: ABOptions | None = None,
) -> int:
    if baseline_name is None and against is None:
        raise UserError("nothing to gate against: give --baseline NAME, --against REV, or both")
    if against is not None and normalize is not None:
        raise UserError("--normalize applies to --baseline speed checks; an A/B (--against) pairs slices: drop one")
    if against is not None and metrics:
        raise UserError("--metric chooses baseline speed checks; an A/B measures each cell's headline rate: drop one")
    ab_opts = ab_opts or ABOptions()
    if against is not None and tolerance is None:
        gate_tolerance = ab_opts.tolerance
    else:
        gate_tolerance = parse_tolerance(tolerance) if tolerance is not None else DEFAULT_TOLERANCE
    ab_opts.tolerance = gate_tolerance
    opts = GateOptions(
        tolerance=gate_tolerance,
        metrics=parse_metrics(metrics),
        normalize=normalize,
        confidence=confidence,
        ignore_params=list(ignore_params or []),
        allow_missing=allow_missing,
    )
    base = baselines.load(baseline_name, baseline_dir) if baseline_name is not None else None
    run = baselines.load_run(run_dir)
    ab = run_against(run_dir, run, against, ab_opts) if against is not None else None
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


def run_against(run_dir: Path, run: baselines.Snapshot, rev: str, opts: ABOptions) -> list[dict]:
    """A/B of the run's cells that finished ok: REV as the base, the working tree as the
    candidate. Cells that cannot be sliced come back as refused, with the reason."""
    store = RunStore.open(run_dir)
    ok_ids = {c.id for c in run.cells if c.ok and len(c.ok) == len(c.records)}
    cells = [c for c in stored_cells(store) if c.id in ok_ids]
    if not cells:
        raise UserError(f"{run_dir}: no cell finished ok, nothing to A/B (the correctness checks say why)")
    refused = dict((c.id, why) for c, why in check_sliceable(cells))
    repo = repo_root(Path.cwd())
    with sides(repo, rev, None) as (base, cand):
        run_commit = run.run.get("git_commit")
        if run_commit and cand.commit and run_commit != cand.commit:
            print(f"note: the run was made at {run_commit[:10]}, the working tree is at {cand.commit[:10]}")
        results = run_ab([c for c in cells if c.id not in refused], base, cand, run_dir, opts, quiet=False)
    out = [r.to_json() for r in results]
    out += [{"cell": cid, "refused": why, "decision": "skipped"} for cid, why in refused.items()]
    return out
