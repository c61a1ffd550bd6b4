"""`harness baseline save RUN_DIR --name NAME`: freeze a run for `harness gate`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from harness.commands import options

app = typer.Typer(help="Save runs as baselines for `harness gate`.", no_args_is_help=True)


@app.command("save", epilog=options.exit_codes({0: "the baseline written"}))
@options.user_errors_exit_2
def save(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    name: str = typer.Option(..., "--name", help="baseline name: written as DIR/NAME.json"),
    directory: Path = options.BaselineDirOpt,
    bound_slack: float = typer.Option(0.10, "--bound-slack", help="quality bounds = worst repeat x (1 + this)"),
) -> int:
    """Freeze a run's per-repeat metrics and metadata into a baseline file."""
    from harness.analysis.baselines import save as save_baseline

    path = save_baseline(run_dir, name, directory, bound_slack)
    data = json.loads(path.read_text())
    repeats = sum(len(c["repeats"]) for c in data["cells"])
    print(
        f"baseline {data['name']}: {len(data['cells'])} cells, {repeats} repeats, commit {data['run'].get('git_commit')}"
    )
    print(f"written: {path}")
    return 0
