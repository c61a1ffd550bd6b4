"""The suite's main process: one function per backend, chosen through `BACKENDS`.

Every backend plays games with the same code (`play.play_games`) and differs only in where
the games run and where the net runs. Workers write tallies into shared rows; the main
process alone talks to the probe: it turns tally deltas into counters, snapshots the batch
histograms when the measured window opens and closes, checks which device every net is
on, and stops and reaps every worker in a `finally:`. The ray backend lives in
`ray_backend.py` (Ray is an optional extra).
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from harness.probe import Probe, SuiteError, resolve_workers, split_work
from suites.selfplay.launch import light_main, stop_forkserver
from suites.selfplay.local import LocalEvaluator, resolve_device
from suites.selfplay.mcts import SearchConfig
from suites.selfplay.net import NetConfig, build_net, parameter_count, portable_state
from suites.selfplay.play import (
    DRAWS,
    FIRST_WINS,
    GAMES,
    MOVES,
    NN_EVALS,
    SECOND_WINS,
    TALLY_WIDTH,
    PlayConfig,
)
from suites.selfplay.workers import Shared, client_worker, net_worker, run_worker

_POLL_S = 0.05
_START_TIMEOUT_S = 600.0  # 128 spawned workers on 2 busy cores take a while
_JOIN_TIMEOUT_S = 60.0


@dataclass
class Context:
    """What a backend gets: the knobs, the probe, the resolved device and the net."""

    params: Any
    probe: Probe
    device: torch.device
    net_config: NetConfig
    play_config: PlayConfig
    net: torch.nn.Module
    shares: list[int | None]  # games per worker (None: until told to stop)
    started: float  # perf_counter when run began

    def workers_up(self) -> None:
        """Workers are playing: record the start-up time and begin the warm-up."""
        startup = time.perf_counter() - self.started
        self.probe.set("startup_s", round(startup, 3))
        self.probe.log(f"selfplay: {len(self.shares)} {self.params.backend} workers up in {startup:.1f} s")
        self.probe.phase("warmup")

    def seed(self, worker: int) -> int:
        return self.params.seed * 100_003 + worker

    @property
    def leaves(self) -> int:
        return self.params.leaves


Backend = Callable[[Context], set[str]]  # returns the devices the nets ran on


def run_selfplay(params: Any, probe: Probe, started: float | None = None) -> None:
    started = time.perf_counter() if started is None else started
    backend = BACKENDS.get(params.backend)
    if backend is None:
        raise SuiteError(f"backend={params.backend!r}: allowed are {', '.join(sorted(BACKENDS))}")
    device = resolve_device(params.device)
    if params.torch_threads and params.backend in ("sequential", "threads"):
        torch.set_num_threads(params.torch_threads)
    net_config = NetConfig(blocks=params.blocks, channels=params.channels)
    search = SearchConfig(
        simulations=params.simulations,
        leaves=params.leaves,
        c_puct=params.c_puct,
        dirichlet_alpha=params.dirichlet_alpha,
        dirichlet_eps=params.dirichlet_eps,
    )
    play_config = PlayConfig(search=search, temperature_moves=params.temperature_moves)
    net = build_net(net_config, seed=params.seed)
    probe.set("net_params", parameter_count(net))
    workers = 1 if params.backend == "sequential" else resolve_workers(params.workers)
    if probe.target_work is not None:
        shares: list[int | None] = list(split_work(probe.target_work, workers))
        if len(shares) < workers:
            probe.warn(f"{probe.target_work} games over {workers} workers: only {len(shares)} started")
    else:
        shares = [None] * workers
    context = Context(params, probe, device, net_config, play_config, net, shares, started)
    devices = backend(context)
    probe.set("worker_devices", sorted(devices))
    check_devices(params.device, device, devices, params.backend)


def check_devices(asked: str, device: torch.device, devices: set[str], backend: str) -> None:
    """Fail loudly when a net ended up elsewhere than asked (workers that silently built
    their nets on the CPU are a classic)."""
    wrong = sorted(d for d in devices if torch.device(d).type != device.type)
    if wrong:
        raise SuiteError(
            f"device={asked} resolved to {device.type}, but nets ran on {', '.join(wrong)}: "
            f"backend {backend} did not move its nets to the device asked for"
        )


class _Accounting:
    """Tally rows -> probe counters; batch histograms over the measured window only."""

    def __init__(
        self,
        probe: Probe,
        tally: np.ndarray,
        on_measure: Callable[[], None] | None = None,
        on_stop: Callable[[], None] | None = None,
    ):
        self.probe = probe
        self.tally = tally
        self.on_measure = on_measure
        self.on_stop = on_stop
        self.reported = np.zeros(TALLY_WIDTH, dtype=np.int64)
        self.hist_start: np.ndarray | None = None
        self.hist_end: np.ndarray | None = None
        for name in ("games", "moves", "nn_evals"):  # present (and 0) even if no game ends
            probe.count(name, 0)

    def update(self) -> None:
        totals = self.tally.sum(axis=0)
        delta = totals[:TALLY_WIDTH] - self.reported
        for name, column in (("games", GAMES), ("moves", MOVES), ("nn_evals", NN_EVALS)):
            if delta[column]:
                self.probe.count(name, int(delta[column]))
        self.reported += delta
        phase = self.probe.current_phase
        if self.hist_start is None and phase != "warmup":
            # fixed work: the window opened as the workers started, before any batch
            fixed = self.probe.target_work is not None
            self.hist_start = np.zeros_like(totals[TALLY_WIDTH:]) if fixed else totals[TALLY_WIDTH:].copy()
            if self.on_measure is not None:
                self.on_measure()
        if self.hist_end is None and phase == "stopped":
            self.hist_end = totals[TALLY_WIDTH:].copy()
            if self.on_stop is not None:
                self.on_stop()

    def finish(self, observe_batches: bool) -> int:
        """Final counts (trickle after the stop goes to totals only); returns games finished."""
        self.update()
        if observe_batches:
            end = self.hist_end if self.hist_end is not None else self.tally.sum(axis=0)[TALLY_WIDTH:]
            start = self.hist_start if self.hist_start is not None else np.zeros_like(end)
            for size, count in enumerate((end - start).tolist()):
                if size and count:
                    self.probe.observe("batch", size, count)
        self.probe.set("first_player_wins", int(self.reported[FIRST_WINS]))
        self.probe.set("second_player_wins", int(self.reported[SECOND_WINS]))
        self.probe.set("draws", int(self.reported[DRAWS]))
        return int(self.reported[GAMES])

    def report_work(self) -> None:
        if self.probe.target_work is not None:
            self.probe.work(requested=self.probe.target_work, done=int(self.reported[GAMES]))


def _supervise(probe: Probe, accounting: _Accounting, wait: Callable[[float], None], finished: Callable[[], bool]):
    """Main loop: counters and the stop signal every ~50 ms until stopped or all done."""
    while True:
        stop = probe.should_stop()
        if not stop and finished():
            accounting.update()  # the last of the fixed work belongs to the window ...
            probe.stop()  # ... and shutting down counts in no rate
            stop = True
        accounting.update()
        if stop:
            return
        wait(_POLL_S)


# --------------------------------------------------------------------------- sequential
def _sequential(ctx: Context) -> set[str]:
    evaluator = LocalEvaluator(ctx.net, ctx.device)
    shared = Shared(multiprocessing.get_context("fork"), 1, ctx.leaves)  # in-process: no resource tracker
    accounting = _Accounting(ctx.probe, shared.tally)
    last_update = time.perf_counter()

    def should_stop() -> bool:
        nonlocal last_update
        if ctx.probe.should_stop():
            shared.request_stop()
        now = time.perf_counter()
        if now - last_update >= _POLL_S:
            last_update = now
            accounting.update()
        return shared.should_stop()

    ctx.workers_up()
    run_worker(0, evaluator, ctx.play_config, ctx.seed(0), ctx.shares[0], shared, should_stop)
    accounting.update()  # the last games belong to the window, which closes now
    ctx.probe.stop()
    accounting.finish(observe_batches=True)
    accounting.report_work()
    return {evaluator.net_device}


# --------------------------------------------------------------------------- threads
def _threads(ctx: Context) -> set[str]:
    evaluator = LocalEvaluator(ctx.net, ctx.device)  # one net, shared by every thread
    shared = Shared(multiprocessing.get_context("fork"), len(ctx.shares), ctx.leaves)  # in-process too
    accounting = _Accounting(ctx.probe, shared.tally)
    errors: list[BaseException] = []

    def body(slot: int, games: int | None) -> None:
        try:
            run_worker(slot, evaluator, ctx.play_config, ctx.seed(slot), games, shared)
        except BaseException as exc:
            errors.append(exc)
            shared.request_stop()

    threads = [
        threading.Thread(target=body, args=(slot, games), name=f"selfplay-{slot}", daemon=True)
        for slot, games in enumerate(ctx.shares)
    ]
    try:
        for thread in threads:
            thread.start()
        ctx.workers_up()
        _supervise(
            ctx.probe,
            accounting,
            wait=time.sleep,
            finished=lambda: bool(errors) or not any(t.is_alive() for t in threads),
        )
    finally:
        shared.request_stop()
        for thread in threads:
            thread.join()
    if errors:
        raise errors[0]
    accounting.finish(observe_batches=True)
    accounting.report_work()
    return {evaluator.net_device}


# --------------------------------------------------------------------------- processes
def net_worker_start_method(device: torch.device) -> str:
    """fork shares torch's pages with this process (a net per worker would not fit otherwise);
    CUDA cannot be initialised in a forked child, so cuda needs spawn (and each worker then
    owns a CUDA context: the cost this backend exists to measure)."""
    return "spawn" if device.type == "cuda" else "fork"


class _Workers:
    """Worker processes and their message queue: hellos, done, errors; always reaped."""

    def __init__(self, mp_context: Any):
        self.ctx = mp_context
        self.messages = mp_context.Queue()
        self.processes: list[Any] = []
        self.hellos: dict[int, dict[str, Any]] = {}
        self.done: dict[int, int] = {}

    def start(self, target: Callable[..., None], slot: int, *args: Any) -> None:
        process = self.ctx.Process(target=target, args=(slot, *args), name=f"selfplay-{slot}", daemon=True)
        with light_main():
            process.start()
        self.processes.append(process)

    def poll(self, timeout: float) -> None:
        """Take the messages that arrive within `timeout`; raise on a worker's error or death."""
        try:
            kind, slot, payload = self.messages.get(timeout=timeout)
            while True:
                if kind == "error":
                    raise RuntimeError(f"self-play worker {slot} failed:\n{payload}")
                (self.hellos if kind == "hello" else self.done)[slot] = payload
                kind, slot, payload = self.messages.get_nowait()
        except queue.Empty:
            pass
        for slot, process in enumerate(self.processes):
            if process.exitcode not in (None, 0) and slot not in self.done:
                raise RuntimeError(f"self-play worker {slot} died with exit code {process.exitcode}")

    def wait_hellos(self, check: Callable[[], None] | None = None) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while len(self.hellos) < len(self.processes):
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(self.hellos)} of {len(self.processes)} workers started")
            self.poll(_POLL_S)
            if check is not None:
                check()

    def all_exited(self) -> bool:
        return all(p.exitcode is not None for p in self.processes)

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))
        try:
            self.poll(0.0)
        except RuntimeError:
            pass

    def reap(self) -> None:
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        for process in self.processes:
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join()
        self.messages.close()
        self.messages.join_thread()


