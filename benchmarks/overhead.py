"""The harness's own overhead: synthetic spin units/s under `harness run` against the same
work units run directly in one plain process, interleaved so machine load hits both alike.

    python benchmarks/overhead.py --repeats 5 --duration 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time

from suites.synthetic.spin import spin_unit

UNIT_SIZE = 20_000


def direct(duration: float) -> float:
    """The bare workload: no probe, no child process, no monitors."""
    units = 0
    start = time.perf_counter()
    while time.perf_counter() - start < duration:
        spin_unit(UNIT_SIZE)
        units += 1
    return units / (time.perf_counter() - start)


def harnessed(duration: float, out: str) -> float:
    cmd = [
        sys.executable,
        "-m",
        "harness.cli",
        "run",
        "synthetic",
        "--set",
        "workers=1",
        "--set",
        f"unit_size={UNIT_SIZE}",
        "--duration",
        str(duration),
        "--warmup",
        "0",
        "--json",
        "--out",
        out,
    ]
    record = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()[-1])
    return record["metrics"]["units_per_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--duration", type=float, default=5.0)
    args = parser.parse_args()
    ratios, bare, under = [], [], []
    with tempfile.TemporaryDirectory() as out:
        for i in range(args.repeats):
            a = direct(args.duration)
            b = harnessed(args.duration, out)
            bare.append(a)
            under.append(b)
            ratios.append(b / a)
            print(f"repeat {i}: direct {a:.1f} units/s, harness run {b:.1f} units/s, ratio {b / a:.4f}")
    median = statistics.median(ratios)
    print(f"median direct {statistics.median(bare):.1f} units/s, median harness {statistics.median(under):.1f} units/s")
    print(f"median ratio harness/direct {median:.4f} -> overhead {100 * (1 - median):.2f} %")


if __name__ == "__main__":
    main()
