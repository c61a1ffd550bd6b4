"""Whether a running program uses a GPU, seen from outside: the A/B (time-sliced or counted),
harness tune's duels and harness causal refuse such a program, whatever its suite declares.

A GPU cannot be time-sliced (work queued on the device keeps running while its process is
stopped, and both sides would share it), and its work is invisible to an instruction
counter. A suite that declares a device parameter is refused before anything runs
(harness.ab.experiment.refusal); a user's program declares nothing, so it is looked at once
it runs:

- NVML's list of processes with a compute context on a device (nvmlDeviceGetComputeRunningProcesses),
  where NVML can be read: the certain sign;
- otherwise the process's open files (/dev/nvidia*, /dev/nvidiactl, /dev/nvidia-uvm; ROCm's
  /dev/kfd) and its mapped libraries (the CUDA driver, libcuda.so, which a program maps when
  it initialises CUDA, not when it merely imports a CUDA build of torch).

Where NVML answers and does not list a process that opened the driver's files (a program
that asked `torch.cuda.is_available()` and then ran on the CPU), that is said as a note,
not refused. `listed` is injectable: the tests stand in for NVML's list and map a file
named like the CUDA driver, since these machines have no GPU.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

_DEVICE_FILE = re.compile(r"^/dev/(nvidia(\d+|ctl|-uvm(-tools)?|-modeset)?|kfd)$")
_DRIVER_LIBRARY = re.compile(r"/(libcuda\.so(\.\d+)*|libamdhip64\.so(\.\d+)*)$")


@dataclass
class GpuUse:
    """What showed that processes use a GPU."""

    evidence: dict[int, str]  # pid -> what showed it
    certain: bool  # NVML listed a process (else: seen in /proc only)

    def describe(self) -> str:
        shown = "; ".join(f"pid {pid}: {what}" for pid, what in sorted(self.evidence.items())[:4])
        return shown + (f"; and {len(self.evidence) - 4} more" if len(self.evidence) > 4 else "")


def nvml_pids() -> set[int] | None:
    """The PIDs with a compute context on any GPU; None where NVML cannot tell (no library,
    no driver, no device, the list not supported)."""
    from harness.monitors.gpu import GpuUnavailable, PynvmlSource

    source = PynvmlSource()
    try:
        source.open()
        samples = source.sample()
    except GpuUnavailable:
        return None
    finally:
        source.close()
    if any(s.processes is None for s in samples):
        return None
    return {pid for s in samples for pid in (s.processes or {})}


def proc_evidence(pid: int) -> str | None:
    """A GPU driver's device files open or its library mapped by `pid`, in words; None if neither."""
    files = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if _DEVICE_FILE.match(target):
                files.add(target)
    except OSError:
        pass
    libraries = set()
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                m = _DRIVER_LIBRARY.search(line.rstrip("\n"))
                if m:
                    libraries.add(m.group(1))
    except OSError:
        pass
    said = []
    if files:
        said.append("opened " + ", ".join(sorted(files)))
    if libraries:
        said.append("mapped the GPU driver's library " + ", ".join(sorted(libraries)))
    return " and ".join(said) or None


def gpu_use(
    pids: Iterable[int], listed: Callable[[], set[int] | None] | None = None
) -> tuple[GpuUse | None, str | None]:
    """(the GPU use of these processes, or None; a note where /proc saw the driver but NVML
    lists no context of theirs). `listed`: NVML's list (default nvml_pids, looked up when
    called, so a test can stand in for it)."""
    pids = list(pids)
    seen = {pid: what for pid in pids if (what := proc_evidence(pid)) is not None}
    if not seen:
        return None, None  # no driver file, no driver library: no context is possible
    on_device = (listed or nvml_pids)()
    if on_device is None:
        return GpuUse(seen, certain=False), None
    mine = {
        pid: f"holds a context on a GPU (NVML); {seen.get(pid, '')}".rstrip("; ") for pid in pids if pid in on_device
    }
    if mine:
        return GpuUse(mine, certain=True), None
    return None, (
        "the program opened the GPU driver but holds no context on a GPU (NVML): measured as a CPU program ("
        + GpuUse(seen, certain=False).describe()
        + ")"
    )


def refusal(use: GpuUse, what: str) -> str:
    """The message refusing a program that uses a GPU, with what to do instead."""
    how = "NVML lists it" if use.certain else "seen in /proc, NVML could not be asked"
    return (
        f"the program uses a GPU ({use.describe()}; {how}): {what}. Compare GPU programs by whole runs "
        "(harness sweep with --repeats, then harness compare or gate --baseline), or hide the GPU "
        "(CUDA_VISIBLE_DEVICES=) to measure its CPU side"
    )
