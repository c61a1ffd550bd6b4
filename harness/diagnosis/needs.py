"""What a finding rests on, and the one gate every rule's findings pass through.

A verdict printed beside its caveat is still acted on: NEGATIVE_SCALING was drawn from a rate
whose check had failed (a program's step counter read at 0.39x the truth at 2 workers), and
the caveat stood two lines below it. So each rule module declares `NEEDS`, the evidence its
findings rest on:

- `rate="compared"`: they compare a rate's values (scaling, drift, per worker);
- `rate="progress"`: they use a rate only as a sign that the program progressed (and quote it);
- `instruments`: harness watch's instruments they read (`stacks`, `waits`);
- `window` (the default): they read numbers of the cells' measured window (rates, watch's
  shares and signals, monitors' means): a rule that reads only counts of the whole run or
  the cells' asks says `window=False`;
- `free_cores`: they compare the program at different worker counts, which says what it
  says only while the cores were the program's.

`judge` holds each finding to its rule's needs, over the cells it names: a cell that had no
measured window (harness.runs.crowding.unmeasured: the run ended during warm-up) refuses a
finding that reads the window; a rate the view doubts (RunView.doubt: its check failed, its
window held too few units, its reading an unchecked guess) refuses a finding that compares
it when the doubt refuses, and otherwise stays in the finding's first line (`doubted (why):
...`, and `doubted` in its evidence); so does a machine the rest of it crowded during the
cells compared (harness.runs.crowding.crowding); an instrument that saw nothing
(harness.monitors.blind) refuses the finding. The rate a finding
rests on is its evidence's `rate` (None: it used none), else its cells' headline. A rule
needs no code of its own for any of this, and tests/harness/test_rule_evidence.py walks every
rule of RULES over degraded runs to hold each one to it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from harness.diagnosis.findings import Finding
from harness.monitors.blind import STACKS, WAITS, blind
from harness.runs.crowding import crowding, unmeasured
from harness.runs.view import RunView

COMPARED, PROGRESS = "compared", "progress"
DOUBTED = "doubted"

__all__ = [
    "COMPARED",
    "DOUBTED",
    "PROGRESS",
    "STACKS",
    "WAITS",
    "Needs",
    "Refusal",
    "judge",
    "judged",
    "needs_of",
    "sift",
]


@dataclass(frozen=True)
class Needs:
    """The evidence a rule's findings rest on (see the module's docstring)."""

    rate: Literal["compared", "progress"] | None = None
    instruments: tuple[str, ...] = ()
    window: bool = True
    free_cores: bool = False


@dataclass(frozen=True)
class Refusal:
    """A finding its evidence could not carry: the rule, the cells, and why it was not
    judged. Printed as `not judged` beside the findings: "unknown" is an answer, and a rule
    that stayed silent because its evidence failed is not a rule that found nothing."""

    rule: str
    cells: tuple[str, ...]
    why: str

    def line(self) -> str:
        cells = ", ".join(self.cells[:6]) + (f" +{len(self.cells) - 6} more" if len(self.cells) > 6 else "")
        return f"not judged: {self.rule} [{cells}]: {self.why}"

    def to_json(self) -> dict[str, object]:
        return {"rule": self.rule, "cells": list(self.cells), "why": self.why}


def needs_of(rule: Callable[[RunView], list[Finding]]) -> Needs:
    """The `NEEDS` its rule module declares (tests/test_docs.py holds that every one does)."""
    return importlib.import_module(rule.__module__).NEEDS


def judge(finding: Finding, needs: Needs, view: RunView) -> Finding | None:
    """The finding as its evidence allows: itself, marked doubted, or None (refused)."""
    kept = weigh(finding, needs, view)
    return kept if isinstance(kept, Finding) else None


def weigh(finding: Finding, needs: Needs, view: RunView) -> Finding | Refusal:
    """The finding as its evidence allows: itself, marked doubted, or why it was refused."""
    cells = [c for c in view.cells if c.id in finding.cells]
    empty = unmeasured(cells) if needs.window else []
    if empty:  # what it read is the program's start-up
        which = f"cell{'s' if len(empty) > 1 else ''} {', '.join(empty)} had none"
        return Refusal(
            finding.rule,
            tuple(finding.cells),
            f"it reads the measured window, and {which} (the run ended during warm-up): what was measured "
            "there is the program's start-up (`--steady off` measures a program this short from its start)",
        )
    for name in needs.instruments:
        reasons = [why for cell in cells for rec in cell.ok if (why := blind(rec.metrics).get(name))]
        if reasons:  # it rests on an instrument that saw nothing
            return Refusal(finding.rule, tuple(finding.cells), f"it rests on {name}, which saw nothing: {reasons[0]}")
    doubts = []
    if needs.rate is not None:
        rate = finding.evidence["rate"] if "rate" in finding.evidence else view.rate(cells)
        found = view.doubt(cells, rate)
        if found is not None:
            if found.refuse and needs.rate == COMPARED:
                return Refusal(finding.rule, tuple(finding.cells), f"it compares {found.why}")
            doubts.append(found.why)
    crowded = crowding(cells, view.cores) if needs.free_cores else None
    if crowded is not None:
        doubts.append(crowded)
    if not doubts:
        return finding
    return replace(
        finding,
        hint=f"{DOUBTED} ({'; '.join(doubts)}): {finding.hint}",
        evidence={**finding.evidence, DOUBTED: doubts},
    )


def judged(rule: Callable[[RunView], list[Finding]], view: RunView) -> list[Finding]:
    """A rule's findings over the view, each held to the rule's declared needs."""
    return sift(rule, view)[0]


def sift(rule: Callable[[RunView], list[Finding]], view: RunView) -> tuple[list[Finding], list[Refusal]]:
    """A rule's findings that their evidence carries, and those it refused (with why)."""
    needs = needs_of(rule)
    kept: list[Finding] = []
    refused: list[Refusal] = []
    for finding in rule(view):
        weighed = weigh(finding, needs, view)
        (kept if isinstance(weighed, Finding) else refused).append(weighed)
    return kept, refused
