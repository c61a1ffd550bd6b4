"""processes: a persistent pool of worker processes, a pipe each way per worker.

Under delta and full sync the pipes carry orders and block names, and the rows travel
through shared memory (shared_rows.py): each run order names a free block for the
worker's reply, which goes back to the pool once merged; each merged update is written
once into a block every worker reads (`Deliveries` says when it is free). Under shared
the tables themselves are two shared-memory blocks every worker updates in place (they
race by design). The workers run `worker.process_main`.
"""

from __future__ import annotations

import multiprocessing as mp
import resource
import sys
import time
from multiprocessing import resource_tracker
from typing import Any

import numpy as np

from suites.mccfr.backends.base import Backend, BatchResult
from suites.mccfr.backends.merge import InFlight, Merger, new_rows
from suites.mccfr.games import MAX_ACTIONS, FlatGame
from suites.mccfr.shared_rows import BlockPool, BlockRef, Deliveries
from suites.mccfr.worker import Reply, Shipped, new_tables, process_main, update_bytes, warm_kernels


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


class ProcessesBackend(Backend):
    """Worker processes started with `start_method` (auto: `choose_start_method`)."""

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
            return new_rows(batch, rows)
        block = self.deliveries.block_for(batch)
        return block.rows, block.regret, block.avg

    def start(self) -> None:
        ctx = mp.get_context(self.start_method)
        if self.start_method == "fork":
            warm_kernels(self.game)
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
