"""`harness watch -- CMD ...` / `harness watch --pid PID`: the instruments over a program
nobody changed, then the findings and reports a sweep gives (harness.running.watching)."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.commands import options
from harness.errors import UserError

RATE_RANGE = (1, 10_000)


EXITS = options.exit_codes(
    """
    0 the program exited 0, or was watched for --duration
    1 the program exited with another code
    """
)


@options.command(context_settings={"allow_interspersed_args": False}, epilog=EXITS)
def watch(
    command: list[str] = typer.Argument(None, help="the program and its arguments, after --"),
    pid: int = typer.Option(None, "--pid", help="attach to this running process (and its children) instead"),
    duration: float = typer.Option(
        None, "--duration", help="seconds to watch (default: until the command exits; 30 with --pid)"
    ),
    rate: int = typer.Option(
        200, "--rate", help="stack samples per second over the whole process tree (at most 100 per process)"
    ),
    rate_regex: str = typer.Option(
        None, "--rate-regex", help="regex for rate lines in the log: group (?P<value>), optional (?P<unit>) (?P<per>)"
    ),
    torch_hook: bool = typer.Option(
        True, "--torch-hook/--no-torch-hook", help="record torch module calls' batch and device"
    ),
    batch_limit: int = typer.Option(
        None,
        "--batch-limit",
        help="the largest batch the program could use (SMALL_BATCHES; default: the largest batch seen times the threads that called the net)",
    ),
    log_cap: float = options.LogCapOpt,
    out: Path = options.OutOpt,
    quiet: bool = typer.Option(False, "--quiet", help="plain lines: findings and paths only"),
) -> int:
    """Watch a program you did not change: where its time goes, its IPC, GIL, batches; findings."""
    from harness.commands.common import finish_report
    from harness.monitors import blind
    from harness.monitors.logrates import compile_pattern
    from harness.running.watching import check_target
    from harness.running.watching import watch as watch_program
    from harness.watch.instruments import WatchOptions

    if not RATE_RANGE[0] <= rate <= RATE_RANGE[1]:
        raise UserError(
            f"--rate {rate}: allowed {RATE_RANGE[0]}..{RATE_RANGE[1]} stack samples per second (whole tree)"
        )
    if batch_limit is not None and batch_limit < 1:
        raise UserError(f"--batch-limit {batch_limit}: must be a batch size of at least 1")
    if log_cap is not None and not log_cap > 0:
        raise UserError(f"--log-cap-mb {log_cap:g}: must be a positive number of MB")
    target = check_target(command, pid, duration)
    instruments = WatchOptions(budget_hz=rate, torch_hook=torch_hook, rate_regex=rate_regex, batch_limit=batch_limit)
    compile_pattern(rate_regex)  # a bad pattern is refused before the program starts
    store, record = watch_program(
        target, duration, instruments, out, announce=(lambda _: None) if quiet else print, log_cap_mb=log_cap
    )
    finish_report(store, [record], quiet)
    said = set(blind.warnings(record.metrics))  # finish_report printed the instruments that saw nothing
    for warning in record.warnings:
        if warning not in said:
            print(f"warning: {warning}")
    code = record.metrics.get("program_exit_code")
    return 1 if isinstance(code, int) and code != 0 else 0
