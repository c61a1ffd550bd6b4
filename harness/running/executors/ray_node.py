"""What runs on a Ray node for one cell-repeat: the very same CellRunner as the local
executor, in a scratch run directory, watched for the loss of the node under it.

Ray does not end a task whose node is lost: a worker whose raylet was SIGKILLed ran its 20 s
task to the end and handed its result to the driver, which had meanwhile been told the node
was dead; after a head loss the workers of the other nodes ran on, orphaned, until their
raylets gave up on the GCS a minute later. A cell left so would go on taking its node's CPUs
while the driver runs it again elsewhere. So a NodeWatch thread ends the cell (its whole
process tree) as soon as the raylet that started this worker is gone (the worker is
reparented) or the head's GCS has not answered for the sweep's grace (and a margin: the driver
is to see the head's loss first); the task then returns what it saw instead of a record
(NodeLost), which reaches the driver directly (a task's small result goes to its owner, not
through the raylet), and the worker exits LOST_EXIT_S later whatever happens (guard_worker: also
a worker whose cell had ended as its raylet died), so nothing of the harness stays on the node.
The driver records that attempt as lost with its node.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from harness.running.executors.ray_cluster import PROBE_S, gcs_answers
from harness.running.matrix import Cell
from harness.running.runner import CellRunner
from harness.runs.record import Record
from harness.runs.store import CELLS_FILE, RUN_FILE, RunStore

WATCH_S = 0.5  # how often the raylet is looked for (the head: every PROBE_S of ray_cluster)
NODE_LOST_EXIT = 75  # the worker's exit code when it ends itself on its node's loss
LOST_EXIT_S = 10.0  # after a loss, the worker exits this much later (its answer sent by then)
HEAD_MARGIN_S = 10.0  # a node gives up on the head this much after the driver does
RAYLET, HEAD = "raylet", "head"


@dataclass(frozen=True)
class NodeLost:
    """What a task saw instead of finishing its cell: its raylet gone (`what` = RAYLET: the
    node is lost) or the head's GCS silent (HEAD: the cluster is)."""

    what: str
    why: str


def raylet_pid() -> int | None:
    """The raylet that started this worker process (its parent), or None when the parent is
    something else (then only the head is watched)."""
    try:
        parent = psutil.Process(os.getppid())
        return parent.pid if "raylet" in parent.name() else None
    except psutil.Error:
        return None


_guarded = threading.Event()  # this worker process has its guard


def guard_worker() -> None:
    """Once per Ray worker process that runs a cell: when the raylet that started it is gone,
    the process exits LOST_EXIT_S later (time for an answer under way to reach the driver).
    Ray leaves such a worker alive, idle and orphaned, also when its last cell had ended just
    before its raylet died."""
    raylet = raylet_pid()
    if raylet is None or _guarded.is_set():
        return
    _guarded.set()

    def guard() -> None:
        while os.getppid() == raylet:
            time.sleep(WATCH_S)
        time.sleep(LOST_EXIT_S)
        os._exit(NODE_LOST_EXIT)

    threading.Thread(target=guard, name="harness-worker-guard", daemon=True).start()


class NodeWatch:
    """Calls `on_lost(NodeLost)` once, from its own thread, when the raylet that started this
    worker is gone or the GCS at `gcs_address` has not answered for `grace_s`."""

    def __init__(self, gcs_address: str | None, grace_s: float, on_lost: Callable[[NodeLost], None]) -> None:
        self.gcs_address = gcs_address
        self.grace_s = grace_s
        self.on_lost = on_lost
        self.raylet = raylet_pid()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="harness-node-watch", daemon=True)

    def __enter__(self) -> NodeWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=WATCH_S + 2.5)

    def _watch(self) -> None:
        silent_since: float | None = None
        next_probe = time.monotonic()
        while not self._stop.wait(WATCH_S):
            if self.raylet is not None and os.getppid() != self.raylet:
                self.on_lost(NodeLost(RAYLET, f"its raylet (pid {self.raylet}) is gone"))
                return
            now = time.monotonic()
            if self.gcs_address is None or now < next_probe:
                continue
            next_probe = now + PROBE_S
            if gcs_answers(self.gcs_address):
                silent_since = None
            else:
                silent_since = silent_since if silent_since is not None else now
                if now - silent_since >= self.grace_s:
                    self.on_lost(
                        NodeLost(HEAD, f"the head's GCS at {self.gcs_address} did not answer for {self.grace_s:g} s")
                    )
                    return


def run_cell_remotely(
    cell_json: dict[str, Any], repeat: int, key: str, mark: str, grace_s: float
) -> tuple[Record | None, dict[str, bytes], str, NodeLost | None]:
    """Runs on a Ray worker: one cell in a scratch run directory, its files named `key` (the
    sweep's attempt key) and its processes marked with the sweep's run directory `mark`;
    returns the record, the files the cell produced, the node's id, and None; or, when the
    node was lost under the cell, no record and what the task saw (NodeLost)."""
    import ray

    context = ray.get_runtime_context()
    scratch = Path(tempfile.mkdtemp(prefix="harness-ray-"))
    lost: list[NodeLost] = []

    def node_lost(seen: NodeLost) -> None:
        lost.append(seen)
        runner.abort_current()
        if seen.what == HEAD:  # a raylet that is gone: guard_worker ends the process
            ending = threading.Timer(LOST_EXIT_S, os._exit, args=(NODE_LOST_EXIT,))
            ending.daemon = True
            ending.start()

    guard_worker()
    try:
        store = RunStore.create(scratch, "ray", {})
        runner = CellRunner(store, mark=Path(mark))
        with NodeWatch(getattr(context, "gcs_address", None), grace_s + HEAD_MARGIN_S, node_lost):
            record = runner.run(Cell.from_json(cell_json), repeat, key)
        if lost:
            return None, {}, context.get_node_id(), lost[0]
        files = {
            str(path.relative_to(store.root)): path.read_bytes()
            for path in store.root.rglob("*")
            if path.is_file() and path.name not in (RUN_FILE, CELLS_FILE)
        }
        return record, files, context.get_node_id(), None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
