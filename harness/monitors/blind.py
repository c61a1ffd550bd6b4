"""An instrument that saw nothing says so: why, and the fix, read from a record's metrics.

harness watch's stack sampler (py-spy, harness.monitors.stacks) and wait reader (/proc,
harness.monitors.waits) can end a window with nothing: py-spy not found or not allowed to
read the processes, the program gone before a recorder started, no sleeping thread's system
call readable. Their tables then sit empty and every rule that reads them stays silent, which
reads like health: a user who ran `VENV/bin/harness` without activating the venv got 0 stack
samples in every cell and a terminal that said only "py-spy - Hz per process, 0 samples".
`blind(metrics)` says, per instrument, why it saw nothing and what would fix it:
harness.watch.instruments adds it to the cell's warnings, the end of a sweep or a watch
prints it (harness.commands.common), and the diagnosis refuses the findings that rest on an
instrument that saw nothing (harness.diagnosis.needs). It reads the metrics alone, so a run
directory written before reads the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STACKS, WAITS = "stacks", "waits"
NAMES = {STACKS: "the stack sampler (py-spy)", WAITS: "the wait reader (/proc)"}
PTRACE_FIX = (
    "reading it needs ptrace permission: run as root, set kernel.yama.ptrace_scope=0, or give the container "
    "SYS_PTRACE (docker run --cap-add SYS_PTRACE)"
)


def blind(metrics: Mapping[str, Any]) -> dict[str, str]:
    """{instrument: why it got nothing, and the fix} for each instrument of harness watch that
    ran over this record and saw nothing; empty when they all saw something (or none ran)."""
    out = {}
    if "stacks_samples" in metrics and not metrics.get("stacks_samples") and not metrics.get("stacks_threads"):
        out[STACKS] = _stacks(metrics)
    waits = _waits(metrics)
    if waits:
        out[WAITS] = waits
    return out


def warnings(metrics: Mapping[str, Any]) -> list[str]:
    """One line per instrument that saw nothing: `<instrument> got nothing: <why and fix>`."""
    return [f"{NAMES[name]} got nothing: {why}" for name, why in blind(metrics).items()]


def _stacks(m: Mapping[str, Any]) -> str:
    if m.get("stacks_reason"):
        return str(m["stacks_reason"])
    unsampled = m.get("stacks_unsampled") or {}
    if isinstance(unsampled, Mapping) and unsampled:
        reasons = list(dict.fromkeys(str(v) for v in unsampled.values()))
        why = reasons[0] + (f" (and {len(reasons) - 1} other reasons)" if len(reasons) > 1 else "")
        return f"py-spy could not read the program's {len(unsampled)} processes: {why}"
    watched = m.get("watch_s")
    how_long = f" in the {float(watched):.1f} s watched" if isinstance(watched, int | float) else ""
    if not m.get("stacks_recorders"):
        return (
            f"no process of the program was left to sample{how_long} (it ended, or started its work later): "
            "watch it longer (--duration) or attach to it while it runs (--pid)"
        )
    return (
        f"py-spy's {m['stacks_recorders']} recorders wrote no samples{how_long}: their logs are in the run's watch/ "
        "folder; `py-spy record --pid PID` by hand shows why"
    )


def _waits(m: Mapping[str, Any]) -> str | None:
    if "waits_passes" not in m:
        return None
    if m.get("waits_reason"):
        return str(m["waits_reason"])
    if not m["waits_passes"]:
        return "it made no pass: the program ended before its first; watch it longer (--duration)"
    asleep, unreadable = m.get("waits_asleep"), m.get("waits_unreadable")
    if isinstance(asleep, int) and asleep > 0 and unreadable == asleep:
        return (
            f"what none of the {asleep} sleeping threads it saw waited on could be read "
            f"(/proc/PID/task/TID/syscall): {PTRACE_FIX}"
        )
    return None
