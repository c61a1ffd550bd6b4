"""Is a tune's winner within 10 % of the grid's best? Judged by an A/B, not by readings.

tune_campaign.py judges "within 10 % of the best" on medians of three 8 s readings of each
cell, and those spread 10-25 % (MCCFR's best confirmed cell read 492-665k in one sitting):
a winner 0.90 of the best by the medians can be either side of the line. This runs the
harness's own A/B (the tune's duel: time-sliced fresh processes, the anytime-valid interval)
of each row's winner against its best confirmed cell, at 95 %, judged at the one edge 0.9:
"within" when the whole interval of winner / best lies above 0.9, "outside" when below,
"undecided" at the budget.

    python benchmarks/tune_judge.py ROWS.jsonl --code SNAPSHOT --out DIR [--budget 180]

ROWS.jsonl: rows that tune_campaign.py --save wrote. Prints one line a row and appends the
judgement to --save (JSON lines).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WITHIN = 0.9


def judge(row: dict, out: Path, budget: float) -> dict:
    from tune_campaign import SEEDS

    from harness.ab.experiment import ABOptions
    from harness.commands.tune import cell_maker, overrides_for
    from harness.runs.store import RunStore
    from harness.tune.duel import BETTER, WORSE, duel

    seed = SEEDS[row["seed"]]
    make = cell_maker(overrides_for(seed["suite"], seed["fixed"], None, "judge"))
    winner, best = row["winner"]["params"], row["best"]["params"]
    said = {"seed": row["seed"], "winner": winner, "best": best, "medians": row.get("winner_over_best")}
    if winner == best:
        return {**said, "judged": "the same cell"}
    store = RunStore.create(out, f"judge-{row['seed']}", {"kind": "tune-judge"})
    began = time.monotonic()
    # best as the incumbent, the winner as the challenger: the edge log(0.9) is a "gain" of -10 %
    abopts = ABOptions(alpha=0.05, budget_s=budget)
    got = duel(make(best), make(winner), store.root, abopts, WITHIN - 1, stop_futile=False)
    verdict = {BETTER: "within", WORSE: "outside"}.get(got.decision, got.decision)
    ratio = got.ratio()
    said_ab = (
        f"{verdict}: {ratio[0]:.3f}x [{ratio[1]:.3f}, {ratio[2]:.3f}] after {got.blocks} blocks, {got.seconds:.0f} s"
        if ratio else f"{verdict}: {got.reason}"
    )
    return {
        **said,
        "judged": verdict,
        "ratio": ratio,
        "blocks": got.blocks,
        "seconds": time.monotonic() - began,
        "said": said_ab,
        "load": open("/proc/loadavg").read().split()[:3],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rows", type=Path)
    parser.add_argument("--code", type=Path, default=HERE.parent, help="the checkout whose harness runs")
    parser.add_argument("--out", type=Path, default=Path("results/tune_judge"))
    parser.add_argument("--budget", type=float, default=180.0, help="A/B seconds a row")
    parser.add_argument("--save", type=Path)
    args = parser.parse_args()
    sys.path[:0] = [str(args.code.resolve()), str(HERE)]
    rows, out, save = args.rows.resolve(), args.out.resolve(), args.save.resolve() if args.save else None
    os.chdir(args.code)  # both sides' cells run the code in the current directory (harness.tune.duel.same_code)
    for n, line in enumerate(rows.read_text().splitlines()):
        row = json.loads(line)
        got = judge(row, out / f"{n}-{row['seed']}", args.budget)
        medians = got["medians"]
        by_medians = f"{medians:.3f}" if isinstance(medians, float) and math.isfinite(medians) else "-"
        print(f"{row['seed']} (--min-gain {row.get('min_gain')}): medians {by_medians}; A/B {got.get('said', got['judged'])}")
        if save:
            with save.open("a") as fh:
                fh.write(json.dumps(got, default=str) + "\n")


if __name__ == "__main__":
    main()
