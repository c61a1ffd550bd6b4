"""Weighted samples of one observed quantity (batch sizes, waits) and their summary."""

from __future__ import annotations

from array import array
from typing import Any


class Observations:
    """Values with their counts, appended as they come (arrays, not lists: a suite may
    observe every call), summarised once at the end by harness.model.stats."""

    __slots__ = ("values", "weights")

    def __init__(self) -> None:
        self.values = array("d")
        self.weights = array("d")

    def add(self, value: float, count: float) -> None:
        self.values.append(value)
        self.weights.append(count)

    def summary(self, name: str) -> dict[str, Any]:
        """`<name>_count/_mean/_p50/_p95/_max`, and `_hist` (value -> count) when integer-valued."""
        from harness.model.stats import weighted_summary  # numpy: only when a cell ends

        return weighted_summary(name, self.values, self.weights)
