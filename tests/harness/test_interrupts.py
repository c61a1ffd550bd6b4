"""Ctrl-C at any moment of a sweep: exit 130, a consistent run directory, and --resume
finishes it. The moments are found by watching the run directory, not by sleeping blind:
as the sweep starts, during a cell, in the instant after a record is written (between
cells), and while the reports are written."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import processes_mentioning, read_records, run_dirs

pytestmark = pytest.mark.slow
CELLS = 2


def sweep_command(out: Path) -> list[str]:
    return [sys.executable, "-m", "harness.cli", "sweep", "--suite", "synthetic", "--set", "slowdown=1,2"] + [
        "--duration", "0.3", "--warmup", "0", "--out", str(out), "--quiet",
    ]  # fmt: skip


def lines(out: Path) -> int:
    dirs = run_dirs(out) if out.exists() else []
    path = dirs[0] / "cells.jsonl" if dirs else None
    return path.read_text().count("\n") if path is not None and path.exists() else -1


def started(out: Path) -> bool:
    return out.exists() and any((d / "run.json").exists() for d in run_dirs(out))


# moment -> (condition to wait for, then seconds to wait)
MOMENTS = {
    "as the run directory appears": (started, 0.0),
    "during the first cell": (started, 0.6),
    "right after the first record (between cells)": (lambda out: lines(out) >= 1, 0.0),
    "during the second cell": (lambda out: lines(out) >= 1, 0.4),
    "while the reports are written": (lambda out: lines(out) >= CELLS, 0.0),
}


def wait_for(condition, out: Path, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition(out):
        assert proc.poll() is None, "the sweep ended before the moment came"
        assert time.monotonic() < deadline, "the moment never came"
        time.sleep(0.005)


@pytest.mark.slow
@pytest.mark.parametrize("moment", list(MOMENTS))
def test_ctrl_c_at_any_moment_exits_130_and_resume_completes(tmp_path, moment):
    out = tmp_path / "res"
    condition, delay = MOMENTS[moment]
    sweep = subprocess.Popen(sweep_command(out), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(condition, out, sweep)
        time.sleep(delay)
        sweep.send_signal(signal.SIGINT)
        output, _ = sweep.communicate(timeout=60)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 130, output
    (run_dir,) = run_dirs(out)
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["state"] == "interrupted", meta["state"]
    first = read_records(run_dir) if (run_dir / "cells.jsonl").exists() else []  # every line parses
    assert len(first) <= CELLS and all(r["status"] == "ok" for r in first)
    assert "finish it with: harness sweep --resume" in output
    assert processes_mentioning(str(out)) == []

    resumed = subprocess.run(
        [sys.executable, "-m", "harness.cli", "sweep", "--resume", str(run_dir), "--quiet"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    records = read_records(run_dir)
    assert len(records) == CELLS and records[: len(first)] == first  # nothing finished ran again
    assert json.loads((run_dir / "run.json").read_text())["state"] == "finished"
    assert (run_dir / "report.html").exists()


@pytest.mark.slow
def test_sigterm_during_a_cell_is_an_interrupt_too(tmp_path):
    out = tmp_path / "res"
    sweep = subprocess.Popen(sweep_command(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(started, out, sweep)
    time.sleep(0.5)
    sweep.send_signal(signal.SIGTERM)
    assert sweep.wait(timeout=60) == 130
    (run_dir,) = run_dirs(out)
    assert json.loads((run_dir / "run.json").read_text())["state"] == "interrupted"
    assert processes_mentioning(str(out)) == []
