"""--resume checks the code is the run's own commit (or --force, noted); --retry-failed runs
failed cells again and keeps their failed records, logs and series as history."""

from __future__ import annotations

import json

import pytest

from harness.runs.store import RunStore
from tests.conftest import read_records, run_dirs

# exits 3 until the flag file exists: a cell that fails once and then works
FLAKY = "python -c \"import os; import sys; sys.exit(0 if os.path.exists('{flag}') else 3)\""  # no commas: --set splits


def test_resume_refuses_another_commit_and_force_notes_it(cli, tmp_path):
    out = tmp_path / "out"
    assert cli("sweep", "--suite", "synthetic", "--duration", "0.2", "--out", out, "--quiet").exit_code == 0
    (run_dir,) = run_dirs(out)
    store = RunStore.open(run_dir)
    store.update_meta(git_commit="0" * 40, git_dirty=False, git_diff_sha1=None)

    refused = cli("sweep", "--resume", run_dir, "--quiet")
    assert refused.exit_code == 2
    assert "0" * 12 in refused.output and "this checkout is at" in refused.output and "--force" in refused.output

    forced = cli("sweep", "--resume", run_dir, "--force", "--quiet")
    assert forced.exit_code == 0, forced.output
    (entry,) = store.meta()["resumes"]
    assert "forced" in entry and "0" * 12 in entry["forced"] and entry["git_commit"] != "0" * 40


@pytest.mark.slow
def test_resume_at_the_same_commit_records_it_again(cli, tmp_path):
    out = tmp_path / "out"
    assert cli("sweep", "--suite", "synthetic", "--duration", "0.2", "--out", out, "--quiet").exit_code == 0
    (run_dir,) = run_dirs(out)
    assert cli("sweep", "--resume", run_dir, "--quiet").exit_code == 0
    meta = RunStore.open(run_dir).meta()
    (entry,) = meta["resumes"]
    assert entry["git_commit"] == meta["git_commit"] and "forced" not in entry


@pytest.mark.slow
def test_retry_failed_reruns_failed_cells_and_keeps_the_failed_records(cli, tmp_path):
    flag = tmp_path / "flag"
    out = tmp_path / "out"
    argv = FLAKY.format(flag=flag)
    first = cli("sweep", "--suite", "command", "--set", f"argv={argv}", "--duration", "0.5", "--out", out, "--quiet")
    assert first.exit_code == 1, first.output
    (run_dir,) = run_dirs(out)
    (failed,) = read_records(run_dir)
    assert failed["status"] == "error"

    plain = cli("sweep", "--resume", run_dir, "--quiet")  # nothing missing: nothing runs
    assert plain.exit_code == 1 and len(read_records(run_dir)) == 1

    assert cli("sweep", "--retry-failed", "--quiet", "--out", out).exit_code == 2  # needs --resume

    flag.write_text("")
    retried = cli("sweep", "--resume", run_dir, "--retry-failed", "--quiet")
    assert retried.exit_code == 0, retried.output
    history = read_records(run_dir)
    assert [r["status"] for r in history] == ["error", "ok"]  # the failed line stays
    assert [r.status for r in RunStore.open(run_dir).records()] == ["ok"]  # readers take the latest
    assert history[0]["log"] != history[1]["log"]  # each attempt keeps its own log
    assert all((run_dir / r["log"]).exists() for r in history)
    summary = json.loads((run_dir / "run.json").read_text())
    assert summary["state"] == "finished"
