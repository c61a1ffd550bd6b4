"""`harness tune` against the grid a user would run instead, in one sitting: is the tune never
slower to a good answer?

For one space (a seed of tune_campaign.py, `producers`: tests/programs/producers.py's
workers 1..5 x batch 32..512, 25 settings, `cleanrl`: CleanRL 0.4.8's PPO from PyPI in its own
venv, TUNE_CLEANRL_PYTHON, minibatches x steps x envs, 120 settings, or `selfplay-wide`, below):

1. the grid: `harness sweep` of every setting, one GRID_WINDOW_S (8 s) reading each, timed;
2. the tune from the space's bad start (`harness tune`, --budget), timed whole, its final A/B
   included;
3. the judge: the harness's own A/B (the tune's duel, time-sliced fresh processes, 95 %) of the
   tune's winner against the grid's best reading, at the edge 1 - --within: "within" when the
   whole interval of winner / best lies above it, "outside" below, "undecided" at its budget.

Prints one line and appends the row to --save (JSON lines). `--tune-only` runs the tune alone
(a reproducibility pair: the same start and budget twice) and `--pair ROWS I J` A/Bs two rows'
winners against each other (edge 1 - --within, both ways).

`--random N` replaces the grid, for a space too large to sweep whole: after the tune, N settings
drawn at random (seeded by --random-seed) are swept, one 8 s reading each as the grid's are
(one `harness sweep` of a spec listing them, duration 8, one repeat). The references are the
best of those readings and the best setting the tune read (its run's cells: the start's first
reading and the screens at --screen's window, 2 s, the incumbents' evidence at 8 s). The two
are on different windows and were read at different times, so they are not ranked against each
other by their readings: the winner is A/B'd against each reference in turn (one that is the
winner's own setting needs none), and the row's verdict is "within" only when every A/B says
so, "outside" when any does, else "undecided". The row keeps the random settings with their
readings, the tune's best reading, each reference's A/B and the whole run's seconds.

`selfplay-wide`: the self-play suite on the CPU (device cpu) over backend threads, processes or
server, workers 1, 2, 4, games_per_worker 1, 2, 4, leaves 1..16 (doubling), gather full or
share, server_threads 1 or 2: 540 settings by the tune's count. games_per_worker, gather and
server_threads are read by the server backend only (the suite's params say "server:"; threads
and processes play one game at a time, in-process or per-worker nets); the suite validates each
value alone and refuses no combination, and the tune checks each knob's values alone and knows
nothing of this, so it may read or A/B two settings that run the same program (a reading each,
no failure). Here those settings count once: 210 distinct programs (180 server, 15 threads, 15
processes), each drawn with equal chance by --random, and a reference that runs the winner's
program is not A/B'd against it. The bad start, chosen from the params' meaning before any
reading: the GIL-bound threads backend, one worker, one leaf per search step (a batch of one per
forward pass), one game per worker, gather full, one server thread.

    python benchmarks/tune_vs_grid.py producers --save results/tune_vs_grid.jsonl
    python benchmarks/tune_vs_grid.py mccfr --save results/tune_vs_grid.jsonl
    python benchmarks/tune_vs_grid.py producers --tune-only --save pairs.jsonl   # twice
    python benchmarks/tune_vs_grid.py --pair pairs.jsonl 0 1 --save judged.jsonl
    python benchmarks/tune_vs_grid.py selfplay-wide --random 30 --within 0.10 --save results/wide.jsonl
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from tune_campaign import SEEDS, harness, only_run, rate_name, records, run_seconds, sets  # noqa: E402

PRODUCERS = str(ROOT / "tests" / "programs" / "producers.py")
SPACES: dict[str, dict] = {
    **SEEDS,
    # the worst corner by a grid read before the program's constants were fixed: one producer,
    # the batch past the cache (docs/benchmarks.md, "Tune or grid")
    "producers": {
        "program": [sys.executable, PRODUCERS, "--workers", "{workers}", "--batch", "{batch}"],
        "start": {"workers": 1, "batch": 512},
        "knobs": {"workers": [1, 2, 3, 4, 5], "batch": [32, 64, 128, 256, 512]},
        "fixed": {},
    },
    # CleanRL 0.4.8's PPO from PyPI, unchanged, in its own venv (its python: TUNE_CLEANRL_PYTHON;
    # the install: docs/records/2026-11-26-tune-real-programs.md), from the earlier tunes' bad start
    "cleanrl": {
        "program": [
            *("env", "OMP_NUM_THREADS=1", os.environ.get("TUNE_CLEANRL_PYTHON", "python")),
            *"-m cleanrl.ppo --gym-id CartPole-v1 --num-envs {envs} --num-steps {steps} --n-minibatch {minibatches}".split(),
            *"--total-timesteps 1000000000 --cuda False --seed 1".split(),
        ],
        "start": {"minibatches": 32, "steps": 128, "envs": 1},
        "knobs": {"minibatches": [1, 2, 4, 8, 16, 32], "steps": [32, 64, 128, 256, 512], "envs": [1, 2, 4, 8]},
        "fixed": {},
    },
    # the docstring's `selfplay-wide`: a space no grid is run of (540 settings, 210 programs)
    "selfplay-wide": {
        "suite": "selfplay",
        "start": {
            "backend": "threads",
            "workers": 1,
            "games_per_worker": 1,
            "leaves": 1,
            "gather": "full",
            "server_threads": 1,
        },
        "knobs": {
            "backend": ["threads", "processes", "server"],
            "workers": [1, 2, 4],
            "games_per_worker": [1, 2, 4],
            "leaves": [1, 2, 4, 8, 16],
            "gather": ["full", "share"],
            "server_threads": [1, 2],
        },
        "fixed": {"device": "cpu"},
        # knobs only a setting matching `when` reads: elsewhere the same program whatever their values
        "inert": {"when": {"backend": "server"}, "knobs": ["games_per_worker", "gather", "server_threads"]},
    },
}


def target(space: dict) -> list[str]:
    """A suite's name, or `-- CMD` for a program (after every other argument)."""
    return [] if "program" in space else [space["suite"]]


