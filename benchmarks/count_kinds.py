"""What do counts say of CPU changes of different kinds, against what time says?

A program whose iteration does three kinds of CPU work (a pure-Python loop, a numpy gather
from an 8 MB array at sorted indices, a short linear look-up) is changed five ways, one
commit each on top of the base:

- loop:    5 % more iterations of the loop;
- search:  the look-up by a linear scan of a list instead of a dict (a slower algorithm);
- copy:    an extra copy of the loop's list every iteration;
- order:   the gather at shuffled indices instead of sorted ones (the same instructions,
           a cache-unfriendly access order);
- calls:   the loop's arithmetic through a function call (more Python calls).

For each, `harness ab BASE CHANGE --measure instructions` (the counts' ratio, candidate over
base instructions per unit) and a long time A/B, `harness ab BASE CHANGE --budget B` (its
rate ratio, read as the time A/B reads it: per CPU second and without run-queue waits), each
under --wrap (none unless given). Printed side by side as slowdowns (time: base rate
over candidate rate; counts: candidate over base instructions); raw results to --save.

    python benchmarks/count_kinds.py --budget 300 --save benchmarks/data/count_kinds.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BASE = '''"""A program with three kinds of CPU work an iteration; its progress as `Iteration N (X iter/s)`."""
import sys
import time

import numpy as np

N = 20000
M = N  # the loop's iterations
data = list(range(N + N // 20))
rng = np.random.default_rng(0)
table = rng.random(1 << 20)  # 8 MB: larger than this machine's caches
where = np.sort(rng.integers(0, table.size, 200_000))
keys = [f"k{i}" for i in range(300)]
index = {k: i for i, k in enumerate(keys)}
wanted = keys[::3]


def mul(a, b):
    return a * b


def step() -> float:
    items = data
    x = 0
    for i in range(M):
        x += items[i] * i
    picked = table[where].sum()
    found = sum(index[k] for k in wanted)
    return x + picked + found


def main(n: int) -> None:
    t0 = time.monotonic()
    for it in range(1, n + 1):
        step()
        if it % 10 == 0:
            print(f"Iteration {it} ({it / (time.monotonic() - t0):.1f} iter/s)", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10**9)
'''

CHANGES = {
    "loop": ("M = N  # the loop's iterations\n", "M = N + N // 20  # the loop's iterations\n"),
    "search": ("    found = sum(index[k] for k in wanted)\n", "    found = sum(keys.index(k) for k in wanted)\n"),
    "copy": ("    items = data\n", "    items = list(data)\n"),
    "order": (
        "where = np.sort(rng.integers(0, table.size, 200_000))\n",
        "where = rng.permutation(np.sort(rng.integers(0, table.size, 200_000)))\n",
    ),
    "calls": ("        x += items[i] * i\n", "        x += mul(items[i], i)\n"),
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def make_repo(root: Path) -> tuple[Path, dict[str, str]]:
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "dev@example.com")
    git(repo, "config", "user.name", "dev")
    (repo / "train.py").write_text(BASE)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    commits = {"base": git(repo, "rev-parse", "HEAD")}
    for name, (old, new) in CHANGES.items():
        git(repo, "checkout", "-q", commits["base"])
        assert old in BASE, name
        (repo / "train.py").write_text(BASE.replace(old, new, 1))
        git(repo, "commit", "-qam", name)
        commits[name] = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", commits["base"])
    return repo, commits


def ab(repo: Path, base: str, cand: str, wrap: list[str], out: Path, flags: list[str]) -> dict:
    cmd = [*wrap, sys.executable, "-m", "harness.cli", "ab", base, cand, "--quiet", "--out", str(out), *flags,
           "--", "python3", "train.py"]  # fmt: skip
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    record: dict = {
        "exit": done.returncode,
        "wall_s": time.monotonic() - t0,
        "tail": done.stdout[-2000:] + done.stderr[-1000:],
    }
    written = [line for line in done.stdout.splitlines() if line.startswith("ab: exit")]
    if written:
        path = Path(written[-1].split("written: ")[1].split(",")[0])
        record["cell"] = json.loads(path.read_text())["cells"][0]
    return record


def slowdowns(counts: dict, timed: dict) -> tuple[float | None, float | None, list[float] | None]:
    """(counts: candidate/base instructions per unit; time: base/candidate rate, and its interval)."""
    told = ((counts.get("cell") or {}).get("counts") or {}).get("verdict") or {}
    interval = (timed.get("cell") or {}).get("interval") or {}
    ratio = interval.get("ratio")
    span = [1 / interval["ratio_high"], 1 / interval["ratio_low"]] if interval.get("ratio_low") else None
    return told.get("ratio"), (1 / ratio if ratio else None), span


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=300.0, help="the time A/B's budget (s)")
    parser.add_argument("--changes", default=",".join(CHANGES))
    parser.add_argument("--wrap", default="", help="a command each A/B runs under (none unless given)")
    parser.add_argument("--root", type=Path, default=None)
    parser.add_argument("--save", type=Path, required=True)
    args = parser.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="count-kinds-"))
    repo, commits = make_repo(root)
    wrap = shlex.split(args.wrap)
    results = []
    for name in args.changes.split(","):
        counts = ab(repo, commits["base"], commits[name], wrap, root / "out", ["--measure", "instructions"])
        timed = ab(repo, commits["base"], commits[name], wrap, root / "out",
                   ["--budget", f"{args.budget:g}", "--tolerance", "3%"])  # fmt: skip
        by_counts, by_time, span = slowdowns(counts, timed)
        results.append({"change": name, "counts": counts, "time": timed, "counts_slowdown": by_counts,
                        "time_slowdown": by_time, "time_interval": span})  # fmt: skip
        args.save.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "commits": commits,
                                         "results": results}, indent=1))  # fmt: skip
        print(
            f"{name}: counts {by_counts}, time {by_time} {span} (exits {counts['exit']}, {timed['exit']})", flush=True
        )


if __name__ == "__main__":
    main()
