"""JSON objects, one a line: any program's (`{"step": 500, "loss": 0.3}`, numbers at any
depth, keys joined by "/"), classified by their keys like every other reader's.

The harness's own messages (`{"count": {...}}`, `{"observe": ...}`, `{"set": ...}`,
`{"work": ...}`, `{"phase": ...}`) are not readings: `is_probe_message` says so, and the
command suite applies them to the probe as they are.
"""

from __future__ import annotations

import json
from typing import Any

from harness.readers.protocol import Reading
from harness.readers.words import reading_kind_name

PROBE_KEYS = frozenset({"count", "observe", "set", "work", "phase"})


def parse_object(line: str) -> dict[str, Any] | None:
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def is_probe_message(obj: dict[str, Any]) -> bool:
    return bool(obj) and set(obj) <= PROBE_KEYS


def _numbers(obj: dict[str, Any], prefix: str = "") -> list[tuple[str, float]]:
    out = []
    for key, value in obj.items():
        path = f"{prefix}{key}"
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            out.append((path, float(value)))
        elif isinstance(value, dict):
            out += _numbers(value, path + "/")
    return out


class JsonLines:
    name = "json"
    exclusive = True  # a JSON object is all the line holds: no other reader looks at it

    def read(self, line: str) -> list[Reading]:
        obj = parse_object(line)
        if obj is None or is_probe_message(obj):
            return []
        readings = []
        for key, value in _numbers(obj):
            kind, name = reading_kind_name(key)
            readings.append(Reading(name, value, kind, key))
        return readings
