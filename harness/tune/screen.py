"""A move along an ordered knob, screened before its A/B: one short reading of each value the
knob could take that way, and the best reading proposed first.

Stepping one value at a time costs an A/B and the incumbent's evidence per value: the seeds
campaign climbed MCCFR's batch 50 -> 100 -> 200 -> 400 and self-play's leaves 1 -> 2 -> 4 -> 8
-> 16 in four steps each, about 100 s a step, where an exhaustive grid reads a cell in about
13 s. A screen reads the values ahead once each (as the grid does, at most SCREEN_MOST of
them, spread along the range) and proposes the best reading as the challenger; the A/B still
decides it. A single reading may be a lucky one, so the screen only orders: it never adopts,
and the one-step move it replaced is still tried after it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.tune.space import Knob, _same

SCREEN_MOST = 4  # values read per screen; a longer range is sampled evenly, both ends kept


def ahead(knob: Knob, current: Any, toward: str) -> list[Any]:
    """The knob's values beyond `current` in the direction `toward`, nearest first."""
    values, stride = [], 1
    while (value := knob.step(current, toward, stride)) is not None:
        values.append(value)
        stride += 1
    return values


def spread(values: list[Any], most: int = SCREEN_MOST) -> list[Any]:
    """At most `most` of `values`, evenly spaced, the first and the last kept."""
    if len(values) <= most:
        return list(values)
    picks = sorted({round(i * (len(values) - 1) / (most - 1)) for i in range(most)})
    return [values[i] for i in picks]


@dataclass
class Screen:
    """One reading of each value screened (None: the cell gave no rate)."""

    knob: str
    values: list[Any]
    rates: list[float | None] = field(default_factory=list)
    metric: str | None = None
    seconds: float = 0.0

    def best(self) -> Any | None:
        """The value with the highest reading; None when fewer than two gave one (a lone
        reading orders nothing: rl_zoo3's steps screen read 64 and 256 as "no rate", and its
        one reading, 128, became a challenger whose A/B then had no rate on both sides)."""
        read = [(rate, i) for i, rate in enumerate(self.rates) if rate is not None]
        return self.values[max(read)[1]] if len(read) >= 2 else None

    def read(self, value: Any) -> float | None:
        for v, rate in zip(self.values, self.rates, strict=False):
            if _same(v, value):
                return rate
        return None

    def describe(self) -> str:
        readings = ", ".join(
            f"{v}: {rate:.4g}" if rate is not None else f"{v}: no rate"
            for v, rate in zip(self.values, self.rates, strict=False)
        )
        return f"{self.knob} screened ({self.metric or 'rate'}, one reading each): {readings}"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Screen:
        """A Screen as to_json() wrote it (a trial's, in the trail)."""
        return cls(
            data["knob"], list(data["values"]), list(data["rates"]), data.get("metric"), data.get("seconds", 0.0)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "knob": self.knob,
            "values": self.values,
            "rates": self.rates,
            "metric": self.metric,
            "seconds": self.seconds,
            "said": self.describe(),
        }


def screen(knob: Knob, values: list[Any], read: Callable[[Any], tuple[str | None, float | None]]) -> Screen:
    """Each value read once by `read` (value -> (metric, rate)), in the knob's order."""
    began = time.monotonic()
    got = Screen(knob.name, list(values))
    for value in values:
        metric, rate = read(value)
        got.metric = got.metric or metric
        got.rates.append(rate if rate is not None and rate > 0 else None)
    got.seconds = time.monotonic() - began
    return got
