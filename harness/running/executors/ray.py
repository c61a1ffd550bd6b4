"""Cells as Ray tasks, for sweeps larger than one machine, surviving the loss of nodes.

Each cell-repeat becomes a task inside its own placement group, a single bundle holding
the CPUs the cell declares (its workers plus servers, `Suite.resources_for`) and a GPU
when it asks for cuda; STRICT_PACK keeps the bundle on one node, where the task runs the
very same CellRunner as the local executor (harness.running.executors.ray_node: fresh
interpreter, own process session, deadline, monitors) against a scratch run directory. The
task returns the record and the files the cell produced; the driver alone writes the real
store, so cells.jsonl keeps one writer. A cell that no node of the cluster could hold is
refused before anything starts, instead of waiting forever for resources.

A node lost under a cell (a preempted machine, an OOM-killed raylet) is the harness's
environment failing, never the program: that attempt is recorded `harness-error` with the
node named, and the cell-repeat runs again on a surviving node, up to `attempts` attempts in
one sweep (`--resume` runs whatever is still missing). An attempt is lost when Ray says its
node is dead, when its task fails for a reason of Ray's, or when it has not answered within
the cell's longest time (harness.running.deadline.longest_s) plus `grace_s`: the sweep never
waits longer than that on a node that is gone. A late answer of an attempt given up is
dropped, so no cell-repeat is recorded twice. The head lost (its GCS silent for `grace_s`)
ends the sweep: the cells running then are recorded `harness-error`, and ClusterLost says how
to resume against a new head (exit 75). run.json's `ray_nodes` and each record's `node` say
where each cell ran and which nodes were lost when (harness.runs.nodes).

Without `--address` a private Ray is started on this machine, bound to loopback with the
dashboard off, and shut down afterwards.
"""

from __future__ import annotations

import atexit
import os
import queue
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from functools import partial
from typing import Any

from harness.cell.processes import PACKAGE_ROOT
from harness.errors import CLUSTER_EXIT, ClusterLost, UserError
from harness.model.registry import get_suite
from harness.model.suite import Resources
from harness.running import interrupts
from harness.running.deadline import longest_s
from harness.running.executors.base import Job, OnRecord, OnStart
from harness.running.executors.ray_cluster import ClusterWatch
from harness.running.matrix import Cell
from harness.running.runner import harness_failed
from harness.runs import nodes
from harness.runs.files import write_atomic
from harness.runs.record import HARNESS_ERROR, Record
from harness.runs.store import RunStore, utc_now

DEFAULT_ATTEMPTS = 3  # attempts of a cell-repeat in one sweep when nodes are lost under it
DEFAULT_GRACE_S = 30.0  # beyond a cell's longest time; and the head's silence before it is lost
SHUTDOWN_S = 15.0  # the most ray.shutdown() may take (it waits on a head that may be gone)
RAY_RECONNECT_ENV = "RAY_gcs_rpc_server_reconnect_timeout_s"  # Ray ends the driver after this


def prepare_environment(grace_s: float) -> None:
    """Before Ray starts in this process: Ray ends a driver whose GCS has been silent for 60 s
    (exit 1, its own message); give the harness the time to say so itself first."""
    wanted = int(max(60.0, grace_s + 60.0))
    if int(os.environ.get(RAY_RECONNECT_ENV, "0") or 0) < wanted:
        os.environ[RAY_RECONNECT_ENV] = str(wanted)


def cell_resources(cell: Cell) -> Resources:
    suite = get_suite(cell.suite)
    declared = suite.resources_for(suite.params.model_validate(cell.params))
    device = suite.words.device
    gpus = declared.gpus or (1 if device and str(cell.params.get(device, "")).startswith("cuda") else 0)
    return Resources(cpus=max(1, declared.cpus), gpus=gpus)


