"""A sweep: expand the matrix, open (or resume) a run directory, run every missing
cell-repeat through an executor, and store each record the moment it exists."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness import metadata
from harness.executors.base import Executor, Job
from harness.matrix import Cell, Spec
from harness.processes import kill_tree, marked_processes
from harness.progress import Progress
from harness.record import Record
from harness.store import RunStore, utc_now


def jobs_for(cells: list[Cell], finished: set[tuple[str, int]]) -> list[Job]:
    """Repeat-major order (every cell once, then every cell again) so slow drifts of the
    machine spread over all cells instead of biasing the ones that ran last."""
    most = max((c.repeats for c in cells), default=0)
    return [(cell, r) for r in range(most) for cell in cells if r < cell.repeats and (cell.id, r) not in finished]


def new_run(results_dir: Path, spec: Spec, cells: list[Cell], argv: list[str]) -> RunStore:
    meta: dict[str, Any] = {
        **metadata.collect(argv),
        "label": spec.label,
        "started": utc_now(),
        "ended": None,
        "state": "running",
        "spec": spec.model_dump(mode="json"),
        "cells": [c.to_json() for c in cells],
    }
    return RunStore.create(results_dir, spec.label, meta)


def stored_cells(store: RunStore) -> list[Cell]:
    return [Cell.from_json(c) for c in store.meta().get("cells", [])]


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """A sweep stopped with SIGTERM cleans up like one stopped with Ctrl-C."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def execute(store: RunStore, cells: list[Cell], executor: Executor, progress: Progress) -> list[Record]:
    """Runs what is missing; returns the run's latest records. Ctrl-C propagates after the
    running cell's processes are ended and run.json says the run was interrupted."""
    torn = store.repair()
    if torn:
        print(f"warning: {torn}", file=sys.stderr)
    leftovers = marked_processes(store.root)
    if leftovers:  # cells of this run still alive after its sweep process was killed
        print(
            f"warning: ending {len(leftovers)} process(es) left by an earlier, killed sweep of this run",
            file=sys.stderr,
        )
        kill_tree(None, leftovers, grace_s=1.0)
    jobs = jobs_for(cells, store.finished())
    progress.begin(cells, len(jobs), store.root)
    store.update_meta(state="running", resumed=utc_now() if store.finished() else None)
    try:
        with sigterm_as_interrupt():
            executor.run(jobs, store, progress.cell_started, lambda rec: _record(store, progress, rec))
    except KeyboardInterrupt:
        store.update_meta(state="interrupted", ended=utc_now())
        progress.end()
        print(f"interrupted; finish it with: harness sweep --resume {store.root}", file=sys.stderr)
        raise
    store.update_meta(state="finished", ended=utc_now())
    progress.end()
    return store.records()


def _record(store: RunStore, progress: Progress, record: Record) -> None:
    store.append(record)
    progress.cell_finished(record)
