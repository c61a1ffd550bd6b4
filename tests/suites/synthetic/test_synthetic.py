import pytest

from harness.probe import Probe
from suites.synthetic import Params, run
from suites.synthetic.faults import InjectedFailure


@pytest.mark.parametrize(("total", "workers"), [(1, 4), (37, 3), (10, 1)])
def test_fixed_work_is_done_exactly(total, workers):
    probe = Probe(target_work=total)
    run(Params(workers=workers, unit_size=100), probe)
    m = probe.finish()
    assert m["work_requested"] == m["work_done"] == m["units"] == total


def test_slowdown_makes_units_proportionally_bigger():
    from suites.synthetic.spin import spin_unit

    assert spin_unit(10) == spin_unit(10)  # deterministic work
    params = Params(unit_size=1000, slowdown=2.5)
    assert round(params.unit_size * params.slowdown) == 2500


def test_raise_fault_surfaces_and_leaves_no_worker():
    import multiprocessing as mp

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
