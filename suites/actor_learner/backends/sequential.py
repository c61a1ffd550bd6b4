"""sequential: one process collects `turns` steps per agent, then trains each agent once."""

from __future__ import annotations

import multiprocessing as mp
import time

from harness.probe import Probe
from suites.actor_learner.actor import Actor
from suites.actor_learner.backends.base import Backend, Plan, Result
from suites.actor_learner.backends.plumbing import Funnel, build_shared, check_quality, clock_starts, epochs
from suites.actor_learner.learner import ALIVE_S, CPU_S, UPDATES, Trainer
from suites.actor_learner.params import Params


class SequentialBackend(Backend):
    """Collecting and training alternate in this process: the baseline without parallelism."""

    def run(self, params: Params, plan: Plan, probe: Probe) -> Result:
        ctx = mp.get_context()
        board, stats, rings, initial = build_shared(params, plan.agents, ctx)
        trainers = [Trainer(agent, params, rings[agent], board, stats, initial[agent]) for agent in range(plan.agents)]
        actor = Actor(params, board, stats.column(UPDATES), params.seed)
        funnel = Funnel(probe, stats)
        clock_starts(plan, probe)
        started, cpu_started = time.perf_counter(), time.process_time()
        for _ in epochs(plan, actor, rings, probe):
            for trainer in trainers:
                if trainer.can_sample():
                    t0, c0 = time.perf_counter(), time.process_time()
                    trainer.step()
                    trainer.row[ALIVE_S] += time.perf_counter() - t0
                    trainer.row[CPU_S] += time.process_time() - c0
            funnel.flush()
            check_quality(params, actor, probe)
        for trainer in trainers:
            trainer.publish()
        funnel.flush()
        return Result(actor, stats, time.perf_counter() - started, time.process_time() - cpu_started)
