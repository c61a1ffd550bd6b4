"""The Ray executor's bookkeeping of attempts, against a stand-in for Ray that places each
task on a node and answers as a test scripts it: a node lost under a cell, a late answer of
an attempt given up, Ray's own failures up to the attempts allowed, a cell that never answers,
a head that goes silent. What a real cluster does: test_ray_node_loss.py (slow tier)."""

from __future__ import annotations

import socket
import sys
import threading
import types
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from harness.errors import ClusterLost
from harness.running.executors import ray as ray_executor
from harness.running.executors import ray_cluster
from harness.running.matrix import Overrides, Spec, apply_overrides, expand
from harness.runs.record import Record
from harness.runs.store import RunStore

HEAD, W1, W2 = "aa" * 28, "bb" * 28, "cc" * 28


class WorkerCrashedError(Exception):
    """Stands in for Ray's error of a task whose worker died."""


@dataclass
class Group:
    node: str | None = None
    removed: bool = False


@dataclass
class Task:
    ref: int
    args: tuple
    group: Group
    waits: int = 0  # ray.wait calls seen since it was placed
    answer: Any = None  # ("ok", None) | ("error", exc) | None: not yet


@dataclass
class FakeRay:
    """The few calls of Ray the executor makes. `script(ray, task)` is called for each placed
    task at every ray.wait: it may kill a node or give the task its answer."""

    script: Any
    cpus: dict[str, float] = field(default_factory=lambda: {HEAD: 0, W1: 1, W2: 1})
    alive: dict[str, bool] = field(default_factory=lambda: {HEAD: True, W1: True, W2: True})
    tasks: dict[int, Task] = field(default_factory=dict)
    cancelled: list[int] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    gcs_gone: threading.Event = field(default_factory=threading.Event)

    def nodes(self) -> list[dict]:
        return [
            {"NodeID": n, "Alive": self.alive[n], "NodeManagerAddress": "127.0.0.2", "IsHeadNode": n == HEAD,
             "Resources": {"CPU": c}, "DeathReasonMessage": "" if self.alive[n] else "health check failed"}
            for n, c in self.cpus.items()
        ]  # fmt: skip

    def remote(self, fn: Any) -> Any:
        ray = self

        class Remote:
            def options(self, **_: Any) -> Any:
                group = _["scheduling_strategy"]

                class Bound:
                    def remote(self, *args: Any) -> int:
                        ref = len(ray.tasks) + 1
                        ray.tasks[ref] = Task(ref, args, group)
                        return ref

                return Bound()

        return Remote()

    def place(self) -> None:
        for task in self.tasks.values():
            group = task.group
            if group.node is not None or group.removed:
                continue
            used = Counter(t.group.node for t in self.tasks.values() if not t.group.removed and t.group.node)
            free = [n for n in self.cpus if self.alive[n] and self.cpus[n] - used[n] >= 1]
            if free:
                group.node = free[0]

    def wait(self, refs: list[int], num_returns: int, timeout: float) -> tuple[list[int], list[int]]:
        self.place()
        for ref in refs:
            task = self.tasks[ref]
            if task.group.node is not None:
                task.waits += 1
                self.script(self, task)
        done = [r for r in refs if self.tasks[r].answer is not None]
        return done, [r for r in refs if r not in done]

    def get(self, ref: int, timeout: float | None = None) -> Any:
        task = self.tasks[ref]
        kind, value = task.answer
        if kind == "error":
            raise value
        cell_json, repeat, key, _mark, _grace = task.args
        record = Record(id=cell_json["id"], suite=cell_json["suite"], params=cell_json["params"], repeat=repeat,
                        status="ok", metrics={"units_per_s": 1.0})  # fmt: skip
        return record, {f"logs/{key}.log": b"log\n"}, task.group.node, None

    def cancel(self, ref: int, force: bool = False) -> None:
        self.cancelled.append(ref)

    def answer_all_late(self) -> None:
        """Every task given up answers after all (a node that came back, a slow worker)."""
        for task in self.tasks.values():
            task.answer = task.answer or ("ok", None)


