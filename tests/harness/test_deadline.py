"""A cell's deadline follows a measured window that opens late, and a cell cut short by its
deadline keeps what it measured (status `timeout`, the reason saying so), with nothing of it
left running. EvoTorch at `--duration 90`: its first generation came 55-70 s in, the window
opened after it, and both cells were killed at the 160 s deadline from the flags with 7 and
11 generations in their logs and nothing recorded (docs/records/2026-11-26-blind-fixes-rules.md).
"""

from __future__ import annotations

import sys
import time

import pytest

from harness.cell.messages import line, sample, start
from harness.running.deadline import Deadline
from harness.running.matrix import DEFAULT_DEADLINE_SLACK_S, Cell, Spec, expand
from harness.running.runner import CellRunner
from harness.runs.store import RunStore
from tests.conftest import processes_mentioning

PROGRESS = "import itertools, time\nfor i in itertools.count():\n    print(f'step {i}', flush=True); time.sleep(0.05)\n"


def evotorch_cell(follows: bool) -> Cell:
    return Cell(
        "command", {"argv": "python rl_clipup.py"}, 90.0, 0.0, None, 1, 160.0, "e", deadline_follows_window=follows
    )


def test_a_window_that_opens_late_moves_a_deadline_the_flags_set(tmp_path):
    channel = tmp_path / "channel.jsonl"
    channel.write_text(line(start(time.time())) + line(sample(1.0, "warmup", {})))
    begun = time.monotonic() - 75.0  # the cell started 75 s ago
    moving, fixed = Deadline(evotorch_cell(True), channel, begun), Deadline(evotorch_cell(False), channel, begun)
    assert moving.left() == pytest.approx(85.0, abs=1.0) and moving.said() == "160 s"
    with channel.open("a") as out:  # the warm-up ended at the first generation's growth
        out.write(line(sample(74.0, "measure", {"iter": 3})))
    assert moving.left() == pytest.approx(90.0 + DEFAULT_DEADLINE_SLACK_S, abs=1.0)
    assert moving.said() == "225 s (160 s from the flags, moved with the measured window that opened at 75 s)"
    assert fixed.left() == pytest.approx(85.0, abs=1.0) and fixed.said() == "160 s"  # --timeout: the user's


def elapse(deadline: Deadline, seconds: float) -> None:
    """As if `seconds` passed: the deadline's clock readings moved back."""
    deadline.started -= seconds
    deadline.set_at -= seconds
    deadline.at -= seconds


def test_a_window_opened_again_after_the_warm_up_started_over_moves_it_again(tmp_path):
    """The live EvoTorch cell: the window opened at the 10 s cap (14 s in), and again once the
    first generation restarted the warm-up; following the first opening only, it was cut short
    at 164 s with 73 s of its 90."""
    channel = tmp_path / "channel.jsonl"
    channel.write_text(line(start(time.time())) + line(sample(14.0, "measure", {})))
    deadline = Deadline(evotorch_cell(True), channel, time.monotonic() - 14.0)
    assert deadline.left() == pytest.approx(150.0, abs=1.0)  # 14 + 90 + 60 = 164 s from the start
    elapse(deadline, 77.0)  # 91 s in: a sample inside the window, the warm-up started over, opened again
    with channel.open("a") as out:
        out.write(line(sample(15.0, "measure", {})) + line(sample(80.0, "warmup", {"iter": 2})))
    assert deadline.left() == pytest.approx(73.0, abs=1.0)  # nothing moved it yet
    with channel.open("a") as out:
        out.write(line(sample(91.0, "measure", {"iter": 3})))
    assert deadline.left() == pytest.approx(150.0, abs=1.0)  # 91 + 90 + 60 = 241 s from the start
    assert deadline.said() == "241 s (160 s from the flags, moved with the measured window that opened at 91 s)"
    elapse(deadline, 150.0)  # 241 s in: opened yet again, but a followed deadline stops at twice the flags'
    with channel.open("a") as out:
        out.write(line(sample(200.0, "warmup", {})) + line(sample(241.0, "measure", {})))
    assert deadline.left() == pytest.approx(320.0 - 241.0, abs=1.0)


def test_only_a_deadline_from_the_flags_follows_the_window():
    spec = {"matrix": [{"suite": "command", "params": {"argv": "python x.py"}}], "duration": 90.0}
    (derived,) = expand(Spec.model_validate(spec))
    (given,) = expand(Spec.model_validate({**spec, "timeout": 300.0}))
    (work,) = expand(Spec.model_validate({**spec, "duration": None, "work": 100}))
    assert derived.deadline_follows_window and not given.deadline_follows_window and not work.deadline_follows_window
    assert (
        Cell.from_json({k: v for k, v in derived.to_json().items() if k != "deadline_follows_window"}).timeout == 160.0
    )


@pytest.mark.slow
def test_a_cell_cut_short_keeps_what_it_measured_and_leaves_nothing(tmp_path):
    program = tmp_path / "steps.py"
    program.write_text(PROGRESS)
    store = RunStore.create(tmp_path, "deadline", {})
    argv = f"{sys.executable} {program}"
    # a 4 s window after a 4 s warm-up, under an 8 s deadline from the flags: the window opens
    # 5-6 s in (the cell's interpreter starts first) and the deadline follows it
    late = Cell("command", {"argv": argv}, 4.0, 4.0, None, 1, 8.0, "late", steady="off", deadline_follows_window=True)
    moved = CellRunner(store).run(late, 0)
    assert moved.status == "ok", moved.reason
    assert moved.metrics["wall_s"] + 1.0 > 8.0  # the child's clock starts after the runner's: it ran past 8 s
    # a 30 s window under the user's 6 s deadline: cut short, its numbers kept
    long = Cell("command", {"argv": argv}, 30.0, 0.0, None, 1, 6.0, "long", steady="off")
    cut = CellRunner(store).run(long, 0)
    assert cut.status == "timeout"
    assert cut.reason.startswith("cut short by the 6 s deadline: it closed its window and kept what it had measured (")
    assert 2.0 < cut.metrics["measure_s"] < 30.0 and cut.metrics[cut.metrics["headline_rate"]] > 0
    assert any(w.startswith("cut short by the cell's deadline: its measured window ran") for w in cut.warnings)
    assert processes_mentioning(str(tmp_path)) == []
