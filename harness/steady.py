"""When a cell's rate has settled: the start of its measured window, found, not assumed.

A cell's first seconds are a transient: processes start, kernels compile, caches fill, a
pool of 128 workers reaches its rhythm, and the rate climbs. A fixed warm-up guesses how
long that takes; this rule watches. During warm-up the probe takes the rate of the suite's
finest headline counter every period; once the last WINDOW rates show no rise (the
least-squares line through them climbs by at most TOLERANCE of their mean across the
window, or its rise is not significant) the rate has settled and measurement starts. A
falling rate does not hold measurement back: a decline that lasts is DRIFT's business,
and on a shared machine short swings both ways are noise. The user's `--warmup` is the
floor; a cap ends the wait for a rate that keeps climbing, and the record says which it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

PERIOD_S = 0.5  # one rate per half second: a few seconds of window at most ...
MIN_PERIOD_S = 0.1  # ... or a tenth of a short measured window, not less than this
WINDOW = 6  # rates judged together (3 s at the full period)
TOLERANCE = 0.10  # a rise of at most 10 % across the window is no rise
SIGNIFICANCE = 0.05  # nor is a rise the window's noise cannot tell from none (one-sided)
DEFAULT_CAP_S = 10.0
MODES = ("auto", "off")


@dataclass(frozen=True)
class Steady:
    """Auto warm-up: measurement starts once settled (at least `floor_s`, at most `cap_s`)."""

    floor_s: float = 0.0
    cap_s: float = DEFAULT_CAP_S
    period_s: float = PERIOD_S
    window: int = WINDOW
    tolerance: float = TOLERANCE

    @classmethod
    def for_window(cls, floor_s: float, cap_s: float, duration_s: float | None) -> Steady:
        """The rule for a measured window of `duration_s`: a 0.3 s cell is not kept 3 s in
        warm-up; its rates are taken every tenth of its window instead."""
        period = PERIOD_S if duration_s is None else min(PERIOD_S, max(MIN_PERIOD_S, duration_s / 10))
        return cls(floor_s=floor_s, cap_s=max(cap_s, floor_s), period_s=period)


def trend(rates: Sequence[float]) -> tuple[float, float] | None:
    """(the least-squares line's change across the rates as a share of their mean, the
    one-sided p-value of a rise); None when there are too few rates or nothing happened."""
    r = np.asarray(rates, dtype=float)
    if r.size < 3 or r.mean() <= 0:
        return None
    if np.ptp(r) == 0:
        return 0.0, 1.0
    from scipy.stats import linregress

    fit = linregress(np.arange(r.size), r, alternative="greater")
    p_rise = float(fit.pvalue) if np.isfinite(fit.pvalue) else 1.0
    return float(fit.slope * (r.size - 1) / r.mean()), p_rise


def settled(rates: Sequence[float], rule: Steady) -> bool:
    """Whether the last `rule.window` rates have stopped rising: a rise within the
    tolerance, or one the window's noise cannot tell from none."""
    if len(rates) < rule.window:
        return False
    fit = trend(rates[-rule.window :])
    return fit is not None and (fit[0] <= rule.tolerance or fit[1] > SIGNIFICANCE)
