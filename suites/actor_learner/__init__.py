"""Actor-learner: several DQN agents on CartPole-v1, one actor, one learner per agent.

The actor steps every agent's environment and writes transitions into per-agent replay
ring buffers in shared memory; learner processes sample them, train, and publish
weights back through shared memory with a version. Knobs reproduce the classic
failures (a small buffer, learners polling an empty buffer every 1 ms, publishing every
10 steps, training unthrottled) and their fixes. Torch is imported only inside `run`.
"""

from __future__ import annotations

from typing import Any

from harness.probe import Move, Probe, Quality, Rate, Resources, Suite, Vocabulary
from suites.actor_learner.params import Params


def run(params: Params, probe: Probe) -> None:
    from suites.actor_learner.driver import run_actor_learner

    run_actor_learner(params, probe)


def resources(params: Any) -> Resources:
    cpus = 1 if params.backend == "sequential" else params.agents + 1
    return Resources(cpus=cpus, gpus=1 if params.device == "cuda" else 0)


VOCABULARY = Vocabulary(
    rates=(Rate("env_steps"), Rate("updates")),
    workers="agents",
    quality=(Quality("mean_return", "higher"),),
    metrics={"work_wall_s": "lower", "train_return_mean": "higher"},
    report=("mean_return",),
    signals={"reuse_ratio": "replay_ratio", "consumer_cpu_s": "learner_cpu_s", "producer_cpu_s": "main_cpu_s"},
    remedies={
        "busy_wait.poll": "block until the actor writes instead of polling (wait=event)",
        "busy_wait.publish": "publish less often (a larger publish_interval) or publish only what changed",
        "busy_wait.spin": "train only as new data arrives (throttle=true) so the actor keeps its CPU",
    },
    # harness tune: what relieves a limit (the main process is the actor, the workers its learners)
    relieves={
        "busy_wait.poll": (Move("wait", "event"), Move("wait", "mp_event")),
        "busy_wait.publish": (Move("publish_interval", "up"),),
        "busy_wait.spin": (Move("throttle", True),),
        "main": (Move("publish_interval", "up"), Move("throttle", True), Move("buffer_capacity", "up")),
        "workers": (Move("batch_size", "up"), Move("wait", "event")),
    },
)

SUITE = Suite(
    name="actor_learner",
    description="multi-agent DQN on CartPole: shared replay rings, weight publishing, wait strategies",
    params=Params,
    run=run,
    resources=resources,
    vocabulary=VOCABULARY,
    requires=("gymnasium", "torch"),
    extra="actor_learner",
)

__all__ = ["SUITE", "Params", "run"]
