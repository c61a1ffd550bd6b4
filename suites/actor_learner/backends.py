"""The two ways of running the same actor and learners.

sequential: one process collects `turns` steps per agent, then trains each agent once.
processes: this (main) process is the actor; one learner process per agent trains in
parallel and publishes weights through shared memory. The actor steps every agent's
environment, so it is the critical path: by default it gets a core of its own and the
learners share the others (`placement`).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.probe import Probe
from suites.actor_learner import layout
from suites.actor_learner import learner as L
from suites.actor_learner.actor import Actor
from suites.actor_learner.doorbell import bell
from suites.actor_learner.params import Params
from suites.actor_learner.replay import ReplayRing
from suites.actor_learner.weights import WeightBoard


@dataclass
class Funnel:
    """Turns the learners' shared statistics into probe counters, by difference."""

    probe: Probe
    stats: L.LearnerStats
    seen: dict[str, float] = field(default_factory=dict)

    def flush(self) -> None:
        for name, column in (("updates", L.UPDATES), ("publishes", L.PUBLISHES)):
            total = float(self.stats.column(column).sum())
            delta = total - self.seen.get(name, 0.0)
            if delta:
                self.probe.count(name, delta)
                self.seen[name] = total


@dataclass
class Result:
    actor: Actor
    stats: L.LearnerStats
    wall_s: float
    main_cpu_s: float  # CPU seconds of this (the actor's) process over the work
    wake_s: float = 0.0  # the actor's wall time spent waking learners


def _setup(params: Params, agents: int, ctx: Any) -> tuple[WeightBoard, L.LearnerStats, list[ReplayRing], np.ndarray]:
    from suites.actor_learner.dqn import DQNLearner, initial_weights

    initial = initial_weights(agents, params.hidden, params.seed)
    # building the first optimizer imports ~800 modules (1-2 s): pay it here, before the
    # clock starts and before forking, so forked learners inherit them instead of each
    # importing them again while the actor is already running
    DQNLearner(initial[0], params).step(np.zeros((params.batch_size, layout.ROW_WIDTH), np.float32))
    board = WeightBoard(agents, layout.param_count(params.hidden), ctx)
    for agent in range(agents):
        board.publish(agent, initial[agent], 0)
    rings = [ReplayRing(params.buffer_capacity, layout.ROW_WIDTH, ctx) for _ in range(agents)]
    return board, L.LearnerStats(agents, ctx), rings, initial


def _clock_starts(plan: Any, probe: Probe) -> None:
    """Duration mode: warm-up starts once everything is up. Fixed work: the measured window
    starts now, so rates leave out imports and set-up (`run` held the probe in warm-up)."""
    probe.phase("warmup" if plan.remaining is None else "measure")


def _epochs(plan: Any, actor: Actor, rings: list[ReplayRing], probe: Probe) -> Iterator[np.ndarray]:
    """Collect epoch after epoch into the rings; yields the steps each agent took."""
    open_ended = plan.remaining is None
    full = np.full(plan.agents, plan.turns, np.int64)
    episodes = 0
    while True:
        if open_ended:
            if probe.should_stop():
                return
            taken = actor.collect(full, probe.should_stop)
        else:
            if not plan.remaining.any():
                return
            taken = actor.collect(np.minimum(plan.remaining, plan.turns))
            plan.remaining -= taken
        for agent in np.flatnonzero(taken):
            rings[agent].write(actor.chunk[agent, : taken[agent]])
        probe.count("env_steps", int(taken.sum()))
        if len(actor.finished_returns) > episodes:
            probe.count("episodes", len(actor.finished_returns) - episodes)
            episodes = len(actor.finished_returns)
        yield taken


