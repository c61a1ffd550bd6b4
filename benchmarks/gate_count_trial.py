"""The gate's counted step measured as CI runs it: `.ci/gate-count` (the actor-learner's
sequential cell, instructions per env step under valgrind, its waits beside them) run round
after round against two bases, in a random order within each round:

- `baseline`: the commit results/baselines/quick.json was saved at, as .ci/gate runs it (an
  older tree: its own harness predates counting, so this harness's cell and probe must be the
  ones counted);
- `same`: HEAD against HEAD (identical code in two worktrees): must exit 0 every time.

Per arm: exit codes, decisions, the counted ratio candidate/base, the waits' interval, and the
wall time of the whole step (worktrees, pilots, counted runs and the waits' blocks). Every
trial is written to --save as it ends, so an interrupted trial keeps what it measured.

    python benchmarks/gate_count_trial.py --rounds 10 --save benchmarks/data/gate_count-DATE.json
    python benchmarks/gate_count_trial.py --analyze FILE
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARMS = ("baseline", "same")


def base_of(arm: str) -> str:
    if arm == "same":
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()  # fmt: skip
    return json.loads((ROOT / "results/baselines/quick.json").read_text())["run"]["git_commit"]


def trial(arm: str) -> dict:
    """One `.ci/gate-count` run against the arm's base: its exit code, wall time and ab.json's cell."""
    with tempfile.TemporaryDirectory(prefix="gate-count-") as out:
        env = {**os.environ, "GATE_AGAINST": base_of(arm), "GATE_RESULTS": out}
        started = time.monotonic()
        done = subprocess.run([str(ROOT / ".ci/gate-count")], cwd=ROOT, env=env, capture_output=True, text=True,
                              check=False)  # fmt: skip
        wall = time.monotonic() - started
        found = sorted(Path(out).glob("*/ab.json"))
        cell = json.loads(found[-1].read_text())["cells"][0] if found else None
    got = {"arm": arm, "base": env["GATE_AGAINST"], "exit": done.returncode, "wall_s": round(wall, 1),
           "load": os.getloadavg()[0], "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}  # fmt: skip
    if cell is None:
        got["output_tail"] = (done.stdout + done.stderr)[-2000:]
        return got
    verdict = (cell.get("counts") or {}).get("verdict") or {}
    waits = (cell.get("waits") or {}).get("interval") or {}
    got.update(decision=cell["decision"], reason=cell["reason"], counts_ratio=verdict.get("ratio"),
               waits=[waits.get(k) for k in ("estimate", "low", "high")] if waits else None,
               counted_s=(cell.get("counts") or {}).get("elapsed_s"))  # fmt: skip
    return got


def analyze(trials: list[dict]) -> None:
    for arm in ARMS:
        mine = [t for t in trials if t["arm"] == arm]
        if not mine:
            continue
        exits = [t["exit"] for t in mine]
        walls = [t["wall_s"] for t in mine]
        ratios = [t["counts_ratio"] for t in mine if t.get("counts_ratio")]
        print(f"{arm}: {len(mine)} runs; exit 0 in {exits.count(0)}, exit codes {exits}; decisions "
              f"{[t.get('decision') for t in mine]}")  # fmt: skip
        print(f"  wall {statistics.median(walls):.0f} s [{min(walls):.0f}-{max(walls):.0f}]; counts ratio "
              f"{min(ratios, default=float('nan')):.5f}-{max(ratios, default=float('nan')):.5f}; load "
              f"{min(t['load'] for t in mine):.1f}-{max(t['load'] for t in mine):.1f}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--save", type=Path)
    parser.add_argument("--analyze", type=Path)
    args = parser.parse_args()
    if args.analyze:
        analyze(json.loads(args.analyze.read_text())["trials"])
        return 0
    arms = [a for a in args.arms.split(",") if a]
    if not arms or any(a not in ARMS for a in arms):
        parser.error(f"--arms: some of {', '.join(ARMS)}")
    rng = random.Random(args.seed)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    record = {"commit": head, "seed": args.seed, "rounds": args.rounds, "trials": []}
    for r in range(args.rounds):
        order = list(arms)
        rng.shuffle(order)
        for arm in order:
            got = trial(arm)
            got["round"] = r + 1
            record["trials"].append(got)
            print(json.dumps({k: v for k, v in got.items() if k != "reason"}), flush=True)
            if args.save:
                args.save.parent.mkdir(parents=True, exist_ok=True)
                args.save.write_text(json.dumps(record, indent=1))
    analyze(record["trials"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
