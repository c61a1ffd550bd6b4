"""A GPU sample source that plays back recorded readings (the last one repeats).

The GPU monitor's tests, and benchmarks/monitor_cost.py (the sampler's own cost), run on
machines without a GPU through it: the monitor's bookkeeping is exercised, not NVML."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from harness.monitors.gpu import DeviceSample, GpuUnavailable


class ReplaySource:
    """Plays back recorded samples (the last one repeats), for tests and offline checks.

    `samples` is a list of readings, each a list of DeviceSample or of dicts with the same
    fields (`processes` keys may be strings, as JSON has them). `fail` makes open() raise.
    """

    def __init__(
        self,
        samples: Sequence[Iterable[DeviceSample | dict[str, Any]]],
        facts: dict[str, Any] | None = None,
        fail: str | None = None,
    ) -> None:
        self._samples = [[self._device(d) for d in reading] for reading in samples]
        self._facts = facts or {"gpu_driver": "replay", "gpu_nvml_version": "replay", "gpu_names": ["replay"]}
        self._fail = fail
        self._next = 0

    @staticmethod
    def _device(d: DeviceSample | dict[str, Any]) -> DeviceSample:
        if isinstance(d, DeviceSample):
            return d
        procs = d.get("processes", {})
        if procs is not None:
            procs = {int(pid): mb for pid, mb in procs.items()}
        return DeviceSample(d["index"], d["util_pct"], d["mem_used_mb"], d["mem_total_mb"], procs)

    def open(self) -> dict[str, Any]:
        if self._fail is not None:
            raise GpuUnavailable(self._fail)
        return dict(self._facts)

    def sample(self) -> list[DeviceSample]:
        if not self._samples:
            raise GpuUnavailable("replay has no samples")
        reading = self._samples[min(self._next, len(self._samples) - 1)]
        self._next += 1
        return reading

    def close(self) -> None:
        pass
