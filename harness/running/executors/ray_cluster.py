"""The Ray cluster as a sweep's driver sees it while cells run on it: its nodes (which are
alive, which were lost and when) and its head (whether its GCS still answers).

Two threads of their own, so that the driver's loop never waits on the head: one asks Ray for
its nodes every NODES_S (`ray.nodes()`, which waits on the GCS), one opens a TCP connection to
the GCS every PROBE_S. A worker node is lost when Ray says so (the GCS stopped hearing its
raylet: about 15 s with Ray's default health checks); the head is lost when its GCS has not
accepted a connection for `grace_s`. Each loss is noted once, with its time.

The driver's loop calls the GCS only while the probe has just had an answer (head_answers);
should the head go silent in the middle of such a call (Ray's calls to the GCS wait, and Ray
ends the driver's process with exit 1 once it has given up on the GCS), `on_stuck` is called
from the probe's thread once the head is lost: the driver's last word, written before Ray's.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.runs.nodes import node_label
from harness.runs.store import utc_now

PROBE_S = 1.0  # how often the head's GCS is asked for a connection
NODES_S = 1.0  # how often Ray is asked for its nodes
STUCK_S = 10.0  # the driver's loop silent this long after the head was lost: it waits on the head
ANSWERED_S = 2.5  # an answer of the head this recent counts as "it answers now" (probes 1 s apart)


def gcs_answers(address: str, timeout_s: float = 2.0) -> bool:
    """Whether the GCS at HOST:PORT accepts a TCP connection (no Ray call: one that waits on a
    GCS that is gone would wait for as long as Ray's own reconnect timeout)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


@dataclass
class Node:
    """One node of the cluster as the sweep saw it (run.json's `ray_nodes`)."""

    id: str
    label: str  # "ADDRESS (ID8)", the name records, reports and messages use
    address: str
    cpus: float
    gpus: float
    head: bool
    cluster: str  # the GCS address it belonged to (a resumed run may meet a new head)
    joined: str  # UTC, when the sweep first saw it
    lost: str | None = None  # UTC, when the sweep learnt it was lost
    why: str | None = None  # what Ray (or the probe) said about its end
    cells_lost: list[str] = field(default_factory=list)  # cell-repeats whose attempt was lost with it

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def node_from_ray(info: dict[str, Any], cluster: str) -> Node:
    """A node from one entry of `ray.nodes()`."""
    resources = info.get("Resources") or {}
    address = str(info.get("NodeManagerAddress") or info.get("NodeName") or "?")
    node_id = str(info.get("NodeID") or "")
    return Node(
        id=node_id, label=node_label(address, node_id), address=address, cpus=float(resources.get("CPU", 0)),
        gpus=float(resources.get("GPU", 0)), head=bool(info.get("IsHeadNode") or "node:__internal_head__" in resources),
        cluster=cluster, joined=utc_now(),
    )  # fmt: skip


def death_reason(info: dict[str, Any]) -> str:
    said = str(info.get("DeathReasonMessage") or "").strip()
    return said or "Ray marked it dead"


class ClusterWatch:
    """The cluster's nodes and head, watched from two threads; read by the driver's loop."""

    def __init__(
        self,
        gcs_address: str,
        grace_s: float,
        list_nodes: Callable[[], list[dict[str, Any]]],
        on_stuck: Callable[[], None] | None = None,
    ) -> None:
        self.gcs_address = gcs_address
        self.grace_s = grace_s
        self._list_nodes = list_nodes
        self._on_stuck = on_stuck
        self._lock = threading.Lock()
        self._nodes: dict[str, Node] = {}
        self._changed = False
        self._head_lost_at: str | None = None
        self._answered = time.monotonic()  # the head's last answer to the probe
        self._beat = time.monotonic()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ the driver's side
    def start(self) -> None:
        self.poll_nodes()  # the nodes known before the first cell is placed
        for target, name in ((self._probe_head, "harness-ray-head"), (self._poll_loop, "harness-ray-nodes")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Ends both threads; one stuck in a call to a lost head is left (a daemon thread)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=PROBE_S + 1.0)

    def beat(self) -> None:
        """The driver's loop is alive (STUCK_S without a beat after a head loss: on_stuck)."""
        self._beat = time.monotonic()

    def nodes(self) -> dict[str, Node]:
        with self._lock:
            return dict(self._nodes)

    def node(self, node_id: str | None) -> Node | None:
        with self._lock:
            return self._nodes.get(node_id or "")

    def label(self, node_id: str | None) -> str:
        node = self.node(node_id)
        return node.label if node is not None else node_label("?", node_id or "?")

    def alive(self) -> list[Node]:
        with self._lock:
            return [n for n in self._nodes.values() if n.lost is None]

    def fits(self, cpus: float, gpus: float) -> bool:
        """Whether one live node could hold a bundle of this size (STRICT_PACK: one node)."""
        return any(n.cpus >= cpus and n.gpus >= gpus for n in self.alive())

    def capacity(self) -> float:
        """The CPUs of the live nodes."""
        return sum(n.cpus for n in self.alive())

    def mark_lost(self, node_id: str | None, why: str) -> None:
        """A node known lost before Ray says so (its task saw its raylet go)."""
        with self._lock:
            node = self._nodes.get(node_id or "")
            if node is not None and node.lost is None:
                node.lost, node.why = utc_now(), why
                self._changed = True

    def note_lost_cell(self, node_id: str | None, cell_repeat: str) -> None:
        """A cell-repeat's attempt was lost with this node (run.json's `cells_lost`)."""
        with self._lock:
            node = self._nodes.get(node_id or "")
            if node is not None:
                node.cells_lost.append(cell_repeat)
                self._changed = True

    def changed(self) -> bool:
        """Whether a node joined or was lost since the last call."""
        with self._lock:
            changed, self._changed = self._changed, False
            return changed

    @property
    def head_lost_at(self) -> str | None:
        return self._head_lost_at

    def head_answers(self) -> bool:
        """Whether the head answered the probe just now: the driver's loop makes its calls
        that wait on the GCS (placing, locating and removing bundles) only then, so that a
        head that goes silent finds it in calls that do not wait on it."""
        return self._head_lost_at is None and time.monotonic() - self._answered < ANSWERED_S

    # ------------------------------------------------------------------ the threads
    def poll_nodes(self) -> None:
        """One reading of `ray.nodes()`: nodes that joined, nodes Ray now says are dead."""
        infos = self._list_nodes()
        with self._lock:
            for info in infos:
                node_id = str(info.get("NodeID") or "")
                if not node_id:
                    continue
                known = self._nodes.get(node_id)
                alive = bool(info.get("Alive", info.get("alive", True)))
                if known is None:
                    if not alive:
                        continue  # a node lost before this sweep began: not this sweep's
                    known = self._nodes[node_id] = node_from_ray(info, self.gcs_address)
                    self._changed = True
                if not alive and known.lost is None:
                    known.lost, known.why = utc_now(), death_reason(info)
                    self._changed = True

    def _poll_loop(self) -> None:
        while not self._stop.wait(NODES_S):
            if self._head_lost_at is not None:
                return
            try:
                self.poll_nodes()
            except Exception:  # noqa: BLE001 - a failed reading is retried; the probe judges the head
                continue

    def _probe_head(self) -> None:
        silent_since: float | None = None
        while not self._stop.wait(PROBE_S):
            if self._head_lost_at is None:
                if gcs_answers(self.gcs_address):
                    silent_since, self._answered = None, time.monotonic()
                    continue
                now = time.monotonic()
                silent_since = silent_since if silent_since is not None else now
                if now - silent_since < self.grace_s:
                    continue
                self._lose_head()
            elif self._on_stuck is not None and time.monotonic() - self._beat > STUCK_S:
                self._on_stuck()
                return

    def _lose_head(self) -> None:
        with self._lock:
            self._head_lost_at = utc_now()
            self._beat = time.monotonic()  # the loop's silence counts from the loss
            for node in self._nodes.values():
                if node.head and node.lost is None:
                    node.lost, node.why = self._head_lost_at, f"its GCS did not answer for {self.grace_s:g} s"
            self._changed = True