def refuse_what_cannot_fit(cells: list[Cell], node_resources: list[dict[str, float]]) -> None:
    """Refuses (exit 2) cells that no single node could hold: a bundle is packed on one node."""
    cpus = max((n.get("CPU", 0) for n in node_resources), default=0)
    gpus = max((n.get("GPU", 0) for n in node_resources), default=0)
    misfits = []
    for cell in cells:
        need = cell_resources(cell)
        if not any(n.get("CPU", 0) >= need.cpus and n.get("GPU", 0) >= need.gpus for n in node_resources):
            misfits.append(f"{cell.suite} {cell.id} needs {need.cpus} CPU/{need.gpus} GPU")
    if misfits:
        raise UserError(
            f"the largest node of the Ray cluster has {cpus:g} CPU and {gpus:g} GPU ({len(node_resources)} node(s)); "
            f"these cells cannot fit one node and would wait forever: {'; '.join(misfits)}. "
            "Add larger nodes, or run them with --executor local"
        )


@dataclass
class Attempt:
    """One attempt of a cell-repeat: its placement group, its task, where and when it runs."""

    cell: Cell
    repeat: int
    number: int  # 1 = the first in this sweep
    need: Resources
    key: str  # its files' name in the run directory
    group: Any = None
    ref: Any = None
    node: str | None = None  # the node its bundle was placed on
    placed: float | None = None  # monotonic, when it was placed: its time runs from there
    placed_at: str | None = None  # UTC
    unfit_since: float | None = None  # monotonic, since when no live node can hold it (not placed)

    @property
    def name(self) -> str:
        return nodes.cell_repeat(self.cell.id, self.repeat)


class RayExecutor:
    def __init__(
        self, address: str | None = None, attempts: int = DEFAULT_ATTEMPTS, grace_s: float = DEFAULT_GRACE_S
    ) -> None:
        self.address = address
        self.attempts = attempts
        self.grace_s = grace_s

    def _connect(self) -> str:
        """Joins the cluster (or starts a private one); returns its GCS address."""
        import ray

        if self.address:
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(
                address="local",  # a private one: never some other cluster that runs here (RAY_ADDRESS, `ray start`)
                _node_ip_address="127.0.0.1",
                include_dashboard=False,
                log_to_driver=False,
                runtime_env={"env_vars": {"PYTHONPATH": PACKAGE_ROOT}},
            )
        return str(ray.get_runtime_context().gcs_address)

    def run(self, jobs: list[Job], store: RunStore, on_start: OnStart, on_record: OnRecord) -> None:
        import ray

        if not jobs:
            return
        gcs = self._connect()
        sweep: _Sweep | None = None
        try:
            sweep = _Sweep(self, store, on_start, on_record, gcs)
            sweep.run(jobs)
        finally:
            if sweep is not None:
                sweep.watch.stop()
            lost = sweep is not None and sweep.watch.head_lost_at is not None
            _shutdown(ray, SHUTDOWN_S if lost else None)


def _shutdown(ray: Any, within_s: float | None) -> None:
    """ray.shutdown(), at most `within_s` when the head may be gone (it waits on it); then
    Ray's own shutdown at the interpreter's exit is dropped, which would wait on the head
    until Ray ends the process with its exit 1 instead of the harness's."""
    if within_s is None:
        ray.shutdown()
        return
    thread = threading.Thread(target=ray.shutdown, name="harness-ray-shutdown", daemon=True)
    thread.start()
    thread.join(within_s)
    atexit.unregister(ray.shutdown)


class _HeadGone(Exception):
    """A call to the GCS was left waiting: the head was lost meanwhile."""


