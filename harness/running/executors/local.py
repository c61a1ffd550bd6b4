"""Cells one after another on this machine, each in its own fresh interpreter."""

from __future__ import annotations

from harness.running import interrupts
from harness.running.executors.base import Job, OnRecord, OnStart
from harness.running.runner import CellRunner
from harness.runs.store import RunStore


class LocalExecutor:
    def __init__(self) -> None:
        self.runner: CellRunner | None = None

    def run(self, jobs: list[Job], store: RunStore, on_start: OnStart, on_record: OnRecord) -> None:
        self.runner = CellRunner(store)
        try:
            for cell, repeat in jobs:
                interrupts.check()  # between cells: a Ctrl-C during the last one's bookkeeping
                on_start(cell, repeat)
                on_record(self.runner.run(cell, repeat))
        except BaseException:
            self.runner.abort_current()
            raise
