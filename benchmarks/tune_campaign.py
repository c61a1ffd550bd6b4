"""`harness tune` against an exhaustive grid, from each seed's bad start.

For one seed, in one sitting, on this machine:

1. `harness tune` from the bad start over the seed's knobs (its --budget, 20 minutes at most);
2. the exhaustive grid over the same knobs: `harness sweep` of every combination, one repeat;
3. the confirmation: the grid's three best cells, the start and every setting the tune held
   (its winner last) measured again, CONFIRM_REPEATS repeats each, in one sweep (repeat-major, so the machine's phases
   hit every cell alike): the best cell of a grid of single readings is often a lucky one, so
   "within 10 % of the best" is judged on these medians, not on the grid's maximum.

It prints one line per seed (and appends it to --save as JSON): the start's, the winner's and
the best confirmed cell's medians with their ranges, the winner over the best, when the tune
adopted its final winner (from its start), when it first held a setting within 10 % of the best
confirmed (what a Ctrl-C then would have kept), the tune's whole time and the grid's time.
`--reconfirm DIR` sweeps an earlier seed's confirmation again with every setting its tune held.

    python benchmarks/tune_campaign.py actor_learner --save results/tune_campaign.json
    python benchmarks/tune_campaign.py selfplay mccfr --save results/tune_campaign.json
    python benchmarks/tune_campaign.py --list

The harness runs as `python -m harness.cli` from --code (default: this checkout).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIRM_REPEATS = 3
GRID_DURATION_S = 8.0

# seed -> suite, its bad start (--set), the knobs (name -> values), fixed params
SEEDS: dict[str, dict] = {
    "actor_learner": {
        "suite": "actor_learner",
        "start": {"wait": "poll", "publish_interval": 10, "buffer_capacity": 200},
        "knobs": {
            "wait": ["poll", "event", "mp_event"],
            "publish_interval": [10, 40, 160, 640],
            "buffer_capacity": [200, 1000, 5000, 25000],
        },
        "fixed": {},
    },
    "selfplay": {
        "suite": "selfplay",
        "start": {"backend": "processes", "leaves": 1, "games_per_worker": 1},
        "knobs": {
            "backend": ["processes", "server"],
            "leaves": [1, 2, 4, 8, 16],
            "games_per_worker": [1, 2, 4, 8],
        },
        "fixed": {"workers": 4},
    },
    "mccfr": {
        "suite": "mccfr",
        "start": {"sync": "full", "batch_size": 25, "staleness": 0},
        "knobs": {
            "sync": ["full", "delta", "shared"],
            "batch_size": [25, 50, 100, 200, 400],
            "staleness": [0, 1, 2],
        },
        "fixed": {"backend": "processes", "workers": 2},
    },
}


def harness(code: Path, *args: str) -> tuple[int, float, str]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], cwd=code, capture_output=True, text=True, check=False
    )
    return done.returncode, time.monotonic() - started, done.stdout + done.stderr


def parse_utc(text: str):
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def only_run(out: Path) -> Path:
    runs = sorted(p for p in out.iterdir() if p.is_dir())
    if len(runs) != 1:
        raise SystemExit(f"expected one run directory in {out}, found {len(runs)}")
    return runs[0]


def sets(values: dict) -> list[str]:
    return [f"--set={k}={v}" for k, v in values.items()]


def records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "cells.jsonl").read_text().splitlines() if line.strip()]


def headline(record: dict) -> float | None:
    metrics = record.get("metrics") or {}
    name = metrics.get("headline_rate")
    for key in ([name] if name else []) + sorted(k for k in metrics if k.endswith("_per_s") and "_drift_" not in k):
        value = metrics.get(key)
        if isinstance(value, int | float) and value > 0:
            return float(value)
    return None


def rate_name(suite: str) -> str:
    """The rate the seed is judged by: its suite's first declared rate's per-second metric."""
    sys.path.insert(0, str(ROOT))
    from harness.model.registry import get_suite

    rate = get_suite(suite).words.rates[0]
    return f"{rate.made_of or rate.counter}_per_s"


def adoptions(doc: dict) -> list[tuple[float, dict]]:
    """Each setting the tune held, with when it began to hold it (the start at 0; an adopted
    challenger at the end of its A/B): what a Ctrl-C at that moment would have kept."""
    held = [(0.0, doc["start"])]
    for step in doc.get("steps") or []:
        if step.get("adopted") is not None:
            trial = step["trials"][step["adopted"]]
            held.append((trial["started_s"] + (trial.get("duel") or {}).get("seconds", 0.0), trial["params"]))
    return held


def tune_found_s(doc: dict) -> float:
    """When the tune adopted the winner it ended with: the end of that trial's A/B (0: the start)."""
    return adoptions(doc)[-1][0]


