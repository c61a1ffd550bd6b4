"""A group's sensitivity and its interval, from the rounds of a causal experiment.

Each round runs one period with nothing slowed and one with each group slowed, in random
order, back to back: the machine's slow phases (seconds long) hit a round's periods alike,
as they hit an A/B's pair of slices. A round gives each group one observation,

    s = (1 - rate_slowed / rate_free) / f,

the relative throughput loss per unit of slowdown, with f the share of its period the
group was actually held stopped (measured by the stopper, not the one asked for). About 1:
the group is on the critical path (the program goes as fast as it does); about 0: it has
slack; below 0: stopping it speeds the program up (it competes for cores, locks or the
GIL). Rounds, not periods, are the independent unit, so the interval is the A/B's
anytime-valid one for the median (harness.ab.sequential.median_sequence: a sign test,
no model of the noise, safe to look at after every round, so the experiment may stop as
soon as every interval is narrow enough). The mean and its t-mixture interval are kept
beside it.

What speeding the group up would buy, to first order: a group whose time per unit of work
falls by a share x raises the throughput by about s * x (for small x; a group with slack
buys nothing however much faster it gets).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.ab.sequential import DEFAULT_ALPHA, Interval, confidence_sequence, median_sequence, medians_to_decide

# A group whose interval lies within these bounds reads as what the bound says
CRITICAL = 0.7  # the interval's low end at or above: on the critical path
SLACK = 0.2  # the interval within +-this: slack (10 % faster or slower changes the throughput by 2 % at most)
# the interval's high end below: slowing it speeds the program up, by more than slack's margin
# (a slack consumer on a crowded 2-core VM read -0.12 [-0.26, -0.02]: the cores its stops freed)
COMPETES = -SLACK


def observation(rate_free: float, rate_slowed: float, fraction: float) -> float | None:
    """One round's sensitivity of one group; None when a rate or the slowdown is missing."""
    if not rate_free or rate_free <= 0 or rate_slowed is None or not fraction or fraction <= 0:
        return None
    return (1.0 - rate_slowed / rate_free) / fraction


@dataclass(frozen=True)
class Sensitivity:
    group: str
    median: Interval  # the decision's estimate and interval
    mean: Interval  # reported beside it

    @property
    def halfwidth(self) -> float:
        return (self.median.high - self.median.low) / 2

    @property
    def reading(self) -> str:
        """critical / slack / competes / between / unknown, from where the interval lies
        alone; the verdict the user sees is this, gated by the evidence
        (harness.causal.verdicts)."""
        low, high = self.median.low, self.median.high
        if not (math.isfinite(low) and math.isfinite(high)):
            return "unknown"
        if high < COMPETES:
            return "competes"
        if low >= CRITICAL:
            return "critical"
        if -SLACK <= low and high <= SLACK:
            return "slack"
        return "between"

    def gain_pct(self, faster: float = 0.1) -> tuple[float, float, float]:
        """Throughput gain (%) of making the group `faster` (a share of its time) faster,
        to first order: estimate, low, high (a negative sensitivity buys nothing: 0)."""
        m = self.median
        return tuple(100.0 * faster * max(0.0, v) for v in (m.estimate, m.low, m.high))  # type: ignore[return-value]

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "n": self.median.n,
            "estimate": self.median.estimate,
            "low": self.median.low,
            "high": self.median.high,
            "mean": self.mean.estimate,
            "mean_low": self.mean.low,
            "mean_high": self.mean.high,
            "reading": self.reading,
        }


def estimate(group: str, values: Sequence[float | None], alpha: float = DEFAULT_ALPHA) -> Sensitivity:
    kept = [v for v in values if v is not None and math.isfinite(v)]
    return Sensitivity(group, median_sequence(kept, alpha), confidence_sequence(kept, alpha))


def narrow_enough(found: Sequence[Sensitivity], width: float, alpha: float = DEFAULT_ALPHA) -> bool:
    """Every group's interval is at most +-width (and has the rounds a decision needs)."""
    need = medians_to_decide(alpha)
    return bool(found) and all(s.median.n >= need and s.halfwidth <= width for s in found)


def beyond_every_verdict(found: Sensitivity) -> bool:
    """The interval lies wholly between slack's range and critical's (+0.46 [..] +0.69): it
    is anytime-valid, so while it holds the median no later round can honestly move it into
    either: the group partly limits, whatever more rounds say (a verdict reached later would
    be the interval's own error)."""
    return SLACK < found.median.low and found.median.high < CRITICAL


def settled(found: Sensitivity, width: float, alpha: float = DEFAULT_ALPHA) -> bool:
    """Narrow enough and in one verdict's range, or narrow and beyond every verdict's: the
    group needs no more rounds. A narrow interval that straddles a bound (+0.72 [+0.64,
    +0.79] against critical's 0.7) is measured on while the budget lasts: more rounds may
    yet put it on one side."""
    if not narrow_enough([found], width, alpha):
        return False
    return found.reading in ("critical", "slack", "competes") or beyond_every_verdict(found)


def could_settle(
    values: Sequence[float | None],
    rounds_to_come: int,
    width: float,
    wanted: Sequence[str],
    alpha: float = DEFAULT_ALPHA,
) -> bool:
    """Whether a group could still settle into one of the `wanted` readings (critical,
    slack, competes, between) in `rounds_to_come` more rounds, were they like the rounds so
    far: the interval of n + rounds_to_come points spread as the observations' quantiles
    (the sign test's interval narrows with n over the same spread). Only a narrow
    interval is projected; a wide one could still settle (True): early rounds' tails make
    a wide interval's spread a poor guide (a pipeline's main stage, critical by
    construction, read [-0.31, +1.18] after 16 rounds and [+0.84, +1.09] after 37; projected
    from the 16 it was futile). What a wrong projection costs is a verdict not reached
    (unknown), never a wrong one: a futile experiment stops with its intervals as they are
    (harness.causal.experiment)."""
    kept = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if not narrow_enough([estimate("", kept.tolist(), alpha)], width, alpha):
        return True
    total = kept.size + max(0, rounds_to_come)
    projected = estimate("", np.quantile(kept, (np.arange(total) + 0.5) / total).tolist(), alpha)
    return settled(projected, width, alpha) and projected.reading in wanted


def rounds_alone(left_s: float, period_s: float) -> int:
    """The rounds `left_s` seconds hold for one group measured alone (two periods a round):
    the most any open group could still get."""
    return int(max(0.0, left_s) // (2 * period_s))


def futile(
    found: Sequence[Sensitivity],
    values: dict[str, list[float | None]],
    rounds_to_come: int,
    width: float,
    wanted: Sequence[str],
    alpha: float = DEFAULT_ALPHA,
) -> bool:
    """Some group is still open and none could settle into a `wanted` reading in
    `rounds_to_come` rounds (could_settle); with nothing wanted, never."""
    open_ = [s.group for s in found if not settled(s, width, alpha)]
    return bool(wanted) and bool(open_) and not any(
        could_settle(values.get(g, []), rounds_to_come, width, wanted, alpha) for g in open_
    )
