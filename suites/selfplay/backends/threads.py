"""threads: worker threads in the suite's process, sharing one in-process net (under the GIL)."""

from __future__ import annotations

import multiprocessing
import threading
import time

from suites.selfplay.backends.accounting import Accounting, supervise
from suites.selfplay.backends.base import Backend, Setup
from suites.selfplay.local import LocalEvaluator
from suites.selfplay.workers import Shared, run_worker


class ThreadsBackend(Backend):
    net_in_main_process = True

    def play(self, setup: Setup) -> set[str]:
        evaluator = LocalEvaluator(setup.net, setup.device)  # one net, shared by every thread
        shared = Shared(multiprocessing.get_context("fork"), len(setup.shares), setup.leaves)  # in-process too
        accounting = Accounting(setup.probe, shared.tally)
        errors: list[BaseException] = []

        def body(slot: int, games: int | None) -> None:
            try:
                run_worker(slot, evaluator, setup.play_config, setup.seed(slot), games, shared)
            except BaseException as exc:
                errors.append(exc)
                shared.request_stop()

        threads = [
            threading.Thread(target=body, args=(slot, games), name=f"selfplay-{slot}", daemon=True)
            for slot, games in enumerate(setup.shares)
        ]
        try:
            for thread in threads:
                thread.start()
            setup.workers_up()
            supervise(
                setup.probe,
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
