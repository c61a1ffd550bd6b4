"""The gate measured: how often does `harness gate` catch a planted 10 % slowdown, and how
often does it fail two runs of the same code?

Each trial is a fresh baseline run and a fresh candidate run of the synthetic suite, two
cells each: the normalization reference (spin, workers=1) and the target (spin, workers=1,
unit_size=30000). In "slow" trials the candidate's target has `slowdown` (1.10: 10 % more
work per unit); in "same" trials it has 1.0. Slow and same trials alternate, so a change
of machine load over the hour hits both alike. Every trial is judged by harness.gate's
own `evaluate` (the same code `harness gate` runs) for a grid of tolerances, confidences
and with/without `--normalize synthetic`; recall = slow trials flagged, false alarms =
same trials flagged. Raw per-repeat values go to a JSON file for re-analysis.

The issue's version (about two hours on 2 cores):

    python benchmarks/gate_trial.py --trials 20 --repeats 5 --duration 10 --warmup 1

The scaled-down version measured in docs/benchmarks.md ("CI gate trial"), and its analysis:

    python benchmarks/gate_trial.py --trials 10 --repeats 5 --duration 1.5 --warmup 0.5
    python benchmarks/gate_trial.py --analyze benchmarks/data/gate_trial-2026-11-22.json

`--simulate 0.02,0.05` models the gate on a machine with that per-repeat noise (no runs).
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's harness, not an installed one

import numpy as np

from harness.baselines import load_run
from harness.gating import DEFAULT_CONFIDENCE, DEFAULT_TOLERANCE, GateOptions, evaluate, normalized
from harness.stats import ratio_of_medians, verdict

TARGET_UNIT_SIZE = 30_000

SPEC = """label = "gate-trial"
duration = {duration}
warmup = {warmup}
repeats = {repeats}

[[matrix]]
suite = "synthetic"
params = {{ kind = "spin", workers = 1 }}

