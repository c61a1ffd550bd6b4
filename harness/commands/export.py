"""`harness export RUN_DIR --pyperf OUT.json`: a run for other tools."""

from __future__ import annotations

from pathlib import Path

from harness.errors import UserError
from harness.report.pyperf import export


def main(run_dir: Path, pyperf_out: Path | None, metrics: list[str] | None) -> int:
    if pyperf_out is None:
        raise UserError("say what to export: --pyperf OUT.json")
    count, skipped = export(run_dir, pyperf_out, metrics)
    for name in skipped:
        print(f"skipped {name}: no value > 0")
    print(f"{count} pyperf benchmarks (rates exported as time per unit) written: {pyperf_out}")
    return 0
