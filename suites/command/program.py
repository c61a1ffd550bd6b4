"""Running the user's program and turning its JSON lines into probe calls."""

from __future__ import annotations

import json
import queue
import shlex
import subprocess
import sys
import threading
import time
from typing import Any

from harness.probe import Probe, SuiteError, resolve_workers

EXIT_DRAIN_S = 1.0


def build_argv(params) -> list[str]:
    values: dict[str, Any] = {**(params.model_extra or {}), "workers": resolve_workers(params.workers)}
    if not params.argv.strip():
        raise SuiteError("suite 'command' needs argv, e.g. --set argv='python train.py --workers {workers}'")
    try:
        return [word.format_map(values) for word in shlex.split(params.argv)]
    except KeyError as exc:
        raise SuiteError(
            f"argv names {{{exc.args[0]}}} but no such param was given; pass it with --set {exc.args[0]}=..."
        ) from None
    except ValueError as exc:
        raise SuiteError(f"argv could not be parsed: {exc}") from None


def apply_line(probe: Probe, message: dict[str, Any]) -> None:
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


def _pump(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def run_program(params, probe: Probe) -> None:
    argv = build_argv(params)
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, bufsize=1)
    except OSError as exc:
        raise SuiteError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
    stopped_by_us = False
    stopped_at = 0.0
    exited_at: float | None = None
    try:
        while True:
            try:
                line = lines.get(timeout=0.1)
            except queue.Empty:
                line = ""
            if line is None:
                break
            if not line and proc.poll() is not None:
                # The program has exited; a child it left behind may hold its stdout open
                # forever, so its last lines get EXIT_DRAIN_S, not until end of file.
                exited_at = exited_at or time.monotonic()
                if time.monotonic() - exited_at > EXIT_DRAIN_S:
                    break
            if line:
                _handle(probe, line)
            if not stopped_by_us and probe.should_stop():
                proc.terminate()
                stopped_by_us = True
                stopped_at = time.monotonic()
            elif stopped_by_us and proc.poll() is None and time.monotonic() - stopped_at > params.stop_grace_s:
                break  # it ignores SIGTERM: killed below
        code = proc.wait(timeout=0.1 if stopped_by_us else None)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if code != 0 and not stopped_by_us:
        raise SuiteError(f"{argv[0]} exited with code {code}")


def _handle(probe: Probe, line: str) -> None:
    text = line.strip()
    if text.startswith("{"):
        try:
            message = json.loads(text)
        except json.JSONDecodeError:
            message = None
        if isinstance(message, dict):
            apply_line(probe, message)
            return
    print(text, file=sys.stderr, flush=True)
