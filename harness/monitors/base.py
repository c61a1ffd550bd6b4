"""What a monitor is: a sampler started on a cell's root process and stopped with results."""

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
