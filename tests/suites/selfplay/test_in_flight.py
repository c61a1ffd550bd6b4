"""Several games in flight per worker, the server's knobs, and what a server cell records."""

import os
import time

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from harness.probe import Probe
from suites.selfplay import Params
from suites.selfplay.backends.server import server_threads
from suites.selfplay.connect4 import Board, encode
from suites.selfplay.local import LocalEvaluator
from suites.selfplay.mcts import SearchConfig
from suites.selfplay.net import NetConfig, build_net
from suites.selfplay.play import GAMES, MOVES, NN_EVALS, TALLY_WIDTH, PlayConfig, play_games, play_games_in_flight
from suites.selfplay.staging import StagedForward
from tests.suites.selfplay.test_mcts import UniformEvaluator
from tests.suites.selfplay.test_suite import TINY, assert_valid_games, run

CONFIG = PlayConfig(search=SearchConfig(simulations=8, leaves=4))


class Lane:
    """A lane that answers at collect time, and remembers what it was asked."""

    def __init__(self):
        self.evaluator = UniformEvaluator()
        self.pending: np.ndarray | None = None
        self.closed = 0

    def submit(self, planes):
        assert self.pending is None, "a lane holds one request at a time"
        self.pending = planes

    def collect(self):
        planes, self.pending = self.pending, None
        return self.evaluator.evaluate(planes)

    def close(self):
        self.closed += 1


def test_one_lane_plays_the_same_games_as_the_plain_loop():
    plain, lane = np.zeros(TALLY_WIDTH, np.int64), np.zeros(TALLY_WIDTH, np.int64)
    play_games(UniformEvaluator(), CONFIG, 7, plain, lambda: False, games=3)
    play_games_in_flight([Lane()], CONFIG, 7, lane, lambda: False, games=3)
    assert plain.tolist() == lane.tolist()


@pytest.mark.parametrize(("lanes", "games"), [(3, 7), (4, 2), (2, 2)])
def test_lanes_finish_exactly_the_games_asked_and_close(lanes, games):
    tally = np.zeros(TALLY_WIDTH, np.int64)
    pool = [Lane() for _ in range(lanes)]
    assert play_games_in_flight(pool, CONFIG, 1, tally, lambda: False, games=games) == games
    assert tally[GAMES] == games and 7 * games <= tally[MOVES] <= 42 * games and tally[NN_EVALS] >= tally[MOVES]
    assert all(lane.closed == 1 and lane.pending is None for lane in pool)


def test_lanes_stop_when_told():
    calls = iter(range(10**6))
    tally = np.zeros(TALLY_WIDTH, np.int64)
    finished = play_games_in_flight([Lane(), Lane()], CONFIG, 1, tally, lambda: next(calls) > 30)
    assert finished == tally[GAMES] and tally[MOVES] > 0


def test_staged_forward_answers_what_the_local_net_answers():
    net = build_net(NetConfig(blocks=1, channels=8), seed=2)
    local = LocalEvaluator(net, torch.device("cpu"))
    staged = StagedForward(net, torch.device("cpu"), capacity=4)
    planes = encode([Board.from_moves(m) for m in ("", "3", "33", "012")])
    staged.inputs[:4] = planes
    out = staged.forward(4)
    priors, values = local.evaluate(planes)
    np.testing.assert_allclose(out[:, :7], priors, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[:, 7], values, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="holds 1..4"):
        staged.forward(5)
    assert staged.rate(2, 0.05) > 0


def test_server_knobs_are_validated():
    params = Params(games_per_worker="4", gather="first", inflight="2", server_threads="0")
    assert (params.games_per_worker, params.gather, params.inflight, params.server_threads) == (4, "first", 2, 0)
    for bad in ({"games_per_worker": 0}, {"gather": "soon"}, {"inflight": 0}, {"server_threads": -1}):
        with pytest.raises(ValidationError):
            Params(**bad)


def test_server_threads_are_the_cores_the_workers_leave():
    assert server_threads(3, workers=8, inflight=1, cores=2) == 3  # asked for
    assert server_threads(0, workers=8, inflight=1, cores=2) == 1  # at least one
    assert server_threads(0, workers=4, inflight=2, cores=16) == 6
    assert server_threads(0, workers=1, inflight=1, cores=1) == 1


@pytest.mark.parametrize(
    "knobs",
    [
        {"games_per_worker": 3, "inflight": 2, "gather": "first"},
        {"games_per_worker": 2, "inflight": 2, "gather": "share"},
        {"games_per_worker": 2, "inflight": 1, "gather": "full", "server_threads": 2},  # a spawned server
    ],
)
@pytest.mark.slow
def test_a_server_cell_with_games_in_flight_accounts_every_game(knobs):
    metrics = run(Probe(target_work=5), backend="server", workers=2, **TINY, **knobs)
    assert_valid_games(metrics, 5)
    assert metrics["server_threads_used"] == knobs.get("server_threads", 1)
    assert metrics["server_start_method"] == ("spawn" if knobs.get("server_threads", 1) > 1 else "fork")
    assert metrics["work_requested"] == metrics["work_done"] == 5
    assert metrics["workers_with_torch"] == 0


@pytest.mark.slow
def test_a_server_cell_records_its_idle_shares_and_efficiency():
    metrics = run(Probe(duration_s=0.8, warmup_s=0.2), backend="server", workers=2, games_per_worker=2, **TINY)
    assert 0 <= metrics["server_idle_share"] <= 1 and 0 <= metrics["client_wait_share"] <= 1
    assert metrics["server_cpu_pct"] > 0 and metrics["workers_cpu_pct"] > 0
    assert 0 < metrics["server_compute_pct"] <= 100 * Params().inflight * 1.01
    assert metrics["server_batch_slots"] == Params().inflight
    assert 0 < metrics["server_batches_computing"] <= Params().inflight * 1.01
    assert metrics["roofline_evals_per_s_at_batch"] > 0 and metrics["server_efficiency_pct"] > 0
    assert metrics["server_threads_used"] >= 1


@pytest.mark.parametrize(
    ("gather", "fires_at"),
    [("full", 4), ("deadline", 4), ("share", 2), ("first", 1)],
)
def test_gather_rules_fire_at_their_share_of_the_waiting_clients(gather, fires_at):
    """Four playing clients, two compute threads, nothing full and no deadline passed: `full`
    and `deadline` wait for all four, `share` for half of them (one thread's share), `first`
    for one."""
    import multiprocessing

    from suites.selfplay.channel import Channel
    from suites.selfplay.server import _Server

    channel = Channel(multiprocessing.get_context("spawn"), clients=4, leaves=1)
    server = _Server(channel, forwards=[None, None], max_batch=64, timeout_ms=60_000.0, gather=gather)
    try:
        counts, sent_at = channel.views()["counts"], channel.views()["sent_at"]
        counts[:] = 1
        sent_at[:] = time.monotonic()
        server.active.update(range(4))  # every client has been seen
        fired_at = None
        for waiting, slot in enumerate(range(4), start=1):
            server._receive(slot)
            if fired_at is None and server._due(stopping=False):
                fired_at = waiting
        assert fired_at == fires_at
    finally:
        os.close(server.wake_r)
        os.close(server.wake_w)
