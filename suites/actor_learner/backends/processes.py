"""processes: this (main) process is the actor; one learner process per agent trains in
parallel and publishes weights through shared memory. The actor steps every agent's
environment, so it is the critical path: by default it gets a core of its own and the
learners share the others (`placement`).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time

import numpy as np

from harness.probe import Probe
from suites.actor_learner.actor import Actor
from suites.actor_learner.backends.base import Backend, Plan, Result
from suites.actor_learner.backends.plumbing import Funnel, build_shared, check_quality, clock_starts, epochs
from suites.actor_learner.doorbell import bell
from suites.actor_learner.learner import UPDATES, learner_main
from suites.actor_learner.params import Params


def _cores(placement: str) -> tuple[set[int], set[int]] | None:
    """(actor's cores, learners' cores) for `actor_core` placement, None when there is
    nothing to place: `shared`, or fewer than two cores allowed to this process."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if placement != "actor_core" or len(allowed) < 2:
        return None
    return {allowed[0]}, set(allowed[1:])


class ProcessesBackend(Backend):
    """This process acts for every agent; one learner process per agent trains in parallel."""

    separate_learners = True

    def run(self, params: Params, plan: Plan, probe: Probe) -> Result:
        method = params.start_method
        if method == "auto":
            method = "fork" if params.device == "cpu" else "spawn"
        ctx = mp.get_context(method)
        board, stats, rings, _ = build_shared(params, plan.agents, ctx)
        actor = Actor(params, board, stats.column(UPDATES), params.seed)
        funnel = Funnel(probe, stats)
        data_ready = [bell(params.wait, ctx) for _ in range(plan.agents)]
        stop = ctx.Event()
        running = ctx.Event()  # cleared while the actor evaluates a quality check
        running.set()
        workers = [
            ctx.Process(
                target=learner_main,
                args=(agent, params, rings[agent], board, stats, data_ready[agent], stop, running),
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
            clock_starts(plan, probe)
            for taken in epochs(plan, actor, rings, probe):
                if signal:
                    wake_started = time.perf_counter()
                    for agent in np.flatnonzero(taken):
                        data_ready[agent].ring()
                    wake_s += time.perf_counter() - wake_started
                for agent, worker in enumerate(workers):
                    if worker.exitcode is not None:
                        raise RuntimeError(f"learner {agent} exited early with code {worker.exitcode}")
                funnel.flush()
                check_quality(params, actor, probe, lambda hold: running.clear() if hold else running.set())
            stop.set()
            running.set()
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
            running.set()
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
