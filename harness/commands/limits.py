"""`harness limits`: pyperf micro benchmarks of IPC and of the suites' declared limits."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from harness.commands import options
from harness.errors import UserError
from harness.roofline import IPC, TRANSPORTS

if TYPE_CHECKING:
    from harness.runs.record import Record


@options.command(epilog=options.exit_codes({0: "the benchmarks measured"}))
def limits(
    parts: str = typer.Option(None, "--parts", help="ipc and SUITE.NAME limit benchmarks (default: all)"),
    set_: list[str] = typer.Option(None, "--set", help="k=v option of the suites' limit benchmarks; repeatable"),
    device: str = typer.Option(
        None, "--device", help="where a limit benchmark runs (cpu or cuda), if it has one (default: its own setting)"
    ),
    sizes: str = typer.Option(None, "--sizes", help="comma list of sizes (default: each benchmark's own)"),
    message_bytes: int = typer.Option(64, "--message-bytes", help="IPC payload per round trip"),
    fast: bool = typer.Option(False, "--fast", help="pyperf --fast: rough numbers, half the time"),
    pyperf_args: str = typer.Option(
        None, "--pyperf-args", help="extra pyperf options, e.g. '--rigorous' (default: none)"
    ),
    out: Path = options.OutOpt,
) -> int:
    """pyperf micro benchmarks: IPC round trips and the suites' limits (e.g. a net's evals/s per batch)."""
    from harness.model.params import parse_assignments
    from harness.roofline.measure import measure, plan

    settings = {k: v[0] for k, v in parse_assignments(set_).items()}
    lists = [k for k, v in parse_assignments(set_).items() if len(v) > 1]
    if lists:
        raise UserError(f"--set {', '.join(lists)}: one value each (limits are not a sweep)")
    if device is not None:
        settings["device"] = device
    what = plan(parts, sizes, message_bytes, settings)
    store, records = measure(what, fast, pyperf_args, out)
    print_limits(records)
    print(f"run directory: {store.root}")
    return 0


def print_limits(records: list[Record]) -> None:
    for record in records:
        metrics = record.metrics
        kind = record.params["part"]
        if kind == IPC:
            for name in TRANSPORTS:
                if f"{name}_rtt_us_p50" in metrics:
                    print(f"{name:>6} round trip: {metrics[f'{name}_rtt_us_p50']:9.1f} us (median)")
        else:
            options = ", ".join(f"{k}={v}" for k, v in record.params.items() if k != "part")
            print(f"{kind} ({options}):")
            curve = next(v for k, v in metrics.items() if k.endswith("_per_s_curve"))
            unit = next(k for k in metrics if k.endswith("_per_s_curve")).removesuffix("_per_s_curve")
            name = kind.partition(".")[2]
            for size, rate in curve.items():
                print(f"  size {int(size):>5}: {metrics[f'{name}_ms_b{size}']:9.3f} ms  {rate:12.0f} {unit}/s")
        for warning in record.warnings:
            print(f"warning: {warning}")
