"""A Ray sweep that loses nodes: seeded SIGKILLs of worker raylets and one head loss, checked
as a history (nothing lost, nothing duplicated, nothing torn, every status right, nothing left),
and its wall time against the same sweep without kills.

    python benchmarks/ray_node_loss.py [--cells 40] [--repeats 5] [--kills 5] [--seed 1]
                                       [--duration 0.3] [--only kills|calm] [--pairs 1] [--work DIR]

A cluster on this machine (tests/local_ray_cluster.py: Ray's ray.cluster_utils, a head and two
worker nodes of one CPU each, on 127.0.0.2, Ray's default health checks) runs `harness sweep
--executor ray --address HEAD` over CELLS synthetic cells (spin, one worker, each its own
unit_size; `--duration`, `steady = "off"`) times REPEATS. Two sweeps, each on a fresh cluster:

- calm: no kill; its wall time is the yardstick.
- kills: at KILLS random instants (seeded: each a number of recorded cell-repeats drawn without
  replacement from the sweep's first 70 %, then 0-2 s more), the raylet of a worker node on
  which a cell is running (chosen at random) is SIGKILLed and a new worker node started in its
  place; after the last of them (at a count drawn from 75-90 %), every process of the head is
  SIGKILLed. The sweep must exit 75 naming `--resume`; the old cluster's nodes are stopped, a
  new cluster (head and two workers) started, and `harness sweep --resume RUN --address NEW`
  must finish it (exit 0).

`--pairs N` alternates the two N times (calm, kills, calm, kills...), each pair on fresh
clusters, and prints the median and range of each kind's wall time.

Checked, as Jepsen checks a history: cells.jsonl only grows (what a poll saw is a prefix of what
the next sees), ends with a newline, has no torn line set aside; every planned cell-repeat has
exactly one `ok` record, and no other status but `harness-error`; each `harness-error` names a
killed node (or the head) and is followed by its cell-repeat's `ok` record (and how many kills
hit a running cell is counted: a cell can end as the kill lands); run.json lists every killed node
as lost and the head; within 5 s of a kill no process of the run is left under the killed node;
after the sweep no process carries the run's mark, no scratch directory of a node is left, and
the new cluster holds no placement group that is not removed. Prints the checks, the kills,
the statuses and the wall times; exits 1 if any check failed.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.cell.processes import ENV_CELL, ENV_RUN, alive, marked_processes  # noqa: E402
from tests.local_ray_cluster import LocalCluster, cells_below, wait_for  # noqa: E402

CLUSTER_EXIT = 75
SWEEP_TIMEOUT_S = 1800


def spec_text(cells: int, repeats: int, duration: float) -> str:
    sizes = list(range(20_000, 20_000 + cells))
    return "\n".join(
        [
            'label = "ray-node-loss"',
            f"duration = {duration}",
            'steady = "off"',
            f"repeats = {repeats}",
            "[[matrix]]",
            'suite = "synthetic"',
            f"params = {{ workers = 1, unit_size = {sizes} }}",
            "",
        ]
    )


def count_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def run_dir_of(out: Path) -> Path | None:
    dirs = [p for p in out.iterdir() if p.is_dir()] if out.exists() else []
    return dirs[0] if dirs else None


class History:
    """cells.jsonl as seen at every poll: each must be a prefix of the next."""

    def __init__(self) -> None:
        self.seen = b""
        self.problems: list[str] = []

    def poll(self, run_dir: Path | None) -> None:
        if run_dir is None:
            return
        try:
            now = (run_dir / "cells.jsonl").read_bytes()
        except OSError:
            return
        if not now.startswith(self.seen[: self.seen.rfind(b"\n") + 1]):
            self.problems.append("cells.jsonl lost or changed bytes it had before")
        self.seen = now


def sweep_command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "harness.cli", "sweep", *args, "--quiet"]


def run_sweep(
    command: list[str], log: Path, history: History, out: Path, on_poll: Any = None
) -> tuple[int, float, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    with open(log, "wb") as fh:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
        try:
            while proc.poll() is None:
                if time.monotonic() - started > SWEEP_TIMEOUT_S:
                    proc.kill()
                    break
                history.poll(run_dir_of(out))
                if on_poll is not None:
                    on_poll(run_dir_of(out))
                time.sleep(0.2)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    history.poll(run_dir_of(out))
    return proc.returncode, time.monotonic() - started, log.read_text(errors="replace")


class Killer:
    """Deals the seeded kills as the sweep's records reach their counts."""

    def __init__(self, cluster: LocalCluster, rng: random.Random, at: list[int], head_at: int) -> None:
        self.cluster = cluster
        self.rng = rng
        self.at = sorted(at)
        self.head_at = head_at
        self.kills: list[dict[str, Any]] = []
        self.head_killed: float | None = None
        self.pending_delay: float | None = None
        self.problems: list[str] = []
        self.workers_below: dict[int, psutil.Process] = {}  # the Ray workers that ran a cell on a killed node

    def __call__(self, run_dir: Path | None) -> None:
        if run_dir is None or self.head_killed is not None:
            return
        done = count_lines(run_dir / "cells.jsonl")
        if self.at and done >= self.at[0]:
            if self.pending_delay is None:
                self.pending_delay = time.monotonic() + self.rng.uniform(0.0, 2.0)
            if time.monotonic() < self.pending_delay:
                return
            busy = [n for n in self.cluster.workers if cells_below(self.cluster.raylet(n))]
            if not busy:
                return  # no cell on a worker at this instant: the next poll
            node = self.rng.choice(busy)
            raylet = self.cluster.raylet(node)
            below = {p.pid: (p, environ(p)) for p in descendants(raylet)}  # the node's processes only: quick
            mark = str(run_dir.resolve())
            ours = {pid: p for pid, (p, env) in below.items() if env.get(ENV_RUN) == mark}  # the cells' processes
            victims = list(dict.fromkeys(env[ENV_CELL] for p, env in below.values() if env.get(ENV_RUN) == mark))
            self.workers_below.update({pid: p for pid, (p, _) in below.items() if "run_cell" in name_of(p)})
            self.cluster.kill_worker(node)  # at once: the cells just seen are the ones it hits
            self.kills.append({"node": node.node_id, "at_records": done, "cells": victims})
            print(f"  kill {len(self.kills)}: worker {node.node_id[:8]} at {done} records, cells {victims}", flush=True)
            if not wait_for(lambda: not alive(ours), 5.0):
                self.problems.append(
                    f"kill {len(self.kills)}: {len(alive(ours))} process(es) of the run outlived the node by 5 s"
                )
            self.cluster.add_worker()  # a replacement, as an autoscaler would bring
            self.at.pop(0)
            self.pending_delay = None
            return
        if not self.at and done >= self.head_at:
            self.cluster.kill_head()
            self.head_killed = time.monotonic()
            print(f"  head killed at {done} records", flush=True)


