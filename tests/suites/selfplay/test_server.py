"""The inference server answers what the net in this process answers, however many clients ask."""

import multiprocessing

import numpy as np
import pytest
import torch

from suites.selfplay.connect4 import Board, encode
from suites.selfplay.launch import light_main
from suites.selfplay.local import LocalEvaluator
from suites.selfplay.net import NetConfig, build_net, portable_state
from suites.selfplay.server import InferenceServer
from suites.selfplay.workers import request_worker

LEAVES = 4
NET = NetConfig(blocks=1, channels=8)


@pytest.fixture(scope="module")
def net():
    return build_net(NET, seed=3)


@pytest.fixture(scope="module")
def server(net):
    with InferenceServer(
        clients=8,
        leaves=LEAVES,
        net_config=NET,
        state_dict=portable_state(net),
        device="cpu",
        max_batch=16,
        timeout_ms=20.0,
    ) as server:
        server.start()
        server.measure()
        yield server
        stats = server.stop()
        # requests from several clients shared batches, and every batch respected max_batch
        sizes = [int(size) for size in stats["batch_hist"]]
        assert max(sizes) > LEAVES and max(sizes) <= 16
        assert len(stats["waits_ms"]) > 0 and np.all(stats["waits_ms"] >= 0)


def positions(seed: int) -> np.ndarray:
    """1..LEAVES real positions from a random game."""
    rng = np.random.default_rng(seed)
    boards, board = [], Board()
    for _ in range(int(rng.integers(1, LEAVES + 1))):
        board = board.play(int(rng.choice(board.legal_moves())))
        boards.append(board)
    return encode(boards)


@pytest.mark.parametrize("clients", [1, 3, 8])
def test_server_answers_equal_local_answers(server, net, clients):
    local = LocalEvaluator(net, torch.device("cpu"))
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["suites.selfplay.workers"])
    out = ctx.Queue()
    inputs = {slot: positions(100 * clients + slot) for slot in range(clients)}
    processes = [
        ctx.Process(target=request_worker, args=(slot, server.client(slot), inputs[slot], 5, out))
        for slot in range(clients)
    ]
    try:
        with light_main():
            for process in processes:
                process.start()
        answers = [out.get(timeout=120) for _ in processes]
    finally:
        for process in processes:
            process.join(10)
            if process.is_alive():
                process.terminate()
    assert all(process.exitcode == 0 for process in processes)
    for slot, priors, values, *_seconds in answers:
        want_priors, want_values = local.evaluate(inputs[slot])
        assert priors.shape == want_priors.shape and values.shape == want_values.shape
        np.testing.assert_allclose(priors, want_priors, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(values, want_values, rtol=1e-4, atol=1e-6)