[[matrix]]
suite = "synthetic"
params = {{ kind = "spin", workers = 1, unit_size = {unit}, slowdown = {slowdown} }}
"""


def sweep(out: Path, slowdown: float, args: argparse.Namespace) -> Path:
    spec = out / f"spec-{slowdown}.toml"
    spec.write_text(
        SPEC.format(
            duration=args.duration, warmup=args.warmup, repeats=args.repeats, unit=TARGET_UNIT_SIZE, slowdown=slowdown
        )
    )
    before = set(out.glob("*-gate-trial*"))
    subprocess.run(
        [sys.executable, "-m", "harness.cli", "sweep", str(spec), "--out", str(out), "--quiet"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    (new,) = set(out.glob("*-gate-trial*")) - before
    return new


def target_check(result: dict) -> dict:
    (check,) = [c for c in result["checks"] if c["kind"] == "speed" and "unit_size=30000" in c["label"]]
    return check


def judge(base_dir: Path, cand_dir: Path, tolerance: float, confidence: float, normalize: str | None) -> dict:
    opts = GateOptions(
        tolerance=tolerance,
        confidence=confidence,
        normalize=normalize,
        metrics=["units_per_s"],
        ignore_params=["slowdown"],
    )
    return target_check(evaluate(load_run(cand_dir), load_run(base_dir), opts))


def values(run_dir: Path) -> dict[str, list[float]]:
    out = {}
    for cell in load_run(run_dir).cells:
        name = "target" if cell.params["unit_size"] == TARGET_UNIT_SIZE else "reference"
        out[name] = [r.metrics.get("units_per_s") for r in cell.records]
        out[f"{name}_cpu_util"] = [r.metrics.get("cpu_util_mean") for r in cell.records]
    return out


def _side(vals: dict[str, list[float]]) -> tuple[dict[int, float], dict[int, float]]:
    return dict(enumerate(vals["target"])), dict(enumerate(vals["reference"]))


def _flagged(base: dict, cand: dict, norm: str, conf: float, tolerances: list[float]) -> list[bool]:
    """The gate's speed verdict for the target cell, from stored values, for each tolerance:
    the same functions `harness gate` uses (normalized, ratio_of_medians, verdict)."""
    (bt, br), (ct, cr) = _side(base), _side(cand)
    if norm in ("synthetic", "median"):
        paired = norm == "synthetic"
        b, c = normalized(bt, br, paired), normalized(ct, cr, paired)
    else:
        b, c = list(bt.values()), list(ct.values())
    interval = ratio_of_medians(b, c, confidence=conf)
    return [verdict(interval, higher_is_better=True, tolerance=t) == "worse" for t in tolerances]


def analyze(saved: Path, tolerances: list[float], confidences: list[float]) -> None:
    """Recall and false alarms from a saved trial file: per trial (each trial's own
    baseline and candidate) and over all pairs of runs (every earlier slowdown=1.0 run as
    the baseline of every later run: many more comparisons, but not independent ones)."""
    trials = json.loads(saved.read_text())["trials"]
    print("normalize: raw = none; median = by the reference cell's median; synthetic = by its same repeat (the gate's)")
    runs = []  # (order, is_slow, values)
    for i, t in enumerate(trials):
        runs.append((2 * i, False, t["values"]["baseline"]))
        runs.append((2 * i + 1, t["arm"] == "slow", t["values"]["candidate"]))
    null_pairs = [(a[2], b[2]) for a in runs for b in runs if a[0] < b[0] and not a[1] and not b[1]]
    slow_pairs = [(a[2], b[2]) for a in runs for b in runs if a[0] != b[0] and not a[1] and b[1]]
    per_slow = [(t["values"]["baseline"], t["values"]["candidate"]) for t in trials if t["arm"] == "slow"]
    per_same = [(t["values"]["baseline"], t["values"]["candidate"]) for t in trials if t["arm"] == "same"]
    print(
        f"{len(per_slow)} slow and {len(per_same)} same trials; all pairs: {len(slow_pairs)} slow, {len(null_pairs)} same"
    )
    print(
        f"{'normalize':>10} {'conf':>5} {'tol':>5} | {'recall':>7} {'false al.':>9} | {'recall':>7} {'false al.':>9} (all pairs)"
    )
    for norm in ("raw", "median", "synthetic"):
        for conf in confidences:
            rates = []
            for pairs in (per_slow, per_same, slow_pairs, null_pairs):
                flags = np.array([_flagged(b, c, norm, conf, tolerances) for b, c in pairs]).reshape(
                    -1, len(tolerances)
                )
                rates.append(flags.mean(axis=0) if len(flags) else np.zeros(len(tolerances)))
            for k, tol in enumerate(tolerances):
                mark = (
                    "  <- default"
                    if norm == "synthetic" and conf == DEFAULT_CONFIDENCE and tol == DEFAULT_TOLERANCE
                    else ""
                )
                print(
                    f"{norm:>10} {conf:>5} {tol:>5.0%} | {rates[0][k]:>7.0%} {rates[1][k]:>9.0%} | "
                    f"{rates[2][k]:>7.0%} {rates[3][k]:>9.1%}{mark}"
                )
    single = []  # one repeat against one repeat, normalized: what CI (repeats=1) compares
    for b, c in null_pairs:
        (bt, br), (ct, cr) = _side(b), _side(c)
        single += [(ct[j] / cr[j]) / (bt[i] / br[i]) for i in bt for j in ct if i in br and j in cr]
    q = np.quantile(single, [0.001, 0.01, 0.05, 0.5, 0.95, 0.99, 0.999])
    print(
        "single-repeat normalized ratios between same-code runs (CI's point estimates): "
        + ", ".join(f"q{p:g}={v:.3f}" for p, v in zip((0.1, 1, 5, 50, 95, 99, 99.9), q, strict=True))
        + f" over {len(single)} pairs"
    )


def simulate(sds: list[float], repeats: int, slowdown: float, tolerances: list[float], n: int = 1000) -> None:
    """A model, not a measurement: normalized per-repeat values with lognormal noise of
    relative sd `sd` (what a machine of that noise would give), judged by the gate's own
    ratio_of_medians + verdict at the default confidence. Checked against the measured
    trial by giving it the measured sd."""
    rng = np.random.default_rng(0)
    print(f"simulated: {n} trials per arm, {repeats} repeats, slowdown {slowdown}, {DEFAULT_CONFIDENCE:g} interval")
    print(f"{'sd':>5} " + " ".join(f"{'tol ' + format(t, '.0%'):>13}" for t in tolerances))
    for sd in sds:
        cells = []
        for t in tolerances:
            hits = {"slow": 0, "same": 0}
            for arm, factor in (("slow", 1 / slowdown), ("same", 1.0)):
                for _ in range(n):
                    b = np.exp(rng.normal(0, sd, repeats))
                    c = factor * np.exp(rng.normal(0, sd, repeats))
                    interval = ratio_of_medians(b, c, confidence=DEFAULT_CONFIDENCE, resamples=500)
                    hits[arm] += verdict(interval, higher_is_better=True, tolerance=t) == "worse"
            cells.append(f"{hits['slow'] / n:>5.0%} / {hits['same'] / n:<5.1%}")
        print(f"{sd:>5.0%} " + " ".join(f"{c:>13}" for c in cells) + "   (recall / false alarms)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=10, help="trials per arm (slow and same)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--duration", type=float, default=1.5, help="measured seconds per cell")
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument("--slowdown", type=float, default=1.10)
    ap.add_argument("--tolerances", default="0,0.01,0.02,0.03,0.04,0.05,0.07,0.10")
    ap.add_argument("--confidences", default="0.9,0.95,0.99")
    ap.add_argument("--out", type=Path, default=None, help="keep run directories here (default: a temp dir)")
    ap.add_argument("--save", type=Path, default=Path("results/gate_trial.json"), help="raw values and verdicts")
    ap.add_argument("--analyze", type=Path, default=None, help="only analyse a saved trial file (no runs)")
    ap.add_argument("--simulate", default=None, help="comma list of per-repeat noise sds: model the gate, no runs")
    args = ap.parse_args()

    tolerances = [float(t) for t in args.tolerances.split(",")]
    confidences = [float(c) for c in args.confidences.split(",")]
    if args.simulate is not None:
        simulate([float(x) for x in args.simulate.split(",")], args.repeats, args.slowdown, tolerances)
        return
    if args.analyze is not None:
        analyze(args.analyze, tolerances, confidences)
        return
    out = args.out or Path(tempfile.mkdtemp(prefix="gate-trial-"))
    out.mkdir(parents=True, exist_ok=True)
    arms = list(itertools.islice(itertools.cycle([("slow", args.slowdown), ("same", 1.0)]), 2 * args.trials))
    trials = []
    started = time.monotonic()
    for i, (arm, slowdown) in enumerate(arms):
        base_dir = sweep(out, 1.0, args)
        cand_dir = sweep(out, slowdown, args)
        trial = {"arm": arm, "slowdown": slowdown, "baseline": str(base_dir), "candidate": str(cand_dir)}
        trial["values"] = {"baseline": values(base_dir), "candidate": values(cand_dir)}
        trial["verdicts"] = {
            f"{norm or 'raw'}/{conf}/{tol}": judge(base_dir, cand_dir, tol, conf, norm)["verdict"]
            for norm in (None, "synthetic")
            for conf in confidences
            for tol in tolerances
        }
        default = judge(base_dir, cand_dir, DEFAULT_TOLERANCE, DEFAULT_CONFIDENCE, "synthetic")
        trial["default"] = default
        trials.append(trial)
        print(
            f"trial {i + 1}/{len(arms)} {arm}: normalized ratio {default['ratio']:.3f} "
            f"[{default['low']:.3f}-{default['high']:.3f}] -> {default['verdict']} "
            f"({time.monotonic() - started:.0f} s)",
            flush=True,
        )
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text(
            json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "trials": trials}, indent=1)
        )

    print()
    analyze(args.save, tolerances, confidences)
    print(f"raw values and verdicts: {args.save}; run directories: {out}")


if __name__ == "__main__":
    main()
