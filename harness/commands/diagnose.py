"""`harness diagnose RUN_DIR [--fail-on SEVERITY]`: the findings of every diagnosis rule over
a run; with --fail-on, exit 1 when one is at or above that severity (a CI step)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from harness.commands import options
from harness.errors import UserError

FAIL_ON = ("error", "warning", "info")


EXITS = options.exit_codes(
    """
    0 the findings printed, none at or above --fail-on
    1 a finding at or above --fail-on
    """
)


@options.command(epilog=EXITS)
def diagnose(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    json_: bool = typer.Option(False, "--json", help="print the findings as JSON"),
    fail_on: str = typer.Option(
        None, "--fail-on", help="error, warning or info: exit 1 when a finding at or above it exists (for CI)"
    ),
) -> int:
    """Findings over a run: lost work, drift, idle or thrashing GPU, small batches, scaling, busy waits."""
    from harness.commands.common import run_view
    from harness.diagnosis.findings import severity_rank
    from harness.report.terminal import render_findings
    from harness.runs.store import RunStore

    if fail_on is not None and fail_on not in FAIL_ON:
        raise UserError(f"--fail-on {fail_on!r}: allowed {', '.join(FAIL_ON)} (a finding at or above it exits 1)")
    store = RunStore.open(run_dir)
    view = run_view(store, store.records())
    findings = view.findings or []
    if json_:
        print(json.dumps([f.to_json() for f in findings], indent=2, default=str))
    else:
        render_findings(findings)
    for line in view.refused_lines():  # the rules whose evidence failed: on stderr, the JSON stays a list
        print(line, file=sys.stderr if json_ else sys.stdout)
    if fail_on is None:
        return 0
    failing = [f for f in findings if severity_rank(f.severity) <= severity_rank(fail_on)]
    if failing:
        print(
            f"diagnose: {len(failing)} finding(s) at or above {fail_on}: "
            + ", ".join(sorted({f.rule for f in failing})),
            file=sys.stderr,
        )
        return 1
    return 0
