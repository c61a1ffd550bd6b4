"""A finding: one named failure of parallel training, with its evidence and remedy."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from harness.model.numbers import readable

SEVERITIES = ("error", "warning", "info")
SEVERITY_ORDER = {name: rank for rank, name in enumerate(SEVERITIES)}


@dataclass
class Finding:
    rule: str
    severity: str  # error | warning | info
    cells: list[str]
    hint: str  # one line: the symptom with its numbers, then the remedy
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def severity_rank(severity: str) -> int:
    """Most severe first; unknown severities last."""
    return SEVERITY_ORDER.get(str(severity).lower(), len(SEVERITIES))


def fmt(x: float) -> str:
    """A number in a hint: three significant digits, large values whole (harness.model.numbers)."""
    return readable(x, 3)
