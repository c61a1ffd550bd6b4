"""A count A/B's decision, and the evidence it needs before it believes a count.

Each side ran `runs` counted runs (harness.count.window). A count is believed when

- the window's two halves agree: the candidate's instructions per unit over the base's in
  the second half within HALVES_SHARE x the tolerance of that in the first. A program whose
  work per unit drifts, that spin-waits or polls (its instructions follow the time it waits)
  or does work on a timer fails this: "not decidable by counts". The ratio, not each run's
  halves: a solver whose sampled iterations cost 0.9 % more in one half than in the other
  (MCCFR's sequential cell) counts the same iterations in every run of both sides, and its
  ratio holds in both halves; a candidate that changes which units are done does not;
- the runs of each side agree: instructions per unit within REPEATS_SHARE x the tolerance.
  The same program in the same place with the same hash seed and no ASLR repeats its count
  to about 1e-7 when its work is deterministic; one that does not, does not (neat-python's
  XOR example, its seed left unset in its config, evolved different genomes in every run:
  its runs 11-19 % apart per generation, and the reason names chance first).

A deterministic program (every side's runs repeat to EXACT) whose halves' ratios differ is
no noise: the change costs differently in different units (DEAP's onemax with six more sums
per evaluation: 6.0 % more in a generation of 199 evaluations, 5.0 % in one of 167; the
halves' check refused it as "timing"). Its halves are judged alone: both regressions, or both
within the tolerance, decide as the whole window does, with the halves in the evidence; else
it is not decidable, and the reason says why.

Then the candidate's instructions per unit over the base's, every pairing of their runs
in one memory layout: a regression when the smallest ratio exceeds 1 + tolerance, ok when
the largest does not, else undecided (the runs' own spread straddles the edge).

**Layouts.** A count repeats to 1e-7 in one layout, but it is not the code's alone:
CPython's type-attribute cache is indexed by a type's version tag and the address of the
name looked up, so which hot lookups collide follows everything allocated and every class
made before. Two revisions whose code differs reshuffle that, and the same A/B of the gate's
actor-learner cell (against a base 30 commits older) counted 0.9992 on one machine and 1.0052
on another, each run of a side repeating exactly. So each side is also counted in other
layouts (the hook's shift_layout: objects kept and classes tagged before the program's first
import, the same for both sides) and runs are paired only within a layout: a ratio that
moves across layouts past the edge is undecided, and the reason says the layout moved it. Where
a side's own count moves between layouts by more than the tolerance (the actor-learner's by
up to 3 %: a hot lookup that collides in some layouts), a regression must also exceed that
drift in every layout, else it is undecided. The repeats checks (agreement, EXACT) compare
runs of one layout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.count.window import Counted

DEFAULT_COUNT_TOLERANCE = 0.005  # 0.5 %: a planted 1 % more work per unit is a regression
HALVES_SHARE = 0.5
REPEATS_SHARE = 0.25
EXACT = 1e-6  # runs of a side this close repeat: deterministic work (such programs repeat to 1e-7)
HALF_WORDS = {"regression": "more counted work", "ok": "within the tolerance", "undecided": "straddling it"}


@dataclass
class CountVerdict:
    decision: str  # regression | ok | undecided | refused
    reason: str
    ratio: float | None = None  # mean candidate per unit / mean base per unit
    low: float | None = None  # the smallest and largest of the runs' pairwise ratios
    high: float | None = None
    evidence: list[str] = field(default_factory=list)  # the checks, passed or not, in words

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.decision, "reason": self.reason, "ratio": self.ratio, "low": self.low,
                "high": self.high, "evidence": self.evidence}  # fmt: skip


def judge(base: list[Counted], cand: list[Counted], tolerance: float) -> CountVerdict:
    """The decision from both sides' counted runs (see the module's docstring)."""
    evidence, problems = [], []
    for run in (*base, *cand):
        first, second = run.halves_per_unit
        gap = abs(second / first - 1) if first else float("inf")
        evidence.append(f"{run.label}: halves {first:,.0f} and {second:,.0f} instructions per unit ({gap:.2e} apart)")
    halves_bound = tolerance * HALVES_SHARE
    by_half = [
        _mean([r.halves_per_unit[h] for r in cand]) / _mean([r.halves_per_unit[h] for r in base]) for h in (0, 1)
    ]
    layouts = sorted({r.layout for r in base} & {r.layout for r in cand})
    gap = abs(by_half[1] / by_half[0] - 1)
    evidence.append(
        f"candidate/base in the first half {by_half[0]:.5f}, in the second {by_half[1]:.5f} ({gap:.2e} apart)"
    )
    halves_said = (
        f"candidate/base is {by_half[0]:.4f} in the window's first half and {by_half[1]:.4f} in its second "
        f"({100 * gap:.2f} % apart, bound {100 * halves_bound:.2g} %)"
    )
    repeats_bound = tolerance * REPEATS_SHARE
    exact = True
    for name, runs in (("base", base), ("candidate", cand)):
        repeated = [r for r in runs if r.layout == min(r.layout for r in runs)]  # the runs of one layout
        values = [r.per_unit for r in repeated]
        spread = max(values) / min(values) - 1 if min(values) > 0 else float("inf")
        exact = exact and len(repeated) >= 2 and spread <= EXACT
        evidence.append(
            f"{name}: {len(repeated)} runs in one layout, {', '.join(f'{v:,.0f}' for v in values)} per unit "
            f"({spread:.2e} apart)"
        )
        others = [r for r in runs if r not in repeated]
        if others:
            every = [r.per_unit for r in runs]
            evidence.append(
                f"{name} in other layouts: {', '.join(f'{r.per_unit:,.0f}' for r in others)} per unit "
                f"(every layout {max(every) / min(every) - 1:.2e} apart)"
            )
        if len(repeated) >= 2 and spread > repeats_bound:
            problems.append(
                f"the {name}'s runs differ by {100 * spread:.2f} % per unit (bound {100 * repeats_bound:.2g} %)"
            )
    empty = sorted({p.command or str(p.pid) for r in (*base, *cand) for p in r.processes if sum(p.halves) == 0})
    if empty:
        evidence.append(f"processes that counted nothing in the window: {'; '.join(empty[:5])}")
    if gap > halves_bound and exact:
        each = [_decide(_pairings(base, cand, lambda r, h=h: r.halves_per_unit[h]), tolerance) for h in (0, 1)]
        if each[0] != each[1] or each[0] == "undecided":
            return CountVerdict(
                "refused",
                f"not decidable by counts: {halves_said}: {HALF_WORDS[each[0]]} in the first half, "
                f"{HALF_WORDS[each[1]]} in the second; "
                f"every side's runs repeat to {EXACT:g}, so it is no noise: the change costs differently in "
                "different units (what a unit does, or which units are done: another random path); a longer "
                "window (--count-lines) or --measure time",
                evidence=evidence,
            )
        evidence.append(
            f"{halves_said}, but every side's runs repeat to {EXACT:g} (deterministic work) and each half alone "
            f"is {HALF_WORDS[each[0]]}: the change costs differently in different units"
        )
    elif gap > halves_bound:
        problems.insert(0, halves_said)
    if problems:
        return CountVerdict(
            "refused",
            "not decidable by counts: " + "; ".join(problems) + ". Its instructions per unit depend on chance "
            "(random numbers not seeded: each run does different work; seed them), on timing (threads or processes "
            "that spin-wait or poll, work done on a timer) or drift; measure time (--measure time)",
            evidence=evidence,
        )
    mean_base = sum(r.per_unit for r in base) / len(base)
    mean_cand = sum(r.per_unit for r in cand) / len(cand)
    ratios = _pairings(base, cand, lambda r: r.per_unit)
    ratio, low, high = mean_cand / mean_base, min(ratios), max(ratios)
    edge = 1 + tolerance
    in_layouts = f" in {len(layouts)} memory layouts" if len(layouts) > 1 else ""
    span = (
        f"instructions per unit candidate/base {ratio:.4f} [{low:.4f}, {high:.4f}] over {len(ratios)} pairings of runs"
        f"{in_layouts}"
    )
    in_layout = {k: _pairings(base, cand, lambda r: r.per_unit, k) for k in layouts}
    by_layout = {k: _decide(got, tolerance) for k, got in in_layout.items()}
    drift = layout_drift(base, cand)
    if len(layouts) > 1:
        evidence.append("candidate/base by layout: " + ", ".join(
            f"{k}: {_mean(got):.5f} ({by_layout[k]})" for k, got in in_layout.items()))  # fmt: skip
        evidence.append(f"each side's count across layouts: up to {100 * drift:.2f} % apart")
    decision = _decide(ratios, tolerance)
    if decision == "regression" and drift > tolerance and low <= 1 + drift:
        return CountVerdict(
            "undecided",
            f"{span}: more counted work in every layout, but each side's own count moves {100 * drift:.2f} % "
            "between memory layouts (CPython's caches follow addresses): a change below that cannot be told from "
            "the layout's luck (more layouts: --count-layouts; a tolerance above it; or --measure time)",
            ratio, low, high, evidence,
        )  # fmt: skip
    if decision == "regression":
        return CountVerdict("regression", f"{span}: more counted work, beyond {edge:.4f}", ratio, low, high, evidence)
    if decision == "ok":
        return CountVerdict("ok", f"{span}: within {edge:.4f}", ratio, low, high, evidence)
    if len(set(by_layout.values())) > 1:
        said = ", ".join(f"{_mean(got):.4f} in layout {k}" for k, got in in_layout.items())
        return CountVerdict(
            "undecided",
            f"{span}: the memory layout moves it across {edge:.4f} ({said}): CPython's caches follow "
            "addresses, and the change moved which of its hot lookups collide; counts cannot decide at this "
            "tolerance (a larger --count-tolerance, or --measure time)",
            ratio, low, high, evidence,
        )  # fmt: skip
    return CountVerdict(
        "undecided", f"{span}: the runs straddle {edge:.4f} (run more: --count-runs)", ratio, low, high, evidence
    )


def _decide(ratios: list[float], tolerance: float) -> str:
    """regression when even the smallest candidate/base ratio exceeds 1 + tolerance, ok when
    even the largest does not, else undecided."""
    edge = 1 + tolerance
    if min(ratios) > edge:
        return "regression"
    if max(ratios) <= edge:
        return "ok"
    return "undecided"


def layout_drift(base: list[Counted], cand: list[Counted]) -> float:
    """How far one side's count moves between memory layouts (the mean of each layout's runs,
    largest over smallest, minus 1; the larger side's): a ratio of the sides within it may be
    the layouts' luck, not the change (0 with one layout)."""
    drift = 0.0
    for runs in (base, cand):
        means = [_mean([r.per_unit for r in runs if r.layout == k]) for k in sorted({r.layout for r in runs})]
        if len(means) > 1 and min(means) > 0:
            drift = max(drift, max(means) / min(means) - 1)
    return drift


def _pairings(
    base: list[Counted], cand: list[Counted], value: Callable[[Counted], float], layout: int | None = None
) -> list[float]:
    """value(candidate run) / value(base run) for every pair of runs counted in one layout
    (`layout`: that one only)."""
    return [
        value(c) / value(b)
        for c in cand
        for b in base
        if c.layout == b.layout and (layout is None or c.layout == layout)
    ]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)
