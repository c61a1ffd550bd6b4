"""From a causal experiment's periods to each group's observations, one per round: its
slowed period against the mean of the free periods either side
(harness.causal.sensitivity.observation). The same functions serve the live experiment and
the tests' recorded periods.

**Through another group's calls.** With an I/O proxy every group whose calls tracked the
counter is read, and a slowed group is measured through the first of them that is not
itself (`through`).

**Rounds with too few reports.** A round whose three periods do not each hold
REPORTS_PER_PERIOD reports gives no observation: Coz emits no experiment whose progress
points were seen fewer than 5 times, since a rate read from two or three reports is as much
the reports' jitter as the program's speed. Such rounds are counted per group (`lost`): a
group that loses many is one whose slowing stalls the program's reports, and its verdict
says so (harness.causal.verdicts).

**A crowded machine.** On a shared machine the CPU a program gets changes by half from one
second to the next, and its throughput with it: on the project's 2-core VM at load 13 a
pipeline's free periods varied by 46 % (coefficient of variation), and its rate over its
**availability**, the share of the time its processes were runnable that they ran (the
kernel's schedstat: run time over run time plus run-queue wait; a stopped process is not
runnable, so the stops are in neither), varied by 14 %. So each period's rate is divided
by the program's availability over it, CPU-weighted over its groups: the comparison is
between rates at the same crowding. Two consequences:

- **The dose.** In debt mode a group is stopped s seconds for the s' it ran; on a machine
  that gives it a share a of a CPU while runnable, a stop of s seconds costs it only a * s
  of running, so its CPU falls by a * s / (a * s + s'), not by s / (s + s'): a critical
  pipeline stage at a = 0.49 kept 0.62 of its CPU, not 0.5, and read +0.71 where the dose
  it got reads +0.94. The observation divides by that dose (harness.causal.experiment
  measures it per period; duty mode's held share already is one).
- **Crowding.** A group whose stops themselves change the program's availability (a busy
  poller stopped frees a core for the workers; a process woken after each stop preempts
  them) has a rate change that the division hides. The median ratio of the program's
  availability in the group's slowed periods to the free ones either side is kept
  (`crowding`), and a ratio far from 1 leaves the group's verdict unknown
  (harness.causal.verdicts).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.causal.cadence import REPORTS_PER_PERIOD
from harness.causal.periods import CONTROL, FREE, Period
from harness.causal.sensitivity import observation


def availability(period: Period) -> float | None:
    """The share of its runnable time the program's processes ran over the period (1 for a
    period recorded without run-queue times: no correction); None when nothing ran."""
    if not period.queued_cores:
        return 1.0
    ran = sum(v for g, v in period.cpu_cores.items() if g != CONTROL)
    queued = sum(v for g, v in period.queued_cores.items() if g != CONTROL)
    return ran / (ran + queued) if ran + queued > 0 else None


def through(period: Period) -> str | None:
    """Which proxy group's calls measure a slowed period and the free ones beside it: the
    first that is not the group slowed (a stage's own calls pause with its stops and resume
    in a burst that refills its queue, which is its buffer, not the program's rate: a slack
    producer read +0.34 through its own writes); None: the headline rate."""
    if not period.rates:
        return None
    return next((g for g in period.rates if g != period.group), next(iter(period.rates)))


def through_itself(periods: Sequence[Period]) -> set[str]:
    """The groups measured through their own calls (no other group's tracked the counter)."""
    return {p.group for p in periods if p.group != FREE and p.rates and through(p) == p.group}


def _triples(periods: Sequence[Period]):
    for before, period, after in zip(periods, periods[1:], periods[2:], strict=False):
        if period.group != FREE and before.group == FREE and after.group == FREE and after.ended:
            yield before, period, after


def observations(
    periods: Sequence[Period], default_fraction: float
) -> tuple[dict[str, list[float | None]], dict[str, tuple[int, int]]]:
    """({group: observations}, {group: (rounds lost, rounds)}), over every slowed period
    closed between two closed free ones."""
    values: dict[str, list[float | None]] = {}
    lost: dict[str, tuple[int, int]] = {}
    for before, period, after in _triples(periods):
        n_lost, n = lost.get(period.group, (0, 0))
        counted = (before, period, after)
        source = through(period)
        raw = [(p.rates.get(source), p.counts.get(source, 0)) if source else (p.rate, p.reports) for p in counted]
        rates = [r / a if r and (a := availability(p)) else None for (r, _), p in zip(raw, counted, strict=True)]
        if any(count < REPORTS_PER_PERIOD for _, count in raw) or None in rates:
            lost[period.group] = (n_lost + 1, n + 1)
            continue
        lost[period.group] = (n_lost, n + 1)
        free = (rates[0] + rates[2]) / 2  # type: ignore[operator]
        # a group that used no CPU in debt mode was never stopped: its slowdown is the nominal one
        dose = next((d for d in (period.dose, period.fraction) if d is not None), default_fraction)
        values.setdefault(period.group, []).append(observation(free, rates[1], dose))  # type: ignore[arg-type]
    return values, lost


def crowding(periods: Sequence[Period]) -> dict[str, float]:
    """Each group's median ratio of the program's availability in its slowed periods to the
    mean of the free periods either side."""
    ratios: dict[str, list[float]] = {}
    for before, period, after in _triples(periods):
        a, s, b = availability(before), availability(period), availability(after)
        if a and s and b:
            ratios.setdefault(period.group, []).append(s / ((a + b) / 2))
    return {g: float(np.median(r)) for g, r in ratios.items()}


def fewest_reports(periods: Sequence[Period], round_index: int) -> int | None:
    """The fewest reports one period of the round saw (the free period that opens the next
    round belongs to it too); None when the round has no closed period."""
    seen = [p.reports for p in periods if p.round == round_index and p.ended]
    return min(seen) if seen else None
