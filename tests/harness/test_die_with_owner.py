"""A cell's processes die with the harness that launched them, even when it is SIGKILLed
(nothing left to clean up) and even when the A/B had left the cell's group stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

# a spin cell with one worker process: a group of two, running for longer than any test
SPEC = json.dumps({"suite": "synthetic", "params": {"kind": "spin", "workers": 1}, "duration": 60.0, "warmup": 0.05})
OWNER = textwrap.dedent(
    """
    import subprocess, sys, time
    from harness.cell.processes import child_env
    cell = subprocess.Popen([sys.executable, "-m", "harness.cell", sys.argv[2], sys.argv[1]],
                            start_new_session=True, env=child_env("t-0"))
    print(cell.pid, flush=True)
    time.sleep(120)
    """
)


def group(pgid: int) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.Error, ProcessLookupError):
            pass
    return found


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("stopped", [True, False], ids=["stopped-group", "running-group"])
def test_a_cells_group_dies_with_its_sigkilled_owner(tmp_path, stopped):
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(tmp_path / "series.jsonl"), SPEC], stdout=subprocess.PIPE, text=True
    )
    leader = int(owner.stdout.readline())
    try:
        deadline = time.monotonic() + 30
        while len(group(leader)) < 2 and time.monotonic() < deadline:  # the leader and its worker
            time.sleep(0.1)
        assert len(group(leader)) >= 2, "the spin cell never started its worker"
        if stopped:
            os.killpg(leader, signal.SIGSTOP)
        owner.kill()
        owner.wait()
        deadline = time.monotonic() + 10
        while group(leader) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not group(leader), [p.cmdline()[:3] for p in group(leader)]
    finally:
        owner.kill()
        try:
            os.killpg(leader, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.slow
def test_a_cell_runs_on_after_the_sigconts_an_ab_sends(tmp_path):
    """The death signal's handler must not take the SIGCONT of every slice for the owner's death."""
    from harness.cell.processes import child_env

    cell = subprocess.Popen(
        [sys.executable, "-m", "harness.cell", SPEC, str(tmp_path / "s.jsonl")],
        start_new_session=True, env=child_env("t-1"),
    )  # fmt: skip
    try:
        time.sleep(2)
        for _ in range(3):
            os.killpg(cell.pid, signal.SIGSTOP)
            time.sleep(0.1)
            os.killpg(cell.pid, signal.SIGCONT)
            time.sleep(0.1)
        assert cell.poll() is None
    finally:
        os.killpg(cell.pid, signal.SIGKILL)
        cell.wait()
