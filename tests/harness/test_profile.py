"""py-spy stack dumps of hung cells and `harness profile`, on real synthetic cells."""

import json

import psutil
import pytest

from harness.monitors.pyspy import _why, dump_stacks
from harness.running.matrix import Cell, cell_id
from harness.running.runner import CellRunner
from harness.runs.store import RunStore
from tests.conftest import processes_mentioning, read_records, run_dirs


def synthetic_cell(timeout: float, **params) -> Cell:
    full = {
        "kind": "spin",
        "workers": 1,
        "unit_size": 20000,
        "slowdown": 1.0,
        "fail": "none",
        "fail_after_s": 0.2,
        "message_bytes": 64,
        **params,
    }
    return Cell("synthetic", full, 0.5, 0.0, None, 1, timeout, cell_id("synthetic", full))


@pytest.mark.slow
def test_a_hung_cell_leaves_a_stack_dump_naming_the_hanging_function(tmp_path):
    store = RunStore.create(tmp_path, "hang", {})
    cell = synthetic_cell(2.0, fail="hang", fail_after_s=0, workers=2)
    record = CellRunner(store).run(cell, 0)
    assert record.status == "timeout"
    assert record.stack_dump == f"stacks/{cell.id}-0.txt"
    dump = (store.root / record.stack_dump).read_text()
    assert "hang_forever" in dump and "faults.py" in dump
    assert dump.count("=== pid") == 3  # the cell's main process and its two workers
    assert processes_mentioning(str(tmp_path)) == []


def test_a_process_py_spy_cannot_read_is_recorded_with_why(tmp_path):
    store = RunStore.create(tmp_path, "notpython", {})
    sleeper = psutil.Popen(["sleep", "30"])
    try:
        path = dump_stacks([sleeper], store, "x-0")
    finally:
        sleeper.kill()
        sleeper.wait()
    text = (store.root / path).read_text()
    assert f"=== pid {sleeper.pid}: sleep 30" in text and "could not dump this process" in text
    permission = "Error: Permission denied (os error 1)\n   0: anyhow::error\n"
    assert "SYS_PTRACE" in _why(permission) and "Permission denied" in _why(permission)


@pytest.mark.slow
def test_profile_samples_the_cell_and_its_worker_processes(cli, tmp_path):
    result = cli(
        "profile",
        "synthetic",
        "--set",
        "workers=2",
        "--duration",
        "1.5",
        "--rate",
        "50",
        "--flamegraph",
        "--out",
        tmp_path,
    )
    assert result.exit_code == 0, result.output
    (run_dir,) = run_dirs(tmp_path)
    (record,) = read_records(run_dir)
    assert record["status"] == "ok" and record["metrics"]["units_per_s"] > 0
    speedscope = json.loads((run_dir / record["profile"]["speedscope"]).read_text())
    pids = {p["name"].split()[1] for p in speedscope["profiles"] if p["samples"]}
    assert len(pids) == 3, [p["name"] for p in speedscope["profiles"]]
    assert (run_dir / record["profile"]["flamegraph"]).read_text().lstrip().startswith("<?xml")
    assert processes_mentioning(str(tmp_path)) == []
