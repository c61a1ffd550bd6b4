"""Where the iterations run: sequential, threads, processes, ray (`ray_backend.py`).

Every backend runs batches through two calls: `submit(shares, batch)` hands worker w
`shares[w]` iterations (seeded by (seed, batch, w), so a run depends only on the seed, the
worker count and the staleness) and returns at once; `collect()` waits for the oldest
submitted batch, merges what its workers report into the global tables (in worker order,
so the result is deterministic) and returns a `BatchResult`. The driver keeps
`staleness + 1` batches in flight: with 0 every batch is a barrier; with 1 the workers
compute the next batch while the main process merges the last one (see worker.py for
the additive protocol that makes this exact). sync=shared with more than one worker
races by design.

A new backend (ray) is one more class with `start`, `submit`, `collect`, `close` and the
`regret`/`avg` global tables, registered in `BACKENDS`.
"""

from __future__ import annotations

import multiprocessing as mp
import resource
import sys
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing import resource_tracker
from typing import Any

import numpy as np

from suites.mccfr.games import MAX_ACTIONS, FlatGame
from suites.mccfr.shared_rows import BlockPool, BlockRef, Deliveries
from suites.mccfr.solver import NUM_STATS, run_iterations, seed_state
from suites.mccfr.sync_kernels import apply_update, empty_rows, merge_changes, sorted_rows, take_changes
from suites.mccfr.worker import Reply, Shipped, Update, WorkerState, new_tables, process_main, update_bytes

RowsFor = Callable[[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]]  # (batch, rows) -> arrays


@dataclass
class BatchResult:
    requested: int
    done: int
    nodes: int
    touched: int
    sync_bytes: int  # replies in plus the update out, once per worker it went to
    busy_s: float  # kernel time summed over the batch's workers
    merge_s: float  # main-process time folding the replies into the global tables


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
        self.out = out or _new_rows

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


def _new_rows(batch: int, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.empty(rows, np.int64), np.empty((rows, MAX_ACTIONS)), np.empty((rows, MAX_ACTIONS))


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
        return _result(shares, replies, sum(r.payload_bytes for r in replies) + update_out_bytes, merge_s)


def _result(shares: list[int], replies: list[Reply], moved: int, merge_s: float) -> BatchResult:
    return BatchResult(
        requested=sum(shares),
        done=sum(r.done for r in replies),
        nodes=sum(r.nodes for r in replies),
        touched=sum(r.touched for r in replies),
        sync_bytes=moved,
        busy_s=sum(r.compute_s for r in replies),
        merge_s=merge_s,
    )


def _kernel_warmup(game: FlatGame) -> None:
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


class SequentialBackend:
    """One worker in the main process, on the global tables: the baseline. `submit` runs
    the batch; `collect` hands back its result."""

    def __init__(self, game: FlatGame, workers: int, sync: str, seed: int, start_method: str) -> None:
        self.seed = seed
        self.regret, self.avg = new_tables(game.num_infosets)
        self.state = WorkerState(game, "shared", self.regret, self.avg)
        self.workers_started = 1
        self.start_method = "none"
        self.done: deque[BatchResult] = deque()

    def start(self) -> None:
        _kernel_warmup(self.state.game)

    def submit(self, shares: list[int], batch: int) -> None:
        reply = self.state.run(sum(shares), (self.seed, batch, 0), batch)
        self.done.append(_result(shares, [reply], 0, 0.0))

    def collect(self) -> BatchResult:
        return self.done.popleft()

    def close(self) -> None:
        pass


class ThreadsBackend:
    """Worker states in the main process, each served by its own thread, so a worker's
    batches run in order (the kernel releases the GIL; the merge and the bookkeeping
    around it hold it)."""

    def __init__(self, game: FlatGame, workers: int, sync: str, seed: int, start_method: str) -> None:
        self.game = game
        self.sync = sync
        self.seed = seed
        self.workers = workers
        self.regret, self.avg = new_tables(game.num_infosets)
        self.flight = InFlight(Merger(self.regret, self.avg, sync))
        if sync == "shared":
            self.states = [WorkerState(game, sync, self.regret, self.avg) for _ in range(workers)]
        else:
            self.states = [WorkerState(game, sync, *new_tables(game.num_infosets)) for _ in range(workers)]
        self.threads: list[ThreadPoolExecutor] = []
        self.workers_started = workers
        self.start_method = "thread"

    def start(self) -> None:
        _kernel_warmup(self.game)
        self.threads = [ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"mccfr-{w}") for w in range(self.workers)]

    def _step(self, w: int, iterations: int, batch: int, updates: list[Update]) -> Reply:
        state = self.states[w]
        state.apply(updates)
        return state.run(iterations, (self.seed, batch, w), batch)

    def submit(self, shares: list[int], batch: int) -> None:
        updates = self.flight.outgoing()
        futures = [self.threads[w].submit(self._step, w, n, batch, updates) for w, n in enumerate(shares)]
        if updates:
            for w in range(len(shares), self.workers):
                self.threads[w].submit(self.states[w].apply, updates)
        self.flight.add(batch, shares, (futures, update_bytes(updates) * self.workers))

    def collect(self) -> BatchResult:
        batch, shares, (futures, moved) = self.flight.oldest()
        replies = [f.result() for f in futures]
        return self.flight.merge(batch, shares, replies, moved)

    def close(self) -> None:
        for thread in self.threads:
            thread.shutdown(wait=True, cancel_futures=True)
        self.threads = []


