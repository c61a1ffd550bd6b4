"""One solver worker: its copy of the tables, the kernel, and what it sends back.

This module is what a worker process imports: numpy, numba, the games and the kernel,
never torch. The same `WorkerState` also serves the threads backend, so both transports
run one protocol:

- `run(iterations, key)` runs the kernel on the local tables and returns a `Reply` whose
  rows are the information sets it reports, with their absolute values: under
  `delta` the rows touched in this batch, under `full` every row the worker has ever
  touched (the naive "send the whole state" design, whose payload grows as the solver
  discovers information sets), under `shared` none (the tables are shared in place).
- `apply(update)` writes the merged rows the main process sends back, after which every
  worker's tables equal the main process's global tables again.
"""

from __future__ import annotations

import sys
import time
from typing import Any, NamedTuple

import numpy as np

from suites.mccfr.games import MAX_ACTIONS, FlatGame
from suites.mccfr.solver import NUM_STATS, TOUCHED, run_iterations, seed_state

Update = tuple[np.ndarray, np.ndarray, np.ndarray]  # rows, regret rows, average rows


class Reply(NamedTuple):
    done: int  # iterations carried out
    nodes: int  # tree nodes visited
    touched: int  # distinct information sets touched in this batch
    compute_s: float  # time inside the kernel
    rows: np.ndarray | None
    regret: np.ndarray | None
    avg: np.ndarray | None

    @property
    def payload_bytes(self) -> int:
        return sum(a.nbytes for a in (self.rows, self.regret, self.avg) if a is not None)


def update_bytes(update: Update | None) -> int:
    return 0 if update is None else sum(a.nbytes for a in update)


def new_tables(num_infosets: int) -> tuple[np.ndarray, np.ndarray]:
    shape = (num_infosets, MAX_ACTIONS)
    return np.zeros(shape), np.zeros(shape)


class WorkerState:
    """Local tables (or views of shared ones) plus the bookkeeping of touched rows."""

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
        self.seen_list = np.zeros(n, dtype=np.int64)
        self.seen_count = 0

    def run(self, iterations: int, key: tuple[int, ...]) -> Reply:
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
        touched = self.touched_list[:count].copy()
        self.touched[touched] = 0
        rows: np.ndarray | None
        if self.sync == "delta":
            rows = touched
        elif self.sync == "full":
            fresh = touched[self.seen[touched] == 0]
            self.seen[fresh] = 1
            self.seen_list[self.seen_count : self.seen_count + fresh.size] = fresh
            self.seen_count += fresh.size
            rows = self.seen_list[: self.seen_count].copy()
        else:
            rows = None
        if rows is None:
            return Reply(iterations, int(self.stats[0]), count, compute_s, None, None, None)
        return Reply(iterations, int(self.stats[0]), count, compute_s, rows, self.regret[rows], self.avg[rows])

    def apply(self, update: Update | None) -> None:
        if update is None:
            return
        rows, regret, avg = update
        self.regret[rows] = regret
        self.avg[rows] = avg


def _attach_shared(names: tuple[str, str], shape: tuple[int, int]) -> tuple[Any, Any, np.ndarray, np.ndarray]:
    from multiprocessing import shared_memory

    # attaching registers the name with the resource tracker again (before 3.13); the tracker
    # is the main process's own, so that is a no-op, and the main process unlinks the block
    blocks = [shared_memory.SharedMemory(name=name) for name in names]
    regret = np.ndarray(shape, dtype=np.float64, buffer=blocks[0].buf)
    avg = np.ndarray(shape, dtype=np.float64, buffer=blocks[1].buf)
    return blocks[0], blocks[1], regret, avg


def process_main(conn: Any, game: FlatGame, sync: str, shared_names: tuple[str, str] | None) -> None:
    """Entry point of a worker process: serve `run`/`apply` messages until `stop` or EOF.

    Messages: ("run", iterations, key, update | None) -> Reply; ("apply", update);
    ("stop",). The first message sent is ("ready", torch_loaded) so the main process can
    check that no worker carries torch.
    """
    blocks: tuple[Any, ...] = ()
    try:
        if shared_names is not None:
            *blocks, regret, avg = _attach_shared(shared_names, (game.num_infosets, MAX_ACTIONS))
        else:
            regret, avg = new_tables(game.num_infosets)
        state = WorkerState(game, sync, regret, avg)
        conn.send(("ready", "torch" in sys.modules))
        while True:
            message = conn.recv()
            kind = message[0]
            if kind == "stop":
                break
            if kind == "apply":
                state.apply(message[1])
            elif kind == "run":
                _, iterations, key, update = message
                state.apply(update)
                conn.send(state.run(iterations, key))
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        state = regret = avg = None  # type: ignore[assignment]  # drop views before closing
        for block in blocks:
            try:
                block.close()
            except BufferError:  # pragma: no cover - a view still alive
                pass
        conn.close()
