"""Work accounting: every iteration asked for is carried out, for any worker count."""

import multiprocessing as mp
import sys

import pytest

from harness.probe import Probe
from suites.mccfr import Params, run
from suites.mccfr.driver import plan, pool_size

WORKERS = [1, 3, 8, 128]
BATCHES = [1, 7, 100, 1000]


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("batch_size", BATCHES)
def test_plan_loses_no_iteration(workers, batch_size):
    for target in (0, 1, batch_size, 2 * batch_size + 1, 12_345):
        batches = list(plan(target, batch_size, workers))
        assert sum(sum(shares) for shares in batches) == target
        for shares in batches:
            assert 0 < len(shares) <= min(workers, batch_size)
            assert all(share > 0 for share in shares)
            assert max(shares) - min(shares) <= 1
    assert pool_size(batch_size, workers) == min(batch_size, workers)


@pytest.mark.slow
@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("batch_size", BATCHES)
def test_threads_run_does_all_requested_work(workers, batch_size):
    target = 2 * batch_size + 1  # two full batches and a remainder
    probe = Probe(target_work=target)
    run(Params(game="kuhn", backend="threads", workers=workers, batch_size=batch_size), probe)
    metrics = probe.finish()
    assert metrics["work_requested"] == metrics["work_done"] == metrics["iterations"] == target
    idle = workers - min(workers, batch_size)
    assert any(f"{idle} workers stay idle" in w for w in probe.warnings) == (idle > 0)


@pytest.mark.slow
def test_many_worker_processes_do_all_requested_work():
    probe = Probe(target_work=2_500)
    run(Params(game="kuhn", backend="processes", workers=128, batch_size=1000, start_method="fork"), probe)
    metrics = probe.finish()
    assert metrics["work_requested"] == metrics["work_done"] == 2_500
    assert metrics["workers_started"] == 128
    if "torch" not in sys.modules:  # forked workers carry whatever the parent has loaded
        assert not any("torch" in w for w in probe.warnings)
    assert mp.active_children() == []


@pytest.mark.slow
def test_idle_workers_are_not_started():
    probe = Probe(target_work=30)
    run(Params(game="kuhn", backend="processes", workers=8, batch_size=3, start_method="fork"), probe)
    metrics = probe.finish()
    assert metrics["workers_started"] == 3
    assert metrics["work_done"] == 30
    assert any("5 workers stay idle" in w for w in probe.warnings)
