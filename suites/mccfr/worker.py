"""One solver worker: its copy of the tables, the kernel, and what it sends back.

This module is what a worker process imports: numpy, numba, the games and the kernel,
never torch. The same `WorkerState` also serves the threads and ray backends, so every
transport runs one protocol, and one seed gives the same tables on all of them.

The protocol is additive, so that a worker never has to wait for the merge of the batch
it has just finished (the `staleness` knob):

- `run(iterations, key, batch)` runs the kernel on the local tables and returns a `Reply`
  with the worker's *change* over the batch on the rows it reports, in ascending row
  order (sync_kernels.py says why): under `delta` the rows touched in this batch, under
  `full` every row the worker has ever touched (the naive "send the whole state" design,
  whose payload grows as the solver discovers information sets), under `shared` none
  (the tables are shared in place).
- `apply(updates)` adds, for each earlier batch merged since, the merged change (every
  worker's, summed in worker order by the main process) minus this worker's own part of
  it, which its tables already hold. With staleness s, batch b starts after the update of batch b-1-s: s=0 is
  a barrier (every worker starts from the global tables), s=1 lets the workers compute
  batch b while the main process merges batch b-1.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from suites.mccfr.games import MAX_ACTIONS, FlatGame
from suites.mccfr.shared_rows import Attached, BlockRef
from suites.mccfr.solver import NUM_STATS, TOUCHED, run_iterations, seed_state
from suites.mccfr.sync_kernels import apply_update, empty_rows, merge_changes, sorted_rows, take_changes


class Update(NamedTuple):
    """The merged change of one batch: all workers' deltas on the union of their rows."""

    batch: int
    rows: np.ndarray
    regret: np.ndarray
    avg: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.rows.nbytes + self.regret.nbytes + self.avg.nbytes


class Shipped(NamedTuple):
    """An update as the processes backend sends it: the block that holds its rows."""

    batch: int
    ref: BlockRef


class Reply(NamedTuple):
    done: int  # iterations carried out
    nodes: int  # tree nodes visited
    touched: int  # distinct information sets touched in this batch
    compute_s: float  # time inside the kernel
    rows: np.ndarray | None
    regret: np.ndarray | None  # change of each reported row over the batch
    avg: np.ndarray | None

    @property
    def payload_bytes(self) -> int:
        return sum(a.nbytes for a in (self.rows, self.regret, self.avg) if a is not None)


def update_bytes(updates: Sequence[Update]) -> int:
    return sum(update.nbytes for update in updates)


def new_tables(num_infosets: int) -> tuple[np.ndarray, np.ndarray]:
    shape = (num_infosets, MAX_ACTIONS)
    return np.zeros(shape), np.zeros(shape)


def warm_kernels(game: FlatGame) -> None:
    """Compile (or load from the cache) the kernels once, before any worker is forked."""
    spec = game.spec
    regret, avg = new_tables(game.num_infosets)
    n = game.num_infosets
    run_iterations(
        0, game.nodes, game.children, spec.cards, spec.suits, spec.rounds, regret, avg,
        np.zeros(n, np.uint8), np.zeros(n, np.int64), np.zeros(NUM_STATS, np.int64), seed_state(0),
    )  # fmt: skip
    rows, d_regret, d_avg = empty_rows(MAX_ACTIONS)
    take_changes(rows, regret, avg, regret, avg, d_regret, d_avg)
    apply_update(rows, d_regret, d_avg, rows, d_regret, d_avg, regret, avg, regret, avg)
    merge_changes(rows, d_regret, d_avg, regret, avg, np.zeros(n, np.int64), rows, d_regret, d_avg)
    sorted_rows(np.zeros(n, np.uint8), rows, 0, rows)


