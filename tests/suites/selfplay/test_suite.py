"""The suite end to end through the probe: every backend, batching, devices, accounting."""

import pytest
import torch
from pydantic import ValidationError

from harness.probe import Probe, SuiteError
from suites.selfplay import SUITE, Params
from suites.selfplay.driver import check_devices

TINY = {"blocks": 1, "channels": 8, "simulations": 8, "leaves": 4}


def run(probe: Probe, **params) -> dict:
    SUITE.run(SUITE.params(**params), probe)
    return probe.finish()


def assert_valid_games(metrics: dict, games: int) -> None:
    assert metrics["games"] == games
    assert metrics["first_player_wins"] + metrics["second_player_wins"] + metrics["draws"] == games
    assert 7 * games <= metrics["moves"] <= 42 * games
    assert metrics["nn_evals"] >= metrics["moves"]
    assert metrics["worker_devices"] == ["cpu"]
    assert metrics["net_params"] > 0
    assert metrics["batch_mean"] > 0


@pytest.mark.parametrize("backend", ["sequential", "threads", "processes", "server"])
def test_every_backend_finishes_games(backend):
    metrics = run(Probe(target_work=3), backend=backend, workers=2, **TINY)
    assert_valid_games(metrics, 3)
    assert metrics["work_requested"] == metrics["work_done"] == 3
    if backend == "server":
        assert metrics["workers_with_torch"] == 0  # server workers stay torch-free
        assert metrics["wait_ms_count"] > 0


@pytest.mark.slow
def test_server_fills_batches_from_many_workers():
    # a count, not a time: the generous timeout means batches fire when full or when every
    # worker is waiting, so the mean depends on how many leaves each search step finds
    params = {**TINY, "simulations": 64, "leaves": 8}
    probe = Probe(duration_s=1.0, warmup_s=0.3)
    metrics = run(probe, backend="server", workers=8, max_batch=64, timeout_ms=1000, **params)
    assert metrics["batch_mean"] >= 0.8 * 64, metrics["batch_hist"]
    assert metrics["batch_max"] <= 64
    assert metrics["nn_evals"] > 0 and metrics["worker_devices"] == ["cpu"]


def test_duration_mode_reports_rates():
    metrics = run(Probe(duration_s=0.6, warmup_s=0.1), backend="threads", workers=2, **TINY)
    assert metrics["moves_per_s"] > 0 and metrics["nn_evals_per_s"] > 0
    assert "games_per_s" in metrics
    assert metrics["first_player_wins"] + metrics["second_player_wins"] + metrics["draws"] == metrics["games"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is present here")
@pytest.mark.parametrize("backend", ["sequential", "processes", "server"])
def test_cuda_without_cuda_is_a_suite_error(backend):
    with pytest.raises(SuiteError, match="device=cuda.*use device=cpu or device=auto"):
        SUITE.run(SUITE.params(backend=backend, device="cuda", **TINY), Probe(target_work=1))


def test_nets_on_the_wrong_device_fail_loudly():
    check_devices("cpu", torch.device("cpu"), {"cpu"}, "processes")
    with pytest.raises(SuiteError, match="nets ran on cpu"):
        check_devices("cuda", torch.device("cuda"), {"cuda:0", "cpu"}, "processes")


def test_params_parse_strings_and_reject_unknown_keys():
    params = Params(**{"workers": "4", "timeout_ms": "2.5", "backend": "threads"})
    assert params.workers == 4 and params.timeout_ms == 2.5
    with pytest.raises(ValidationError):
        Params(backend="ray-nope")
    with pytest.raises(ValidationError):
        Params(bogus=1)


def test_resources_count_the_server_process():
    assert SUITE.resources_for(Params(backend="server", workers=8)).cpus == 9
    assert SUITE.resources_for(Params(backend="processes", workers=8)).cpus == 8
    assert SUITE.resources_for(Params(backend="sequential", workers=8)).cpus == 1


def test_cuda_nets_are_never_forked():
    from suites.selfplay.backends.processes import net_worker_start_method
    from suites.selfplay.net import NetConfig
    from suites.selfplay.server import InferenceServer

    assert net_worker_start_method(torch.device("cuda")) == "spawn"
    assert net_worker_start_method(torch.device("cpu")) == "fork"
    common = {"clients": 1, "leaves": 1, "net_config": NetConfig(0, 1), "state_dict": {}, "max_batch": 1}
    assert InferenceServer(device="cuda", timeout_ms=1, **common).start_method == "spawn"
    assert InferenceServer(device="cpu", timeout_ms=1, torch_threads=2, **common).start_method == "spawn"
    assert InferenceServer(device="cpu", timeout_ms=1, torch_threads=1, **common).start_method == "fork"


def test_no_process_outlives_a_server_run():
    import psutil

    run(Probe(target_work=1), backend="server", workers=2, **TINY)
    children = psutil.Process().children(recursive=True)
    # multiprocessing's resource tracker is shared by the whole interpreter; nothing else may stay
    leftovers = [p for p in children if "resource_tracker" not in " ".join(p.cmdline())]
    assert leftovers == []


def test_moves_of_finished_games_give_the_mean_game_length():
    probe = Probe(target_work=6, rates=SUITE.words.rates)
    metrics = run(probe, backend="threads", workers=2, **TINY)
    assert 7 * 6 <= metrics["moves_in_games"] <= metrics["moves"] <= 42 * 6
    assert "games_length_mean" not in metrics  # fewer than 10 games: too few to trust a mean length
    probe = Probe(target_work=12, rates=SUITE.words.rates)
    metrics = run(probe, backend="threads", workers=2, **TINY)
    assert metrics["games_length_mean"] == metrics["moves_in_games"] / 12
    assert metrics["games_per_s"] == pytest.approx(metrics["moves_per_s"] / metrics["games_length_mean"])