def install(monkeypatch: pytest.MonkeyPatch, fake: FakeRay) -> None:
    """The stand-in as the modules the executor imports."""
    ray = types.ModuleType("ray")
    ray.remote, ray.wait, ray.get, ray.cancel, ray.nodes = fake.remote, fake.wait, fake.get, fake.cancel, fake.nodes
    util = types.ModuleType("ray.util")
    groups = types.ModuleType("ray.util.placement_group")

    def placement_group(bundles: list, strategy: str) -> Group:
        if fake.gcs_gone.is_set():
            threading.Event().wait()  # a call to a GCS that is gone waits (Ray gives up after a minute)
        fake.groups.append(Group())
        return fake.groups[-1]

    groups.placement_group = placement_group
    groups.placement_group_table = lambda g: {"state": "CREATED" if g.node else "PENDING",
                                              "bundles_to_node_id": {0: g.node} if g.node else {}}  # fmt: skip
    groups.remove_placement_group = lambda g: setattr(g, "removed", True)
    strategies = types.ModuleType("ray.util.scheduling_strategies")
    strategies.PlacementGroupSchedulingStrategy = lambda g: g
    for name, module in (("ray", ray), ("ray.util", util), ("ray.util.placement_group", groups),
                         ("ray.util.scheduling_strategies", strategies)):  # fmt: skip
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(ray_cluster, "PROBE_S", 0.02)
    monkeypatch.setattr(ray_cluster, "NODES_S", 0.02)
    monkeypatch.setattr(ray_executor.interrupts, "POLL_S", 0.01)


@pytest.fixture
def gcs():
    server = socket.create_server(("127.0.0.1", 0))
    yield server, f"127.0.0.1:{server.getsockname()[1]}"
    server.close()


def sweep(tmp_path, fake, gcs_address, jobs, attempts=3, grace_s=5.0):
    store = RunStore.create(tmp_path, "t", {"cells": []})
    stored: list[tuple[Record, bool]] = []
    started: list[tuple[str, int]] = []

    def on_record(record: Record, again: bool = False) -> None:
        store.append(record)
        stored.append((record, again))

    executor = ray_executor.RayExecutor(attempts=attempts, grace_s=grace_s)
    run = ray_executor._Sweep(executor, store, lambda c, r: started.append((c.id, r)), on_record, gcs_address)
    try:
        run.run(jobs)
    finally:
        run.watch.stop()
    return store, stored, started


def jobs(n: int) -> list:
    cells = expand(apply_overrides(Spec(), Overrides(suite="synthetic", axes={"unit_size": list(range(1, n + 1))})))
    return [(cell, 0) for cell in cells]


def test_a_cell_whose_node_dies_is_recorded_with_the_node_and_run_once_more_elsewhere(tmp_path, monkeypatch, gcs):
    def script(ray: FakeRay, task: Task) -> None:
        if task.group.node == W1 and task.ref == 1 and task.waits == 2:
            ray.alive[W1] = False  # the node goes under the first cell; its answer never comes (yet)
        elif task.group.node != W1 and task.waits >= 2:
            task.answer = ("ok", None)

    fake = FakeRay(script)
    install(monkeypatch, fake)
    store, stored, started = sweep(tmp_path, fake, gcs[1], jobs(3))
    lost = [(r, again) for r, again in stored if r.status == "harness-error"]
    assert len(lost) == 1
    record, again = lost[0]
    assert again and record.extra["node"] == f"127.0.0.2 ({W1[:8]})" and record.extra["attempt"] == 1
    assert f"node 127.0.0.2 ({W1[:8]}) was lost at " in record.reason and "(health check failed)" in record.reason
    assert "run again on a surviving node (attempt 2 of 3)" in record.reason
    ok = Counter((r.id, r.repeat) for r, _ in stored if r.ok)
    assert len(ok) == 3 and set(ok.values()) == {1}
    rerun = next(r for r, _ in stored if r.ok and r.id == record.id)
    assert rerun.extra["node"] == f"127.0.0.2 ({W2[:8]})" and rerun.extra["attempt"] == 2
    assert 1 in fake.cancelled and all(g.removed for g in fake.groups)
    assert len(started) == 4  # each attempt started once its bundle was placed
    entry = next(n for n in store.meta()["ray_nodes"] if n["id"] == W1)
    assert entry["lost"] and entry["cells_lost"] == [f"{record.id}#0"]
    fake.answer_all_late()  # the lost attempt answers after all: nothing more is recorded
    assert len(store.records()) == 3 and sum(1 for _ in store.iter_records()) == 4


