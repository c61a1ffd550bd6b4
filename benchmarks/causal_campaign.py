"""The causal calibration campaign: `harness causal` at its default options over
programs whose bottleneck is known by construction (tests/programs/causal/, and a
pipeline /work/shared/experiments/pipeline_cadence.py, run, not imported), scored against
that truth.

    python benchmarks/causal_campaign.py run OUT_DIR [--only NAME ...] [--repeat N] [--code DIR]
    python benchmarks/causal_campaign.py table OUT_DIR          # the record's table and totals
    python benchmarks/causal_campaign.py fixture RUN_DIR NAME CASE  # a run's periods as a test fixture

`run` runs every case of CORPUS (each `--repeat` times, cases interleaved), one at a time,
from `--code` (a snapshot of the tree, so that edits made while it runs do not reach it;
default this tree), with the 1-minute load average read before and after each run, and after
each run a scan of the machine for processes left stopped and for Ray processes; one line per
run in OUT_DIR/results.jsonl (appended: a campaign resumes). `table` scores them:

- a group's verdict is **wrong** when it is critical, slack or competes and not what the
  program was built to have (a slack group read as competes counts as wrong too);
- a run **names the right bottleneck** when the expected group is its only critical one
  (no caveat stands against the run, which would name none);
- `unknown` is never wrong, and never right.

The 95 % upper bound on the rate of wrong verdicts is Clopper-Pearson's (scipy).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "tests" / "programs" / "causal"
CADENCE = Path("/work/shared/experiments/pipeline_cadence.py")
RUN_TIMEOUT_S = 300  # acceptance: each run within 5 minutes
PY = sys.executable


@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]
    truth: dict[str, str]  # group -> critical / slack (groups not named: no claim)
    what: str  # what the case varies

    @property
    def bottleneck(self) -> str:
        return next(g for g, v in self.truth.items() if v == "critical")


def _stages(*args: str) -> tuple[str, ...]:
    return (PY, str(PROGRAMS / "stages.py"), *args)


CORPUS = [
    Case("cadence-consumer", (PY, str(CADENCE), "consumer"), {"consume": "critical", "main": "slack"},
         "the issue's pipeline, 0.5 s reports"),
    Case("cadence-producer", (PY, str(CADENCE), "producer"), {"main": "critical", "consume": "slack"},
         "the issue's pipeline swapped"),
    Case("stages-2-fast", _stages("1,3", "--every", "0.05"), {"stage_b": "critical", "main": "slack"},
         "2 stages, 0.05 s reports"),
    Case("stages-2-main", _stages("3,1", "--every", "0.2"), {"main": "critical", "stage_b": "slack"},
         "2 stages, the reporting main limits"),
    Case("stages-2-1s", _stages("1,3", "--every", "1"), {"stage_b": "critical", "main": "slack"},
         "2 stages, 1 s reports"),
    Case("stages-2-5s", _stages("1,3", "--every", "5"), {"stage_b": "critical", "main": "slack"},
         "2 stages, 5 s reports (the I/O proxy)"),
    Case("stages-3-mid", _stages("1,3,1", "--every", "0.2"),
         {"stage_b": "critical", "main": "slack", "stage_c": "slack"}, "3 stages, the middle limits"),
    Case("stages-3-last", _stages("1,1,3", "--reporter", "last", "--every", "0.5"),
         {"stage_c": "critical", "main": "slack", "stage_b": "slack"}, "3 stages, the last limits and reports"),
    Case("stages-per-items", _stages("1,3", "--per", "100"), {"stage_b": "critical", "main": "slack"},
         "2 stages, a line every 100 items"),
    Case("phased-update", (PY, str(PROGRAMS / "phased.py"), "update"), {"main": "critical", "workers": "slack"},
         "collect then update: the update limits"),
    Case("phased-envs", (PY, str(PROGRAMS / "phased.py"), "envs"), {"workers": "critical", "main": "slack"},
         "collect then update: the envs limit"),
    Case("threads-consumer", (PY, str(PROGRAMS / "threads.py"), "consumer"),
         {"consumer": "critical", "main": "slack"}, "stages in threads"),
    Case("threads-producer", (PY, str(PROGRAMS / "threads.py"), "producer"),
         {"main": "critical", "consumer": "slack"}, "stages in threads, swapped"),
    Case("server-server", (PY, str(PROGRAMS / "server.py"), "server"), {"server": "critical", "workers": "slack"},
         "4 clients on a server: the server limits"),
    Case("server-clients", (PY, str(PROGRAMS / "server.py"), "clients"), {"workers": "critical", "server": "slack"},
         "4 clients on a server: the clients limit"),
    Case("ray-learner", (PY, str(PROGRAMS / "ray_actors.py"), "learner", "--every", "0.1"),
         {"Learner": "critical", "Player": "slack"}, "Ray actors: the learner limits"),
    Case("ray-players", (PY, str(PROGRAMS / "ray_actors.py"), "players", "--every", "0.1"),
         {"Player": "critical", "Learner": "slack"}, "Ray actors: the players limit"),
]  # fmt: skip


# Runs whose program did not have the truth CORPUS claims, and the claims dropped for them:
# threads.py's consumer threads spent half an item's cost each until 16:47, so the consumer
# cost 1.5 ms to the producer's 1 ms, and the producer slowed 2x became the bottleneck.
VOID = {("threads-consumer", 0): {"main"}}


def load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def leftovers(run_dir: Path | None) -> dict[str, list[str]]:
    """The run's processes still alive after it (they carry its run directory in their
    environment: Ray's workers too, which raylet starts), those of them stopped, and those
    of them Ray's."""
    from harness.cell.processes import marked_processes

    alive, stopped, ray = [], [], []
    for pid, proc in (marked_processes(run_dir) if run_dir else {}).items():
        try:
            line = f"{pid} {proc.status()} {' '.join(proc.cmdline())[:140]}"
        except Exception:  # noqa: BLE001 - gone meanwhile
            continue
        alive.append(line)
        if proc.status() == "stopped":
            stopped.append(line)
        if "ray::" in line or "raylet" in line or "gcs_server" in line or "/ray/" in line:
            ray.append(line)
    return {"alive": alive, "stopped": stopped, "ray": ray}


