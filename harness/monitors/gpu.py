"""GPU use of a cell, sampled through NVML (nvidia-ml-py) from the parent.

Per device: utilisation % and memory used/total; per process: the GPU memory of every
process of the cell's tree that holds a CUDA context (nvmlDeviceGetComputeRunningProcesses),
so a `device=cuda` run whose workers built their nets on the CPU shows up as PIDs missing
from the GPU's list. No driver or library is a recorded fact, not a crash: the metrics are
then only `gpu_reason`, saying why.

The NVML calls sit behind `GpuSource` (open/sample/close), so tests replay recorded
NVML-like samples through a source of their own instead of needing a GPU.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import psutil

from harness.monitors.base import MonitorResult, SamplingEnded, SamplingMonitor

DEFAULT_PERIOD_S = 0.1  # 10 Hz: NVML's utilisation counter itself averages over 1/6 s to 1 s
SERIES_BIN_S = 0.5  # series rows are averaged into bins this long, so long cells stay small


class GpuUnavailable(SamplingEnded):
    """NVML cannot be used (no library, no driver, no device, a failed query); the message says why."""


@dataclass
class DeviceSample:
    index: int
    util_pct: float
    mem_used_mb: float
    mem_total_mb: float
    # pid -> GPU memory in MB (None where the driver does not report it, e.g. under MIG);
    # None for the whole map when the process list itself is unavailable
    processes: dict[int, float | None] | None = field(default_factory=dict)


class GpuSource(Protocol):
    def open(self) -> dict[str, Any]:
        """Initialise; return facts (driver and NVML versions, devices). Raises GpuUnavailable."""
        ...

    def sample(self) -> list[DeviceSample]:
        """One reading of every device. Raises GpuUnavailable."""
        ...

    def close(self) -> None: ...


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class PynvmlSource:
    """The real source: a handful of pynvml calls, NVMLError turned into GpuUnavailable."""

    def __init__(self) -> None:
        self._nvml: Any = None
        self._handles: list[Any] = []
        self._procs_supported = True

    def open(self) -> dict[str, Any]:
        try:
            import pynvml
        except ImportError as exc:
            raise GpuUnavailable(f"nvidia-ml-py not importable: {exc}") from None
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise GpuUnavailable(f"NVML unavailable: {exc}") from None
        self._nvml = pynvml
        try:
            count = pynvml.nvmlDeviceGetCount()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            facts = {
                "gpu_driver": _text(pynvml.nvmlSystemGetDriverVersion()),
                "gpu_nvml_version": _text(pynvml.nvmlSystemGetNVMLVersion()),
                "gpu_names": [_text(pynvml.nvmlDeviceGetName(h)) for h in self._handles],
            }
        except pynvml.NVMLError as exc:
            self.close()
            raise GpuUnavailable(f"NVML query failed: {exc}") from None
        if not self._handles:
            self.close()
            raise GpuUnavailable("NVML found no devices")
        return facts

    def sample(self) -> list[DeviceSample]:
        nvml = self._nvml
        out = []
        try:
            for index, handle in enumerate(self._handles):
                util = nvml.nvmlDeviceGetUtilizationRates(handle)
                mem = nvml.nvmlDeviceGetMemoryInfo(handle)
                out.append(
                    DeviceSample(index, float(util.gpu), mem.used / 2**20, mem.total / 2**20, self._processes(handle))
                )
        except nvml.NVMLError as exc:
            raise GpuUnavailable(f"NVML query failed while sampling: {exc}") from None
        return out

    def _processes(self, handle: Any) -> dict[int, float | None] | None:
        if not self._procs_supported:
            return None
        nvml = self._nvml
        try:
            procs = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except nvml.NVMLError_NotSupported:
            self._procs_supported = False
            return None
        # usedGpuMemory is None where NVML cannot tell (NVML_VALUE_NOT_AVAILABLE)
        return {int(p.pid): (p.usedGpuMemory / 2**20 if p.usedGpuMemory is not None else None) for p in procs}

    def close(self) -> None:
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except self._nvml.NVMLError:
                pass
            self._nvml = None


class CellMembership:
    """Which PIDs belong to the cell: the cell is its session's leader and its workers stay
    in that session (the suite contract), so a GPU PID is the cell's if it shares the
    session or descends from the root. Each PID is judged once and the answer cached, so
    a sample costs a dict lookup per listed process, not a /proc walk (a PID reused within
    one cell's lifetime would need the kernel's PID space to wrap around)."""

    def __init__(self, root_pid: int) -> None:
        self.root = root_pid
        self._cache: dict[int, psutil.Process | None] = {}

    def check(self, pid: int) -> psutil.Process | None:
        if pid in self._cache:
            return self._cache[pid]
        try:
            proc = psutil.Process(pid)
        except psutil.Error:
            proc = None  # gone, or in another PID namespace (a container's host PIDs)
        if proc is not None and not self._is_ours(proc):
            proc = None
        self._cache[pid] = proc
        return proc

    def _is_ours(self, proc: psutil.Process) -> bool:
        if proc.pid == self.root:
            return True
        try:
            if os.getsid(proc.pid) == self.root:
                return True
        except OSError:
            pass
        try:
            return any(parent.pid == self.root for parent in proc.parents())
        except psutil.Error:
            return False


class GpuMonitor(SamplingMonitor):
    """Samples every device at `period_s` on a background thread while the cell runs.

    Metrics (absent, save `gpu_reason`, when NVML is unavailable):
    gpu_util_mean / gpu_util_p95 (%, over the devices the cell used, or all when it used
    none), gpu_mem_peak_mb (peak summed GPU memory of the cell's processes; device memory
    used when the driver does not report per-process memory), gpu_device_mem_peak_mb,
    gpu_mem_total_mb, gpu_pids (the cell's processes seen on a GPU), gpu_procs_peak (most
    of them at once), gpu_other_pids (processes on the GPU that are not the cell's),
    gpu_proc_mem_peak_mb (pid -> MB), gpu_devices_used, gpu_samples, gpu_period_s,
    gpu_driver, gpu_nvml_version, gpu_monitor_cpu_s and gpu_monitor_cpu_pct (the
    sampler thread's own CPU, % of one core). Series: gpu_util (%) and gpu_mem_mb.
    """

    name = "gpu"

    def __init__(self, source: GpuSource | None = None, period_s: float = DEFAULT_PERIOD_S) -> None:
        super().__init__(period_s)
        self.source: GpuSource = source if source is not None else PynvmlSource()
        self._result = MonitorResult()
        self._facts: dict[str, Any] = {}
        self._readings: list[tuple[float, list[DeviceSample]]] = []

    def begin(self, root_pid: int) -> bool:
        return self.open(root_pid)

    def open(self, root_pid: int) -> bool:
        """Open the source for the cell under `root_pid`, without the thread (tests sample
        by hand with sample()). False, with the reason kept, when NVML is unavailable."""
        self._members = CellMembership(root_pid)
        try:
            self._facts = self.source.open()
        except GpuUnavailable as exc:
            self.reason = str(exc)
            return False
        self.started = time.monotonic()
        return True

    def sample(self) -> None:
        """Take one reading now (the thread calls this; tests may too). GpuUnavailable ends
        the sampling, with its reason kept."""
        reading = self.source.sample()
        wall = time.time()
        for device in reading:
            for pid in device.processes or {}:
                proc = self._members.check(pid)
                if proc is not None:
                    self._result.processes.setdefault(pid, proc)
        self._readings.append((wall, reading))

    def finish(self) -> None:
        self.source.close()

    def result(self) -> MonitorResult:
        self._result.metrics = self.summarise()
        return self._result

    # ------------------------------------------------------------------ summary
    def summarise(self) -> dict[str, Any]:
        import numpy as np

        readings = list(self._readings)
        if not readings:
            return {"gpu_reason": self.reason or "no GPU sample was taken"}
        ours = set(self._result.processes)
        used_devices = sorted({d.index for _, reading in readings for d in reading if ours & set(d.processes or {})})
        focus = set(used_devices) or {d.index for d in readings[0][1]}
        util, device_mem, proc_mem, procs_at_once = [], [], [], []
        peak_by_pid: dict[int, float] = {}
        others: set[int] = set()
        per_process_known = False
        mem_total = 0.0
        for _, reading in readings:
            devices = [d for d in reading if d.index in focus] or reading
            util.append(float(np.mean([d.util_pct for d in devices])))
            device_mem.append(sum(d.mem_used_mb for d in devices))
            mem_total = sum(d.mem_total_mb for d in devices)
            cell_mb, cell_pids = 0.0, set()
            for d in reading:
                for pid, mb in (d.processes or {}).items():
                    if pid not in ours:
                        others.add(pid)
                        continue
                    cell_pids.add(pid)
                    if mb is not None:
                        per_process_known = True
                        cell_mb += mb
                        peak_by_pid[pid] = max(peak_by_pid.get(pid, 0.0), mb)
            proc_mem.append(cell_mb)
            procs_at_once.append(len(cell_pids))
        mem_series = proc_mem if per_process_known else device_mem
        metrics: dict[str, Any] = {
            "gpu_util_mean": float(np.mean(util)),
            "gpu_util_p95": float(np.percentile(util, 95)),
            "gpu_mem_peak_mb": float(max(mem_series)),
            "gpu_mem_source": "processes" if per_process_known else "device",
            "gpu_device_mem_peak_mb": float(max(device_mem)),
            "gpu_mem_total_mb": float(mem_total),
            "gpu_pids": sorted(ours),
            "gpu_procs_peak": int(max(procs_at_once)),
            "gpu_other_pids": sorted(others),
            "gpu_proc_mem_peak_mb": {str(pid): mb for pid, mb in sorted(peak_by_pid.items())},
            "gpu_devices_used": used_devices,
            "gpu_samples": len(readings),
            "gpu_period_s": self.period_s,
        }
        metrics.update(self.own_cost("gpu_monitor_cpu_s", "gpu_monitor_cpu_pct"))
        if any(d.processes is None for _, reading in readings for d in reading):
            metrics["gpu_pids_note"] = "the driver did not list GPU processes; gpu_pids may be incomplete"
        for key in ("gpu_driver", "gpu_nvml_version"):
            if key in self._facts:
                metrics[key] = self._facts[key]
        if self.reason is not None:
            metrics["gpu_reason"] = self.reason  # sampling stopped part-way
        self._result.series = _binned_series(
            [(wall, u, m) for (wall, _), u, m in zip(readings, util, mem_series, strict=True)]
        )
        return metrics


def _binned_series(points: list[tuple[float, float, float]]) -> list[tuple[float, str, float]]:
    """gpu_util and gpu_mem_mb averaged over SERIES_BIN_S bins."""
    if not points:
        return []
    out: list[tuple[float, str, float]] = []
    bin_points: list[tuple[float, float, float]] = []

    def flush() -> None:
        n = len(bin_points)
        wall = sum(p[0] for p in bin_points) / n
        out.append((wall, "gpu_util", sum(p[1] for p in bin_points) / n))
        out.append((wall, "gpu_mem_mb", sum(p[2] for p in bin_points) / n))

    start = points[0][0]
    for point in points:
        if point[0] - start >= SERIES_BIN_S and bin_points:
            flush()
            bin_points, start = [], point[0]
        bin_points.append(point)
    flush()
    return out
