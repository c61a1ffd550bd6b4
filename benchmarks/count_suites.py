"""Which suites' cells count repeatably?  A/A counted runs of each cell, and what a counted run costs.

For each cell (a suite and its params, as a sweep spec names them) the window is placed by
a native pilot (harness.count.experiment.pilot), then the same revision is counted `--runs` times (harness.count.window through harness.count.experiment's target: the
suite's cell under callgrind, its probe printing its headline counter), `--parallel` at a
time. Printed per cell: instructions per unit of each run, the A/A spread (max/min - 1), the
largest disagreement of a run's two halves, the processes that counted, and the wall time of
a counted run (median, range). Raw runs to --save as JSON.

    python benchmarks/count_suites.py --runs 10 --save benchmarks/data/count_suites.json \\
        'synthetic:kind=spin,workers=1' 'mccfr:game=leduc,backend=sequential'
"""

from __future__ import annotations

import argparse
import json
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from harness.ab.revisions import WORKING_TREE, Side
from harness.count.experiment import CountOptions, pilot, target
from harness.count.window import CountFailed, counted_run
from harness.running.matrix import Overrides, Spec, apply_overrides, expand

ROOT = Path(__file__).resolve().parent.parent


def cell_of(text: str):
    """'suite:k=v,k=v' -> the one Cell it names (defaults for the rest)."""
    suite, _, rest = text.partition(":")
    axes = {key: [value] for key, _, value in (item.partition("=") for item in rest.split(",") if item)}
    cells = expand(apply_overrides(Spec(), Overrides(suite=suite, axes=axes)))
    if len(cells) != 1:
        raise SystemExit(f"{text}: names {len(cells)} cells; give one value per param")
    return cells[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cells", nargs="+", help="suite:k=v,k=v")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--lines", type=int, default=1, help="progress lines per half (--count-lines)")
    parser.add_argument("--save", type=Path, required=True)
    args = parser.parse_args()
    side = Side("base", WORKING_TREE, None, ROOT)
    opts = CountOptions(lines=args.lines)
    scratch = Path(tempfile.mkdtemp(prefix="count-suites-"))
    found: dict = {"cells": []}
    for text in args.cells:
        cell = cell_of(text)
        plan = pilot(cell, side, scratch / cell.id, opts)  # the window every run counts, placed natively

        def one(i: int, cell=cell, plan=plan) -> dict:
            out = scratch / cell.id / f"run-{i}"
            out.mkdir(parents=True, exist_ok=True)
            tgt = target(cell, side, out)
            try:
                run = counted_run(tgt.argv, tgt.cwd, out, plan, f"run {i + 1}", tgt.env, tgt.progress)
            except CountFailed as exc:
                return {"error": str(exc)}
            return run.to_json()

        with ThreadPoolExecutor(args.parallel) as pool:
            runs = list(pool.map(one, range(args.runs)))
        ok = [r for r in runs if "error" not in r]
        found["cells"].append({"cell": text, "id": cell.id, "params": cell.params, "runs": runs})
        args.save.write_text(json.dumps(found, indent=1))
        print(f"{text}: {len(ok)} of {len(runs)} runs counted")
        for r in runs:
            if "error" in r:
                print(f"  failed: {r['error']}")
        if ok:
            per = np.array([r["per_unit"] for r in ok])
            halves = [abs(r["halves_per_unit"][1] / r["halves_per_unit"][0] - 1) for r in ok]
            walls = np.array([r["wall_s"] for r in ok])
            procs = sorted({sum(1 for p in r["processes"] if sum(p["halves"])) for r in ok})
            print(f"  {np.median(per):,.0f} instructions per unit of {ok[0]['counter']} over {ok[0]['window_units']} units; "
                  f"A/A spread {per.max() / per.min() - 1:.2e}; largest halves' gap {max(halves):.2e}; "
                  f"processes counting {procs}; wall {np.median(walls):.0f} s [{walls.min():.0f}, {walls.max():.0f}]")  # fmt: skip


if __name__ == "__main__":
    main()
