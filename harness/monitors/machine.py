"""Facts about this machine that decide how far a benchmark on it can be trusted.

Cheap reads of /proc and /sys, no measurement: the CPU frequency governor (powersave or
ondemand make a short cell's speed depend on how long the core was idle), the load average
against the usable cores, CPU time stolen by a hypervisor (/proc/stat), whether SMT pairs
logical CPUs on one core, CPUs isolated from the scheduler, a cgroup CPU quota, and the GPUs
NVML sees. `harness doctor` shows them with what each means; every sweep records the cheap
ones in run.json (`machine_state`). A fact this machine does not expose is None with the
reason, never a guess.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.model.workshare import usable_cores

CPU_SYS = Path("/sys/devices/system/cpu")
STEAL_FIELD = 7  # /proc/stat "cpu" line: user nice system idle iowait irq softirq steal ...


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def governors() -> dict[str, int] | None:
    """{governor: how many CPUs use it}, or None when cpufreq is not exposed (most VMs)."""
    found: dict[str, int] = {}
    for path in sorted(CPU_SYS.glob("cpu[0-9]*/cpufreq/scaling_governor")):
        value = _read(path)
        if value:
            found[value] = found.get(value, 0) + 1
    return found or None


def smt() -> bool | None:
    """Whether simultaneous multithreading is on (two logical CPUs share a core's units)."""
    active = _read(CPU_SYS / "smt" / "active")
    if active in ("0", "1"):
        return active == "1"
    siblings = _read(CPU_SYS / "cpu0" / "topology" / "thread_siblings_list")
    if siblings is None:
        return None
    return "," in siblings or "-" in siblings


def isolated_cpus() -> str | None:
    """The kernel's isolated CPU list ("" when none), None when not exposed."""
    return _read(CPU_SYS / "isolated")


def cpu_quota() -> float | None:
    """CPUs the cgroup may use (cpu.max or cfs quota / period), None without a quota."""
    text = _read(Path("/sys/fs/cgroup/cpu.max"))
    if text and not text.startswith("max"):
        quota, period = text.split()[:2]
        return int(quota) / int(period)
    quota_text = _read(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"))
    period_text = _read(Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us"))
    if quota_text and period_text and int(quota_text) > 0:
        return int(quota_text) / int(period_text)
    return None


def cpu_times() -> list[int] | None:
    """The aggregate "cpu" line of /proc/stat (jiffies), for steal_pct between two reads."""
    text = _read(Path("/proc/stat"))
    if not text:
        return None
    first = text.splitlines()[0].split()
    return [int(v) for v in first[1:]] if first and first[0] == "cpu" else None


def steal_pct(before: list[int] | None, after: list[int] | None) -> float | None:
    """Share of CPU time the hypervisor gave to others between two /proc/stat reads."""
    if not before or not after or len(before) <= STEAL_FIELD or len(after) <= STEAL_FIELD:
        return None
    total = sum(after) - sum(before)
    if total <= 0:
        return None
    return 100.0 * (after[STEAL_FIELD] - before[STEAL_FIELD]) / total


def facts() -> dict[str, Any]:
    """The cheap facts (no interval, no measurement): what every sweep records."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "usable_cores": usable_cores(),
        "logical_cpus": os.cpu_count(),
        "load_avg_1_5_15": list(load) if load else None,
        "governors": governors(),
        "smt": smt(),
        "isolated_cpus": isolated_cpus(),
        "cpu_quota": cpu_quota(),
    }
