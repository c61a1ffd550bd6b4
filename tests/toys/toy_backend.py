"""A backend from outside its suite: importing this module registers `toy` with mccfr.

`HARNESS_PLUGINS=tests.toys.toy_backend` imports it in the CLI and in every cell's fresh
interpreter before the suites load, so `--set backend=toy` validates everywhere. The toy
wraps the sequential backend (one worker on the global tables) and reports its own
start method, so a test can tell that its cells ran it. Importing it stays cheap: the
sequential backend (numba) is imported when a run builds one.
"""

from __future__ import annotations

from typing import Any

from suites.mccfr.backends import BACKENDS
from suites.mccfr.backends.base import Backend, BatchResult


class ToyBackend(Backend):
    single_worker = True
    start_method = "toy"

    def __init__(self, *args: Any) -> None:
        from suites.mccfr.backends.sequential import SequentialBackend

        self.inner = SequentialBackend(*args)
        self.regret, self.avg = self.inner.regret, self.inner.avg
        self.workers_started = self.inner.workers_started

    def start(self) -> None:
        self.inner.start()

    def submit(self, shares: list[int], batch: int) -> None:
        self.inner.submit(shares, batch)

    def collect(self) -> BatchResult:
        return self.inner.collect()

    def close(self) -> None:
        self.inner.close()


BACKENDS.add("toy", ToyBackend)
