"""The instruments over one program, as one monitor: start them on a process tree, stop them,
and get the combined metrics, series and cost.

Used two ways: `harness watch` (harness.running.watching) around a command or a running PID,
and the cell runner around every cell of a suite that sets `Suite.watch` (a program the
suite only launches). The parts: py-spy stacks (harness.monitors.stacks), /proc traffic
and scheduling (harness.monitors.procstat), what blocked threads wait on
(harness.monitors.waits), the torch hook (harness.monitors.torch_calls),
rates in the log (harness.monitors.logrates). Their own CPU is summed into `watch_cpu_s`
and `watch_cpu_pct` (% of one core over the time watched); the torch hook's time is spent
inside the program and reported apart (`torch_hook_s`). An instrument that saw nothing
(harness.monitors.blind: py-spy missing or not allowed, no sleeping thread's call readable)
leaves a warning naming why and the fix.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.monitors import blind
from harness.monitors.base import MonitorResult
from harness.monitors.logrates import LogRatesMonitor, compile_pattern
from harness.monitors.procstat import ProcStatMonitor
from harness.monitors.stacks import DEFAULT_BUDGET_HZ, StacksMonitor
from harness.monitors.torch_calls import TorchCallsMonitor
from harness.monitors.waits import WaitsMonitor
from harness.watch import breakdown, roles, signals, waits
from harness.watch.chrometrace import ThreadTimeline, parse


@dataclass(frozen=True)
class WatchOptions:
    """What the user may tune (harness watch's flags); the defaults serve suite cells."""

    budget_hz: int = DEFAULT_BUDGET_HZ
    torch_hook: bool = True
    rate_regex: str | None = None
    batch_limit: int | None = None


class Instruments:
    """A Monitor (start/stop) that also prepares the program's environment (`environ`)."""

    name = "watch"

    def __init__(
        self,
        workdir: Path,
        logs: list[Path],
        options: WatchOptions | None = None,
        program: list[str] | None = None,
        attached: bool = False,
        fed: bool = False,
    ) -> None:
        """`logs`: files to follow for rates (an attached program's); `fed`: the program's
        output is handed to `self.log.take` as it arrives instead."""
        options = options or WatchOptions()
        self.workdir = workdir
        self.program = program
        self.stacks = StacksMonitor(workdir, options.budget_hz, skip=roles.is_harness_own)
        self.procstat = ProcStatMonitor()
        self.waits = WaitsMonitor()
        hook = options.torch_hook and not attached
        why = "attached to a running process: the hook can only be put in at start" if attached else None
        self.torch = TorchCallsMonitor(
            workdir, enabled=hook, reason=why or "off (--no-torch-hook)", batch_limit=options.batch_limit
        )
        self.log = LogRatesMonitor(logs, compile_pattern(options.rate_regex), from_start=not attached, fed=fed)
        self._parts = (self.procstat, self.waits, self.stacks, self.log, self.torch)
        self._started = 0.0
        self._ended = 0.0

    def environ(self, env: dict[str, str]) -> dict[str, str]:
        """The program's environment with the torch hook in it (unless it is off)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        return self.torch.environ(env)

    def start(self, root_pid: int) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._started = time.time()
        for part in self._parts:
            part.start(root_pid)

    def stop(self) -> MonitorResult:
        self._ended = time.time()
        results = [part.stop() for part in self._parts]
        metrics: dict[str, Any] = {}
        series: list[tuple[float, str, float]] = []
        processes = {}
        for result in results:
            metrics.update(result.metrics)
            series += result.series
            processes.update(result.processes)
        try:
            found, rows = self._combine()
        except Exception as exc:  # noqa: BLE001 - what the parts measured must still reach the record
            found, rows = {"watch_error": f"the breakdown failed: {type(exc).__name__}: {exc}"}, []
        metrics.update(found)
        series += rows
        metrics.update(self._cost(metrics))
        return MonitorResult(metrics=metrics, series=series, processes=processes, warnings=blind.warnings(metrics))

    def _combine(self) -> tuple[dict[str, Any], list[tuple[float, str, float]]]:
        """Stacks, /proc and roles -> where the time went and the generic signals."""
        timelines = self._timelines()
        entries = _entries(timelines)
        threads = {"stacks_threads": len(timelines)}  # threads py-spy's traces hold (none: it saw nothing)
        procs = self.procstat.procs
        known = {pid: roles.Proc(pid, p.ppid, p.cmdline, p.first_seen, p.last_seen) for pid, p in procs.items()}
        assigned = roles.assign(known, entries)
        edges = breakdown.bin_edges(self._started, self._ended)
        sched = {key: t.samples for key, t in self.procstat.threads.items()}
        where = breakdown.build(edges, timelines, sched)
        metrics, series = signals.collect(where, procs, assigned, timelines, entries, sched, self.program)
        rows = {int(pid): row for pid, row in metrics.get("watch_procs", {}).items()}
        wakeups = {pid: row["wakeups_hz"] for pid, row in rows.items() if "wakeups_hz" in row}
        runnable = {pid: row["runnable_cores"] for pid, row in rows.items() if "runnable_cores" in row}
        metrics.update(waits.metrics(self.waits.samples, assigned, wakeups, runnable))
        return threads | metrics, series

    def window(self) -> float:
        """Seconds the instruments watched (start to stop)."""
        return max(0.0, (self._ended or time.time()) - self._started) if self._started else 0.0

    def _timelines(self) -> list[ThreadTimeline]:
        out = []
        for rec in self.stacks.recordings:
            info = self.procstat.procs.get(rec.pid)
            out += parse(rec.output, rec.started, info.cwd if info else None)
        return out

    def _cost(self, metrics: dict[str, Any]) -> dict[str, Any]:
        watched = max(self._ended - self._started, 1e-9)
        parts = {
            "stacks": metrics.get("stacks_cpu_s", 0.0),
            "procstat": metrics.get("procstat_cpu_s", 0.0),
            "log": metrics.get("log_monitor_cpu_s", 0.0),
            "waits": metrics.get("waits_cpu_s", 0.0),
        }
        total = sum(parts.values())
        return {
            "watch_s": watched,
            "watch_cpu_s": total,
            "watch_cpu_pct": 100.0 * total / watched,
            "watch_cost_pct": {k: round(100.0 * v / watched, 3) for k, v in parts.items()},
        }


def _entries(timelines: list[ThreadTimeline]) -> dict[int, str | None]:
    """pid -> the function its main thread spends most time under (its role's key); a
    process whose main thread was not sampled takes its busiest thread's."""
    ranked = sorted(timelines, key=lambda line: (line.name == "MainThread", sum(line.entries.values())))
    return {line.pid: line.entries.most_common(1)[0][0] for line in ranked if line.entries}
