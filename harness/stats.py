"""Statistics over measured numbers: drift slopes, medians, bootstrap intervals.

Repeats give a distribution and comparisons are made on ratios of medians with
bootstrap intervals, never on single numbers (DESIGN.md, measurement rules).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def drift_pct_per_min(times_s: Sequence[float], rates: Sequence[float]) -> tuple[float, float] | None:
    """Least-squares slope of `rates` against `times_s`, as % of the mean rate per minute,
    with its standard error in the same unit. None when there is too little to fit."""
    t = np.asarray(times_s, dtype=float)
    r = np.asarray(rates, dtype=float)
    if t.size < 3 or np.ptp(t) <= 0:
        return None
    mean = float(r.mean())
    if mean <= 0:
        return None
    from scipy.stats import linregress

    fit = linregress(t, r)
    scale = 60.0 * 100.0 / mean
    stderr = float(fit.stderr) if np.isfinite(fit.stderr) else float("nan")
    return float(fit.slope) * scale, stderr * scale


def summarize(values: Sequence[float]) -> dict[str, float]:
    """Median, min, max and relative spread of one metric over repeats."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size == 0:
        return {}
    median = float(np.median(v))
    return {
        "median": median,
        "min": float(v.min()),
        "max": float(v.max()),
        "n": float(v.size),
        "spread_pct": float(100.0 * (v.max() - v.min()) / abs(median)) if median else float("nan"),
    }
