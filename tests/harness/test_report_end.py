"""report.html and summary.md open with how the run really ended: a finished sweep's report
once said "state running ... to ?" because it was written before run.json was marked
finished. These tests read the header as a reader would, for a real finished sweep (with a
failed cell) and for an interrupted run."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest

from harness.runs.store import RunStore
from tests.conftest import run_dirs
from tests.harness.constructed_runs import SPIN, record


def html_run_line(run_dir: Path) -> str:
    """The text of report.html's first header row ("run")."""
    page = (run_dir / "report.html").read_text()
    found = re.search(r"<tr><th>run</th><td>(.*?)</td></tr>", page)
    assert found, "report.html has no run row in its header"
    return unescape(found.group(1))


def markdown_run_line(run_dir: Path) -> str:
    """summary.md's first line after its title."""
    lines = [line for line in (run_dir / "summary.md").read_text().splitlines() if line.strip()]
    return unescape(lines[1])


@pytest.mark.slow
def test_a_finished_sweeps_reports_say_finished_with_its_failed_cell_and_end(tmp_path, cli):
    out = tmp_path / "res"
    result = cli(
        "sweep", "--suite", "synthetic", "--set", "fail=none,raise", "--duration", "0.3", "--warmup", "0",
        "--out", out, "--quiet",
    )  # fmt: skip
    assert result.exit_code == 1, result.output  # one cell failed on purpose
    (run_dir,) = run_dirs(out)
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["state"] == "finished" and meta["ended"]
    assert cli("report", run_dir, "--markdown").exit_code == 0
    for line in (html_run_line(run_dir), markdown_run_line(run_dir)):
        assert "running" not in line and " to ?" not in line, line
        assert line.count("finished") == 1 and "2 cell-repeats, 1 failed (1 error)" in line, line
        assert f"{meta['started']} to {meta['ended']}" in line, line


def test_an_interrupted_runs_reports_say_interrupted_and_what_is_missing(tmp_path, cli):
    cell = {"id": "a", "suite": "synthetic", "params": SPIN, "repeats": 2}
    meta = {"started": "2026-11-25T04:40:33Z", "ended": "2026-11-25T04:40:53Z", "state": "interrupted"}
    store = RunStore.create(tmp_path, "t", {**meta, "cells": [cell]})
    store.append(record("a", SPIN, 0, {"units_per_s": 100.0}))
    assert cli("report", store.root, "--html", "--markdown").exit_code == 0
    for line in (html_run_line(store.root), markdown_run_line(store.root)):
        assert line.startswith(("interrupted", f"{store.root.name} · interrupted")), line
        assert "1 of 2 cell-repeats recorded" in line and "--resume" in line, line
        assert "2026-11-25T04:40:33Z to 2026-11-25T04:40:53Z (20 s)" in line, line


def test_a_run_with_no_end_says_so_instead_of_a_question_mark(tmp_path, cli):
    store = RunStore.create(tmp_path, "t", {"started": "2026-11-25T04:40:33Z", "ended": None, "state": "running"})
    store.append(record("a", SPIN, 0, {"units_per_s": 100.0}))
    assert cli("report", store.root, "--html", "--markdown").exit_code == 0
    for line in (html_run_line(store.root), markdown_run_line(store.root)):
        assert "no end recorded" in line and "started 2026-11-25T04:40:33Z" in line and " to ?" not in line, line
