"""The one way a number is written for people: every report, hint and finding uses it.

Floats get a few significant digits (0.6038, not 0.6037760623017959); from LARGE on a value
reads better whole with thousands separators (23,980, not 2.398e+04); NaN and None are "-".
It lives at the bottom of the layers so the diagnosis rules' hints and the report formats
(harness.report.evidence) write numbers alike.
"""

from __future__ import annotations

import math
from typing import Any

LARGE = 10_000


def readable(value: Any, digits: int = 4) -> str:
    """`value` with `digits` significant digits; ints whole; large values with separators."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= LARGE else str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if abs(value) >= LARGE:
            return f"{value:,.0f}"
        if value.is_integer():
            return str(int(value))
        return f"{value:.{digits}g}"
    return str(value)
