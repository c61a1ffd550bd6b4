"""`harness gate RUN_DIR --baseline NAME`: exit 1 on a regression against a baseline."""

from __future__ import annotations

from pathlib import Path

from harness import baselines
from harness.gating import DEFAULT_TOLERANCE, GateOptions, evaluate, parse_metrics, parse_tolerance
from harness.report.gate import render_gate, write_markdown
from harness.store import write_json_atomic

GATE_JSON = "gate.json"
GATE_MD = "gate.md"


def main(
    run_dir: Path,
    baseline_name: str,
    baseline_dir: Path,
    tolerance: str | None,
    metrics: list[str] | None,
    normalize: str | None,
    confidence: float,
    ignore_params: list[str] | None,
) -> int:
    opts = GateOptions(
        tolerance=parse_tolerance(tolerance) if tolerance is not None else DEFAULT_TOLERANCE,
        metrics=parse_metrics(metrics),
        normalize=normalize,
        confidence=confidence,
        ignore_params=list(ignore_params or []),
    )
    base = baselines.load(baseline_name, baseline_dir)
    run = baselines.load_run(run_dir)
    result = evaluate(run, base, opts)
    render_gate(result)
    write_json_atomic(run_dir / GATE_JSON, result)
    write_markdown(run_dir / GATE_MD, result)
    print(
        f"gate {result['verdict']}: {result['regressions']} regression(s); written: {run_dir / GATE_JSON}, {run_dir / GATE_MD}"
    )
    return 1 if result["regressions"] else 0
