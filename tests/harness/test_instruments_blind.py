"""Instruments that saw nothing say so: py-spy is found beside the interpreter and the harness
when PATH lacks it, and a cell or a watch whose stack sampler or wait reader got nothing ends
with a warning naming the reason and the fix."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.monitors import blind, pyspy, waits
from harness.monitors.stacks import StacksMonitor
from harness.report.where import blind_lines
from tests.conftest import run_dirs
from tests.records import make_record


def fake_py_spy(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "py-spy"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


@pytest.fixture
def nowhere(monkeypatch, tmp_path):
    """PATH without py-spy, the interpreter and the harness in folders without it either."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "venv" / "bin" / "harness")])
    return tmp_path


def test_py_spy_beside_the_interpreter_is_found_when_path_lacks_it(nowhere):
    """`VENV/bin/harness` run without activating the venv: pip put py-spy in that bin/."""
    assert pyspy.py_spy() is None
    beside = fake_py_spy(nowhere / "venv" / "bin")
    assert pyspy.py_spy() == str(beside)


def test_py_spy_beside_the_harness_executable_is_found(nowhere, monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(nowhere / "tools" / "bin" / "harness")])
    found = fake_py_spy(nowhere / "tools" / "bin")
    assert pyspy.py_spy() == str(found)


def test_py_spy_on_path_comes_first(nowhere, monkeypatch):
    on_path = fake_py_spy(nowhere / "path")
    fake_py_spy(nowhere / "venv" / "bin")
    monkeypatch.setenv("PATH", str(nowhere / "path"))
    assert pyspy.py_spy() == str(on_path)


def test_a_stack_sampler_without_py_spy_warns_where_it_looked_and_how_to_fix_it(nowhere):
    metrics = StacksMonitor(nowhere / "watch").summarise()
    (line,) = blind.warnings(metrics)
    assert line.startswith("the stack sampler (py-spy) got nothing: py-spy was not found on PATH nor beside")
    assert str(nowhere / "venv" / "bin") in line and "-m pip install py-spy" in line


def test_a_wait_reader_that_could_read_no_call_says_it_needs_ptrace(monkeypatch):
    code = "import time; print('asleep', flush=True); time.sleep(30)"
    sleeper = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert sleeper.stdout.readline().strip() == "asleep"
        time.sleep(0.1)
        monitor = waits.WaitsMonitor()
        monitor.sample_once([sleeper.pid])
        seen = monitor.result().metrics
        assert seen["waits_asleep"] >= 1 and seen["waits_unreadable"] == 0 and not blind.blind(seen)
        real = waits._read
        monkeypatch.setattr(waits, "_read", lambda path: None if path.endswith("/syscall") else real(path))
        denied = waits.WaitsMonitor()
        denied.sample_once([sleeper.pid])
        metrics = {**denied.result().metrics, "waits_passes": 1}
    finally:
        sleeper.kill()
        sleeper.wait()
    (line,) = blind.warnings(metrics)
    assert line.startswith("the wait reader (/proc) got nothing:") and "ptrace" in line and "SYS_PTRACE" in line


@pytest.mark.parametrize(
    ("metrics", "why"),
    [
        ({"stacks_samples": 0, "stacks_recorders": 2, "stacks_unsampled": {"7": "Permission denied (ptrace)"}},
         "could not read the program's 1 processes: Permission denied"),
        ({"stacks_samples": 0, "stacks_recorders": 0, "watch_s": 0.4}, "watch it longer"),
        ({"stacks_samples": 0, "stacks_recorders": 3}, "recorders wrote no samples"),
        ({"waits_passes": 0}, "made no pass"),
    ],
)  # fmt: skip
def test_each_way_an_instrument_sees_nothing_has_its_reason(metrics, why):
    (line,) = blind.warnings(metrics)
    assert why in line


def test_instruments_that_saw_something_are_not_blind():
    assert blind.blind({"stacks_samples": 120, "waits_passes": 40, "waits_asleep": 90, "waits_unreadable": 3}) == {}
    assert blind.blind({"stacks_samples": 0, "stacks_threads": 4}) == {}  # py-spy killed before its count
    assert blind.blind({"cpu_util_mean": 50.0}) == {}  # not watched at all


def test_the_end_of_a_sweep_counts_the_cells_an_instrument_saw_nothing_in():
    missing = {"stacks_samples": 0, "stacks_reason": "py-spy was not found", "waits_passes": 30}
    records = [make_record(f"c{i}", missing) for i in range(3)] + [make_record("ok", {"stacks_samples": 9})]
    assert blind_lines(records) == [
        "the stack sampler (py-spy) got nothing: py-spy was not found (in 3 of 4 cell-repeats)"
    ]
    assert blind_lines(records[:1]) == ["the stack sampler (py-spy) got nothing: py-spy was not found"]


@pytest.mark.slow
def test_a_watch_without_py_spy_ends_with_the_warning_and_its_fix(cli, nowhere):
    result = cli("watch", "--duration", "1.5", "--out", nowhere / "runs", "--", "/bin/sh", "-c", "exec /bin/sleep 1.3")
    assert result.exit_code == 0, result.output
    tail = result.output.strip().splitlines()
    (line,) = [x for x in tail if x.startswith("warning: the stack sampler (py-spy) got nothing")]
    assert "pip install py-spy" in line and result.output.count("the stack sampler (py-spy) got nothing") == 1
    (run,) = run_dirs(nowhere / "runs")
    assert "the stack sampler (py-spy) got nothing" in (run / "cells.jsonl").read_text()
    assert os.environ["PATH"] == str(nowhere / "empty")
