"""Does `harness ab --measure instructions` decide right, and how soon?  A campaign on a user's repository.

A git repository is made under --root with a program as the README's (fixed work per
iteration, `Iteration N (X iter/s)` every 10 iterations) and one commit per arm on top of
the base:

- same:   a commit that changes nothing the program runs (identical revisions);
- work1:  1 % more loop steps per iteration; work5: 5 % more;
- sleep:  a sleep in every iteration worth about 10 % of its native time (no instructions
          added: what counts cannot see, the waits must).

Each A/B is `harness ab BASE ARM --measure instructions -- python3 train.py`, run through
`--wrap` (a command each A/B runs under, e.g. one that keeps other work off the CPU while it is timed), the arms
interleaved round by round. Recorded per A/B: exit code, wall seconds, each cell's decision,
its reason, the counts' ratio and interval, the waits' interval; saved to --save as JSON.
Before the rounds the sleep is calibrated natively: the program's iteration time with and
without it, measured alternately (--calibrate seconds).

    python benchmarks/count_trial.py --rounds 20 --arms same,work1,work5 --save benchmarks/data/count_trial.json
    python benchmarks/count_trial.py --analyze benchmarks/data/count_trial.json ...
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

import numpy as np

PROGRAM = '''"""A user's trainer: fixed work per iteration, its progress as `Iteration N (X iter/s)`."""
import sys
import time

WORK = {work}


def step() -> int:
{sleep}    x = 0
    for i in range(WORK):
        x += i * i
    return x


def main(n: int) -> None:
    t0 = time.monotonic()
    for it in range(1, n + 1):
        step()
        if it % 10 == 0:
            print(f"Iteration {{it}} ({{it / (time.monotonic() - t0):.1f}} iter/s)", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10**9)