def test_rays_failures_are_the_harness_and_end_at_the_attempts_allowed(tmp_path, monkeypatch, gcs):
    def script(ray: FakeRay, task: Task) -> None:
        if task.waits >= 1:
            task.answer = ("error", WorkerCrashedError("the worker died unexpectedly"))

    fake = FakeRay(script)
    install(monkeypatch, fake)
    _, stored, _ = sweep(tmp_path, fake, gcs[1], jobs(1), attempts=2)
    assert [(r.status, again, r.extra["attempt"]) for r, again in stored] == [
        ("harness-error", True, 1),
        ("harness-error", False, 2),
    ]
    first, last = (r.reason for r, _ in stored)
    assert f"Ray could not run it on node 127.0.0.2 ({W1[:8]}) (WorkerCrashedError: the worker died" in first
    assert "(attempt 2 of 2)" in last and "`harness sweep --resume` runs it again" in last


def test_a_cell_that_never_answers_is_given_up_after_its_longest_time_and_the_grace(tmp_path, monkeypatch, gcs):
    fake = FakeRay(lambda ray, task: None)  # placed, never answers, its node alive
    install(monkeypatch, fake)
    monkeypatch.setattr(ray_executor, "longest_s", lambda cell: 0.05)
    _, stored, _ = sweep(tmp_path, fake, gcs[1], jobs(1), attempts=1, grace_s=0.1)
    (record, again), = stored  # fmt: skip
    assert not again and record.status == "harness-error"
    assert f"node 127.0.0.2 ({W1[:8]}) gave no answer within 0 s" in record.reason and "0.1 s of grace" in record.reason


def test_a_silent_head_ends_the_sweep_with_the_running_cells_recorded(tmp_path, monkeypatch, gcs):
    server, address = gcs

    def script(ray: FakeRay, task: Task) -> None:
        if task.waits == 1:
            server.close()  # the head goes; no answer ever comes

    fake = FakeRay(script)
    install(monkeypatch, fake)
    with pytest.raises(ClusterLost) as lost:
        sweep(tmp_path, fake, address, jobs(4), grace_s=0.2)
    assert lost.value.running == 2 and lost.value.run_dir is not None
    store = RunStore.open(lost.value.run_dir)
    records = list(store.iter_records())
    assert len(records) == 2 and all(r.status == "harness-error" for r in records)  # the 2 not started: no record
    assert all(f"the Ray cluster's head at {address} was lost at" in r.reason for r in records)
    head = next(n for n in store.meta()["ray_nodes"] if n["id"] == HEAD)
    assert head["lost"] and len(head["cells_lost"]) == 2


def test_cells_no_live_node_can_hold_are_recorded_after_the_grace_not_waited_on(tmp_path, monkeypatch, gcs):
    def script(ray: FakeRay, task: Task) -> None:
        if task.waits == 1:
            ray.alive[W1] = False  # the one node with CPUs goes; none comes in its place

    fake = FakeRay(script, cpus={HEAD: 0, W1: 1})
    fake.alive = {HEAD: True, W1: True}
    install(monkeypatch, fake)
    _, stored, _ = sweep(tmp_path, fake, gcs[1], jobs(2), grace_s=0.2)
    assert [(r.status, again) for r, again in stored] == [("harness-error", True)] + [("harness-error", False)] * 2
    assert "was lost" in stored[0][0].reason
    assert all(
        "no live node of the Ray cluster can hold it (1 CPU/0 GPU) after 0.2 s" in r.reason for r, _ in stored[1:]
    )


def test_a_call_left_waiting_on_a_lost_head_does_not_hold_the_sweep(tmp_path, monkeypatch, gcs):
    server, address = gcs

    def script(ray: FakeRay, task: Task) -> None:
        if task.ref == 1 and task.waits == 1:
            server.close()
            ray.gcs_gone.set()  # the next placement group's creation waits forever
            task.answer = ("ok", None)  # its slot frees: the loop places the next cell

    fake = FakeRay(script)
    install(monkeypatch, fake)
    with pytest.raises(ClusterLost) as lost:
        sweep(tmp_path, fake, address, jobs(4), grace_s=0.3)
    records = list(RunStore.open(lost.value.run_dir).iter_records())
    assert [r.status for r in records] == ["ok", "harness-error"] and lost.value.running == 1
