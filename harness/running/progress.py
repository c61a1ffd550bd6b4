"""Sweep progress: a rich bar with ETA on a terminal, one plain line per cell otherwise."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.progress import Progress as RichProgress

from harness.model.numbers import readable
from harness.running.matrix import Cell
from harness.runs.record import Record
from harness.runs.view import headline_rate


def varying_keys(cells: list[Cell]) -> set[str]:
    """Params that differ between the sweep's cells: the only ones worth printing per line."""
    keys: set[str] = set()
    for suite in {c.suite for c in cells}:
        group = [c.params for c in cells if c.suite == suite]
        for key in group[0]:
            if len({repr(p.get(key)) for p in group}) > 1:
                keys.add(key)
    return keys


def short_params(params: dict[str, Any], keys: set[str] | None = None) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items() if keys is None or k in keys)


def headline(record: Record) -> str:
    """`<rate>=<value>` for the suite's headline rate, or "" when the record has none."""
    name = headline_rate([record])
    return f"{name}={readable(record.metrics[name])}" if name else ""


class Progress:
    def __init__(self, quiet: bool = False, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.live = not quiet and sys.stderr.isatty()
        self.quiet = quiet
        self._bar: RichProgress | None = None
        self._task: Any = None
        self._done = 0
        self._total = 0
        self._keys: set[str] | None = None

    def begin(self, cells: list[Cell], total: int, run_dir: Path) -> None:
        self._total = total
        self._keys = varying_keys(cells)
        self.console.print(f"run directory: {run_dir}  ({total} cell-repeats to run)")
        if self.live:
            self._bar = RichProgress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=self.console,
            )
            self._bar.start()
            self._task = self._bar.add_task("cells", total=total)

    def cell_started(self, cell: Cell, repeat: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, description=f"{cell.suite} {short_params(cell.params, self._keys)} #{repeat}")

    def cell_finished(self, record: Record, again: bool = False) -> None:
        """A record stored; `again`: its cell-repeat runs again (an attempt lost with a Ray
        node), so it is said but not counted done."""
        self._done += 0 if again else 1
        line = (
            f"[{self._done}/{self._total}] {record.suite} {short_params(record.params, self._keys)} "
            f"#{record.repeat}: {record.status}"
        )
        extra = headline(record) if record.ok else (record.reason or "")
        if self._bar is not None:
            if not again:
                self._bar.advance(self._task)
            if not record.ok:
                self._bar.console.print(f"{line} {extra}", markup=False)
        elif not self.quiet or not record.ok:
            print(f"{line} {extra}", file=sys.stderr, flush=True)

    def end(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