class WorkerState:
    """Local tables (or views of shared ones), the tables as they were when the last batch
    started (to take the batch's change), and the worker's own unmerged changes."""

    def __init__(self, game: FlatGame, sync: str, regret: np.ndarray, avg: np.ndarray) -> None:
        self.game = game
        self.sync = sync
        self.regret = regret
        self.avg = avg
        n = game.num_infosets
        self.touched = np.zeros(n, dtype=np.uint8)
        self.touched_list = np.zeros(n, dtype=np.int64)
        self.stats = np.zeros(NUM_STATS, dtype=np.int64)
        self.seen = np.zeros(n, dtype=np.uint8)
        reports = sync in ("delta", "full")
        self.base_regret = regret.copy() if reports else None
        self.base_avg = avg.copy() if reports else None
        self.own: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def run(self, iterations: int, key: tuple[int, ...], batch: int = 0) -> Reply:
        game = self.game
        spec = game.spec
        self.stats[:] = 0
        rng = seed_state(*key)
        started = time.perf_counter()
        run_iterations(
            iterations, game.nodes, game.children, spec.cards, spec.suits, spec.rounds,
            self.regret, self.avg, self.touched, self.touched_list, self.stats, rng,
        )  # fmt: skip
        compute_s = time.perf_counter() - started
        count = int(self.stats[TOUCHED])
        nodes = int(self.stats[0])
        if self.base_regret is None or self.base_avg is None:
            self.touched[self.touched_list[:count]] = 0
            return Reply(iterations, nodes, count, compute_s, None, None, None)
        rows = np.empty(count, dtype=np.int64)
        sorted_rows(self.touched, self.touched_list, count, rows)
        if self.sync == "full":
            self.seen[rows] = 1
            rows = np.flatnonzero(self.seen)
        d_regret = np.empty((rows.size, MAX_ACTIONS))
        d_avg = np.empty((rows.size, MAX_ACTIONS))
        take_changes(rows, self.regret, self.avg, self.base_regret, self.base_avg, d_regret, d_avg)
        if rows.size:
            self.own[batch] = (rows, d_regret, d_avg)
        return Reply(iterations, nodes, count, compute_s, rows, d_regret, d_avg)

    def apply(self, updates: Sequence[Update]) -> None:
        """Apply merged updates in batch order (normally one: the last merge since this
        worker's previous batch)."""
        for update in updates:
            self._apply_one(update)

    def _apply_one(self, update: Update) -> None:
        if self.base_regret is None or self.base_avg is None:
            return
        # own rows are a subset of the update's rows
        own = self.own.pop(update.batch, None) or empty_rows(MAX_ACTIONS)
        apply_update(
            update.rows, update.regret, update.avg, *own, self.regret, self.avg, self.base_regret, self.base_avg
        )


def _attach_shared(names: tuple[str, str], shape: tuple[int, int]) -> tuple[Any, Any, np.ndarray, np.ndarray]:
    from multiprocessing import shared_memory

    # attaching registers the name with the resource tracker again (before 3.13); the tracker
    # is the main process's own, so that is a no-op, and the main process unlinks the block
    blocks = [shared_memory.SharedMemory(name=name) for name in names]
    regret = np.ndarray(shape, dtype=np.float64, buffer=blocks[0].buf)
    avg = np.ndarray(shape, dtype=np.float64, buffer=blocks[1].buf)
    return blocks[0], blocks[1], regret, avg


def _receive_into(inbox: Any, messages: queue.SimpleQueue) -> None:
    """Read the main process's messages as they come, while the kernel runs (it releases
    the GIL): the next batch's orders and update are unpickled before the current batch
    ends, and the main process never blocks on a pipe this worker is not reading."""
    try:
        while True:
            message = inbox.recv()
            messages.put(message)
            if message[0] == "stop":
                return
    except (EOFError, OSError):
        messages.put(("stop",))


def _unpacked(updates: Sequence[Shipped], attached: Attached) -> list[Update]:
    """The shipped updates as arrays read in place from their blocks."""
    return [Update(u.batch, *attached[u.ref.name].view(u.ref.count)) for u in updates]


def _packed(reply: Reply, reply_to: str | None, attached: Attached) -> tuple[Reply, BlockRef | None]:
    """The reply as it crosses the pipe: its rows written into the block the order named."""
    if reply_to is None or reply.rows is None:
        return reply, None
    ref = attached[reply_to].write(reply.rows, reply.regret, reply.avg)
    return reply._replace(rows=None, regret=None, avg=None), ref


def process_main(inbox: Any, outbox: Any, game: FlatGame, sync: str, shared_names: tuple[str, str] | None) -> None:
    """Entry point of a worker process: serve `run`/`apply` messages until `stop` or EOF.

    Messages in: ("run", iterations, key, batch, updates, reply_block) -> (Reply, BlockRef)
    out; ("apply", updates); ("stop",). Updates come as `Shipped` block references, the
    reply's rows go into the named block (backends/processes.py owns the blocks). The
    first message out is ("ready", torch_loaded) so the main process can check that no
    worker carries torch.
    """
    blocks: tuple[Any, ...] = ()
    attached = Attached(game.num_infosets)
    try:
        if shared_names is not None:
            *blocks, regret, avg = _attach_shared(shared_names, (game.num_infosets, MAX_ACTIONS))
        else:
            regret, avg = new_tables(game.num_infosets)
        state = WorkerState(game, sync, regret, avg)
        messages: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=_receive_into, args=(inbox, messages), name="inbox", daemon=True).start()
        outbox.send(("ready", "torch" in sys.modules))
        while True:
            message = messages.get()
            kind = message[0]
            if kind == "stop":
                break
            if kind == "apply":
                state.apply(_unpacked(message[1], attached))
            elif kind == "run":
                _, iterations, key, batch, updates, reply_to = message
                state.apply(_unpacked(updates, attached))
                outbox.send(_packed(state.run(iterations, key, batch), reply_to, attached))
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        state = regret = avg = None  # type: ignore[assignment]  # drop views before closing
        attached.close()
        for block in blocks:
            try:
                block.close()
            except BufferError:  # pragma: no cover - a view still alive
                pass
        outbox.close()