def sequential(params: Params, plan: Any, probe: Probe) -> Result:
    ctx = mp.get_context()
    board, stats, rings, initial = _setup(params, plan.agents, ctx)
    trainers = [L.Trainer(agent, params, rings[agent], board, stats, initial[agent]) for agent in range(plan.agents)]
    actor = Actor(params, board, stats.column(L.UPDATES), params.seed)
    funnel = Funnel(probe, stats)
    _clock_starts(plan, probe)
    started, cpu_started = time.perf_counter(), time.process_time()
    for _ in _epochs(plan, actor, rings, probe):
        for trainer in trainers:
            if trainer.can_sample():
                t0, c0 = time.perf_counter(), time.process_time()
                trainer.step()
                trainer.row[L.ALIVE_S] += time.perf_counter() - t0
                trainer.row[L.CPU_S] += time.process_time() - c0
        funnel.flush()
    for trainer in trainers:
        trainer.publish()
    funnel.flush()
    return Result(actor, stats, time.perf_counter() - started, time.process_time() - cpu_started)


def _cores(placement: str) -> tuple[set[int], set[int]] | None:
    """(actor's cores, learners' cores) for `actor_core` placement, None when there is
    nothing to place: `shared`, or fewer than two cores allowed to this process."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if placement != "actor_core" or len(allowed) < 2:
        return None
    return {allowed[0]}, set(allowed[1:])


def processes(params: Params, plan: Any, probe: Probe) -> Result:
    method = params.start_method
    if method == "auto":
        method = "fork" if params.device == "cpu" else "spawn"
    ctx = mp.get_context(method)
    board, stats, rings, _ = _setup(params, plan.agents, ctx)
    actor = Actor(params, board, stats.column(L.UPDATES), params.seed)
    funnel = Funnel(probe, stats)
    data_ready = [bell(params.wait, ctx) for _ in range(plan.agents)]
    stop = ctx.Event()
    workers = [
        ctx.Process(
            target=L.learner_main,
            args=(agent, params, rings[agent], board, stats, data_ready[agent], stop),
            name=f"actor_learner-learner-{agent}",
            daemon=True,
        )
        for agent in range(plan.agents)
    ]
    signal = params.wait != "poll"
    wake_s = 0.0
    cores = _cores(params.placement)
    if params.placement == "actor_core" and cores is None:
        probe.log("placement=actor_core: fewer than two cores allowed, so the OS places everyone")
    main_cores = os.sched_getaffinity(0) if cores is not None else None
    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        for worker in workers:
            worker.start()
            if cores is not None:
                os.sched_setaffinity(worker.pid, cores[1])
        if cores is not None:
            os.sched_setaffinity(0, cores[0])  # this thread is the actor
            probe.set("actor_cores", ",".join(map(str, sorted(cores[0]))))
            probe.set("learner_cores", ",".join(map(str, sorted(cores[1]))))
        _clock_starts(plan, probe)
        for taken in _epochs(plan, actor, rings, probe):
            if signal:
                wake_started = time.perf_counter()
                for agent in np.flatnonzero(taken):
                    data_ready[agent].ring()
                wake_s += time.perf_counter() - wake_started
            for agent, worker in enumerate(workers):
                if worker.exitcode is not None:
                    raise RuntimeError(f"learner {agent} exited early with code {worker.exitcode}")
            funnel.flush()
        stop.set()
        for ringer in data_ready:
            ringer.ring()
        for agent, worker in enumerate(workers):
            worker.join(30)
            if worker.exitcode != 0:
                raise RuntimeError(f"learner {agent} ended with exit code {worker.exitcode}")
    finally:
        if main_cores is not None:
            os.sched_setaffinity(0, main_cores)
        stop.set()
        for ringer in data_ready:
            ringer.ring()
        for worker in workers:
            if worker.pid is not None:
                worker.join(5)
                if worker.is_alive():
                    worker.terminate()
                    worker.join(5)
                if worker.is_alive():
                    worker.kill()
                    worker.join()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    funnel.flush()
    return Result(actor, stats, wall, cpu, wake_s)
