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

Then the candidate's instructions per unit over the base's, every pairing of their runs:
a regression when the smallest ratio exceeds 1 + tolerance, ok when the largest does not,
else undecided (the runs' own spread straddles the edge). Counts need no statistical
test: the evidence checks bound what a second sitting would change.
"""

from __future__ import annotations

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
        values = [r.per_unit for r in runs]
        spread = max(values) / min(values) - 1 if min(values) > 0 else float("inf")
        exact = exact and len(runs) >= 2 and spread <= EXACT
        evidence.append(
            f"{name}: {len(runs)} runs, {', '.join(f'{v:,.0f}' for v in values)} per unit ({spread:.2e} apart)"
        )
        if len(runs) >= 2 and spread > repeats_bound:
            problems.append(
                f"the {name}'s runs differ by {100 * spread:.2f} % per unit (bound {100 * repeats_bound:.2g} %)"
            )
    empty = sorted({p.command or str(p.pid) for r in (*base, *cand) for p in r.processes if sum(p.halves) == 0})
    if empty:
        evidence.append(f"processes that counted nothing in the window: {'; '.join(empty[:5])}")
    if gap > halves_bound and exact:
        each = [_decide([c.halves_per_unit[h] / b.halves_per_unit[h] for c in cand for b in base], tolerance)
                for h in (0, 1)]  # fmt: skip
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
    ratios = [c.per_unit / b.per_unit for c in cand for b in base]
    ratio, low, high = mean_cand / mean_base, min(ratios), max(ratios)
    edge = 1 + tolerance
    span = (
        f"instructions per unit candidate/base {ratio:.4f} [{low:.4f}, {high:.4f}] over {len(ratios)} pairings of runs"
    )
    decision = _decide(ratios, tolerance)
    if decision == "regression":
        return CountVerdict("regression", f"{span}: more counted work, beyond {edge:.4f}", ratio, low, high, evidence)
    if decision == "ok":
        return CountVerdict("ok", f"{span}: within {edge:.4f}", ratio, low, high, evidence)
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


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)
