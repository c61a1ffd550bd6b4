"""A Ray cluster on this one machine, for the tests and the benchmark of node loss.

Ray's own way (ray.cluster_utils.Cluster, as Ray's multi-node tests do): a head and worker
nodes, each a raylet of its own with its own CPUs and a small object store, bound to
127.0.0.2 (loopback; Ray turns 127.0.0.1 in an address into the machine's outward address, so
a driver could not reach a cluster bound to it). The harness reaches it as any cluster:
`harness sweep --executor ray --address 127.0.0.2:PORT`, its driver attached to the head's
raylet (Ray prefers the head among the nodes of one host).

Every process the cluster starts carries TOKEN_ENV in its environment, so close() ends all of
them, the agents that a killed raylet leaves orphaned included, and `processes()` lists them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.2"
TOKEN_ENV = "HARNESS_LOCAL_RAY_CLUSTER"
OBJECT_STORE_BYTES = 80 * 2**20  # about Ray's least
# Ray's health checks made quick (the GCS marks a killed raylet's node dead in about 1.5 s
# instead of about 15 s): for tests only; the benchmark keeps Ray's defaults.
FAST_HEALTH = {"health_check_period_ms": 500, "health_check_failure_threshold": 3, "health_check_initial_delay_ms": 0}


def marked(token: str) -> list[psutil.Process]:
    """Live processes that carry this cluster's token."""
    found = []
    me = os.getpid()
    for proc in psutil.process_iter():
        try:
            if proc.pid != me and proc.environ().get(TOKEN_ENV) == token and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            pass
    return found


class LocalCluster:
    """A head with `head_cpus` CPUs and `workers` worker nodes of `cpus` CPUs each."""

    def __init__(self, workers: int = 2, cpus: int = 1, head_cpus: int = 1, fast_health: bool = False) -> None:
        self.cpus = cpus
        self.token = uuid.uuid4().hex
        self.workers: list[Any] = []
        self.removed: list[Any] = []
        self.cluster: Any = None
        self.orphans: list[psutil.Process] = []  # what was below the processes killed
        try:
            from ray.cluster_utils import Cluster

            head: dict[str, Any] = {
                "num_cpus": head_cpus, "node_ip_address": HOST, "object_store_memory": OBJECT_STORE_BYTES,
                "include_dashboard": False,
            }  # fmt: skip
            if fast_health:
                head["_system_config"] = FAST_HEALTH
            with self._environment():
                self.cluster = Cluster(initialize_head=True, head_node_args=head)
            for _ in range(workers):
                self.add_worker()
        except BaseException:
            self.close()
            raise

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    @contextlib.contextmanager
    def _environment(self) -> Iterator[None]:
        """While a node starts: the token (inherited by every process it starts) and this
        checkout first on PYTHONPATH (its workers import this harness)."""
        saved = {k: os.environ.get(k) for k in (TOKEN_ENV, "PYTHONPATH")}
        os.environ[TOKEN_ENV] = self.token
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), saved["PYTHONPATH"]) if p)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def add_worker(self) -> Any:
        with self._environment():
            node = self.cluster.add_node(
                num_cpus=self.cpus, node_ip_address=HOST, object_store_memory=OBJECT_STORE_BYTES
            )
        self.workers.append(node)
        return node

    def _below(self, node: Any) -> list[psutil.Process]:
        """What runs below a node's raylet (nothing when the node or its raylet is gone)."""
        try:
            return self.raylet(node).children(recursive=True) if node is not None else []
        except (psutil.Error, KeyError, IndexError):
            return []

    @staticmethod
    def raylet(node: Any) -> psutil.Process:
        from ray._private import ray_constants

        return psutil.Process(node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid)

    def kill_worker(self, node: Any) -> int:
        """SIGKILL the node's raylet (what an OOM killer or a lost machine does to it); the
        processes Ray started under it are left to fend for themselves, as on a real node.
        Returns the raylet's pid."""
        raylet = self.raylet(node)
        self.orphans += raylet.children(recursive=True)  # its agents carry no token: ended at close()
        raylet.send_signal(signal.SIGKILL)
        self.workers.remove(node)
        self.removed.append(node)
        return raylet.pid

    def kill_head(self) -> list[int]:
        """SIGKILL every process of the head node (its GCS, raylet and the rest)."""
        pids = []
        head = self.cluster.head_node
        for entries in head.all_processes.values():
            for entry in entries:
                try:
                    self.orphans += psutil.Process(entry.process.pid).children(recursive=True)
                    os.kill(entry.process.pid, signal.SIGKILL)
                    pids.append(entry.process.pid)
                except (ProcessLookupError, psutil.Error):
                    pass
        return pids

    def processes(self) -> list[psutil.Process]:
        """The cluster's live processes: those carrying its token, and those left below the
        processes killed (Ray's agents start without the token in their environment)."""
        found = {p.pid: p for p in marked(self.token)}
        for proc in self.orphans:
            try:
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    found[proc.pid] = proc
            except psutil.Error:
                pass
        return list(found.values())

    def close(self) -> None:
        """Every process of the cluster ended (Ray's shutdown first, then the token's), and
        the address file Ray wrote for it removed."""
        cluster = self.cluster
        if cluster is not None:
            for node in [cluster.head_node, *self.workers]:
                self.orphans += self._below(node)
            for node in self.removed:
                try:
                    node.kill_all_processes(check_alive=False, allow_graceful=False)
                except Exception:  # noqa: BLE001 - already gone
                    pass
            try:
                cluster.shutdown()
            except Exception:  # noqa: BLE001 - a head that was killed cannot be asked
                pass
        for _ in range(20):
            left = self.processes()
            if not left:
                break
            for proc in left:
                try:
                    proc.kill()
                except psutil.Error:
                    pass
            psutil.wait_procs(left, timeout=0.5)
        self._forget_address()

    def _forget_address(self) -> None:
        """Ray's `ray_current_cluster` file, when it names this cluster: an `ray.init()` with
        no address elsewhere on the machine would try to join it."""
        try:
            from ray._private.utils import get_ray_address_file

            path = Path(get_ray_address_file(None))
            if path.is_file() and self.cluster is not None and path.read_text() == self.address:
                path.unlink()
        except Exception:  # noqa: BLE001 - nothing to forget
            pass

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def cells_below(raylet: psutil.Process) -> list[psutil.Process]:
    """The harness's cell interpreters running below a node's raylet (they carry HARNESS_CELL)."""
    from harness.cell.processes import ENV_CELL

    found = []
    try:
        children = raylet.children(recursive=True)
    except psutil.Error:
        return found
    for proc in children:
        try:
            if ENV_CELL in proc.environ():
                found.append(proc)
        except psutil.Error:
            pass
    return found


def wait_for(predicate: Any, timeout_s: float, every_s: float = 0.2) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(every_s)
    return bool(predicate())
