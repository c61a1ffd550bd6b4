"""The user's own shape: `--progress '[NAME=]REGEX'`, a regular expression with named groups.

Each named group's number is a reading named by the group and classified by its name like
any key (`(?P<frames>\\d+)` a counter, `(?P<fps>[\\d.]+)` a rate, `(?P<reward>...)` a value).
`NAME=` in front declares NAME a counter (the program's progress) whatever its name: the
group NAME, or the regex's only group: `frames=After (\\d+) frames`.
"""

from __future__ import annotations

import re

from harness.readers.protocol import Reading
from harness.readers.words import reading_kind_name, snake

_DECLARED = re.compile(r"^(?P<name>[A-Za-z_]\w*)=(?P<regex>.+)$", re.S)


class Pattern:
    name = "pattern"

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.counter: str | None = None
        self.regex = self._compile(spec)

    def _compile(self, spec: str) -> re.Pattern[str]:
        """The regex, checked; ValueError naming what is wrong and the accepted form."""
        declared = _DECLARED.match(spec)
        candidates = [(declared["name"], declared["regex"])] if declared else []
        candidates.append((None, spec))
        problem = ""
        for name, text in candidates:
            try:
                regex = re.compile(text)
            except re.error as exc:
                problem = f"not a valid regular expression ({exc})"
                continue
            if name is not None and (name in regex.groupindex or regex.groups == 1):
                self.counter = name
                return regex
            if regex.groupindex:
                return regex
            problem = "it has no named group"
        raise ValueError(
            f"progress pattern {spec!r}: {problem}; write a regex with named groups, e.g. "
            "'After (?P<frames>\\d+) frames', or NAME=REGEX with one group: 'frames=After (\\d+) frames'"
        )

    def read(self, line: str) -> list[Reading]:
        match = self.regex.search(line)
        if match is None:
            return []
        readings = []
        if self.counter is not None:
            raw = match.group(self.counter) if self.counter in self.regex.groupindex else match.group(1)
            value = _number(raw)
            if value is not None:
                readings.append(Reading(snake(self.counter), value, "counter", self.counter))
        for group, raw in match.groupdict().items():
            if group == self.counter or (value := _number(raw)) is None:
                continue
            kind, name = reading_kind_name(group)
            readings.append(Reading(name, value, kind, group))
        return readings


def _number(raw: str | None) -> float | None:
    try:
        return float(raw.replace(",", "")) if raw is not None else None
    except ValueError:
        return None
