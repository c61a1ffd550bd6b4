"""The program's report cadence, and the period it asks for.

A period's rate is read from the program's own reports of its counter (or, with an I/O
proxy, from the ticks at which a group's system calls moved): the rate between the first
and the last report inside the period's measured window, on the child's clock. A trainer
that logs every 0.5 s gives a 0.5 s period at most one report, and no rate at all; the
interpolated counter the first causal profiles read there turned a bottleneck into
"slack" (issue 43). So the period is set by the cadence:

- **The cadence** is the gap between reports as a random moment sees it (the length-biased
  mean, sum of squared gaps over their sum): a program that reports every 0.5 s has a
  cadence of 0.5 s; one that prints bursts of lines every 2 s has one near 2 s, however many
  lines a burst holds, since a random moment almost always falls in the long gap.
- **A period must hold REPORTS_PER_PERIOD reports** in its measured window: Coz's rule for an
  experiment (a progress point must be seen at least ExperimentTargetDelta = 5 times), with
  MARGIN reports more at the start, so that a report's jitter does not leave one period one
  short.
- **The period adapts between rounds, as Coz's experiment length does**: a round whose
  fewest reports in one period fell below REPORTS_PER_PERIOD makes the next round's periods
  twice as long; one whose fewest were more than twice that makes them half as long, never
  below the floor (the user's `--period`) nor below what the cadence seen so far asks for.

The functions here are pure: the experiment calls them on its live series, the tests on
recorded ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

REPORTS_PER_PERIOD = 5  # Coz's ExperimentTargetDelta: fewer, and the next period is twice as long
MARGIN = 1  # reports planned beyond that at the start
CADENCE_REPORTS = 4  # reports (3 gaps) before a cadence is trusted


@dataclass(frozen=True)
class Report:
    """The counter as the program reported it: its value, on the child's clock."""

    t: float
    count: float


def reports_of(series: Sequence[tuple[float, float]]) -> list[Report]:
    """The moments the counter changed, from a (time, cumulative count) series sampled more
    often than it changes (the probe's samples, every 50 ms): each change is one report,
    timed by the sample that first showed it."""
    out: list[Report] = []
    last: float | None = None
    for t, count in series:
        if last is None or count != last:
            if last is not None:
                out.append(Report(t, count))
            last = count
    return out


def cadence(reports: Sequence[Report]) -> float | None:
    """The gap between reports as a random moment sees it (sum of squares over sum: the
    inspection paradox turned to use); None before CADENCE_REPORTS reports."""
    if len(reports) < CADENCE_REPORTS:
        return None
    gaps = [b.t - a.t for a, b in zip(reports, reports[1:], strict=False) if b.t > a.t]
    total = sum(gaps)
    return sum(g * g for g in gaps) / total if total > 0 else None


def cadence_at_least(reports: Sequence[Report], now: float) -> float:
    """A lower bound on the cadence while too few reports have come: the longest gap so far,
    the open one (since the last report) included."""
    times = [r.t for r in reports]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    return max([*gaps, now - times[-1] if times else now, 0.0])


def period_for(cadence_s: float, settle_s: float, floor_s: float) -> float:
    """The shortest period whose measured window holds REPORTS_PER_PERIOD + MARGIN reports."""
    return max(floor_s, settle_s + (REPORTS_PER_PERIOD + MARGIN) * cadence_s)


def next_period(period_s: float, fewest: int, floor_s: float, cadence_s: float | None, settle_s: float) -> float:
    """Coz's rule, between rounds: `fewest` reports in one period of the round just run
    (its slowed periods count: a critical group slowed halves a counter that reports every
    N items). Fewer than REPORTS_PER_PERIOD: twice as long. More than twice that: half as
    long, if half still holds the cadence's reports and the floor."""
    if fewest < REPORTS_PER_PERIOD:
        return 2 * period_s
    if fewest > 2 * REPORTS_PER_PERIOD:
        half = period_s / 2
        need = floor_s if cadence_s is None else max(floor_s, settle_s + REPORTS_PER_PERIOD * cadence_s)
        if half >= need:
            return half
    return period_s


def window_rate(reports: Sequence[Report], since: float, until: float) -> tuple[float | None, int]:
    """(the rate between the first and the last report inside [since, until], the number
    of reports there). Bracketing by reports, not interpolating the counter at the window's
    edges: a counter that steps every 0.5 s, cut at arbitrary moments, reads a step or none,
    while two reports 2 s apart carry the work done between them to within the sampling's
    50 ms. None with fewer than two reports."""
    inside = [r for r in reports if since <= r.t <= until]
    if len(inside) < 2 or inside[-1].t <= inside[0].t:
        return None, len(inside)
    rate = (inside[-1].count - inside[0].count) / (inside[-1].t - inside[0].t)
    return (rate if math.isfinite(rate) else None), len(inside)
