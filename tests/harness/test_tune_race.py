"""harness tune --objective time-to-target: challengers raced to a quality target in whole
runs (harness.tune.race), a miss counted as the cap, the options checked, and (slow) a real
tune of a program whose knob trades speed for nothing but time to its target."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from harness.running.matrix import Cell
from harness.runs.record import Record
from harness.runs.store import RunStore
from harness.tune.duel import BETTER, ERROR, WORSE
from harness.tune.race import RACES_JSONL, RaceOptions, block_value, race, time_to_target
from harness.tune.result import TIME_TO_TARGET, TuneOptions, TuneState
from harness.tune.space import parse_knob


def cell(speed: float, cap: float = 60.0) -> Cell:
    return Cell("command", {"speed": speed}, cap, 0.0, None, 1, cap + 30, target="loss<=0.05")


def record(seconds: float | None, status: str = "ok") -> Record:
    metrics = {"target_reached": 1, "time_to_target_s": seconds} if seconds is not None else {"target_reached": 0}
    return Record(id="c", suite="command", params={}, repeat=0, status=status, started="", metrics=metrics)


def runs(times: dict[float, list[float | None]]):
    """run_cell for race(): each speed's runs take these seconds in turn (None: a miss)."""
    left = {speed: list(seq) for speed, seq in times.items()}

    def run_cell(c: Cell, repeat: int) -> Record:
        return record(left[c.params["speed"]].pop(0))

    return run_cell


def store(tmp_path: Path) -> RunStore:
    return RunStore.create(tmp_path, "race", {})


def test_a_challenger_that_gets_there_sooner_wins_its_race_in_the_fewest_blocks(tmp_path):
    s = store(tmp_path)
    times = {1.0: [10.0, 11.0, 9.5, 10.5, 10.0], 4.0: [5.0, 5.2, 4.9, 5.1, 5.0]}
    got = race(cell(1.0), cell(4.0), s, RaceOptions(alpha=0.2, budget_s=1.0, min_gain=0.03), runs(times))
    assert got.decision == BETTER and got.blocks == 4  # 4 blocks can decide at 80 %, and did
    ratio, low, high = got.ratio()
    assert 1.9 < ratio < 2.2 and low > 1.0
    lines = [json.loads(x) for x in (s.root / RACES_JSONL).read_text().splitlines()]
    assert len(lines) == 8 and {x["side"] for x in lines} == {"incumbent", "challenger"}
    assert got.to_json()["races"][0]["incumbent_s"] == 10.0


def test_a_slower_challenger_is_dropped(tmp_path):
    times = {1.0: [5.0] * 6, 4.0: [9.0, 10.0, 9.5, 10.5, 9.8, 10.0]}
    got = race(cell(1.0), cell(4.0), store(tmp_path), RaceOptions(alpha=0.2, budget_s=1.0, min_gain=0.03), runs(times))
    assert got.decision == WORSE


def test_a_miss_counts_as_the_cap_which_only_shrinks_the_gap():
    cap = 60.0
    assert time_to_target(record(None), cap) == (cap, False)
    assert time_to_target(record(12.0), cap) == (12.0, True)
    assert time_to_target(record(None, status="failed"), cap) == (None, False)
    # the incumbent reached it at 10 s, the challenger missed (truly later than 60 s)
    value = block_value((10.0, True), (cap, False))
    assert math.log(10.0 / 90.0) < value < 0
    assert block_value((cap, False), (cap, False)) is None  # both missed: nothing compared
    assert block_value((None, False), (3.0, True)) is None


def test_a_failed_run_ends_the_race_as_an_error(tmp_path):
    def run_cell(c, repeat):
        return record(5.0) if c.params["speed"] == 1.0 else record(None, status="failed")

    got = race(cell(1.0), cell(4.0), store(tmp_path), RaceOptions(alpha=0.2, budget_s=60, min_gain=0.03), run_cell)
    assert got.decision == ERROR and "challenger's run ended failed" in got.reason


