"""What an actor-learner backend is: how one actor and one learner per agent share the work.

The driver (driver.py) plans the work (`Plan`), holds the probe in warm-up while the
backend sets up, and calls `Backend().run(params, plan, probe)`, which must:

- collect env steps with one `actor.Actor` for every agent: `plan.remaining[a]` steps for
  agent a (decremented as they are taken), or, when `plan.remaining` is None, epochs of
  `plan.turns` steps until `probe.should_stop()`; counting them into the probe
  (`plumbing.epochs` does both, and writes every step into the agent's replay ring);
- train each agent's DQN on its ring (`learner.Trainer`) and publish its weights to the
  actor, funnelling updates and publishes into the probe (`plumbing.Funnel`);
- start the clock only once everything is up (`plumbing.clock_starts`);
- leave no process behind, and return a `Result`: the actor (its step counts, lag and
  episode returns), the learners' statistics table and the times measured.

The driver turns the result into the suite's metrics. A backend with `separate_learners`
trains in processes of their own while the actor runs: the driver then reports the time
the actor spent waking them (`Result.wake_s`) and warns about learners that outrun it.

Register a new backend in `backends/__init__.py` (or, from outside the suite, with
`BACKENDS.add` in a HARNESS_PLUGINS module).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    import numpy as np

    from harness.probe import Probe
    from suites.actor_learner.actor import Actor
    from suites.actor_learner.learner import LearnerStats
    from suites.actor_learner.params import Params


@dataclass
class Plan:
    agents: int
    turns: int
    remaining: np.ndarray | None  # env steps left per agent; None: open-ended (duration mode)
    requested: int


@dataclass
class Result:
    actor: Actor
    stats: LearnerStats
    wall_s: float
    main_cpu_s: float  # CPU seconds of this (the actor's) process over the work
    wake_s: float = 0.0  # the actor's wall time spent waking learners


class Backend:
    """The protocol; subclass it and register the class."""

    separate_learners: ClassVar[bool] = False  # learners run in their own processes, concurrently

    def run(self, params: Params, plan: Plan, probe: Probe) -> Result:
        """Collect and train as planned (module docstring); return what was measured."""
        raise NotImplementedError
