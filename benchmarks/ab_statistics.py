"""Which anytime-valid statistic should the A/B decide by? Candidates simulated side by side on
the same blocks (no runs): the median's sign test (what decided until 2026-11-26) and clipped
bets at several clipping scales k (robust sds of the blocks before) and mixtures over bet
sizes (uniform, or Beta(a, 1) tilted towards bold bets), each judged after every block.

Two noise models: "normal", the unit test's model of the slicer's output (AR(1) machine
phases, slice noise, a bias per process: tests/harness/test_ab_sequential.py), and "tails",
the 2026-11-23 spin campaign's own blocks (each block's distance from its trial's median in
that trial's robust sds, resampled with random signs and scaled by a trial's robust sd:
benchmarks/gate_trial.py's measured_tails). Per row: identical code called ok, a 5 %
slowdown called a regression, and both errors with the truth on the boundary (any decision
is one), within `--blocks` blocks at tolerance 3 %.

    python benchmarks/ab_statistics.py --trials 1000 --blocks 20
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

VARIANTS = [("sign test", None, None)] + [
    (f"clipped k={k:g}, {'uniform' if a == 1 else f'Beta({a}, 1)'}", k, a) for a in (1, 2, 5) for k in (0.5, 1.0, 2.5)
]


def main() -> None:
    from gate_trial import measured_tails

    from harness.ab import sequential
    from tests.harness.test_ab_sequential import first_decisions, sign_sequences, simulated_ab

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--blocks", type=int, default=20)
    args = ap.parse_args()
    tolerance = 0.03
    edge = sequential.boundary(tolerance)
    residuals, scales, _ = measured_tails(ROOT / "benchmarks" / "data" / "ab_trial-campaign.json")

    def tails(rng: np.random.Generator, mu: float) -> np.ndarray:
        noise = rng.choice(residuals, (args.trials, args.blocks)) * rng.choice([-1, 1], (args.trials, args.blocks))
        return mu + rng.choice(scales, (args.trials, 1)) * noise

    def normal(rng: np.random.Generator, mu: float) -> np.ndarray:
        return simulated_ab(rng, mu, trials=args.trials, blocks=args.blocks)

    arms = {"same": 0.0, "5 %": math.log(1 / 1.05), "edge": edge}
    for name, model in (("normal", normal), ("tails", tails)):
        data = {arm: model(np.random.default_rng(3), mu) for arm, mu in arms.items()}
        print(f"{name}: {args.trials} A/Bs of {args.blocks} blocks; identical ok, 5 % regression, at the edge "
              "false regression / false ok")  # fmt: skip
        for label, k, a in VARIANTS:
            row = []
            for arm, x in data.items():
                if k is None:
                    regression, ok, _ = first_decisions(*sign_sequences(x, tolerance))
                else:
                    weights = sequential.BET_FRACTIONS ** (a - 1)
                    below, above = sequential.evidence(x, edge, k, weights / weights.sum())
                    needed = math.log(1 / sequential.DEFAULT_ALPHA)
                    regression, ok, _ = first_decisions(below >= needed, above >= needed)
                row.append(ok.mean() if arm == "same" else regression.mean())
                if arm == "edge":
                    row.append(ok.mean())
            print(f"  {label:>28}: ok {row[0]:.1%}, 5 % {row[1]:.1%}; edge {row[2]:.1%} / {row[3]:.1%}")


if __name__ == "__main__":
    main()
