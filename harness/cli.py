"""The `harness` command line. Parses arguments and hands off to harness.commands."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from harness import commands
from harness.errors import UserError

app = typer.Typer(
    help="Benchmark and profile parallel game solvers and self-play training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def user_errors_exit_2(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            code = fn(*args, **kwargs)
        except UserError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
        raise typer.Exit(code or 0)

    return wrapper


SetOpt = typer.Option(None, "--set", help="k=v or k=v1,v2 (a list is a sweep axis); repeatable")
DurationOpt = typer.Option(None, "--duration", help="measured seconds per cell")
WarmupOpt = typer.Option(None, "--warmup", help="seconds excluded from rates")
WorkOpt = typer.Option(None, "--work", help="fixed work units instead of a duration")
TimeoutOpt = typer.Option(None, "--timeout", help="deadline per cell in seconds (default warmup+duration+60)")
OutOpt = typer.Option(commands.DEFAULT_RESULTS, "--out", help="directory that receives run directories")


@app.command()
@user_errors_exit_2
def suites() -> int:
    """List every suite with its parameters (type, allowed values, default, unit)."""
    commands.cmd_suites()
    return 0


@app.command()
@user_errors_exit_2
def run(
    suite: str = typer.Argument(..., help="suite name (see `harness suites`)"),
    set_: list[str] = SetOpt,
    duration: float = DurationOpt,
    warmup: float = WarmupOpt,
    work: int = WorkOpt,
    timeout: float = TimeoutOpt,
    json_: bool = typer.Option(False, "--json", help="print the cell's record as JSON"),
    out: Path = OutOpt,
) -> int:
    """Run one cell and print its metrics."""
    return commands.cmd_run(suite, set_, duration, warmup, work, timeout, json_, out)


@app.command()
@user_errors_exit_2
def sweep(
    spec: Path = typer.Argument(None, help="sweep spec (TOML); flags override it"),
    suite: str = typer.Option(None, "--suite", help="run only this suite's entries (or just this suite)"),
    workers: str = typer.Option(None, "--workers", help="comma list, e.g. 4,8,32,128 (0 = one per core)"),
    backend: str = typer.Option(None, "--backend", help="comma list, e.g. processes,server"),
    set_: list[str] = SetOpt,
    duration: float = DurationOpt,
    warmup: float = WarmupOpt,
    work: int = WorkOpt,
    repeats: int = typer.Option(None, "--repeats", help="repeats of every cell"),
    out: Path = OutOpt,
    label: str = typer.Option(None, "--label", help="name in the run directory"),
    resume: Path = typer.Option(None, "--resume", help="finish this run directory's missing cells"),
    timeout: float = TimeoutOpt,
    quiet: bool = typer.Option(False, "--quiet", help="plain lines, failures only"),
    executor: str = typer.Option("local", "--executor", help="local or ray"),
    address: str = typer.Option(None, "--address", help="Ray cluster address (with --executor ray)"),
) -> int:
    """Run a matrix of cells; exit 0 if all are ok, 1 if any failed, 2 on bad input."""
    overrides = commands.build_overrides(suite, workers, backend, set_, duration, warmup, work, repeats, timeout, label)
    return commands.cmd_sweep(spec, overrides, out, resume, quiet, executor, address)


@app.command()
@user_errors_exit_2
def report(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    csv: bool = typer.Option(False, "--csv", help="(re)write summary.csv and cells.csv"),
) -> int:
    """Print a run's table; with --csv write summary.csv and cells.csv."""
    return commands.cmd_report(run_dir, csv)


if __name__ == "__main__":
    app()
