"""Row payloads in shared memory: how the processes backend's replies and merged updates
travel between the main process and its workers.

A pipe moves a pickled 25 MB reply at 130-240 MB/s on this class of VM (every 64 KB the
reader and writer wake each other across vCPUs), 20x slower than a copy through shared
memory (`benchmarks/row_transport.py`, docs/benchmarks.md), which made a batch's sync on
a large game cost more than its kernel. So the pipes carry only orders, block names and
row counts; the rows and their regret and average changes lie in shared-memory blocks
that the main process creates, hands out, takes back and unlinks. A block holds as many rows as the game has information sets, which bounds
every reply (a worker reports each row at most once) and every merged update; tmpfs
gives it memory only as rows are written.
"""

from __future__ import annotations

from collections import deque
from multiprocessing import shared_memory
from typing import NamedTuple

import numpy as np

from suites.mccfr.games import MAX_ACTIONS


class BlockRef(NamedTuple):
    """What crosses a pipe in place of a payload: the block, and how many rows it holds."""

    name: str
    count: int


class RowBlock:
    """One shared block laid out as rows int64[capacity], then regret and avg
    float64[capacity, MAX_ACTIONS]."""

    def __init__(self, shm: shared_memory.SharedMemory, capacity: int) -> None:
        self.shm = shm
        self.name = shm.name
        table = capacity * MAX_ACTIONS * 8
        self.rows = np.ndarray((capacity,), np.int64, shm.buf, 0)
        self.regret = np.ndarray((capacity, MAX_ACTIONS), np.float64, shm.buf, capacity * 8)
        self.avg = np.ndarray((capacity, MAX_ACTIONS), np.float64, shm.buf, capacity * 8 + table)

    @staticmethod
    def nbytes(capacity: int) -> int:
        return capacity * (8 + 2 * MAX_ACTIONS * 8)

    @classmethod
    def create(cls, capacity: int) -> RowBlock:
        return cls(shared_memory.SharedMemory(create=True, size=max(1, cls.nbytes(capacity))), capacity)

    @classmethod
    def attach(cls, name: str, capacity: int) -> RowBlock:
        # attaching registers the name with the resource tracker again (before 3.13); the
        # tracker is the main process's own, so that is a no-op, and the main process unlinks
        return cls(shared_memory.SharedMemory(name=name), capacity)

    def write(self, rows: np.ndarray, regret: np.ndarray, avg: np.ndarray) -> BlockRef:
        count = rows.size
        self.rows[:count] = rows
        self.regret[:count] = regret
        self.avg[:count] = avg
        return BlockRef(self.name, count)

    def view(self, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.rows[:count], self.regret[:count], self.avg[:count]

    def close(self) -> None:
        self.rows = self.regret = self.avg = None  # type: ignore[assignment]  # views first
        try:
            self.shm.close()
        except BufferError:  # pragma: no cover - a caller still holds a view
            pass


class BlockPool:
    """The main process's blocks: a free list, grown on demand, so a run holds as many
    blocks as it ever had payloads alive at once (about workers x batches in flight,
    plus the updates not yet applied everywhere)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.blocks: dict[str, RowBlock] = {}
        self.free: list[RowBlock] = []

    def take(self) -> RowBlock:
        if self.free:
            return self.free.pop()
        block = RowBlock.create(self.capacity)
        self.blocks[block.name] = block
        return block

    def give(self, name: str) -> None:
        self.free.append(self.blocks[name])

    def __getitem__(self, name: str) -> RowBlock:
        return self.blocks[name]

    def close(self) -> None:
        for block in self.blocks.values():
            shm = block.shm
            block.close()
            shm.unlink()
        self.blocks = {}
        self.free = []


class Deliveries:
    """The merged updates whose blocks workers may still read. Each update is written
    once into a block every worker reads; the block goes back to the pool once every
    worker has answered a run order sent with the update or after it (a worker serves
    its orders in sequence, so by then it has applied the update). A worker only sent
    the update, with no share of a batch to answer, holds the block until its next reply
    or the end of the run."""

    def __init__(self, pool: BlockPool, workers: int) -> None:
        self.pool = pool
        self.blocks: dict[int, str] = {}  # update batch -> its block
        self.unread: dict[int, int] = {}  # update batch -> workers yet to apply it
        self.sent: list[deque[tuple[bool, list[int]]]] = [deque() for _ in range(workers)]

    def block_for(self, batch: int) -> RowBlock:
        block = self.pool.take()
        self.blocks[batch] = block.name
        return block

    def ship(self, batch: int, count: int) -> BlockRef:
        self.unread[batch] = len(self.sent)
        return BlockRef(self.blocks[batch], count)

    def order_sent(self, worker: int, run: bool, batches: list[int]) -> None:
        """An order went to `worker` carrying the updates of `batches`; a run order will
        be answered."""
        self.sent[worker].append((run, batches))

    def answered(self, worker: int) -> None:
        """`worker` answered its oldest run order: it has applied every update sent up to it."""
        sent = self.sent[worker]
        while sent:
            run, batches = sent.popleft()
            for batch in batches:
                self.unread[batch] -= 1
                if not self.unread[batch]:
                    del self.unread[batch]
                    self.pool.give(self.blocks.pop(batch))
            if run:
                return


class Attached:
    """A worker's view of the main process's blocks, attached on first use and kept."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.blocks: dict[str, RowBlock] = {}

    def __getitem__(self, name: str) -> RowBlock:
        block = self.blocks.get(name)
        if block is None:
            block = self.blocks[name] = RowBlock.attach(name, self.capacity)
        return block

    def close(self) -> None:
        for block in self.blocks.values():
            block.close()
        self.blocks = {}
