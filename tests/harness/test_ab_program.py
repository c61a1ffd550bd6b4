"""`harness ab REV -- python prog.py` in a user's own repository, where prog.py only logs
`Iteration N (X iter/s)`, run as the GitHub Action runs it (action/ab.sh, in a shallow clone
that must fetch its base): a planted 30 % slowdown is a regression (exit 1, the table in the
job summary), the same code is not one (exit 0: decided, or undecided at the budget on a loaded
machine, which the action passes and says). Kept short: 80 % confidence, one measured pair a
block and no warm-up pair (under 80 s each on a quiet machine; a budget of 150 s leaves a
loaded one room). Run one after the other: side by side, each A/B's slices are noisier and
the identical one needed twice the blocks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PROGRAM = textwrap.dedent(
    """
    import time

    COST_S = 0.002  # CPU seconds an iteration

    n = last = 0
    t = time.time()
    while True:
        end = time.process_time() + COST_S
        while time.process_time() < end:
            pass
        n += 1
        if n % 25 == 0:
            now = time.time()
            print(f"Iteration {n} ({(n - last) / (now - t):.1f} iter/s)", flush=True)
            t, last = now, n
    """
)


def git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


ROOT = Path(__file__).resolve().parents[2]
FLAGS = "--confidence 0.8 --pairs 1 --warmup-pairs 0 --quiet"


def action(clone, base, tmp_path, name):
    """action/ab.sh as the action's step runs it, its summary and outputs in files."""
    files = {key: tmp_path / f"{name}-{key}" for key in ("summary", "outputs")}
    env = {
        **os.environ,
        "HARNESS": f"{sys.executable} -m harness.cli",
        "AB_COMMAND": f"{sys.executable} prog.py",
        "AB_BASE": base,
        "AB_TOLERANCE": "10%",
        "AB_BUDGET": "150",  # 7-8 blocks (~80 s) decide it on a quiet machine; at load 13-16 it took more
        "AB_ARGS": FLAGS,
        "AB_OUT": str(tmp_path / "ab"),
        "GITHUB_STEP_SUMMARY": str(files["summary"]),
        "GITHUB_OUTPUT": str(files["outputs"]),
    }
    done = subprocess.run(["bash", str(ROOT / "action" / "ab.sh")], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip
    read = {key: path.read_text() if path.exists() else "" for key, path in files.items()}
    return done, read["summary"], dict(line.split("=", 1) for line in read["outputs"].splitlines())


@pytest.mark.slow
def test_ab_of_a_users_program_that_only_logs_its_iterations(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "dev@example.com")
    git(repo, "config", "user.name", "dev")
    (repo / "prog.py").write_text(PROGRAM)
    git(repo, "add", "prog.py")
    git(repo, "commit", "-qm", "base")
    (repo / "prog.py").write_text(PROGRAM.replace("COST_S = 0.002 ", "COST_S = 0.002 / 0.7 "))
    git(repo, "commit", "-qam", "30 % slower")
    clone = tmp_path / "clone"  # as actions/checkout leaves it: the head commit alone
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(clone))

    slower, summary, outputs = action(clone, "HEAD~1", tmp_path, "slower")
    assert slower.returncode == 1, slower.stdout + slower.stderr
    assert "iterations_per_s" in slower.stdout and "regression" in slower.stdout
    assert summary.startswith("## harness ab: regression (exit 1)"), summary
    assert "| cell | metric | candidate/base [interval] |" in summary and "| regression |" in summary
    assert outputs["verdict"] == "regression" and outputs["exit-code"] == "1"
    assert (Path(outputs["dir"]) / "ab.json").is_file()
    same, summary, outputs = action(clone, "HEAD", tmp_path, "same")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "| regression |" not in summary and outputs["verdict"] != "regression", summary
    if outputs["verdict"] == "undecided":  # a loaded machine (load 15 here once: 0.850 [0.656, 1.345]
        assert "passing (fail-on-undecided: true fails it)" in summary  # after 90 s): it passes, said so
    else:
        assert outputs["verdict"] == "no regression" and summary.startswith("## harness ab: no regression (exit 0)")
