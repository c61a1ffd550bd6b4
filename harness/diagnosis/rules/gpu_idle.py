"""GPU_IDLE (warning): a cell asked for a GPU and the GPU did not do its work.

For cells whose device param (the vocabulary's `device`) starts with "cuda": reads the GPU
monitor's `gpu_util_mean`, `gpu_pids`, `gpu_other_pids`, `gpu_reason`, `gpu_pids_note`, and
the suite's `worker_devices` signal (a list of device strings, or a {pid: device} map).
Symptoms: no GPU sampled at all, the GPU under IDLE_UTIL_PCT busy, workers whose nets are
on the CPU, or worker PIDs missing from the GPU's process list.
"""

from __future__ import annotations

from typing import Any

from harness.diagnosis.findings import Finding
from harness.diagnosis.needs import Needs
from harness.runs.view import RunView

RULE = "GPU_IDLE"
NEEDS = Needs()
IDLE_UTIL_PCT = 5.0
REMEDY = (
    "build each worker's net on the device (spawn start method, .to(device) in the worker) or evaluate on one "
    "GPU process behind an inference server"
)


def worker_devices(value: Any) -> tuple[dict[str, str], bool]:
    """`worker_devices` as {key: device}, and whether the keys are PIDs (a {pid: device} map)
    rather than positions in a list."""
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}, all(str(k).isdigit() for k in value)
    if isinstance(value, list | tuple):
        return {str(i): str(v) for i, v in enumerate(value)}, False
    return {}, False


def check(view: RunView) -> list[Finding]:
    out = []
    for cell in view.cells:
        words = cell.vocabulary
        device = cell.params.get(words.device) if words.device else None
        if not (isinstance(device, str) and device.startswith("cuda")) or not cell.ok:
            continue
        util = cell.median("gpu_util_mean")
        gpu_pids = {int(p) for rec in cell.ok for p in (rec.metrics.get("gpu_pids") or [])}
        other_pids = {int(p) for rec in cell.ok for p in (rec.metrics.get("gpu_other_pids") or [])}
        devices, by_pid = worker_devices(cell.first(words.signal("worker_devices")))
        evidence: dict[str, Any] = {"device": device, "gpu_util_mean": util, "gpu_pids": sorted(gpu_pids)}
        symptoms = []
        if util is None:
            reason = cell.first("gpu_reason")
            symptoms.append(f"no GPU was sampled ({reason or 'no GPU monitor'}) yet the cell ran")
            evidence["gpu_reason"] = reason
        elif util < IDLE_UTIL_PCT:
            symptoms.append(f"GPU {util:.1f} % busy")
        off_gpu = sorted(k for k, v in devices.items() if not v.startswith("cuda"))
        if off_gpu:
            evidence["worker_devices"] = devices
            symptoms.append(f"workers on {', '.join(sorted({devices[k] for k in off_gpu}))}")
        on_cuda = {int(k) for k, v in devices.items() if v.startswith("cuda")} if by_pid else set()
        # PIDs only compare when the cell's processes were found on the GPU at all: in a
        # container NVML may list host PIDs, which then show up as gpu_other_pids instead
        missing = sorted(on_cuda - gpu_pids) if gpu_pids else []
        if util is not None and not gpu_pids and not other_pids and not cell.first("gpu_pids_note"):
            symptoms.append("no process of the cell in the GPU's process list")
        elif missing:
            evidence["missing_pids"] = missing
            symptoms.append(f"{len(missing)} worker PIDs missing from the GPU's process list")
        if symptoms:
            out.append(
                Finding(
                    RULE,
                    "warning",
                    [cell.id],
                    f"device={device} but {'; '.join(symptoms)}: {words.remedy('gpu_idle', REMEDY)}",
                    evidence,
                )
            )
    return out
