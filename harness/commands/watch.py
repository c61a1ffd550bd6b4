"""`harness watch -- CMD ...` / `harness watch --pid PID`: the instruments over a program
nobody changed, then the findings and reports a sweep gives (harness.running.watching)."""

from __future__ import annotations

from pathlib import Path

from harness.commands.common import finish_report
from harness.errors import UserError
from harness.monitors.logrates import compile_pattern
from harness.running.watching import check_target, watch
from harness.watch.instruments import WatchOptions

RATE_RANGE = (1, 10_000)


def main(
    command: list[str] | None,
    pid: int | None,
    duration: float | None,
    rate: int,
    rate_regex: str | None,
    torch_hook: bool,
    batch_limit: int | None,
    out: Path,
    quiet: bool,
) -> int:
    if not RATE_RANGE[0] <= rate <= RATE_RANGE[1]:
        raise UserError(
            f"--rate {rate}: allowed {RATE_RANGE[0]}..{RATE_RANGE[1]} stack samples per second (whole tree)"
        )
    if batch_limit is not None and batch_limit < 1:
        raise UserError(f"--batch-limit {batch_limit}: must be a batch size of at least 1")
    target = check_target(command, pid, duration)
    options = WatchOptions(budget_hz=rate, torch_hook=torch_hook, rate_regex=rate_regex, batch_limit=batch_limit)
    compile_pattern(rate_regex)  # a bad pattern is refused before the program starts
    store, record = watch(target, duration, options, out, announce=(lambda _: None) if quiet else print)
    finish_report(store, [record], quiet)
    for warning in record.warnings:
        print(f"warning: {warning}")
    code = record.metrics.get("program_exit_code")
    return 1 if isinstance(code, int) and code != 0 else 0