def run_seed(
    name: str, code: Path, out: Path, budget: float, grid_from: Path | None = None, min_gain: float | None = None
) -> dict:
    seed = SEEDS[name]
    suite, knobs, fixed = seed["suite"], seed["knobs"], seed["fixed"]
    out.mkdir(parents=True, exist_ok=True)
    knob_args = [f"--knob={k}={','.join(map(str, v))}" for k, v in knobs.items()]
    knob_args += [] if min_gain is None else ["--min-gain", str(min_gain)]
    rc, tune_s, text = harness(
        code, "tune", suite, *sets({**fixed, **seed["start"]}), *knob_args, "--budget", str(budget),
        "--out", str(out / "tune"), "--quiet",
    )  # fmt: skip
    print(text[-2000:])
    grid_args = [f"--set={k}={','.join(map(str, v))}" for k, v in knobs.items()]
    if grid_from is None:
        _, grid_s, _ = harness(
            code, "sweep", "--suite", suite, *sets(fixed), *grid_args, "--duration", str(GRID_DURATION_S),
            "--repeats", "1", "--out", str(out / "grid"), "--quiet",
        )  # fmt: skip
        grid_run = only_run(out / "grid")
    else:  # a grid of this sitting, swept before the tune was run again
        grid_run = grid_from
        grid_s = run_seconds(grid_run)
    return {**confirm(name, code, out, rc, tune_s, grid_run, grid_s), "min_gain": min_gain}


def run_seconds(run: Path) -> float:
    meta = json.loads((run / "run.json").read_text())
    return (parse_utc(meta["ended"]) - parse_utc(meta["started"])).total_seconds()


def confirm(
    name: str, code: Path, out: Path, rc: int | None, tune_s: float, grid_run: Path, grid_s: float, label: str = "confirm"
) -> dict:
    """The confirmation sweep (the grid's three best, the start, and every setting the tune
    held, its winner included) and the seed's row."""
    seed = SEEDS[name]
    suite, knobs, fixed = seed["suite"], seed["knobs"], seed["fixed"]
    metric = rate_name(suite)
    doc = json.loads((only_run(out / "tune") / "tune.json").read_text())
    winner = doc["best"]
    grid = records(grid_run)
    ranked = sorted(
        (r for r in grid if r["status"] == "ok" and r["metrics"].get(metric)),
        key=lambda r: -r["metrics"][metric],
    )
    top = [{k: r["params"][k] for k in knobs} for r in ranked[:3]]
    held = adoptions(doc)
    confirm = [winner, seed["start"], *top, *(params for _, params in held)]
    unique = [dict(c) for c in {json.dumps(c, sort_keys=True): c for c in confirm}.values()]
    spec = out / f"{label}.toml"
    lines = [f'label = "{label}"', f"duration = {GRID_DURATION_S}", f"repeats = {CONFIRM_REPEATS}"]
    for cell in unique:
        params = ", ".join(f"{k} = {json.dumps(v)}" for k, v in {**fixed, **cell}.items())
        lines += ["", "[[matrix]]", f'suite = "{suite}"', f"params = {{ {params} }}"]
    spec.write_text("\n".join(lines) + "\n")
    harness(code, "sweep", str(spec), "--out", str(out / label), "--quiet")
    measured: dict[str, list[float]] = {}
    for r in records(only_run(out / label)):
        if r["status"] == "ok" and r["metrics"].get(metric):
            key = json.dumps({k: r["params"][k] for k in knobs}, sort_keys=True)
            measured.setdefault(key, []).append(float(r["metrics"][metric]))

    def summary(cell: dict) -> dict:
        values = measured.get(json.dumps(cell, sort_keys=True), [])
        return {
            "params": cell,
            "median": statistics.median(values) if values else None,
            "min": min(values, default=None),
            "max": max(values, default=None),
            "n": len(values),
        }

    confirmed = [summary(c) for c in unique]
    best = max((c for c in confirmed if c["median"]), key=lambda c: c["median"])
    won, start = summary(winner), summary(seed["start"])
    # when the tune first held a setting whose confirmed median is within 10 % of the best's
    within = [at for at, params in held if (m := summary(params)["median"]) and m >= 0.9 * best["median"]]
    row = {
        "seed": name,
        "metric": metric,
        "tune_exit": rc,
        "tune_s": tune_s,
        "found_s": tune_found_s(doc),
        "within_10_s": min(within) if within else None,
        "held": [{"at_s": at, **summary(params)} for at, params in held],
        "grid_s": grid_s,
        "grid_cells": len(list(itertools.product(*knobs.values()))),
        "winner": won,
        "start": start,
        "best": best,
        "winner_over_best": (won["median"] / best["median"]) if won["median"] and best["median"] else None,
        "final_ab": doc.get("final"),
        "conclusion": doc.get("conclusion"),
        "steps": len(doc.get("steps") or []),
        "trials": sum(len(s.get("trials") or []) for s in doc.get("steps") or []),
        "load": open("/proc/loadavg").read().split()[:3],
    }
    return row


