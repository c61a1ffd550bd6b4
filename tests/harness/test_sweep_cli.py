"""The harness core's acceptance paths, through the real CLI and real child processes."""

import pandas as pd
import pytest

from tests.conftest import processes_mentioning, read_records, run_dirs


@pytest.mark.slow
def test_sweep_writes_one_line_per_repeat_and_a_summary(cli, tmp_path):
    result = cli(
        "sweep",
        "--suite",
        "synthetic",
        "--set",
        "kind=spin",
        "--workers",
        "1,2,4",
        "--repeats",
        "2",
        "--duration",
        "0.3",
        "--steady",
        "off",  # the lines and the summary, not the warm-up (tests/harness/test_window.py)
        "--out",
        tmp_path,
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    (run_dir,) = run_dirs(tmp_path)
    records = read_records(run_dir)
    assert len(records) == 6 and all(r["status"] == "ok" for r in records)
    assert all(r["metrics"]["units_per_s"] > 0 for r in records)
    summary = pd.read_csv(run_dir / "summary.csv")
    assert len(summary) == 3 and {"units_per_s_median", "units_per_s_min", "workers"} <= set(summary.columns)
    assert len(pd.read_csv(run_dir / "cells.csv")) == 6
    assert str(run_dir) in result.output
    series = pd.read_csv(run_dir / records[0]["series"])
    assert {"units", "cpu_util"} <= set(series["metric"])


@pytest.mark.slow
def test_hang_times_out_raise_errors_and_the_sweep_goes_on(cli, tmp_path):
    result = cli(
        "sweep",
        "--suite",
        "synthetic",
        "--set",
        "fail=none,raise,hang",
        "--set",
        "workers=2",
        "--set",
        "fail_after_s=0",
        "--duration",
        "0.5",
        "--timeout",
        "4",
        "--out",
        tmp_path,
        "--quiet",
    )
    assert result.exit_code == 1
    (run_dir,) = run_dirs(tmp_path)
    by_fail = {r["params"]["fail"]: r for r in read_records(run_dir)}
    assert by_fail["none"]["status"] == "ok"
    assert by_fail["raise"]["status"] == "error"
    assert "injected failure" in by_fail["raise"]["reason"]
    assert "InjectedFailure" in by_fail["raise"]["traceback"]
    assert by_fail["hang"]["status"] == "timeout" and "4 s deadline" in by_fail["hang"]["reason"]
    assert processes_mentioning(str(tmp_path)) == []


def test_a_cell_that_exits_without_reporting_is_an_error_with_its_exit_code(cli, tmp_path):
    result = cli(
        "run", "synthetic", "--set", "fail=exit", "--set", "fail_after_s=0", "--duration", "1", "--out", tmp_path
    )
    assert result.exit_code == 1
    (record,) = read_records(run_dirs(tmp_path)[0])
    assert record["status"] == "error" and "exited with code 3" in record["reason"]


def test_bad_input_exits_2_with_the_key_and_what_is_allowed(cli, tmp_path):
    cases = [
        (["sweep", "--suite", "synthetic", "--set", "workers=abc"], ["workers", "integer"]),
        (["sweep", "--suite", "nosuch"], ["unknown suite", "synthetic"]),
        (["sweep", "--suite", "synthetic", "--set", "colour=red"], ["unknown key 'colour'", "workers"]),
        (["run", "synthetic", "--set", "workers=1,2"], ["harness sweep"]),
        (["report", tmp_path / "nothing"], ["not a run directory"]),
    ]
    for args, words in cases:
        result = cli(*args, "--out", tmp_path) if args[0] != "report" else cli(*args)
        assert result.exit_code == 2, args
        assert "Traceback" not in result.output
        for word in words:
            assert word in result.output, (args, result.output)
    assert [p for p in tmp_path.iterdir()] == []  # nothing was started


def test_a_suite_refusing_its_input_makes_run_exit_2(cli, tmp_path):
    result = cli("run", "command", "--work", "1", "--out", tmp_path)
    assert result.exit_code == 2
    assert "needs a program" in result.output


def test_run_prints_metrics_as_json(cli, tmp_path):
    import json

    result = cli("run", "synthetic", "--set", "kind=pingpong", "--duration", "0.3", "--steady", "off", "--json",
                 "--out", tmp_path)  # fmt: skip
    assert result.exit_code == 0
    record = json.loads(result.stdout.strip().splitlines()[-1])
    assert record["status"] == "ok"
    assert record["metrics"]["pipe_rtt_us_p50"] > 0 and record["metrics"]["shm_rtt_us_p95"] > 0


# Ctrl-C at every moment of a sweep, then --resume: tests/harness/test_interrupts.py


def test_suites_prints_descriptions_as_text_not_markup(cli):
    result = cli("suites")
    assert result.exit_code == 0, result.output
    assert "[ray]" in result.output  # "needs the [ray] extra": rich markup would swallow it
