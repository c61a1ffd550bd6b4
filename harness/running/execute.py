"""A sweep: expand the matrix, open (or resume) a run directory, run every missing
cell-repeat through an executor, and store each record the moment it exists."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.cell.processes import kill_tree, marked_processes
from harness.errors import ClusterLost, StorageError, UserError
from harness.monitors import machine
from harness.running import interrupts, metadata, noise
from harness.running.executors.base import Executor, Job
from harness.running.matrix import Cell, Spec
from harness.running.progress import Progress
from harness.running.runner import storage_error_of
from harness.runs.record import Record
from harness.runs.store import RunStore, utc_now


def jobs_for(cells: list[Cell], finished: set[tuple[str, int]]) -> list[Job]:
    """Repeat-major order (every cell once, then every cell again) so slow drifts of the
    machine spread over all cells instead of biasing the ones that ran last."""
    most = max((c.repeats for c in cells), default=0)
    return [(cell, r) for r in range(most) for cell in cells if r < cell.repeats and (cell.id, r) not in finished]


def new_run(results_dir: Path, spec: Spec, cells: list[Cell], argv: list[str]) -> RunStore:
    facts = metadata.collect(argv)
    meta: dict[str, Any] = {
        **facts,
        "machine_state": machine.facts(),  # load, governor, SMT, isolated CPUs at the start
        **noise.for_run(results_dir, str(facts.get("hostname"))),
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


def _code(facts: dict[str, Any]) -> str:
    commit = str(facts.get("git_commit") or "an unknown commit")[:12]
    if facts.get("git_dirty"):
        diff = facts.get("git_diff_sha1")
        commit += f" with uncommitted changes{f' (diff {diff})' if diff else ''}"
    return commit


def same_code(recorded: dict[str, Any], now: dict[str, Any]) -> bool:
    """Whether the code now is the code a run was measured with: the commit, and for a
    dirty tree the hash of its diff (runs recorded before the hash existed: the commit)."""
    keys = ["git_commit", "git_dirty"] + (["git_diff_sha1"] if "git_diff_sha1" in recorded else [])
    return all(recorded.get(k) == now.get(k) for k in keys)


def check_resume(store: RunStore, force: bool) -> None:
    """Before resuming: the code must be the one the run started with, or --force, which
    is noted. Every resume appends {at, git facts, forced} to run.json's `resumes`."""
    meta = store.meta()
    now = metadata.git_info()
    same = same_code(meta, now)
    if not same and not force:
        raise UserError(
            f"{store.root} was measured at {_code(meta)} and this checkout is at {_code(now)}: its remaining "
            "cells would measure different code. Check out the run's commit, or pass --force to resume anyway "
            "(run.json notes it)"
        )
    entry: dict[str, Any] = {"at": utc_now(), **now}
    if not same:
        entry["forced"] = f"resumed with --force at {_code(now)}; the run started at {_code(meta)}"
        print(f"warning: {entry['forced']}", file=sys.stderr)
    try:
        store.update_meta(resumes=[*(meta.get("resumes") or []), entry])
    except StorageError as exc:
        exc.run_dir, exc.then = store.root, f"harness sweep --resume {store.root}"
        raise


def mark_finished(store: RunStore) -> None:
    """run.json says `finished` from the moment every cell-repeat has run, so the reports
    written after it (which read run.json) state the run's real end, not `running`."""
    store.update_meta(state="finished", ended=utc_now())


@contextmanager
def run_state(store: RunStore) -> Iterator[None]:
    """run.json's state follows the block: `interrupted` when a Ctrl-C or SIGTERM ends it
    (raised at a safe point: harness.running.interrupts), `finished` when it completes. The block's
    end is the last point a signal can interrupt (interrupts.close()), so the exit code
    (130 or not) and the recorded state always agree. A block that called mark_finished()
    before its reports keeps that end time (the last cell's), unless a signal still came.
    A file the harness could not write (StorageError) stops the run too: run.json says
    `interrupted` with the reason when it still can be written, and the error says how to go
    on; what was recorded before stays. A Ray cluster whose head was lost (ClusterLost) stops
    it the same way, run.json's `cluster_lost` saying so."""
    try:
        yield
        interrupts.close()
    except KeyboardInterrupt:
        store.update_meta(state="interrupted", ended=utc_now())
        print(f"interrupted; finish it with: harness sweep --resume {store.root}", file=sys.stderr)
        raise
    except ClusterLost as exc:  # the Ray cluster's head: what was recorded stays; --resume on a new head
        exc.run_dir = store.root
        try:
            store.update_meta(state="interrupted", ended=utc_now(), cluster_lost=str(exc))
        except (StorageError, UserError):
            pass
        raise
    except StorageError as exc:
        exc.run_dir = store.root
        exc.then = exc.then or f"harness sweep --resume {store.root}"
        try:
            if store.meta().get("state") != "finished":  # every cell ran: only a report failed
                store.update_meta(state="interrupted", ended=utc_now(), stopped_by=f"{exc.path}: {exc.detail}")
        except (StorageError, UserError):
            pass  # run.json stays `running`; --resume finishes the run all the same
        raise
    if store.meta().get("state") != "finished":
        mark_finished(store)


def execute(
    store: RunStore, cells: list[Cell], executor: Executor, progress: Progress, retry_failed: bool = False
) -> list[Record]:
    """Runs what is missing (and, with retry_failed, what failed: the failed records stay
    in cells.jsonl as history, the new one is the cell's latest); returns the run's latest
    records. A Ctrl-C propagates after the running cell's processes are ended; the caller's
    run_state() records it in run.json."""
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
    latest = store.records()
    # The program's failures are history unless retried; the harness's own run again.
    done = {(r.id, r.repeat) for r in latest if r.ok or not (retry_failed or r.harness_failed)}
    if retry_failed:
        failed = sum(not r.ok for r in latest)
        print(f"retrying {failed} failed cell-repeat(s); their failed records stay in cells.jsonl", file=sys.stderr)
    elif any(r.harness_failed for r in latest):
        again = sum(r.harness_failed for r in latest)
        print(f"running again {again} cell-repeat(s) the harness failed (status harness-error)", file=sys.stderr)
    jobs = jobs_for(cells, done)
    progress.begin(cells, len(jobs), store.root)
    store.update_meta(state="running", resumed=utc_now() if latest else None)
    try:
        executor.run(jobs, store, progress.cell_started, lambda rec, again=False: _record(store, progress, rec, again))
    finally:
        progress.end()
    return store.records()


def _record(store: RunStore, progress: Progress, record: Record, again: bool = False) -> None:
    """Store the record; one that failed because a file could not be written stops the
    sweep there (the next cells would meet the same full or read-only disk). `again`: an
    attempt lost with a Ray node, run again by this sweep (its record is history)."""
    store.append(record)
    progress.cell_finished(record, again)
    fault = storage_error_of(record)
    if fault is not None:
        raise fault
