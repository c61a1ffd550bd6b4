"""Steady state before measuring, long units counted fairly, and time to a quality target:
the probe with a fake clock, so every number is exact."""

from __future__ import annotations

import pytest

from harness.cell.steady import Steady, settled
from harness.cell.targets import Target
from harness.probe import Probe, Rate

GAMES = Rate("games", per="min", made_of="moves")


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def run_for(probe: Probe, clock: FakeClock, seconds: float, per_s: float, step: float = 0.1) -> None:
    for _ in range(round(seconds / step)):
        clock.t += step
        probe.count("units", per_s * step)
        if probe.should_stop():
            return


def test_settled_takes_a_flat_or_falling_window_and_waits_out_a_rise():
    rule = Steady(window=6)
    assert settled([100, 103, 98, 101, 99, 102], rule)
    assert settled([140, 120, 130, 100, 110, 90], rule)  # falling: DRIFT's business, not warm-up's
    assert not settled([10, 20, 30, 40, 50, 60], rule)  # the start-up ramp
    assert not settled([100, 100, 100], rule)  # too few rates to judge
    assert not settled([0, 0, 0, 0, 0, 0], rule)  # nothing happens yet


def test_measurement_starts_when_a_ramp_has_settled_not_before():
    clock = FakeClock()
    probe = Probe(duration_s=2, clock=clock, steady=Steady(period_s=0.5, window=6), rates=(Rate("units"),))
    for level in (100, 300, 500, 700, 900):  # a climbing start-up: one level per second
        run_for(probe, clock, 1.0, level)
        assert probe.current_phase == "warmup"
    run_for(probe, clock, 10, 1000)
    metrics = probe.finish()
    assert 7.0 <= metrics["warmup_s"] <= 9.0 and "settled" in metrics["warmup_reason"]
    assert metrics["units_per_s"] == pytest.approx(1000, rel=0.02)  # the ramp is not in the window


def test_the_cap_ends_a_warm_up_that_never_settles_and_says_so():
    clock = FakeClock()
    probe = Probe(duration_s=1, clock=clock, steady=Steady(cap_s=3, period_s=0.5), rates=(Rate("units"),))
    level = 100.0
    while probe.current_phase == "warmup":
        level *= 1.2  # rises forever
        run_for(probe, clock, 0.5, level)
    run_for(probe, clock, 2, level)
    metrics = probe.finish()
    assert metrics["warmup_s"] == pytest.approx(3.0, abs=0.2) and metrics["warmup_reason"].startswith("cap of 3 s")


def test_the_floor_holds_a_settled_rate_back_and_fixed_warmup_stays():
    clock = FakeClock()
    probe = Probe(duration_s=1, clock=clock, warmup_s=4, steady=Steady(floor_s=4, period_s=0.5), rates=(Rate("units"),))
    run_for(probe, clock, 6, 100)
    assert probe.finish()["warmup_s"] == pytest.approx(4.0, abs=0.15)
    clock = FakeClock()
    fixed = Probe(duration_s=1, clock=clock, warmup_s=2)
    run_for(fixed, clock, 4, 100)
    metrics = fixed.finish()
    assert metrics["warmup_s"] == pytest.approx(2.0, abs=0.15) and metrics["warmup_reason"] == "fixed warm-up of 2 s"


def test_the_warm_up_judges_once_a_period_not_on_every_call(monkeypatch):
    """A suite may call should_stop() per env step; judging the rise on every call cost
    the actor-learner ~30 % of its warm-up rate, which a time-sliced A/B then measured."""
    import harness.cell.probe as probe_module

    judged = []
    real = probe_module.settled
    monkeypatch.setattr(probe_module, "settled", lambda rates, rule: judged.append(len(rates)) or real(rates, rule))
    clock = FakeClock()
    probe = Probe(duration_s=1, clock=clock, steady=Steady(period_s=0.5, window=6, cap_s=30), rates=(Rate("units"),))
    level = 100.0
    for _ in range(20_000):  # 20 s of calls every millisecond, the rate rising all along
        clock.t += 0.001
        level *= 1.0001
        probe.count("units", level * 0.001)
        probe.should_stop()
    assert probe.current_phase == "warmup"
    assert len(judged) <= 20 / 0.5 + 1  # once a period, not 20,000 times
    assert max(judged) == 6  # and on the last window's rates, not the whole warm-up's


def play(probe: Probe, clock: FakeClock, seconds: float, workers: int, length: int, started: int = 0) -> None:
    """`workers` games of `length` moves each, all started `started` moves ago, one move
    per worker per second: few games end in a short window, moves flow all along."""
    progress = [started] * workers
    probe.count("games", 0)  # as a suite does: the counter exists before the first game ends
    for _ in range(round(seconds)):
        clock.t += 1
        probe.count("moves", workers)
        for w in range(workers):
            progress[w] += 1
            if progress[w] == length:
                probe.count("games")
                probe.count("moves_in_games", length)
                progress[w] = 0
        if probe.should_stop():
            return


