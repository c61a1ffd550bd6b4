"""`harness diagnose RUN_DIR [--fail-on SEVERITY]`: the findings of every diagnosis rule over
a run; with --fail-on, exit 1 when one is at or above that severity (a CI step)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.commands.common import run_view
from harness.diagnosis.findings import severity_rank
from harness.errors import UserError
from harness.report.terminal import render_findings
from harness.runs.store import RunStore

FAIL_ON = ("error", "warning", "info")


def main(run_dir: Path, as_json: bool, fail_on: str | None = None) -> int:
    """0, or 1 with --fail-on SEVERITY when a finding at or above it exists (for CI)."""
    if fail_on is not None and fail_on not in FAIL_ON:
        raise UserError(f"--fail-on {fail_on!r}: allowed {', '.join(FAIL_ON)} (a finding at or above it exits 1)")
    store = RunStore.open(run_dir)
    findings = run_view(store, store.records()).findings or []
    if as_json:
        print(json.dumps([f.to_json() for f in findings], indent=2, default=str))
    else:
        render_findings(findings)
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
