"""How often do the USL fit's intervals hold the truth? Synthetic draws of known curves.

Each draw: rates of a known USL curve at some worker counts, three repeats with lognormal
noise (a shared machine's noise is relative), fitted by harness.analysis.usl.fit. Printed per
scenario: the share of draws whose 95 % intervals hold the true sigma and kappa, whose
kappa interval holds 0 (Amdahl's law when the truth is 0), and of the draws that quote a
peak, the share holding the true one. `--bootstrap` swaps in simpler bootstraps to show
what each of the module's two corrections buys:

    python benchmarks/usl_coverage.py [--draws 200] [--resamples 400] [--bootstrap module plain inflate]

plain: each count's repeats resampled as they are; inflate: their residuals spread by
sqrt(n / (n - 1)); module: that and the floor at the pooled scatter (harness.analysis.usl).
All three widen sigma's interval by Amdahl's refits where kappa's holds 0 (usl.fit does).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from harness.analysis import usl

SCENARIOS = (  # sigma, kappa, counts, noise
    (0.05, 0.002, [1, 2, 4, 8, 16, 32], 0.05),
    (0.1, 0.0, [1, 2, 4, 8, 16, 32], 0.05),
    (0.05, 0.01, [1, 2, 3, 4, 6, 8], 0.05),
    (0.3, 0.02, [1, 2, 3, 4], 0.03),
)
MODULE = usl._bootstrap


def simpler(inflate: bool):
    """A bootstrap without the module's floor (and without its spread, unless `inflate`)."""

    def bootstrap(n, logs, residuals, resamples, seed, coherency=True):
        rng = np.random.default_rng(seed)
        drawn = []
        for v, r in zip(logs, residuals, strict=True):
            source = r * (math.sqrt(len(r) / (len(r) - 1)) if inflate else 1.0)
            drawn.append(np.exp(v.mean() + rng.choice(source, size=(resamples, len(v)))))
        counts = np.concatenate([np.full(len(v), c) for c, v in zip(n, logs, strict=True)])
        found = usl._solve(counts, np.concatenate(drawn, axis=1), float(n.max()), coherency)
        return found[np.all(np.isfinite(found), axis=1)]

    return bootstrap


def scenario(sigma: float, kappa: float, counts: list[int], noise: float, draws: int, resamples: int) -> str:
    rng = np.random.default_rng(1)
    truth = usl.Usl(100.0, sigma, kappa)
    held = {"sigma": 0, "kappa": 0, "zero": 0, "peak": 0, "quoted": 0, "no fit": 0}
    start = time.perf_counter()
    for i in range(draws):
        data = {n: list(truth.rate(n) * np.exp(rng.normal(0.0, noise, 3))) for n in counts}
        found = usl.fit(data, resamples=resamples, seed=i)
        if not found.ok:
            held["no fit"] += 1
            continue
        held["sigma"] += found.sigma.holds(sigma)
        held["kappa"] += found.kappa.holds(kappa)
        held["zero"] += found.kappa.holds(0.0)
        if found.peak is not None and truth.peak is not None:
            held["quoted"] += 1
            held["peak"] += found.peak.holds(truth.peak)
    ms = 1000.0 * (time.perf_counter() - start) / draws
    return (
        f"| {sigma} | {kappa} | {', '.join(map(str, counts))} | {noise:.0%} | {held['sigma'] / draws:.3f} "
        f"| {held['kappa'] / draws:.3f} | {held['zero'] / draws:.3f} | {held['peak']}/{held['quoted']} "
        f"| {held['no fit']} | {ms:.0f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--resamples", type=int, default=usl.RESAMPLES)
    parser.add_argument("--bootstrap", nargs="+", default=["module"], choices=["module", "plain", "inflate"])
    args = parser.parse_args(argv)
    for name in args.bootstrap:
        usl._bootstrap = MODULE if name == "module" else simpler(inflate=name == "inflate")
        print(f"\n{name}: {args.draws} draws, {args.resamples} resamples a fit, 3 repeats a count\n")
        print(
            "| sigma | kappa | counts | noise | sigma held | kappa held | kappa's holds 0 | peak held/quoted | no fit | ms a fit |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for sigma, kappa, counts, noise in SCENARIOS:
            print(scenario(sigma, kappa, counts, noise, args.draws, args.resamples), flush=True)
    usl._bootstrap = MODULE
    return 0


if __name__ == "__main__":
    sys.exit(main())
