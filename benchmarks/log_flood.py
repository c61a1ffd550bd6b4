"""A program that floods its output: how long it takes under the harness, and the log it leaves.

    python benchmarks/log_flood.py [--repeats 3] [--out DIR]

Two writers, each run alone (output to /dev/null) and as `harness sweep -- python -c ...`
with --log-cap-mb 16, interleaved, --repeats times: 1 GiB in 1 MiB writes without a newline
(the fastest writer: it times the harness's copy, pipe and log), and 100 MB of 100-byte
lines (every line goes through the progress readers). Prints the medians (min-max) of the
writer's own time and of the cell's wall time, the log's size and the record's log_capped.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WRITERS = {
    "1 GiB, 1 MiB writes, no newline": "import sys; b = b'x' * 2**20; [sys.stdout.buffer.write(b) for _ in range(1024)]",
    "100 MB of 100-byte lines": "import sys; b = (b'y' * 99 + b'\\n') * 10_000; [sys.stdout.buffer.write(b) for _ in range(100)]",
}


def alone(code: str) -> float:
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL, check=True)
    return time.monotonic() - t0


def harnessed(code: str, out: Path) -> tuple[float, dict]:
    before = set(out.iterdir()) if out.exists() else set()
    argv = [sys.executable, "-m", "harness.cli", "sweep", "--duration", "600", "--steady", "off", "--log-cap-mb", "16"]
    done = subprocess.run(
        argv + ["--out", str(out), "--quiet", "--", sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(done.stdout + done.stderr)
    (run_dir,) = [p for p in out.iterdir() if p not in before]
    record = json.loads((run_dir / "cells.jsonl").read_text().splitlines()[0])
    record["log_size"] = (run_dir / record["log"]).stat().st_size
    return float(record["metrics"]["wall_s"]), record


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} s ({min(values):.1f}-{max(values):.1f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="flood-"))
    times: dict[str, dict[str, list[float]]] = {name: {"alone": [], "harness": []} for name in WRITERS}
    last: dict[str, dict] = {}
    for _ in range(args.repeats):
        for name, code in WRITERS.items():  # interleaved: alone, then under the harness, each writer
            times[name]["alone"].append(alone(code))
            wall, last[name] = harnessed(code, out)
            times[name]["harness"].append(wall)
    for name in WRITERS:
        rec = last[name]
        print(f"{name}: alone {spread(times[name]['alone'])}, under the harness {spread(times[name]['harness'])}")
        print(f"  status {rec['status']}, log {rec['log_size']} bytes, log_capped {rec.get('log_capped')}")
    print(f"run directories in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
