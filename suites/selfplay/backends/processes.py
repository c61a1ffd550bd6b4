"""processes: worker processes, each with its own net on `device`."""

from __future__ import annotations

import multiprocessing

import torch

from suites.selfplay.backends.accounting import Accounting, supervise
from suites.selfplay.backends.base import JOIN_TIMEOUT_S, Backend, Setup
from suites.selfplay.backends.pool import WorkerProcesses
from suites.selfplay.net import portable_state
from suites.selfplay.workers import Shared, net_worker


def net_worker_start_method(device: torch.device) -> str:
    """fork shares torch's pages with this process (a net per worker would not fit otherwise);
    CUDA cannot be initialised in a forked child, so cuda needs spawn (and each worker then
    owns a CUDA context: the cost this backend exists to measure)."""
    return "spawn" if device.type == "cuda" else "fork"


class ProcessesBackend(Backend):
    def play(self, setup: Setup) -> set[str]:
        method = net_worker_start_method(setup.device)
        mp_context = multiprocessing.get_context(method)
        shared = Shared(mp_context, len(setup.shares), setup.leaves)
        accounting = Accounting(setup.probe, shared.tally, clocks=shared.clocks)
        state = portable_state(setup.net)
        workers = WorkerProcesses(mp_context)
        try:
            for slot, games in enumerate(setup.shares):
                workers.start(
                    net_worker,
                    slot,
                    setup.net_config,
                    state,
                    str(setup.device),
                    setup.play_config,
                    setup.seed(slot),
                    games,
                    shared,
                    workers.messages,
                )
            workers.wait_hellos()
            shared.go()
            setup.workers_up()
            supervise(setup.probe, accounting, workers.poll, workers.all_exited)
            shared.request_stop()
            workers.join(JOIN_TIMEOUT_S)
        finally:
            shared.request_stop()
            workers.reap()
        accounting.finish(observe_batches=True)
        accounting.report_work()
        setup.probe.set("worker_start_method", method)
        return {hello["device"] for hello in workers.hellos.values()}
