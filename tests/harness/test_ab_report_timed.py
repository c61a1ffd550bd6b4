"""A slice's rate timed by when the counts were made, not when they were sampled
(harness.ab.slicing.Slicer._measure; the samples' `counted`: tests/harness/test_probe.py): a program that prints
its progress every 0.2 s is sampled up to a report late, and a slice a second long then reads
its rate up to a fifth off."""

from __future__ import annotations

import math

import pytest

from harness.ab.slicing import Instance, Sample, SliceOptions, Slicer, SliceResult

RATE = 1000.0  # rows a second, reported every 0.2 s


def stub_instance(pauses: list[tuple[float, float]]) -> Instance:
    """An instance whose clock is the parent's (offset 0), stopped and continued at `pauses`."""
    inst = Instance.__new__(Instance)
    inst._offset = 0.0
    inst.pauses = list(pauses)
    return inst


def slicer_for(counter: str) -> Slicer:
    slicer = Slicer.__new__(Slicer)
    slicer.counter, slicer.opts = counter, SliceOptions()
    return slicer


def reported(t: float, last_report: float) -> Sample:
    """A sample at `t` of a counter last reported at `last_report` (every report RATE x 0.2)."""
    counted = {} if math.isclose(t, last_report) else {"rows": last_report}
    return Sample(t, {"rows": RATE * last_report}, t, counted=counted)


def measure(window: list[Sample], pauses: list[tuple[float, float]]) -> SliceResult:
    result = SliceResult("base", window[0].t, 1.5, None, None)
    return slicer_for("rows")._measure(result, window, stub_instance(pauses))


def test_a_slice_between_reports_is_read_at_the_rate_they_report():
    # sampled 0.19 s after a report and then just before one: timed by the samples the window
    # holds 4 reports in 1.2 s (0.67x the rate); timed by the reports, exactly the rate
    got = measure([reported(10.19, 10.0), reported(11.39, 10.8)], [(8.0, 9.9)])
    counted = got.rate * got.timed_s  # the rows between the two reports
    assert counted == pytest.approx(800.0)
    assert counted / got.window_s / RATE == pytest.approx(0.667, abs=0.001)
    assert got.rate == pytest.approx(RATE)


def test_a_count_made_before_the_slice_s_stop_has_the_stop_left_out_of_its_time():
    # the last report before the stop at 8.9 came at 8.8; the slice ran from 10.0 (stopped
    # 1.1 s) and its last sample came with a report at 11.2: 1.3 s of running between them
    first = Sample(10.05, {"rows": 5000.0}, 0.0, counted={"rows": 8.8})
    last = Sample(11.2, {"rows": 5000.0 + RATE * 1.3}, 0.0)
    got = measure([first, last], [(7.0, 7.5), (8.9, 10.0)])
    assert got.timed_s == pytest.approx(1.3)
    assert got.rate == pytest.approx(RATE)


def test_a_count_older_than_the_last_run_is_timed_by_the_samples():
    # the counter last moved during the run before last: too old to pair with the other side
    got = measure([reported(10.05, 6.0), reported(11.05, 10.9)], [(6.5, 7.5), (8.9, 10.0)])
    assert got.timed_s == pytest.approx(1.0)
    assert got.rate == pytest.approx((RATE * 10.9 - RATE * 6.0) / 1.0)


def test_a_counter_that_moves_at_every_sample_reads_as_before():
    window = [Sample(10.0 + 0.25 * k, {"rows": 250.0 * k}, 0.0) for k in range(5)]
    got = measure(window, [(8.0, 9.99)])
    assert got.timed_s == pytest.approx(got.window_s) and got.rate == pytest.approx(RATE)
