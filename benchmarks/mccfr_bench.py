"""MCCFR benchmarks behind docs/benchmarks.md (## MCCFR). Numbers, never asserts.

    python benchmarks/mccfr_bench.py reference --seconds 5      # OpenSpiel (or stand-in) it/s
    python benchmarks/mccfr_bench.py ours --seconds 5 --repeats 3
    python benchmarks/mccfr_bench.py drift --seconds 90

`reference` needs `open_spiel` importable (pip install open_spiel, e.g. in a venv with
--system-site-packages); without it, it times a plain dict-keyed Python ES-MCCFR written
below, labelled "stand-in", which follows OpenSpiel's Python solver line by line in spirit
(string keys, per-node numpy regret matching) on our own Leduc rules.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _suite_cell(seconds: float, warmup: float = 1.0, **params) -> dict:
    from harness.probe import Probe
    from suites.mccfr import SUITE, Params

    probe = Probe(duration_s=seconds, warmup_s=warmup)
    SUITE.run(Params(**params), probe)
    return probe.finish()


def _sequential_rate(seconds: float, batch_size: int, game: dict, out) -> None:
    out.put(_suite_cell(seconds, backend="sequential", batch_size=batch_size, **game)["iterations_per_s"])


def _two_sequential_at_once(seconds: float, batch_size: int, game: dict) -> float:
    """The machine's two-core ceiling: two independent sequential solvers side by side
    (no sync at all); their summed rate is what a perfect 2-worker pool could reach."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_sequential_rate, args=(seconds, batch_size, game, out)) for _ in range(2)]
    for proc in procs:
        proc.start()
    rates = [out.get() for _ in procs]
    for proc in procs:
        proc.join()
    return sum(rates)


def cmd_ours(args: argparse.Namespace) -> None:
    """Sequential vs processes(2) on Leduc, or with --variant on leduc_variant (delta with a
    barrier per batch, delta overlapped with staleness 1, shared) and the machine's ceiling
    (two sequential solvers at once), interleaved repeats, medians."""
    game: dict = dict(game="leduc")
    if args.variant:
        game = dict(game="leduc_variant", ranks=args.ranks, suits=args.suits, raises=args.raises)
    batch = dict(batch_size=args.batch_size, **game)
    cells = {
        "sequential": dict(backend="sequential", **batch),
        "processes2_delta_barrier": dict(backend="processes", workers=2, staleness=0, **batch),
        "processes2_delta": dict(backend="processes", workers=2, **batch),
        "processes2_shared": dict(backend="processes", workers=2, sync="shared", **batch),
    }
    rates: dict[str, list[float]] = {name: [] for name in [*cells, "ceiling_2x_sequential"]}
    for _ in range(args.repeats):
        rates["ceiling_2x_sequential"].append(_two_sequential_at_once(args.seconds, args.batch_size, game))
        print(
            json.dumps({"cell": "ceiling_2x_sequential", "iterations_per_s": round(rates["ceiling_2x_sequential"][-1])})
        )
        for name, params in cells.items():
            m = _suite_cell(args.seconds, **params)
            rates[name].append(m["iterations_per_s"])
            print(
                json.dumps(
                    {
                        "cell": name,
                        "iterations_per_s": round(m["iterations_per_s"]),
                        "nash_conv": round(m["nash_conv"], 4),
                        "sync_share": m.get("sync_share"),
                    }
                )
            )
    med = {name: statistics.median(v) for name, v in rates.items()}
    for name, v in med.items():
        print(f"{name}: median {v:,.0f} it/s  ({', '.join(f'{x:,.0f}' for x in rates[name])})")
    for name in rates:
        if name != "sequential":
            paired = [x / seq for x, seq in zip(rates[name], rates["sequential"], strict=True)]
            print(
                f"{name} / sequential = {med[name] / med['sequential']:.2f}x (ratio of medians); "
                f"median of per-repeat ratios {statistics.median(paired):.2f}x ({', '.join(f'{r:.2f}' for r in paired)})"
            )


