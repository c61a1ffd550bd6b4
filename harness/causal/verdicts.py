"""A group's verdict, gated by the evidence behind it: critical, slack or competes only when
its interval is narrow and no caveat of the data stands against it; otherwise `unknown`,
with the reason in one line.

The interval alone (harness.causal.sensitivity.Sensitivity.reading) says where the median
sensitivity lies. It assumes every period's rate measures the program's throughput and
every slowed period slowed its group as asked; the caveats below are the ways that failed
on real programs (issue 43), and each turns the verdict to `unknown` (Pinpoint's three-way
decision: "unknown" is an answer, a wrong verdict the worst one):

Caveats of the whole experiment (every group unknown, no bottleneck named):
- free periods without progress: PHASED of the periods with nothing slowed saw no report
  (a program that works in phases longer than a period, or reports too seldom for it);
- the I/O proxy drifted: its calls per unit of the program's counter differ between the
  experiment's halves (harness.causal.proxy).

Caveats of one group:
- under IDLE_CORES of a core with nothing slowed: debt mode hardly stops it, and its
  reading is the machine's noise;
- its stops took a share of its CPU (the dose; harness.causal.rounds) far from the fraction
  asked (outside HELD_WITHIN times it): a crowded machine stretched or gave back its stops;
- too few rounds for an interval (the sign test needs 7), or rounds lost: a fifth of its
  rounds had a period with fewer reports than the cadence rule asks (THIN), and it reads
  below critical (the rounds lost are those whose slowing cut the reports most: without
  them a critical reading only understates, any other may be a critical group's);
- through itself: the I/O proxy was the group's own calls (no other group's tracked the
  counter), and it reads below critical: a slack producer's writes pause with its stops and
  catch up after, and read +0.31 [+0.20, +0.50];
- crowding: the program's availability (harness.causal.rounds) in the group's slowed
  periods differs from the free ones' by more than CROWDING either way: its stops change
  the CPU the others get (a poller stopped frees a core), which the rates, divided by
  availability, no longer show;
- given back: its stops took a dose d of its CPU, yet it kept much more than 1 - d of it
  while waiting on no other process, and it reads slack or competes: the slowdown did not
  happen (the scheduler gave the stops back, or the cores are the limit), so neither can be
  told (a reading in between is unknown by its interval; a critical one stands: the truth
  is higher still); and whatever its use of the cores and its waits, a group that reads
  competes yet kept that much of its CPU: its stops freed nothing for the rest to compete
  for (two Ray Players that catch up after each stop read competes -0.40 [-0.49, -0.25],
  having kept 1.22 of their CPU: the calibration campaign's one wrong verdict);
- the interval: wider than +-width, or narrow but in no verdict's range (between slack and
  critical, or between slack and competes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from harness.ab.sequential import medians_to_decide
from harness.causal.sensitivity import Sensitivity

PHASED = 0.1  # this share of free periods without a report: the rates do not hold
IDLE_CORES = 0.01
HELD_WITHIN = (0.5, 1.5)  # the share held stopped, over the fraction asked, must lie within
THIN = 0.2  # a group may lose this share of its rounds to periods with too few reports
CROWDING = 1.33  # availability in its slowed periods over the free ones', beyond this or below its inverse
GIVEN_BACK = 0.2  # CPU kept above 1 - dose + this, waiting on nothing: the cores are the limit
WAITING = 0.5  # a group waiting on another process this share of its time has slack to catch up in
MEANING = {
    "critical": "on the critical path: the program goes as fast as it does",
    "slack": "has slack: speeding it up buys nothing",
    "competes": "slowing it speeds the program up: it competes for cores, locks or the GIL",
}


@dataclass(frozen=True)
class Evidence:
    """What the experiment saw, beside the intervals: the caveats are read from it."""

    fraction: float
    width: float
    free_without_progress: tuple[int, int]  # (free periods with no report, free periods)
    proxy_drifted: bool = False
    utilisation: Mapping[str, float] | None = None  # cores with nothing slowed, by group
    held: Mapping[str, float] | None = None  # the share of its busy time each group was held stopped (median)
    kept: Mapping[str, float] | None = None  # CPU kept in its slowed periods over the free ones
    waiting: Mapping[str, float] | None = None  # the share of its time it waits on another process
    lost: Mapping[str, tuple[int, int]] | None = None  # (rounds without a usable observation, rounds)
    dose: Mapping[str, float] | None = None  # the share of its CPU its stops took (median)
    crowding: Mapping[str, float] | None = None  # the program's availability, slowed over free (median)
    through_itself: frozenset[str] = frozenset()  # groups whose own calls were the only proxy


@dataclass(frozen=True)
class Judgement:
    group: str
    reading: str  # what the interval alone says
    verdict: str  # critical / slack / competes / unknown
    reason: str  # one line: why unknown, or what the verdict means

    def to_json(self) -> dict[str, str]:
        return asdict(self)


def experiment_caveats(evidence: Evidence) -> list[str]:
    """The caveats that stand against every group's verdict."""
    out = []
    idle, free = evidence.free_without_progress
    if free and idle >= PHASED * free:
        out.append(
            f"{idle} of {free} periods with nothing slowed saw no report of progress: the program works in phases "
            "longer than a period or reports too seldom for it, and the rates do not hold"
        )
    if evidence.proxy_drifted:
        out.append(
            "the I/O proxy's calls per unit of the program's counter differ between the halves of the experiment"
        )
    return out


