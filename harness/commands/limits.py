"""`harness limits`: pyperf micro benchmarks of IPC and of the suites' declared limits."""

from __future__ import annotations

from pathlib import Path

from harness.errors import UserError
from harness.model.params import parse_assignments
from harness.roofline import IPC, TRANSPORTS
from harness.roofline.measure import measure, plan
from harness.runs.record import Record


def main(
    parts: str | None,
    sets: list[str] | None,
    device: str | None,
    sizes: str | None,
    message_bytes: int,
    fast: bool,
    pyperf_args: str | None,
    out: Path,
) -> int:
    settings = {k: v[0] for k, v in parse_assignments(sets).items()}
    lists = [k for k, v in parse_assignments(sets).items() if len(v) > 1]
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
