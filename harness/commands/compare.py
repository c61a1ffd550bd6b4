"""`harness compare RUN_A RUN_B`: ratios B/A per matched cell and metric."""

from __future__ import annotations

from pathlib import Path

from harness.comparison import compare_runs
from harness.report.terminal import render_compare


def main(run_a: Path, run_b: Path, html: bool) -> int:
    comparison = compare_runs(run_a, run_b)
    render_compare(comparison)
    if html:
        from harness.report.compare_html import render_compare as render_html

        path = run_b / f"compare-{run_a.resolve().name}.html"
        path.write_text(render_html(comparison), encoding="utf-8")
        print(f"comparison: {path}")
    return 0