def cmd_reference(args: argparse.Namespace) -> None:
    try:
        import pyspiel
        from open_spiel.python.algorithms import external_sampling_mccfr as es
    except ImportError:
        print("open_spiel not importable: timing the dict-based stand-in (NOT OpenSpiel)")
        rate = _standin_rate(args.seconds)
        print(f"stand-in dict-based Python ES-MCCFR, Leduc: {rate:,.0f} it/s")
        return
    game = pyspiel.load_game("leduc_poker")
    rates = []
    for _ in range(args.repeats):
        solver = es.ExternalSamplingSolver(game, es.AverageType.SIMPLE)
        n, started = 0, time.perf_counter()
        while time.perf_counter() - started < args.seconds:
            for _ in range(100):
                solver.iteration()
            n += 100
        rates.append(n / (time.perf_counter() - started))
    print(
        f"OpenSpiel Python ExternalSamplingSolver, leduc_poker: median {statistics.median(rates):,.0f} it/s"
        f" ({', '.join(f'{r:,.0f}' for r in rates)})"
    )
    if hasattr(pyspiel, "ExternalSamplingMCCFRSolver"):
        rates = []
        for _ in range(args.repeats):
            solver = pyspiel.ExternalSamplingMCCFRSolver(game, seed=0)
            n, started = 0, time.perf_counter()
            while time.perf_counter() - started < args.seconds:
                for _ in range(1000):
                    solver.run_iteration()
                n += 1000
            rates.append(n / (time.perf_counter() - started))
        print(
            f"OpenSpiel C++ ExternalSamplingMCCFRSolver, leduc_poker: median "
            f"{statistics.median(rates):,.0f} it/s ({', '.join(f'{r:,.0f}' for r in rates)})"
        )


def _standin_rate(seconds: float) -> float:
    """Dict-keyed external sampling on Leduc, the way a first Python solver is written."""
    import random

    import numpy as np

    from suites.mccfr.games import CHANCE, DECISION, FIRST, KIND, NACT, PLAYER, ROUND, flatten, leduc
    from suites.mccfr.solver import utility_p0

    game = flatten(leduc())
    nodes, children = game.nodes.tolist(), game.children.tolist()
    regrets: dict[str, np.ndarray] = {}
    avgs: dict[str, np.ndarray] = {}

    def walk(node: int, player: int, cards: tuple[int, int, int], history: str) -> float:
        row = nodes[node]
        if row[KIND] == CHANCE:
            return walk(children[row[FIRST]], player, cards, history + "|")
        if row[KIND] != DECISION:
            u = float(utility_p0(game.nodes, node, cards[0], cards[1], cards[2], 2, 2))
            return u if player == 0 else -u
        cur, n = row[PLAYER], row[NACT]
        key = f"{cards[cur]}:{cards[2] if row[ROUND] else ''}:{history}"
        regret = regrets.setdefault(key, np.zeros(n))
        pos = np.maximum(regret, 0.0)
        policy = pos / pos.sum() if pos.sum() > 0 else np.full(n, 1.0 / n)
        kids = children[row[FIRST] : row[FIRST] + n]
        if cur == player:
            values = np.array([walk(k, player, cards, history + str(a)) for a, k in enumerate(kids)])
            value = float(policy @ values)
            regret += values - value
            return value
        avgs.setdefault(key, np.zeros(n))[:] += policy
        a = int(np.random.choice(n, p=policy))
        return walk(kids[a], player, cards, history + str(a))

    n, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        for player in range(2):
            cards = tuple(random.sample(range(6), 3))
            walk(0, player, cards, "")
        n += 1
    return n / (time.perf_counter() - started)


def cmd_drift(args: argparse.Namespace) -> None:
    """sync=delta vs sync=full on a 50k+ information-set variant: rate and its drift."""
    from suites.mccfr.games import count_infosets, leduc_variant

    print(
        f"variant r{args.ranks} s{args.suits} x{args.raises}: "
        f"{count_infosets(leduc_variant(args.ranks, args.suits, args.raises)):,} information sets"
    )
    for sync in ("delta", "full"):
        m = _suite_cell(
            args.seconds, warmup=2.0, game="leduc_variant", ranks=args.ranks, suits=args.suits,
            raises=args.raises, backend="processes", workers=2, sync=sync, batch_size=args.batch_size,
        )  # fmt: skip
        keep = (
            "iterations_per_s",
            "iterations_per_s_drift_pct_per_min",
            "iterations_per_s_drift_se",
            "sync_bytes_mean",
            "sync_bytes_max",
            "sync_share",
            "infosets_seen",
            "exploitability",
        )
        print(json.dumps({"sync": sync, **{k: m.get(k) for k in keep}}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("ours", "reference", "drift"):
        p = sub.add_parser(name)
        p.add_argument("--seconds", type=float, default=5.0)
        p.add_argument("--repeats", type=int, default=3)
        p.add_argument("--batch-size", type=int, default=2000)
        p.add_argument("--ranks", type=int, default=13)
        p.add_argument("--suits", type=int, default=4)
        p.add_argument("--raises", type=int, default=2)
        p.add_argument("--variant", action="store_true", help="ours: leduc_variant (--ranks/--suits/--raises)")
    args = parser.parse_args()
    {"ours": cmd_ours, "reference": cmd_reference, "drift": cmd_drift}[args.cmd](args)


if __name__ == "__main__":
    main()
