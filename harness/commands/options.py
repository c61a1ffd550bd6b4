"""What several `harness` commands share on the command line: the flags they all declare the
same way (--set, the cell budget, --out, --progress), the program after `--`, and the mapping
of a command's outcome to its exit code.

A command module declares its own options (harness.commands.<name>) with these; cli.py only
registers the commands. This module stays light (typer, pathlib): cli.py imports every
command module, and every command module imports this, so `harness --help` pays for it.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
import typer.core

from harness.errors import (
    CLUSTER_EXIT,
    STORAGE_EXIT,
    USER_ERROR_EXIT,
    ClusterLost,
    StorageError,
    UserError,
    is_storage_error,
)
from harness.runs import DEFAULT_RESULTS

if TYPE_CHECKING:
    from harness.commands.program import Program


def user_errors_exit_2(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A command's return value as its exit code; bad input (UserError) exits 2 with one
    line on stderr, a file the harness could not write (StorageError, or an OSError of a
    full, failing or read-only disk no writer caught) 74, a Ray cluster whose head was lost
    (ClusterLost) 75, Ctrl-C 130."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            code = fn(*args, **kwargs)
        except UserError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise typer.Exit(USER_ERROR_EXIT) from None
        except StorageError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise typer.Exit(STORAGE_EXIT) from None
        except ClusterLost as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise typer.Exit(CLUSTER_EXIT) from None
        except OSError as exc:  # a write no writer of the harness caught: still the disk, said so
            if not is_storage_error(exc):
                raise
            print(f"error: {StorageError.from_os(exc)}", file=sys.stderr)
            raise typer.Exit(STORAGE_EXIT) from None
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
        raise typer.Exit(code or 0)

    return wrapper


def command(**settings: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declares a function a `harness` command (named after the function): its exit codes
    mapped by user_errors_exit_2, and its click settings (`cls`, `context_settings`) kept
    on it for cli.py's registration (`typer.Typer.command(**settings)`)."""

    def declare(fn: Callable[..., Any]) -> Callable[..., Any]:
        wrapped = user_errors_exit_2(fn)
        wrapped.settings = settings  # type: ignore[attr-defined]
        return wrapped

    return declare


# ------------------------------------------------------------------ exit codes, in every command's help
# What every command can exit with (user_errors_exit_2): bad input, a disk the harness could
# not write to, an interrupt. A command's own codes come first; it may say its 2 more precisely.
SHARED_EXITS = {
    USER_ERROR_EXIT: "bad input (the message names what was wrong and what is allowed)",
    STORAGE_EXIT: "a file could not be written (a full, failing or read-only disk; the message names it)",
    130: "Ctrl-C or SIGTERM",
}


def exit_codes(own: str | dict[int, str]) -> str:
    """A command's help epilog listing its exit codes (`Exit codes: 0 ...; 1 ...; 2 ...`): the
    one place they are said, which docs/guide/commands.md's table is tested against. `own`:
    a line a code (`0 every cell ok`), or a dict code -> meaning."""
    if isinstance(own, str):
        own = {int(code): text.strip() for code, text in (line.split(None, 1) for line in own.strip().splitlines())}
    codes = {**SHARED_EXITS, **own}
    return "Exit codes: " + "; ".join(f"{code} {codes[code]}" for code in sorted(codes)) + "."


# ------------------------------------------------------------------ the program after --
PROGRAM = "harness.program_argv"


