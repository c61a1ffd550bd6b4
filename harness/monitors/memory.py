"""The memory a cell's process tree really uses (PSS summed), and the --memory-limit watchdog.

Summed RSS counts every shared page once per process: 128 forked workers of a 180 MB parent
report 23 GB on a machine that never ran short. PSS (proportional set size) splits each
shared page among the processes sharing it, so PSS summed over the tree counts it once.
Reading PSS costs the kernel a walk of the page tables (/proc/PID/smaps_rollup, about
0.5 ms of CPU per small process, far more for a large one), against microseconds for RSS
(/proc/PID/statm). So every tick reads RSS, and PSS is read only
- on a schedule that keeps its own cost near PSS_BUDGET of one core (at least every
  PSS_MAX_PERIOD_S, at most every tick), and
- when a limit is set and the RSS-based bound says the limit may have been passed: the tree's
  PSS can have grown since the last reading by at most what its summed RSS grew (a new page
  adds at least as much to RSS as to PSS), so `last PSS + RSS growth` bounds it from above.

Where PSS cannot be read (not Linux, or a process of another user) that process's RSS is
counted instead and `mem_note` says how many; the headline figure keeps its name because it
is PSS for the rest.

Metrics: mem_pss_peak_mb (peak of the tree's summed PSS), mem_pss_proc_peak_mb (the largest
single process's PSS), mem_uss_peak_mb (peak of the summed USS: pages no other process
shares), rss_proc_peak_mb (the largest single process's RSS), mem_pss_samples, mem_note, the
monitor's own cost (mem_monitor_cpu_s, mem_monitor_cpu_pct) and, when it ended a cell,
mem_limit_mb, mem_limit_by and mem_limit_reached_mb. Series: mem_pss_mb.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psutil

from harness.cell.processes import tree
from harness.monitors.base import MonitorResult, SamplingMonitor

PERIOD_S = 0.5  # as the CPU monitor: most of a tick is the walk of /proc that finds the tree
PSS_BUDGET = 0.01  # share of one core the scheduled PSS readings may cost
PSS_MAX_PERIOD_S = 5.0  # however costly, a PSS reading at least this often
LIMIT_MIN_RECHECK_S = 1.0  # an RSS bound above the limit re-reads PSS at most this often
MB = 2**20


@dataclass
class Reading:
    """One PSS reading of the whole tree."""

    pss_mb: float
    uss_mb: float
    processes: int
    fallback: int  # processes whose RSS stood in for their PSS
    proc_peak_mb: float


@dataclass
class LimitHit:
    """What the watchdog saw when it ended the cell."""

    limit_mb: float
    reached_mb: float
    processes: int
    by: str  # the mechanism that ended the cell, as the record names it

    def reason(self) -> str:
        return (
            f"the cell's processes used {self.reached_mb:,.0f} MB (PSS summed over {self.processes} processes), "
            f"past its --memory-limit of {self.limit_mb:g} MB: ended by the {self.by}"
        )


def read_pss(procs: list[psutil.Process]) -> Reading:
    """The tree's PSS and USS summed (a process's RSS where its PSS cannot be read)."""
    pss = uss = peak = 0.0
    fallback = alive = 0
    for proc in procs:
        try:
            full = proc.memory_full_info()
            value = getattr(full, "pss", None)
            if value is None:
                value, fallback = full.rss, fallback + 1
            pss += value
            uss += getattr(full, "uss", value)
        except psutil.AccessDenied:
            try:
                value = proc.memory_info().rss
            except psutil.Error:
                continue
            pss, uss, fallback = pss + value, uss + value, fallback + 1
        except psutil.Error:
            continue
        alive += 1
        peak = max(peak, value / MB)
    return Reading(pss / MB, uss / MB, alive, fallback, peak)


class MemoryMonitor(SamplingMonitor):
    """Samples the cell's tree every PERIOD_S; with `enforce()` also ends the tree when its
    PSS passes a limit (the --memory-limit watchdog)."""

    name = "memory"
    BY = "harness's memory watchdog (PSS of the process tree, sampled every 0.5 s)"

    def __init__(self, period_s: float = PERIOD_S) -> None:
        super().__init__(period_s)
        self._result = MonitorResult()
        self._limit_mb: float | None = None
        self._on_limit: Callable[[LimitHit], None] | None = None
        self.hit: LimitHit | None = None
        self._pss_peak = self._uss_peak = self._proc_pss_peak = self._proc_rss_peak = 0.0
        self._samples = 0
        self._fallback = 0
        self._last_pss: float | None = None
        self._rss_at_last_pss = 0.0
        self._next_pss = 0.0
        self._last_forced = 0.0

    def enforce(self, limit_mb: float, on_limit: Callable[[LimitHit], None]) -> None:
        """Call `on_limit` (from the sampling thread, once) when the tree's PSS passes the limit."""
        self._limit_mb, self._on_limit = limit_mb, on_limit

    def sample(self) -> None:
        now = time.monotonic()
        procs = tree(self.root)
        if not procs:
            return
        rss = 0.0
        for proc in procs:
            try:
                value = proc.memory_info().rss / MB
            except psutil.Error:
                continue
            rss += value
            self._proc_rss_peak = max(self._proc_rss_peak, value)
            self._result.processes.setdefault(proc.pid, proc)
        limit = self._limit_mb
        bound = None if self._last_pss is None else self._last_pss + max(0.0, rss - self._rss_at_last_pss)
        over = limit is not None and self.hit is None and (bound is None or bound > limit)
        forced = over and now - self._last_forced >= LIMIT_MIN_RECHECK_S
        if now < self._next_pss and not forced:
            return
        t0 = time.thread_time()
        reading = read_pss(procs)
        cost = time.thread_time() - t0
        self._next_pss = now + min(PSS_MAX_PERIOD_S, max(self.period_s, cost / PSS_BUDGET))
        if forced:
            self._last_forced = now
        self._last_pss, self._rss_at_last_pss = reading.pss_mb, rss
        self._samples += 1
        self._fallback = max(self._fallback, reading.fallback)
        self._pss_peak = max(self._pss_peak, reading.pss_mb)
        self._uss_peak = max(self._uss_peak, reading.uss_mb)
        self._proc_pss_peak = max(self._proc_pss_peak, reading.proc_peak_mb)
        self._result.series.append((time.time(), "mem_pss_mb", reading.pss_mb))
        if limit is not None and self.hit is None and reading.pss_mb > limit:
            self.hit = LimitHit(limit, reading.pss_mb, reading.processes, self.BY)
            if self._on_limit is not None:
                self._on_limit(self.hit)

    def result(self) -> MonitorResult:
        self._result.metrics = self.summarise()
        return self._result

    def summarise(self) -> dict[str, Any]:
        m: dict[str, Any] = {"mem_pss_samples": self._samples}
        if self._samples:
            m["mem_pss_peak_mb"] = self._pss_peak
            m["mem_pss_proc_peak_mb"] = self._proc_pss_peak
            m["mem_uss_peak_mb"] = self._uss_peak
        if self._proc_rss_peak:
            m["rss_proc_peak_mb"] = self._proc_rss_peak
        if self._fallback:
            m["mem_note"] = f"PSS unreadable for {self._fallback} process(es): their RSS was counted instead"
        if self.hit is not None:
            m["mem_limit_mb"] = self.hit.limit_mb
            m["mem_limit_reached_mb"] = self.hit.reached_mb
            m["mem_limit_by"] = self.hit.by
        m.update(self.own_cost("mem_monitor_cpu_s", "mem_monitor_cpu_pct"))
        return m
