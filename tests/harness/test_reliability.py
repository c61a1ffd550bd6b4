"""Every injected fault is recorded right and leaves no process; sweeps resume after
SIGKILL; corrupt run directories give errors naming the file and line."""

import json
import signal
import subprocess
import sys
import time

import pytest

from harness.probe import SuiteError
from harness.running.runner import marked_processes
from harness.runs.store import RunStore
from suites.synthetic.faults import blow_up_memory
from tests.conftest import processes_mentioning, read_records, run_dirs


@pytest.mark.slow
def test_each_fault_kind_gets_its_status_and_reason_and_no_process_remains(cli, tmp_path):
    result = cli(
        "sweep",
        "--suite",
        "synthetic",
        "--set",
        "fail=raise,exit,kill_worker,segfault,oom,orphan",
        "--set",
        "workers=2",
        "--set",
        "fail_after_s=0",
        "--duration",
        "0.3",
        "--memory-limit",
        "400",
        "--out",
        tmp_path,
        "--quiet",
    )
    assert result.exit_code == 1  # some cells failed; the sweep went on to the end
    (run_dir,) = run_dirs(tmp_path)
    rows = {r["params"]["fail"]: r for r in read_records(run_dir)}
    assert len(rows) == 6
    expected = {
        "raise": ("error", "InjectedFailure"),
        "exit": ("error", "exited with code 3"),
        "kill_worker": ("error", "killed by SIGKILL"),
        "segfault": ("killed", "killed by SIGSEGV"),
        "oom": ("killed", "past its --memory-limit of 400 MB: ended by the harness's memory watchdog"),
        "orphan": ("ok", None),
    }
    for fail, (status, words) in expected.items():
        assert rows[fail]["status"] == status, rows[fail]
        if words:
            assert words in rows[fail]["reason"], rows[fail]["reason"]
    assert rows["oom"]["metrics"]["mem_limit_by"].startswith("harness's memory watchdog")
    assert 400 < rows["oom"]["metrics"]["mem_limit_reached_mb"] < 800  # caught before the fault's safety cap
    assert "Segmentation fault" in rows["segfault"]["reason"]  # faulthandler's report, from the log
    assert any("outlived the cell outside its process group" in w for w in rows["orphan"]["warnings"])
    assert processes_mentioning(str(tmp_path)) == []
    assert marked_processes(run_dir) == {}


def test_oom_without_a_memory_limit_is_refused_not_run():
    # This test process has no RLIMIT_AS: the fault must refuse rather than eat the machine.
    with pytest.raises(SuiteError, match="--memory-limit"):
        blow_up_memory()


def sweep_command(out):
    return [sys.executable, "-m", "harness.cli", "sweep", "--suite", "synthetic", "--set", "slowdown=1,2,3"] + [
        "--duration",
        "0.3",
        "--out",
        str(out),
        "--quiet",
    ]


@pytest.mark.slow
def test_sigkill_of_the_sweep_then_resume_runs_exactly_the_missing_cells(tmp_path):
    out = tmp_path / "res"
    sweep = subprocess.Popen(sweep_command(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        dirs = run_dirs(out) if out.exists() else []
        if dirs and (dirs[0] / "cells.jsonl").exists():
            break
        time.sleep(0.05)
    sweep.send_signal(signal.SIGKILL)  # no handler, no cleanup: the harshest stop there is
    sweep.wait(timeout=10)
    (run_dir,) = run_dirs(out)
    first = read_records(run_dir)
    assert len(first) == 1
    # A write cut short by the kill: the harshest state cells.jsonl can be left in.
    with open(run_dir / "cells.jsonl", "a") as fh:
        fh.write(json.dumps(first[0])[:40])
    with pytest.warns(UserWarning, match="truncated last line skipped"):
        assert len(RunStore.open(run_dir).records()) == 1
    resumed = subprocess.run(
        [sys.executable, "-m", "harness.cli", "sweep", "--resume", str(run_dir), "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "truncated last line removed" in resumed.stderr
    records = read_records(run_dir)  # every line valid again
    assert len(records) == 3 and records[0] == first[0]
    assert sorted(r["params"]["slowdown"] for r in records) == [1.0, 2.0, 3.0]
    assert (run_dir / "cells.jsonl.torn").exists()
    assert processes_mentioning(str(out)) == []


def corrupt_run(tmp_path, lines):
    store = RunStore.create(tmp_path, "corrupt", {"cells": []})
    (store.root / "cells.jsonl").write_text("".join(lines))
    return store.root


GOOD = json.dumps({"id": "a", "suite": "synthetic", "params": {}, "repeat": 0, "status": "ok", "metrics": {}}) + "\n"


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (lambda root: (root / "run.json").unlink(), ["run.json is missing"]),
        (lambda root: (root / "run.json").write_text("[1, 2]"), ["run.json", "expected a JSON object"]),
        (lambda root: (root / "run.json").write_text('{"label": '), ["run.json", "not valid JSON (line 1"]),
        (lambda root: (root / "cells.jsonl").write_text(GOOD + "{oops\n" + GOOD), ["cells.jsonl:2", "not valid JSON"]),
        (lambda root: (root / "cells.jsonl").write_text(GOOD + '{"id": "b"}\n'), ["cells.jsonl:2", "missing suite"]),
    ],
)
def test_corrupt_run_directories_give_errors_naming_file_and_line(cli, tmp_path, damage, words):
    root = corrupt_run(tmp_path, [GOOD])
    damage(root)
    result = cli("report", root)
    assert result.exit_code == 2 and "Traceback" not in result.output
    for word in words:
        assert word in result.output, result.output
