"""A 100-cell fault-injected sweep: does every row get recorded, and does nothing outlive it?

    python benchmarks/faults.py [--out results] [--none 30] [--each 10]

Runs `harness sweep` on synthetic cells that fail in every way the synthetic suite can
(raise, hang, exit, kill_worker, segfault, oom, orphan) mixed with healthy ones, then
prints rows recorded, statuses per fault kind, orphans found (a psutil scan for processes
carrying the run's HARNESS_RUN marker or mentioning its directory) and the wall time.
Exits 1 if a row is missing or a process survived.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.cell.processes import marked_processes  # noqa: E402
from harness.runs.store import RunStore  # noqa: E402

FAULTS = ("raise", "exit", "kill_worker", "segfault", "oom", "orphan", "hang")


def spec_text(none: int, each: int) -> str:
    """Distinct cells (unit_size differs) so that every row has its own id."""
    lines = ['label = "faults"', "duration = 0.3", "memory_limit_mb = 512", "repeats = 1"]
    sizes = [20_000 + i for i in range(max(none, each))]
    lines += ["[[matrix]]", 'suite = "synthetic"', f"params = {{ workers = 1, unit_size = {sizes[:none]} }}"]
    for fault in FAULTS:
        lines += ["[[matrix]]", 'suite = "synthetic"']
        if fault == "hang":
            lines.append("timeout = 1.5")
        lines.append(f'params = {{ fail = "{fault}", fail_after_s = 0.05, workers = 2, unit_size = {sizes[:each]} }}')
    return "\n".join(lines) + "\n"


def orphans(run_dir: Path) -> list[str]:
    found = {p.pid: p for p in marked_processes(run_dir).values()}
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if str(run_dir) in " ".join(proc.info["cmdline"] or []):
                found[proc.pid] = proc
        except psutil.Error:
            pass
    return [f"{pid} {' '.join(p.cmdline())[:80]}" for pid, p in found.items() if p.is_running()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results")
    parser.add_argument("--none", type=int, default=30, help="healthy cells")
    parser.add_argument("--each", type=int, default=10, help="cells per fault kind")
    args = parser.parse_args()
    expected = args.none + args.each * len(FAULTS)
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "faults.toml"
        spec.write_text(spec_text(args.none, args.each))
        before = {p for p in args.out.iterdir()} if args.out.exists() else set()
        t0 = time.monotonic()
        sweep = subprocess.run(
            [sys.executable, "-m", "harness.cli", "sweep", str(spec), "--out", str(args.out), "--quiet"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - t0
    (run_dir,) = [p for p in args.out.iterdir() if p not in before and p.is_dir()]
    lines = [line for line in (run_dir / "cells.jsonl").read_text().splitlines() if line.strip()]
    valid = [json.loads(line) for line in lines]
    records = RunStore.open(run_dir).records()
    statuses: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for rec in records:
        statuses[rec.params["fail"]][rec.status] += 1
    left = orphans(run_dir)
    dumps = sum(1 for r in records if r.stack_dump)
    print(f"sweep exit code {sweep.returncode} (1 = some cells failed, as injected)")
    print(f"cells expected {expected}, rows recorded {len(valid)}, distinct cell-repeats {len(records)}")
    print(f"lost rows {expected - len(records)}")
    for fail in ("none", *FAULTS):
        print(f"  {fail:<12} " + ", ".join(f"{s} {n}" for s, n in sorted(statuses[fail].items())))
    print(
        f"stack dumps {dumps}; escapees killed (warnings) {sum(any('outlived' in w for w in r.warnings) for r in records)}"
    )
    print(f"orphans found {len(left)}" + (": " + "; ".join(left) if left else ""))
    print(f"wall time {wall:.1f} s ({wall / max(len(records), 1):.2f} s per cell); run directory {run_dir}")
    return 0 if len(records) == expected and not left else 1


if __name__ == "__main__":
    sys.exit(main())
