"""ray: solver workers as Ray actors, delta/full sync through the object store.

Each actor holds one worker's tables (`WorkerState`, the same protocol as the threads and
processes backends). Per batch the main process puts the last merged update into the
object store ONCE (`ray.put`) and hands every actor the reference with its share: an actor on
the same node maps the arrays from shared memory (as the processes backend's row blocks do),
one on another node fetches them once per node. The replies come back
as objects too; the merge is the same deterministic `Merger`, in worker order, so a run
with the same seed, worker count and staleness ends with the same tables as the processes
backend. An actor runs its calls in order, so batches in flight (staleness 1) queue there.

sync=shared is refused: in-place shared tables exist only on one machine, which is what
the processes backend measures.
"""

from __future__ import annotations

import sys
from typing import Any

from harness.probe import SuiteError
from suites.mccfr.backends.base import Backend, BatchResult
from suites.mccfr.backends.merge import InFlight, Merger
from suites.mccfr.games import FlatGame
from suites.mccfr.worker import Reply, Update, WorkerState, new_tables, update_bytes
from suites.ray_session import ray_session

_START_TIMEOUT_S = 300.0  # actors that cannot be placed are an error, not a hang


class TableWorker:
    """A Ray actor: one worker's tables and the kernel (imports numba, never torch)."""

    def __init__(self, game: FlatGame, sync: str) -> None:
        self.state = WorkerState(game, sync, *new_tables(game.num_infosets))

    def ready(self) -> bool:
        """Loads the compiled kernel (running zero iterations); returns whether torch is loaded."""
        self.state.run(0, (0,))
        return "torch" in sys.modules

    def run(self, iterations: int, key: tuple[int, ...], batch: int, updates: list[Update]) -> Reply:
        self.state.apply(updates)
        return self.state.run(iterations, key, batch)

    def apply(self, updates: list[Update]) -> None:
        self.state.apply(updates)


class RayBackend(Backend):
    """One `TableWorker` actor per worker; Ray is imported when the backend starts."""

    def __init__(self, game: FlatGame, workers: int, sync: str, seed: int, start_method: str) -> None:
        if sync == "shared":
            raise SuiteError(
                "backend=ray with sync=shared: tables shared in place exist on one machine only; "
                "use sync=delta or sync=full (or backend=processes for shared)"
            )
        self.game = game
        self.sync = sync
        self.seed = seed
        self.workers = workers
        self.regret, self.avg = new_tables(game.num_infosets)
        self.flight = InFlight(Merger(self.regret, self.avg, sync))
        self.actors: list[Any] = []
        self.workers_started = 0
        self.torch_in_workers = 0
        self.start_method = "ray"
        self._session: Any = None
        self.ray: Any = None

    def start(self) -> None:
        self._session = ray_session(num_cpus=self.workers)
        self.ray = ray = self._session.__enter__()
        actor = ray.remote(num_cpus=1, max_restarts=0)(TableWorker)
        game_ref = ray.put(self.game)
        self.actors = [actor.remote(game_ref, self.sync) for _ in range(self.workers)]
        ready = [a.ready.remote() for a in self.actors]
        done, _ = ray.wait(ready, num_returns=len(ready), timeout=_START_TIMEOUT_S)
        if len(done) < len(ready):
            raise SuiteError(
                f"backend=ray: only {len(done)} of {len(ready)} mccfr actors started within "
                f"{_START_TIMEOUT_S:.0f} s; the cluster has {ray.available_resources().get('CPU', 0):g} CPUs "
                "free: fewer workers, or a larger cluster"
            )
        self.torch_in_workers = sum(ray.get(ready))
        self.workers_started = len(self.actors)

    def submit(self, shares: list[int], batch: int) -> None:
        ray = self.ray
        updates = self.flight.outgoing()
        # one copy into the object store; every actor gets the same reference
        ref = ray.put(updates)
        runs = [self.actors[w].run.remote(n, (self.seed, batch, w), batch, ref) for w, n in enumerate(shares)]
        applies = [a.apply.remote(ref) for a in self.actors[len(shares) :]] if updates else []
        self.flight.add(batch, shares, (runs, applies, update_bytes(updates)))

    def collect(self) -> BatchResult:
        batch, shares, (runs, applies, moved) = self.flight.oldest()
        replies: list[Reply] = self.ray.get(runs)
        self.ray.get(applies)
        return self.flight.merge(batch, shares, replies, moved)

    def close(self) -> None:
        try:
            if self.ray is not None:
                for actor in self.actors:
                    self.ray.kill(actor)
            self.actors = []
        finally:
            if self._session is not None:
                session, self._session = self._session, None
                session.__exit__(None, None, None)
