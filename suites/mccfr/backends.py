"""Where the iterations run: sequential, threads, processes, ray (`ray_backend.py`).

Every backend runs batches: `run_batch(shares, batch)` runs `shares[w]` iterations on
worker w (seeded by (seed, batch, w), so a run depends only on the seed and the worker
count), merges what the workers report into the global tables and returns a `BatchResult`.
Workers of one batch all start from the same global tables; the merge adds each worker's
change against that start, in worker order, so the result is deterministic
(except under sync=shared with more than one worker, where updates race by design).

A new backend (ray) is one more class with `start`, `run_batch`, `close` and the
`regret`/`avg` global tables, registered in `BACKENDS`.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from suites.mccfr.games import MAX_ACTIONS, FlatGame
from suites.mccfr.solver import NUM_STATS, run_iterations, seed_state
from suites.mccfr.worker import Reply, Update, WorkerState, new_tables, process_main, update_bytes


@dataclass
class BatchResult:
    done: int
    nodes: int
    touched: int
    sync_bytes: int
    sync_s: float
    wall_s: float


class Merger:
    """The main process's side of delta/full sync: fold worker rows into the global tables."""

    def __init__(self, regret: np.ndarray, avg: np.ndarray, sync: str) -> None:
        self.regret = regret
        self.avg = avg
        self.sync = sync
        self.seen = np.zeros(regret.shape[0], dtype=bool)

    def merge(self, replies: list[Reply]) -> Update | None:
        if self.sync == "shared":
            return None
        reported = [r for r in replies if r.rows is not None and r.rows.size]
        # every worker's change is taken against the tables the batch started from
        deltas = [(r.rows, r.regret - self.regret[r.rows], r.avg - self.avg[r.rows]) for r in reported]
        for rows, d_regret, d_avg in deltas:
            self.regret[rows] += d_regret
            self.avg[rows] += d_avg
        if self.sync == "full":
            for rows, _, _ in deltas:
                self.seen[rows] = True
            rows = np.flatnonzero(self.seen)
        else:
            rows = np.unique(np.concatenate([d[0] for d in deltas])) if deltas else np.zeros(0, np.int64)
        return rows, self.regret[rows], self.avg[rows]


def _kernel_warmup(game: FlatGame) -> None:
    """Compile (or load from the cache) the kernel once, before any worker is forked."""
    spec = game.spec
    regret, avg = new_tables(game.num_infosets)
    n = game.num_infosets
    run_iterations(
        0, game.nodes, game.children, spec.cards, spec.suits, spec.rounds, regret, avg,
        np.zeros(n, np.uint8), np.zeros(n, np.int64), np.zeros(NUM_STATS, np.int64), seed_state(0),
    )  # fmt: skip


class SequentialBackend:
    """One worker in the main process, on the global tables: the baseline."""

    def __init__(self, game: FlatGame, workers: int, sync: str, seed: int, start_method: str) -> None:
        self.seed = seed
        self.regret, self.avg = new_tables(game.num_infosets)
        self.state = WorkerState(game, "shared", self.regret, self.avg)
        self.workers_started = 1
        self.start_method = "none"

    def start(self) -> None:
        _kernel_warmup(self.state.game)

    def run_batch(self, shares: list[int], batch: int) -> BatchResult:
        started = time.perf_counter()
        reply = self.state.run(sum(shares), (self.seed, batch, 0))
        return BatchResult(reply.done, reply.nodes, reply.touched, 0, 0.0, time.perf_counter() - started)

    def close(self) -> None:
        pass


class ThreadsBackend:
    """Worker states in the main process, run by a thread pool (the kernel releases the GIL;
    the merge and the bookkeeping around it hold it)."""

    def __init__(self, game: FlatGame, workers: int, sync: str, seed: int, start_method: str) -> None:
        self.game = game
        self.sync = sync
        self.seed = seed
        self.workers = workers
        self.regret, self.avg = new_tables(game.num_infosets)
        self.merger = Merger(self.regret, self.avg, sync)
        if sync == "shared":
            self.states = [WorkerState(game, sync, self.regret, self.avg) for _ in range(workers)]
        else:
            self.states = [WorkerState(game, sync, *new_tables(game.num_infosets)) for _ in range(workers)]
        self.pool: ThreadPoolExecutor | None = None
        self.workers_started = workers
        self.start_method = "thread"

    def start(self) -> None:
        _kernel_warmup(self.game)
        self.pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="mccfr")

    def run_batch(self, shares: list[int], batch: int) -> BatchResult:
        assert self.pool is not None
        started = time.perf_counter()
        futures = [self.pool.submit(self.states[w].run, n, (self.seed, batch, w)) for w, n in enumerate(shares)]
        replies = [f.result() for f in futures]
        sync_started = time.perf_counter()
        update = self.merger.merge(replies)
        for state in self.states:
            state.apply(update)
        ended = time.perf_counter()
        moved = sum(r.payload_bytes for r in replies) + update_bytes(update) * len(self.states)
        return _result(replies, moved, ended - sync_started, ended - started)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


