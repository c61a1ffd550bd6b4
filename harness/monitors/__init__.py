"""Samplers that run in the parent while a cell runs, over the cell's whole process tree.

Each monitor samples on its own background thread and, when stopped, hands back summary
metrics (prefixed `cpu_`/`gpu_`), a time series, and facts for run.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import psutil


@dataclass
class MonitorResult:
    metrics: dict[str, Any] = field(default_factory=dict)
    # (wall-clock time, metric, value): the runner aligns these with the cell's own series
    series: list[tuple[float, str, float]] = field(default_factory=list)
    # every process of the cell seen while sampling, so the runner can end escaped ones
    processes: dict[int, psutil.Process] = field(default_factory=dict)


class Monitor(Protocol):
    name: str

    def start(self, root_pid: int) -> None: ...

    def stop(self) -> MonitorResult: ...


def default_monitors() -> list[Monitor]:
    from harness.monitors.cpu import CpuMonitor

    monitors: list[Monitor] = [CpuMonitor()]
    try:
        from harness.monitors.gpu import GpuMonitor
    except ImportError:
        return monitors
    monitors.append(GpuMonitor())
    return monitors
