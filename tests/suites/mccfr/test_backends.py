"""The pool backends' additive protocol, driven one call at a time: what the workers hold."""

import numpy as np
import pytest

from suites.mccfr.backends import BACKENDS
from suites.mccfr.driver import plan
from suites.mccfr.games import flatten, leduc


def threads_backend(workers: int, sync: str):
    return BACKENDS.get("threads")(flatten(leduc()), workers, sync, 0, "fork")


@pytest.mark.parametrize("sync", ["delta", "full"])
def test_workers_hold_the_global_tables_after_the_last_update(sync):
    """The additive protocol loses nothing: once the last merged update is applied, every
    worker's tables are the main process's global tables (up to rounding)."""
    b = threads_backend(3, sync)
    try:
        b.start()
        for batch, shares in enumerate(plan(1_000, 90, 3)):
            b.submit(shares, batch)
            b.collect()
        last = b.flight.outgoing()
        assert len(last) == 1
        for state in b.states:
            state.apply(last)
            np.testing.assert_allclose(state.regret, b.regret, rtol=0, atol=1e-9)
            np.testing.assert_allclose(state.avg, b.avg, rtol=0, atol=1e-9)
            assert state.own == {}
        assert np.abs(b.avg).sum() > 0
    finally:
        b.close()


def test_updates_merged_back_to_back_all_reach_the_workers():
    """Two collects with no submit between them queue two updates; the next submit sends
    both, so the workers still end with the global tables."""
    b = threads_backend(2, "delta")
    try:
        b.start()
        b.submit([50, 50], 0)
        b.submit([50, 50], 1)
        b.collect()
        b.collect()
        assert len(b.flight.pending) == 2
        b.submit([50, 50], 2)
        b.collect()
        last = b.flight.outgoing()
        for state in b.states:
            state.apply(last)
            np.testing.assert_allclose(state.regret, b.regret, rtol=0, atol=1e-9)
            assert state.own == {}
    finally:
        b.close()


def test_every_registered_backend_is_the_protocol():
    from suites.mccfr.backends.base import Backend

    for name in ("sequential", "threads", "processes", "ray"):
        assert issubclass(BACKENDS.get(name), Backend), name
    assert BACKENDS.get("sequential").single_worker
    assert not any(BACKENDS.get(name).single_worker for name in ("threads", "processes", "ray"))
