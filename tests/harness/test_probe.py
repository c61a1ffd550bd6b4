import math

import pytest

from harness.probe import Probe, Rate


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_rates_cover_the_measured_window_only():
    clock = FakeClock()
    probe = Probe(duration_s=10, warmup_s=2, clock=clock, series_period_s=1)
    for _ in range(2):  # warm-up: 100/s
        clock.t += 1
        probe.count("iterations", 100)
        assert not probe.should_stop()
    for _ in range(10):  # measured: 10/s
        clock.t += 1
        probe.count("iterations", 10)
        probe.should_stop()
    assert probe.should_stop()
    clock.t += 5
    probe.count("iterations", 1000)  # arrives while workers shut down
    metrics = probe.finish()
    assert metrics["iterations"] == 200 + 100 + 1000
    assert metrics["iterations_per_s"] == pytest.approx(10.0)
    assert metrics["measure_s"] == pytest.approx(10.0)


def test_fixed_work_runs_measure_everything_and_never_stop_on_time():
    clock = FakeClock()
    probe = Probe(target_work=50, warmup_s=3, clock=clock, rates=(Rate("games", per="min"),))
    clock.t = 100
    assert not probe.should_stop()
    probe.count("games", 50)
    probe.work(requested=50)
    probe.work(done=50)
    metrics = probe.finish()
    assert metrics["games_per_s"] == pytest.approx(0.5)
    assert metrics["games_per_min"] == pytest.approx(30)
    assert (metrics["work_requested"], metrics["work_done"]) == (50, 50)


def test_observations_are_summarised_with_weights_and_histogram():
    probe = Probe(duration_s=1)
    probe.observe("batch", 4, count=3)
    probe.observe("batch", 64)
    probe.observe("wait_ms", 0.5)
    m = probe.finish()
    assert m["batch_mean"] == pytest.approx((4 * 3 + 64) / 4)
    assert m["batch_p50"] == 4 and m["batch_max"] == 64
    assert m["batch_hist"] == {"4": 3.0, "64": 1.0}
    assert "wait_ms_hist" not in m  # not integer-valued: no histogram


def test_warmup_observations_are_dropped():
    clock = FakeClock()
    probe = Probe(duration_s=5, warmup_s=1, clock=clock)
    probe.observe("batch", 1)
    clock.t = 2
    probe.should_stop()
    probe.observe("batch", 9)
    assert probe.finish()["batch_mean"] == 9


def test_explicit_phases_restart_warmup_and_end_it():
    clock = FakeClock()
    probe = Probe(duration_s=5, warmup_s=1, clock=clock)
    clock.t = 10
    probe.phase("warmup")  # workers only now up: warm-up starts here
    clock.t = 10.5
    assert not probe.should_stop() and probe.current_phase == "warmup"
    probe.phase("measure")
    assert probe.current_phase == "measure"
    clock.t = 15.5
    assert probe.should_stop()
    with pytest.raises(ValueError):
        probe.phase("cooldown")


def test_series_is_streamed_and_drift_is_measured():
    clock = FakeClock()
    seen = []
    probe = Probe(duration_s=60, clock=clock, sink=seen.append, series_period_s=1)
    rate = 100.0
    for _ in range(60):  # rate falls 1 per second: -60 per minute from a mean near 70
        clock.t += 1
        probe.count("iterations", rate)
        rate -= 1
        probe.should_stop()
    metrics = probe.finish()
    assert sum(r["type"] == "sample" for r in seen) >= 59
    drift = metrics["iterations_per_s_drift_pct_per_min"]
    assert drift == pytest.approx(-60 / 70.5 * 100, rel=0.05)
    assert metrics["iterations_per_s_drift_se"] < 1


def test_numeric_values_become_series_points():
    seen = []
    probe = Probe(duration_s=1, sink=seen.append)
    probe.set("exploitability", 0.25)
    probe.set("device", "cpu")
    points = [r for r in seen if r["type"] == "point"]
    assert [(p["name"], p["value"]) for p in points] == [("exploitability", 0.25)]
    assert probe.finish()["device"] == "cpu"


def test_ending_during_warmup_still_gives_finite_numbers():
    probe = Probe(duration_s=1, warmup_s=100)
    probe.count("units", 5)
    m = probe.finish()
    assert m["units"] == 5 and not math.isnan(m["wall_s"])


def test_stop_closes_the_window_before_untimed_work():
    clock = FakeClock()
    probe = Probe(target_work=10, clock=clock)
    clock.t = 2
    probe.count("iterations", 10)
    probe.stop()
    assert probe.should_stop()
    clock.t = 100  # e.g. a final exploitability evaluation
    m = probe.finish()
    assert m["iterations_per_s"] == 5 and m["measure_s"] == 2


def test_drift_ignores_samples_taken_while_workers_shut_down():
    clock = FakeClock()
    probe = Probe(duration_s=10, clock=clock, series_period_s=1)
    for _ in range(10):  # a steady 50/s over the whole measured window
        clock.t += 1
        probe.count("iterations", 50)
        probe.should_stop()
    assert probe.should_stop()
    for _ in range(5):  # shutdown: a trickle, sampled after the window closed
        clock.t += 1
        probe.count("iterations", 1)
    metrics = probe.finish()
    assert metrics["iterations_per_s_drift_pct_per_min"] == pytest.approx(0.0, abs=1e-6)


def test_drift_leaves_out_the_samples_of_a_window_the_warm_up_restarted():
    """A program's first counter grew long after the warm-up cap (EvoTorch: 70 s of Ray's
    start-up): the samples of the window that opened then closed again are not this window's."""
    clock = FakeClock()
    probe = Probe(duration_s=None, warmup_s=1.0, clock=clock, series_period_s=1)
    for _ in range(20):  # the cap passes while nothing is counted: a window opens on nothing
        clock.t += 1
        probe.should_stop()
    probe.phase("warmup")  # the first counter grew: the warm-up starts again
    for _ in range(15):  # a steady 50/s
        clock.t += 1
        probe.count("iterations", 50)
        probe.should_stop()
    metrics = probe.finish()
    assert metrics["iterations_per_s_drift_span_s"] <= 14.0
    assert metrics["iterations_per_s_drift_pct_per_min"] == pytest.approx(0.0, abs=1e-6)


def test_a_sample_says_when_a_counter_that_lags_it_last_moved():
    clock, seen = FakeClock(), []
    probe = Probe(duration_s=60, clock=clock, sink=seen.append, series_period_s=1)
    clock.t = 0.8
    probe.count("rows", 200)  # a report, then nothing until the next sample is due
    probe.count("steps", 1)
    clock.t = 1.1
    probe.count("steps", 1)  # counted as the sample is taken
    probe.should_stop()
    (sample,) = [m for m in seen if m["type"] == "sample"]
    assert sample["t"] == pytest.approx(1.1)
    assert sample["counted"] == {"rows": pytest.approx(0.8)}  # "steps" moved at the sample itself
