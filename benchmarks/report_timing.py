"""How far apart a program's short-window rates read when timed by samples or by its reports.

    python benchmarks/report_timing.py                       # the producers program, 2 x 128
    python benchmarks/report_timing.py --seconds 25 -- python prog.py ...

Runs the program alone, stamps each of its `{"count": {...}}` lines as it arrives, then reads
its rate over many windows of 0.9-1.5 s (an A/B slice's, between two of the child's 1 s
samples) at random points, two ways: between the window's edges, as a sample taken there sees
the count (the last report before it), and between the first and last reports inside the
window, by their own times. A program that reports every 0.2 s holds four to seven reports in
such a window, and the first way reads it up to a report off (docs/explain/ab.md, "Timed by
the counts"). Prints the report gap and the coefficient of variation of each reading.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

PRODUCERS = Path(__file__).resolve().parent.parent / "tests" / "programs" / "producers.py"


def reports(argv: list[str], seconds: float, skip: int) -> tuple[np.ndarray, np.ndarray]:
    """(arrival times, running totals) of the program's count lines, the first `skip` left out."""
    # its own process group, ended whole: a program's workers (the producers' daemon processes)
    # outlive a killed parent otherwise
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=True)
    times, totals, total = [], [], 0.0
    ends = time.monotonic() + seconds
    try:
        for line in proc.stdout:
            try:
                counts = json.loads(line)["count"]
            except (ValueError, KeyError, TypeError):
                continue
            total += sum(counts.values())
            times.append(time.monotonic())
            totals.append(total)
            if times[-1] > ends:
                break
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return np.array(times[skip:]), np.array(totals[skip:])


def readings(times: np.ndarray, totals: np.ndarray, windows: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    by_samples, by_reports = [], []
    for _ in range(windows):
        length = rng.uniform(0.9, 1.5)
        start = rng.uniform(times[0], times[-1] - length - 0.1)
        seen = np.searchsorted(times, [start, start + length], side="right") - 1  # the last report at each edge
        by_samples.append((totals[seen[1]] - totals[seen[0]]) / length)
        inside = np.flatnonzero((times >= start) & (times <= start + length))
        if len(inside) >= 2:
            first, last = inside[0], inside[-1]
            by_reports.append((totals[last] - totals[first]) / (times[last] - times[first]))
    return {"timed by the samples": np.array(by_samples), "timed by the reports": np.array(by_reports)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=25.0)
    parser.add_argument("--windows", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("argv", nargs="*", help="the program (after --); the producers program by default")
    args = parser.parse_args()
    argv = args.argv or [sys.executable, str(PRODUCERS), "--workers", "2", "--batch", "128"]
    times, totals = reports(argv, args.seconds, skip=10)
    if len(times) < 20:
        raise SystemExit(f"only {len(times)} count lines in {args.seconds:g} s: too few to read windows from")
    gaps = np.diff(times)
    print(f"{' '.join(argv)}: {len(times)} reports, gap median {np.median(gaps):.3f} s, max {gaps.max():.3f} s")
    for name, rates in readings(times, totals, args.windows, args.seed).items():
        print(f"{name}: median {np.median(rates):.0f}/s, cv {rates.std() / rates.mean():.3f} ({len(rates)} windows)")


if __name__ == "__main__":
    main()