def test_a_long_unit_rate_is_estimated_from_its_finer_counter():
    clock = FakeClock()
    probe = Probe(duration_s=5, warmup_s=110, clock=clock, rates=(GAMES, Rate("moves")), workers=128)
    play(probe, clock, 120, workers=128, length=20)  # warm-up saw 128 x 5.5 games: lengths are known
    metrics = probe.finish()
    assert metrics["games_length_mean"] == 20
    # 128 moves/s over 20 moves a game: 6.4 games/s, whatever few games ended in the window
    assert metrics["games_per_s"] == pytest.approx(128 / 20) and metrics["games_per_min"] == pytest.approx(384)
    assert metrics["games_per_s_counted"] != metrics["games_per_s"] and metrics["games_per_s_valid"] == 1
    assert probe.warnings == []


def test_a_length_from_few_games_per_worker_is_not_trusted():
    # two games a worker: the games still running are the long ones, so the finished ones are
    # a sample of the short ones; the plain count stands, valid with one completion a worker
    clock = FakeClock()
    probe = Probe(duration_s=5, warmup_s=38, clock=clock, rates=(GAMES, Rate("moves")), workers=128)
    play(probe, clock, 43, workers=128, length=20)
    metrics = probe.finish()
    assert metrics["games_length_mean"] == 20 and "games_per_s_counted" not in metrics
    assert metrics["games_in_window"] == 128 and metrics["games_per_s"] == pytest.approx(128 / 5, rel=0.05)
    assert metrics["games_per_s_valid"] == 1 and probe.warnings == []


def test_no_completion_in_the_window_is_a_warning_and_an_invalid_rate():
    clock = FakeClock()
    probe = Probe(duration_s=5, clock=clock, rates=(GAMES, Rate("moves")), workers=128)
    play(probe, clock, 6, workers=128, length=20)  # every game started together: none ends in 5 s
    metrics = probe.finish()
    assert metrics["games_in_window"] == 0 and metrics["games_per_s"] == 0
    assert metrics["games_per_s_valid"] == 0 and metrics["moves_per_s_valid"] == 1
    (warning,) = probe.warnings
    assert warning.startswith("games_per_s rests on 0 games completed in the 5.0 s window over 128 workers")
    assert "estimate it from moves" in warning


def test_time_to_target_excludes_quality_checks_and_stops_the_cell():
    clock = FakeClock()
    probe = Probe(
        duration_s=60,
        clock=clock,
        target=Target.parse("nash_conv<=0.1"),
        target_every_s=1.0,
        rates=(Rate("iterations"),),
    )
    probe.phase("warmup")  # a target measures the whole run: no warm-up
    value, checks = 1.0, 0
    while not probe.should_stop():
        clock.t += 0.5
        probe.count("iterations", 50)
        if probe.quality_due():
            with probe.evaluating():
                clock.t += 0.25  # the evaluation's own time
                value /= 2
            probe.quality("nash_conv", value)
            checks += 1
    metrics = probe.finish()
    assert metrics["target_reached"] == 1 and metrics["quality_checks"] == checks == 4
    assert metrics["nash_conv"] == 0.0625 and metrics["target"] == "nash_conv<=0.1"
    assert metrics["quality_eval_s"] == pytest.approx(1.0)
    assert metrics["time_to_target_s"] == pytest.approx(3.5) == metrics["measure_s"]
    assert metrics["time_to_target_low_s"] == pytest.approx(2.5)  # the check before: crossed in between
    assert metrics["work_to_target"] == 350


def test_a_target_not_reached_within_the_cap_is_said():
    clock = FakeClock()
    probe = Probe(duration_s=3, clock=clock, target=Target.parse("mean_return>=100"), target_every_s=1.0)
    probe.phase("warmup")
    while not probe.should_stop():
        clock.t += 1
        if probe.quality_due():
            probe.quality("mean_return", 20 + clock.t)
    metrics = probe.finish()
    assert metrics["target_reached"] == 0 and "time_to_target_s" not in metrics and metrics["target_best"] == 23
    assert probe.warnings == ["target mean_return>=100 not reached within the 3 s cap: best mean_return 23 in 3 checks"]


@pytest.mark.parametrize("text", ["nash_conv", "nash_conv<0.1", "nash_conv<=x", "<=0.1"])
def test_bad_targets_say_the_form(text):
    with pytest.raises(ValueError, match="METRIC<=VALUE"):
        Target.parse(text)


def test_the_warm_up_test_imports_no_scipy_in_the_cells_main_process():
    # an oversubscribed cell's main process may get 1 % of a core: importing scipy.stats
    # there once held a 128-worker cell's warm-up for a minute
    import subprocess
    import sys

    code = (
        "import sys; from harness.probe import Probe, Rate; from harness.cell.steady import Steady\n"
        "t = [0.0]; p = Probe(duration_s=1, clock=lambda: t[0], steady=Steady(period_s=0.1), rates=(Rate('units'),))\n"
        "while p.current_phase == 'warmup':\n"
        "    t[0] += 0.05; p.count('units', 10 + 100 * t[0]); p.should_stop()\n"
        "assert 'scipy.stats' not in sys.modules, 'scipy.stats was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
