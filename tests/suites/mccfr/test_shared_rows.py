"""The processes backend's rows travel through shared-memory blocks it recycles and unlinks."""

import resource
from multiprocessing import shared_memory

import numpy as np
import pytest

from harness.probe import Probe
from suites.mccfr import Params, run
from suites.mccfr.backends import BACKENDS
from suites.mccfr.games import flatten, leduc
from suites.mccfr.shared_rows import BlockPool


def test_blocks_are_recycled_not_grown_and_unlinked_at_close():
    game = flatten(leduc())
    b = BACKENDS.get("processes")(game, 2, "delta", 0, "fork")
    try:
        b.start()
        b.submit([50, 50], 0)
        held_after = {}
        for batch in range(1, 40):
            b.submit([50, 50], batch)  # two batches in flight: staleness 1
            b.collect()
            held_after[batch] = len(b.rows.blocks)
        b.submit([50], 40)  # worker 1 idles: it is only sent the update
        b.collect()
        b.collect()
        names = list(b.rows.blocks)
        # 2 workers x 2 batches of replies, plus the updates not yet applied everywhere
        assert held_after[39] == held_after[10] <= 8
        assert np.abs(b.avg).sum() > 0
    finally:
        b.close()
    for name in names:
        with pytest.raises(FileNotFoundError):
            shared_memory.SharedMemory(name=name)


def test_a_block_holds_a_reply_of_every_row():
    pool = BlockPool(capacity=5)
    try:
        block = pool.take()
        rows = np.arange(5)
        regret = np.arange(15.0).reshape(5, 3)
        ref = block.write(rows, regret, -regret)
        assert ref.count == 5
        got_rows, got_regret, got_avg = pool[ref.name].view(ref.count)
        np.testing.assert_array_equal(got_rows, rows)
        np.testing.assert_array_equal(got_regret, regret)
        np.testing.assert_array_equal(got_avg, -regret)
        pool.give(ref.name)
        assert pool.take() is block  # handed out again, not a new block
    finally:
        del got_rows, got_regret, got_avg
        pool.close()


@pytest.mark.slow
def test_many_blocks_in_flight_fit_under_a_low_soft_file_limit():
    """40 workers x 9 batches in flight hold ~360 block descriptors, past a soft limit of
    256: the backend lifts the soft limit to the hard one instead of failing."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1024:
        pytest.skip(f"hard open-file limit {hard} is too low for this test")
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    try:
        probe = Probe(target_work=4_000)
        run(
            Params(game="kuhn", backend="processes", workers=40, staleness=8, batch_size=40, start_method="fork"), probe
        )
        metrics = probe.finish()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert metrics["work_done"] == metrics["work_requested"] == 4_000