'''
WORK = 100_000
ROOT = Path(__file__).resolve().parent.parent


def program(work: int = WORK, sleep_s: float = 0.0) -> str:
    return PROGRAM.format(work=work, sleep=f"    time.sleep({sleep_s:.6f})\n" if sleep_s else "")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def iteration_s(code: str, root: Path, seconds: float) -> float:
    """Native seconds per iteration of `code` over about `seconds` (its own printed rate at the end)."""
    path = root / "calibrate.py"
    path.write_text(code)
    proc = subprocess.Popen([sys.executable, str(path)], stdout=subprocess.PIPE, text=True)
    time.sleep(seconds)
    proc.terminate()
    out = proc.communicate()[0].strip().splitlines()
    rate = float(out[-1].split("(")[1].split()[0])
    return 1 / rate


def calibrate(root: Path, seconds: float, target: float = 0.10) -> tuple[float, dict]:
    """The sleep that adds about `target` of an iteration's native time, by alternate runs."""
    base = [iteration_s(program(), root, seconds / 4) for _ in range(2)]
    sleep_s = target * float(np.median(base))
    for _ in range(2):  # a sleep overshoots its argument (the timer's slack): correct for it
        with_sleep = float(np.median([iteration_s(program(sleep_s=sleep_s), root, seconds / 4) for _ in range(2)]))
        base.append(iteration_s(program(), root, seconds / 4))
        added = with_sleep / float(np.median(base)) - 1
        sleep_s *= target / max(added, 1e-3)
    check = [iteration_s(program(sleep_s=sleep_s), root, seconds / 4) / iteration_s(program(), root, seconds / 4) - 1
             for _ in range(3)]  # fmt: skip
    return sleep_s, {"iteration_s": float(np.median(base)), "sleep_s": sleep_s, "added": check}


def make_repo(root: Path, sleep_s: float) -> tuple[Path, dict[str, str]]:
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "dev@example.com")
    git(repo, "config", "user.name", "dev")
    (repo / "train.py").write_text(program())
    (repo / "README.md").write_text("A trainer.\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    arms = {}
    variants = {
        "same": ("README.md", "A trainer, documented.\n"),
        "work1": ("train.py", program(work=WORK * 101 // 100)),
        "work5": ("train.py", program(work=WORK * 105 // 100)),
        "sleep": ("train.py", program(sleep_s=sleep_s)),
    }
    for name, (path, text) in variants.items():
        git(repo, "checkout", "-q", base)
        (repo / path).write_text(text)
        git(repo, "commit", "-qam", name)
        arms[name] = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", base)
    return repo, {"base": base, **arms}


def one(repo: Path, base: str, cand: str, wrap: list[str], out: Path, extra: list[str]) -> dict:
    cmd = [*wrap, sys.executable, "-m", "harness.cli", "ab", base, cand, "--measure", "instructions", "--quiet",
           "--out", str(out), *extra, "--", "python3", "train.py"]  # fmt: skip
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.monotonic() - t0
    record: dict = {"exit": done.returncode, "wall_s": wall, "tail": done.stdout[-3000:] + done.stderr[-2000:]}
    written = [line for line in done.stdout.splitlines() if line.startswith("ab: exit")]
    if written:
        ab_json = Path(written[-1].split("written: ")[1].split(",")[0])
        doc = json.loads(ab_json.read_text())
        cell = doc["cells"][0]
        told = cell["counts"]["verdict"] or {}
        waits = (cell.get("waits") or {}).get("interval") or {}
        record |= {
            "dir": str(ab_json.parent),
            "decision": cell["decision"],
            "reason": cell["reason"],
            "counts": {k: told.get(k) for k in ("decision", "ratio", "low", "high")},
            "counts_s": cell["counts"]["elapsed_s"],
            "waits": {k: waits.get(k) for k in ("ratio", "ratio_low", "ratio_high", "n")},
            "waits_s": (cell.get("waits") or {}).get("elapsed_s"),
        }
        record["ab_s"] = ab_seconds(record)
    return record


def ab_seconds(record: dict) -> float | None:
    """The A/B's own seconds (its run.json's start to end: the harness's start-up of about a
    second not in it), not the time `--wrap` waited for the machine. Kept in the record as
    `ab_s`, so that a saved file is read without the A/B's directory."""
    from datetime import datetime

    if record.get("ab_s") is not None:
        return record["ab_s"]
    if not record.get("dir") or not (Path(record["dir"]) / "run.json").is_file():
        return None
    meta = json.loads((Path(record["dir"]) / "run.json").read_text())
    if not meta.get("ended"):
        return None
    started, ended = (datetime.fromisoformat(meta[k].replace("Z", "+00:00")) for k in ("started", "ended"))
    return (ended - started).total_seconds()


def analyze(paths: list[Path]) -> None:
    """Per arm over every file: exit codes, the A/B's own seconds, the counts' and waits' ratios."""
    runs = [r for path in paths for r in json.loads(path.read_text())["runs"]]
    for arm in dict.fromkeys(r["arm"] for r in runs):
        mine = [r for r in runs if r["arm"] == arm]
        exits = [r["exit"] for r in mine]
        secs = np.array([s for r in mine if (s := ab_seconds(r)) is not None])
        ratios = [r["counts"]["ratio"] for r in mine if (r.get("counts") or {}).get("ratio")]
        waits = [r["waits"] for r in mine if (r.get("waits") or {}).get("ratio")]
        print(f"{arm}: {len(mine)} A/Bs, exits {dict((e, exits.count(e)) for e in sorted(set(exits)))}; "
              f"A/B seconds median {np.median(secs):.0f} [{secs.min():.0f}, {secs.max():.0f}]; "
              f"counts ratio {min(ratios, default=float('nan')):.5f}-{max(ratios, default=float('nan')):.5f}")  # fmt: skip
        if waits:
            low = [w["ratio_low"] for w in waits]
            high = [w["ratio_high"] for w in waits]
            print(f"  waits: {len(waits)} decided on them; estimates {min(w['ratio'] for w in waits):.3f}-"
                  f"{max(w['ratio'] for w in waits):.3f}, lows {min(low):.3f}-{max(low):.3f}, highs "
                  f"{min(high):.3f}-{max(high):.3f}, blocks {sorted({w['n'] for w in waits})}")  # fmt: skip


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--analyze":
        analyze([Path(p) for p in sys.argv[2:]])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--arms", default="same,work1,work5,sleep")
    parser.add_argument("--root", type=Path, default=None)
    parser.add_argument("--wrap", default="", help="a command each A/B runs under (none unless given)")
    parser.add_argument("--calibrate", type=float, default=8.0, help="seconds of native runs to set the sleep")
    parser.add_argument("--sleep", type=float, default=None, help="the sleep per iteration (skips calibrating)")
    parser.add_argument("--args", default="", help="more harness ab flags")
    parser.add_argument("--save", type=Path, required=True)
    args = parser.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="count-trial-"))
    root.mkdir(parents=True, exist_ok=True)
    wrap = shlex.split(args.wrap)
    if args.sleep is None:
        sleep_s, calibration = calibrate(root, args.calibrate) if "sleep" in args.arms else (0.0, {})
    else:
        sleep_s, calibration = args.sleep, {"sleep_s": args.sleep}
    print(f"sleep per iteration: {sleep_s * 1e3:.3f} ms; calibration: {calibration}", flush=True)
    if args.rounds == 0:
        return
    repo, commits = make_repo(root, sleep_s)
    arms = args.arms.split(",")
    runs = []
    for r in range(args.rounds):
        for arm in arms:
            record = one(repo, commits["base"], commits[arm], wrap, root / "out", shlex.split(args.args))
            runs.append({"round": r, "arm": arm, **record})
            print(f"round {r} {arm}: exit {record['exit']} in {record['wall_s']:.0f} s; {record.get('reason', record['tail'][-300:])}",
                  flush=True)  # fmt: skip
            args.save.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()},
                                             "calibration": calibration, "commits": commits, "runs": runs}, indent=1))  # fmt: skip
    for arm in arms:
        mine = [r for r in runs if r["arm"] == arm]
        exits = [r["exit"] for r in mine]
        walls = np.array([r["wall_s"] for r in mine])
        ratios = [r["counts"]["ratio"] for r in mine if r.get("counts", {}).get("ratio")]
        print(f"{arm}: exits {dict((e, exits.count(e)) for e in sorted(set(exits)))}; wall median {np.median(walls):.0f} s "
              f"[{walls.min():.0f}, {walls.max():.0f}]; counts ratio {min(ratios, default=float('nan')):.5f}-"
              f"{max(ratios, default=float('nan')):.5f}")  # fmt: skip


if __name__ == "__main__":
    main()
