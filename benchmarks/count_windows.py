"""Which mechanism opens and closes a counted window exactly?  Inside the program or outside it.

A counted run (harness.count.window) counts a program's instructions between two marks of
its own progress. Two ways to put the marks:

- inside: the line is sent by the process that writes it (the injected hook) and the process
  waits while the harness reads it; the hook issues callgrind's client request
  (START_INSTRUMENTATION, DUMP_STATS_AT) at that point of the program's work;
- outside: the harness reads the line from the program's pipe and runs `callgrind_control`
  (-i on, --dump) on the process, which acts when valgrind next polls for commands.

Both run the same program (the README's kind: fixed work per iteration, `Iteration N (X
iter/s)` every `--every` iterations) `--runs` times with the same plan (the window opens at
the second line that advanced the counter, halves of `--every` units), `--parallel` at a
time (counts do not depend on the machine's load). Printed per mechanism: instructions per
unit of each run, their spread (max/min - 1), and the halves' disagreement; the raw runs go
to `--out` as JSON.

    python benchmarks/count_windows.py --runs 5 --out benchmarks/data/count_windows-2026-11-29.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.count.window import CountFailed, Plan, counted_run

PROGRAM = """\
import sys, time
N, work, every = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
n, t0 = 0, time.monotonic()
while n < N:
    x = 0
    for i in range(work): x += i * i
    n += 1
    if n % every == 0: print(f"Iteration {n} ({n / (time.monotonic() - t0):.1f} iter/s)", flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--work", type=int, default=20000, help="loop steps per iteration")
    parser.add_argument("--every", type=int, default=50, help="iterations per progress line")
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--mechanisms", default="inside,outside")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="count-windows-"))
    (root / "t.py").write_text(PROGRAM)
    argv = ["python3", "t.py", "100000000", str(args.work), str(args.every)]
    plan = Plan(warmup_lines=1, start_at=None, half=float(args.every))
    jobs = [(m, i) for i in range(args.runs) for m in args.mechanisms.split(",")]

    def one(job: tuple[str, int]) -> dict:
        mechanism, i = job
        try:
            run = counted_run(argv, root, root / f"{mechanism}-{i}", plan, f"{mechanism} {i}", mechanism=mechanism)
        except CountFailed as exc:
            return {"mechanism": mechanism, "run": i, "error": str(exc)}
        return {"mechanism": mechanism, "run": i, **run.to_json()}

    with ThreadPoolExecutor(args.parallel) as pool:
        runs = list(pool.map(one, jobs))
    for mechanism in args.mechanisms.split(","):
        mine = [r for r in runs if r["mechanism"] == mechanism and "error" not in r]
        failed = [r["error"] for r in runs if r["mechanism"] == mechanism and "error" in r]
        per_unit = [r["per_unit"] for r in mine]
        halves = [abs(r["halves_per_unit"][1] / r["halves_per_unit"][0] - 1) for r in mine]
        print(f"{mechanism}: {len(mine)} runs, {len(failed)} failed")
        for r in mine:
            print(f"  {r['per_unit']:,.1f} instructions/unit, halves {r['halves_per_unit'][0]:,.1f} / "
                  f"{r['halves_per_unit'][1]:,.1f}, units {r['window_units']}, {r['wall_s']:.0f} s")  # fmt: skip
        if len(per_unit) >= 2:
            print(f"  spread of runs (max/min - 1): {max(per_unit) / min(per_unit) - 1:.2e}; "
                  f"largest halves' disagreement: {max(halves):.2e}")  # fmt: skip
        for error in failed:
            print(f"  failed: {error}")
    if args.out is not None:
        args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)}, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
