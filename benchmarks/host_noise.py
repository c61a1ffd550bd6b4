"""How steady is this machine's speed?  The noise an A/B of a CPU-bound program cannot pair away.

A pure-Python loop that does a fixed amount of work per chunk runs for `--seconds`, pinned
to one CPU, counting chunks per 0.25 s tick and its own thread's CPU time; then two such
loops run at once, one on each of two CPUs (Duet benchmarking's layout: both sides see the
same moments). Printed:

- alone: the chunks per CPU second, 1-s windows: range, and the sd of log(window / next
  window), what two slices of a time-sliced pair one second apart differ by when the code
  is the same; the autocorrelation of the 0.25 s ticks at lags up to 10 s (how long the
  machine's phases last); the CPU's steal time (/proc/stat) over the run;
- at once: the sd of log(loop on CPU 0 / loop on CPU 1) over the same 1-s windows, and the
  correlation of their rates: a machine whose phases are shared by its CPUs cancels them
  in a duet.

    python benchmarks/host_noise.py --seconds 60

Run it alone on the machine: anything else running is measured with it.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time

import numpy as np

TICK_S = 0.25
WINDOW_TICKS = 4  # 1-s windows, the A/B's usual slice


def steal_s(cpu: int) -> float:
    """The CPU's steal time so far (seconds): the hypervisor ran something else on it."""
    with open("/proc/stat") as stat:
        for line in stat:
            if line.startswith(f"cpu{cpu} "):
                return int(line.split()[8]) / os.sysconf("SC_CLK_TCK")
    return 0.0


def loop(cpu: int, start: float, seconds: float, out: mp.Queue) -> None:
    """Chunks of fixed work per tick, and the thread's CPU seconds per tick."""
    os.sched_setaffinity(0, {cpu})
    counts, cpu_s = [], []
    x, n, tick_end = 0, 0, start + TICK_S
    while time.monotonic() < start:
        pass
    cpu_at = time.thread_time()
    while tick_end <= start + seconds:
        for i in range(2000):
            x = (x * 31 + i) & 0xFFFF
        n += 1
        if time.monotonic() >= tick_end:
            now_cpu = time.thread_time()
            counts.append(n)
            cpu_s.append(now_cpu - cpu_at)
            n, cpu_at, tick_end = 0, now_cpu, tick_end + TICK_S
    out.put((cpu, counts, cpu_s))


def run(cpus: list[int], seconds: float) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    out: mp.Queue = mp.Queue()
    start = time.monotonic() + 0.5
    procs = [mp.Process(target=loop, args=(c, start, seconds, out)) for c in cpus]
    for p in procs:
        p.start()
    got = {}
    for _ in procs:
        cpu, counts, cpu_s = out.get()
        got[cpu] = (np.array(counts, float), np.array(cpu_s, float))
    for p in procs:
        p.join()
    return got


def windows(values: np.ndarray) -> np.ndarray:
    n = len(values) // WINDOW_TICKS * WINDOW_TICKS
    return values[:n].reshape(-1, WINDOW_TICKS).sum(axis=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--cpus", default="0,1", help="the two CPUs of the duet; the first runs the loop alone")
    args = ap.parse_args()
    first, second = (int(c) for c in args.cpus.split(","))

    stolen = steal_s(first)
    counts, cpu_s = run([first], args.seconds)[first]
    stolen = steal_s(first) - stolen
    per_cpu = windows(counts) / windows(cpu_s)
    adjacent = np.diff(np.log(per_cpu))
    ticks = np.log(counts / np.maximum(cpu_s, 1e-9))
    ticks -= ticks.mean()
    print(f"alone on CPU {first}, {args.seconds:.0f} s: chunks per CPU second in 1-s windows {per_cpu.min():.0f}-"
          f"{per_cpu.max():.0f} (median {np.median(per_cpu):.0f}); log(window / next) sd {adjacent.std(ddof=1):.4f}; "
          f"steal {stolen:.2f} s")  # fmt: skip
    lags = [lag for lag in (1, 2, 4, 8, 16, 40) if lag < len(ticks) // 2]
    print("  autocorrelation of the 0.25 s ticks: " + ", ".join(
        f"{lag * TICK_S:g} s {np.corrcoef(ticks[:-lag], ticks[lag:])[0, 1]:.2f}" for lag in lags))  # fmt: skip

    both = run([first, second], args.seconds)
    a, b = (windows(both[c][0]) / windows(both[c][1]) for c in (first, second))
    m = min(len(a), len(b))
    duet = np.log(a[:m] / b[:m])
    print(f"at once on CPUs {first} and {second}: log(CPU {first} / CPU {second}) in the same 1-s windows sd "
          f"{duet.std(ddof=1):.4f}; correlation of their rates {np.corrcoef(a[:m], b[:m])[0, 1]:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
