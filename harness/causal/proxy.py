"""A group's read and write system calls as the throughput, where the program's own
counter is too sparse (`--io-counter GROUP`, or chosen by the experiment).

An env worker of a subprocess vector env makes one round trip through its pipe per step; a
pipeline stage's queue one write per item. /proc/PID/io counts them (syscr + syscw) at any
moment, so a period can have a rate where the program logs once every few seconds. A proxy
is only as good as its tie to the work, so it is chosen only where it was seen to track the
counter, and checked after:

- **Chosen** (harness.causal.experiment, when the counter's cadence asks for more budget
  than there is): during warm-up each process's calls are read at every report of the
  counter; a group tracks the counter when it made calls in each of at least MIN_INTERVALS
  intervals between reports, MIN_CALLS in each half of them, and its calls per unit of the
  counter over the first half and over the second agree within DRIFT (the check made after, on
  the whole experiment). Halves, not single intervals: a trainer's calls come in a burst
  right after its report, and a report read 0.1 s late moves a burst from one interval to
  the next (a phased trainer's intervals read 330 to 488 calls per update, their halves 431
  and 409). Of several groups, the steadiest.
- **Checked**: the calls per unit over each half of the experiment; halves that differ by
  more than DRIFT leave every verdict `unknown` (harness.causal.verdicts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

MIN_CALLS = 50  # calls in each half of the warm-up's report intervals: fewer, and one call is 2 %
MIN_INTERVALS = 3  # intervals between reports in warm-up, at least, to judge a group by
DRIFT = 0.2  # the two halves' calls per unit may differ by this share of the smaller


def io_calls(pid: int) -> int | None:
    """syscr + syscw of a process (read and write system calls so far, all its threads)."""
    try:
        with open(f"/proc/{pid}/io", "rb") as fh:
            fields = dict(line.split(b":", 1) for line in fh.read().splitlines() if b":" in line)
        return int(fields[b"syscr"]) + int(fields[b"syscw"])
    except (OSError, KeyError, ValueError):
        return None


@dataclass
class Mark:
    """The counter at one of its reports, and every process's calls at that moment."""

    count: float
    calls: dict[int, int]


@dataclass(frozen=True)
class Tracking:
    group: str
    calls_per_unit: tuple[float, ...]  # one per interval between two reports
    halves: tuple[float, float]  # over the first half of the intervals and over the second
    calls: int  # over all of them

    @property
    def spread(self) -> float:
        a, b = self.halves
        return max(a, b) / min(a, b) if min(a, b) > 0 else float("inf")

    @property
    def tracks(self) -> bool:
        return len(self.calls_per_unit) >= MIN_INTERVALS and self.spread - 1 <= DRIFT

    def describe(self) -> str:
        return f"{self.group}: {self.halves[0]:.3g} and {self.halves[1]:.3g} calls per unit"


def marks_at(reports: Sequence[tuple[float, float]], series: Sequence[tuple[float, Mapping[int, int]]]) -> list[Mark]:
    """Every process's calls at each report of the counter, interpolated on one clock from
    the calls read every tick: (time, count) reports and (time, {pid: calls}) readings. Read
    at the report's own time, not when the harness got to it: a cell starved by a crowded
    machine writes its samples late, and calls counted meanwhile would land in the wrong
    interval. A report outside the span of the readings that saw every process alive at the
    end is left out."""
    if not series:
        return []
    # the processes alive at the end, over the readings that saw them all (one read before a
    # stage was started would otherwise drop that stage)
    pids = set(series[-1][1])
    series = [(t, c) for t, c in series if pids <= set(c)]
    if len(series) < 2:
        return []
    times = [t for t, _ in series]
    columns = {pid: [c[pid] for _, c in series] for pid in pids}
    return [
        Mark(count, {pid: round(float(np.interp(t, times, col))) for pid, col in columns.items()})
        for t, count in reports
        if times[0] <= t <= times[-1]
    ]


def tracking(marks: Sequence[Mark], groups: Mapping[str, Sequence[int]]) -> list[Tracking]:
    """Each group's calls per unit of the counter between consecutive reports, and over each
    half of them (an interval without a call, a half with under MIN_CALLS, or a process not
    read at both ends, leaves the group out)."""
    out = []
    for name, pids in groups.items():
        calls: list[int] = []
        units: list[float] = []
        for a, b in zip(marks, marks[1:], strict=False):
            made = sum(b.calls.get(p, 0) - a.calls.get(p, 0) for p in pids)
            if b.count - a.count <= 0 or any(p not in a.calls or p not in b.calls for p in pids) or made <= 0:
                calls = []
                break
            calls.append(made)
            units.append(b.count - a.count)
        middle = len(calls) // 2
        if len(calls) < 2 or min(sum(calls[:middle]), sum(calls[middle:])) < MIN_CALLS:
            continue
        halves = (sum(calls[:middle]) / sum(units[:middle]), sum(calls[middle:]) / sum(units[middle:]))
        out.append(Tracking(name, tuple(c / u for c, u in zip(calls, units, strict=True)), halves, sum(calls)))
    return out


def choose(found: Sequence[Tracking]) -> Tracking | None:
    """The steadiest group that tracks the counter (ties: the most calls)."""
    good = [t for t in found if t.tracks]
    return min(good, key=lambda t: (round(t.spread, 2), -t.calls)) if good else None


def halves(io: Sequence[tuple[float, float]], counter: Sequence[tuple[float, float]]) -> list[float | None] | None:
    """The proxy's calls per unit of the program's counter over each half of the experiment,
    both series on one clock: (time, calls so far) and (time, count so far)."""
    if len(io) < 4 or len(counter) < 3:
        return None
    inside = [(t, c) for t, c in counter if io[0][0] <= t <= io[-1][0]]
    if len(inside) < 3:
        return None
    times, calls = [t for t, _ in io], [c for _, c in io]
    out: list[float | None] = []
    middle = len(inside) // 2
    for part in (inside[: middle + 1], inside[middle:]):
        logged = part[-1][1] - part[0][1]
        made = float(np.interp(part[-1][0], times, calls) - np.interp(part[0][0], times, calls))
        out.append(made / logged if logged > 0 else None)
    return out


def drifted(per_half: Sequence[float | None] | None) -> bool:
    """The two halves disagree by more than DRIFT (or one has no units: nothing to agree on)."""
    if not per_half or len(per_half) != 2:
        return False
    a, b = per_half
    if a is None or b is None or min(a, b) <= 0:
        return True
    return max(a, b) / min(a, b) - 1 > DRIFT
