"""What both backends build and run: the shared structures, the collection loop, the funnel.

`build_shared` makes the weight board, the learners' statistics and one replay ring per
agent (in shared memory from `ctx`); `epochs` is the actor's collection loop; `Funnel`
turns the learners' statistics into probe counters; `clock_starts` opens the warm-up or
the measured window once everything is up; `check_quality` evaluates the agents when a
quality target (`--target mean_return>=100`) asks for a check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.probe import Probe
from suites.actor_learner import layout
from suites.actor_learner.actor import Actor
from suites.actor_learner.backends.base import Plan
from suites.actor_learner.learner import PUBLISHES, UPDATES, LearnerStats
from suites.actor_learner.params import Params
from suites.actor_learner.replay import ReplayRing
from suites.actor_learner.weights import WeightBoard


@dataclass
class Funnel:
    """Turns the learners' shared statistics into probe counters, by difference."""

    probe: Probe
    stats: LearnerStats
    seen: dict[str, float] = field(default_factory=dict)

    def flush(self) -> None:
        for name, column in (("updates", UPDATES), ("publishes", PUBLISHES)):
            total = float(self.stats.column(column).sum())
            delta = total - self.seen.get(name, 0.0)
            if delta:
                self.probe.count(name, delta)
                self.seen[name] = total


def build_shared(
    params: Params, agents: int, ctx: Any
) -> tuple[WeightBoard, LearnerStats, list[ReplayRing], np.ndarray]:
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
    return board, LearnerStats(agents, ctx), rings, initial


def clock_starts(plan: Plan, probe: Probe) -> None:
    """Duration mode: warm-up starts once everything is up. Fixed work: the measured window
    starts now, so rates leave out imports and set-up (the driver held the probe in warm-up)."""
    probe.phase("warmup" if plan.remaining is None else "measure")


def check_quality(params: Params, actor: Actor, probe: Probe, pause: Callable[[bool], None] | None = None) -> None:
    """A quality check when the probe's target asks for one: the mean greedy return of the
    agents' latest published weights, learners held still meanwhile (`pause`), so the time
    the probe leaves out of the window is nobody's training time."""
    from suites.actor_learner.actor import evaluate

    if not probe.quality_due():
        return
    with probe.evaluating():
        if pause is not None:
            pause(True)
        try:
            actor.refresh()
            value = evaluate(actor.policy, actor.agents, max(1, params.eval_episodes), params.seed)
        finally:
            if pause is not None:
                pause(False)
    probe.quality("mean_return", value)


def epochs(plan: Plan, actor: Actor, rings: list[ReplayRing], probe: Probe) -> Iterator[np.ndarray]:
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
