"""The synthetic suite through its real workloads: spin's worker processes and pingpong.

Spin's units are recorded as the workers run them (`spin_unit` wrapped before the fork,
so every forked worker appends each unit it finishes to a file): the tests hold the
probe's counts and work accounting to what the workers actually did, never to timings.
"""

import multiprocessing as mp
import os
from collections import Counter

import pytest

from harness.probe import Probe, split_work
from suites.synthetic import Params, run, spin
from suites.synthetic.faults import InjectedFailure


@pytest.fixture
def units_run(monkeypatch, tmp_path):
    """A function returning (worker pid, loop steps) of every spin unit run so far."""
    log = tmp_path / "units.log"
    real = spin.spin_unit

    def recording(steps: int) -> int:
        result = real(steps)
        with open(log, "a") as out:  # one short O_APPEND write per unit: lines never interleave
            out.write(f"{os.getpid()} {steps}\n")
        return result

    monkeypatch.setattr(spin, "spin_unit", recording)  # forked workers inherit it

    def read() -> list[tuple[int, int]]:
        if not log.exists():
            return []
        return [tuple(map(int, line.split())) for line in log.read_text().splitlines()]

    return read


@pytest.mark.parametrize(("total", "workers"), [(1, 4), (37, 3), (10, 1)])
def test_fixed_work_is_done_exactly(total, workers):
    probe = Probe(target_work=total)
    run(Params(workers=workers, unit_size=100), probe)
    m = probe.finish()
    assert m["work_requested"] == m["work_done"] == m["units"] == total


def test_every_unit_counted_was_run_by_a_worker_and_none_was_lost(units_run):
    # a duration too long to matter: the fixed work ends the run. Units of ~3 ms: the
    # window opens once every worker is up, and units done before that count in no rate
    probe = Probe(target_work=37, duration_s=60)
    run(Params(workers=3, unit_size=20_000, slowdown=2.0), probe)
    m = probe.finish()
    ran = units_run()
    assert len(ran) == m["units"] == m["work_done"] == m["work_requested"] == 37
    # each worker ran its share of split_work, so no unit was lost or run twice
    assert sorted(Counter(pid for pid, _ in ran).values()) == sorted(split_work(37, 3))
    assert os.getpid() not in {pid for pid, _ in ran}  # all of it in worker processes
    # the planted slowdown doubles the loop steps of every unit
    assert {steps for _, steps in ran} == {40_000}
    assert m["units_per_s"] > 0
    assert m["units_per_s"] * m["measure_s"] <= m["units"] + 1e-9
    assert mp.active_children() == []


def test_slowdown_makes_units_proportionally_bigger(units_run):
    probe = Probe(target_work=4)
    run(Params(workers=1, unit_size=1000, slowdown=2.5), probe)
    assert probe.finish()["work_done"] == 4
    assert [steps for _, steps in units_run()] == [2500] * 4
    assert spin.spin_unit(10) == spin.spin_unit(10)  # deterministic work


def test_duration_mode_counts_every_unit_and_rates_only_the_window(units_run):
    probe = Probe(duration_s=0.3, warmup_s=0.1)
    run(Params(workers=2, unit_size=5000), probe)
    m = probe.finish()
    ran = units_run()
    # units finishing while the workers stop count toward the total, never toward the rate
    assert m["units"] == len(ran) > 0
    assert m["units_per_s"] > 0
    assert m["units_per_s"] * m["measure_s"] <= m["units"] + 1e-9
    assert "work_requested" not in m and "work_done" not in m  # no work was asked for
    assert mp.active_children() == []


def test_raise_fault_surfaces_and_leaves_no_worker():
    with pytest.raises(InjectedFailure):
        run(Params(workers=2, fail="raise", fail_after_s=0), Probe(duration_s=5))
    assert mp.active_children() == []


def test_pingpong_measures_every_transport():
    probe = Probe(duration_s=0.3)
    run(Params(kind="pingpong", message_bytes=128), probe)
    m = probe.finish()
    for transport in ("queue", "pipe", "shm"):
        assert m[f"{transport}_rtt_us_count"] >= 100
        assert 0 < m[f"{transport}_rtt_us_p50"] <= m[f"{transport}_rtt_us_p95"]
