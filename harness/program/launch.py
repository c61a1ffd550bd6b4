"""Running the user's program and reading its progress as it runs (a module apart from the
package's `run`, the suite's entry: a submodule named `run` would replace that function as
an attribute of harness.program once imported).

Both output streams are piped (progress bars and loggers write to stderr), every line goes
on to the cell's log, and harness.readers turn them and the progress files into probe
calls. Python programs are started unbuffered (PYTHONUNBUFFERED): a piped stdout is
otherwise flushed every 8 KB, and a table printed each rollout would reach the harness
seconds late, in bursts that no windowed rate can read.
"""

from __future__ import annotations

import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from harness.cell.processes import tree
from harness.probe import Probe, SuiteError, resolve_workers
from harness.program.distributed import doubt, world_size
from harness.readers import Feed, file_readers, line_readers
from harness.readers.jsonlines import is_probe_message, parse_object

EXIT_DRAIN_S = 1.0
FILE_POLL_S = 0.5
WORLD_POLL_S = 2.0  # how often the program's processes are asked whether they are ranks of a job (until one is)
# At most QUEUED lines wait to be read: a program that prints faster than the readers read
# (1.6 MB/s of 100-byte lines on a shared 2-core VM) waits for them, as for a slow terminal
# (a warning says so), instead of filling the harness's memory. A line longer than MAX_LINE
# (no progress line is) goes to the log in pieces, unread: a megabyte without a newline
# costs a copy, not the readers' time.
MAX_LINE = 16 * 1024
QUEUED = 1024
WAITED_WARN_S = 0.5  # the program's prints waited this long in all: a warning says it was slowed


class _Piece(str):
    """Part of a line longer than MAX_LINE: copied to the log as it is, never read."""


def placeholders(params) -> dict[str, Any]:
    """What `{key}` in the command and the progress-file globs stands for."""
    return {**(params.model_extra or {}), "workers": resolve_workers(params.workers)}


def child_env() -> dict[str, str]:
    """The program's environment: ours, with Python unbuffered (see the module's docstring)."""
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def build_argv(params) -> list[str]:
    values = placeholders(params)
    if not params.argv.strip():
        raise SuiteError("suite 'command' needs a program: harness sweep -- python train.py --workers {workers}")
    try:
        return [word.format_map(values) for word in shlex.split(params.argv)]
    except KeyError as exc:
        raise SuiteError(
            f"the command names {{{exc.args[0]}}} but no such param was given; pass it with --set {exc.args[0]}=..."
        ) from None
    except ValueError as exc:
        raise SuiteError(f"the command could not be parsed: {exc}") from None


def apply_line(probe: Probe, message: dict[str, Any]) -> None:
    """One of the harness's own JSON lines, applied to the probe."""
    for name, n in message.get("count", {}).items():
        probe.count(name, n)
    for name, value in message.get("observe", {}).items():
        for item in value if isinstance(value, list) else [value]:
            probe.observe(name, item)
    for name, value in message.get("set", {}).items():
        probe.set(name, value)
    if "work" in message:
        probe.work(requested=int(message["work"].get("requested", 0)), done=int(message["work"].get("done", 0)))
    if message.get("phase") in ("warmup", "measure"):
        probe.phase(message["phase"])


def _pump(stream, lines: queue.Queue, waited: list[float]) -> None:
    """Lines of one of the program's streams into the queue; `waited` gets the seconds the
    program's output waited for room in it (the program slowed by the harness)."""
    in_long_line = False
    while line := stream.readline(MAX_LINE):
        ends = line.endswith("\n")
        if in_long_line or (not ends and len(line) >= MAX_LINE):
            line = _Piece(line)
            in_long_line = not ends
        try:
            lines.put_nowait(line)
        except queue.Full:
            t0 = time.monotonic()
            lines.put(line)
            waited.append(time.monotonic() - t0)
    lines.put(None)


