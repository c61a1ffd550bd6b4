"""The main process's side of delta and full sync, shared by the pool backends.

`Merger` sums the workers' changes of one batch into the global tables; `InFlight` keeps
the batches a pool has been handed and the merged updates not yet sent; `batch_result`
sums the workers' replies into what the driver counts. worker.py has the workers' side of
the additive protocol (`WorkerState`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from suites.mccfr.backends.base import BatchResult
from suites.mccfr.games import MAX_ACTIONS
from suites.mccfr.sync_kernels import merge_changes
from suites.mccfr.worker import Reply, Update

RowsFor = Callable[[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]]  # (batch, rows) -> arrays


def new_rows(batch: int, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fresh arrays for an update of `rows` rows (the default `RowsFor`)."""
    return np.empty(rows, np.int64), np.empty((rows, MAX_ACTIONS)), np.empty((rows, MAX_ACTIONS))


class Merger:
    """The main process's side of delta/full sync: sum the workers' changes of one batch
    (in worker order), add the sum to the global tables, and return it as the update every
    worker applies. `out(batch, rows)` supplies the update's arrays, at least `rows` long
    (the processes backend hands out shared-memory blocks, so the update is written once,
    where every worker reads it)."""

    def __init__(self, regret: np.ndarray, avg: np.ndarray, sync: str, out: RowsFor | None = None) -> None:
        self.regret = regret
        self.avg = avg
        self.slot = np.zeros(regret.shape[0], np.int64) if sync != "shared" else None
        self.out = out or new_rows

    def merge(self, replies: list[Reply], batch: int) -> Update | None:
        if self.slot is None:
            return None
        reported = [r for r in replies if r.rows is not None and r.rows.size]
        if not reported:
            union, sum_regret, sum_avg = self.out(batch, 0)
            return Update(batch, union[:0], sum_regret[:0], sum_avg[:0])
        if len(reported) == 1:
            rows, d_regret, d_avg = reported[0].rows, reported[0].regret, reported[0].avg
        else:
            rows = np.concatenate([r.rows for r in reported])
            d_regret = np.concatenate([r.regret for r in reported])
            d_avg = np.concatenate([r.avg for r in reported])
        union, sum_regret, sum_avg = self.out(batch, rows.size)
        count = merge_changes(rows, d_regret, d_avg, self.regret, self.avg, self.slot, union, sum_regret, sum_avg)
        return Update(batch, union[:count], sum_regret[:count], sum_avg[:count])


class InFlight:
    """The batches a pool has been handed and not yet merged, oldest first, and the merged
    updates no worker has been sent yet, which all go out with the next submit (in the
    driver's loop that is one; more if a caller collects twice in a row)."""

    def __init__(self, merger: Merger) -> None:
        self.merger = merger
        self.batches: deque[tuple[int, list[int], Any]] = deque()
        self.pending: list[Update] = []

    def outgoing(self) -> list[Update]:
        updates, self.pending = self.pending, []
        return updates

    def add(self, batch: int, shares: list[int], handles: Any) -> None:
        self.batches.append((batch, shares, handles))

    def oldest(self) -> tuple[int, list[int], Any]:
        if not self.batches:
            raise RuntimeError("collect() without a submitted batch")
        return self.batches.popleft()

    def merge(self, batch: int, shares: list[int], replies: list[Reply], update_out_bytes: int) -> BatchResult:
        started = time.perf_counter()
        update = self.merger.merge(replies, batch)
        if update is not None:
            self.pending.append(update)
        merge_s = time.perf_counter() - started
        return batch_result(shares, replies, sum(r.payload_bytes for r in replies) + update_out_bytes, merge_s)


def batch_result(shares: list[int], replies: list[Reply], moved: int, merge_s: float) -> BatchResult:
    """One batch's counts: the workers' replies summed, with the bytes moved and merge time."""
    return BatchResult(
        requested=sum(shares),
        done=sum(r.done for r in replies),
        nodes=sum(r.nodes for r in replies),
        touched=sum(r.touched for r in replies),
        sync_bytes=moved,
        busy_s=sum(r.compute_s for r in replies),
        merge_s=merge_s,
    )
