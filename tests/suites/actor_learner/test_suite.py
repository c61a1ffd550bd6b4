"""The suite end to end through the probe: work accounting, learning, knobs and errors."""

from __future__ import annotations

import multiprocessing as mp
import os

import pydantic
import pytest

from harness.probe import Probe, SuiteError
from suites.actor_learner import SUITE, Params
from suites.actor_learner.actor import evaluate

TINY = dict(agents=3, epochs=6, turns=7, buffer_capacity=32, batch_size=8, hidden=8, eval_episodes=1)


def run(probe: Probe, **params: object) -> dict:
    SUITE.run(SUITE.params(**params), probe)
    return probe.finish()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sequential", "processes"])
def test_env_steps_done_equal_epochs_x_turns_x_agents(backend: str) -> None:
    metrics = run(Probe(), backend=backend, publish_interval=2, **TINY)
    assert metrics["work_requested"] == metrics["work_done"] == metrics["env_steps"] == 6 * 7 * 3
    assert metrics["updates"] > 0
    assert metrics["publishes"] > 0
    assert 0 <= metrics["policy_lag_min"] <= metrics["policy_lag_mean"] <= metrics["policy_lag_max"]
    assert metrics["mean_return"] > 0
    assert mp.active_children() == []


@pytest.mark.parametrize("backend", ["sequential", "processes"])
def test_a_work_target_is_split_over_agents_without_losing_steps(backend: str) -> None:
    metrics = run(Probe(target_work=101), backend=backend, **TINY)
    assert metrics["work_requested"] == metrics["work_done"] == metrics["env_steps"] == 101


def test_throttled_learners_train_at_most_once_per_batch_of_new_transitions() -> None:
    metrics = run(Probe(), backend="processes", wait="poll", throttle=True, **TINY)
    assert 0 < metrics["replay_ratio"] <= 1.0
    assert metrics["updates"] <= metrics["env_steps"] // TINY["batch_size"]
    # No `wait_s > 0` here: the tiny actor may finish before a learner first looks for data,
    # and a learner behind the actor never waits; the ratio checks above are what throttling
    # guarantees. Waiting itself is held to its CPU cost by the BUSY_WAIT tests.
    assert metrics["wait_s"] >= 0 and metrics["learner_wait_cpu_s"] >= 0


@pytest.mark.slow
def test_duration_mode_runs_until_told_to_stop_and_requests_what_it_did() -> None:
    metrics = run(Probe(duration_s=0.3), backend="processes", **{**TINY, "epochs": 1})
    assert metrics["env_steps"] > 6 * 3  # more than the single epoch the params name
    assert metrics["work_requested"] == metrics["work_done"] == metrics["env_steps"]


@pytest.mark.slow
def test_a_short_seeded_sequential_run_beats_a_random_policy() -> None:
    metrics = run(
        Probe(),
        backend="sequential",
        agents=1,
        epochs=800,
        turns=2,
        batch_size=32,
        lr=0.002,
        target_interval=50,
        publish_interval=1,
        epsilon_decay_steps=1000,
        eval_episodes=10,
        seed=0,
    )
    random_return = evaluate(None, agents=1, episodes=10, seed=0)  # CartPole: ~22
    assert random_return < 30
    assert metrics["mean_return"] > 2 * random_return


def test_params_coerce_cli_strings_and_refuse_bad_combinations() -> None:
    params = Params.model_validate({"throttle": "false", "batch_size": "16", "wait": "poll"})
    assert params.throttle is False and params.batch_size == 16
    with pytest.raises(pydantic.ValidationError, match="buffer_capacity"):
        Params(batch_size=128, buffer_capacity=64)
    with pytest.raises(pydantic.ValidationError):
        Params(wait="spin")
    with pytest.raises(pydantic.ValidationError):
        Params(learners=3)
    assert SUITE.resources_for(Params(agents=4)).cpus == 5
    assert SUITE.resources_for(Params(backend="sequential")).cpus == 1


