"""What limits the incumbent, read from the evidence tune gathered about it: the causal
experiment's verdicts (harness causal) and the diagnosis rules' findings on a measured cell.

Only what its evidence supports is used. A causal group counts as limiting when its verdict
is `critical`; `unknown`, `between` or a group the experiment refused to judge is not a
limit (tune then falls back to the findings, then to every knob in turn, and says so). A
finding counts as a symptom in severity order; its symptom is the remedy key the rule used
(`evidence["remedy_key"]`), else the rule's name in lower case, which is how the suites' remedies
and `relieves` key them. The machine is the limit only when the experiment judged every group
slack (or competing) while the cell's processes with the rest of the machine kept the cores
at least SATURATED busy; with any verdict unknown it is not called.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.diagnosis.findings import severity_rank

SATURATED = 0.85  # share of the machine's cores busy (the cell and everything else) that is "saturated"
CRITICAL = "critical"
SLACK = ("slack", "competes")
ACTED_ON = (CRITICAL, *SLACK)  # the causal readings read_limit uses: the experiment may stop once none can come


def symptom_of(finding: Mapping[str, Any]) -> str:
    evidence = finding.get("evidence") or {}
    return str(evidence.get("remedy_key") or finding.get("rule", "")).lower()


@dataclass
class Limit:
    """What the evidence says limits one incumbent, and what it could not say."""

    groups: list[str] = field(default_factory=list)  # critical groups, most sensitive first
    symptoms: list[str] = field(default_factory=list)  # findings' symptoms, most severe first
    saturated: bool = False  # no group critical and the machine's cores busy
    busy_cores: float | None = None  # the cell's and everything else's CPU, cores
    cores: int | None = None
    notes: list[str] = field(default_factory=list)  # why some evidence was not used

    def limits(self) -> list[str]:
        """Groups then symptoms: the order in which their relieving knobs are tried."""
        return [*self.groups, *self.symptoms]

    def describe(self) -> str:
        parts = []
        if self.groups:
            parts.append(f"critical: {', '.join(self.groups)}")
        if self.symptoms:
            parts.append(f"findings: {', '.join(self.symptoms)}")
        if self.saturated:
            parts.append(f"the machine: {self.busy_cores:.1f} of {self.cores} cores busy, no group critical")
        return "; ".join(parts) or "nothing identified"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Limit:
        """A Limit as to_json() wrote it (a resumed step's)."""
        return cls(
            list(data.get("groups") or []), list(data.get("symptoms") or []), bool(data.get("saturated")),
            data.get("busy_cores"), data.get("cores"), list(data.get("notes") or []),
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "groups": self.groups,
            "symptoms": self.symptoms,
            "saturated": self.saturated,
            "busy_cores": self.busy_cores,
            "cores": self.cores,
            "notes": self.notes,
            "said": self.describe(),
        }


def read_limit(
    causal: Mapping[str, Any] | None,
    findings: Iterable[Mapping[str, Any]],
    metrics: Mapping[str, Any],
    cores: int,
) -> Limit:
    """The Limit from a causal.json document (or None: not run), the findings as JSON and
    the incumbent's measured metrics (its CPU)."""
    limit = Limit(cores=cores)
    judged: list[Mapping[str, Any]] = []
    if causal is None:
        limit.notes.append("no causal experiment")
    else:
        judged = sorted(causal.get("sensitivity") or [], key=lambda s: -(s.get("estimate") or 0.0))
        judged = [s for s in judged if not str(s.get("group", "")).startswith("(")]
        limit.groups = [s["group"] for s in judged if s.get("verdict") == CRITICAL]
        unsure = [f"{s['group']} {s.get('verdict')}" for s in judged if s.get("verdict") in ("unknown", "between")]
        if unsure:
            limit.notes.append(f"causal verdicts not used: {', '.join(unsure)}")
    ordered = sorted(findings, key=lambda f: severity_rank(str(f.get("severity", ""))))
    for finding in ordered:
        symptom = symptom_of(finding)
        if symptom and symptom not in limit.symptoms:
            limit.symptoms.append(symptom)
    cell = metrics.get("cpu_util_mean")
    others = metrics.get("cpu_others_mean") or 0.0
    if isinstance(cell, int | float):
        limit.busy_cores = (float(cell) + float(others)) / 100.0
        all_slack = bool(judged) and all(s.get("verdict") in SLACK for s in judged)
        busy = limit.busy_cores >= SATURATED * cores
        limit.saturated = all_slack and busy
        if busy and not all_slack and not limit.groups:
            limit.notes.append(
                "the cores are busy but no causal verdict says every group is slack: not called the machine's limit"
            )
    else:
        limit.notes.append("no CPU reading of the cell")
    return limit
