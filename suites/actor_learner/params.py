"""The actor-learner suite's knobs (no heavy imports: the harness lists suites cheaply)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from suites.actor_learner.backends import BACKENDS


class Params(BaseModel):
    """Defaults are the tuned processes configuration; `docs/benchmarks.md` compares it with
    the naive one (buffer 1024, publish 10, poll, no throttle) and with sequential."""

    model_config = ConfigDict(extra="forbid")

    backend: BACKENDS.field(
        "processes",
        "sequential: one process alternates collecting and training; processes: the "
        "main process acts for every agent, one learner process per agent",
    )
    agents: int = Field(5, ge=1, le=64, description="independent DQN agents, one CartPole-v1 each")
    epochs: int = Field(
        1000,
        ge=1,
        description="collection rounds of the fixed work (epochs x turns x agents env steps); "
        "ignored in duration mode and when the harness sets a work target",
    )
    turns: int = Field(50, ge=1, description="env steps per agent per epoch", json_schema_extra={"unit": "steps"})
    buffer_capacity: int = Field(
        10000,
        ge=1,
        description="replay ring buffer size per agent",
        json_schema_extra={"unit": "transitions"},
    )
    batch_size: int = Field(
        64, ge=1, description="transitions per training step", json_schema_extra={"unit": "transitions"}
    )
    publish_interval: int = Field(
        50,
        ge=1,
        description="a learner publishes its weights to the actor every this many training steps",
        json_schema_extra={"unit": "updates"},
    )
    wait: Literal["poll", "event", "mp_event"] = Field(
        "event",
        description="how a learner waits for data: poll (sleep 1 ms and retry); event (block until "
        "the actor rings after each write: a semaphore, so ringing never blocks the actor); "
        "mp_event (block on a multiprocessing.Event, whose set() waits until every sleeping "
        "learner has woken: the pitfall, kept to measure it); processes backend only",
    )
    throttle: bool = Field(
        True,
        description="processes backend: train only once batch_size new transitions arrived per step "
        "(replay ratio <= 1); off: train as fast as the learner can once the buffer holds a batch",
    )
    placement: Literal["actor_core", "shared"] = Field(
        "actor_core",
        description="processes backend: actor_core gives the actor (the critical path: it steps every "
        "agent's environment) a core of its own and the learners the other cores; shared leaves "
        "placement to the OS scheduler, which time-slices the actor with the learners",
    )
    device: Literal["cpu", "cuda"] = Field("cpu", description="where learners train (the actor acts on the CPU)")
    seed: int = Field(0, description="seeds environments, networks, exploration and sampling")
    hidden: int = Field(64, ge=1, le=4096, description="hidden units of the two-layer Q network")
    lr: float = Field(1e-3, gt=0, description="Adam learning rate")
    gamma: float = Field(0.99, ge=0, le=1, description="discount factor")
    target_interval: int = Field(
        100,
        ge=1,
        description="training steps between target-network syncs",
        json_schema_extra={"unit": "updates"},
    )
    epsilon_decay_steps: int = Field(
        10000,
        ge=1,
        description="env steps per agent over which exploration decays linearly from 1 to epsilon_end",
        json_schema_extra={"unit": "steps"},
    )
    epsilon_end: float = Field(0.05, ge=0, le=1, description="final exploration rate")
    eval_episodes: int = Field(5, ge=0, description="greedy episodes per agent at the end, for mean_return (0: skip)")
    start_method: Literal["auto", "fork", "forkserver", "spawn"] = Field(
        "auto",
        description="how learner processes start; auto: fork on cpu (shares torch pages), spawn on cuda",
    )

    @model_validator(mode="after")
    def _batch_fits(self) -> Params:
        if self.batch_size > self.buffer_capacity:
            raise ValueError(
                f"batch_size ({self.batch_size}) must be <= buffer_capacity ({self.buffer_capacity}): "
                "a learner could never sample a full batch"
            )
        return self
