"""Where an A/B block's noise comes from, and what the free ways of lowering it buy.

Identical code on both sides (the working tree against itself), sliced by the harness's own
Slicer, block after block; each block is laid out one of several ways, drawn in a random
order within each round so that the machine's load hits every way alike:

- `default`: as `harness ab` runs a block (each side's cell in a session of its own);
- `shared-session`: both sides' cells in process groups of their own inside the harness's
  session (on a kernel with autogroups, harness.causal.stopper);
- `pinned`: both sides' processes on the same one CPU, drawn per block;
- `hash-seed`: one PYTHONHASHSEED per block, the same for both sides.

Every block runs 1 warm-up pair and `--pairs` measured pairs (4 by default), and every pair
is saved, so the analysis can ask afterwards what fewer pairs, or counting the warm-up pair,
would have given (a block's length is then its launches plus the pairs it keeps).

With `--neighbour N`, N processes of their own sessions burn the CPU in bursts (0.2-2 s on,
0.2-2 s off) for the whole run: a CI runner's neighbours.

    python benchmarks/ab_noise.py --rounds 10 --save results/ab_noise.json
    python benchmarks/ab_noise.py --analyze results/ab_noise.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYOUTS = {
    "default": {},
    "shared-session": {"session": "shared"},
    "pinned": {"pin_cpus": 1},
    "hash-seed": {"shared_hash_seed": True},
}
CELLS = {
    "spin": ("synthetic", ["kind=spin", "workers=1"], None),
    "mccfr": ("mccfr", ["backend=processes", "workers=2", "batch_size=1000"], None),
    # a user's program that only logs `Iteration N (X iter/s)` (tests/harness/test_ab_program.py)
    "program": ("command", [], "program"),
}
NEIGHBOUR = """
import random, time
while True:
    end = time.perf_counter() + random.uniform(0.2, 2.0)
    while time.perf_counter() < end:
        pass
    time.sleep(random.uniform(0.2, 2.0))
"""


def make_cell(name: str, where: Path):
    from harness.commands.program import Program
    from harness.commands.sweep import build_overrides
    from harness.running.matrix import Spec, apply_overrides, expand

    suite, sets, program = CELLS[name]
    prog = None
    if program:
        sys.path.insert(0, str(ROOT))
        from tests.harness.test_ab_program import PROGRAM

        (where / "prog.py").write_text(PROGRAM)
        prog = Program([sys.executable, str(where / "prog.py")])
        suite = None
    overrides = build_overrides(suite, None, None, sets, {}, None, prog)
    return expand(apply_overrides(Spec(), overrides))[0]


def run(args: argparse.Namespace) -> None:
    from harness.ab.revisions import WORKING_TREE, Side
    from harness.ab.slicing import SliceOptions, Slicer
    from harness.model.registry import get_suite

    scratch = Path(tempfile.mkdtemp(prefix="ab-noise-"))
    for sub in ("logs", "series"):
        (scratch / sub).mkdir()
    cell = make_cell(args.cell, scratch)
    side = {n: Side(n, WORKING_TREE, None, ROOT) for n in ("base", "candidate")}
    neighbours = [
        subprocess.Popen([sys.executable, "-c", NEIGHBOUR], start_new_session=True, stdin=subprocess.DEVNULL)
        for _ in range(args.neighbour)
    ]
    doc = {"args": {k: str(v) for k, v in vars(args).items()}, "cell": cell.to_json(), "blocks": []}
    rng = random.Random(args.seed)
    index = 0
    slicers = {}  # one per layout, kept: its history of CPU shares judges starved slices, as in an A/B
    try:
        for round_ in range(args.rounds):
            layouts = list(args.layouts)
            rng.shuffle(layouts)
            for layout in layouts:
                if layout not in slicers:
                    opts = replace(SliceOptions(pairs=args.pairs, warmup_pairs=1), **LAYOUTS[layout])
                    slicers[layout] = Slicer(cell, get_suite(cell.suite).words, side["base"], side["candidate"],
                                             scratch, opts, random.Random(rng.randrange(2**31)))  # fmt: skip
                slicer = slicers[layout]
                load = os.getloadavg()[0]
                block = slicer.block(index)
                index += 1
                doc["blocks"].append(
                    {
                        "round": round_,
                        "layout": layout,
                        "load": load,
                        "launch_s": block.launch_s,
                        "elapsed_s": block.elapsed_s,
                        "pairs": [p.to_json() for p in block.pairs],
                    }
                )
                pairs = [p.log_ratio for p in block.pairs]
                shown = " ".join("-" if v is None else f"{v:+.3f}" for v in pairs)
                print(f"round {round_ + 1} {layout:>14}: {shown} ({block.elapsed_s:.1f} s, load {load:.1f})",
                      flush=True)  # fmt: skip
                args.save.parent.mkdir(parents=True, exist_ok=True)
                args.save.write_text(json.dumps(doc))
    finally:
        for proc in neighbours:
            proc.kill()
            proc.wait()
    analyze([args.save])


def _pair_value(pair: dict, estimand: str) -> float | None:
    """A pair's log-ratio as `estimand` reads it; files from before the estimands were
    recorded (the first run of 2026-11-26) are read per CPU second from each slice's rate
    and CPU share."""
    key = "log_ratio" if estimand == "wall" else f"{estimand}_log_ratio"
    if key in pair or estimand != "cpu":
        return pair.get(key)
    base, cand = pair["base"], pair["cand"]
    if not (base["rate"] and cand["rate"] and base["cpu_share"] and cand["cpu_share"]):
        return None
    return math.log((cand["rate"] / cand["cpu_share"]) / (base["rate"] / base["cpu_share"]))


def _block_variants(block: dict, estimand: str = "wall") -> dict[str, tuple[float, float] | None]:
    """(value, seconds) of a block read several ways: its first k measured pairs (k = 1..),
    and all of them with the warm-up pair counted too; `estimand` as harness.ab.slicing reads
    a slice's rate (wall, cpu, runq)."""
    pairs = block["pairs"]
    launch = sum(block["launch_s"].values())
    warm = [p for p in pairs if p["warmup"]]
    measured = [p for p in pairs if not p["warmup"]]
    length = {id(p): p["base"]["length_s"] + p["cand"]["length_s"] for p in pairs}
    overhead = block["elapsed_s"] - launch - sum(length.values())  # ending the processes, polling
    out: dict[str, tuple[float, float] | None] = {}
    for k in range(1, len(measured) + 1):
        kept = measured[:k]
        values = [v for p in kept if (v := _pair_value(p, estimand)) is not None]
        seconds = launch + overhead + sum(length[id(p)] for p in warm + kept)
        out[f"1 warm-up + {k}"] = (sum(values) / len(values), seconds) if values else None
    for k in range(1, len(measured) + 1):
        kept = warm + measured[: k - 1]
        values = [v for p in kept if (v := _pair_value(p, estimand)) is not None]
        seconds = launch + overhead + sum(length[id(p)] for p in kept)
        out[f"0 warm-up + {k}"] = (sum(values) / len(values), seconds) if values else None
    return out