class Caller:
    """Ray's calls that may wait long (on the GCS: creating, reading and removing placement
    groups, cancelling; on a node's object store: fetching an answer), made one after another
    from a daemon thread of its own: a head or node that goes silent in the middle of one
    leaves this thread waiting, not the driver's loop, which goes on watching and ends the
    sweep once the head is lost."""

    def __init__(self, name: str) -> None:
        self._calls: queue.Queue[tuple[Future[Any], Any, tuple[Any, ...]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Any, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._calls.put((future, fn, args))
        return future

    def close(self) -> None:
        self._calls.put(None)

    def _serve(self) -> None:
        while (call := self._calls.get()) is not None:
            future, fn, args = call
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting loop
                future.set_exception(exc)


class _Sweep:
    """One sweep's jobs through the cluster: placed as capacity allows, watched, recorded."""

    def __init__(self, executor: RayExecutor, store: RunStore, on_start: OnStart, on_record: OnRecord, gcs: str):
        import ray

        self.ray = ray
        self.executor = executor
        self.store = store
        self.on_start = on_start
        self.on_record = on_record
        self.gcs = gcs
        self.lock = threading.Lock()  # the store's writes, between the loop and the last word (on_stuck)
        self.watch = ClusterWatch(gcs, executor.grace_s, ray.nodes, on_stuck=self._last_word)
        self.queue: deque[tuple[Cell, int, int]] = deque()
        self.attempts: dict[Any, Attempt] = {}  # by task ref
        self.unplaceable_since: float | None = None
        self.to_remove: list[Any] = []  # placement groups to remove once the head answers
        self.gcs_calls = Caller("harness-ray-gcs")
        self.fetches = Caller("harness-ray-fetch")  # answers from the nodes' object stores
        self.mark = str(store.root.resolve())  # the run directory the cells' processes carry
        self.task = ray.remote(_remote_entry())

    # ------------------------------------------------------------------ the loop
    def run(self, jobs: list[Job]) -> None:
        self.watch.start()
        alive = self.watch.alive()
        cells = list({cell.id: cell for cell, _ in jobs}.values())
        refuse_what_cannot_fit(cells, [{"CPU": n.cpus, "GPU": n.gpus} for n in alive])
        self._note_nodes()
        self.queue.extend((cell, repeat, 1) for cell, repeat in jobs)
        try:
            while self.queue or self.attempts:
                interrupts.check()
                self.watch.beat()
                try:
                    if self.watch.head_lost_at is not None:
                        raise _HeadGone
                    if self.watch.head_answers():  # the calls that wait on the GCS
                        self._release_groups()
                        self._place()
                        self._submit()
                    self._collect()
                    self._give_up_on_lost()
                except _HeadGone:
                    self._head_lost()
                if self.watch.changed():
                    self._note_nodes()
        except BaseException:
            self._cancel_all()
            raise
        finally:
            if self.watch.head_answers():
                self._release_groups()
                try:
                    self._gcs(lambda: None)  # every removal before it done (one thread, in order)
                except (_HeadGone, KeyboardInterrupt):
                    pass
            if self.watch.changed():
                self._note_nodes()
            self.gcs_calls.close()
            self.fetches.close()

    def _gcs(self, fn: Any, *args: Any) -> Any:
        """fn(*args) on the GCS caller's thread, waited for while the head is not lost (a
        Ctrl-C still acts meanwhile); _HeadGone once it is."""
        return self._await(self.gcs_calls.submit(fn, *args))

    def _await(self, future: Future[Any]) -> Any:
        """A call's result, waited for while the head is not lost; _HeadGone once it is."""
        while True:
            try:
                return future.result(timeout=interrupts.POLL_S)
            except FutureTimeout:
                interrupts.check()
                self.watch.beat()
                if self.watch.head_lost_at is not None:
                    raise _HeadGone from None

    def _submit(self) -> None:
        """Start attempts while the live nodes have CPUs for them (one at least, so that a
        cell waits in Ray's queue, not ours, when the cluster is full)."""
        in_flight = sum(a.need.cpus for a in self.attempts.values())
        capacity = self.watch.capacity()
        while self.queue:
            cell, repeat, number = self.queue[0]
            need = cell_resources(cell)
            if self.attempts and in_flight + need.cpus > capacity:
                return
            if not self.watch.fits(need.cpus, need.gpus):
                self._unplaceable(need)
                return
            self.unplaceable_since = None
            self.queue.popleft()
            self._start(Attempt(cell, repeat, number, need, self.store.attempt_key(cell.id, repeat)))
            in_flight += need.cpus

    def _start(self, attempt: Attempt) -> None:
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        need = attempt.need
        bundle = {"CPU": need.cpus, **({"GPU": need.gpus} if need.gpus else {})}

        def submit() -> tuple[Any, Any]:
            group = placement_group([bundle], strategy="STRICT_PACK")
            ref = self.task.options(
                num_cpus=need.cpus,
                num_gpus=need.gpus,
                max_retries=0,  # the harness runs a lost cell again, on its own terms and record
                scheduling_strategy=PlacementGroupSchedulingStrategy(group),
            ).remote(attempt.cell.to_json(), attempt.repeat, attempt.key, self.mark, self.executor.grace_s)
            return group, ref

        try:
            attempt.group, attempt.ref = self._gcs(submit)
        except _HeadGone:
            self.queue.appendleft((attempt.cell, attempt.repeat, attempt.number))  # never started: --resume runs it
            raise
        self.attempts[attempt.ref] = attempt

    def _place(self) -> None:
        """Attempts whose bundle has been placed: on which node, from when (their time runs)."""
        for attempt in list(self.attempts.values()):
            if attempt.placed is None and self._locate(attempt):
                self.on_start(attempt.cell, attempt.repeat)

    def _locate(self, attempt: Attempt) -> bool:
        """Whether the attempt's bundle is placed; notes its node and the time (its time runs
        from there)."""
        from ray.util.placement_group import placement_group_table

        table = self._gcs(placement_group_table, attempt.group)
        placed = (table.get("bundles_to_node_id") or {}).get(0)
        if table.get("state") != "CREATED" or not placed:
            return False
        attempt.node, attempt.placed, attempt.placed_at = str(placed), time.monotonic(), utc_now()
        return True

    def _collect(self) -> None:
        refs = list(self.attempts)
        if not refs:
            time.sleep(interrupts.POLL_S)
            return
        done, _ = self.ray.wait(refs, num_returns=len(refs), timeout=interrupts.POLL_S)
        for ref in done:
            attempt = self.attempts[ref]
            if attempt.placed is None and self.watch.head_answers():  # it ended before the loop saw it placed
                self._locate(attempt)
            try:
                # from the node's object store: a node lost meanwhile is waited on for the grace at most,
                # and a head lost meanwhile ends the wait (the attempt still counts as running)
                answer = self._await(self.fetches.submit(partial(self.ray.get, timeout=self.executor.grace_s), ref))
            except _HeadGone:
                raise
            except Exception as exc:  # noqa: BLE001 - Ray's failure (a node, a worker, an object lost)
                self.attempts.pop(ref)
                self._remove_group(attempt)
                self._lost(attempt, self._why(attempt, exc), attempt.node)
                continue
            self.attempts.pop(ref)
            self._remove_group(attempt)
            record, files, node_id, seen = answer
            attempt.node = attempt.node or node_id
            if seen is not None or record is None:
                self._lost_seen(attempt, node_id, seen)
                continue
            with self.lock:
                for relative, content in files.items():
                    target = self.store.root / relative
                    target.parent.mkdir(parents=True, exist_ok=True)
                    write_atomic(target, content, "a file of the cell")
                record.extra[nodes.NODE] = self.watch.label(node_id or attempt.node)
                record.extra[nodes.ATTEMPT] = attempt.number
                self.on_record(record)

    def _give_up_on_lost(self) -> None:
        """Attempts on a node Ray says is dead, and attempts past their longest time plus the
        grace (a node gone that Ray has not noticed, a task that never started)."""
        now = time.monotonic()
        for ref, attempt in list(self.attempts.items()):
            node = self.watch.node(attempt.node)
            if node is not None and node.lost is not None:
                self.attempts.pop(ref)
                self._cancel(attempt)
                self._lost(attempt, self._node_lost(node), node.id)
                continue
            if attempt.placed is None:
                self._unfit(ref, attempt, now)
                continue
            limit = longest_s(attempt.cell) + self.executor.grace_s
            if now - attempt.placed > limit:
                self.attempts.pop(ref)
                self._cancel(attempt)
                self._lost(
                    attempt,
                    f"node {self.watch.label(attempt.node)} gave no answer within {limit:.0f} s (the cell's longest "
                    f"{limit - self.executor.grace_s:.0f} s and {self.executor.grace_s:g} s of grace); given up",
                    None,
                )

    def _unfit(self, ref: Any, attempt: Attempt, now: float) -> None:
        """An attempt waiting for a bundle that no live node can hold any more (its nodes were
        lost): given up after the grace, recorded as the harness's failure."""
        if self.watch.fits(attempt.need.cpus, attempt.need.gpus):
            attempt.unfit_since = None
            return
        attempt.unfit_since = attempt.unfit_since or now
        if now - attempt.unfit_since < self.executor.grace_s:
            return
        self.attempts.pop(ref)
        self._cancel(attempt)
        record = self._failed_record(attempt.cell, attempt.repeat, attempt.number, None, None)
        harness_failed(record, self._cannot_hold(attempt.need))
        with self.lock:
            self.on_record(record)

    def _cannot_hold(self, need: Resources) -> str:
        alive = ", ".join(f"{n.label} {n.cpus:g} CPU" for n in self.watch.alive()) or "none"
        return (
            f"no live node of the Ray cluster can hold it ({need.cpus} CPU/{need.gpus} GPU) after "
            f"{self.executor.grace_s:g} s; live nodes: {alive}"
        )

    def _unplaceable(self, need: Resources) -> None:
        """No live node can hold the next cell (nodes were lost): after the grace, record the
        cells that cannot fit as the harness's failures instead of waiting for a node forever."""
        now = time.monotonic()
        if self.unplaceable_since is None:
            self.unplaceable_since = now
            return
        if now - self.unplaceable_since < self.executor.grace_s or self.attempts:
            return
        kept: deque[tuple[Cell, int, int]] = deque()
        while self.queue:
            cell, repeat, number = self.queue.popleft()
            want = cell_resources(cell)
            if self.watch.fits(want.cpus, want.gpus):
                kept.append((cell, repeat, number))
                continue
            record = self._failed_record(cell, repeat, number, None, None)
            harness_failed(record, self._cannot_hold(want))
            with self.lock:
                self.on_record(record)
        self.queue = kept
        self.unplaceable_since = None

    # ------------------------------------------------------------------ losses
    @staticmethod
    def _node_lost(node: Any) -> str:
        return f"node {node.label} was lost at {node.lost} while the cell ran on it ({node.why})"

    def _why(self, attempt: Attempt, exc: Exception) -> str:
        node = self.watch.node(attempt.node)
        said = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        if node is not None and node.lost is not None:
            return f"{self._node_lost(node)}; Ray: {said}"
        return f"Ray could not run it on node {self.watch.label(attempt.node)} ({said})"

    def _lost_seen(self, attempt: Attempt, node_id: str, seen: Any) -> None:
        """The task's own word that its node was lost under it (ray_node.NodeLost): its raylet
        gone (the node is lost from now: nothing more is placed or waited on there) or the
        head silent (the loop is about to see the head lost too)."""
        from harness.running.executors.ray_node import RAYLET

        why = getattr(seen, "why", "the task returned no record")
        if getattr(seen, "what", None) == RAYLET:
            self.watch.mark_lost(node_id, f"seen from the node: {why}")
            node = self.watch.node(node_id)
            self._lost(attempt, self._node_lost(node) if node is not None else why, node_id)
            return
        self._lost(attempt, f"the cell was ended on node {self.watch.label(node_id)}: {why}", None)

    def _lost(self, attempt: Attempt, why: str, lost_with: str | None) -> None:
        """The attempt is the harness's failure: recorded with its node; run again while
        attempts remain and the head is there. `lost_with`: the node it was lost with."""
        again = attempt.number < self.executor.attempts and self.watch.head_lost_at is None
        record = self._failed_record(attempt.cell, attempt.repeat, attempt.number, attempt.node, attempt.placed_at)
        if again:
            record.status = HARNESS_ERROR
            record.reason = (
                f"{why}; the harness's failure, not the program's: run again on a surviving node "
                f"(attempt {attempt.number + 1} of {self.executor.attempts})"
            )
        else:
            tried = f" (attempt {attempt.number} of {self.executor.attempts})" if attempt.number > 1 else ""
            harness_failed(record, f"{why}{tried}")
        if lost_with is not None:
            self.watch.note_lost_cell(lost_with, attempt.name)
        with self.lock:
            self.on_record(record, again)
        if again:
            self.queue.appendleft((attempt.cell, attempt.repeat, attempt.number + 1))

    def _failed_record(self, cell: Cell, repeat: int, number: int, node: str | None, started: str | None) -> Record:
        record = Record(
            id=cell.id, suite=cell.suite, params=cell.params, repeat=repeat, status=HARNESS_ERROR,
            started=started, ended=utc_now(), budget=cell.budget(),
        )  # fmt: skip
        if node is not None:
            record.extra[nodes.NODE] = self.watch.label(node)
        record.extra[nodes.ATTEMPT] = number
        return record

    def _head_lost(self) -> None:
        """The head is gone, and the cluster with it: the running attempts recorded as lost
        (their nodes end them on their own: ray_node.NodeWatch), then ClusterLost."""
        lost_at = str(self.watch.head_lost_at)
        running = [a for a in self.attempts.values() if a.placed is not None]  # the rest never started
        self.attempts.clear()
        head = next((n.id for n in self.watch.nodes().values() if n.head), None)
        for attempt in running:
            self._lost(
                attempt,
                f"the Ray cluster's head at {self.gcs} was lost at {lost_at} while the cell ran on node "
                f"{self.watch.label(attempt.node)}",
                head,
            )
        self._note_nodes()
        exc = ClusterLost(self.gcs, lost_at, self.executor.grace_s, len(running))
        exc.run_dir = self.store.root
        raise exc

    def _last_word(self) -> None:
        """From the head probe's thread when the loop is stuck in a call to the lost head:
        run.json says so, the message is printed, and the process exits 75 before Ray ends it
        with its own exit 1. Records already appended are intact; the running cells have none
        (--resume runs them)."""
        exc = ClusterLost(self.gcs, str(self.watch.head_lost_at), self.executor.grace_s, 0)
        exc.run_dir = self.store.root
        if self.lock.acquire(timeout=STUCK_LOCK_S):
            try:
                self._note_nodes()
                self.store.update_meta(state="interrupted", ended=utc_now(), cluster_lost=str(exc))
            except Exception:  # noqa: BLE001 - run.json stays `running`; --resume finishes the run all the same
                pass
        print(f"error: {exc}", file=sys.stderr, flush=True)
        os._exit(CLUSTER_EXIT)

    # ------------------------------------------------------------------ Ray's objects
    def _note_nodes(self) -> None:
        """run.json's `ray_nodes`: this sweep's nodes merged with those earlier sweeps saw."""
        seen = {n.id: n.to_json() for n in self.watch.nodes().values()}
        earlier = [n for n in self.store.meta().get(nodes.NODES) or [] if n.get("id") not in seen]
        self.store.update_meta(**{nodes.NODES: [*earlier, *seen.values()]})

    def _remove_group(self, attempt: Attempt) -> None:
        """The attempt's bundle goes: at once when the head answers, else once it does again
        (a group of a head that is lost goes with it)."""
        self.to_remove.append(attempt.group)
        if self.watch.head_answers():
            self._release_groups()

    def _release_groups(self) -> None:
        from ray.util.placement_group import remove_placement_group

        while self.to_remove:
            # not waited for; an error (removed already, its head gone) stays in the future
            self.gcs_calls.submit(remove_placement_group, self.to_remove.pop())

    def _cancel(self, attempt: Attempt) -> None:
        """Its task cancelled (not waited for: its worker may be gone with its node), its
        bundle removed."""
        self.gcs_calls.submit(partial(self.ray.cancel, force=True), attempt.ref)
        self._remove_group(attempt)

    def _cancel_all(self) -> None:
        """Ctrl-C or an error: a polite cancel raises KeyboardInterrupt inside each task,
        whose CellRunner then ends its cell's process tree before the task returns; the
        placement groups go too. Nothing of a head that is gone is waited on."""
        pending = list(self.attempts.values())
        self.attempts.clear()
        if not pending or not self.watch.head_answers():
            return
        for attempt in pending:
            self.gcs_calls.submit(self.ray.cancel, attempt.ref)
        self.ray.wait([a.ref for a in pending], num_returns=len(pending), timeout=15)
        for attempt in pending:
            self._remove_group(attempt)


STUCK_LOCK_S = 5.0  # the last word waits this long for a record being written


def _remote_entry() -> Any:
    from harness.running.executors.ray_node import run_cell_remotely

    return run_cell_remotely