def tail(space: dict) -> list[str]:
    return ["--", *space["program"]] if "program" in space else []


def rate_of(record: dict, space: dict) -> float | None:
    """A cell's reading: the suite's headline rate (tune_campaign.rate_name), or a program's
    only counted rate; None where the cell failed or counted nothing."""
    metrics = record.get("metrics") or {}
    if "suite" in space:
        name = rate_name(space["suite"])
    else:
        name = next((k for k in sorted(metrics) if k.endswith("_per_s") and not k.startswith(("cpu", "gpu"))), "")
    rate = metrics.get(name)
    ok = record["status"] == "ok" and isinstance(rate, int | float) and rate > 0
    return float(rate) if ok else None


def best_of(run: Path, space: dict) -> tuple[dict, float] | None:
    """The grid's best reading: the setting a user of the grid would pick."""
    got = [(r["params"], r["rate"]) for r in readings(run, space) if r["rate"]]
    return max(got, key=lambda pr: pr[1]) if got else None


def program_of(space: dict, setting: dict) -> dict:
    """The program `setting` runs: knobs its other values leave unread (the space's `inert`) at
    the start's values, so that two settings running one program compare equal."""
    inert = space.get("inert")
    if not inert or all(setting.get(k) == v for k, v in inert["when"].items()):
        return dict(setting)
    return {**setting, **{k: space["start"][k] for k in inert["knobs"]}}


def programs(space: dict) -> list[dict]:
    """Every distinct program of the space, in the knobs' order."""
    names = list(space["knobs"])
    seen: dict[str, dict] = {}
    for values in itertools.product(*space["knobs"].values()):
        program = program_of(space, dict(zip(names, values, strict=True)))
        seen.setdefault(json.dumps(program, sort_keys=True), program)
    return list(seen.values())


def readings(run: Path, space: dict) -> list[dict]:
    """A run's readings of the space's settings: each cell's knob values, its rate (rate_of)
    and its measured window."""
    return [
        {
            "params": {k: r["params"][k] for k in space["knobs"]},
            "rate": rate_of(r, space),
            "window_s": (r.get("budget") or {}).get("duration"),
            "status": r["status"],
        }
        for r in records(run)
    ]


def random_sweep(name: str, out: Path, count: int, seed: int) -> dict:
    """`count` of the space's programs drawn at random (seeded), one 8 s reading each in one
    sweep, as the grid reads its settings."""
    space = SPACES[name]
    drawn = random.Random(seed).sample(programs(space), count)
    lines = ['label = "random"', "duration = 8", "repeats = 1"]
    for setting in drawn:
        params = ", ".join(f"{k} = {json.dumps(v)}" for k, v in {**space["fixed"], **setting}.items())
        lines += ["", "[[matrix]]", f'suite = "{space["suite"]}"', f"params = {{ {params} }}"]
    spec = out / "random.toml"
    spec.write_text("\n".join(lines) + "\n")
    rc, seconds, text = harness(ROOT, "sweep", str(spec), "--out", str(out / "random"), "--quiet")
    if rc != 0:
        print(text[-1500:], flush=True)
    read = readings(only_run(out / "random"), space)
    best = max((r for r in read if r["rate"]), key=lambda r: r["rate"], default=None)
    return {
        "random_exit": rc,
        "random_s": seconds,
        "random_seed": seed,
        "random": read,
        "random_best": best["params"] if best else None,
        "random_best_rate": best["rate"] if best else None,
    }


