"""What a finding rests on, and the one gate every rule's findings pass through.

A verdict printed beside its caveat is still acted on: NEGATIVE_SCALING was drawn from a rate
whose check had failed (a program's step counter read at 0.39x the truth at 2 workers), and
the caveat stood two lines below it. So each rule module declares `NEEDS`, the evidence its
findings rest on:

- `rate="compared"`: they compare a rate's values (scaling, drift, per worker);
- `rate="progress"`: they use a rate only as a sign that the program progressed (and quote it);
- `instruments`: harness watch's instruments they read (`stacks`, `waits`).

`judge` holds each finding to its rule's needs, over the cells it names: a rate the view
doubts (RunView.doubt: its check failed, its window held too few units, its reading an
unchecked guess) refuses a finding that compares it when the doubt refuses, and otherwise
stays in the finding's first line (`doubted (why): ...`, and `doubted` in its evidence); an
instrument that saw nothing (harness.monitors.blind) refuses the finding. The rate a finding
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
from harness.runs.view import RunView

COMPARED, PROGRESS = "compared", "progress"
DOUBTED = "doubted"

__all__ = ["COMPARED", "DOUBTED", "PROGRESS", "STACKS", "WAITS", "Needs", "judge", "judged", "needs_of"]


@dataclass(frozen=True)
class Needs:
    """The evidence a rule's findings rest on (see the module's docstring)."""

    rate: Literal["compared", "progress"] | None = None
    instruments: tuple[str, ...] = ()


def needs_of(rule: Callable[[RunView], list[Finding]]) -> Needs:
    """The `NEEDS` its rule module declares (tests/test_docs.py holds that every one does)."""
    return importlib.import_module(rule.__module__).NEEDS


def judge(finding: Finding, needs: Needs, view: RunView) -> Finding | None:
    """The finding as its evidence allows: itself, marked doubted, or None (refused)."""
    cells = [c for c in view.cells if c.id in finding.cells]
    for name in needs.instruments:
        if any(name in blind(rec.metrics) for cell in cells for rec in cell.ok):
            return None  # it rests on an instrument that saw nothing
    doubts = []
    if needs.rate is not None:
        rate = finding.evidence["rate"] if "rate" in finding.evidence else view.rate(cells)
        found = view.doubt(cells, rate)
        if found is not None:
            if found.refuse and needs.rate == COMPARED:
                return None
            doubts.append(found.why)
    if not doubts:
        return finding
    return replace(
        finding,
        hint=f"{DOUBTED} ({'; '.join(doubts)}): {finding.hint}",
        evidence={**finding.evidence, DOUBTED: doubts},
    )


def judged(rule: Callable[[RunView], list[Finding]], view: RunView) -> list[Finding]:
    """A rule's findings over the view, each held to the rule's declared needs."""
    needs = needs_of(rule)
    return [kept for finding in rule(view) if (kept := judge(finding, needs, view)) is not None]