def line(row: dict) -> str:
    def cell(c: dict) -> str:
        return f"{c['median']:.4g} [{c['min']:.4g}-{c['max']:.4g}]" if c["median"] else "-"

    ratio = row["winner_over_best"]
    told = "" if row.get("min_gain") is None else f" (--min-gain {row['min_gain']:g})"
    return (
        f"{row['seed']}{told}: start {cell(row['start'])}, winner {cell(row['winner'])} {row['winner']['params']}, best "
        f"{cell(row['best'])} {row['best']['params']}; winner/best {ratio:.3f}; found at {row['found_s']:.0f} s, tune "
        f"{row['tune_s']:.0f} s, grid of {row['grid_cells']} cells {row['grid_s']:.0f} s "
        f"(found/grid {row['found_s'] / row['grid_s']:.2f}); within 10 % of the best from "
        f"{'-' if row.get('within_10_s') is None else format(row['within_10_s'], '.0f') + ' s'}; "
        f"final A/B: {(row['final_ab'] or {}).get('said', '-')}"
    )


def emit(row: dict, save: Path | None) -> None:
    """The seed's line, and its row appended to `save` (JSON lines)."""
    print(line(row), flush=True)
    if save:
        with save.open("a") as fh:
            fh.write(json.dumps(row, default=str) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("seeds", nargs="*", help=f"of {', '.join(SEEDS)}")
    parser.add_argument("--list", action="store_true", help="the seeds, their starts and knobs")
    parser.add_argument("--budget", type=float, default=1200.0, help="each tune's --budget (seconds)")
    parser.add_argument("--out", type=Path, default=Path("results/tune_campaign"), help="run directories")
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout whose harness runs")
    parser.add_argument("--min-gain", type=float, help="each tune's --min-gain (default: the harness's)")
    parser.add_argument("--save", type=Path, help="append each seed's row (JSON lines)")
    parser.add_argument(
        "--grid-from", type=Path, help="one seed only: its grid's run directory, swept earlier in this sitting"
    )
    parser.add_argument(
        "--reconfirm",
        type=Path,
        help="one seed only: a seed's directory of an earlier campaign (tune/, grid/): its confirmation "
        "swept again, with every setting its tune held (confirm-again/)",
    )
    args = parser.parse_args()
    if args.reconfirm:
        if len(args.seeds) != 1:
            raise SystemExit("--reconfirm: one seed at a time")
        out = args.reconfirm.resolve()
        tune_doc = json.loads((only_run(out / "tune") / "tune.json").read_text())
        grid = only_run(out / "grid")
        row = confirm(
            args.seeds[0], args.code.resolve(), out, None, tune_doc["elapsed_s"], grid, run_seconds(grid), "confirm-again"
        )
        emit(row, args.save)
        return
    if args.grid_from and len(args.seeds) != 1:
        raise SystemExit("--grid-from: one seed at a time (the grid is that seed's)")
    if args.list or not args.seeds:
        for name, seed in SEEDS.items():
            print(f"{name}: start {seed['start']}, knobs {seed['knobs']}, fixed {seed['fixed']}")
        return
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for name in args.seeds:
        grid = args.grid_from.resolve() if args.grid_from else None
        out = (args.out / f"{stamp}-{name}").resolve()
        row = run_seed(name, args.code.resolve(), out, args.budget, grid, args.min_gain)
        emit(row, args.save)


if __name__ == "__main__":
    main()