def against_references(name: str, row: dict, out: Path, within: float, budget: float) -> dict:
    """The winner A/B'd against the random sweep's best reading and the tune's best reading in
    turn (their windows differ, so neither is ranked above the other); "within" only when every
    A/B says so."""
    space = SPACES[name]
    tune_read = readings(Path(row["tune_dir"]), space)
    tune_best = max((r for r in tune_read if r["rate"]), key=lambda r: r["rate"], default=None)
    candidates = [("random", row.get("random_best"), row.get("random_best_rate"), 8.0)]
    if tune_best:
        candidates.append(("tune-read", tune_best["params"], tune_best["rate"], tune_best["window_s"]))
    winner = program_of(space, row["winner"])
    judged: list[dict] = []
    seen: set[str] = set()
    for source, params, rate, window in candidates:
        if not params:
            continue
        key = json.dumps(program_of(space, params), sort_keys=True)
        if key in seen:
            judged[-1]["source"] += f"+{source}"
            continue
        seen.add(key)
        got = {"source": source, "params": params, "rate": rate, "window_s": window}
        if program_of(space, params) == winner:
            got["judged"] = "the same program"
        else:
            got.update(judge(name, row["winner"], params, out, within, budget))
        judged.append(got)
    verdicts = [j["judged"] for j in judged]
    if not verdicts:
        overall = "no reference"
    elif "outside" in verdicts:
        overall = "outside"
    elif all(v in ("within", "the same program") for v in verdicts):
        overall = "within"
    else:
        overall = "undecided"
    return {
        "tune_readings": len(tune_read),
        "tune_best_read": tune_best,
        "references": judged,
        "judged": overall,
    }


def tune(name: str, out: Path, budget: float, seed: int | None) -> dict:
    space = SPACES[name]
    knob_args = [f"--knob={k}={','.join(map(str, v))}" for k, v in space["knobs"].items()]
    args = ["tune", *target(space), *sets({**space["fixed"], **space["start"]}), *knob_args, "--budget", str(budget)]
    args += ["--seed", str(seed)] if seed is not None else []
    rc, seconds, text = harness(ROOT, *args, "--out", str(out / "tune"), "--quiet", *tail(space))
    print(text[-1500:], flush=True)
    doc = json.loads((only_run(out / "tune") / "tune.json").read_text())
    return {
        "space": name,
        "tune_exit": rc,
        "tune_s": seconds,
        "winner": doc["best"],
        "plan": (doc.get("plan") or {}).get("said"),
        "against_grid": (doc.get("plan") or {}).get("against_grid"),
        "sure": doc.get("sure"),
        "conclusion": doc.get("conclusion"),
        "final_ab": (doc.get("final") or {}).get("said"),
        "tune_dir": str(only_run(out / "tune")),
    }


def grid(name: str, out: Path) -> dict:
    space = SPACES[name]
    grid_args = [f"--set={k}={','.join(map(str, v))}" for k, v in space["knobs"].items()]
    args = ["sweep", *(["--suite", space["suite"]] if "suite" in space else []), *sets(space["fixed"]), *grid_args]
    rc, seconds, _ = harness(
        ROOT, *args, "--duration", "8", "--repeats", "1", "--out", str(out / "grid"), "--quiet", *tail(space)
    )
    best = best_of(only_run(out / "grid"), space)
    return {
        "grid_exit": rc,
        "grid_s": seconds,
        "grid_best": best[0] if best else None,
        "grid_best_rate": best[1] if best else None,
    }


def judge(name: str, winner: dict, best: dict, out: Path, within: float, budget: float) -> dict:
    """The A/B of `winner` (challenger) against `best` at the edge 1 - within, 95 %."""
    from harness.ab.experiment import ABOptions
    from harness.commands.program import Program
    from harness.commands.tune import cell_maker, overrides_for
    from harness.runs.store import RunStore
    from harness.tune.duel import BETTER, WORSE, duel

    space = SPACES[name]
    same = {k: str(v) for k, v in program_of(space, winner).items()} == {
        k: str(v) for k, v in program_of(space, best).items()
    }  # a grid's params read back from its records may be strings ("128")
    if same:
        return {"judged": "the same setting"}
    program = Program(list(space["program"])) if "program" in space else None
    make = cell_maker(overrides_for(space.get("suite"), space["fixed"], program, "judge"))
    store = RunStore.create(out, f"judge-{name}", {"kind": "tune-judge"})
    began = time.monotonic()
    got = duel(make(best), make(winner), store.root, ABOptions(alpha=0.05, budget_s=budget), -within, stop_futile=False)
    verdict = {BETTER: "within", WORSE: "outside"}.get(got.decision, got.decision)
    ratio = got.ratio()
    said = (
        f"{verdict}: {ratio[0]:.3f}x [{ratio[1]:.3f}, {ratio[2]:.3f}] after {got.blocks} blocks" if ratio else verdict
    )
    return {
        "judged": verdict, "ratio": ratio, "judge_s": time.monotonic() - began, "judge_said": said,
        "judge_blocks": got.block_ratios,
    }  # fmt: skip


