"""Child-process entry point: `python -m harness.cell CELL_JSON OUT_JSONL`.

Runs one cell in a fresh interpreter (so imports, allocator state and JIT caches of one
cell never leak into the next) and streams its results back as JSON lines, never pickle:
a `start` line, the probe's 1 s samples and points as they happen (so a cell that hangs
or dies still leaves its series), and finally one `result` or `error` line (the format:
harness.cell.messages).
"""

from __future__ import annotations

import errno
import faulthandler
import json
import os
import signal
import sys
import time
import traceback
from typing import Any, NoReturn

from harness.cell import messages
from harness.cell.probe import Probe
from harness.cell.processes import die_with_owner
from harness.cell.steady import DEFAULT_CAP_S, Steady
from harness.cell.targets import DEFAULT_EVERY_S, Target
from harness.errors import UserError
from harness.model.params import validate
from harness.model.registry import ready_suite
from harness.model.suite import Suite, SuiteError
from harness.model.workshare import resolve_workers

TRACEBACK_LINES = 12
# The exit code of a child that could not write its result stream (a full disk, a read-only
# one): the harness's failure, not the suite's. Its last line on stderr says why:
# `CHANNEL_LOST_MARK ERRNO_NAME: message`.
CHANNEL_LOST_EXIT = 74
CHANNEL_LOST_MARK = "harness: the cell's result stream could not be written:"
# The signal the runner sends the cell's interpreter at its deadline: close the measured
# window and report what was measured, before the tree is ended (harness.running.deadline).
DEADLINE_SIGNAL = signal.SIGUSR1


def worker_count(suite: Suite, params: Any) -> int | None:
    """The cell's resolved worker count (its vocabulary's worker param; 0 = one per core)."""
    key = suite.words.workers
    value = getattr(params, key, None) if key else None
    return resolve_workers(value) if isinstance(value, int) and not isinstance(value, bool) else None


def steady_rule(spec: dict[str, Any]) -> Steady | None:
    """Auto warm-up for duration cells unless the spec turns it off (fixed warm-up)."""
    if spec.get("steady", "auto") != "auto" or spec.get("duration") is None:
        return None
    return Steady.for_window(spec.get("warmup") or 0.0, spec.get("steady_max") or DEFAULT_CAP_S, spec["duration"])


def main(argv: list[str]) -> int:
    die_with_owner()
    spec: dict[str, Any] = json.loads(argv[0])
    faulthandler.enable()  # a crash in native code leaves the Python stack in the cell's log
    try:
        out = open(argv[1], "a", buffering=1)  # noqa: SIM115 - lives as long as the process
    except OSError as exc:
        channel_lost(exc)

    def emit(message: messages.Message) -> None:
        try:
            out.write(messages.line(message))
        except OSError as exc:
            channel_lost(exc)

    emit(messages.start(time.time()))
    probe: Probe | None = None

    def deadline(*_: object) -> None:  # a signal handler: only sets the probe's flag
        if probe is not None:
            probe.cut_short()

    signal.signal(DEADLINE_SIGNAL, deadline)
    try:
        suite = ready_suite(spec["suite"])
        params = validate(spec["suite"], suite.params, spec["params"])
        probe = Probe(
            duration_s=spec.get("duration"),
            warmup_s=spec.get("warmup") or 0.0,
            target_work=spec.get("work"),
            sink=emit,
            rates=suite.words.rates,
            workers=worker_count(suite, params),
            steady=steady_rule(spec),
            target=Target.parse(spec["target"]) if spec.get("target") else None,
            target_every_s=spec.get("target_every") or DEFAULT_EVERY_S,
            series_period_s=spec.get("sample_s") or 1.0,  # a causal experiment reads 0.1 s samples
            marks=spec.get("marks"),  # a counted run's headline counter (harness.count.experiment)
        )
        suite.run(params, probe)
        metrics = probe.finish()
        emit(messages.result(metrics, probe.warnings))
        return 0
    except (SuiteError, UserError) as exc:
        emit(messages.error(str(exc), user_error=True, traceback=None, warnings=probe.warnings if probe else []))
        return 1
    except BaseException as exc:  # noqa: BLE001 - every failure must be reported, then re-raised as exit code
        tail = "".join(traceback.format_exception(exc)).rstrip().splitlines()[-TRACEBACK_LINES:]
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
        emit(
            messages.error(
                reason, user_error=False, traceback="\n".join(tail), warnings=probe.warnings if probe else []
            )
        )
        traceback.print_exc()
        return 1
    finally:
        try:
            out.flush()
        except OSError as exc:
            channel_lost(exc)


def channel_lost(exc: OSError) -> NoReturn:
    """The result stream cannot be written: say why on stderr (the harness reads it from
    the cell's log pipe, which needs no disk) and exit at once, with the code that tells the
    harness the failure is its own. Not an exception: the suite's code would report it as
    its own error, through the very stream that fails."""
    name = errno.errorcode.get(exc.errno or 0, "EIO")
    sys.stderr.write(f"{CHANNEL_LOST_MARK} {name}: {exc.strerror or exc}\n")
    sys.stderr.flush()
    os._exit(CHANNEL_LOST_EXIT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