def lift_open_file_limit() -> None:
    """Raise the soft limit on open files to the hard one (as Ray does at start): every
    row block keeps a descriptor while mapped, and a pool of 128 workers with 8 batches in
    flight holds over a thousand, past the usual soft limit of 1024."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):  # pragma: no cover - a hard limit the kernel refuses
            pass


def choose_start_method(requested: str) -> str:
    """`auto`: fork (cheap: workers inherit the compiled kernel) unless this process has
    torch loaded, whose pages a forked worker would carry; then spawn, a clean interpreter."""
    if requested != "auto":
        return requested
    if "torch" in sys.modules or "fork" not in mp.get_all_start_methods():
        return "spawn"
    return "fork"


class ProcessesBackend:
    """A persistent pool of worker processes, a pipe each way per worker; sync delta, full
    or shared. Under delta and full the pipes carry orders and block names, and the rows
    travel through shared memory (shared_rows.py): each run order names a free block for
    the worker's reply, which goes back to the pool once merged; each merged update is
    written once into a block every worker reads (`Deliveries` says when it is free)."""

    def __init__(self, game: FlatGame, workers: int, sync: str, seed: int, start_method: str) -> None:
        self.game = game
        self.sync = sync
        self.seed = seed
        self.workers = workers
        self.start_method = choose_start_method(start_method)
        self.blocks: list[Any] = []
        self.rows: BlockPool | None = None  # delta and full: the blocks replies and updates travel in
        self.deliveries: Deliveries | None = None
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
            self.rows = BlockPool(game.num_infosets)
            self.deliveries = Deliveries(self.rows, workers)
        self.flight = InFlight(Merger(self.regret, self.avg, sync, out=self._update_rows))
        self.procs: list[Any] = []
        self.orders: list[Any] = []  # main -> worker
        self.replies: list[Any] = []  # worker -> main
        self.workers_started = 0
        self.torch_in_workers = 0

    def _update_rows(self, batch: int, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.deliveries is None:
            return _new_rows(batch, rows)
        block = self.deliveries.block_for(batch)
        return block.rows, block.regret, block.avg

    def start(self) -> None:
        ctx = mp.get_context(self.start_method)
        if self.start_method == "fork":
            _kernel_warmup(self.game)
        # the row blocks are created after the fork, and a worker that attaches one
        # registers it with the resource tracker: it must be this process's tracker (the
        # workers inherit it), not one a worker starts for itself and which would unlink
        # the block when that worker exits
        resource_tracker.ensure_running()
        if self.rows is not None:
            lift_open_file_limit()
        names = tuple(b.name for b in self.blocks) if self.blocks else None
        for w in range(self.workers):
            inbox, orders = ctx.Pipe(duplex=False)
            replies, outbox = ctx.Pipe(duplex=False)
            proc = ctx.Process(
                target=process_main,
                args=(inbox, outbox, self.game, self.sync, names),
                name=f"mccfr-{w}",
                daemon=True,
            )
            proc.start()
            inbox.close()
            outbox.close()
            self.procs.append(proc)
            self.orders.append(orders)
            self.replies.append(replies)
        for w in range(len(self.procs)):
            message = self._recv(w)
            self.torch_in_workers += bool(message[1])
        self.workers_started = len(self.procs)

    def _recv(self, w: int) -> Any:
        try:
            return self.replies[w].recv()
        except EOFError:
            code = self.procs[w].exitcode
            raise RuntimeError(f"mccfr worker {w} died (exit code {code})") from None

    def submit(self, shares: list[int], batch: int) -> None:
        updates = self.flight.outgoing()
        deliveries = self.deliveries
        shipped = [Shipped(u.batch, deliveries.ship(u.batch, u.rows.size)) for u in updates] if deliveries else []
        sent = [u.batch for u in updates]
        reply_blocks: list[str] = []
        for w, orders in enumerate(self.orders):
            run = w < len(shares)
            if run:
                reply_to = self.rows.take().name if self.rows is not None else None
                if reply_to is not None:
                    reply_blocks.append(reply_to)
                orders.send(("run", shares[w], (self.seed, batch, w), batch, shipped, reply_to))
            elif shipped:
                orders.send(("apply", shipped))
            else:
                continue
            if deliveries is not None:
                deliveries.order_sent(w, run, sent)
        self.flight.add(batch, shares, (update_bytes(updates) * len(self.orders), reply_blocks))

    def _received(self, w: int, message: tuple[Reply, BlockRef | None]) -> Reply:
        """The worker's reply, its rows read in place from the block it wrote them to."""
        reply, ref = message
        if self.deliveries is not None:
            self.deliveries.answered(w)
        if ref is None or self.rows is None:
            return reply
        rows, regret, avg = self.rows[ref.name].view(ref.count)
        return reply._replace(rows=rows, regret=regret, avg=avg)

    def collect(self) -> BatchResult:
        batch, shares, (moved, reply_blocks) = self.flight.oldest()
        replies = [self._received(w, self._recv(w)) for w in range(len(shares))]
        result = self.flight.merge(batch, shares, replies, moved)
        del replies  # views into the reply blocks, which go back to the pool
        for name in reply_blocks:
            self.rows.give(name)  # type: ignore[union-attr]  # blocks only exist with a pool
        return result

    def close(self) -> None:
        for orders in self.orders:
            try:
                orders.send(("stop",))
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
        for conn in self.orders + self.replies:
            conn.close()
        self.regret = self.avg = None  # type: ignore[assignment]
        self.flight = None  # type: ignore[assignment]
        if self.rows is not None:
            self.rows.close()
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