def _processes(ctx: Context) -> set[str]:
    method = net_worker_start_method(ctx.device)
    mp_context = multiprocessing.get_context(method)
    shared = Shared(mp_context, len(ctx.shares), ctx.leaves)
    accounting = _Accounting(ctx.probe, shared.tally)
    state = portable_state(ctx.net)
    workers = _Workers(mp_context)
    try:
        for slot, games in enumerate(ctx.shares):
            workers.start(
                net_worker,
                slot,
                ctx.net_config,
                state,
                str(ctx.device),
                ctx.play_config,
                ctx.seed(slot),
                games,
                shared,
                workers.messages,
            )
        workers.wait_hellos()
        shared.go()
        ctx.workers_up()
        _supervise(ctx.probe, accounting, workers.poll, workers.all_exited)
        shared.request_stop()
        workers.join(_JOIN_TIMEOUT_S)
    finally:
        shared.request_stop()
        workers.reap()
    accounting.finish(observe_batches=True)
    accounting.report_work()
    ctx.probe.set("worker_start_method", method)
    return {hello["device"] for hello in workers.hellos.values()}


# --------------------------------------------------------------------------- server
def _server(ctx: Context) -> set[str]:
    from suites.selfplay.server import InferenceServer

    params = ctx.params
    # workers need no torch: forkserver children fork from a small server process that has
    # imported only numpy and the worker module, so 128 of them share those pages
    mp_context = multiprocessing.get_context("forkserver")
    mp_context.set_forkserver_preload(["suites.selfplay.workers"])
    shared = Shared(mp_context, len(ctx.shares), ctx.leaves)
    server = InferenceServer(
        clients=len(ctx.shares),
        leaves=ctx.leaves,
        net_config=ctx.net_config,
        state_dict=portable_state(ctx.net),
        device=str(ctx.device),
        max_batch=params.max_batch,
        timeout_ms=params.timeout_ms,
        torch_threads=params.torch_threads,
    )
    accounting = _Accounting(ctx.probe, shared.tally, on_measure=server.measure, on_stop=server.hold)
    workers = _Workers(mp_context)
    try:
        info = server.start(_START_TIMEOUT_S)
        ctx.probe.log(
            f"selfplay: inference server up ({server.start_method}, {info['device']}) "
            f"after {time.perf_counter() - ctx.started:.1f} s"
        )
        for slot, games in enumerate(ctx.shares):
            workers.start(
                client_worker,
                slot,
                server.client(slot),
                ctx.play_config,
                ctx.seed(slot),
                games,
                shared,
                workers.messages,
            )
        workers.wait_hellos(server.check)
        heavy = sorted(slot for slot, hello in workers.hellos.items() if hello["torch_loaded"])
        if heavy:
            ctx.probe.warn(
                f"{len(heavy)} server workers have torch loaded (the suite's main module imports it?): "
                "each costs hundreds of MB; keep the cell's main module free of torch"
            )
        ctx.probe.set("workers_with_torch", len(heavy))
        shared.go()
        ctx.workers_up()

        def wait(timeout: float) -> None:
            workers.poll(timeout)
            server.check()

        _supervise(ctx.probe, accounting, wait, workers.all_exited)
        shared.request_stop()
        workers.join(_JOIN_TIMEOUT_S)
        stats = server.stop()
    finally:
        shared.request_stop()
        workers.reap()
        server.close()
        stop_forkserver()
    accounting.finish(observe_batches=False)
    accounting.report_work()
    for size, count in stats["batch_hist"].items():
        ctx.probe.observe("batch", size, count)
    waits, counts = np.unique(np.round(stats["waits_ms"].astype(np.float64), 2), return_counts=True)
    for wait_ms, count in zip(waits.tolist(), counts.tolist(), strict=True):
        ctx.probe.observe("wait_ms", wait_ms, count)
    ctx.probe.set("server_start_method", server.start_method)
    ctx.probe.set("batch_limit", params.max_batch)  # the batch a server may fire: SMALL_BATCHES' yardstick
    return {info["device"]}


# --------------------------------------------------------------------------- ray
def _ray(ctx: Context) -> set[str]:
    from suites.selfplay.ray_backend import run_ray

    return run_ray(ctx)


BACKENDS: dict[str, Backend] = {
    "sequential": _sequential,
    "threads": _threads,
    "processes": _processes,
    "server": _server,
    "ray": _ray,
}
