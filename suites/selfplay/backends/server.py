"""server: torch-free worker processes send positions through shared memory to one
inference-server process that batches them (server.py, channel.py)."""

from __future__ import annotations

import multiprocessing
import os
import time

from suites.selfplay.backends.accounting import Accounting, observe_server_stats, supervise
from suites.selfplay.backends.base import JOIN_TIMEOUT_S, START_TIMEOUT_S, Backend, Setup
from suites.selfplay.backends.pool import WorkerProcesses
from suites.selfplay.launch import stop_forkserver
from suites.selfplay.net import portable_state
from suites.selfplay.server import InferenceServer
from suites.selfplay.workers import Shared, client_worker


def server_threads(asked: int, workers: int, inflight: int, cores: int | None = None) -> int:
    """Torch intra-op threads of the server: `asked`, or (0) the cores the cell may run on
    that its workers leave, split over the batches computed at once, at least 1. Counting a
    worker as a core is conservative (with the 6x64 net, eight workers used 7-18 % of one core
    between them), but a pass whose intra-op threads outnumber the free cores stalls at every
    barrier whenever one of its cores is taken (docs/records/2026-11-25-inference-server.md),
    so the server asks only for cores nobody else in the cell wants."""
    if asked:
        return asked
    cores = len(os.sched_getaffinity(0)) if cores is None else cores
    return max(1, (cores - workers) // inflight)


class ServerBackend(Backend):
    def play(self, setup: Setup) -> set[str]:
        params = setup.params
        probe = setup.probe
        # workers need no torch: forkserver children fork from a small server process that has
        # imported only numpy and the worker module, so 128 of them share those pages
        mp_context = multiprocessing.get_context("forkserver")
        mp_context.set_forkserver_preload(["suites.selfplay.workers"])
        shared = Shared(mp_context, len(setup.shares), setup.leaves)
        lanes = params.games_per_worker
        threads = server_threads(params.server_threads, len(setup.shares), params.inflight)
        server = InferenceServer(
            clients=len(setup.shares) * lanes,
            leaves=setup.leaves,
            net_config=setup.net_config,
            state_dict=portable_state(setup.net),
            device=str(setup.device),
            max_batch=params.max_batch,
            timeout_ms=params.timeout_ms,
            torch_threads=threads,
            gather=params.gather,
            inflight=params.inflight,
        )
        accounting = Accounting(
            probe, shared.tally, on_measure=server.measure, on_stop=server.hold, clocks=shared.clocks
        )
        workers = WorkerProcesses(mp_context)
        try:
            info = server.start(START_TIMEOUT_S)
            probe.log(
                f"selfplay: inference server up ({server.start_method}, {info['device']}) "
                f"after {time.perf_counter() - setup.started:.1f} s"
            )
            for slot, games in enumerate(setup.shares):
                workers.start(
                    client_worker,
                    slot,
                    [server.client(slot * lanes + lane) for lane in range(lanes)],
                    setup.play_config,
                    setup.seed(slot),
                    games,
                    shared,
                    workers.messages,
                )
            workers.wait_hellos(server.check)
            heavy = sorted(slot for slot, hello in workers.hellos.items() if hello["torch_loaded"])
            if heavy:
                probe.warn(
                    f"{len(heavy)} server workers have torch loaded (the suite's main module imports it?): "
                    "each costs hundreds of MB; keep the cell's main module free of torch"
                )
            probe.set("workers_with_torch", len(heavy))
            shared.go()
            setup.workers_up()

            def wait(timeout: float) -> None:
                workers.poll(timeout)
                server.check()

            supervise(probe, accounting, wait, workers.all_exited)
            shared.request_stop()
            workers.join(JOIN_TIMEOUT_S)
            stats = server.stop()
        finally:
            shared.request_stop()
            workers.reap()
            server.close()
            stop_forkserver()
        accounting.finish(observe_batches=False)
        accounting.report_work()
        observe_server_stats(probe, stats)
        probe.set("server_start_method", server.start_method)
        probe.set("server_threads_used", stats["torch_threads"])
        probe.set("batch_limit", params.max_batch)  # the batch a server may fire: SMALL_BATCHES' yardstick
        return {info["device"]}
