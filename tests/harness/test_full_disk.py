"""A disk that fills in the middle of a sweep (issue 39): no traceback, exit 74 with a message
that names the file, the run directory and how to go on; every record written before the
fault intact, at most one torn line, no temporary file; after space is freed, --resume
completes the run, the cell-repeats the harness failed running again.

Two disks: a real 20 KiB tmpfs (needs mount, which root has here and on CI), and the write
layer's fault switch (harness.runs.files), which runs anywhere: where mount is refused the
switch alone still tests the whole path."""

from __future__ import annotations

import json
import subprocess

import pytest

from harness.errors import STORAGE_EXIT
from harness.runs.files import FAULT_ENV
from harness.runs.store import RunStore
from tests.conftest import read_records, run_dirs
from tests.records import make_record

SWEEP = ("sweep", "--suite", "synthetic", "--workers", "1,2", "--repeats", "2", "--duration", "0.1", "--steady", "off")


class Tmpfs:
    def __init__(self, path):
        self.out = path
        path.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=20k", "tmpfs", str(path)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()}); the switch variant runs instead")

    def free(self):
        subprocess.run(["mount", "-o", "remount,size=16m", str(self.out)], check=True)

    def close(self):
        subprocess.run(["umount", "-l", str(self.out)], check=False)


class Switch:
    """The fault switch with a budget: 12 kB of the harness's writes, then ENOSPC."""

    def __init__(self, path, monkeypatch):
        self.out = path
        self.switch = path.parent / "switch"
        self.switch.write_text("ENOSPC 12000")
        monkeypatch.setenv(FAULT_ENV, str(self.switch))

    def free(self):
        self.switch.unlink()

    def close(self):
        pass


@pytest.fixture(params=["tmpfs", "switch"])
def small_disk(request, tmp_path, monkeypatch):
    disk = Tmpfs(tmp_path / "out") if request.param == "tmpfs" else Switch(tmp_path / "out", monkeypatch)
    yield disk
    disk.close()


@pytest.mark.slow
def test_a_full_disk_stops_the_sweep_cleanly_and_resume_completes_it(cli, small_disk):
    result = cli(*SWEEP, "--out", small_disk.out, "--quiet")
    assert result.exit_code == STORAGE_EXIT, result.output
    assert "Traceback" not in result.output
    (run_dir,) = run_dirs(small_disk.out)
    assert "could not write" in result.output and "No space left on device" in result.output
    assert f"run directory: {run_dir}" in result.output and f"harness sweep --resume {run_dir}" in result.output

    lines = (run_dir / "cells.jsonl").read_bytes().split(b"\n") if (run_dir / "cells.jsonl").exists() else [b""]
    whole = [json.loads(line) for line in lines[:-1]]  # every complete line parses: nothing before the fault lost
    assert lines[-1] == b""  # not even one torn line: a short write is cut back
    assert any(r["status"] == "ok" for r in whole), "the disk filled before any record: make it larger"
    assert not [p for p in run_dir.rglob("*.tmp")], "a temporary file was left behind"

    written = (run_dir / "cells.jsonl").read_bytes() if (run_dir / "cells.jsonl").exists() else b""
    small_disk.free()
    resumed = cli("sweep", "--resume", run_dir, "--quiet")
    assert resumed.exit_code == 0, resumed.output
    assert (run_dir / "cells.jsonl").read_bytes().startswith(written)  # what was there stays, byte for byte
    latest = RunStore.open(run_dir).records()
    assert len(latest) == 4 and all(r.ok for r in latest)
    history = read_records(run_dir)
    harness_failed = [r for r in history if r["status"] == "harness-error"]
    assert len(history) == 4 + len(harness_failed)  # each of the harness's failures ran again, nothing else
    assert not (run_dir / "cells.jsonl.torn").exists()
    assert not [p for p in run_dir.rglob("*.tmp")] and not list((run_dir / "series").glob(".*"))


def test_reports_on_a_read_only_disk_exit_74_and_leave_the_old_ones(cli, tmp_path, monkeypatch):
    store = RunStore.create(tmp_path, "t", {"cells": []})
    store.append(make_record("a", {"units_per_s": 5.0}, {"workers": 1}))
    assert cli("report", store.root, "--html").exit_code == 0
    before = (store.root / "summary.csv").read_bytes()
    switch = tmp_path / "switch"
    switch.write_text("EROFS")
    monkeypatch.setenv(FAULT_ENV, str(switch))
    result = cli("report", store.root, "--html")
    assert result.exit_code == STORAGE_EXIT and "Traceback" not in result.output
    assert "Read-only file system (EROFS)" in result.output and "summary.csv" in result.output
    assert (store.root / "summary.csv").read_bytes() == before and not list(store.root.rglob("*.tmp"))


def test_exports_and_the_history_chart_on_a_full_disk_exit_74_and_leave_nothing_half_written(cli, tmp_path, monkeypatch):
    from tests.harness.constructed_runs import cells, make_run

    results = tmp_path / "results"
    run = make_run(results, cells(), seed=1)
    (results / "baselines").mkdir()
    asked = {
        "pyperf.json": ("export", run, "--pyperf", tmp_path / "pyperf.json"),
        "pyperf.json.gz": ("export", run, "--pyperf", tmp_path / "pyperf.json.gz"),
        "h.html": ("history", "--results", results, "--suite", "synthetic", "--html", tmp_path / "h.html"),
    }
    for name, args in asked.items():  # the disk has room: what each writes is whole and readable
        assert cli(*args).exit_code == 0, name
    import gzip

    assert json.loads(gzip.open(tmp_path / "pyperf.json.gz").read())["benchmarks"]
    assert json.loads((tmp_path / "pyperf.json").read_text())["benchmarks"]
    before = {name: (tmp_path / name).read_bytes() for name in asked}
    switch = tmp_path / "switch"
    monkeypatch.setenv(FAULT_ENV, str(switch))
    for name, args in asked.items():
        switch.write_text("ENOSPC 100")  # a disk that fills 100 bytes into the write
        result = cli(*args)
        assert result.exit_code == STORAGE_EXIT and "Traceback" not in result.output, (name, result.output)
        assert "No space left on device" in result.output and name in result.output
        assert (tmp_path / name).read_bytes() == before[name] and not list(tmp_path.glob(".*.tmp"))