def descendants(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return proc.children(recursive=True)
    except psutil.Error:
        return []


def environ(proc: psutil.Process) -> dict[str, str]:
    try:
        return proc.environ()
    except psutil.Error:
        return {}


def name_of(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline()) or proc.name()
    except psutil.Error:
        return ""


def leftover_placement_groups(address: str) -> int:
    """Placement groups of the cluster that are not removed (a driver of its own, then gone)."""
    import ray
    from ray.util.placement_group import placement_group_table

    ray.init(address=address, log_to_driver=False, include_dashboard=False)
    try:
        return sum(1 for pg in placement_group_table().values() if pg.get("state") != "REMOVED")
    finally:
        ray.shutdown()


def scratch_left() -> list[str]:
    return [str(p) for p in Path(tempfile.gettempdir()).glob("harness-ray-*")]


def check_records(run_dir: Path, planned: int, kills: list[dict[str, Any]], meta: dict[str, Any]) -> list[str]:
    problems = []
    raw = (run_dir / "cells.jsonl").read_bytes()
    if raw and not raw.endswith(b"\n"):
        problems.append("cells.jsonl ends inside a line (torn)")
    if (run_dir / "cells.jsonl.torn").exists():
        problems.append("a torn line was set aside")
    records = [json.loads(line) for line in raw.splitlines() if line.strip()]
    ok = collections.Counter((r["id"], r["repeat"]) for r in records if r["status"] == "ok")
    if len(ok) != planned:
        problems.append(f"{planned - len(ok)} planned cell-repeats have no ok record (lost)")
    duplicated = sum(n - 1 for n in ok.values() if n > 1)
    if duplicated:
        problems.append(f"{duplicated} cell-repeats recorded ok more than once")
    others = collections.Counter(r["status"] for r in records if r["status"] not in ("ok", "harness-error"))
    if others:
        problems.append(f"statuses other than ok and harness-error: {dict(others)}")
    labels = {n["id"]: n["label"] for n in meta.get("ray_nodes") or []}
    killed = {k["node"] for k in kills}
    for node_id in killed:
        entry = next((n for n in meta.get("ray_nodes") or [] if n["id"] == node_id), None)
        if entry is None or not entry.get("lost"):
            problems.append(f"run.json does not list killed node {node_id[:8]} as lost")
    if not any(n.get("head") and n.get("lost") for n in meta.get("ray_nodes") or []):
        problems.append("run.json does not list the lost head")
    killed_labels = {labels.get(n, n) for n in killed}
    position = {id(r): i for i, r in enumerate(records)}
    for r in records:
        if r["status"] != "harness-error":
            continue
        reason = r.get("reason") or ""
        if not any(f"node {label} was lost" in reason for label in killed_labels) and "head at" not in reason:
            problems.append(f"harness-error not naming a killed node or the head: {reason[:160]}")
        later = [x for x in records if (x["id"], x["repeat"]) == (r["id"], r["repeat"]) and x["status"] == "ok"]
        if not later or position[id(later[0])] < position[id(r)]:
            problems.append(f"harness-error of {r['id']}#{r['repeat']} not followed by its ok record")
    failed_keys = {f"{r['id']}-{r['repeat']}" for r in records if r["status"] == "harness-error"}
    for kill in kills:  # a cell that ended as the kill landed has its ok record and lost nothing
        kill["hit"] = [c for c in kill["cells"] if c and c.split(".")[0] in failed_keys]
    return problems


def one_sweep(
    kind: str, args: argparse.Namespace, rng: random.Random, work: Path, problems: list[str]
) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    out = work / "out"
    spec = work / "ray-node-loss.toml"
    spec.write_text(spec_text(args.cells, args.repeats, args.duration))
    planned = args.cells * args.repeats
    history = History()
    started = time.monotonic()
    result: dict[str, Any] = {"kind": kind}
    cluster = LocalCluster(workers=2, cpus=1, head_cpus=1)
    second: LocalCluster | None = None
    try:
        command = sweep_command([str(spec), "--out", str(out), "--executor", "ray", "--address", cluster.address])
        if kind == "calm":
            code, wall, text = run_sweep(command, work / f"{kind}.log", history, out)
            result.update(code=code, sweep_s=wall)
            if code != 0:
                problems.append(f"calm: exit {code}; {work / 'calm.log'}")
        else:
            at = sorted(rng.sample(range(5, int(planned * 0.7)), args.kills))
            head_at = rng.randint(int(planned * 0.75), int(planned * 0.9))
            killer = Killer(cluster, rng, at, head_at)
            code, wall, text = run_sweep(command, work / "kills.log", history, out, killer)
            problems += killer.problems
            if not wait_for(lambda: not alive(killer.workers_below), 30):
                problems.append(
                    f"kills: {len(alive(killer.workers_below))} Ray worker(s) that ran a cell on a killed node still alive"
                )
            if code != CLUSTER_EXIT or "harness sweep --resume" not in text:
                problems.append(
                    f"kills: the sweep exited {code} after the head loss (75 expected); {work / 'kills.log'}"
                )
            if "Traceback" in text:
                problems.append(f"kills: a traceback; {work / 'kills.log'}")
            if len(killer.kills) != args.kills or killer.head_killed is None:
                problems.append(
                    f"kills: {len(killer.kills)} of {args.kills} kills dealt, head killed: {killer.head_killed is not None}"
                )
            detected = time.monotonic() - killer.head_killed if killer.head_killed else None
            run_dir = run_dir_of(out)
            assert run_dir is not None
            if not wait_for(lambda: not marked_processes(run_dir), 90):
                problems.append("kills: processes of the run outlived the head's loss by 90 s")
            restart = time.monotonic()
            cluster.close()
            second = LocalCluster(workers=2, cpus=1, head_cpus=1)
            restart_s = time.monotonic() - restart
            resume = sweep_command(["--resume", str(run_dir), "--executor", "ray", "--address", second.address])
            code2, wall2, text2 = run_sweep(resume, work / "resume.log", history, out)
            if code2 != 0:
                problems.append(f"resume: exit {code2}; {work / 'resume.log'}")
            result.update(
                code=code, resume_code=code2, sweep_s=wall, resume_s=wall2, restart_s=restart_s,
                head_exit_after_s=detected, kills=killer.kills,
            )  # fmt: skip
            cluster = second
            second = None
        run_dir = run_dir_of(out)
        assert run_dir is not None
        meta = json.loads((run_dir / "run.json").read_text())
        if kind == "kills":
            problems += check_records(run_dir, planned, result["kills"], meta)
        else:
            records = [json.loads(x) for x in (run_dir / "cells.jsonl").read_text().splitlines() if x.strip()]
            statuses = collections.Counter(r["status"] for r in records)
            if statuses != {"ok": planned}:
                problems.append(f"calm: statuses {dict(statuses)}, expected ok {planned}")
        problems += [f"{kind}: {p}" for p in history.problems]
        left = marked_processes(run_dir)
        if left:
            problems.append(f"{kind}: {len(left)} process(es) of the run left after the sweep")
        scratch = scratch_left()
        if scratch:
            problems.append(f"{kind}: node scratch directories left: {scratch[:3]}")
        pgs = leftover_placement_groups(cluster.address)
        if pgs:
            problems.append(f"{kind}: {pgs} placement group(s) not removed")
        records = [json.loads(x) for x in (run_dir / "cells.jsonl").read_text().splitlines() if x.strip()]
        result.update(
            run_dir=str(run_dir), lines=len(records), statuses=dict(collections.Counter(r["status"] for r in records)),
            processes_left=len(left), placement_groups_left=pgs, nodes=meta.get("ray_nodes"),
            total_s=time.monotonic() - started,
        )  # fmt: skip
    finally:
        if second is not None:
            second.close()
        cluster.close()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=0.3, help="each cell's measured window, s")
    parser.add_argument("--only", choices=("kills", "calm"), default=None, help="one of the two sweeps")
    parser.add_argument("--pairs", type=int, default=1, help="calm and kills sweeps, alternated, this many times")
    parser.add_argument("--work", type=Path, default=None, help="where runs and logs go (a temp dir)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = args.work or Path(tempfile.mkdtemp(prefix="ray-node-loss-"))
    work.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    load = os.getloadavg()[0]
    results = []
    for pair in range(args.pairs):
        for kind in ("calm", "kills"):
            if args.only in (None, kind):
                print(f"{kind} sweep {pair + 1}: {args.cells} cells x {args.repeats} repeats", flush=True)
                results.append(one_sweep(kind, args, rng, work / f"{kind}-{pair + 1}", problems))
    print(f"load average (1 min) at the start {load:.1f}, at the end {os.getloadavg()[0]:.1f}")
    for result in results:
        if result["kind"] == "calm":
            print(f"calm: sweep {result['sweep_s']:.1f} s, exit {result['code']}, statuses {result['statuses']}")
        else:
            print(
                f"kills: sweep {result['sweep_s']:.1f} s to the head's loss (exit {result['code']}, "
                f"{result['head_exit_after_s']:.1f} s after the head was killed), cluster restarted in "
                f"{result['restart_s']:.1f} s, resume {result['resume_s']:.1f} s (exit {result['resume_code']}); "
                f"sweeps together {result['sweep_s'] + result['resume_s']:.1f} s"
            )
            print(f"kills: lines in cells.jsonl {result['lines']}, statuses {result['statuses']}")
            for i, kill in enumerate(result["kills"], 1):
                print(
                    f"  kill {i}: node {kill['node'][:8]} at {kill['at_records']} records, cells {kill['cells']}, "
                    f"of them recorded harness-error {kill.get('hit')}"
                )
            hits = sum(bool(k.get("hit")) for k in result["kills"])
            print(f"kills: {hits} of {len(result['kills'])} kills hit a running cell")
            lost = [n for n in result["nodes"] or [] if n.get("lost")]
            print(
                f"kills: nodes lost in run.json {len(lost)}: " + "; ".join(f"{n['label']} at {n['lost']}" for n in lost)
            )
        print(f"{result['kind']}: processes of the run left {result['processes_left']}, placement groups left "
              f"{result['placement_groups_left']}; run {result['run_dir']}")  # fmt: skip
    calm = [r["sweep_s"] for r in results if r["kind"] == "calm"]
    kills = [r["sweep_s"] + r["resume_s"] for r in results if r["kind"] == "kills"]
    if calm and kills:
        print(
            f"wall time of the sweeps, median [min-max]: calm {median(calm):.1f} s [{min(calm):.1f}-{max(calm):.1f}], "
            f"kills (sweep + resume) {median(kills):.1f} s [{min(kills):.1f}-{max(kills):.1f}]; "
            f"ratio of medians {median(kills) / median(calm):.2f}"
        )
    (work / "result.json").write_text(json.dumps(results, indent=1, default=str))
    for problem in problems:
        print(f"problem: {problem}")
    print(f"checks: {'all passed' if not problems else f'{len(problems)} failed'}; kept in {work}")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
