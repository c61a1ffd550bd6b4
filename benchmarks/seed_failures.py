"""The seeds' failures, named every time: `harness watch` over the four classic failures the
harness was built for, as unmodified programs at the seeds' scale, and over their healthy
controls, N times each, on an idle machine and beside CPU-bound neighbours.

    python benchmarks/seed_failures.py --runs 10 --neighbours 0,2 --save benchmarks/data/seed_failures-DATE.json
    python benchmarks/seed_failures.py --runs 1 --capture tests/harness/data/seeds   # refresh the fixtures

The regression set (each program in tests/programs, its failure and its control):

| seed | failure | control | its finding |
| --- | --- | --- | --- |
| busy-wait | a learner polls its queue with a 1 ms sleep | blocks on get() | BUSY_WAIT |
| full-state | workers pickle their whole growing table every batch | only the new rows | SERIALIZATION |
| tiny-batches | 16 threads share one torch net at batch 1 | one batched call | SMALL_BATCHES |
| lost-work | a pool of 128 handed 100 // 128 units each | split_work | IDLE_WORKERS |

Runs are interleaved (a random order of every seed x mode per round, the same neighbours for a
whole round) so that a slow minute of the host falls on all of them. Neighbours are processes
spinning in pure Python, one per core asked, started before the round and killed after it.
A failure counts as named when its finding is among the run's findings; a control as quiet
when it drew none of the four (any other finding it drew is listed too). `--capture DIR`
keeps each (seed, mode, neighbours)'s first run directory's run.json and cells.jsonl (the
record every rule reads) as DIR/<seed>-<mode>-<n>n/: tests/harness/test_seed_failures.py
runs the rules over them, so a rule change that misses a seed fails a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "tests" / "programs"
SEEDS = {
    "busy-wait": ("busy_poll.py", ["poll"], ["block"], "BUSY_WAIT"),
    "full-state": ("full_state.py", ["full"], ["delta"], "SERIALIZATION"),
    "tiny-batches": ("shared_net.py", ["threads"], ["batched"], "SMALL_BATCHES"),
    "lost-work": ("lost_work.py", ["floor", "128", "100"], ["split", "128", "100"], "IDLE_WORKERS"),
}
RULES = {rule for *_, rule in SEEDS.values()}
SPIN = "while True: pass"


def watch(seed: str, mode: str, duration: float, out: Path) -> dict:
    """One `harness watch` of a seed's failure or control: exit code, findings, wall time."""
    program, bad, good, rule = SEEDS[seed]
    args = bad if mode == "failure" else good
    command = [sys.executable, "-m", "harness.cli", "watch", "--quiet", "--duration", str(duration), "--out", str(out)]
    command += ["--", sys.executable, str(PROGRAMS / program), *args]
    started = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=duration + 180)
    wall = time.monotonic() - started
    runs = sorted(p for p in out.iterdir() if p.is_dir())
    found: list[dict] = []
    if runs:
        diag = subprocess.run(
            [sys.executable, "-m", "harness.cli", "diagnose", str(runs[-1]), "--json"],
            capture_output=True, text=True, cwd=ROOT,
        )  # fmt: skip
        found = json.loads(diag.stdout or "[]")
    rules = sorted({f["rule"] for f in found})
    return {
        "seed": seed,
        "mode": mode,
        "rule": rule,
        "exit": proc.returncode,
        "wall_s": round(wall, 1),
        "rules": rules,
        "named": rule in rules,
        "seed_rules": sorted(RULES & set(rules)),
        "hint": next((f["hint"][:400] for f in found if f["rule"] == rule), None),
        "evidence": next((f.get("evidence", {}).get("idle_by") for f in found if f["rule"] == rule), None),
        "run": str(runs[-1]) if runs else None,
        "tail": proc.stdout[-600:] if proc.returncode else "",
    }


def spin(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(n)]


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each seed x mode x neighbours")
    parser.add_argument("--neighbours", default="0,2", help="CPU-bound neighbours per round, comma-separated")
    parser.add_argument("--duration", type=float, default=12.0, help="harness watch --duration")
    parser.add_argument("--seeds", default=",".join(SEEDS), help="which seeds")
    parser.add_argument("--seed", type=int, default=0, help="the order's random seed")
    parser.add_argument("--save", type=Path, help="write every run as JSON here")
    parser.add_argument("--capture", type=Path, help="keep the first run of each kind as a fixture here")
    parser.add_argument("--keep", type=Path, help="keep every run's run.json and cells.jsonl here (to diagnose again)")
    args = parser.parse_args()
    seeds = args.seeds.split(",")
    loads = [int(n) for n in args.neighbours.split(",")]
    rng = random.Random(args.seed)
    rows: list[dict] = []
    scratch = Path(tempfile.mkdtemp(prefix="seed-failures-"))
    try:
        for round_ in range(args.runs):
            for n in loads:
                order = [(s, m) for s in seeds for m in ("failure", "control")]
                rng.shuffle(order)
                neighbours = spin(n)
                try:
                    for seed, mode in order:
                        out = scratch / f"{seed}-{mode}-{n}n-{round_}"
                        row = watch(seed, mode, args.duration, out) | {"neighbours": n, "round": round_,
                                                                        "load1": os.getloadavg()[0]}  # fmt: skip
                        rows.append(row)
                        ok = row["named"] if mode == "failure" else not row["seed_rules"]
                        print(f"{round_} {n}n {seed:12s} {mode:8s} {'ok ' if ok else 'BAD'} exit {row['exit']} "
                              f"{row['wall_s']:5.1f} s load {row['load1']:.1f} {row['rules']}", flush=True)  # fmt: skip
                        if args.keep and row["run"]:
                            kept = args.keep / f"{seed}-{mode}-{n}n-{round_}"
                            kept.mkdir(parents=True, exist_ok=True)
                            for name in ("run.json", "cells.jsonl"):
                                shutil.copy(Path(row["run"]) / name, kept / name)
                        if args.capture and round_ == 0:
                            keep = args.capture / f"{seed}-{mode}-{n}n"
                            shutil.rmtree(keep, ignore_errors=True)
                            keep.mkdir(parents=True)
                            for name in ("run.json", "cells.jsonl"):  # no machine path in a fixture
                                text = (Path(row["run"]) / name).read_text()
                                text = text.replace(str(scratch), "SCRATCH").replace(str(ROOT), "ROOT")
                                (keep / name).write_text(text.replace(sys.executable, "PYTHON"))
                            meta = {k: row[k] for k in ("seed", "mode", "rule", "neighbours", "rules", "load1")}
                            meta["taken"] = time.strftime("%Y-%m-%d", time.gmtime())
                            (keep / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
                finally:
                    stop(neighbours)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if args.save:
            args.save.parent.mkdir(parents=True, exist_ok=True)
            args.save.write_text(json.dumps(rows, indent=1))
    print("\nseed          mode      neighbours  right/runs")
    for seed in seeds:
        for mode in ("failure", "control"):
            for n in loads:
                mine = [r for r in rows if r["seed"] == seed and r["mode"] == mode and r["neighbours"] == n]
                right = sum(r["named"] if mode == "failure" else not r["seed_rules"] for r in mine)
                print(f"{seed:13s} {mode:9s} {n:10d}  {right}/{len(mine)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
