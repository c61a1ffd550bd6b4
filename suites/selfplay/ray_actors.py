"""The ray backend's actors: game actors that play, and one inference actor that batches.

Importing this module must stay cheap and torch-free: Ray imports it by name in every
game actor's process, and game actors behind the inference actor never load torch. Only
`InferenceActor` and a game actor with its own (`local`) net import torch, inside
`__init__`.

A game actor is a threaded actor (max_concurrency=2): `play` runs its games in one thread
while `tally` and `stop` answer in the other, which is how the suite's main process reads
the counts and ends the games, as it does through shared memory for local processes.

The inference actor is an asyncio actor: every game actor's `evaluate` call is a coroutine
that queues its positions and awaits its slice of a batch. A batch fires when the waiting
requests hold `max_batch` positions, when `timeout_ms` has passed since the oldest one
arrived, or when every game actor still playing is waiting (none can send more); requests
are never split, as in the server backend. Forward passes run on the event loop, so no
lock is needed: requests that arrive meanwhile queue for the next batch.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections import Counter, deque
from typing import Any

import numpy as np

from suites.selfplay.play import TALLY_WIDTH, PlayConfig, play_games
from suites.selfplay.workers import CountingEvaluator


class InferenceActorClient:
    """A game actor's evaluator that asks the inference actor (blocking on the reply)."""

    def __init__(self, server: Any) -> None:
        self.server = server

    def evaluate(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        import ray

        return ray.get(self.server.evaluate.remote(planes))


class GameActor:
    def __init__(
        self,
        slot: int,
        config: PlayConfig,
        seed: int,
        games: int | None,
        leaves: int,
        server: Any = None,
        net_config: Any = None,
        state_dict: dict | None = None,
        device: str = "cpu",
    ) -> None:
        self.slot = slot
        self.config = config
        self.seed = seed
        self.games = games
        self.server = server
        self.row = np.zeros(TALLY_WIDTH + leaves + 1, dtype=np.int64)
        self.stopping = False
        self.device = "server"
        if server is not None:
            self.evaluator: Any = InferenceActorClient(server)
        else:
            import torch

            torch.set_num_threads(1)  # many actors share the cores
            from suites.selfplay.local import LocalEvaluator

            local = LocalEvaluator.build(net_config, torch.device(device), state_dict=state_dict)
            self.device = local.net_device
            self.evaluator = local

    def hello(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "torch_loaded": "torch" in sys.modules, "device": self.device}

    def play(self) -> int:
        counting = CountingEvaluator(self.evaluator, self.row[TALLY_WIDTH:])
        try:
            return play_games(counting, self.config, self.seed, self.row, lambda: self.stopping, self.games)
        finally:
            if self.server is not None:
                self.server.leave.remote()

    def tally(self) -> np.ndarray:
        return self.row.copy()

    def stop(self) -> None:
        self.stopping = True


class InferenceActor:
    def __init__(
        self,
        clients: int,
        net_config: Any,
        state_dict: dict,
        device: str,
        max_batch: int,
        timeout_ms: float,
        torch_threads: int,
    ) -> None:
        import torch

        if torch_threads:
            torch.set_num_threads(torch_threads)
        from suites.selfplay.local import LocalEvaluator

        self.evaluator = LocalEvaluator.build(net_config, torch.device(device), state_dict=state_dict)
        self.active = clients
        self.max_batch = max_batch
        self.timeout_s = timeout_ms / 1000.0
        self.pending: deque[tuple[np.ndarray, asyncio.Future, float]] = deque()
        self.pending_positions = 0
        self.timer: asyncio.TimerHandle | None = None
        self.recording = False
        self.batch_sizes: Counter[int] = Counter()
        self.waits_ms: list[float] = []

    async def hello(self, planes_shape: tuple[int, ...]) -> dict[str, Any]:
        self.evaluator.evaluate(np.zeros((1, *planes_shape), dtype=np.float32))  # warm up
        return {"pid": os.getpid(), "device": self.evaluator.net_device}

    async def evaluate(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        future = asyncio.get_running_loop().create_future()
        self.pending.append((planes, future, time.perf_counter()))
        self.pending_positions += planes.shape[0]
        self._fire_due()
        return await future

    async def leave(self) -> None:
        """A game actor has finished playing: nobody waits for its requests any more."""
        self.active -= 1
        self._fire_due()

    async def measure(self) -> None:
        self.batch_sizes.clear()
        self.waits_ms.clear()
        self.recording = True

    async def hold(self) -> None:
        """Stop recording (the measured window is over; shutdown is not measured)."""
        self.recording = False

    async def stats(self) -> dict[str, Any]:
        return {"batch_hist": dict(self.batch_sizes), "waits_ms": np.asarray(self.waits_ms, dtype=np.float32)}

    def _fire_due(self) -> None:
        while self.pending and (self.pending_positions >= self.max_batch or len(self.pending) >= self.active):
            self._fire()
        self._arm()

    def _arm(self) -> None:
        if self.timer is not None or not self.pending:
            return
        delay = self.pending[0][2] + self.timeout_s - time.perf_counter()
        self.timer = asyncio.get_running_loop().call_later(max(0.0, delay), self._on_timer)

    def _on_timer(self) -> None:
        self.timer = None
        if self.pending and time.perf_counter() - self.pending[0][2] >= self.timeout_s:
            self._fire()
        self._fire_due()

    def _fire(self) -> None:
        batch = [self.pending.popleft()]
        size = batch[0][0].shape[0]
        while self.pending and size + self.pending[0][0].shape[0] <= self.max_batch:
            request = self.pending.popleft()
            batch.append(request)
            size += request[0].shape[0]
        self.pending_positions -= size
        try:
            priors, values = self.evaluator.evaluate(np.concatenate([request[0] for request in batch]))
        except BaseException as exc:
            for _, future, _ in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        now = time.perf_counter()
        offset = 0
        for planes, future, arrived in batch:
            n = planes.shape[0]
            if not future.done():
                future.set_result((priors[offset : offset + n].copy(), values[offset : offset + n].copy()))
            offset += n
            if self.recording:
                self.waits_ms.append((now - arrived) * 1000.0)
        if self.recording:
            self.batch_sizes[size] += 1
