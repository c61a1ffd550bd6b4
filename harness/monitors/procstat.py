"""Each process's traffic and scheduling, read from /proc: what the pipes and sockets carry,
how often threads wake, and how long the kernel ran each thread.

Per process, every period: `rchar`/`wchar` and `syscr`/`syscw` from /proc/PID/io (bytes
and calls through read and write: pipes, sockets, files; what psutil calls read_chars and
write_chars) and its CPU time. Per thread (processes with at most PER_THREAD_MAX threads):
/proc/PID/task/TID/schedstat (ns on a CPU, ns runnable in the run queue) and the voluntary
context switches from its status file: a process's wake-ups are the sum over its threads
(/proc/PID/status counts only the main thread). A thread that py-spy sees in Python code
while the kernel neither ran it nor had it ready to run was waiting for the GIL
(harness.watch.breakdown).

The sampler limits itself: after each pass the period stretches so that its own CPU time
stays under MAX_SHARE of a core (a 128-process tree with many threads is read less often,
never more slowly). No process is signalled or paused.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import psutil

from harness.cell.processes import tree
from harness.monitors.base import MonitorResult, SamplingMonitor

PER_THREAD_MAX = 64
MAX_SHARE = 0.02  # the sampler's own CPU, as a share of one core
DEFAULT_PERIOD_S = 0.5
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass
class ProcInfo:
    """What is known of one process of the tree."""

    pid: int
    ppid: int
    name: str
    cmdline: list[str]
    cwd: str | None
    first_seen: float
    last_seen: float
    # (wall, cpu_s, rchar, wchar, syscr, syscw, voluntary switches summed over threads)
    samples: list[tuple[float, float, int, int, int, int, int]] = field(default_factory=list)
    threads_read: bool = True  # False when it had more than PER_THREAD_MAX threads


@dataclass
class ThreadSamples:
    pid: int
    tid: int
    # (wall, seconds on a CPU, seconds runnable waiting for a CPU, voluntary switches)
    samples: list[tuple[float, float, float, int]] = field(default_factory=list)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def _io(pid: int) -> tuple[int, int, int, int]:
    raw = _read(f"/proc/{pid}/io")
    if raw is None:
        return (0, 0, 0, 0)
    values = {}
    for line in raw.splitlines():
        key, _, value = line.partition(b":")
        values[key] = int(value)
    return values.get(b"rchar", 0), values.get(b"wchar", 0), values.get(b"syscr", 0), values.get(b"syscw", 0)


def _cpu_s(raw: bytes) -> float:
    """utime + stime of the whole process from its /proc/PID/stat line."""
    fields = raw[raw.rfind(b")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime of the whole process


def thread_ids(pid: int) -> list[int]:
    """The thread ids of a process (empty when it is gone)."""
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def thread_sched(pid: int, tids: list[int] | None = None) -> dict[int, tuple[float, float]]:
    """Per thread of `pid`: (seconds on a CPU, seconds runnable in the run queue) so far, from
    /proc/PID/task/TID/schedstat (nanoseconds, unlike the 10 ms ticks of /proc/PID/stat); a
    thread whose file cannot be read is left out."""
    out = {}
    for tid in thread_ids(pid) if tids is None else tids:
        sched = _read(f"/proc/{pid}/task/{tid}/schedstat")
        if sched is None:
            continue
        run_ns, runq_ns = (int(x) for x in sched.split()[:2])
        out[tid] = (run_ns / 1e9, runq_ns / 1e9)
    return out


def _voluntary(path: str) -> int:
    raw = _read(path)
    if raw is None:
        return 0
    at = raw.find(b"voluntary_ctxt_switches:")
    if at < 0:
        return 0
    end = raw.find(b"\n", at)
    return int(raw[at + len(b"voluntary_ctxt_switches:") : end])


class ProcStatMonitor(SamplingMonitor):
    """Samples /proc for every process under the root. Results stay on the object
    (`procs`, `threads`) for harness.watch to combine; metrics hold its own cost."""

    name = "procstat"

    def __init__(self, period_s: float = DEFAULT_PERIOD_S, max_share: float = MAX_SHARE) -> None:
        super().__init__(period_s)
        self.max_share = max_share
        self.procs: dict[int, ProcInfo] = {}
        self.threads: dict[tuple[int, int], ThreadSamples] = {}
        self._handles: dict[int, psutil.Process] = {}
        self._passes = 0
        self._period_max = period_s

    def next_period(self, cost_s: float) -> float:
        """Stretched so that the sampler's own CPU stays under max_share of a core."""
        period = max(self.period_s, cost_s / self.max_share)
        self._period_max = max(self._period_max, period)
        return period

    def sample(self) -> None:
        self._passes += 1
        for proc in tree(self.root):
            self._handles.setdefault(proc.pid, proc)
            self._sample_process(proc)

    def _sample_process(self, proc: psutil.Process) -> None:
        pid = proc.pid
        wall = time.time()
        stat = _read(f"/proc/{pid}/stat")
        if stat is None or stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] == b"Z":
            return  # gone, or a zombie: its counters no longer move, its rates end here
        cpu = _cpu_s(stat)
        info = self.procs.get(pid)
        if info is None:
            try:
                info = ProcInfo(pid, proc.ppid(), proc.name(), proc.cmdline(), _cwd(proc), wall, wall)
            except psutil.Error:
                return
            self.procs[pid] = info
        else:
            _retitled(proc, info)
        info.last_seen = wall
        tids = thread_ids(pid)
        voluntary = 0
        if len(tids) <= PER_THREAD_MAX:
            for tid, (run_s, runq_s) in thread_sched(pid, tids).items():
                vol = _voluntary(f"/proc/{pid}/task/{tid}/status")
                voluntary += vol
                key = (pid, tid)
                if key not in self.threads:
                    self.threads[key] = ThreadSamples(pid, tid)
                self.threads[key].samples.append((wall, run_s, runq_s, vol))
        else:
            info.threads_read = False
            voluntary = _voluntary(f"/proc/{pid}/status")
        info.samples.append((wall, cpu, *_io(pid), voluntary))

    def result(self) -> MonitorResult:
        metrics: dict[str, Any] = {
            "procstat_passes": self._passes,
            "procstat_period_s": self.period_s,
            "procstat_period_max_s": self._period_max,
            **self.own_cost("procstat_cpu_s", "procstat_cpu_pct"),
        }
        return MonitorResult(metrics=metrics, processes=dict(self._handles))


def _retitled(proc: psutil.Process, info: ProcInfo) -> None:
    """The command line as it reads now: a process may retitle itself after it started (a Ray
    worker starts as default_worker.py and becomes `ray::EvaluationActor.evaluate_batch_piece`
    once an actor holds it), and roles read the title (harness.watch.roles)."""
    try:
        words = proc.cmdline()
    except psutil.Error:
        return
    if words and words != info.cmdline:
        info.cmdline = words


def _cwd(proc: psutil.Process) -> str | None:
    try:
        return proc.cwd()
    except psutil.Error:
        return None
