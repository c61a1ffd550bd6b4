"""`harness ab REV -- python prog.py` in a user's own repository, where prog.py only logs
`Iteration N (X iter/s)`: a planted 30 % slowdown is a regression (exit 1), the same code
is not (exit 0). Kept short: 80 % confidence, one measured pair a block and no warm-up pair
(~25 s each). Run one after the other: side by side, each A/B's slices are noisier and the
identical one needed twice the blocks."""

from __future__ import annotations

import subprocess
import sys
import textwrap

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


def ab(repo, rev, out):
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", "ab", rev, "--tolerance", "10%", "--budget", "90", "--confidence",
         "0.8", "--pairs", "1", "--warmup-pairs", "0", "--out", str(out), "--quiet", "--", sys.executable, "prog.py"],
        cwd=repo, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip


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

    slower = ab(repo, "HEAD~1", tmp_path / "ab")
    assert slower.returncode == 1, slower.stdout + slower.stderr
    assert "iterations_per_s" in slower.stdout and "regression" in slower.stdout
    same = ab(repo, "HEAD", tmp_path / "ab")
    assert same.returncode == 0, same.stdout + same.stderr
