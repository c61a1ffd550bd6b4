"""sequential: one game loop in the suite's process, with the net in this process."""

from __future__ import annotations

import multiprocessing
import time

from suites.selfplay.backends.accounting import Accounting
from suites.selfplay.backends.base import POLL_S, Backend, Setup
from suites.selfplay.local import LocalEvaluator
from suites.selfplay.workers import Shared, run_worker


class SequentialBackend(Backend):
    single_worker = True
    net_in_main_process = True

    def play(self, setup: Setup) -> set[str]:
        evaluator = LocalEvaluator(setup.net, setup.device)
        shared = Shared(multiprocessing.get_context("fork"), 1, setup.leaves)  # in-process: no resource tracker
        accounting = Accounting(setup.probe, shared.tally)
        last_update = time.perf_counter()

        def should_stop() -> bool:
            nonlocal last_update
            if setup.probe.should_stop():
                shared.request_stop()
            now = time.perf_counter()
            if now - last_update >= POLL_S:
                last_update = now
                accounting.update()
            return shared.should_stop()

        setup.workers_up()
        run_worker(0, evaluator, setup.play_config, setup.seed(0), setup.shares[0], shared, should_stop)
        accounting.update()  # the last games belong to the window, which closes now
        setup.probe.stop()
        accounting.finish(observe_batches=True)
        accounting.report_work()
        return {evaluator.net_device}
