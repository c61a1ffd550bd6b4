"""Entry points of worker processes, and what they share with the main process.

Importing this module must stay cheap: workers behind the inference server run
`client_worker` and never import torch (128 of them must fit in memory); only
`net_worker` (processes backend) imports torch, inside the function.

A worker writes its tally row (games, moves, evals, results, then a histogram of the
batch sizes it evaluated) in shared memory and checks a shared stop flag between search
steps; it sends one `hello` message when ready, waits until every worker is (so that
starting 128 processes is not slowed down by the first ones already playing), and sends
one `done` or `error` at the end.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from suites.selfplay.mcts import Evaluator
from suites.selfplay.play import TALLY_WIDTH, PlayConfig, play_games, play_games_in_flight

CPU_S, WAIT_S = range(2)  # columns of a worker's clocks row
CLOCK_WIDTH = 2


class Shared:
    """Tally rows (one per worker) and the stop flag, in shared memory from `ctx`."""

    def __init__(self, ctx: Any, workers: int, leaves: int):
        self.workers = workers
        self.width = TALLY_WIDTH + leaves + 1
        self._tally = ctx.RawArray("q", workers * self.width)
        self._stop = ctx.RawArray("i", 1)
        self._clocks = ctx.RawArray("d", workers * CLOCK_WIDTH)
        self._go = ctx.Event()  # set once every worker is up: nobody plays while others start
        self._views: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_views"] = None
        return state

    def _bind(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._views is None:
            tally = np.frombuffer(self._tally, dtype=np.int64).reshape(self.workers, self.width)
            clocks = np.frombuffer(self._clocks, dtype=np.float64).reshape(self.workers, CLOCK_WIDTH)
            self._views = (tally, np.frombuffer(self._stop, dtype=np.int32), clocks)
        return self._views

    @property
    def clocks(self) -> np.ndarray:
        """Per worker: CPU seconds and seconds blocked waiting for replies, so far (CPU_S, WAIT_S)."""
        return self._bind()[2]

    def stop_check(self, slot: int, waited: Callable[[], float] = lambda: 0.0) -> Callable[[], bool]:
        """The worker's stop check, called between search steps; it also publishes the
        worker's clocks, so the main process can tell searching from waiting."""
        clock = self.clocks[slot]
        stop = self._bind()[1]

        def should_stop() -> bool:
            clock[CPU_S] = time.process_time()
            clock[WAIT_S] = waited()
            return bool(stop[0])

        return should_stop

    @property
    def tally(self) -> np.ndarray:
        return self._bind()[0]

    def should_stop(self) -> bool:
        return bool(self._bind()[1][0])

    def request_stop(self) -> None:
        self._bind()[1][0] = 1
        self._go.set()  # release workers still waiting to start

    def go(self) -> None:
        self._go.set()

    def wait_go(self) -> None:
        self._go.wait()


class CountingEvaluator:
    """Counts the size of every batch it evaluates into a histogram row."""

    def __init__(self, inner: Evaluator, hist: np.ndarray):
        self.inner = inner
        self.hist = hist

    def evaluate(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = planes.shape[0]
        self.hist[min(n, self.hist.shape[0] - 1)] += 1
        return self.inner.evaluate(planes)


def run_worker(
    slot: int,
    evaluator: Evaluator,
    config: PlayConfig,
    seed: int,
    games: int | None,
    shared: Shared,
    should_stop: Callable[[], bool] | None = None,
) -> int:
    """Play in this thread or process; returns games finished."""
    row = shared.tally[slot]
    counting = CountingEvaluator(evaluator, row[TALLY_WIDTH:])
    return play_games(counting, config, seed, row, should_stop or shared.stop_check(slot), games)


def client_worker(
    slot: int, lanes: list[Any], config: PlayConfig, seed: int, games: int | None, shared: Shared, messages: Any
) -> None:
    """Server backend: evaluations go to the inference server through `lanes` (one channel
    slot per game in flight; several lanes let the worker search while the server computes)."""
    try:
        messages.put(("hello", slot, {"pid": os.getpid(), "torch_loaded": "torch" in sys.modules}))
        shared.wait_go()
        should_stop = shared.stop_check(slot, lambda: sum(lane.waited_s for lane in lanes))
        try:
            if len(lanes) == 1:
                finished = run_worker(slot, lanes[0], config, seed, games, shared, should_stop)
            else:
                finished = play_games_in_flight(lanes, config, seed, shared.tally[slot], should_stop, games)
        finally:
            for lane in lanes:
                lane.close()
        messages.put(("done", slot, finished))
    except BaseException:
        messages.put(("error", slot, traceback.format_exc()))
        raise


def net_worker(
    slot: int,
    net_config: Any,
    state_dict: dict,
    device: str,
    config: PlayConfig,
    seed: int,
    games: int | None,
    shared: Shared,
    messages: Any,
) -> None:
    """Processes backend: the worker builds its own net from the state dict on `device`."""
    try:
        import torch

        # one intra-op thread per worker: many workers share the cores, and a forked child
        # must not touch an OpenMP pool its parent started (libgomp hangs)
        torch.set_num_threads(1)
        from suites.selfplay.local import LocalEvaluator

        evaluator = LocalEvaluator.build(net_config, torch.device(device), state_dict=state_dict)
        messages.put(("hello", slot, {"pid": os.getpid(), "device": evaluator.net_device}))
        shared.wait_go()
        finished = run_worker(slot, evaluator, config, seed, games, shared)
        messages.put(("done", slot, finished))
    except BaseException:
        messages.put(("error", slot, traceback.format_exc()))
        raise


def request_worker(
    slot: int, client: Any, planes: np.ndarray, repeats: int, out: Any, barrier: Any = None, warmup: int = 3
) -> None:
    """A client that only sends requests: `repeats` times the same planes, then puts
    (slot, last priors, last values, seconds, cpu seconds) on `out`. The server's transport without any
    search in the way (tests, benchmarks/selfplay_transport.py). With a `barrier`, it sends
    `warmup` requests, waits for every other client, and only then starts its clock."""
    import time

    try:
        priors = values = None
        if barrier is not None:
            for _ in range(warmup):
                client.evaluate(planes)
            barrier.wait()
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(repeats):
            priors, values = client.evaluate(planes)
        out.put((slot, priors, values, time.perf_counter() - start, time.process_time() - cpu_start))
    finally:
        client.close()
