"""`harness diagnose RUN_DIR`: the findings of every diagnosis rule over a run."""

from __future__ import annotations

import json
from pathlib import Path

from harness.diagnosis import diagnose
from harness.report.terminal import render_findings
from harness.store import RunStore


def main(run_dir: Path, as_json: bool) -> int:
    store = RunStore.open(run_dir)
    findings = diagnose(store.records(), store.meta())
    if as_json:
        print(json.dumps([f.to_json() for f in findings], indent=2, default=str))
    else:
        render_findings(findings)
    return 0
