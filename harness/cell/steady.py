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
# nor is a rise the window's noise cannot tell from none: the slope's t statistic below the
# one-sided 5 % point of Student's t with WINDOW - 2 degrees of freedom
# (scipy.stats.t.ppf(0.95, 4) = 2.1318). A constant, not scipy: the probe runs in the cell's
# main process, which on an oversubscribed machine may get 1 % of a core, and importing
# scipy.stats there took a minute of its warm-up.
T_CRITICAL = 2.1318
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
    """(the least-squares line's change across the rates as a share of their mean, the t
    statistic of its slope); None when there are too few rates or nothing happened."""
    r = np.asarray(rates, dtype=float)
    if r.size < 3 or r.mean() <= 0:
        return None
    x = np.arange(r.size, dtype=float)
    x -= x.mean()
    slope = float(np.dot(x, r - r.mean()) / np.dot(x, x))
    residuals = r - r.mean() - slope * x
    dof = r.size - 2
    se = float(np.sqrt(np.dot(residuals, residuals) / dof / np.dot(x, x)))
    t = slope / se if se > 0 else (0.0 if slope == 0 else float("inf") * np.sign(slope))
    return slope * (r.size - 1) / float(r.mean()), float(t)


def settled(rates: Sequence[float], rule: Steady) -> bool:
    """Whether the last `rule.window` rates have stopped rising: a rise within the
    tolerance, or one the window's noise cannot tell from none."""
    if len(rates) < rule.window:
        return False
    fit = trend(rates[-rule.window :])
    return fit is not None and (fit[0] <= rule.tolerance or fit[1] <= T_CRITICAL)