def robust_sd(x) -> float:
    import numpy as np

    x = np.asarray(x, dtype=float)
    return float(1.4826 * np.median(np.abs(x - np.median(x))))


def analyze(paths: list[Path]) -> None:
    """Per layout: the block values' median, robust sd (1.4826 MAD), plain sd, the share of
    blocks beyond 3 robust sds, the block length and the information per second
    (1 / (robust variance x seconds): what a test of the block values gains per second);
    then the pair-count and warm-up variants of the default blocks."""
    import numpy as np

    for path in paths:
        doc = json.loads(path.read_text())
        blocks = doc["blocks"]
        loads = [b["load"] for b in blocks]
        print(f"{path}: {len(blocks)} blocks of {doc['cell']['suite']} {doc['cell']['params']}, "
              f"load {min(loads):.1f}-{max(loads):.1f} (median {np.median(loads):.1f})")  # fmt: skip
        print(f"{'layout estimand':>20} {'n':>3} | {'median':>7} {'rsd':>6} {'sd':>6} {'>3rsd':>6} | {'s':>5} "
              f"{'info/s':>7} | {'cpu share':>9} {'pair sd':>7}")  # fmt: skip
        for estimand in ("wall", "cpu", "runq"):
            for layout in dict.fromkeys(b["layout"] for b in blocks):
                mine = [b for b in blocks if b["layout"] == layout]
                read = [_block_variants(b, estimand)[f"1 warm-up + {_pairs(b)}"] for b in mine]
                _row(f"{layout} {estimand}", read, mine, estimand)
        default = [b for b in blocks if b["layout"] == "default"] or blocks
        for estimand in ("wall", "cpu"):
            print(f"  the default blocks read ({estimand}) with fewer pairs, or with the warm-up pair counted:")
            for variant in _block_variants(default[0]):
                _row(variant, [_block_variants(b, estimand).get(variant) for b in default], None, estimand)


def _pairs(block: dict) -> int:
    return sum(not p["warmup"] for p in block["pairs"])


def _row(name: str, read: list, blocks: list | None, estimand: str = "wall") -> None:
    import numpy as np

    read = [r for r in read if r is not None]
    if len(read) < 3:
        return
    values = np.array([v for v, _ in read])
    seconds = float(np.median([s for _, s in read]))
    rsd = robust_sd(values)
    far = float(np.mean(np.abs(values - np.median(values)) > 3 * rsd)) if rsd > 0 else math.nan
    line = (f"{name:>20} {len(values):>3} | {np.median(values):+7.3f} {rsd:6.3f} {np.std(values, ddof=1):6.3f} "
            f"{far:6.0%} | {seconds:5.1f} {1 / (rsd**2 * seconds):7.0f}")  # fmt: skip
    if blocks:
        shares = [
            s
            for b in blocks
            for p in b["pairs"]
            for s in (p["base"]["cpu_share"], p["cand"]["cpu_share"])
            if s is not None and not p["warmup"]
        ]
        within = [
            np.std(v, ddof=1)
            for b in blocks
            if len(v := [x for p in b["pairs"] if not p["warmup"] and (x := _pair_value(p, estimand)) is not None]) >= 2
        ]
        line += f" | {np.median(shares):9.2f} {np.median(within):7.3f}"
    print(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cell", default="spin", choices=list(CELLS))
    ap.add_argument(
        "--layouts", type=lambda t: t.split(","), default=list(LAYOUTS), help=f"comma list of {', '.join(LAYOUTS)}"
    )
    ap.add_argument("--rounds", type=int, default=10, help="rounds of one block per layout")
    ap.add_argument("--pairs", type=int, default=4, help="measured pairs per block (fewer are read afterwards)")
    ap.add_argument("--neighbour", type=int, default=0, help="bursty CPU burners in sessions of their own")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--save", type=Path, default=Path("results/ab_noise.json"))
    ap.add_argument("--analyze", type=Path, nargs="+", default=None, help="only analyse saved files")
    args = ap.parse_args()
    if args.analyze is not None:
        analyze(args.analyze)
        return
    run(args)


if __name__ == "__main__":
    main()
