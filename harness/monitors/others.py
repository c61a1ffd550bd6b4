"""The rest of the machine's CPU use beside a measured process tree: what neighbours took.

On a shared machine a rate can fall because the program slowed down or because something
else started using the cores. The kernel's aggregate counters (/proc/stat: busy and steal
time over every CPU) less the measured tree's CPU and the harness's own processes (its
monitors, py-spy recorders) leave the CPU that others used, sampled on the same clock as
the tree's, so the DRIFT rule can tell a fall the program caused from one that coincided
with a neighbour taking the machine (steal counts as others: a hypervisor's other guests).
"""

from __future__ import annotations

import os
import time

import psutil

from harness.monitors import machine

_IDLE_FIELDS = (3, 4)  # idle, iowait
_FIELDS = 8  # user nice system idle iowait irq softirq steal (guest time is inside user)
OWN_REFRESH_S = 2.0  # how often the harness's own processes are listed again (py-spy recorders come and go)


class OthersMeter:
    """Cores busy outside the measured tree and the harness, between consecutive samples."""

    def __init__(self) -> None:
        self._cpus = os.cpu_count() or 1
        self._stat = machine.cpu_times()
        self._own: dict[int, float] = {}
        self._procs: list[psutil.Process] = []
        self._listed_at = -OWN_REFRESH_S
        self._own_delta(frozenset())

    def _own_processes(self) -> list[psutil.Process]:
        """This process and its descendants, listed again every OWN_REFRESH_S: listing walks
        all of /proc, which doubled the CPU monitor's cost when done every sample."""
        now = time.monotonic()
        if now - self._listed_at >= OWN_REFRESH_S:
            me = psutil.Process()
            try:
                self._procs = [me, *me.children(recursive=True)]
            except psutil.Error:
                self._procs = [me]
            self._listed_at = now
        return self._procs

    def _own_delta(self, tree_pids: frozenset[int]) -> float:
        """CPU seconds the harness's own processes (this one, its children outside the tree)
        spent since the last call."""
        procs = self._own_processes()
        delta = 0.0
        for proc in procs:
            if proc.pid in tree_pids:
                continue
            try:
                times = proc.cpu_times()
            except psutil.Error:
                continue
            total = times.user + times.system
            delta += total - self._own.get(proc.pid, total)
            self._own[proc.pid] = total
        return delta

    def sample(self, dt: float, tree_cpu_s: float, tree_pids: frozenset[int]) -> float | None:
        """% of one core used by everything else over the last `dt` seconds, in which the
        tree used `tree_cpu_s`; None where /proc/stat cannot be read."""
        stat = machine.cpu_times()
        before, self._stat = self._stat, stat
        own_s = self._own_delta(tree_pids)
        if not before or not stat or len(stat) < _FIELDS or dt <= 0:
            return None
        spent = [after - prior for after, prior in zip(stat[:_FIELDS], before[:_FIELDS], strict=True)]
        total = sum(spent)
        if total <= 0:
            return None
        busy = total - sum(spent[i] for i in _IDLE_FIELDS)
        busy_cores = self._cpus * busy / total
        return max(0.0, 100.0 * (busy_cores - (tree_cpu_s + own_s) / dt))
