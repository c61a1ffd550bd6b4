"""`key=value` and `key: value` pairs (`loss=0.31 lr=3e-4`, `SPS: 1234`, `ep_return: 20.5`,
`Total num frames: 12345`), each classified by its key.

Keys are one to four words (`Total num frames`); clock times (`00:12`, `ETA: 0:01:30`) are
not values.
"""

from __future__ import annotations

import re

from harness.readers.protocol import Reading
from harness.readers.words import context, reading_kind_name

_PAIR = re.compile(
    r"(?<![\w./-])(?P<key>[A-Za-z][\w./-]*(?: [A-Za-z][A-Za-z_]*){0,3})\s*(?:=|:)\s*"
    r"(?P<value>[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?![\w:/.])"
)

_TIME_UNITS = {"s", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes", "ms", "h", "hr", "hour"}


class Pairs:
    name = "pairs"

    def read(self, line: str) -> list[Reading]:
        readings = []
        for match in _PAIR.finditer(line):
            if match["key"].lower() in _TIME_UNITS:
                continue  # `(10 sec: 2100.5, ...)`: a window's length labels the number, it is not its name
            try:
                value = float(match["value"].replace(",", ""))
            except ValueError:
                continue
            kind, name = reading_kind_name(match["key"])
            readings.append(Reading(name, value, kind, match["key"], context(line[: match.start()])))
        return readings
