"""Where the time went: each thread's categorised stack time per time bin, with the waits
for the GIL put back in, summed per process and per role.

Stacks say what a thread was doing (harness.watch.classify) but not whether it held the
GIL: a thread whose stack sits in Python code may be running it or waiting to. The kernel
knows which: /proc/PID/task/TID/schedstat counts the time each thread ran and the time it
sat runnable in the run queue. Busy stack time the kernel neither ran nor queued was spent
asleep on the GIL's condition variable, so, in processes where two or more Python threads
are busy in the same bin, that part moves from the busy categories to `gil_wait` (a thread
alone cannot be waiting for a GIL nobody else wants). A GIL waiter wakes every switch
interval to ask for it, so only as much of that time as the thread's voluntary wake-ups
explain is GIL time; the rest was a blocking C call the classifier did not recognise and
goes to `blocked`. Time a thread was runnable but off the CPU counts as busy: that is the
machine's shortage, not the GIL. A thread sampled with no Python frame (`native`: an
extension's C++ thread) is not Python work: the share of its time the kernel ran or queued it
stays `native`, the rest was asleep in C++ and goes to `blocked`; it never counts as a thread
that competes for the GIL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from harness.watch.chrometrace import ThreadTimeline
from harness.watch.classify import BLOCKED, BUSY, CATEGORIES, GIL_WAIT, NATIVE

MAX_BINS = 120
INDEX = {name: i for i, name in enumerate(CATEGORIES)}
_BUSY = [INDEX[c] for c in BUSY]
MIN_BUSY_S = 0.02  # a thread busier than this in a bin competes for the GIL
MIN_SPANNED = 0.25  # share of a bin /proc's samples of a thread must span to judge it
# CPython's GIL waiters time out every switch interval (sys.getswitchinterval(), 5 ms) and
# wake; one wake-up accounts for at most this much waiting (twice the interval, for slack).
SECONDS_PER_GIL_WAKEUP = 0.010


@dataclass
class Breakdown:
    """Seconds per (time bin, category) for every sampled thread, on bins of `bin_s`."""

    edges: np.ndarray
    threads: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    names: dict[tuple[int, int], str] = field(default_factory=dict)

    @property
    def bins(self) -> int:
        return len(self.edges) - 1

    def process(self, pid: int) -> np.ndarray:
        arrays = [a for (p, _), a in self.threads.items() if p == pid]
        return np.sum(arrays, axis=0) if arrays else np.zeros((self.bins, len(CATEGORIES)))

    def group(self, pids: Iterable[int]) -> np.ndarray:
        wanted = set(pids)
        arrays = [a for (p, _), a in self.threads.items() if p in wanted]
        return np.sum(arrays, axis=0) if arrays else np.zeros((self.bins, len(CATEGORIES)))

    def pids(self) -> set[int]:
        return {p for p, _ in self.threads}


def bin_edges(start: float, end: float, bin_s: float = 1.0) -> np.ndarray:
    """Edges of bins of at least `bin_s` covering [start, end], at most MAX_BINS of them."""
    span = max(end - start, 1e-3)
    width = max(bin_s, span / MAX_BINS)
    count = max(1, int(np.ceil(span / width - 1e-9)))
    return start + width * np.arange(count + 1)


def _add_span(arr: np.ndarray, edges: np.ndarray, a: float, b: float, col: int) -> None:
    if b <= a:
        return
    first = max(0, int(np.searchsorted(edges, a, side="right")) - 1)
    last = min(len(edges) - 2, int(np.searchsorted(edges, b, side="left")) - 1)
    for i in range(first, last + 1):
        overlap = min(b, edges[i + 1]) - max(a, edges[i])
        if overlap > 0:
            arr[i, col] += overlap


def build(
    edges: np.ndarray,
    timelines: Iterable[ThreadTimeline],
    sched: Mapping[tuple[int, int], list[tuple[float, float, float, int]]],
    lifetime_margin_s: float = 1.0,
) -> Breakdown:
    """Stack spans into bins, clipped to each thread's lifetime as /proc saw it, then the
    GIL split. `sched` is (pid, tid) -> [(wall, run_s, runq_s, voluntary switches)]."""
    out = Breakdown(edges)
    lo, hi = float(edges[0]), float(edges[-1])
    for line in timelines:
        key = (line.pid, line.tid)
        samples = sched.get(key)
        start, end = lo, hi
        if samples:
            start = max(lo, samples[0][0] - lifetime_margin_s)
            end = min(hi, samples[-1][0] + lifetime_margin_s)
        arr = out.threads.get(key)
        if arr is None:
            arr = out.threads[key] = np.zeros((out.bins, len(CATEGORIES)))
        for a, b, category in line.spans:
            _add_span(arr, edges, max(a, start), min(b, end), INDEX[category])
        out.names[key] = line.name
    _split_native(out, sched)
    _split_gil(out, sched)
    return out


def _split_native(out: Breakdown, sched: Mapping[tuple[int, int], list[tuple[float, float, float, int]]]) -> None:
    """A native thread's time: as much as the kernel ran or queued it stays `native`, the
    rest was asleep in C++ (`blocked`). Without /proc's samples of it, it all stays native."""
    widths = np.diff(out.edges)
    for key, arr in out.threads.items():
        native = arr[:, INDEX[NATIVE]]
        samples = sched.get(key)
        if not native.any() or not samples or len(samples) < 2:
            continue
        on_cpu, _, spanned = _on_cpu(out.edges, samples)
        cpu_rate = np.clip(np.divide(on_cpu, spanned, out=np.zeros_like(on_cpu), where=spanned > 0), 0.0, 1.0)
        known = spanned >= MIN_SPANNED * widths
        ran = np.where(known, native * cpu_rate, native)
        arr[:, INDEX[BLOCKED]] += native - ran
        arr[:, INDEX[NATIVE]] = ran