def test_a_crashing_learner_fails_the_run_and_leaves_no_process_behind(monkeypatch) -> None:
    from suites.actor_learner import learner

    def broken_step(self) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(learner.Trainer, "step", broken_step)  # forked learners inherit it
    with pytest.raises(RuntimeError, match="learner"):
        SUITE.run(Params(backend="processes", **{**TINY, "epochs": 10_000}), Probe())
    assert mp.active_children() == []


def test_cuda_without_a_gpu_is_a_suite_error() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(SuiteError, match="device=cuda"):
        SUITE.run(Params(device="cuda", **TINY), Probe())


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="placement needs two cores")
def test_actor_core_placement_splits_the_cores_and_gives_them_back() -> None:
    before = os.sched_getaffinity(0)
    metrics = run(Probe(), backend="processes", placement="actor_core", **TINY)
    cores = sorted(before)
    assert metrics["actor_cores"] == str(cores[0])
    assert metrics["learner_cores"] == ",".join(map(str, cores[1:]))
    assert os.sched_getaffinity(0) == before
    shared = run(Probe(), backend="processes", placement="shared", **TINY)
    assert "actor_cores" not in shared


@pytest.mark.parametrize("wait", ["event", "mp_event"])
def test_the_actor_times_waking_the_learners(wait: str) -> None:
    # how many steps the learners get to train before a run this small ends is a race
    # (they may still be starting); what the actor spent ringing them is not
    metrics = run(Probe(), backend="processes", wait=wait, throttle=True, **TINY)
    assert metrics["work_done"] == metrics["work_requested"] == 6 * 7 * 3
    assert metrics["replay_ratio"] <= 1.0
    assert 0 <= metrics["wake_s"] <= metrics["work_wall_s"]
    assert 0 <= metrics["wake_share"] <= 1


def test_a_doorbell_rung_before_the_wait_is_not_lost() -> None:
    from suites.actor_learner.doorbell import Doorbell

    bell = Doorbell(mp.get_context("fork"))
    assert bell.wait(0.01) is False
    bell.ring()
    bell.ring()
    assert bell.wait(0.01) is True  # rung while the waiter was busy: returns at once
    assert bell.wait(0.01) is False  # and the piled-up rings were swallowed


def test_an_event_bell_rechecks_readiness_after_clearing() -> None:
    from suites.actor_learner.doorbell import EventBell

    bell = EventBell(mp.get_context("fork"))
    bell.ring()
    # a ring before the wait is cleared, so only the re-check of readiness can return at once
    assert bell.wait(0.01, lambda: True) is True
    bell.ring()
    assert bell.wait(0.01, lambda: False) is False


@pytest.mark.parametrize("backend", ["sequential", "processes"])
def test_a_return_target_is_checked_with_learners_held_still(backend: str) -> None:
    from harness.cell.targets import Target

    probe = Probe(duration_s=30, target=Target.parse("mean_return>=9"), target_every_s=0.1, rates=SUITE.words.rates)
    metrics = run(probe, backend=backend, **{**TINY, "epochs": 1})
    assert metrics["target_reached"] == 1 and metrics["quality_checks"] >= 1  # random play scores ~20
    assert metrics["time_to_target_s"] == pytest.approx(metrics["measure_s"]) and metrics["quality_eval_s"] > 0


def test_a_quality_check_pauses_the_learners_around_the_evaluation() -> None:
    from harness.cell.targets import Target
    from suites.actor_learner.backends.plumbing import check_quality

    calls = []

    class Actor:
        agents, policy = 1, None

        def refresh(self) -> None:
            calls.append("evaluate")

    probe = Probe(duration_s=5, target=Target.parse("mean_return>=1000"))
    probe.phase("measure")
    check_quality(SUITE.params(**TINY), Actor(), probe, calls.append)
    assert calls == [True, "evaluate", False] and probe.finish()["quality_checks"] == 1
