"""CPU and memory of a cell's process tree, sampled with psutil from the parent."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import psutil

from harness.cell.processes import tree
from harness.monitors.base import MonitorResult, SamplingMonitor
from harness.monitors.others import OthersMeter


@dataclass
class _Seen:
    """The latest cumulative counters of one process, and its peak RSS."""

    name: str
    cpu_s: float = 0.0  # CPU seconds while watched (CPU it spent before does not count)
    cpu_total_s: float = 0.0  # its cumulative CPU seconds at the last sample
    rss_peak_mb: float = 0.0
    ctx_vol: int = 0
    ctx_invol: int = 0


class CpuMonitor(SamplingMonitor):
    """Summed CPU % (100 = one core busy) of every process under the cell's root.

    CPU use comes from deltas of each live process's cumulative CPU time between samples,
    so short-lived workers count while they live (what a process does after the last
    sample that saw it is not counted: at most one period of it). A process that was already
    running when the monitor started (`harness watch --pid`) counts from then: the CPU it
    spent before is not the window's (counted, a server attached 14 s into its run read
    270 % of a core on a 2-core machine).

    Memory is the memory monitor's (harness.monitors.memory: PSS, which counts shared pages
    once; summed RSS counted them once per process and overstated a forked pool many times).

    Metrics: cpu_util_mean / cpu_util_p95 (% of one core, summed over the tree), cpu_s
    (CPU seconds of the whole tree), cpu_proc_cpu_s_max (the busiest process), cpu_ctx_vol /
    cpu_ctx_invol (voluntary and involuntary context switches, summed), cpu_procs_peak
    (most processes at once), cpu_procs_seen, cpu_procs ({pid: {name, cpu_s, rss_peak_mb,
    ctx_vol, ctx_invol}}, busiest first, at most PER_PROCESS_MAX), and the
    sampler's own cost: cpu_monitor_samples, cpu_monitor_cpu_s, cpu_monitor_cpu_pct (% of
    one core). The rest of the machine beside the tree (harness.monitors.others): cpu_others_mean
    (% of one core), cpu_others_rise_pct and cpu_others_rise_se (how much more it used at the
    end than at the start, from a least-squares line: a neighbour that started mid-window).
    Series: cpu_util (%), cpu_others (%).
    """

    name = "cpu"
    PER_PROCESS_MAX = 64

    WAIT_FIRST = True  # a sample is a delta since the one before

    def __init__(self, period_s: float = 0.5) -> None:
        super().__init__(period_s)
        self._result = MonitorResult()
        self._seen: dict[int, _Seen] = {}
        self._util: list[float] = []
        self._others_meter: OthersMeter | None = None
        self._others: list[tuple[float, float]] = []  # (wall time, % of a core used by everything else)
        self._procs_peak = 0
        self._last = 0.0

    def begin(self, root_pid: int) -> bool:
        for proc in tree(root_pid):  # what the tree's processes spent before now is not ours
            try:
                with proc.oneshot():
                    times = proc.cpu_times()
                    self._seen[proc.pid] = _Seen(proc.name(), cpu_total_s=times.user + times.system)
            except psutil.Error:
                continue
        self._others_meter = OthersMeter()
        self._last = time.monotonic()
        return True

    def sample(self) -> None:
        now = time.monotonic()
        dt, self._last = now - self._last, now
        procs = tree(self.root)
        cpu_delta = 0.0
        alive = 0
        pids = frozenset(proc.pid for proc in procs)
        for proc in procs:
            try:
                with proc.oneshot():
                    times = proc.cpu_times()
                    mem = proc.memory_info()
                    ctx = proc.num_ctx_switches()
                    seen = self._seen.get(proc.pid)
                    if seen is None:
                        seen = self._seen[proc.pid] = _Seen(proc.name())
            except psutil.Error:
                continue
            total = times.user + times.system
            delta = total - seen.cpu_total_s
            cpu_delta += delta
            seen.cpu_s += delta
            seen.cpu_total_s = total
            seen.rss_peak_mb = max(seen.rss_peak_mb, mem.rss / 2**20)
            seen.ctx_vol, seen.ctx_invol = ctx.voluntary, ctx.involuntary
            self._result.processes.setdefault(proc.pid, proc)
            alive += 1
        util = 100.0 * cpu_delta / dt if dt > 0 else 0.0
        wall = time.time()
        self._util.append(util)
        self._procs_peak = max(self._procs_peak, alive)
        self._result.series.append((wall, "cpu_util", util))
        others = self._others_meter.sample(dt, cpu_delta, pids) if self._others_meter else None
        if others is not None:
            self._others.append((wall, others))
            self._result.series.append((wall, "cpu_others", others))

    def result(self) -> MonitorResult:
        self._result.metrics = self.summarise()
        return self._result

    def summarise(self) -> dict[str, Any]:
        m: dict[str, Any] = {}
        if self._util:
            import numpy as np

            m["cpu_util_mean"] = float(np.mean(self._util))
            m["cpu_util_p95"] = float(np.percentile(self._util, 95))
        if self._others:
            from harness.model.stats import rise

            times, others = zip(*self._others, strict=True)
            m["cpu_others_mean"] = sum(others) / len(others)
            fitted = rise(times, others)
            if fitted is not None:
                m["cpu_others_rise_pct"], m["cpu_others_rise_se"] = fitted
        seen = self._seen
        m["cpu_s"] = sum(s.cpu_s for s in seen.values())
        m["cpu_proc_cpu_s_max"] = max((s.cpu_s for s in seen.values()), default=0.0)
        m["cpu_ctx_vol"] = sum(s.ctx_vol for s in seen.values())
        m["cpu_ctx_invol"] = sum(s.ctx_invol for s in seen.values())
        m["cpu_procs_peak"] = self._procs_peak
        m["cpu_procs_seen"] = len(seen)
        busiest = sorted(seen.items(), key=lambda item: -item[1].cpu_s)[: self.PER_PROCESS_MAX]
        m["cpu_procs"] = {
            str(pid): {
                "name": s.name,
                "cpu_s": round(s.cpu_s, 3),
                "rss_peak_mb": round(s.rss_peak_mb, 1),
                "ctx_vol": s.ctx_vol,
                "ctx_invol": s.ctx_invol,
            }
            for pid, s in busiest
        }
        m["cpu_monitor_samples"] = len(self._util)
        m.update(self.own_cost("cpu_monitor_cpu_s", "cpu_monitor_cpu_pct"))
        return m
