"""py-spy's chrometrace file -> each thread's categorised time spans, on the wall clock.

`py-spy record --format chrometrace --idle --threads` writes, per thread, a "B" event for
every frame that appears and an "E" for every frame that leaves, stamped with the sample's
time in µs since the recorder started. Replaying them gives each thread's stack between
samples, so time in a category is measured directly and lands in the right time bin (the
raw and flamegraph formats keep only totals). `--threads` adds an outermost frame
"thread (<OS tid>): <name>" that ties a Python thread to the kernel's thread, whose
scheduler counters reveal waits for the GIL (harness.watch.breakdown).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from harness.watch.classify import Frame, classify, entry_function, source_line

_THREAD = re.compile(r"^thread \((\w+)\)(?::\s*(.*))?$")


@dataclass
class ThreadTimeline:
    """One Python thread of one process as py-spy saw it."""

    pid: int
    tid: int  # the kernel's thread id (py-spy's --threads frame); Python's ident if absent
    name: str
    spans: list[tuple[float, float, str]] = field(default_factory=list)  # wall start, end, category
    sites: Counter[tuple[str, str]] = field(default_factory=Counter)  # (category, "file:line func") -> s
    entries: Counter[str] = field(default_factory=Counter)  # entry function -> s


def _resolve(filename: str, cwd: str | None) -> str:
    if cwd and filename and not filename.startswith("<") and not os.path.isabs(filename):
        return os.path.join(cwd, filename)
    return filename


def parse(path: Path, start_wall: float, cwd: str | None = None) -> list[ThreadTimeline]:
    """Replay a chrometrace file; `start_wall` is when the recorder started (ts 0)."""
    try:
        events = json.loads(path.read_text() or "[]")
    except (OSError, json.JSONDecodeError):
        return []
    stacks: dict[int, list[Frame]] = {}
    stamp: dict[int, int] = {}
    snapshots: dict[int, list[tuple[int, tuple[Frame, ...]]]] = {}
    pid = 0
    for ev in events:
        tid = int(ev.get("tid", 0))
        ts = int(ev.get("ts", 0))
        pid = int(ev.get("pid", pid))
        if tid in stamp and stamp[tid] != ts:
            snapshots.setdefault(tid, []).append((stamp[tid], tuple(stacks.get(tid, ()))))
        stamp[tid] = ts
        stack = stacks.setdefault(tid, [])
        if ev.get("ph") == "B":
            args = ev.get("args") or {}
            stack.append(
                Frame(
                    str(ev.get("name", "")), _resolve(str(args.get("filename") or ""), cwd), int(args.get("line") or 0)
                )
            )
        elif ev.get("ph") == "E" and stack:
            stack.pop()
    for tid, ts in stamp.items():
        snapshots.setdefault(tid, []).append((ts, tuple(stacks.get(tid, ()))))
    return [_timeline(pid, tid, snaps, start_wall) for tid, snaps in snapshots.items()]


def _timeline(pid: int, tid: int, snaps: list[tuple[int, tuple[Frame, ...]]], start_wall: float) -> ThreadTimeline:
    os_tid, name = tid, "?"
    cache: dict[tuple[Frame, ...], tuple[str, str, str | None]] = {}
    out: list[tuple[float, float, str]] = []
    sites: Counter[tuple[str, str]] = Counter()
    entries: Counter[str] = Counter()
    for (ts, stack), (next_ts, _) in zip(snaps, snaps[1:], strict=False):
        if not stack:
            continue  # between the thread's last sample and the end of the recording
        head = _THREAD.match(stack[0].name) if not stack[0].filename else None
        if head:
            os_tid = int(head.group(1), 0) if head.group(1).isdigit() or head.group(1).startswith("0x") else os_tid
            name = head.group(2) or name
            frames = stack[1:]
        else:
            frames = stack
        if frames not in cache:
            inner = tuple(reversed(frames))  # innermost first
            category = classify(inner)
            top = inner[0] if inner else None
            site = f"{os.path.basename(top.filename)}:{top.line} {top.name}" if top else "?"
            if top is not None:
                text = source_line(top.filename, top.line)
                site += f": {text[:60]}" if text else ""
            cache[frames] = (category, site, entry_function(inner))
        category, site, entry = cache[frames]
        t0, t1 = start_wall + ts / 1e6, start_wall + next_ts / 1e6
        if out and out[-1][2] == category and abs(out[-1][1] - t0) < 1e-9:
            out[-1] = (out[-1][0], t1, category)
        else:
            out.append((t0, t1, category))
        sites[(category, site)] += t1 - t0
        if entry:
            entries[entry] += t1 - t0
    return ThreadTimeline(pid, os_tid, name, out, sites, entries)
