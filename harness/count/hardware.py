"""Hardware instruction counters, the counted A/B's fast path: the same estimand as callgrind's
(user-space instructions per unit, every process summed, between two marks of the program's
progress) at the program's native speed, where the machine exposes them.

A counter is opened with perf_event_open(2) on each of the program's processes at the
window's start, while the process that wrote the mark waits in its exchange with the harness
(harness/count/hook/sitecustomize.py), and read at the middle and the end: exact for that
process's user-space instructions (the kernel's are excluded, `exclude_kernel`), as callgrind's
client request is; the others are opened and read when the harness reaches them. A process
that exits in the window keeps its count readable. No `perf` binary is needed, only the
system call (Linux, perf_event_paranoid <= 2 for one's own processes).

`available()` is what `harness doctor` reports. Virtual machines without a virtual PMU (this
project's VM among them) answer ENOENT for the hardware event: there the counted A/B runs
under callgrind. `event` is injectable: the tests count the software task clock through the
same plumbing, since no machine of this project has the hardware event.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import platform
import struct
from dataclasses import dataclass

PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS = 0, 1
PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK = 1, 1
INSTRUCTIONS = (PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS)
_ATTR_SIZE = 128  # PERF_ATTR_SIZE_VER7; the kernel accepts a larger struct with zeros at its end
_EXCLUDE_KERNEL, _EXCLUDE_HV = 1 << 5, 1 << 6
_SYSCALL = {"x86_64": 298, "amd64": 298, "aarch64": 241, "arm64": 241}
_IOC_DISABLE = 0x2401


@dataclass(frozen=True)
class Availability:
    usable: bool
    said: str  # what the machine answered, in words


def _open(pid: int, event: tuple[int, int]) -> int:
    """A counting fd for `event` on `pid` (any CPU), user space only, enabled from now on."""
    number = _SYSCALL.get(platform.machine().lower())
    if number is None:
        raise OSError(errno.ENOSYS, f"perf_event_open's number on {platform.machine()} is not known here")
    buf = bytearray(_ATTR_SIZE)
    struct.pack_into("IIQQQQQ", buf, 0, event[0], _ATTR_SIZE, event[1], 0, 0, 0, _EXCLUDE_KERNEL | _EXCLUDE_HV)
    attr = (ctypes.c_char * _ATTR_SIZE).from_buffer(buf)
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(number, attr, pid, -1, -1, 0)
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return fd


def available(event: tuple[int, int] = INSTRUCTIONS) -> Availability:
    """Whether this machine counts user-space instructions in hardware, and what it said."""
    try:
        fd = _open(0, event)
    except OSError as exc:
        why = {
            errno.ENOENT: "the kernel has no such hardware event (a VM without a virtual PMU)",
            errno.EOPNOTSUPP: "the kernel has no such hardware event",
            errno.EACCES: "not allowed (kernel.perf_event_paranoid)",
            errno.EPERM: "not allowed (kernel.perf_event_paranoid, or a container's seccomp)",
            errno.ENOSYS: "no perf_event_open here",
        }.get(exc.errno or 0, exc.strerror or str(exc))
        return Availability(False, f"none: perf_event_open(instructions) failed: {why}")
    os.close(fd)
    return Availability(True, "perf_event_open counts user-space instructions")


class Counters:
    """One counter per process of the program, opened at the window's start, read at its marks."""

    def __init__(self, event: tuple[int, int] = INSTRUCTIONS) -> None:
        self.event = event
        self.fds: dict[int, int] = {}
        self.readings: dict[int, list[int]] = {}  # pid -> its count at the start (0), the middle, the end
        self.failed: dict[int, str] = {}

    def start(self, pids: list[int]) -> None:
        for pid in pids:
            if pid in self.fds:
                continue
            try:
                self.fds[pid] = _open(pid, self.event)
                self.readings[pid] = [0]
            except OSError as exc:
                self.failed[pid] = exc.strerror or str(exc)

    def read(self) -> None:
        """Every counter's value now (a process that exited keeps its last count)."""
        for pid, fd in self.fds.items():
            try:
                self.readings[pid].append(struct.unpack("Q", os.read(fd, 8))[0])
            except OSError:
                self.readings[pid].append(self.readings[pid][-1])

    def halves(self, pid: int) -> tuple[int, int]:
        marks = self.readings.get(pid, [0])
        if len(marks) < 3:
            return (marks[-1] - marks[0], 0) if len(marks) == 2 else (0, 0)
        return marks[1] - marks[0], marks[2] - marks[1]

    def close(self) -> None:
        for fd in self.fds.values():
            try:
                fcntl.ioctl(fd, _IOC_DISABLE)
            except OSError:
                pass
            os.close(fd)
        self.fds = {}
