"""`harness export RUN_DIR --FORMAT OUT`: a run for other tools (harness.report.exports)."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.commands import options
from harness.errors import UserError

EXITS = options.exit_codes(
    """
    0 every export asked for written
    2 bad input, or a run already exported to that MLflow store
    """
)


@options.command(epilog=EXITS)
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
    tensorboard: Path = typer.Option(
        None,
        "--tensorboard",
        help="write TensorBoard runs into this new directory: one per cell-repeat (series on the wall clock, "
        "metrics), the matrix in the hparams dashboard; view with tensorboard --logdir DIR",
    ),
    mlflow: str = typer.Option(
        None,
        "--mlflow",
        help="log MLflow runs, one per cell-repeat under a parent run: into DIR/mlflow.db (a local SQLite store) "
        "or a tracking URI (http://host:5000, sqlite:///x.db)",
    ),
    metric: list[str] = typer.Option(
        None,
        "--metric",
        help="metrics to export (default: every rate; TensorBoard and MLflow: every number, judged by the rates "
        "and quality); repeatable",
    ),
) -> int:
    """Export a run for other tools and dashboards: pyperf, Bencher (BMF), github-action-benchmark,
    TensorBoard, MLflow."""
    from harness.report.exports import EXPORTS, exporter, viewer

    outputs = {
        "pyperf": pyperf,
        "bmf": bmf,
        "github_action": github_action,
        "tensorboard": tensorboard,
        "mlflow": mlflow,
    }
    wanted = {name: out for name, out in outputs.items() if out is not None}
    if not wanted:
        raise UserError(
            "say what to export: " + " or ".join(f"--{flag(name)} {OUT.get(name, 'OUT.json')}" for name in EXPORTS)
        )
    for name, out in wanted.items():
        count, skipped = exporter(name)(run_dir, out, metric)
        for item in skipped:
            print(f"{name}: skipped {item}")
        unit = "runs (one per cell-repeat)" if name in OUT else "entries"
        print(f"{name}: {count} {unit} written: {out}")
        if (how := viewer(name, out)) is not None:
            print(f"{name}: view with {how}")
    return 0


OUT = {"tensorboard": "DIR", "mlflow": "DIR|URI"}  # what the others write is a file


def flag(name: str) -> str:
    """An export's command-line flag: github_action -> github-action."""
    return name.replace("_", "-")
