"""`harness tune` against the grid a user would run instead, in one sitting: is the tune never
slower to a good answer?

For one space (a seed of tune_campaign.py, or `producers`: tests/programs/producers.py's
workers 1..5 x batch 32..512, 25 settings):

1. the grid: `harness sweep` of every setting, one GRID_WINDOW_S (8 s) reading each, timed;
2. the tune from the space's bad start (`harness tune`, --budget), timed whole, its final A/B
   included;
3. the judge: the harness's own A/B (the tune's duel, time-sliced fresh processes, 95 %) of the
   tune's winner against the grid's best reading, at the edge 1 - --within: "within" when the
   whole interval of winner / best lies above it, "outside" below, "undecided" at its budget.

Prints one line and appends the row to --save (JSON lines). `--tune-only` runs the tune alone
(a reproducibility pair: the same start and budget twice) and `--judge A B` A/Bs two rows'
winners against each other (edge 1 - --within, both ways).

    python benchmarks/tune_vs_grid.py producers --save results/tune_vs_grid.jsonl
    python benchmarks/tune_vs_grid.py mccfr --save results/tune_vs_grid.jsonl
    python benchmarks/tune_vs_grid.py producers --tune-only --save pairs.jsonl   # twice
    python benchmarks/tune_vs_grid.py --pair pairs.jsonl 0 1 --save judged.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
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
}


def target(space: dict) -> list[str]:
    """A suite's name, or `-- CMD` for a program (after every other argument)."""
    return [] if "program" in space else [space["suite"]]


def tail(space: dict) -> list[str]:
    return ["--", *space["program"]] if "program" in space else []


def best_of(run: Path, space: dict) -> tuple[dict, float] | None:
    """The grid's best reading: the setting a user of the grid would pick, by the suite's
    headline rate (tune_campaign.rate_name), or a program's only counted rate."""
    got = []
    for r in records(run):
        metrics = r.get("metrics") or {}
        if "suite" in space:
            name = rate_name(space["suite"])
        else:
            name = next((k for k in sorted(metrics) if k.endswith("_per_s") and not k.startswith(("cpu", "gpu"))), "")
        rate = metrics.get(name)
        if r["status"] == "ok" and isinstance(rate, int | float) and rate > 0:
            got.append(({k: r["params"][k] for k in space["knobs"]}, float(rate)))
    return max(got, key=lambda pr: pr[1]) if got else None


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

    if winner == best:
        return {"judged": "the same setting"}
    space = SPACES[name]
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
    return {"judged": verdict, "ratio": ratio, "judge_s": time.monotonic() - began, "judge_said": said}


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
        emit(
            {
                "pair": [a["winner"], b["winner"]],
                **judge(a["space"], a["winner"], b["winner"], out, args.within, args.judge_budget),
            },
            save,
        )
        return
    if args.space not in SPACES:
        raise SystemExit(f"a space of {', '.join(SPACES)}")
    out = (args.out / f"{stamp}-{args.space}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    row = tune(args.space, out, args.budget, args.seed)
    if args.grid_from:  # a grid swept earlier in this sitting
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