def both_ways(ratio: list[float] | None, within: float) -> str:
    """A pair's winners are within `within` of each other when the whole interval of one over
    the other lies inside [1 - within, 1 / (1 - within)]: the duel's edge asks one way only."""
    if not ratio:
        return "the same setting"
    low, high, edge = ratio[1], ratio[2], 1 - within
    if edge < low and high < 1 / edge:
        return "within"
    if low > 1 / edge or high < edge:
        return "outside"
    return "undecided"


def emit(row: dict, save: Path | None) -> None:
    row["load"] = open("/proc/loadavg").read().split()[:3]
    print(json.dumps(row, default=str), flush=True)
    if save:
        with save.open("a") as fh:
            fh.write(json.dumps(row, default=str) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("space", nargs="?", help=f"of {', '.join(SPACES)}")
    parser.add_argument("--budget", type=float, default=1200.0)
    parser.add_argument("--within", type=float, default=0.05, help="the judge's edge: winner / best above 1 - this")
    parser.add_argument("--judge-budget", type=float, default=180.0)
    parser.add_argument("--seed", type=int, help="the tune's --seed")
    parser.add_argument("--tune-only", action="store_true", help="the tune alone (a reproducibility pair's half)")
    parser.add_argument("--pair", nargs=3, metavar=("ROWS", "I", "J"), help="A/B row I's winner against row J's")
    parser.add_argument("--random", type=int, metavar="N", help="N random settings instead of the grid")
    parser.add_argument("--random-seed", type=int, default=1, help="the seed of --random's draw")
    parser.add_argument("--grid-from", type=Path, help="the grid's run directory, swept earlier in this sitting")
    parser.add_argument("--out", type=Path, default=Path("results/tune_vs_grid"))
    parser.add_argument("--save", type=Path)
    args = parser.parse_args()
    save = args.save.resolve() if args.save else None
    stamp = time.strftime("%Y%m%dT%H%M%S")
    os.chdir(ROOT)  # the judge's sides run the code here (harness.tune.duel.same_code)
    if args.pair:
        rows = [json.loads(line) for line in Path(args.pair[0]).read_text().splitlines() if line.strip()]
        a, b = rows[int(args.pair[1])], rows[int(args.pair[2])]
        out = (args.out / f"{stamp}-pair-{a['space']}").resolve()
        got = judge(a["space"], a["winner"], b["winner"], out, args.within, args.judge_budget)
        emit({"pair": [a["winner"], b["winner"]], **got, "both_ways": both_ways(got.get("ratio"), args.within)}, save)
        return
    if args.space not in SPACES:
        raise SystemExit(f"a space of {', '.join(SPACES)}")
    if args.random is not None and "suite" not in SPACES[args.space]:
        raise SystemExit(f"--random: a suite's space ({', '.join(n for n, s in SPACES.items() if 'suite' in s)})")
    if args.random is not None and not 1 <= args.random <= len(programs(SPACES[args.space])):
        raise SystemExit(f"--random: 1 to {len(programs(SPACES[args.space]))} settings of {args.space}")
    began = time.monotonic()
    out = (args.out / f"{stamp}-{args.space}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    row = tune(args.space, out, args.budget, args.seed)
    if args.random is not None:
        row.update(random_sweep(args.space, out, args.random, args.random_seed))
        row.update(against_references(args.space, row, out, args.within, args.judge_budget))
        row["total_s"] = time.monotonic() - began
    elif args.grid_from:  # a grid swept earlier in this sitting
        best = best_of(args.grid_from, SPACES[args.space])
        row.update(
            grid_s=run_seconds(args.grid_from),
            grid_best=best[0] if best else None,
            grid_best_rate=best[1] if best else None,
        )
        row.update(judge(args.space, row["winner"], row["grid_best"], out, args.within, args.judge_budget))
    elif not args.tune_only:
        row.update(grid(args.space, out))
        if row.get("grid_best"):
            row.update(judge(args.space, row["winner"], row["grid_best"], out, args.within, args.judge_budget))
    emit(row, save)


if __name__ == "__main__":
    main()
