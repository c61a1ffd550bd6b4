"""Samplers that run in the parent while a cell runs, over the cell's whole process tree.

Each monitor samples on its own background thread (base.SamplingMonitor runs it) and, when
stopped, hands back summary metrics (prefixed `cpu_`/`mem_`/`gpu_`), a time series, and facts
for run.json.
"""

from __future__ import annotations

from harness.monitors.base import Monitor, MonitorResult

__all__ = ["Monitor", "MonitorResult", "default_monitors"]


def default_monitors() -> list[Monitor]:
    from harness.monitors.cpu import CpuMonitor
    from harness.monitors.memory import MemoryMonitor

    monitors: list[Monitor] = [CpuMonitor(), MemoryMonitor()]
    try:
        from harness.monitors.gpu import GpuMonitor
    except ImportError:
        return monitors
    monitors.append(GpuMonitor())
    return monitors