def _group_caveat(group: str, reading: str, evidence: Evidence) -> str | None:
    used = (evidence.utilisation or {}).get(group)
    if used is not None and used < IDLE_CORES:
        return f"it used {used:.3f} cores with nothing slowed (under {IDLE_CORES:.0%} of a core): debt mode hardly stops it"
    # what its stops took of its CPU (the dose), else the share of its busy time it was held stopped
    took = (evidence.dose or {}).get(group, (evidence.held or {}).get(group))
    low, high = (evidence.fraction * k for k in HELD_WITHIN)
    if took is not None and not low <= took <= high:
        return f"its stops took {took:.2f} of its CPU, far from the {evidence.fraction:g} asked"
    lost, rounds = (evidence.lost or {}).get(group, (0, 0))
    # the rounds lost are those whose slowing hurt the reports most: a critical reading without
    # them only understates; any other could be a critical group's
    if rounds and lost > THIN * rounds and reading != "critical":
        return (
            f"{lost} of its {rounds} rounds had a period with fewer than 5 reports of progress (the program stalls "
            "or reports less often when it is slowed)"
        )
    if group in evidence.through_itself and reading != "critical":
        return (
            "its rate was read through its own read/write calls (no other group's tracked the counter): they pause "
            "with its stops and catch up after, which reads as a loss where there is none"
        )
    crowded = (evidence.crowding or {}).get(group)
    if crowded is not None and not 1 / CROWDING <= crowded <= CROWDING:
        return (
            f"slowing it changed how much CPU the program got when runnable ({crowded:.2f}x): its stops free or "
            "take cores the others use, which the rates, read at equal crowding, do not show"
        )
    kept = (evidence.kept or {}).get(group)
    dose = (evidence.dose or {}).get(group, evidence.fraction)
    busy = (used or 0.0) >= 0.2
    waits = (evidence.waiting or {}).get(group, 0.0)
    if (
        reading in ("slack", "competes")
        and kept is not None
        and busy
        and waits < WAITING
        and kept > 1 - dose + GIVEN_BACK
    ):
        return (
            f"its stops took {dose:.2f} of its CPU, yet it kept {kept:.2f} of it and waits on no other process: "
            "the cores are the limit, and its reading understates what faster code would buy"
        )
    if reading == "competes" and kept is not None and kept > 1 - dose + GIVEN_BACK:
        return (
            f"its stops took {dose:.2f} of its CPU, yet it kept {kept:.2f} of it (it catches up after each stop): "
            "they freed no core for the rest, so the rise they brought is not competition"
        )
    return None


def _interval_reason(s: Sensitivity, width: float) -> str | None:
    m = s.median
    need = medians_to_decide()
    if m.n < need or not (math.isfinite(m.low) and math.isfinite(m.high)):
        return f"{m.n} round(s) measured; an interval needs {need}"
    if s.halfwidth > width:
        return f"its interval [{m.low:+.2f}, {m.high:+.2f}] is wider than +-{width:g}: more budget narrows it"
    if s.reading == "between":
        part = "it partly limits" if m.low > 0 else "it may compete a little"
        return (
            f"its interval [{m.low:+.2f}, {m.high:+.2f}] lies in no verdict's range (critical from +0.70, slack "
            f"within +-0.20, competes below -0.20): {part}"
        )
    return None


def judge(found: Sequence[Sensitivity], idle: Sequence[str], evidence: Evidence) -> list[Judgement]:
    """Every measured group's verdict and its reason, then the idle groups (not measured)."""
    common = experiment_caveats(evidence)
    out = []
    for s in found:
        reason = (common[0] if common else None) or _group_caveat(s.group, s.reading, evidence)
        reason = reason or _interval_reason(s, evidence.width)
        verdict = "unknown" if reason else s.reading
        out.append(Judgement(s.group, s.reading, verdict, reason or MEANING[verdict]))
    for group in idle:
        used = (evidence.utilisation or {}).get(group, 0.0)
        out.append(Judgement(group, "unknown", "unknown", f"idle: {used:.3f} cores with nothing slowed; not measured"))
    return out
