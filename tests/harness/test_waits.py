"""Wait edges read from /proc: a process blocked on a pipe, a socket, a multiprocessing
Queue or an Event waits on the process holding the other end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.monitors.waits import WaitsMonitor
from harness.watch.waits import by_role, describe, edges

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "waiters.py"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
@pytest.mark.parametrize("kind,via", [("pipe", "pipe"), ("socket", "socket"), ("queue", "pipe"), ("event", "shm")])
def test_a_blocked_process_waits_on_the_holder_of_the_other_end(kind, via):
    proc = subprocess.Popen(
        [sys.executable, str(PROGRAM), kind], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        waiter, busy = map(int, proc.stdout.readline().split())
        monitor = WaitsMonitor(period_s=0.05)
        monitor.start(proc.pid)
        time.sleep(1.0)
        result = monitor.stop()
        found = [e for e in edges(monitor.samples) if e.waiter == waiter]
        assert found and found[0].peers == (busy,) and found[0].via == via, found
        assert found[0].share >= 0.8
        assert result.metrics["waits_cpu_pct"] < 10
        roles = {waiter: "workers", busy: "main"}
        (edge,) = [e for e in by_role(found, roles, {"workers": [waiter]}) if e["waiter"] == "workers"]
        assert describe(edge).startswith(f"workers -> main (pid {busy})")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
