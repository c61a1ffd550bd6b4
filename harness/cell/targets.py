"""Time to quality: a target such as `nash_conv<=0.05` and when a cell reached it.

Faster is not better when it learns less: training systems are judged by the wall time to
reach a quality target (MLPerf Training's rule). A target names a quality metric the suite
declares, a comparison that matches the metric's direction, and a value; the probe checks
it whenever the suite reports that metric and stops the cell when it is met.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

_FORM = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=)\s*([-+0-9.eE]+)\s*$")
DEFAULT_EVERY_S = 0.5  # measured seconds between quality checks: the resolution of time to target
DEFAULT_CAP_S = 120.0  # a cell with a target runs at most this long unless --duration says


@dataclass(frozen=True)
class Target:
    metric: str
    op: Literal["<=", ">="]
    value: float

    @classmethod
    def parse(cls, text: str) -> Target:
        """'nash_conv<=0.05' -> Target; ValueError naming the form otherwise."""
        match = _FORM.match(text)
        if match is None:
            raise ValueError(f"{text!r}: write METRIC<=VALUE or METRIC>=VALUE, e.g. accuracy>=0.9")
        metric, op, value = match.groups()
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"{text!r}: {value!r} is not a number") from None
        return cls(metric, op, number)  # type: ignore[arg-type]  # the regex allows only the two

    @property
    def better(self) -> Literal["higher", "lower"]:
        return "lower" if self.op == "<=" else "higher"

    def met(self, value: float) -> bool:
        return value <= self.value if self.op == "<=" else value >= self.value

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"
