"""A Ray to run a suite's actors on: the caller's cluster, or a private one for one run.

Used by the `ray` backends of the mccfr and selfplay suites. Inside a Ray cluster (this
process already called `ray.init`, or RAY_ADDRESS names one) the backend connects and
leaves the cluster as it found it. Otherwise it starts a private Ray on loopback with
the dashboard off, sized to what the cell needs (`num_cpus` may exceed the cores: an
oversubscribed cell is a legitimate cell, and Ray must not refuse its actors), and shuts
it down when the run ends, so that no Ray process outlives the cell.

Ray is an optional extra: importing this module is cheap, `ray` is imported on use.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.probe import SuiteError

REPO_ROOT = str(Path(__file__).resolve().parents[1])
_OBJECT_STORE_BYTES = 512 * 1024**2  # deltas and replies are small; Ray's default is 30% of memory

last_session_dir: str | None = None  # of the latest private Ray (tests look for its processes)


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise SuiteError('backend=ray needs Ray: pip install -e ".[ray]"') from None
    return ray


def _runtime_env() -> dict[str, Any]:
    # actors import `suites.*` by name: they need the repository on their path
    path = os.pathsep.join(p for p in (REPO_ROOT, os.environ.get("PYTHONPATH")) if p)
    return {"env_vars": {"PYTHONPATH": path}}


@contextmanager
def ray_session(num_cpus: int, num_gpus: int = 0) -> Iterator[Any]:
    """Yields the `ray` module, connected; a private Ray lives only inside the block."""
    global last_session_dir
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    address = os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, log_to_driver=False, runtime_env=_runtime_env())
        try:
            yield ray
        finally:
            ray.shutdown()  # a driver's shutdown disconnects; the cluster stays up
        return
    ray.init(
        address="local",  # never attach to some other local cluster by accident
        _node_ip_address="127.0.0.1",
        include_dashboard=False,
        log_to_driver=False,
        num_cpus=max(1, num_cpus),
        num_gpus=num_gpus,
        object_store_memory=_OBJECT_STORE_BYTES,
        runtime_env=_runtime_env(),
    )
    last_session_dir = _session_dir(ray)
    try:
        yield ray
    finally:
        shutdown(ray)


def shutdown(ray: Any) -> None:
    """Shut down the Ray this process started and wait until its processes have exited."""
    processes = session_processes(_session_dir(ray))
    ray.shutdown()
    _wait_for_exit(processes)


def _session_dir(ray: Any) -> str | None:
    try:
        return ray._private.worker._global_node.get_session_dir_path()
    except AttributeError:  # pragma: no cover - a future Ray moved it
        return None


def session_processes(session_dir: str | None) -> list[Any]:
    """Live processes of one Ray session: those that name its directory (GCS, raylet,
    monitors) and their descendants (agents and workers, which rename themselves `ray::*`)."""
    import psutil

    if not session_dir:
        return []
    name = os.path.basename(session_dir)
    found: dict[int, Any] = {}
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(name in part for part in proc.info["cmdline"] or ()):
                found[proc.pid] = proc
                found.update((child.pid, child) for child in proc.children(recursive=True))
        except psutil.Error:
            continue
    return list(found.values())


def _wait_for_exit(processes: list[Any], timeout_s: float = 10.0) -> None:
    """`ray.shutdown` signals the private Ray's processes; wait until they are gone, and
    end any that linger (ours alone: they belong to our session)."""
    import psutil

    _, alive = psutil.wait_procs(processes, timeout=timeout_s)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=2.0)