def run_program(params, probe: Probe) -> None:
    argv = build_argv(params)
    try:
        files = params.progress_files.format_map(placeholders(params))
    except (KeyError, ValueError) as exc:
        raise SuiteError(
            f"progress_files {params.progress_files!r}: {exc}; its {{key}} are the cell's params"
        ) from None
    lines = line_readers(params.progress)
    feed = Feed(probe, lines, file_readers(files, Path.cwd()), clock=probe.now, headline=_declared_counter(lines))
    try:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
            bufsize=1, env=child_env(), errors="replace",
        )  # fmt: skip
    except OSError as exc:
        raise SuiteError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None
    lines: queue.Queue = queue.Queue(QUEUED)
    waited: list[float] = []
    for stream in (proc.stdout, proc.stderr):
        threading.Thread(target=_pump, args=(stream, lines, waited), daemon=True).start()
    open_streams = 2
    stopped_by_us = False
    stopped_at = 0.0
    exited_at: float | None = None
    next_poll = time.monotonic() + FILE_POLL_S
    next_world = time.monotonic()
    world: int | None = None  # the size of a torch.distributed job, once a rank of it is seen
    unread = 0  # characters of over-long lines
    try:
        while open_streams:
            try:
                line = lines.get(timeout=0.1)
            except queue.Empty:
                line = ""
            if line is None:
                open_streams -= 1
                continue
            if proc.poll() is not None:
                # The program has exited; a child it left behind may hold its output open
                # (and write to it) forever: its last lines get EXIT_DRAIN_S of quiet, or
                # the grace period, not until end of file.
                exited_at = exited_at or time.monotonic()
                quiet_long = not line and time.monotonic() - exited_at > EXIT_DRAIN_S
                if quiet_long or time.monotonic() - exited_at > params.stop_grace_s:
                    break
            if isinstance(line, _Piece):
                unread += len(line)
                sys.stderr.write(line)
            elif line:
                handle_line(probe, feed, line)
            if time.monotonic() >= next_poll:
                feed.poll_files()
                next_poll = time.monotonic() + FILE_POLL_S
            if world is None and not stopped_by_us and time.monotonic() >= next_world:
                world = world_size(tree(proc.pid))
                next_world = time.monotonic() + WORLD_POLL_S
            if not stopped_by_us and probe.should_stop():
                signal_tree(proc.pid, signal.SIGTERM)  # a trainer's workers too: not all die with it
                stopped_by_us = True
                stopped_at = time.monotonic()
            elif stopped_by_us and proc.poll() is None and time.monotonic() - stopped_at > params.stop_grace_s:
                break  # it ignores SIGTERM: killed below
        code = proc.wait(timeout=0.1 if stopped_by_us else None)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        code = None
    finally:
        signal_tree(proc.pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.wait()
        feed.finish()
    if world is not None:
        probe.set("program_world_size", world)
        probe.warn(doubt(world))
    if sum(waited) >= WAITED_WARN_S:
        probe.warn(
            f"the program printed faster than the harness reads its output: its prints waited {sum(waited):.1f} s "
            "in all (as on a slow terminal), so it ran slower here than it would alone; print less, or less often"
        )
    if unread:
        probe.warn(f"{unread} characters of output in lines longer than {MAX_LINE} went to the log unread for progress")
    if code not in (0, None) and not stopped_by_us:
        raise SuiteError(f"{argv[0]} exited with code {code}")


def signal_tree(pid: int, sig: int) -> None:
    """Signal the program and every process it started (what `timeout` does to a group,
    without leaving the cell's group: an A/B stops and continues the cell's whole group).
    Sample Factory's learner and rollout workers outlive a SIGTERM to its main process."""
    for p in tree(pid):
        try:
            p.send_signal(sig)
        except psutil.Error:
            pass


def _declared_counter(readers: list) -> str | None:
    """The counter a --progress NAME= declares (the first), which stays the headline."""
    from harness.readers.pattern import Pattern
    from harness.readers.words import snake

    return next((snake(r.counter) for r in readers if isinstance(r, Pattern) and r.counter), None)


def handle_line(probe: Probe, feed: Feed, line: str, echo: bool = True) -> None:
    """One line of the program's output: ours applied to the probe, any other line to the
    readers and (`echo`) on to the cell's log."""
    text = line.rstrip("\n")
    message = parse_object(text)
    if message is not None and is_probe_message(message):
        apply_line(probe, message)
        return
    if text.strip():
        feed.line(text)
        if echo:
            print(text, file=sys.stderr, flush=True)
