"""NET_OFF_DEVICE: nets that ran on the CPU while a GPU was asked for or is there.

Reads `worker_devices` ({pid: device of most of that process's module calls}, from
harness watch's torch hook, or a suite's), `gpu_asked` (1 when the program's command line
names cuda) and the GPU monitor (`gpu_util_mean` is there when NVML found a device). A
`warning` when some processes ran their nets on the CPU while a GPU was asked for, or
while other processes of the same program ran theirs on cuda (the device never reached
the workers); `info` when a GPU was merely present. Cells whose suite has a device param
are GPU_IDLE's business and are left alone.
"""

from __future__ import annotations

from harness.diagnosis.findings import Finding
from harness.diagnosis.needs import Needs
from harness.diagnosis.rules.gpu_idle import worker_devices
from harness.runs.view import RunView

RULE = "NET_OFF_DEVICE"
NEEDS = Needs(window=False)  # the devices the nets ran on, whenever they ran
REMEDY = (
    "create the net (and its inputs) on the device in every process that runs it (model.to(device) after the "
    "worker starts; with CUDA use the spawn start method), and fail loudly instead of falling back to the CPU"
)


def check(view: RunView) -> list[Finding]:
    out = []
    for cell in view.cells:
        words = cell.vocabulary
        if words.device:
            continue
        devices, _ = worker_devices(cell.first(words.signal("worker_devices")))
        on_cpu = sorted(k for k, v in devices.items() if v == "cpu")
        if not on_cpu:
            continue
        on_gpu = sorted(k for k, v in devices.items() if v.startswith("cuda"))
        asked = (cell.median(words.signal("gpu_asked")) or 0.0) > 0
        present = cell.median("gpu_util_mean") is not None
        if asked or on_gpu:
            severity = "warning"
            why = "the command line asks for cuda" if asked else f"{len(on_gpu)} other processes ran theirs on cuda"
        elif present:
            severity, why = "info", "a GPU is present"
        else:
            continue
        out.append(
            Finding(
                RULE,
                severity,
                [cell.id],
                f"{len(on_cpu)} of {len(devices)} processes ran their nets on the cpu while {why}: "
                f"{words.remedy('net_off_device', REMEDY)}",
                {"worker_devices": devices, "gpu_asked": asked, "gpu_present": present},
            )
        )
    return out