def run_one(case: Case, out: Path, code: Path, index: int) -> dict:
    runs = out / "runs" / f"{case.name}-{index}"
    runs.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(code)}
    started, load0 = time.time(), load()
    try:
        done = subprocess.run(
            [PY, "-m", "harness.cli", "causal", "--quiet", "--out", str(runs), "--", *case.argv],
            capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env, cwd=str(code),
        )  # fmt: skip
        rc, text = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        rc, text = "timeout", (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else str(exc.stdout)
    wall = time.time() - started
    time.sleep(3)  # the program's processes end; Ray's take a moment
    row = {"case": case.name, "index": index, "rc": rc, "wall_s": round(wall, 1), "load_start": load0,
           "load_end": load(), "started": time.strftime("%H:%M:%S", time.localtime(started)),
           "output_tail": text[-3000:]}  # fmt: skip
    run_dirs = sorted(runs.glob("*causal*"))
    row["leftovers"] = leftovers(run_dirs[-1] if run_dirs else None)
    found = sorted(runs.glob("*causal*/causal.json"))
    if found:
        result = json.loads(found[-1].read_text())
        row["run_dir"] = str(found[-1].parent)
        row["groups"] = {
            s["group"]: {k: s.get(k) for k in ("verdict", "reading", "estimate", "low", "high", "n", "reason")}
            for s in [*result["sensitivity"], *result.get("unmeasured", [])]
        }
        row["caveats"] = result.get("caveats") or []
        row["cadence"] = {k: result["cadence"].get(k) for k in ("source", "cadence_s", "period_s", "rounds_fit")}
        row["periods_s"] = sorted(set(result["cadence"].get("periods_s") or []))
        row["proxy"] = (result.get("proxy") or {}).get("group")
        row["rounds"] = result["rounds"]
    return row


def rejudge(run_dir: str) -> tuple[dict[str, dict], list[str]]:
    """The run's verdicts as this tree computes them from its recorded periods (the periods
    are what the experiment measured; the verdicts are a pure function of them:
    tests/harness/test_causal_recorded.py), and its caveats."""
    from harness.causal.result import CausalResult
    from harness.causal.rounds import observations
    from harness.causal.sensitivity import estimate

    result = CausalResult.from_json(json.loads((Path(run_dir) / "causal.json").read_text()))
    values, result.lost = observations(result.periods, result.options.fraction)
    names = [n for n in dict.fromkeys([*values, *result.lost]) if n not in set(result.idle)]
    result.sensitivities = [estimate(n, values.get(n, [])) for n in names]
    data = result.to_json()
    groups = {
        s["group"]: {k: s.get(k) for k in ("verdict", "reading", "estimate", "low", "high", "n", "reason")}
        for s in [*data["sensitivity"], *data["unmeasured"]]
    }
    return groups, data["caveats"]


def score(case: Case, row: dict) -> dict:
    groups = row.get("groups") or {}
    wrong = []
    decided = 0
    void = VOID.get((case.name, row["index"]), set())
    for group, expected in case.truth.items():
        if group in void:
            continue
        verdict = (groups.get(group) or {}).get("verdict")
        if verdict in ("critical", "slack", "competes"):
            decided += 1
            if verdict != expected:
                wrong.append(f"{group} {verdict} (is {expected})")
    critical = [g for g, v in groups.items() if v.get("verdict") == "critical"]
    named = not row.get("caveats") and critical == [case.bottleneck]
    return {"wrong": wrong, "decided": decided, "judged": len(case.truth), "named": named}


def cmd_run(args: argparse.Namespace) -> None:
    out = Path(args.out).resolve()  # the harness runs from --code: a relative --out would land there
    out.mkdir(parents=True, exist_ok=True)
    cases = [c for c in CORPUS if not args.only or c.name in args.only]
    done = {(r["case"], r["index"]) for r in read(out)}
    for index in range(args.repeat):
        for case in cases:
            if (case.name, index) in done:
                continue
            row = run_one(case, out, Path(args.code).resolve(), index)
            row.update(score(case, row))
            with open(out / "results.jsonl", "a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(f"{row['started']} {case.name}#{index}: rc {row['rc']} {row['wall_s']:.0f} s load "
                  f"{row['load_start']:.1f}-{row['load_end']:.1f} named {row['named']} wrong {row['wrong']} "
                  f"left {len(row['leftovers']['alive'])}", flush=True)  # fmt: skip


def read(out: Path) -> list[dict]:
    path = out / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def cmd_table(args: argparse.Namespace) -> None:
    from scipy.stats import beta

    rows = read(Path(args.out))
    by_name = {c.name: c for c in CORPUS}
    changed = 0
    for row in rows:  # the verdicts as this tree computes them from each run's periods
        if row.get("run_dir") and (Path(row["run_dir"]) / "causal.json").exists():
            groups, caveats = rejudge(row["run_dir"])
            changed += {g: v["verdict"] for g, v in groups.items()} != {
                g: v["verdict"] for g, v in (row.get("groups") or {}).items()
            }
            row["groups"], row["caveats"] = groups, caveats
            row.update(score(by_name[row["case"]], row))
    print("| run | load (start-end) | wall | throughput, periods | verdicts (sensitivity [95 %]) | named | wrong |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    verdicts = wrong = named = 0
    for row in rows:
        case = by_name[row["case"]]
        groups = row.get("groups") or {}
        parts = []
        for g in case.truth:
            v = groups.get(g) or {}
            est = v.get("estimate")
            span = f" {est:+.2f} [{v['low']:+.2f}, {v['high']:+.2f}]" if est is not None and est == est else ""
            parts.append(f"{g} **{v.get('verdict', '-')}**{span}")
        source = row.get("cadence") or {}
        through = f"{source.get('source') or '-'} {'/'.join(f'{p:.2g}' for p in row.get('periods_s') or [])} s"
        if row["rc"] != 0:
            through = f"rc {row['rc']}"
        print(f"| {row['case']}#{row['index']} | {row['load_start']:.1f}-{row['load_end']:.1f} | {row['wall_s']:.0f} s "
              f"| {through} | {'; '.join(parts)} | {'yes' if row['named'] else 'no'} | {', '.join(row['wrong']) or '0'} |")  # fmt: skip
        verdicts += row["decided"]
        wrong += len(row["wrong"])
        named += bool(row["named"])
    n = len(rows)
    failed = [f"{r['case']}#{r['index']} (exit {r['rc']})" for r in rows if r["rc"] != 0]
    upper = beta.ppf(0.95, wrong + 1, verdicts - wrong) if verdicts > wrong else 1.0  # one-sided 95 %
    runs_upper = beta.ppf(0.95, 1, n) if n else 1.0
    print(f"\n{n} runs ({n - len(failed)} ran their rounds; {len(failed)} did not: {', '.join(failed) or 'none'}), "
          f"{verdicts} decided verdicts, {wrong} wrong (95 % upper bound on the wrong rate, "
          f"Clopper-Pearson: {upper:.3f} per verdict; no run with a wrong verdict: at most {runs_upper:.3f} of runs); "
          f"the right bottleneck named in {named} of {n} ({100 * named / max(n, 1):.0f} %; "
          f"{100 * named / max(n - len(failed), 1):.0f} % of the runs that ran their rounds); "
          f"longest run {max((r['wall_s'] for r in rows), default=0):.0f} s; "
          f"verdicts recomputed by this tree from the recorded periods differ from the printed ones in {changed} "
          f"run(s); processes left after a run: {sum(len(r['leftovers']['alive']) for r in rows)} (stopped "
          f"{sum(len(r['leftovers']['stopped']) for r in rows)}, Ray {sum(len(r['leftovers']['ray']) for r in rows)})")  # fmt: skip


def cmd_fixture(args: argparse.Namespace) -> None:
    """A run's causal.json cut to what the verdicts are computed from: the recorded periods,
    with the verdicts this tree computes from them."""
    data = json.loads((Path(args.run_dir) / "causal.json").read_text())
    keep = ("counter", "groups", "rounds", "reason", "wall_s", "launch_s", "warmup_s", "cost", "options", "waits",
            "proxy", "idle", "cadence", "sensitivity", "unmeasured", "caveats", "lost_rounds")  # fmt: skip
    cut = {k: data.get(k) for k in keep}
    cut["periods"] = [
        {k: p[k] for k in ("round", "group", "pids", "started", "ended", "rate", "reports", "rates", "counts", "fraction", "dose",
                           "cpu_cores", "queued_cores", "stopped_s", "cycles")}
        for p in data["periods"]
    ]  # fmt: skip
    cut["reports"] = []
    # the verdicts as this tree computes them from the periods (what the replay test holds), and
    # those the run printed, where the gate has changed since
    groups, caveats = rejudge(args.run_dir)
    cut["printed"] = {s["group"]: s["verdict"] for s in [*data["sensitivity"], *data.get("unmeasured", [])]}
    cut["sensitivity"] = [{"group": g, **v} for g, v in groups.items() if v.get("n") is not None]
    cut["unmeasured"] = [{"group": g, **v} for g, v in groups.items() if v.get("n") is None]
    cut["caveats"] = caveats
    case = next(c for c in CORPUS if c.name == args.case)
    cut["truth"] = {"case": case.name, "argv": [Path(a).name for a in case.argv[1:]], "groups": case.truth}
    target = ROOT / "tests" / "harness" / "data" / "causal" / f"{args.name}.json.gz"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(gzip.compress((json.dumps(_rounded(cut), separators=(",", ":")) + "\n").encode(), mtime=0))
    print(f"{target}: {target.stat().st_size / 1024:.1f} KB")


def _rounded(value):
    """Floats to 6 significant digits (a fixture stays small; no verdict turns on the 7th)."""
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("out")
    run.add_argument("--only", nargs="*")
    run.add_argument("--repeat", type=int, default=1)
    run.add_argument("--code", default=str(ROOT))
    table = sub.add_parser("table")
    table.add_argument("out")
    fixture = sub.add_parser("fixture")
    fixture.add_argument("run_dir")
    fixture.add_argument("name")
    fixture.add_argument("case")
    args = parser.parse_args()
    {"run": cmd_run, "table": cmd_table, "fixture": cmd_fixture}[args.cmd](args)


if __name__ == "__main__":
    main()
