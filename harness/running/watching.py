"""`harness watch`: run a command, or attach to a running process, under the instruments
for a while, and leave a run directory like a sweep's (run.json, one Record in
cells.jsonl, its series CSV, the program's output as the cell's log).

A command runs in its own session (as a cell does), with the instruments' environment (the
torch hook, PYTHONUNBUFFERED so its log lines arrive as they are printed) and the run's
markers; its output goes through a pipe into the log, capped as a cell's is
(harness.running.cell_log), and on to the log-rate monitor as it arrives; at the duration
(or Ctrl-C, or SIGTERM) the instruments are stopped first, so the window holds only what the
program did, then its whole tree is ended as a cell's is. The log monitor reads the output
as a sweep cell's readers do (harness.monitors.logprogress): the record's headline is the
program's counter, checked, with the readers' warnings among the watch's. A
process attached with `--pid` is only read: nothing is sent to it, and the recorders
detach when the window ends. The record's suite is the harness's own `watch`
(harness.model.vocabulary.OWN_VOCABULARIES says how to read it).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from harness.cell.messages import ChildStream
from harness.cell.processes import ENV_CELL, ENV_RUN, alive, describe_exit, kill_tree, log_tail, marked_processes, tree
from harness.errors import UserError
from harness.model.vocabulary import WATCH_SUITE
from harness.monitors import Monitor, MonitorResult, default_monitors
from harness.program.distributed import doubt, world_size
from harness.running import interrupts, metadata
from harness.running.cell_log import DEFAULT_CAP_MB, CellLog
from harness.running.matrix import Cell, cell_id
from harness.running.runner import WATCH_DIR
from harness.runs.record import Record
from harness.runs.series import SERIES_ORIGIN, write_series
from harness.runs.store import RunStore, utc_now
from harness.watch.instruments import Instruments, WatchOptions

ATTACH_DURATION_S = 30.0
LATE_SWEEPS = 3  # sweeps for processes the program started while its tree was being killed


@dataclass
class Target:
    """What to watch: a command to start, or a running process to attach to."""

    argv: list[str] | None = None
    pid: int | None = None

    def params(self) -> dict[str, Any]:
        if self.argv is not None:
            return {"command": shlex.join(self.argv)}
        try:
            command = shlex.join(psutil.Process(self.pid).cmdline())
        except psutil.Error:
            command = "?"
        return {"pid": self.pid, "command": command}


def check_target(argv: list[str] | None, pid: int | None, duration: float | None) -> Target:
    """Bad input as a UserError naming what is allowed (exit 2), before anything starts."""
    if duration is not None and not duration > 0:
        raise UserError(f"--duration {duration:g}: must be a positive number of seconds")
    if argv and pid is not None:
        raise UserError("give either a command after -- or --pid PID, not both")
    if pid is not None:
        if pid <= 0 or not psutil.pid_exists(pid):
            raise UserError(f"--pid {pid}: no such process")
        mine = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
        if pid in mine:
            raise UserError(f"--pid {pid}: that is harness watch itself or its parent")
        return Target(pid=pid)
    if not argv:
        raise UserError("nothing to watch: give a command after -- (harness watch -- python train.py) or --pid PID")
    program = argv[0]
    if os.sep not in program and shutil.which(program) is None:
        raise UserError(f"cannot start {program!r}: no such program on PATH")
    if os.sep in program and not os.access(program, os.X_OK):
        raise UserError(f"cannot start {program!r}: not an executable file")
    return Target(argv=list(argv))


def new_store(out: Path, target: Target, cell: Cell, label: str) -> RunStore:
    meta: dict[str, Any] = {
        **metadata.collect(sys.argv),
        "label": label,
        "started": utc_now(),
        "ended": None,
        "state": "running",
        "spec": {"watch": target.params()},
        "cells": [cell.to_json()],
    }
    return RunStore.create(out, label, meta)


def _label(target: Target) -> str:
    if target.pid is not None:
        return f"watch-pid{target.pid}"
    words = [w for w in target.argv or [] if not w.startswith("-")]
    script = next((w for w in words[1:] if w.endswith(".py")), words[0] if words else "program")
    return f"watch-{Path(script).stem}"


def _file_outputs(pid: int) -> list[Path]:
    """The stdout/stderr of a running process, where they are regular files (a log)."""
    found = []
    for fd in (1, 2):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("/") and os.path.isfile(target) and Path(target) not in found:
            found.append(Path(target))
    return found


def watch(
    target: Target,
    duration: float | None,
    options: WatchOptions,
    out: Path,
    announce=print,
    log_cap_mb: float | None = None,
) -> tuple[RunStore, Record]:
    """Watch the target; returns the run directory and its one record. `log_cap_mb`: the
    most the started program's log keeps (its last part; default as a cell's)."""
    params = target.params()
    if target.pid is not None and duration is None:
        duration = ATTACH_DURATION_S
    cell = Cell(WATCH_SUITE, params, duration, 0.0, None, 1, duration or 0.0, cell_id(WATCH_SUITE, params))
    store = new_store(out, target, cell, _label(target))
    key = f"{cell.id}-0"
    log_path = store.log_path(f"{cell.id}-0")
    workdir = store.root / WATCH_DIR / key
    attached = target.pid is not None
    logs = _file_outputs(target.pid) if attached else [log_path]
    instruments = Instruments(
        workdir, logs if attached else [], options, program=target.argv, attached=attached, fed=not attached
    )
    monitors: list[Monitor] = [*default_monitors(), instruments]
    warnings: list[str] = []
    started = utc_now()
    t0 = time.time()
    proc: subprocess.Popen[bytes] | None = None
    log: CellLog | None = None
    exit_code: int | None = None
    interrupted = False
    if attached:
        root = target.pid
        if not logs:
            warnings.append("its stdout and stderr are not files, so no rates were read from its log")
    else:
        env = instruments.environ({**os.environ, ENV_CELL: key, ENV_RUN: str(store.root.resolve())})
        env.setdefault("PYTHONUNBUFFERED", "1")
        log = CellLog(log_path, int((log_cap_mb or DEFAULT_CAP_MB) * 1e6), on_data=instruments.log.take)
        try:
            proc = subprocess.Popen(
                target.argv, stdin=subprocess.DEVNULL, stdout=log.write_fd, stderr=subprocess.STDOUT,
                start_new_session=True, env=env,
            )  # fmt: skip
        except OSError as exc:
            log.close()
            raise UserError(f"cannot start {target.argv[0]!r}: {exc.strerror or exc}") from None
        log.started()
        root = proc.pid
    assert root is not None
    for monitor in monitors:
        monitor.start(root)
    how_long = f"for {duration:g} s" if duration else "until it exits (Ctrl-C ends it)"
    where = f"its log: {', '.join(map(str, logs))}" if attached and logs else f"output: {log_path}"
    announce(f"watching pid {root} {how_long}; {where if logs else 'its output is not a file, not read'}")
    known: dict[int, psutil.Process] = {}
    results: list[MonitorResult] = []
    world: int | None = None  # the size of a torch.distributed job: its log's rates are one rank's
    try:
        with interrupts.deferred():  # Ctrl-C and SIGTERM act at the wait's safe points
            try:
                exit_code = _wait(proc, root, duration)
            except KeyboardInterrupt:
                interrupted = True
                warnings.append("stopped early by Ctrl-C or SIGTERM")
            finally:
                if log is not None and exit_code is not None:
                    log.drain()  # its last lines reach the instruments before they stop
                results = [m.stop() for m in monitors]
    finally:
        if proc is not None:
            for result in results:
                for pid, handle in result.processes.items():
                    known.setdefault(pid, handle)
            known.update(marked_processes(store.root, key))
            known.update({p.pid: p for p in tree(proc.pid)})
            world = world_size(alive(known))  # read before they end
            kill_tree(proc.pid, {p.pid: p for p in alive(known)})
            proc.wait()
            for _ in range(LATE_SWEEPS):  # started while the tree was killed (a Ray worker raylet forked then)
                late = {p.pid: p for p in alive(marked_processes(store.root, key))}
                if not late:
                    break
                kill_tree(None, late)
        written = log.close() if log is not None else None
    if attached and _alive(root):
        world = world_size(tree(root))
    ended = time.time()
    record = Record(
        id=cell.id, suite=WATCH_SUITE, params=params, repeat=0, status="ok", started=started, ended=utc_now(),
        budget={"duration": duration, "warmup": 0.0, "work": None, "timeout": None},
        log=store.relative(log_path) if not attached else None,
    )  # fmt: skip
    for result in results:
        record.metrics.update(result.metrics)
        warnings += result.warnings  # an instrument that saw nothing (harness.monitors.blind)
    watched = instruments.window()
    record.metrics.update({"wall_s": ended - t0, "measure_s": watched})
    if exit_code is not None:
        record.metrics["program_exit_code"] = exit_code
        if exit_code != 0:
            tail = log_tail(log_path)
            warnings.append(
                f"the program {describe_exit(exit_code)} after {watched:.1f} s" + (f"; log: {tail}" if tail else "")
            )
    if attached and not _alive(root):
        warnings.append(f"pid {root} ended while it was watched")
    if written is not None and (note := written.warning()):
        warnings.append(note)
    warnings += instruments.log.progress.warnings  # the readers' of the program's counters (an index, a check)
    if (silent := instruments.log.silence(params["command"])) is not None:
        warnings.append(silent)  # no throughput, and what would give one
    if world is not None:
        record.metrics["program_world_size"] = world
        warnings.append(doubt(world))
    record.warnings = warnings
    record.extra["watch"] = {"traces": store.relative(workdir), "interrupted": interrupted, "attached": attached}
    if written is not None and (capped := written.note()):
        record.extra["log_capped"] = capped
    series_path = store.series_path(f"{cell.id}-0")
    if write_series(series_path, ChildStream(start_wall=t0), results):
        record.series = store.relative(series_path)
        record.extra[SERIES_ORIGIN] = t0
    store.append(record)
    store.update_meta(state="interrupted" if interrupted else "finished", ended=utc_now())
    return store, record


def _wait(proc: subprocess.Popen[bytes] | None, root: int, duration: float | None) -> int | None:
    """Until the duration ends or the program exits; its exit code, or None if it still ran."""
    deadline = time.monotonic() + duration if duration else None
    while deadline is None or time.monotonic() < deadline:
        if proc is not None:
            code = proc.poll()
            if code is not None:
                return code
        elif not _alive(root):
            return None
        interrupts.check()
        time.sleep(interrupts.POLL_S)
    return None


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
