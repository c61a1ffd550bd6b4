"""What an executor is: it runs (cell, repeat) jobs and hands back each record."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from harness.running.matrix import Cell
from harness.runs.record import Record
from harness.runs.store import RunStore

Job = tuple[Cell, int]  # a cell and its repeat index
OnStart = Callable[[Cell, int], None]


class OnRecord(Protocol):
    def __call__(self, record: Record, again: bool = False) -> None:
        """Store a record; `again`: the cell-repeat runs again in this sweep (its attempt
        was lost with a node), so the record is history, not the cell-repeat's end."""
        ...


class Executor(Protocol):
    def run(self, jobs: list[Job], store: RunStore, on_start: OnStart, on_record: OnRecord) -> None:
        """Run every job; call on_record with each finished record (the driver stores it)."""
        ...
