"""CPU and memory of a cell's process tree, sampled with psutil from the parent."""

from __future__ import annotations

import threading
import time

import psutil

from harness.monitors import MonitorResult


def tree(root_pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(root_pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


class CpuMonitor:
    """Summed CPU % (100 = one core busy) and RSS of every process under the cell's root.

    CPU use comes from deltas of each live process's cumulative CPU time between samples,
    so short-lived workers count while they live.
    """

    name = "cpu"

    def __init__(self, period_s: float = 0.5) -> None:
        self.period_s = period_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._result = MonitorResult()
        self._cpu_seen: dict[int, float] = {}
        self._util: list[float] = []
        self._rss_peak = 0.0
        self._procs_peak = 0
        self._own_cpu_s = 0.0

    def start(self, root_pid: int) -> None:
        self._root = root_pid
        self._thread = threading.Thread(target=self._loop, name="cpu-monitor", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self.period_s):
            now = time.monotonic()
            t0 = time.thread_time()
            self._sample(now - last)
            self._own_cpu_s += time.thread_time() - t0
            last = now

    def _sample(self, dt: float) -> None:
        procs = tree(self._root)
        cpu_delta = 0.0
        rss = 0.0
        for proc in procs:
            try:
                times = proc.cpu_times()
                mem = proc.memory_info()
            except psutil.Error:
                continue
            total = times.user + times.system
            cpu_delta += total - self._cpu_seen.get(proc.pid, 0.0)
            self._cpu_seen[proc.pid] = total
            self._result.processes.setdefault(proc.pid, proc)
            rss += mem.rss
        util = 100.0 * cpu_delta / dt if dt > 0 else 0.0
        wall = time.time()
        self._util.append(util)
        self._rss_peak = max(self._rss_peak, rss / 2**20)
        self._procs_peak = max(self._procs_peak, len(procs))
        self._result.series += [(wall, "cpu_util", util), (wall, "rss_mb", rss / 2**20)]

    def stop(self) -> MonitorResult:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        m = self._result.metrics
        if self._util:
            import numpy as np

            m["cpu_util_mean"] = float(np.mean(self._util))
            m["cpu_util_p95"] = float(np.percentile(self._util, 95))
        m["rss_peak_mb"] = self._rss_peak
        m["cpu_procs_peak"] = self._procs_peak
        m["cpu_monitor_samples"] = len(self._util)
        m["cpu_monitor_cpu_s"] = self._own_cpu_s
        return self._result