def _on_cpu(
    edges: np.ndarray, samples: list[tuple[float, float, float, int]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seconds run or runnable per bin, voluntary switches per bin, and how much of each
    bin the samples span."""
    walls = np.array([s[0] for s in samples])
    cumulative = np.array([s[1] + s[2] for s in samples])
    switches = np.array([float(s[3]) for s in samples])
    at = np.interp(edges, walls, cumulative)  # flat outside the samples: nothing counted there
    woke = np.interp(edges, walls, switches)
    spanned = np.clip(np.minimum(edges[1:], walls[-1]) - np.maximum(edges[:-1], walls[0]), 0.0, None)
    return np.diff(at), np.diff(woke), spanned


def _split_gil(out: Breakdown, sched: Mapping[tuple[int, int], list[tuple[float, float, float, int]]]) -> None:
    """Per bin: the share of a thread's stack time that was busy, against the share of the
    time /proc's samples say it ran or was runnable; the busy time beyond that waited for
    the GIL. Both are rates, so a recorder that started late or /proc samples that span
    only part of a bin still compare (at least MIN_SPANNED of the bin)."""
    widths = np.diff(out.edges)
    by_pid: dict[int, list[tuple[int, int]]] = {}
    for key in out.threads:
        by_pid.setdefault(key[0], []).append(key)
    for keys in by_pid.values():
        if len(keys) < 2:
            continue
        busy_threads = sum((out.threads[k][:, _BUSY].sum(axis=1) > MIN_BUSY_S).astype(int) for k in keys)
        for key in keys:
            samples = sched.get(key)
            if not samples or len(samples) < 2:
                continue
            arr = out.threads[key]
            on_cpu, woke, spanned = _on_cpu(out.edges, samples)
            covered = arr.sum(axis=1)
            busy = arr[:, _BUSY].sum(axis=1)
            busy_rate = np.divide(busy, covered, out=np.zeros_like(busy), where=covered > 0)
            cpu_rate = np.divide(on_cpu, spanned, out=np.zeros_like(on_cpu), where=spanned > 0)
            waiting = np.clip(1.0 - np.divide(cpu_rate, busy_rate, out=np.ones_like(busy), where=busy_rate > 0), 0.0, 1.0)
            idle = busy * waiting
            idle[(spanned < MIN_SPANNED * widths) | (busy_threads < 2)] = 0.0
            # A GIL waiter wakes every switch interval (5 ms) to ask for it; a thread asleep
            # in a C call the classifier did not know (SimpleQueue.get via iter(), os.read)
            # does not: what its wake-ups cannot explain was blocked, not GIL time.
            woke_in_stacks = woke * np.clip(covered / np.maximum(spanned, 1e-9), 0.0, 1.0)
            gil = np.minimum(idle, woke_in_stacks * SECONDS_PER_GIL_WAKEUP)
            scale = np.divide(busy - idle, busy, out=np.ones_like(busy), where=busy > 0)
            arr[:, _BUSY] *= scale[:, None]
            arr[:, INDEX[GIL_WAIT]] += gil
            arr[:, INDEX[BLOCKED]] += idle - gil


def shares(arr: np.ndarray) -> dict[str, float]:
    """Each category's share of the thread time in `arr` (all bins)."""
    totals = arr.sum(axis=0)
    whole = float(totals.sum())
    return {name: (float(totals[i]) / whole if whole > 0 else 0.0) for name, i in INDEX.items()}
