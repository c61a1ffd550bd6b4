"""Weighted samples of one observed quantity (batch sizes, waits) and their summary."""

from __future__ import annotations

from array import array
from typing import Any

HIST_MAX_DISTINCT = 512  # integer-valued observations with at most this many values get a histogram


class Observations:
    __slots__ = ("values", "weights")

    def __init__(self) -> None:
        self.values = array("d")
        self.weights = array("d")

    def add(self, value: float, count: float) -> None:
        self.values.append(value)
        self.weights.append(count)

    def summary(self, name: str) -> dict[str, Any]:
        """`<name>_count/_mean/_p50/_p95/_max`, and `_hist` (value -> count) when integer-valued."""
        import numpy as np

        values = np.frombuffer(self.values, dtype=np.float64)
        weights = np.frombuffer(self.weights, dtype=np.float64)
        keep = weights > 0
        values, weights = values[keep], weights[keep]
        if values.size == 0:
            return {f"{name}_count": 0}
        order = np.argsort(values, kind="stable")
        values, weights = values[order], weights[order]
        cumulative = np.cumsum(weights)
        total = float(cumulative[-1])

        def quantile(q: float) -> float:
            return float(values[min(int(np.searchsorted(cumulative, q * total)), values.size - 1)])

        out: dict[str, Any] = {
            f"{name}_count": total,
            f"{name}_mean": float(np.dot(values, weights) / total),
            f"{name}_p50": quantile(0.50),
            f"{name}_p95": quantile(0.95),
            f"{name}_max": float(values[-1]),
        }
        distinct, inverse = np.unique(values, return_inverse=True)
        if distinct.size <= HIST_MAX_DISTINCT and np.all(distinct == np.round(distinct)):
            counts = np.bincount(inverse, weights=weights)
            out[f"{name}_hist"] = {str(int(v)): float(c) for v, c in zip(distinct, counts, strict=True)}
        return out
