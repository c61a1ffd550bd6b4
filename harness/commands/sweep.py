"""`harness sweep`: a matrix of cells (or the missing cells of a run, with --resume)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from harness.commands.common import all_ok, finish_report
from harness.commands.program import Program
from harness.errors import UserError
from harness.model.params import parse_assignments, parse_list
from harness.model.registry import ready_suite
from harness.running import interrupts
from harness.running.execute import check_resume, execute, mark_finished, new_run, run_state, stored_cells
from harness.running.executors import get_executor
from harness.running.matrix import Overrides, Spec, apply_overrides, expand, load_spec
from harness.running.progress import Progress
from harness.runs.store import RunStore


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
    spec_path: Path | None,
    overrides: Overrides,
    out: Path,
    resume: Path | None,
    quiet: bool,
    executor: str = "local",
    address: str | None = None,
    force: bool = False,
    retry_failed: bool = False,
) -> int:
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
            runner = get_executor(executor, address)
            records = execute(store, cells, runner, Progress(quiet=quiet), retry_failed)
            interrupts.check()  # a Ctrl-C during the last cell is an interrupt, not a finish
            mark_finished(store)  # before the reports, which state how the run ended
            finish_report(store, records, quiet)
    return all_ok(records)
