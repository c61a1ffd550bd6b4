"""A cell's log (harness.running.cell_log): the harness alone writes it, keeps it under its
cap with the tail of the output, says what it dropped, and keeps reading when the disk fails."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from harness.running.cell_log import CellLog
from harness.runs.files import FAULT_ENV
from tests.conftest import read_records, run_dirs

CAP = 64 * 1024


def run_writer(log: CellLog, code: str) -> None:
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=log.write_fd, stderr=log.write_fd)
    log.started()
    proc.wait()


def test_output_within_the_cap_is_the_log(tmp_path):
    log = CellLog(tmp_path / "a.log", CAP)
    run_writer(log, "import sys; print('hello'); print('oops', file=sys.stderr)")
    summary = log.close()
    assert (tmp_path / "a.log").read_text() == "hello\noops\n"
    assert not summary.capped and summary.note() is None and summary.warning() is None
    assert summary.written == summary.kept == 11


def test_a_flood_keeps_the_tail_under_the_cap_and_says_so(tmp_path):
    log = CellLog(tmp_path / "a.log", CAP)
    # 20 MB of numbered lines: the last ones must be in the log, the first ones not
    run_writer(log, "import sys\nsys.stdout.write(''.join(f'line {i:07d} xxxxxx\\n' for i in range(1_000_000)))")
    summary = log.close()
    data = (tmp_path / "a.log").read_bytes()
    assert len(data) <= CAP
    first, _, rest = data.partition(b"\n")
    assert first.startswith(b"[harness: this cell wrote 20000000 bytes") and b"cap of 65536 bytes" in first
    assert rest.endswith(b"line 0999999 xxxxxx\n") and b"line 0000000" not in rest
    assert summary.capped and summary.written == 20_000_000 and summary.kept == len(rest)
    assert summary.note() == {"cap_bytes": CAP, "written_bytes": 20_000_000, "kept_bytes": len(rest)}
    assert "past its cap" in summary.warning()
    assert log.recent_text().endswith("line 0999999 xxxxxx\n")


def test_output_between_one_and_two_caps_keeps_its_tail_from_the_file_and_memory(tmp_path):
    log = CellLog(tmp_path / "a.log", CAP)
    run_writer(log, "import sys\nsys.stdout.write(''.join(f'line {i:07d} xxxxxx\\n' for i in range(5000)))")
    summary = log.close()  # 100 kB: the tail's first part is read back from the file
    first, _, rest = (tmp_path / "a.log").read_bytes().partition(b"\n")
    assert summary.capped and len(rest) == summary.kept and len(rest) + len(first) + 1 <= CAP
    expected = b"".join(f"line {i:07d} xxxxxx\n".encode() for i in range(5000))[-len(rest) :]
    assert rest == expected


def test_a_log_the_disk_refuses_still_drains_and_keeps_its_last_lines(tmp_path, monkeypatch):
    switch = tmp_path / "switch"
    switch.write_text("ENOSPC 100")
    monkeypatch.setenv(FAULT_ENV, str(switch))
    log = CellLog(tmp_path / "a.log", CAP)
    run_writer(log, "for i in range(100_000): print(i)")  # 588 kB: would block on a pipe nobody reads
    summary = log.close()
    assert summary.error is not None and summary.error.errno_name == "ENOSPC"
    assert summary.written == 588_890 and summary.kept == 100
    assert "could not be written" in summary.warning() and "not the program's" in summary.warning()
    assert log.recent_text().endswith("99999\n")


def test_a_writer_that_outlives_the_cell_does_not_hold_the_log_open(tmp_path):
    log = CellLog(tmp_path / "a.log", CAP)
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(30)"],
        stdout=log.write_fd,
        stderr=log.write_fd,
    )
    log.started()
    try:
        while b"up" not in (tmp_path / "a.log").read_bytes():
            os.sched_yield()
        summary = log.close()  # returns after DRAIN_S although the writer still holds the pipe
        assert summary.written == 3
    finally:
        proc.kill()
        proc.wait()


# 1 GiB in 1 MiB writes without a newline: the fastest writer there is, so the test times
# the harness (the child's copy, the pipe, the log), a few seconds.
FLOOD = "import sys; b = b'x' * 2**20; [sys.stdout.buffer.write(b) for _ in range(1024)]"


@pytest.mark.slow
def test_a_program_that_writes_1_gb_completes_with_its_log_at_the_cap(cli, tmp_path):
    out = tmp_path / "out"
    args = ["sweep", "--duration", "120", "--steady", "off", "--log-cap-mb", "1", "--out", out, "--quiet"]
    result = cli(*args, "--", sys.executable, "-c", FLOOD)
    assert result.exit_code == 0, result.output
    (run_dir,) = run_dirs(out)
    (record,) = read_records(run_dir)
    assert record["status"] == "ok"
    assert record["log_capped"]["written_bytes"] >= 2**30 and record["log_capped"]["cap_bytes"] == 10**6
    log = run_dir / record["log"]
    assert log.stat().st_size <= 10**6
    assert b"x" * 100_000 in log.read_bytes()[-200_000:]  # the tail of the output
    assert any("past its cap" in w for w in record["warnings"])


@pytest.mark.slow
def test_a_program_printing_faster_than_the_readers_read_is_told_it_was_slowed(cli, tmp_path):
    short_lines = "import sys; b = (b'y' * 99 + b'\\n') * 10_000; [sys.stdout.buffer.write(b) for _ in range(5)]"
    out = tmp_path / "out"
    result = cli(
        "sweep",
        "--duration",
        "120",
        "--steady",
        "off",
        "--out",
        out,
        "--quiet",
        "--",
        sys.executable,
        "-c",
        short_lines,
    )
    assert result.exit_code == 0, result.output
    (record,) = read_records(run_dirs(out)[0])
    assert record["status"] == "ok" and "log_capped" not in record
    assert any("printed faster than the harness reads its output" in w for w in record["warnings"])


def test_every_chunk_reaches_the_listener_past_the_cap(tmp_path):
    seen = []
    log = CellLog(tmp_path / "a.log", CAP, on_data=seen.append)
    run_writer(log, "import sys\nsys.stdout.write(''.join(f'line {i:07d} xxxxxx\\n' for i in range(10_000)))")
    summary = log.close()
    assert summary.capped and b"".join(seen) == b"".join(f"line {i:07d} xxxxxx\n".encode() for i in range(10_000))


# 3 MB of filler, then rate lines: what a watched program prints after its log's cap still counts.
FLOOD_THEN_RATES = (
    "import sys, time\n"
    "sys.stdout.write(('z' * 99 + '\\n') * 30_000)\n"
    "for i in range(12): print(f'Iteration {i} ({50 + i} iter/s)', flush=True); time.sleep(0.05)\n"
)


@pytest.mark.slow
def test_a_watched_program_that_floods_has_its_log_capped_and_its_rates_still_read(cli, tmp_path):
    out = tmp_path / "out"
    result = cli(
        "watch",
        "--quiet",
        "--log-cap-mb",
        "1",
        "--no-torch-hook",
        "--out",
        out,
        "--",
        sys.executable,
        "-c",
        FLOOD_THEN_RATES,
    )
    assert result.exit_code == 0, result.output
    (run_dir,) = run_dirs(out)
    (record,) = read_records(run_dir)
    assert record["log_capped"]["written_bytes"] > 3_000_000 and record["log_capped"]["cap_bytes"] == 10**6
    log = (run_dir / record["log"]).read_bytes()
    assert len(log) <= 10**6 and log.endswith(b"Iteration 11 (61 iter/s)\n")
    assert record["metrics"]["log_rate_lines"] == 12 and record["metrics"]["log_iter_per_s"] == 55.5
    assert any("past its cap" in w for w in record["warnings"])


def test_an_ab_slice_log_is_capped_as_a_cells(tmp_path):
    from harness.ab.revisions import Side
    from harness.ab.slicing import Instance
    from harness.running.matrix import Cell
    from harness.runs.files import make_dirs

    flood = "import sys; sys.stdout.write(('w' * 99 + '\\n') * 30_000)"
    command = f"{sys.executable} -c {shlex.quote(flood)}"
    cell = Cell("command", {"argv": command}, 30.0, 0.0, None, 1, 60.0, "c", log_cap_mb=0.5)
    make_dirs(tmp_path / "logs")
    make_dirs(tmp_path / "series")
    side = Side("candidate", "working tree", None, Path(__file__).resolve().parents[2])
    inst = Instance(side, cell, "c-candidate-0", tmp_path)
    try:
        inst.proc.wait(timeout=60)
    finally:
        inst.kill()
    data = inst.log.read_bytes()
    assert len(data) <= 500_000 and data.startswith(b"[harness: this cell wrote ")
