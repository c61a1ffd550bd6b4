"""Learners: one per agent, sampling its replay ring, training its DQN and publishing weights.

`Trainer` is one training step plus the publish schedule and its accounting; the
sequential backend calls it in-line, `learner_main` wraps it in a process with a wait
strategy. Statistics live in a shared float64 table (one row per agent) that the main
process reads while learners run: it turns them into probe counters and policy lag.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from suites.actor_learner.replay import ReplayRing
from suites.actor_learner.weights import WeightBoard

# columns of the shared statistics table
UPDATES, SAMPLES, PUBLISHES, PUBLISH_S, WAIT_S, WAIT_CPU_S, ALIVE_S, CPU_S, EXITED = range(9)
STAT_COLUMNS = 9


class LearnerStats:
    def __init__(self, agents: int, ctx: Any) -> None:
        self.agents = agents
        self._raw = ctx.RawArray("d", agents * STAT_COLUMNS)
        self._views()

    def _views(self) -> None:
        self.table = np.frombuffer(self._raw, dtype=np.float64).reshape(self.agents, STAT_COLUMNS)

    def __getstate__(self) -> dict[str, Any]:
        return {"agents": self.agents, "_raw": self._raw}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._views()

    def column(self, index: int) -> np.ndarray:
        return self.table[:, index]


class Trainer:
    """One agent's learner: sample a batch, train, publish every `publish_interval` steps."""

    def __init__(
        self,
        agent: int,
        params: Any,
        ring: ReplayRing,
        board: WeightBoard,
        stats: LearnerStats,
        flat: np.ndarray,
    ) -> None:
        from suites.actor_learner.dqn import DQNLearner

        self.agent = agent
        self.ring = ring
        self.board = board
        self.row = stats.table[agent]
        self.batch_size = params.batch_size
        self.publish_interval = params.publish_interval
        self.rng = np.random.default_rng([params.seed, 3, agent])
        self.learner = DQNLearner(flat, params)
        self.published = -1

    def can_sample(self) -> bool:
        return len(self.ring) >= self.batch_size

    def step(self) -> None:
        rows, _ = self.ring.sample(self.batch_size, self.rng)
        self.learner.step(rows)
        self.row[SAMPLES] += self.batch_size
        self.row[UPDATES] = self.learner.updates
        if self.learner.updates % self.publish_interval == 0:
            self.publish()

    def publish(self) -> None:
        if self.learner.updates == self.published:
            return
        started = time.perf_counter()
        self.board.publish(self.agent, self.learner.flat(), self.learner.updates)
        self.published = self.learner.updates
        self.row[PUBLISH_S] += time.perf_counter() - started
        self.row[PUBLISHES] += 1


def learner_main(
    agent: int,
    params: Any,
    ring: ReplayRing,
    board: WeightBoard,
    stats: LearnerStats,
    data_ready: Any,
    stop: Any,
    running: Any = None,
) -> None:
    """A learner process: train whenever allowed, wait (poll or event) otherwise, until `stop`;
    hold still while `running` (an Event) is cleared: the actor is evaluating the agents."""
    import torch

    torch.set_num_threads(1)  # 2 cores, 1 + agents processes: intra-op threads only oversubscribe
    torch.manual_seed(params.seed * 1000 + agent)
    started, cpu_started = time.perf_counter(), time.process_time()
    flat = np.empty(board.size, np.float32)
    board.read(agent, flat)
    trainer = Trainer(agent, params, ring, board, stats, flat)
    row = stats.table[agent]
    batch_size, throttle, poll = params.batch_size, params.throttle, params.wait == "poll"
    consumed = 0  # throttle credit: one step per batch_size transitions written

    def ready() -> bool:
        written = ring.written
        return written >= batch_size and (not throttle or written - consumed >= batch_size)

    try:
        while not stop.is_set():
            if running is not None and not running.is_set():
                running.wait(0.1)  # blocks: a held learner neither trains nor burns CPU
                continue
            if not ready():
                wait_started, wait_cpu = time.perf_counter(), time.process_time()
                while not ready() and not stop.is_set():
                    if poll:
                        time.sleep(0.001)
                    else:
                        data_ready.wait(0.1, ready)
                row[WAIT_S] += time.perf_counter() - wait_started
                row[WAIT_CPU_S] += time.process_time() - wait_cpu
                continue
            trainer.step()
            consumed += batch_size
        if throttle:
            # the data collected entitles a throttled learner to one step per batch_size
            # transitions: take the ones still owed, so a run's training does not depend on
            # how far behind the learner was when the actor finished
            while ring.written >= batch_size and ring.written - consumed >= batch_size:
                trainer.step()
                consumed += batch_size
        trainer.publish()  # the actor evaluates what the learner ended with
    finally:
        row[ALIVE_S] = time.perf_counter() - started
        row[CPU_S] = time.process_time() - cpu_started
        row[EXITED] = 1.0
