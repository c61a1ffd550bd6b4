"""Faults injected on purpose so the runner's failure paths run on real cells.

Each fault is what a real workload does when it breaks: an exception, a hang, an exit
without a result, a worker killed under it (the OOM killer's SIGKILL), a crash in native
code, a memory blow-up, and a process that escapes the cell (double fork + setsid).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import time
from collections.abc import Sequence
from multiprocessing.process import BaseProcess

from harness.probe import SuiteError, memory_limit_mb

OOM_CHUNK = 16 * 2**20
OOM_PAUSE_S = 0.05  # 320 MB/s: the watchdog (a reading every 0.5 s) ends it well before the cap


class InjectedFailure(RuntimeError):
    pass


def hang_forever() -> None:
    """Named so that a stack dump of a hung cell points here."""
    while True:
        time.sleep(1)


def orphan_forever() -> None:
    """The escaped grandchild's body: named so a leftover process is recognisable."""
    while True:
        time.sleep(1)


def blow_up_memory(limit_mb: float | None = None) -> None:
    """Allocates and touches memory, OOM_CHUNK every OOM_PAUSE_S, until the harness's memory
    watchdog ends the cell. Refuses to run without a limit: on a shared machine it would take
    everyone's memory; and stops itself at twice the limit (a safety cap) if nothing did."""
    limit = memory_limit_mb() if limit_mb is None else limit_mb
    if limit is None:
        raise SuiteError("fail=oom needs a memory limit on the cell: run with --memory-limit MB")
    hoard = []
    cap = 2 * limit * 2**20
    while len(hoard) * OOM_CHUNK < cap:
        chunk = bytearray(OOM_CHUNK)
        chunk[:: resource.getpagesize()] = b"\x01" * (OOM_CHUNK // resource.getpagesize())  # touch every page
        hoard.append(chunk)
        time.sleep(OOM_PAUSE_S)
    held = len(hoard) * OOM_CHUNK // 2**20
    hoard.clear()
    raise MemoryError(f"fail=oom: {held} MB held, twice the {limit:g} MB limit, and nothing ended the cell")


def escape() -> None:
    """Double fork: the grandchild starts its own session (out of the cell's process group)
    and is re-parented away from the cell once its parent exits at once."""
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)
        return
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        orphan_forever()
    finally:
        os._exit(0)


def inject(kind: str, workers: Sequence[BaseProcess] = ()) -> None:
    """Fires a fault. Those that return (kill_worker, orphan) let the cell go on."""
    if kind == "raise":
        raise InjectedFailure("injected failure (fail=raise)")
    if kind == "hang":
        hang_forever()
    if kind == "exit":
        os._exit(3)
    if kind == "kill_worker":
        victim = next((w for w in workers if w.pid is not None and w.is_alive()), None)
        if victim is None:
            raise InjectedFailure("fail=kill_worker: the cell has no live worker to kill")
        os.kill(victim.pid, signal.SIGKILL)
    if kind == "segfault":
        ctypes.string_at(0)  # reads address 0: SIGSEGV in native code, no Python exception
    if kind == "oom":
        blow_up_memory()
    if kind == "orphan":
        escape()