def _result(replies: list[Reply], moved: int, sync_s: float, wall_s: float) -> BatchResult:
    return BatchResult(
        done=sum(r.done for r in replies),
        nodes=sum(r.nodes for r in replies),
        touched=sum(r.touched for r in replies),
        sync_bytes=moved,
        sync_s=sync_s,
        wall_s=wall_s,
    )


def merge_batch(merger: Merger, replies: list[Reply], started: float, moved: int) -> tuple[Update | None, BatchResult]:
    """Merge remote workers' replies into the global tables and account the batch. Sync
    time is sending the previous merge and receiving and merging this one: the batch's wall
    time not spent computing in the slowest worker, plus the merge."""
    received = time.perf_counter()
    pending = merger.merge(replies)
    ended = time.perf_counter()
    moved += sum(r.payload_bytes for r in replies)
    slowest = max(r.compute_s for r in replies)
    sync_s = max(0.0, received - started - slowest) + (ended - received)
    return pending, _result(replies, moved, sync_s, ended - started)


def choose_start_method(requested: str) -> str:
    """`auto`: fork (cheap: workers inherit the compiled kernel) unless this process has
    torch loaded, whose pages a forked worker would carry; then spawn, a clean interpreter."""
    if requested != "auto":
        return requested
    if "torch" in sys.modules or "fork" not in mp.get_all_start_methods():
        return "spawn"
    return "fork"


class ProcessesBackend:
    """A persistent pool of worker processes, one pipe each; sync delta, full or shared."""

    def __init__(self, game: FlatGame, workers: int, sync: str, seed: int, start_method: str) -> None:
        self.game = game
        self.sync = sync
        self.seed = seed
        self.workers = workers
        self.start_method = choose_start_method(start_method)
        self.blocks: list[Any] = []
        if sync == "shared":
            from multiprocessing import shared_memory

            nbytes = game.num_infosets * MAX_ACTIONS * 8
            self.blocks = [shared_memory.SharedMemory(create=True, size=nbytes) for _ in range(2)]
            shape = (game.num_infosets, MAX_ACTIONS)
            self.regret = np.ndarray(shape, dtype=np.float64, buffer=self.blocks[0].buf)
            self.avg = np.ndarray(shape, dtype=np.float64, buffer=self.blocks[1].buf)
            self.regret[:] = 0.0
            self.avg[:] = 0.0
        else:
            self.regret, self.avg = new_tables(game.num_infosets)
        self.merger = Merger(self.regret, self.avg, sync)
        self.procs: list[Any] = []
        self.conns: list[Any] = []
        self.pending: Update | None = None
        self.workers_started = 0
        self.torch_in_workers = 0

    def start(self) -> None:
        ctx = mp.get_context(self.start_method)
        if self.start_method == "fork":
            _kernel_warmup(self.game)
        names = tuple(b.name for b in self.blocks) if self.blocks else None
        for w in range(self.workers):
            parent, child = ctx.Pipe(duplex=True)
            proc = ctx.Process(
                target=process_main, args=(child, self.game, self.sync, names), name=f"mccfr-{w}", daemon=True
            )
            proc.start()
            child.close()
            self.procs.append(proc)
            self.conns.append(parent)
        for w in range(len(self.conns)):
            message = self._recv(w)
            self.torch_in_workers += bool(message[1])
        self.workers_started = len(self.procs)

    def _recv(self, w: int) -> Any:
        try:
            return self.conns[w].recv()
        except EOFError:
            code = self.procs[w].exitcode
            raise RuntimeError(f"mccfr worker {w} died (exit code {code})") from None

    def run_batch(self, shares: list[int], batch: int) -> BatchResult:
        started = time.perf_counter()
        update = self.pending
        moved = update_bytes(update) * len(self.conns)
        for w, conn in enumerate(self.conns):
            if w < len(shares):
                conn.send(("run", shares[w], (self.seed, batch, w), update))
            elif update is not None:
                conn.send(("apply", update))
        replies = [self._recv(w) for w in range(len(shares))]
        self.pending, result = merge_batch(self.merger, replies, started, moved)
        return result

    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(("stop",))
            except (BrokenPipeError, OSError):
                pass
        deadline = time.monotonic() + 5.0
        for proc in self.procs:
            proc.join(timeout=max(0.0, deadline - time.monotonic()))
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=1.0)
            if proc.is_alive():  # pragma: no cover - stuck in the kernel
                proc.kill()
                proc.join()
        for conn in self.conns:
            conn.close()
        self.regret = self.avg = None  # type: ignore[assignment]
        self.merger = None  # type: ignore[assignment]
        for block in self.blocks:
            try:
                block.close()
            except BufferError:  # pragma: no cover - a view still alive
                pass
            block.unlink()
        self.blocks = []


def _ray_backend(*args: Any) -> Any:
    from suites.mccfr.ray_backend import RayBackend  # Ray is an optional extra

    return RayBackend(*args)


BACKENDS: dict[str, Any] = {
    "sequential": SequentialBackend,
    "threads": ThreadsBackend,
    "processes": ProcessesBackend,
    "ray": _ray_backend,
}
