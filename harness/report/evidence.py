"""A finding's evidence as short readable rows: the one formatter the terminal, report.html
and summary.md share, so a number reads the same everywhere.

Rules keep their evidence as plain data (`harness diagnose --json` prints it whole); this
module only decides how it reads. Numbers get four significant digits (`0.6038`, `10.4`,
`23,980`), never sixteen. Two shapes read as sentences rather than as nested data:

- an interval, a mapping with `ratio`, `low` and `high` (harness.model.stats.ratio_of_medians):
  `0.38x (95 % CI 0.31-0.45)`, or `0.38x (one repeat a side: no interval)` when it collapsed;
- a change, a mapping with `before` and `after` (and optionally `metric`, `at`, `before_at`,
  `after_at`, and an interval's keys): `games_per_s 10.4 @4 -> 3.99 @128 workers (0.38x, 95 % CI ...)`.

Everything else is `key value` pairs; nested mappings and lists are flattened one level
into the row's text, so a finding is a small two-column table (or one line of rows).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.model.numbers import readable

SIGNIFICANT = 4
INTERVAL_KEYS = ("ratio", "low", "high")
CHANGE_KEYS = ("before", "after")
# keys the interval and change sentences consume; the rest of such a mapping is shown after
_SENTENCE_KEYS = {
    *INTERVAL_KEYS, *CHANGE_KEYS, "metric", "at", "before_at", "after_at", "n_baseline", "n_candidate", "confidence",
}  # fmt: skip

Row = tuple[str, str]


def number(value: Any) -> str:
    """One number as people read it (harness.model.numbers.readable, four significant digits)."""
    return readable(value, SIGNIFICANT)


def is_interval(value: Any) -> bool:
    return isinstance(value, Mapping) and all(k in value for k in INTERVAL_KEYS)


def is_change(value: Any) -> bool:
    return isinstance(value, Mapping) and all(k in value for k in CHANGE_KEYS)


def _interval_parts(value: Mapping[str, Any]) -> tuple[str, str | None]:
    """("0.38x", "95 % CI 0.31-0.45"), or a note instead of the interval when it collapsed."""
    ratio, low, high = (value.get(k) for k in INTERVAL_KEYS)
    head = f"{number(ratio)}x"
    if not all(isinstance(v, int | float) for v in (ratio, low, high)):
        return head, None
    if low == high:
        return head, "one repeat a side: no interval"
    level = value.get("confidence", 0.95)
    return head, f"{number(100 * level)} % CI {number(low)}-{number(high)}"


def interval(value: Mapping[str, Any]) -> str:
    """`0.38x (95 % CI 0.31-0.45)`; a collapsed interval (one repeat a side) says so."""
    head, detail = _interval_parts(value)
    return f"{head} ({detail})" if detail else head


def change(value: Mapping[str, Any]) -> str:
    """`games_per_s 10.4 @4 -> 3.99 @128 workers (0.38x, 95 % CI 0.31-0.45)`."""
    metric = f"{value['metric']} " if value.get("metric") else ""
    at = f" {value['at']}" if value.get("at") else ""

    def side(which: str) -> str:
        where = value.get(f"{which}_at")
        return number(value[which]) + (f" @{number(where)}" if where is not None else "")

    text = f"{metric}{side('before')} -> {side('after')}{at}"
    if is_interval(value):
        head, detail = _interval_parts(value)
        text += f" ({head}, {detail})" if detail else f" ({head})"
    return text


def inline(value: Any) -> str:
    """Any evidence value as one short phrase."""
    if is_change(value):
        rest = {k: v for k, v in value.items() if k not in _SENTENCE_KEYS}
        return change(value) + (f"; {inline(rest)}" if rest else "")
    if is_interval(value):
        rest = {k: v for k, v in value.items() if k not in _SENTENCE_KEYS}
        return interval(value) + (f"; {inline(rest)}" if rest else "")
    if isinstance(value, Mapping):
        return ", ".join(f"{_key(k)} {inline(v)}" for k, v in value.items())
    if isinstance(value, list | tuple | set):
        items = list(value)
        if items and all(isinstance(v, Mapping) for v in items):
            return "; ".join(inline(v) for v in items)
        return ", ".join(inline(v) for v in items)
    return number(value)


def _key(key: Any) -> str:
    """A mapping's key in a phrase: a number is a position on an axis (`@4` workers)."""
    text = str(key)
    return f"@{text}" if text.lstrip("-").replace(".", "", 1).isdigit() else text


def rows(evidence: Any) -> list[Row]:
    """A finding's evidence as (label, text) rows: one per top-level key."""
    if evidence is None or evidence == {}:
        return []
    if not isinstance(evidence, Mapping):
        return [("", inline(evidence))]
    return [(str(key), inline(value)) for key, value in evidence.items() if value is not None]


def one_line(evidence: Any) -> str:
    """The rows joined for a single line (the terminal, a markdown table cell)."""
    return "; ".join(f"{label}: {text}" if label else text for label, text in rows(evidence))
