"""The counted A/B on what real programs from the package index wrote, chosen before anyone
looked at their output (docs/records/2026-11-29-counted-blind.md): DEAP's onemax example,
neat-python's XOR example, Optuna's first tutorial. Their captured lines
(tests/harness/data/count_blind/) are replayed through the window's marks; a program that
runs to its end before its waits can be time-sliced is no side's failure."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from harness.ab.experiment import EXIT_UNDECIDED, CellAB, exit_code
from harness.ab.revisions import Side
from harness.count.cells import verdict
from harness.count.experiment import CountAB
from harness.count.verdict import judge
from harness.count.window import END, MIDDLE, START, Counted, Plan, ProcessCount, _Marks, _short
from harness.running.matrix import Cell

DATA = Path(__file__).parent / "data" / "count_blind"
ROOT = Path(__file__).resolve().parents[2]


def replay(name: str, plan: Plan, progress: str = "") -> tuple[_Marks, dict[bytes, str]]:
    """The captured lines with a digit (what the hook sends) through the marks; the line of each mark."""
    marks, marked = _Marks(plan, progress), {}
    for line in (DATA / name).read_text().splitlines():
        if re.search(r"\d", line):
            answer = marks.line(1, line)
            if answer in (START, MIDDLE, END):
                marked[answer] = line.strip()
    return marks, marked


@pytest.mark.parametrize(
    ("name", "marks_at"),
    [
        # onemax prints `-- Generation N --` before generation N's work: the window holds
        # generations 3 and 4 whole (their `Evaluated` lines), one a half
        ("deap_onemax.log", ("-- Generation 3 --", "-- Generation 4 --", "-- Generation 5 --")),
        # neat-python counts from 0: generations 2 and 3
        ("neat_xor.log", ("****** Running generation 2 ******", "****** Running generation 3 ******",
                          "****** Running generation 4 ******")),
    ],
)  # fmt: skip
def test_the_window_counts_the_generations_the_programs_own_log_shows(name, marks_at):
    marks, marked = replay(name, Plan(warmup_lines=1, start_at=2.0, half=1.0))
    assert marks.counter == "generations" and marks.totals == [2.0, 3.0, 4.0]
    assert (marked[START], marked[MIDDLE], marked[END]) == marks_at


def test_optunas_trial_lines_are_no_counter_until_named_and_the_refusal_says_how():
    marks, marked = replay("optuna_first.log", Plan(min_half_s=0.0))
    assert marks.feed.headline is None and not marked
    said = _short(marks, Plan(), "exited (code 0) before its window closed")
    assert "no progress counter read from the 205 line(s) with a digit" in said and "--progress" in said
    named = r"trials=Trial (\d+) finished"
    marks, marked = replay("optuna_first.log", Plan(warmup_lines=1, start_at=2.0, half=1.0), named)
    assert marks.counter == "trials" and marks.totals == [2.0, 3.0, 4.0]
    assert marked[START].startswith("[I 2026-11-29 09:35:36,013] Trial 2 finished")


def counted(label: str) -> Counted:
    return Counted(label, "generations", (1, 1), [ProcessCount(1, "python onemax.py", (113, 113), True)], 10.0, Plan())


def test_counts_ok_and_a_program_that_ended_before_its_waits_were_sliced_is_undecided_not_a_failure():
    """DEAP's onemax (1.4 s natively): counts ok, then its waits' slices found it ended with
    code 0; that was an error blamed on the candidate, exit 1, as if a side had failed."""
    cell = Cell("command", {"argv": "python onemax.py"}, None, 0.0, None, 1, 60.0, "c")
    counts = CountAB(cell, "onemax", verdict=judge([counted("base 1")], [counted("candidate 1")], 0.005))
    ended = CellAB(cell, "onemax", decision="error", reason="candidate (HEAD): the cell exited with code 0 (...)")
    decision, reason, side = verdict(counts, ended, 0.03)
    assert (decision, side) == ("undecided", None) and "waits not measured: candidate (HEAD)" in reason
    assert exit_code([CellAB(cell, "onemax", decision=decision, failed_side=side)]) == EXIT_UNDECIDED
    crashed = CellAB(cell, "onemax", decision="error", reason="candidate: exited with code 1", failed_side="candidate")
    assert verdict(counts, crashed, 0.03)[::2] == ("error", "candidate")


@pytest.mark.parametrize(("code", "side"), [(0, None), (3, "candidate")])
def test_a_slice_blames_a_side_whose_program_failed_not_one_that_ran_to_its_end(tmp_path, code, side):
    from harness.ab.slicing import Instance
    from harness.runs.files import make_dirs

    command = f"{sys.executable} -c 'import sys; print(\"Iteration 1\"); sys.exit({code})'"
    cell = Cell("command", {"argv": command}, 30.0, 0.0, None, 1, 60.0, "c")
    make_dirs(tmp_path / "logs")
    make_dirs(tmp_path / "series")
    inst = Instance(Side("candidate", "working tree", None, ROOT), cell, "c-candidate-0", tmp_path)
    try:
        inst.proc.wait(timeout=60)
        failed = inst.failed()
    finally:
        inst.kill()
    assert failed is not None and failed.side == side
    assert f"exited with code {code}" in str(failed) and ("ran to its end" in str(failed)) == (code == 0)


def onemax(label: str, halves: tuple[int, int]) -> Counted:
    return Counted(label, "generations", (1, 1), [ProcessCount(1, "python onemax.py", halves, True)], 10.0, Plan())


def test_a_deterministic_programs_halves_that_differ_by_what_its_units_do_still_decide():
    """DEAP's onemax, six more sums per evaluation: generation 3 evaluated 199 individuals,
    generation 4 167, so the change cost 6.0 % and 5.0 %; the runs repeated exactly, and
    the halves' check refused it as timing. Both halves are regressions: it is one."""
    base = [onemax(f"base {i}", (113_577_568, 112_723_272)) for i in (1, 2)]
    cand = [onemax(f"candidate {i}", (120_438_437, 118_349_084)) for i in (1, 2)]
    told = judge(base, cand, 0.005)
    assert told.decision == "regression" and told.ratio == pytest.approx(1.0552, abs=1e-4)
    assert any("repeat to 1e-06 (deterministic work)" in line for line in told.evidence)
    split = [onemax(f"candidate {i}", (120_438_437, 112_723_272)) for i in (1, 2)]  # more work in one half only
    told = judge(base, split, 0.005)
    assert (
        told.decision == "refused"
        and "more counted work in the first half, within the tolerance in the second" in told.reason
    )
    assert "it is no noise" in told.reason and "timing" not in told.reason
