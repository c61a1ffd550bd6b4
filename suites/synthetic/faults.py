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

from harness.probe import SuiteError

OOM_CHUNK = 32 * 2**20


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


def blow_up_memory() -> None:
    """Allocates until the cell's address-space limit stops it with a MemoryError. Refuses
    to run without a limit: on a shared machine it would take everyone's memory."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        raise SuiteError("fail=oom needs a memory limit on the cell: run with --memory-limit MB")
    hoard = []
    try:
        while True:
            # bytes(n) is calloc'd: its address space counts against RLIMIT_AS at once,
            # without the time of writing every page.
            hoard.append(bytes(OOM_CHUNK))
    except MemoryError:
        held = len(hoard) * OOM_CHUNK // 2**20
        hoard.clear()  # the traceback keeps this frame alive; the error report needs memory
        raise MemoryError(f"fail=oom: allocation failed after {held} MB") from None


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
