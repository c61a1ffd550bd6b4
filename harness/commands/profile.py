"""`harness profile SUITE`: one cell under `py-spy record --subprocesses`.

Writes speedscope JSON (and, with --flamegraph, an SVG from a second run of the same cell:
py-spy writes one format per recording) under profiles/, their paths in the record's
`profile` field.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import typer

from harness.commands import options
from harness.errors import UserError


@options.command(epilog=options.exit_codes({0: "the profile written", 1: "the cell failed, or py-spy did"}))
def profile(
    suite: str = typer.Argument(..., help="suite name (see `harness suites`)"),
    set_: list[str] = options.SetOpt,
    duration: float = options.DurationOpt,
    warmup: float = options.WarmupOpt,
    timeout: float = options.TimeoutOpt,
    rate: int = typer.Option(100, "--rate", help="py-spy samples per second"),
    native: bool = typer.Option(False, "--native", help="also sample C/C++ frames (torch, numpy)"),
    flamegraph: bool = typer.Option(
        False, "--flamegraph", help="also write a flamegraph SVG (runs the cell a second time)"
    ),
    out: Path = options.OutOpt,
) -> int:
    """Run one cell under py-spy (all its processes); write a speedscope profile into the run."""
    from harness.monitors.pyspy import missing_py_spy, profile_paths, py_spy, record_command
    from harness.report.terminal import render
    from harness.running.execute import new_run
    from harness.running.matrix import single_cell
    from harness.running.runner import CellRunner
    from harness.runs.view import build_view

    exe = py_spy()
    if exe is None:
        raise UserError(f"harness profile needs py-spy: {missing_py_spy()}")
    if not 1 <= rate <= 10_000:
        raise UserError(f"--rate {rate}: allowed 1..10000 samples per second")
    spec, cell = single_cell("profile", suite, set_, duration=duration, warmup=warmup, timeout=timeout)
    store = new_run(out, spec, [cell], sys.argv)
    key = f"{cell.id}-0"
    paths = profile_paths(store, key)

    def under(fmt: str) -> Callable[[list[str], str], list[str]]:
        return lambda command, _key: record_command(exe, fmt, paths[fmt], rate, native) + command

    record = CellRunner(store, wrap=under("speedscope")).run(cell, 0)
    profile: dict[str, object] = {"rate_hz": rate, "native": native, "tool": "py-spy record --subprocesses"}
    if paths["speedscope"].exists():
        profile["speedscope"] = store.relative(paths["speedscope"])
    else:
        profile["error"] = f"py-spy wrote no speedscope file; see {record.log}"
    if flamegraph:
        again = CellRunner(store, wrap=under("flamegraph")).run(cell, 1)
        if paths["flamegraph"].exists():
            profile["flamegraph"] = store.relative(paths["flamegraph"])
        else:
            profile["flamegraph_error"] = f"py-spy wrote no flamegraph; see {again.log}"
        if again.series:
            (store.root / again.series).unlink(missing_ok=True)  # only its SVG is kept
    record.extra["profile"] = profile
    record.warnings.append(
        f"profiled with py-spy at {rate} Hz: its sampling costs CPU, so rates are not comparable to unprofiled cells"
    )
    store.append(record)
    store.update_meta(state="finished", ended=record.ended)
    render(build_view([record], store.meta()))
    for name in ("speedscope", "flamegraph"):
        if name in profile:
            print(f"{name}: {store.root / str(profile[name])}")
    print(f"run directory: {store.root}")
    if not record.ok:
        print(f"{record.status}: {record.reason}", file=sys.stderr)
        return 1
    if "error" in profile:
        print(f"error: {profile['error']}", file=sys.stderr)
        return 1
    return 0
