"""How soon could any A/B decide on this machine?  A bound from a gate campaign's own blocks.

A block of `harness ab` is one launch of each side, a discarded warm-up pair and k measured
pairs; its value (the mean log-ratio of its pairs, per CPU second) varies for two reasons:
the pairs' own noise (the machine's speed changes from second to second, and a pair's two
slices see different moments of it) and the launch (each fresh process has its own speed:
its layout, its hash seed). With sigma_w the sd of one pair's log-ratio about its block's
mean and sigma_b the sd of the blocks' means beyond what their pairs explain,

    var(block) = sigma_b^2 + sigma_w^2 / k,    a block lasts  a + b k  seconds

(a: the launches and the warm-up pair, b: one measured pair). In a budget B the best
design runs k* = sqrt(a sigma_w^2 / (b sigma_b^2)) pairs a block, and the mean of the
blocks has s^2 = var(block) (a + b k) / B. Against that, the best test there is for
identical code (the variance known, the sample size fixed, no looks before the end: every
anytime-valid test, the harness's included, needs more) calls it "ok" at a tolerance d
(log(1 - d) on the log scale) when |mean| + z_(1-alpha) s < d, which happens with
probability 2 Phi(d / s - z) - 1. This script estimates sigma_w, sigma_b, a and b from a
campaign file (`gate_trial.py --save`), per cell, from every trial's blocks (each trial's
mean taken out, so planted arms count too), and prints that probability at the gate's
target budgets and the budget the best test would need for 95 %.

    python benchmarks/gate_bound.py benchmarks/data/ab_trial-idle-2026-11-27.json

A bound, computed from measured spreads, not a measurement of any A/B; the campaign beside
it is the measurement.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from scipy.stats import norm

MAX_PAIRS = 50.0  # no launch bias at all makes one endless block the best design: say 50 pairs


def pair_log_ratios(block: dict) -> list[float]:
    """The measured pairs' log-ratios (candidate / base) per CPU second, as the A/B reads them
    since 2026-11-26; on the wall clock for files recorded before (no window CPU kept)."""
    out = []
    for pair in block["pairs"]:
        base, cand = pair["base"], pair["cand"]
        if pair["warmup"] or not (base.get("rate") and cand.get("rate")):
            continue
        if base.get("window_cpu_s") and cand.get("window_cpu_s"):
            rates = [s["rate"] * s["window_s"] / s["window_cpu_s"] for s in (base, cand)]
        else:
            rates = [base["rate"], cand["rate"]]
        out.append(math.log(rates[1] / rates[0]))
    return out


def spreads(trials: list[dict]) -> dict[str, float]:
    """sigma_w, sigma_b (method of moments, pooled over trials), and a block's seconds as
    a + b k: b the median measured pair's two slices, a the median rest of a block (its
    launches, its warm-up pair, the slicer's own time between slices)."""
    within_ss, within_df, between = 0.0, 0, []
    pair_s, overhead = [], []
    for trial in trials:
        blocks = [(pair_log_ratios(b), b) for b in trial["cell"].get("ab_blocks", [])]
        blocks = [(r, b) for r, b in blocks if r]
        if len(blocks) < 3:
            continue
        means = np.array([np.mean(r) for r, _ in blocks])
        for ratios, block in blocks:
            if len(ratios) > 1:
                within_ss += float(np.sum((np.array(ratios) - np.mean(ratios)) ** 2))
                within_df += len(ratios) - 1
            measured = [p for p in block["pairs"] if not p["warmup"]]
            pair_s.extend(p["base"]["length_s"] + p["cand"]["length_s"] for p in measured)
            overhead.append(block["elapsed_s"] - sum(p["base"]["length_s"] + p["cand"]["length_s"] for p in measured))
        k = np.array([len(r) for r, _ in blocks])
        between.append((means - means.mean(), k))
    if not within_df:
        raise SystemExit("error: no block has two measured pairs: the pairs' noise cannot be told from the launches'")
    sigma_w2 = within_ss / within_df
    # var(block mean) = sigma_b^2 + sigma_w^2 / k: pooled over trials (n - 1 each for its own mean)
    dev2 = sum(float(np.sum(d**2)) for d, _ in between)
    df = sum(len(d) - 1 for d, _ in between)
    explained = sum(float(np.sum(sigma_w2 / k)) * (len(k) - 1) / len(k) for _, k in between)
    sigma_b2 = max((dev2 - explained) / df, 0.0)
    return {
        "sigma_w": math.sqrt(sigma_w2), "sigma_b": math.sqrt(sigma_b2), "a": float(np.median(overhead)),
        "b": float(np.median(pair_s)), "blocks": len(overhead), "trials": len(between),
    }  # fmt: skip


