"""A cell the harness failed, not the program (issue 39): its result stream unwritable, its
own monitors raising. Recorded as `harness-error` with a reason that says so, nothing of the
cell left running, and `--resume` runs it again without --retry-failed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.cell.main import CHANNEL_LOST_EXIT, CHANNEL_LOST_MARK
from harness.monitors.base import MonitorResult
from harness.running.matrix import Spec, expand
from harness.running.runner import CellRunner
from harness.runs.store import RunStore
from tests.conftest import processes_mentioning, read_records, run_dirs


class Broken:
    name = "broken"

    def __init__(self, where: str) -> None:
        self.where = where

    def start(self, root_pid: int) -> None:
        if self.where == "start":
            raise RuntimeError("cannot start")

    def stop(self) -> MonitorResult:
        if self.where == "stop":
            raise RuntimeError("cannot stop")
        return MonitorResult()


@pytest.mark.parametrize("where", ["start", "stop"])
def test_a_monitor_that_raises_is_the_harness_failure_and_ends_the_cell(tmp_path, where):
    store = RunStore.create(tmp_path, "t", {"cells": []})
    spec = Spec.model_validate({"duration": 0.5, "steady": "off", "matrix": [{"suite": "synthetic"}]})
    (cell,) = expand(spec)
    record = CellRunner(store, monitors=lambda: [Broken(where)], on_deadline=None).run(cell, 0)
    assert record.status == "harness-error" and record.harness_failed
    assert "not the program's" in record.reason and "--resume" in record.reason
    assert "cannot " + where in (record.reason + (record.traceback or ""))
    assert processes_mentioning(str(tmp_path)) == []


def test_a_child_that_cannot_write_its_stream_says_so_with_its_own_exit_code(tmp_path):
    """/dev/full refuses every write with ENOSPC: the child exits 74 and says why on stderr,
    which the runner turns into a `harness-error` record (not `exited with code 1`)."""
    spec = json.dumps({"suite": "synthetic", "params": {}, "duration": 0.1, "warmup": 0.0, "work": None})
    done = subprocess.run(
        [sys.executable, "-m", "harness.cell", spec, "/dev/full"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == CHANNEL_LOST_EXIT
    assert f"{CHANNEL_LOST_MARK} ENOSPC: No space left on device" in done.stderr


def test_resume_runs_the_harness_failures_again_without_retry_failed(cli, tmp_path):
    out = tmp_path / "out"
    first = cli("sweep", "--suite", "synthetic", "--duration", "0.1", "--steady", "off", "--out", out, "--quiet")
    assert first.exit_code == 0
    (run_dir,) = run_dirs(out)
    (record,) = read_records(run_dir)
    record.update(status="harness-error", reason="the harness could not write ...", metrics={})
    (run_dir / "cells.jsonl").write_text(json.dumps(record) + "\n")
    resumed = cli("sweep", "--resume", run_dir, "--quiet")
    assert resumed.exit_code == 0, resumed.output
    assert [r["status"] for r in read_records(run_dir)] == ["harness-error", "ok"]
