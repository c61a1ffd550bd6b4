"""The shared replay ring: wraparound, capacity, and no torn rows under concurrency."""

from __future__ import annotations

import multiprocessing as mp

import numpy as np
import pytest

from suites.actor_learner.replay import ReplayRing

WIDTH = 12  # 11 payload columns + 1 checksum


def rows_for(seqs: np.ndarray) -> np.ndarray:
    """Row k: k, then payload derived from k, then a checksum of the whole payload.

    Values stay below 2**24 so float32 holds them exactly."""
    seqs = np.asarray(seqs, np.int64)
    payload = (seqs[:, None] * 7919 + np.arange(WIDTH - 1) * 104729) % 65521
    payload[:, 0] = seqs
    checksum = (payload * np.arange(1, WIDTH)).sum(axis=1) % 65521
    return np.column_stack([payload, checksum]).astype(np.float32)


def intact(rows: np.ndarray) -> np.ndarray:
    """Per row: does it equal the row its own sequence number says it is?"""
    return (rows == rows_for(rows[:, 0].astype(np.int64))).all(axis=1)


def test_wraparound_keeps_the_newest_rows_in_ring_order() -> None:
    ring = ReplayRing(8, WIDTH, mp.get_context("fork"))
    ring.write(rows_for(np.arange(5)))
    assert (ring.written, len(ring)) == (5, 5)
    ring.write(rows_for(np.arange(5, 11)))
    assert (ring.written, len(ring)) == (11, 8)
    # slots 0..2 were overwritten by 8, 9, 10; slots 3..7 still hold 3..7
    assert ring._rows[:, 0].tolist() == [8, 9, 10, 3, 4, 5, 6, 7]
    rows, written = ring.sample(1000, np.random.default_rng(0))
    assert written == 11
    assert set(rows[:, 0].astype(int)) == set(range(3, 11))
    assert intact(rows).all()


def test_a_chunk_larger_than_capacity_keeps_its_last_rows() -> None:
    ring = ReplayRing(4, WIDTH, mp.get_context("fork"))
    ring.write(rows_for(np.arange(3)))
    ring.write(rows_for(np.arange(3, 13)))
    assert (ring.written, len(ring)) == (13, 4)
    assert sorted(ring._rows[:, 0].astype(int).tolist()) == [9, 10, 11, 12]
    # the next write continues where the counter says, not where the big chunk started
    ring.write(rows_for(np.array([13])))
    assert sorted(ring._rows[:, 0].astype(int).tolist()) == [10, 11, 12, 13]


def test_bad_input_is_refused() -> None:
    ring = ReplayRing(4, WIDTH, mp.get_context("fork"))
    with pytest.raises(ValueError, match="empty"):
        ring.sample(1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="shape"):
        ring.write(np.zeros((2, WIDTH + 1), np.float32))


def _writer(ring: ReplayRing, total: int) -> None:
    rng = np.random.default_rng(1)
    seq = 0
    while seq < total:
        # chunks of varied size, so writes straddle the wrap point
        n = min(int(rng.integers(1, 40)), total - seq)
        ring.write(rows_for(np.arange(seq, seq + n)))
        seq += n


@pytest.mark.slow
@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_no_torn_rows_under_a_concurrent_writer(start_method: str) -> None:
    ctx = mp.get_context(start_method)
    ring = ReplayRing(97, WIDTH, ctx)  # a prime capacity: the wrap point moves around
    ring.write(rows_for(np.arange(1)))
    total = 60_000
    writer = ctx.Process(target=_writer, args=(ring, total), daemon=True)
    writer.start()
    rng = np.random.default_rng(2)
    checked, progress = 0, set()
    try:
        while writer.is_alive() or checked < 5000:
            rows, written = ring.sample(64, rng)
            assert intact(rows).all(), rows[~intact(rows)][:3]
            # a sampled row was written before the count read under the same lock
            assert rows[:, 0].max() < written
            checked += len(rows)
            progress.add(written)
    finally:
        writer.join(30)
        if writer.is_alive():
            writer.terminate()
    assert writer.exitcode == 0
    assert ring.written == total + 1
    assert checked >= 5000
    if start_method == "fork":  # spawn's child may start after most reads are done
        assert len(progress) > 10, "reader never overlapped the writer"
