"""sequential: one worker in the main process, on the global tables: the baseline."""

from __future__ import annotations

from collections import deque

from suites.mccfr.backends.base import Backend, BatchResult
from suites.mccfr.backends.merge import batch_result
from suites.mccfr.games import FlatGame
from suites.mccfr.worker import WorkerState, new_tables, warm_kernels


class SequentialBackend(Backend):
    """`submit` runs the batch at once; `collect` hands back its result."""

    single_worker = True

    def __init__(self, game: FlatGame, workers: int, sync: str, seed: int, start_method: str) -> None:
        self.seed = seed
        self.regret, self.avg = new_tables(game.num_infosets)
        self.state = WorkerState(game, "shared", self.regret, self.avg)
        self.workers_started = 1
        self.start_method = "none"
        self.done: deque[BatchResult] = deque()

    def start(self) -> None:
        warm_kernels(self.state.game)

    def submit(self, shares: list[int], batch: int) -> None:
        reply = self.state.run(sum(shares), (self.seed, batch, 0), batch)
        self.done.append(batch_result(shares, [reply], 0, 0.0))

    def collect(self) -> BatchResult:
        return self.done.popleft()

    def close(self) -> None:
        pass
