"""How well does the USL fitted on a sweep's smaller worker counts predict its larger ones?

For every scaling group of a stored run (harness.analysis.scaling: cells differing only in
their worker count), the USL is fitted to the counts up to --fit-up-to, on the rate the run
compares the group by, and its prediction (with the 95 % band of the mean curve) is set
beside each larger count's measured median and range. Also printed: the fit on every count.

    python benchmarks/usl_holdout.py RUN_DIR [--fit-up-to 4]

The error is predicted / measured median - 1. A band covers where the mean rate lies, not
where a run lands: repeats scatter around it by the machine's noise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from harness.analysis import scaling, usl
from harness.runs.store import RunStore
from harness.runs.view import build_view


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--fit-up-to", type=int, default=4, help="fit the counts up to this one, predict the rest")
    args = parser.parse_args(argv)
    store = RunStore.open(args.run_dir)
    view = build_view(store.records(), store.meta())
    print(f"run {args.run_dir.name}: {view.cores} cores")
    for group in scaling.fits(view):
        print(f"\n{scaling.line(group)}")
        if group.rate is None:
            continue
        data = {n: cell.values(group.rate) for n, cell in group.members}
        held_in = {n: v for n, v in data.items() if n <= args.fit_up_to}
        held_out = {n: v for n, v in data.items() if n > args.fit_up_to}
        found = usl.fit(held_in, cores=view.cores)
        said = scaling.summary(scaling.ScalingGroup(**{**vars(group), "fit": found}))
        print(f"  fitted on {sorted(held_in)}: {said}")
        if not found.ok or not held_out:
            continue
        band = found.predict(sorted(held_out))
        print(
            f"  {'workers':>7}  {'predicted [95 % band]':>28}  {'measured median [min-max]':>30}  {'error':>7}  in band"
        )
        for i, n in enumerate(sorted(held_out)):
            values = np.asarray(held_out[n])
            median = float(np.median(values))
            low = band.low[i] if band.low is not None else np.nan
            high = band.high[i] if band.high is not None else np.nan
            error = 100.0 * (band.rate[i] / median - 1.0)
            inside = "yes" if low <= median <= high else "no"
            print(
                f"  {n:>7}  {band.rate[i]:>10.4g} [{low:.4g}-{high:.4g}]".ljust(40)
                + f"  {median:>10.4g} [{values.min():.4g}-{values.max():.4g}]".ljust(32)
                + f"  {error:>+6.0f} %  {inside}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
