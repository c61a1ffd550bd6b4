"""The suite's run: plan the work, run the backend, turn what it measured into metrics.

Work is env steps. With `probe.target_work` set it is that many steps split over the
agents with `split_work`; in duration mode (a duration and no target) the run is
open-ended: epochs repeat until `probe.should_stop()` and the work requested is what was
done; otherwise it is `epochs x turns x agents`.
"""

from __future__ import annotations

import time

import numpy as np

from harness.probe import Probe, SuiteError, split_work
from suites.actor_learner.backends import BACKENDS
from suites.actor_learner.backends.base import Plan, Result
from suites.actor_learner.learner import ALIVE_S, CPU_S, PUBLISH_S, SAMPLES, WAIT_CPU_S, WAIT_S
from suites.actor_learner.params import Params


def plan_work(params: Params, probe: Probe) -> Plan:
    if probe.target_work is not None:
        shares = split_work(int(probe.target_work), params.agents)
        return Plan(len(shares), params.turns, np.array(shares, np.int64), int(probe.target_work))
    if probe.duration_s is not None:
        return Plan(params.agents, params.turns, None, 0)
    per_agent = params.epochs * params.turns
    return Plan(params.agents, params.turns, np.full(params.agents, per_agent, np.int64), per_agent * params.agents)


def run_actor_learner(params: Params, probe: Probe) -> None:
    import torch

    if params.device == "cuda" and not torch.cuda.is_available():
        raise SuiteError("device=cuda but torch sees no CUDA device: use device=cpu")
    if params.device == "cuda" and params.start_method == "fork":
        raise SuiteError("device=cuda cannot run in forked learners: use start_method=spawn or auto")
    torch.set_num_threads(1)  # tiny matmuls: extra intra-op threads only fight the other processes
    plan = plan_work(params, probe)
    if plan.agents == 0:
        probe.work(requested=0, done=0)
        return
    if plan.remaining is not None:
        probe.phase("warmup")  # set-up is not part of the fixed work's rates; backends end it
    backend = BACKENDS.get(params.backend)
    result = backend().run(params, plan, probe)
    done = int(result.actor.steps.sum())
    probe.work(requested=plan.requested if plan.remaining is not None else done, done=done)
    report(params, result, probe, backend.separate_learners)


def report(params: Params, result: Result, probe: Probe, separate_learners: bool) -> None:
    from suites.actor_learner.actor import evaluate

    actor, table = result.actor, result.stats.table
    env_steps = float(actor.steps.sum())
    samples = float(table[:, SAMPLES].sum())
    alive = float(table[:, ALIVE_S].sum())
    probe.set("work_wall_s", result.wall_s)
    probe.set("main_cpu_s", result.main_cpu_s)
    if separate_learners:
        probe.set("wake_s", result.wake_s)
        probe.set("wake_share", result.wake_s / result.wall_s if result.wall_s > 0 else 0.0)
        if result.wall_s > 0 and result.wake_s > 0.1 * result.wall_s:
            probe.warn(
                f"the actor spent {result.wake_s / result.wall_s:.0%} of the run waking learners "
                f"({result.wake_s:.2f} s): multiprocessing.Event.set() waits until every sleeping "
                "learner has woken; wait=event rings a semaphore, which never blocks the actor"
            )
    probe.set("replay_ratio", samples / env_steps if env_steps else 0.0)
    probe.set("publish_share", float(table[:, PUBLISH_S].sum()) / alive if alive else 0.0)
    probe.set("publish_s", float(table[:, PUBLISH_S].sum()))
    probe.set("wait_s", float(table[:, WAIT_S].sum()))
    probe.set("learner_wait_cpu_s", float(table[:, WAIT_CPU_S].sum()))
    probe.set("learner_cpu_s", float(table[:, CPU_S].sum()))
    if actor.lag_samples:
        probe.set("policy_lag_min", float(actor.lag_min.min()))
        probe.set("policy_lag_mean", float(actor.lag_sum.sum() / (actor.lag_samples * actor.agents)))
        probe.set("policy_lag_max", float(actor.lag_max.max()))
    if separate_learners:
        _warn(params, table, samples / env_steps if env_steps else 0.0, probe)
    finished = actor.finished_returns
    if finished:
        probe.set("train_return_mean", float(np.mean(finished[-10 * actor.agents :])))
    actor.refresh()  # the learners' final publish
    started = time.perf_counter()
    probe.set("mean_return", evaluate(actor.policy, actor.agents, params.eval_episodes, params.seed))
    probe.set("eval_s", time.perf_counter() - started)


def _warn(params: Params, table: np.ndarray, replay_ratio: float, probe: Probe) -> None:
    """Name the two classic losses of learners running apart, with the knob that removes them."""
    if not params.throttle and replay_ratio > 2:
        probe.warn(
            f"replay ratio {replay_ratio:.1f} without throttle: learners trained as fast as they could and "
            "took CPU from the actor; throttle=true trains once per batch_size new transitions"
        )
    wait_cpu, cpu = float(table[:, WAIT_CPU_S].sum()), float(table[:, CPU_S].sum())
    if params.wait == "poll" and cpu > 0 and wait_cpu > 0.1 * cpu:
        probe.warn(
            f"learners burned {wait_cpu:.2f} s of CPU polling for data ({wait_cpu / cpu:.0%} of their CPU); "
            "wait=event blocks until the actor writes"
        )
