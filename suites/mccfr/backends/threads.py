"""threads: worker states in the main process, each served by its own thread."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from suites.mccfr.backends.base import Backend, BatchResult
from suites.mccfr.backends.merge import InFlight, Merger
from suites.mccfr.games import FlatGame
from suites.mccfr.worker import Reply, Update, WorkerState, new_tables, update_bytes, warm_kernels


class ThreadsBackend(Backend):
    """One thread per worker, so a worker's batches run in order (the kernel releases the
    GIL; the merge and the bookkeeping around it hold it). sync=shared gives every worker
    the global tables themselves, and they race by design."""

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
        warm_kernels(self.game)
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
