"""Whether the budget can hold the experiment the program's cadence asks for, said before
any of it is spent.

A round slows every group once, each slowed period between two free ones: 2 x groups
periods. The median's anytime-valid interval is infinite before 7 rounds
(harness.ab.sequential.medians_to_decide) and is the range of the rounds until about 10, so
fewer than ROUNDS_PLANNED rounds can only end `unknown`. A program that reports every 5 s
needs 30 s periods (harness.causal.cadence): two groups take 120 s a round, and 180 s of
budget would be spent on one round and a verdict of "unknown". The experiment refuses that
up front, naming the budget that would hold ROUNDS_PLANNED rounds, unless a group's system
calls can stand in for the counter (harness.causal.proxy).

Why a refusal is the user's error (exit 2): the program runs, the harness works; the budget
the user chose (or left at its default), the counter the user pointed at, or the group
left unnamed cannot give an answer together, and each remedy (a larger --budget, a denser
--progress counter, --io-counter GROUP) is theirs to choose.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ROUNDS_PLANNED = 10
# The rounds an interval usually needs to narrow to +-0.15 on the shared 2-core VM (the sign
# test's interval after 30 rounds runs from the 8th to the 23rd of them): a counter whose
# period leaves fewer gives way to an I/O proxy that tracks it, where the proxy gives more
ROUNDS_WANTED = 30


@dataclass(frozen=True)
class Plan:
    period_s: float
    groups: int
    elapsed_s: float  # launch and warm-up, spent already
    budget_s: float

    @property
    def round_s(self) -> float:
        return 2 * self.groups * self.period_s

    @property
    def rounds_fit(self) -> int:
        """Rounds the rest of the budget holds (the first free period comes before them)."""
        left = self.budget_s - self.elapsed_s - self.period_s
        return max(0, math.floor(left / self.round_s)) if self.round_s > 0 else 0

    @property
    def budget_needed_s(self) -> float:
        """The budget that holds ROUNDS_PLANNED rounds at this period, rounded up to 10 s."""
        need = self.elapsed_s + self.period_s + ROUNDS_PLANNED * self.round_s
        return 10 * math.ceil(need / 10)

    @property
    def enough(self) -> bool:
        return self.rounds_fit >= ROUNDS_PLANNED


def refusal(plan: Plan, counter: str, cadence_s: float, lower_bound: bool, proxy_note: str) -> str:
    """The message of a budget that cannot hold the rounds: what the program's cadence asks
    for, the budget that would hold it, and the other ways out."""
    every = (
        f"at least {cadence_s:.2g} s apart (too few reports to say more)" if lower_bound else f"every {cadence_s:.2g} s"
    )
    return (
        f"--budget {plan.budget_s:g}: the program reports {counter} {every}; a period must hold "
        f"5 reports, so periods of {plan.period_s:.1f} s and {plan.round_s:.0f} s a round for {plan.groups} "
        f"group(s): {plan.rounds_fit} round(s) fit in what is left, and fewer than {ROUNDS_PLANNED} can only end "
        f"unknown. Give --budget {plan.budget_needed_s:.0f} or more, a counter the program reports more often "
        f"(--progress), or a group whose read/write calls count the work (--io-counter GROUP){proxy_note}"
    )
