"""`harness sweep`: a matrix of cells (or the missing cells of a run, with --resume)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from harness.commands import options
from harness.errors import UserError

if TYPE_CHECKING:
    from harness.commands.program import Program
    from harness.running.matrix import Overrides


EXITS = options.exit_codes(
    """
    0 every cell-repeat ok
    1 some cells failed (every other cell still ran)
    2 bad input, a suite whose extra is missing, or --resume at another commit without --force
    74 a file of the run could not be written (a full or read-only disk; the message names it): free space, then --resume the run
    75 the Ray cluster's head was lost (--executor ray): what was recorded is intact; start a new head, then --resume the run against it
    130 Ctrl-C or SIGTERM: run.json says interrupted, and --resume finishes it
    """
)


@options.command(cls=options.ProgramTail, epilog=EXITS)
def sweep(
    ctx: typer.Context,
    spec: Path = typer.Argument(None, help="sweep spec (TOML); flags override it; -- CMD ...: your program"),
    suite: str = typer.Option(None, "--suite", help="run only this suite's entries (or just this suite)"),
    workers: str = typer.Option(None, "--workers", help="comma list, e.g. 4,8,32,128 (0 = one per core)"),
    backend: str = typer.Option(None, "--backend", help="comma list, e.g. processes,server"),
    set_: list[str] = options.SetOpt,
    duration: float = options.DurationOpt,
    warmup: float = options.WarmupOpt,
    steady: str = options.SteadyOpt,
    steady_max: float = options.SteadyMaxOpt,
    target: str = options.TargetOpt,
    target_every: float = options.TargetEveryOpt,
    work: int = options.WorkOpt,
    repeats: int = typer.Option(None, "--repeats", help="repeats of every cell (default 1)"),
    out: Path = options.OutOpt,
    label: str = typer.Option(None, "--label", help="name in the run directory"),
    resume: Path = typer.Option(None, "--resume", help="finish this run directory's missing cells"),
    timeout: float = options.TimeoutOpt,
    quiet: bool = typer.Option(False, "--quiet", help="plain lines, failures only"),
    executor: str = typer.Option("local", "--executor", help="local or ray"),
    address: str = typer.Option(None, "--address", help="Ray cluster address (with --executor ray)"),
    node_attempts: int = typer.Option(
        3, "--node-attempts", min=1, help="with --executor ray: attempts of a cell-repeat whose node is lost under it"
    ),
    node_grace: float = typer.Option(
        30.0,
        "--node-grace",
        min=1.0,
        help="with --executor ray: seconds waited beyond a cell's longest time on a node that does not answer, "
        "and on a silent head before the sweep stops",
    ),
    memory_limit: float = options.MemoryOpt,
    log_cap: float = options.LogCapOpt,
    force: bool = typer.Option(
        False, "--force", help="with --resume: resume a run measured at another commit (noted in run.json)"
    ),
    retry_failed: bool = typer.Option(
        False, "--retry-failed", help="with --resume: run failed cells again (their failed records stay as history)"
    ),
    progress: list[str] = options.ProgressOpt,
    progress_file: list[str] = options.ProgressFileOpt,
) -> int:
    """Run a matrix of cells (or your program after --, every axis filling its {placeholder})."""
    program = options.program_of(ctx, progress, progress_file)
    budget = options.budget(duration=duration, warmup=warmup, steady=steady, steady_max=steady_max, target=target,
                            target_every=target_every, work=work, timeout=timeout, memory_limit=memory_limit,
                            log_cap=log_cap, repeats=repeats)  # fmt: skip
    overrides = build_overrides(suite, workers, backend, set_, budget, label, program)
    return main(spec_path=spec, overrides=overrides, out=out, resume=resume, quiet=quiet, executor=executor,
                address=address, force=force, retry_failed=retry_failed, node_attempts=node_attempts,
                node_grace=node_grace)  # fmt: skip


def build_overrides(
    suite: str | None,
    workers: str | None,
    backend: str | None,
    sets: list[str] | None,
    budget: dict[str, Any],
    label: str | None,
    program: Program | None = None,
) -> Overrides:
    """The command line as Overrides; --workers and --backend set the suites' worker and
    backend params (their vocabulary's; by convention `workers` and `backend`); `budget`
    holds the budget flags by Overrides field name (None: keep the spec's); a program
    after `--` is a cell of the harness's own `command` suite."""
    from harness.model.params import parse_assignments, parse_list
    from harness.running.matrix import Overrides

    axes: dict[str, list[Any]] = dict(parse_assignments(sets))
    if program is not None:
        program.check_suite(suite)
        suite = program.suite
        axes.update(program.axes())
    roles: dict[str, list[Any]] = {}
    for flag, role, text in (("--workers", "workers", workers), ("--backend", "backend", backend)):
        values = parse_list(flag, text)
        if values is not None:
            roles[role] = values
    return Overrides(suite=suite, axes=axes, roles=roles, label=label, **budget)


def main(
    *,
    spec_path: Path | None,
    overrides: Overrides,
    out: Path,
    resume: Path | None,
    quiet: bool,
    executor: str = "local",
    address: str | None = None,
    force: bool = False,
    retry_failed: bool = False,
    node_attempts: int | None = None,
    node_grace: float | None = None,
) -> int:
    """The sweep itself: a new run of the spec with the command line's overrides, or the
    missing (and with retry_failed the failed) cells of the run `resume`."""
    from harness.commands.common import all_ok, finish_report
    from harness.model.registry import ready_suite
    from harness.running import interrupts
    from harness.running.execute import check_resume, execute, mark_finished, new_run, run_state, stored_cells
    from harness.running.executors import get_executor
    from harness.running.matrix import Spec, apply_overrides, expand, load_spec
    from harness.running.progress import Progress
    from harness.runs.store import RunStore

    if retry_failed and resume is None:
        raise UserError("--retry-failed re-runs the failed cells of a run: use it with --resume RUN_DIR")
    if force and resume is None:
        raise UserError("--force resumes a run measured at another commit: use it with --resume RUN_DIR")
    with interrupts.deferred():  # Ctrl-C and SIGTERM act at safe points only (harness.running.interrupts)
        if resume is not None:
            store = RunStore.open(resume)
            cells = stored_cells(store)
            if not cells:
                raise UserError(f"{resume}/run.json lists no cells to resume")
            for name in sorted({c.suite for c in cells}):
                ready_suite(name)
            check_resume(store, force)
        else:
            spec = load_spec(spec_path) if spec_path is not None else Spec()
            spec = apply_overrides(spec, overrides)
            cells = expand(spec)
            store = new_run(out, spec, cells, sys.argv)
        with run_state(store):
            interrupts.check()
            runner = get_executor(executor, address, attempts=node_attempts, grace_s=node_grace)
            records = execute(store, cells, runner, Progress(quiet=quiet), retry_failed)
            interrupts.check()  # a Ctrl-C during the last cell is an interrupt, not a finish
            mark_finished(store)  # before the reports, which state how the run ended
            finish_report(store, records, quiet)
    return all_ok(records)
