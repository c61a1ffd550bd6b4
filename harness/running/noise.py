"""How noisy is this machine? A short reading of the same fixed CPU work, timed over and over.

Two spreads, each the relative standard deviation (sd / mean) of a spin loop's rate:
- within one process: fixed slices of work back to back for half the reading; their rate
  scatters with the scheduler, frequency changes and the neighbours' load (and over 1 s
  windows, what a one-second cell would see);
- between fresh processes: one interpreter after another, each timing about PROCESS_S of the
  same slices; this is what separates two repeats of a cell (each cell is a fresh process).
From the between-process rates it says what difference is worth trusting: two groups of n
repeats drawn from this machine's own readings (the same code, so any difference is noise)
give a ratio of medians; the 95th percentile of how far that ratio strays from 1 is the
smallest difference that n repeats a side can tell from noise here. Nothing is assumed
about the shape of the noise; the figure is as good as the reading is long.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

DOCTOR_FILE = "doctor.json"  # the latest reading, in a results directory (harness doctor)
FRESH_S = 24 * 3600  # a sweep copies a reading this young, from this host, into its run.json
SLICE_STEPS = 50_000  # one slice: a few ms of pure-Python work
PROCESS_S = 1.0  # each fresh process times this long
REPEATS = (1, 3, 5)
DRAWS = 4000

SPIN = """
import time
def spin(steps):
    x = 0
    for i in range(steps):
        x = (x * 31 + i) & 0xFFFF
    return x
def slices(seconds, steps):
    out = []
    spin(steps)  # the first slice warms the interpreter up
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        spin(steps)
        out.append((t0, time.perf_counter() - t0))
    return out
"""


def _namespace() -> dict[str, Any]:
    space: dict[str, Any] = {}
    exec(SPIN, space)  # the same code the fresh processes run, so both spreads compare
    return space


def spread_pct(values: list[float]) -> float | None:
    if len(values) < 2 or statistics.fmean(values) <= 0:
        return None
    return 100.0 * statistics.stdev(values) / statistics.fmean(values)


def within_process(seconds: float) -> dict[str, Any]:
    """Rates of back-to-back slices in this process, and of 1 s windows of them."""
    found = _namespace()["slices"](seconds, SLICE_STEPS)
    rates = [1.0 / took for _, took in found if took > 0]
    origin = found[0][0] if found else 0.0
    windows: dict[int, list[float]] = {}
    for start, took in found:
        windows.setdefault(int(start - origin), []).append(took)
    per_window = [len(t) / sum(t) for k, t in sorted(windows.items()) if k < int(found[-1][0] - origin)]
    return {
        "slices": len(rates),
        "slice_spread_pct": spread_pct(rates),
        "window_1s_spread_pct": spread_pct(per_window),
        "windows": len(per_window),
    }


def process_rate() -> float:
    """One fresh interpreter's rate of slices over PROCESS_S."""
    code = SPIN + f"\nfound = slices({PROCESS_S}, {SLICE_STEPS})\nprint(len(found) / sum(t for _, t in found))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return float(out.stdout.strip())


def between_processes(seconds: float) -> list[float]:
    end = time.monotonic() + seconds
    rates = [process_rate()]
    while time.monotonic() + PROCESS_S < end or len(rates) < 3:
        rates.append(process_rate())
    return rates


def trust(rates: list[float], repeats: tuple[int, ...] = REPEATS, seed: int = 0) -> dict[str, float]:
    """{n: smallest difference (%) that n repeats a side tell from this machine's noise}."""
    rng = np.random.default_rng(seed)
    pool = np.asarray(rates, dtype=float)
    out = {}
    for n in repeats:
        a = np.median(rng.choice(pool, size=(DRAWS, n)), axis=1)
        b = np.median(rng.choice(pool, size=(DRAWS, n)), axis=1)
        stray = np.abs(np.log(b / a))
        out[str(n)] = float(100.0 * (np.exp(np.quantile(stray, 0.95)) - 1.0))
    return out


def reading(seconds: float) -> dict[str, Any]:
    """The whole reading: half within one process, half between fresh processes."""
    within = within_process(seconds / 2)
    rates = between_processes(seconds / 2)
    return {
        "seconds": seconds,
        "within_process": within,
        "between_processes": {
            "processes": len(rates),
            "spread_pct": spread_pct(rates),
            "rates_slices_per_s": [round(r, 2) for r in rates],
        },
        "trust_pct_by_repeats": trust(rates),
    }


def for_run(results: Path, hostname: str) -> dict[str, Any]:
    """What a sweep records in run.json: the latest `harness doctor` reading of this host in
    its results directory while it is fresh (a 20 s reading per sweep would cost more than a
    quick sweep), else None and a note saying how to get one."""
    try:
        data = json.loads((results / DOCTOR_FILE).read_text())
    except (OSError, json.JSONDecodeError):
        data = None
    note = f"no harness doctor reading of this host in {results} from the last {FRESH_S // 3600} h: run harness doctor"
    if not isinstance(data, dict) or data.get("hostname") != hostname:
        return {"machine_noise": None, "machine_noise_note": note}
    try:
        measured = datetime.strptime(str(data["measured_at"]), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except (KeyError, ValueError):
        return {"machine_noise": None, "machine_noise_note": note}
    age = (datetime.now(UTC) - measured).total_seconds()
    if not 0 <= age <= FRESH_S:
        return {"machine_noise": None, "machine_noise_note": note}
    between = data.get("between_processes") or {}
    within = data.get("within_process") or {}
    return {
        "machine_noise": {
            "measured_at": data["measured_at"],
            "age_s": round(age),
            "seconds": data.get("seconds"),
            "between_processes_spread_pct": between.get("spread_pct"),
            "within_process_spread_pct": within.get("slice_spread_pct"),
            "trust_pct_by_repeats": data.get("trust_pct_by_repeats"),
            "source": str(results / DOCTOR_FILE),
        }
    }


if __name__ == "__main__":  # python -m harness.running.noise [SECONDS]
    print(json.dumps(reading(float(sys.argv[1]) if len(sys.argv) > 1 else 20.0), indent=2))
