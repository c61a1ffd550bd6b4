"""`harness export RUN_DIR --FORMAT OUT`: a run for other tools (harness.report.exports)."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.commands import options
from harness.errors import UserError


@options.command()
def export(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    pyperf: Path = typer.Option(None, "--pyperf", help="write a pyperf BenchmarkSuite JSON here"),
    bmf: Path = typer.Option(None, "--bmf", help="write Bencher Metric Format JSON here (bencher run --adapter json)"),
    github_action: Path = typer.Option(
        None,
        "--github-action",
        help="write github-action-benchmark JSON here (tool customBiggerIsBetter for rates, "
        "customSmallerIsBetter when every --metric is lower-is-better)",
    ),
    metric: list[str] = typer.Option(None, "--metric", help="metrics to export (default: every rate); repeatable"),
) -> int:
    """Export a run for other tools and dashboards: pyperf, Bencher (BMF), github-action-benchmark."""
    from harness.report.exports import EXPORTS, exporter

    outputs = {"pyperf": pyperf, "bmf": bmf, "github_action": github_action}
    wanted = {name: out for name, out in outputs.items() if out is not None}
    if not wanted:
        raise UserError("say what to export: " + " or ".join(f"--{flag(name)} OUT.json" for name in EXPORTS))
    for name, out in wanted.items():
        count, skipped = exporter(name)(run_dir, out, metric)
        for item in skipped:
            print(f"{name}: skipped {item}")
        print(f"{name}: {count} entries written: {out}")
    return 0


def flag(name: str) -> str:
    """An export's command-line flag: github_action -> github-action."""
    return name.replace("_", "-")
