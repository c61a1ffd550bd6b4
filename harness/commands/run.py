"""`harness run SUITE`: one cell, its metrics printed (or its record as JSON)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from harness.commands import options

EXITS = options.exit_codes(
    """
    0 the cell ok
    1 the cell failed
    2 bad input, or the suite refused its params
    """
)


@options.command(epilog=EXITS)
def run(
    suite: str = typer.Argument(..., help="suite name (see `harness suites`)"),
    set_: list[str] = options.SetOpt,
    duration: float = options.DurationOpt,
    warmup: float = options.WarmupOpt,
    steady: str = options.SteadyOpt,
    steady_max: float = options.SteadyMaxOpt,
    target: str = options.TargetOpt,
    target_every: float = options.TargetEveryOpt,
    work: int = options.WorkOpt,
    timeout: float = options.TimeoutOpt,
    json_: bool = typer.Option(False, "--json", help="print the cell's record as JSON"),
    out: Path = options.OutOpt,
    memory_limit: float = options.MemoryOpt,
    log_cap: float = options.LogCapOpt,
) -> int:
    """Run one cell and print its metrics."""
    from harness.report.evidence import number
    from harness.report.terminal import console_for_stdout, render
    from harness.report.where import blind_lines
    from harness.running import interrupts
    from harness.running.execute import execute, new_run, run_state
    from harness.running.executors import get_executor
    from harness.running.matrix import single_cell
    from harness.running.progress import Progress
    from harness.runs.view import build_view

    budget = options.budget(duration=duration, warmup=warmup, steady=steady, steady_max=steady_max, target=target,
                            target_every=target_every, work=work, timeout=timeout, memory_limit=memory_limit,
                            log_cap=log_cap)  # fmt: skip
    spec, cell = single_cell("run", suite, set_, **budget)
    with interrupts.deferred():  # Ctrl-C acts at safe points only (harness.running.interrupts)
        store = new_run(out, spec, [cell], sys.argv)
        with run_state(store):
            interrupts.check()
            (record,) = execute(store, [cell], get_executor("local"), Progress(quiet=True))
    if json_:
        print(json.dumps(record.to_json(), default=str))
    else:
        render(build_view([record], store.meta()))
        console = console_for_stdout()
        for key, value in sorted(record.metrics.items()):
            if not isinstance(value, dict):
                console.print(f"  {key}: {number(value)}", markup=False, highlight=False)
        for line in blind_lines([record]):  # an instrument that saw nothing, and the fix
            print(f"warning: {line}")
        print(f"run directory: {store.root}")
    if record.ok:
        return 0
    print(f"{record.status}: {record.reason}", file=sys.stderr)
    return 2 if record.user_error else 1
