"""How much does the process's memory layout move a cell's counted work?

Instructions per unit repeat to 1e-5 between runs of one revision in one environment, but
they are not a property of the code alone: CPython's type-attribute cache is indexed by the
address of the attribute's name, dicts and the allocator follow what was allocated before,
and what was allocated before follows the size of the environment and of the paths the
program sees (Mytkowicz et al., "Producing wrong data without doing anything obviously
wrong", ASPLOS 2009). So two machines, or one machine with a different environment, can
count one revision differently, and an A/B of two revisions in one layout measures the code's
change plus that layout's luck.

This script counts one cell on each of two revisions (both in temporary worktrees of equal
path length, as `harness ab --measure instructions` does) under several layouts, given to both
sides alike: `--knob pad`, an extra environment variable of each given size; `--knob layout`,
the counted run's own layouts (HARNESS_COUNT_LAYOUT=k: objects kept and classes tagged before
the program's first import, harness/count/hook). Printed: each side's
instructions per unit under each layout, the spread of each side over the layouts, and the
candidate/base ratio in each layout: the spread of that ratio is what a counted gate's
tolerance must leave room for.

    python benchmarks/count_layout.py b29ac6e818 HEAD 'actor_learner:backend=sequential,agents=5,turns=50,eval_episodes=1' \\
        --knob layout --values 0,1,2,3 --save benchmarks/data/count_layout.json
"""

from __future__ import annotations

import argparse
import json
import platform
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import numpy as np
from count_suites import cell_of  # noqa: E402 (a sibling script)

from harness.ab.revisions import equal_sides
from harness.count.experiment import CountOptions, pilot, target
from harness.count.window import CountFailed, counted_run

ROOT = Path(__file__).resolve().parent.parent
KNOBS = {"pad": "HARNESS_LAYOUT_PAD", "layout": "HARNESS_COUNT_LAYOUT (counted_run's layout)"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("candidate")
    parser.add_argument("cell", help="suite:k=v,k=v")
    parser.add_argument("--knob", choices=sorted(KNOBS), default="layout")
    parser.add_argument("--values", default="0,1,2,3", help="pad: bytes of the extra variable; layout: layout numbers")
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--save", type=Path, required=True)
    args = parser.parse_args()
    pads = [int(p) for p in args.values.split(",")]
    cell = cell_of(args.cell)
    opts = CountOptions()
    found: dict = {"cell": args.cell, "base": args.base, "candidate": args.candidate, "knob": args.knob, "values": pads,
                   "machine": platform.node(), "runs": []}  # fmt: skip
    with ExitStack() as stack:
        base, cand = stack.enter_context(equal_sides(ROOT, args.base, args.candidate))
        sides = {"base": base, "candidate": cand}
        scratch = Path(stack.enter_context(_scratch()))
        plan = pilot(cell, base, scratch, opts)

        def one(job: tuple[str, int]) -> dict:
            name, pad = job
            out = scratch / f"{name[:4]}-{pad:05d}"
            tgt = target(cell, sides[name], out)
            env = {**tgt.env, KNOBS["pad"]: "x" * pad} if args.knob == "pad" else tgt.env
            layout = pad if args.knob == "layout" else 0
            try:
                run = counted_run(tgt.argv, tgt.cwd, out, plan, f"{name} {args.knob} {pad}", env, tgt.progress,
                                  layout=layout)  # fmt: skip
            except CountFailed as exc:
                return {"side": name, "pad": pad, "error": str(exc)}
            return {"side": name, "pad": pad, **run.to_json()}

        jobs = [(name, pad) for pad in pads for name in ("base", "candidate")]
        with ThreadPoolExecutor(args.parallel) as pool:
            found["runs"] = list(pool.map(one, jobs))
    args.save.write_text(json.dumps(found, indent=1))
    per = {(r["side"], r["pad"]): r["per_unit"] for r in found["runs"] if "error" not in r}
    for r in found["runs"]:
        if "error" in r:
            print(f"failed: {r['side']} pad {r['pad']}: {r['error']}")
    for name in ("base", "candidate"):
        values = np.array([per[(name, p)] for p in pads if (name, p) in per])
        if values.size:
            print(f"{name}: " + ", ".join(f"pad {p}: {per[(name, p)]:,.0f}" for p in pads if (name, p) in per)
                  + f"; spread over layouts {values.max() / values.min() - 1:.2e}")  # fmt: skip
    ratios = [per[("candidate", p)] / per[("base", p)] for p in pads if ("base", p) in per and ("candidate", p) in per]
    if ratios:
        print("candidate/base by layout: " + ", ".join(f"{r:.5f}" for r in ratios)
              + f"; range {min(ratios):.5f}-{max(ratios):.5f}")  # fmt: skip


def _scratch():
    import tempfile

    return tempfile.TemporaryDirectory(prefix="count-layout-")


if __name__ == "__main__":
    main()