class ProgramTail(typer.core.TyperCommand):
    """A command that takes your program after `--` (`harness sweep --workers 1,4 -- python
    train.py --n {workers}`): everything after the first `--` is kept whole in
    `ctx.meta[PROGRAM]`, so the program's own flags are never read as the harness's."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if "--" in args:
            cut = args.index("--")
            ctx.meta[PROGRAM] = args[cut + 1 :]
            args = args[:cut]
        return super().parse_args(ctx, args)


ProgressOpt = typer.Option(
    None, "--progress", help="with -- CMD: a regex with named groups for progress the readers miss, e.g. "
    "'After (?P<frames>\\d+) frames'; repeatable",
)  # fmt: skip
ProgressFileOpt = typer.Option(
    None, "--progress-file", help="with -- CMD: a CSV or TensorBoard event file (glob, or a log directory) the "
    "program writes its progress to; repeatable",
)  # fmt: skip


def program_of(ctx: typer.Context, progress: list[str] | None, progress_files: list[str] | None) -> Program | None:
    """The program after `--` with its progress readers, or None; --progress without a
    program is a UserError."""
    from harness.commands.program import Program

    return Program.from_cli(ctx.meta.get(PROGRAM), progress, progress_files)


# ------------------------------------------------------------------ a cell's settings and budget
SetOpt = typer.Option(None, "--set", help="k=v or k=v1,v2 (a list is a sweep axis); repeatable")
DurationOpt = typer.Option(
    None, "--duration", help="measured seconds per cell (default 5; with --target: the cap, default 120)"
)
WarmupOpt = typer.Option(
    None, "--warmup", help="seconds excluded from rates: the floor of the automatic warm-up (default 0)"
)
SteadyOpt = typer.Option(
    None, "--steady", help="auto (default): measure once the rate has settled; off: --warmup is fixed"
)
SteadyMaxOpt = typer.Option(None, "--steady-max", help="the most an automatic warm-up may last (default 10 s)")
TargetOpt = typer.Option(
    None,
    "--target",
    help="run each cell until a quality target is met, e.g. accuracy>=0.9 (quality metrics: harness suites)",
)
TargetEveryOpt = typer.Option(None, "--target-every", help="measured seconds between quality checks (default 0.5)")
WorkOpt = typer.Option(None, "--work", help="fixed work units instead of a duration")
TimeoutOpt = typer.Option(
    None,
    "--timeout",
    help="deadline per cell in seconds (default: duration + the warm-up (at least --steady-max, 10 s) + 60, moved by "
    "a measured window that opens late)",
)
MemoryOpt = typer.Option(
    None,
    "--memory-limit",
    help="end a cell whose process tree uses more than this many MB (PSS summed; a watchdog; default: no limit)",
)
LogCapOpt = typer.Option(None, "--log-cap-mb", help="the most a cell's log keeps, MB: its last part (default 16)")
OutOpt = typer.Option(DEFAULT_RESULTS, "--out", help="directory that receives run directories")
BaselineDirOpt = typer.Option(Path("results/baselines"), "--dir", help="where baselines are kept")


def budget(
    *,
    duration: float | None,
    warmup: float | None,
    steady: str | None,
    steady_max: float | None,
    target: str | None,
    target_every: float | None,
    work: int | None,
    timeout: float | None,
    memory_limit: float | None,
    log_cap: float | None = None,
    repeats: int | None = None,
) -> dict[str, Any]:
    """The budget flags by the name of their field in harness.running.matrix.Overrides (None:
    keep the spec's or the suite's); `harness run` has no --repeats (one repeat)."""
    found = {"duration": duration, "warmup": warmup, "steady": steady, "steady_max": steady_max, "target": target,
             "target_every": target_every, "work": work, "timeout": timeout, "memory_limit_mb": memory_limit,
             "log_cap_mb": log_cap}  # fmt: skip
    if repeats is not None:
        found["repeats"] = repeats
    return found


# ------------------------------------------------------------------ what an A/B measures (ab, gate --against)
MeasureOpt = typer.Option(
    "time",
    "--measure",
    help="what the A/B decides on: time (time-sliced rates) or instructions (counted under valgrind's callgrind, "
    "with the waits decided natively beside them: docs/guide/counting.md)",
)
CountToleranceOpt = typer.Option(
    "0.5%", "--count-tolerance", help="with --measure instructions: more instructions per unit allowed"
)
CountRunsOpt = typer.Option(2, "--count-runs", help="with --measure instructions: counted runs per side (2-10)")
CountLinesOpt = typer.Option(
    1, "--count-lines", help="with --measure instructions: progress lines (at least) in each half of the window"
)
CountTimeoutOpt = typer.Option(
    600.0,
    "--count-timeout",
    help="with --measure instructions: seconds one counted run may take, start-up included, before the cell is an "
    "error naming where its window stood (30-7200)",
)
CountLayoutsOpt = typer.Option(
    2,
    "--count-layouts",
    help="with --measure instructions: memory layouts each side is counted in (1-5); a ratio the layout moves "
    "across the tolerance is undecided (docs/guide/counting.md)",
)
CountWithOpt = typer.Option(
    "callgrind",
    "--count-with",
    help="with --measure instructions: callgrind (valgrind, any x86-64 Linux) or perf (hardware counters, "
    "natively, where the machine has them: harness doctor says)",
)
