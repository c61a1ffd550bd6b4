"""What `harness watch` costs the program it watches: the same CPU-bound workload with and
without the instruments, interleaved, at several process counts (default 2 and 128).

The workload: N worker processes each run fixed pure-Python work units and count them into
shared memory; the main process waits until every worker has done one unit, then reads the
counters over a `start` window (the first --start-s seconds, when the watch starts its py-spy
recorders) and a `steady` window (the rest of --seconds), prints them as JSON and exits.
Watched, it runs as `harness watch --duration <seconds + slack> -- python -c <workload>` and
its JSON line is read from the watch's log; unwatched, it runs directly. Pairs alternate
which goes first. Reported per process count: units/s unwatched and watched (medians), the
watched/unwatched ratio of medians with a bootstrap 95 % interval per window, and the
instruments' own cost from the watch records (watch_cpu_pct, py-spy rate and samples,
recorders started, cpu_monitor_cpu_pct).

    python benchmarks/watch_cost.py [--procs 2,128] [--seconds 20] [--start-s 5] [--repeats 5] [--rate 200] [--json OUT]

The full campaign (defaults) takes about 2 x 2 x 5 x (20 s + ~8 s start and report) = 9-10
minutes on an idle 2-core machine; run it with nothing else on the machine. Smoke test:
`--procs 2,8 --seconds 4 --start-s 2 --repeats 1` (about a minute).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.cell.processes import child_env  # noqa: E402
from harness.model.stats import ratio_of_medians  # noqa: E402

WORKLOAD = r"""
import json, multiprocessing as mp, sys, time

def work(counts, i):
    x = 0
    while True:
        for k in range(20000):
            x += k
        counts[i] += 1

if __name__ == "__main__":
    n, seconds, start_s = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    counts = mp.Array("q", n, lock=False)
    procs = [mp.Process(target=work, args=(counts, i), daemon=True) for i in range(n)]
    for p in procs:
        p.start()
    while min(counts) == 0:
        time.sleep(0.05)
    t0, c0 = time.monotonic(), sum(counts)
    time.sleep(start_s)
    t1, c1 = time.monotonic(), sum(counts)
    time.sleep(max(seconds - start_s, 0.1))
    t2, c2 = time.monotonic(), sum(counts)
    print(json.dumps({"start": (c1 - c0) / (t1 - t0), "steady": (c2 - c1) / (t2 - t1)}), flush=True)
    for p in procs:
        p.terminate()
"""
SLACK_S = 60.0  # the watch's duration beyond the workload's own: it ends by itself


def last_json(text: str) -> dict:
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"the workload printed no result:\n{text[-2000:]}")


def unwatched(n: int, seconds: float, start_s: float) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", WORKLOAD, str(n), str(seconds), str(start_s)],
        capture_output=True, text=True, timeout=seconds + 300, check=True,
    )  # fmt: skip
    return last_json(done.stdout)


def watched(n: int, seconds: float, start_s: float, rate: int, out: Path) -> tuple[dict, dict]:
    command = [sys.executable, "-m", "harness.cli", "watch", "--quiet", "--rate", str(rate)]
    command += ["--duration", str(seconds + SLACK_S), "--out", str(out), "--"]
    command += [sys.executable, "-c", WORKLOAD, str(n), str(seconds), str(start_s)]
    subprocess.run(command, capture_output=True, text=True, timeout=seconds + 600, check=True, env=child_env())
    run = max(out.iterdir(), key=lambda p: p.stat().st_mtime)
    record = json.loads((run / "cells.jsonl").read_text().splitlines()[-1])
    return last_json((run / record["log"]).read_text()), record["metrics"]


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} [{min(values):.1f}-{max(values):.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--procs", default="2,128")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--start-s", type=float, default=5.0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rate", type=int, default=200, help="harness watch --rate (samples/s over the tree)")
    ap.add_argument("--json", type=Path, default=None, help="also write every measurement here")
    args = ap.parse_args()
    counts = [int(x) for x in args.procs.split(",")]
    rows: dict[int, dict[str, list]] = {n: {"off": [], "on": [], "cost": []} for n in counts}
    with tempfile.TemporaryDirectory(prefix="watch-cost-") as tmp:
        for repeat in range(args.repeats):
            for n in counts:
                order = ("off", "on") if repeat % 2 == 0 else ("on", "off")
                for mode in order:
                    if mode == "off":
                        rows[n]["off"].append(unwatched(n, args.seconds, args.start_s))
                    else:
                        result, metrics = watched(n, args.seconds, args.start_s, args.rate, Path(tmp) / f"{n}-{repeat}")
                        rows[n]["on"].append(result)
                        rows[n]["cost"].append(metrics)
                print(f"repeat {repeat + 1}/{args.repeats}, {n} processes: off {rows[n]['off'][-1]} on {rows[n]['on'][-1]}", flush=True)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}; {args.repeats} repeats of {args.seconds:g} s, watch --rate {args.rate}")
    print("| processes | window | units/s unwatched | units/s watched | watched/unwatched [95 % CI] |")
    print("| --- | --- | --- | --- | --- |")
    for n in counts:
        for window in ("start", "steady"):
            off = [r[window] for r in rows[n]["off"]]
            on = [r[window] for r in rows[n]["on"]]
            ratio = ratio_of_medians(off, on)
            ci = f"{ratio['ratio']:.3f} [{ratio['low']:.3f}-{ratio['high']:.3f}]" if ratio else "-"
            print(f"| {n} | {window} | {summary(off)} | {summary(on)} | {ci} |")
    print("\n| processes | watch_cpu_pct (stacks + /proc + log) | py-spy Hz per process | samples/s | recorders | cpu_monitor_cpu_pct |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n in counts:
        cost = rows[n]["cost"]
        rates = sorted({r for m in cost for r in m.get("stacks_rate_hz", [])})
        print(
            f"| {n} | {summary([m['watch_cpu_pct'] for m in cost])} | {'/'.join(map(str, rates))} "
            f"| {summary([m.get('stacks_sample_hz', 0.0) for m in cost])} | {summary([m['stacks_recorders'] for m in cost])} "
            f"| {summary([m.get('cpu_monitor_cpu_pct', 0.0) for m in cost])} |"
        )
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)}, "rows": rows}, indent=1, default=str))


if __name__ == "__main__":
    main()