def best_design(sp: dict[str, float], budget_s: float) -> tuple[float, float]:
    """(k*, s) for the budget: the pairs per block that minimise the mean's sd, and that sd."""
    a, b, w2, b2 = sp["a"], sp["b"], sp["sigma_w"] ** 2, max(sp["sigma_b"] ** 2, 1e-12)
    k = min(max(math.sqrt(a * w2 / (b * b2)), 1.0), MAX_PAIRS)
    var = (b2 + w2 / k) * (a + b * k) / budget_s
    return k, math.sqrt(var)


def p_ok(s: float, tolerance: float, alpha: float) -> float:
    d = -math.log1p(-tolerance)
    return max(0.0, 2 * norm.cdf(d / s - norm.ppf(1 - alpha)) - 1)


def budget_for(sp: dict[str, float], tolerance: float, alpha: float, share: float) -> float:
    """The budget in which the best test calls identical code ok with probability `share`."""
    d = -math.log1p(-tolerance)
    s_needed = d / (norm.ppf(1 - alpha) + norm.ppf((1 + share) / 2))
    _, s_at_1 = best_design(sp, 1.0)
    return (s_at_1 / s_needed) ** 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", type=Path, help="gate_trial.py --save files")
    ap.add_argument("--tolerance", type=float, default=0.03)
    ap.add_argument("--alpha", type=float, default=0.05, help="each error's rate (the A/B's default)")
    ap.add_argument("--budgets", default="90,120,180")
    args = ap.parse_args()
    trials = [t for f in args.files for t in json.loads(f.read_text())["trials"] if "cell" in t]
    budgets = [float(b) for b in args.budgets.split(",")]
    print(f"tolerance {args.tolerance:.1%}, alpha {args.alpha}; the best fixed test for identical code (a bound)")
    rng = np.random.default_rng(0)
    for cell in sorted({t["cell_name"] for t in trials}):
        own = [t for t in trials if t["cell_name"] == cell]
        sp = spreads(own)
        # the trials as the unit of resampling: how firm the needed budget is
        again = [budget_for(spreads(list(rng.choice(own, len(own)))), args.tolerance, args.alpha, 0.95) for _ in range(200)]
        designs = {b: best_design(sp, b) for b in budgets}
        line = ", ".join(
            f"{b:.0f} s: k* {k:.1f}, sd {sd:.4f}, ok {p_ok(sd, args.tolerance, args.alpha):.0%}" for b, (k, sd) in designs.items()
        )
        print(
            f"{cell}: {sp['trials']} trials, {sp['blocks']} blocks; pair sd {sp['sigma_w']:.4f}, launch sd "
            f"{sp['sigma_b']:.4f}; a block {sp['a']:.1f} s + {sp['b']:.2f} s a pair\n  {line}\n"
            f"  95 % ok needs about {budget_for(sp, args.tolerance, args.alpha, 0.95):.0f} s "
            f"[{np.percentile(again, 5):.0f}, {np.percentile(again, 95):.0f}] (90 % of 200 resamples of the trials)"
        )


if __name__ == "__main__":
    main()
