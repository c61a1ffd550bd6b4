"""Counted runs under valgrind's callgrind (slow: each is a program run 50-100x slower inside
its window): a deterministic program repeats its count, one whose threads spin-wait on each
other is refused by counts with the reason, and `harness ab --measure instructions` calls a
planted 5 % more work per iteration a regression and names where it grew."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness.count.verdict import judge
from harness.count.window import Plan, counted_run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed"),
]

STEADY = textwrap.dedent(
    """
    import sys
    WORK = int(sys.argv[1])
    n = 0
    while True:
        x = 0
        for i in range(WORK):
            x += i * i
        n += 1
        if n % 5 == 0:
            print(f"Iteration {n} (12.5 iter/s)", flush=True)
    """
)

# two threads hand a token back and forth by spinning on it: how many spins a hand-over
# takes follows the interpreter's 5 ms switch interval and the scheduler, not the work
SPINNING = textwrap.dedent(
    """
    import threading
    token = [0]

    def partner():
        while True:
            while token[0] != 1:
                pass
            token[0] = 0

    threading.Thread(target=partner, daemon=True).start()
    n = 0
    while True:
        for _ in range(20):
            token[0] = 1
            while token[0] != 0:
                pass
        n += 1
        if n % 2 == 0:
            print(f"Iteration {n}", flush=True)
    """
)


def twice(tmp_path, program: str, *args: str):
    (tmp_path / "prog.py").write_text(program)

    def one(i: int):
        return counted_run([sys.executable, "prog.py", *args], tmp_path, tmp_path / f"run-{i}",
                           Plan(min_half_s=0.5), f"run {i}")  # fmt: skip

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(one, (1, 2)))


def test_a_deterministic_program_repeats_its_count(tmp_path):
    first, second = twice(tmp_path, STEADY, "20000")
    assert first.units == second.units == (5, 5)
    assert first.per_unit == pytest.approx(second.per_unit, rel=1e-6)
    h1, h2 = first.halves_per_unit
    assert h1 == pytest.approx(h2, rel=1e-4)
    assert judge([first, second], [first, second], 0.005).decision == "ok"
    (marked,) = [p for p in first.processes if p.marked]
    assert sum(marked.halves) == sum(first.halves)  # one process: the one that marks


def test_threads_that_spin_wait_on_each_other_are_refused_by_counts_with_the_reason(tmp_path):
    first, second = twice(tmp_path, SPINNING)
    told = judge([first, second], [first, second], 0.005)
    assert told.decision == "refused"
    assert told.reason.startswith("not decidable by counts:")
    assert "spin-wait" in told.reason and "--measure time" in told.reason


def git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def test_ab_by_counts_calls_5_percent_more_work_a_regression_and_says_where(cli, tmp_path, monkeypatch):
    """The candidate is the working tree with an uncommitted change (counted from a worktree of
    its state, at a path as long as the base's)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "dev@example.com")
    git(repo, "config", "user.name", "dev")
    fixed = STEADY.replace("int(sys.argv[1])", "20000")
    (repo / "prog.py").write_text(fixed)
    git(repo, "add", "prog.py")
    git(repo, "commit", "-qm", "base")
    (repo / "prog.py").write_text(fixed.replace("20000", "21000"))
    monkeypatch.chdir(repo)
    result = cli("ab", "HEAD", "--measure", "instructions", "--out", tmp_path / "out", "--", sys.executable, "prog.py")
    assert result.exit_code == 1, result.output
    assert "regression: counted work: instructions per unit candidate/base 1.05" in result.output
    assert "where counted work grew" in result.output and "uncommitted changes" in result.output
