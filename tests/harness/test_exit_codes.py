"""The exit codes docs/guide/commands.md's table promises (and each command's --help), for the commands this module owns.

sweep: 0/1/2 in test_sweep_cli.py, 130 in test_interrupts.py; run: 0/1/2 in test_sweep_cli.py
and test_extras.py; --version in test_extras.py; resume's 2 in test_resume.py."""

from __future__ import annotations

import pytest

from harness.runs.store import RunStore
from tests.records import make_record


def run_with(tmp_path, records, cores=64):
    store = RunStore.create(tmp_path, "t", {"cpu_cores": cores, "cells": []})
    for rec in records:
        store.append(rec)
    return store.root


LOST = make_record("a", {"work_requested": 100, "work_done": 0, "units_per_s": 1.0}, {"workers": 128}, work=100)
FINE = make_record("b", {"units_per_s": 5.0}, {"workers": 128})


@pytest.mark.parametrize(
    ("records", "cores", "fail_on", "code"),
    [
        ([LOST], 256, None, 0),  # without --fail-on diagnose only reports
        ([LOST], 256, "error", 1),  # LOST_WORK is an error
        ([LOST], 256, "warning", 1),  # at or above: errors count for warning too
        ([FINE], 2, "warning", 0),  # OVERSUBSCRIBED is info only
        ([FINE], 2, "info", 1),
        ([FINE], 256, "info", 0),  # nothing fired
    ],
)
def test_diagnose_fail_on_exits_1_at_or_above_the_severity(cli, tmp_path, records, cores, fail_on, code):
    run = run_with(tmp_path, records, cores)
    args = ["diagnose", run] + (["--fail-on", fail_on] if fail_on else [])
    result = cli(*args)
    assert result.exit_code == code, result.output
    if code:
        assert "at or above" in result.output


def test_diagnose_fail_on_a_bad_severity_exits_2_naming_the_allowed(cli, tmp_path):
    result = cli("diagnose", run_with(tmp_path, [FINE]), "--fail-on", "fatal")
    assert result.exit_code == 2 and "error, warning, info" in result.output


@pytest.mark.parametrize("command", [["sweep", "--suite", "synthetic", "--duration", "0.2"], ["watch", "--", "true"]])
def test_an_out_that_is_a_file_exits_2_naming_it_and_leaves_the_file(cli, tmp_path, command):
    taken = tmp_path / "results"
    taken.write_text("kept")
    result = cli(*command[:1], "--out", taken, *command[1:])
    assert result.exit_code == 2 and f"--out {taken}: is a file" in result.output
    assert taken.read_text() == "kept"