def test_the_race_options_survive_resume_and_reach_the_winners_command():
    opts = TuneOptions(objective=TIME_TO_TARGET, target="loss<=0.05", target_cap_s=30.0)
    state = TuneState("command", {}, [parse_knob("speed=1,4")], {"speed": 1}, opts, program=["python", "p.py"])
    again = TuneState.from_json(json.loads(json.dumps(state.to_json())))
    assert again.options.races and again.options.target == "loss<=0.05"
    assert "--target 'loss<=0.05' --duration 30" in again.command_line()
    assert 'target = "loss<=0.05"\nduration = 30.0' in again.spec_snippet()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--objective", "time-to-target"], "needs the target"),
        (["--target", "loss<=0.05"], "add that objective"),
        (["--objective", "time-to-target", "--target", "loss<=0.05", "--target-cap", "0"], "--target-cap"),
    ],
)
def test_race_options_are_checked_before_anything_runs(cli, tmp_path, args, says):
    result = cli("tune", "synthetic", "--knob", "slowdown=1,2", *args, "--out", tmp_path)
    assert result.exit_code == 2 and says in result.output, result.output
    assert not list(tmp_path.iterdir())


def test_a_target_the_suite_does_not_declare_is_refused(cli, tmp_path):
    result = cli(
        "tune", "mccfr", "--knob", "batch_size=25,50", "--objective", "time-to-target", "--target", "loss<=0.1",
        "--out", tmp_path,
    )  # fmt: skip
    assert result.exit_code == 2 and "declares no quality metric 'loss'" in result.output, result.output


PROGRAM = """
import math, sys, time
speed = float(sys.argv[1])
start = time.monotonic()
step = 0
while True:
    step += 1
    loss = math.exp(-3 * speed * (time.monotonic() - start))
    print(f"global_step={step} loss={loss:.5f}", flush=True)
    time.sleep(0.02)
"""


@pytest.mark.slow
def test_a_tune_races_to_the_target_and_confirms_the_winner(cli, tmp_path, monkeypatch):
    """speed=4 reaches loss<=0.05 in a quarter of speed=1's time (1 s against 0.25 s) at the
    same step rate: a rate tune would see nothing to choose, the race picks speed=4."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.py").write_text(PROGRAM)
    out = tmp_path / "out"
    result = cli(
        "tune", "--knob", "speed=1,4", "--set", "speed=1", "--objective", "time-to-target", "--target",
        "loss<=0.05", "--target-cap", "20", "--target-every", "0.05", "--causal-budget", "0", "--evidence", "2",
        "--confidence", "0.8", "--budget", "150", "--seed", "3", "--out", out, "--quiet", "--",
        sys.executable, "p.py", "{speed}",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    doc = json.loads((run / "tune.json").read_text())
    assert doc["state"] == "finished" and float(doc["best"]["speed"]) == 4.0, doc["conclusion"]
    assert doc["final"]["decision"] == "better" and doc["final"]["metric"] == "time_to_target_s"
    assert "reaches loss<=0.05" in doc["conclusion"] and "sooner than the start" in doc["conclusion"]
    assert "the start reached loss<=0.05 in" in result.output and "race (incumbent's time" in result.output
    races = [json.loads(x) for x in (run / RACES_JSONL).read_text().splitlines()]
    assert all(r["metrics"].get("target_reached") == 1 for r in races)


def test_cells_of_a_race_are_the_tunes_cells_with_the_target(tmp_path):
    from harness.commands.tune import cell_maker, overrides_for, race_overrides

    opts = TuneOptions(objective=TIME_TO_TARGET, target="nash_conv<=0.02", target_every=0.25, target_cap_s=45.0)
    base = overrides_for("mccfr", {"game": "kuhn"}, None, "tune")
    rate_cell = cell_maker(base)({"batch_size": 50})
    race_cell = cell_maker(race_overrides(base, opts))({"batch_size": 50})
    assert rate_cell.target is None and race_cell.params == rate_cell.params
    assert race_cell.target == "nash_conv<=0.02" and race_cell.duration == 45.0 and race_cell.target_every == 0.25
