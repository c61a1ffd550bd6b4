"""Numbers a program printed that grew, though no reader took them for its progress: the
`--progress` a user could pass, offered as the exact flag to paste.

A program's progress may sit under a word that names no unit (`processed=12800`,
`done: 4500`, `| seen | 10240 |`, `{"handled": 77}`): the readers record it as a value, and
a cell ends with no counter. A value that never fell and grew GROWTHS_MIN times or more is a
candidate (its clock aside: `elapsed` grows too, and is what the counter's rate is checked
against; and a statistic: DEAP's `max` fitness grew 64 -> 100, and counts nothing); the warning names the most grown first, each as `--progress 'NAME=REGEX'`, a
pattern that reads that key's number in the shape its reader found it (pairs, a table row,
a JSON key), so pasted as it is it counts that number.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from harness.readers.protocol import Reading
from harness.readers.words import is_clock, is_statistic, leaf, snake

GROWTHS_MIN = 3  # a number seen to grow this often, and never to fall, may be progress
SHOWN = 3  # candidates a warning names
MAX_TRACKED = 200  # value names followed (a program logging thousands of keys is not slowed)


@dataclass
class Grown:
    """One value's sightings: the key as printed, the reader that found it, how it moved."""

    key: str
    reader: str
    first: float
    last: float
    growths: int = 0
    falls: int = 0
    whole: bool = True  # every reading an integer

    def see(self, value: float) -> None:
        if value > self.last:
            self.growths += 1
        elif value < self.last:
            self.falls += 1
        self.last = value
        self.whole = self.whole and value == int(value)

    @property
    def name(self) -> str:
        """The counter's name a --progress NAME= declares (a Python identifier)."""
        name = snake(leaf(self.key)) or "progress"
        return name if name[0].isalpha() else f"n_{name}"

    def regex(self) -> str:
        """A pattern for this key's number in the shape its reader found it."""
        number = r"(\d+)" if self.whole else r"(\d+(?:\.\d+)?)"
        key = re.escape(leaf(self.key)).replace("\\ ", " ")
        key = f"\\b{key}" if re.match(r"\w", key) else key
        if self.reader == "json":
            return f'"{key}":\\s*{number}'
        if self.reader == "table":
            return f"\\|\\s*{key}\\s*\\|\\s*{number}"
        return f"{key}\\s*[=:]\\s*{number}"

    def choice(self) -> str:
        """The flag to paste: `--progress 'processed=processed\\s*[=:]\\s*(\\d+)'`."""
        return f"--progress {shlex.quote(f'{self.name}={self.regex()}')}"

    def describe(self) -> str:
        return f"`{self.key}` ({self.first:g} -> {self.last:g}, grew {self.growths}x): {self.choice()}"


class Growing:
    """Follows the values (and counters) readers found, by name, and says which grew like
    progress. A feed hands it its readings (a sweep cell's, and `harness watch`'s through
    harness.monitors.logprogress)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], Grown] = {}  # (kind, name) -> its sightings

    def see(self, reading: Reading, reader: str) -> None:
        if reading.kind not in ("value", "counter") or is_clock(reading.name) or is_statistic(reading.name):
            return  # a clock grows too; a `max` or a `best` fitness that grows is no progress
        grown = self._seen.get((reading.kind, reading.name))
        if grown is None:
            if len(self._seen) < MAX_TRACKED:
                self._seen[(reading.kind, reading.name)] = Grown(
                    reading.key or reading.name, reader, reading.value, reading.value
                )
            return
        grown.see(reading.value)

    def candidates(self, kind: str = "value") -> list[Grown]:
        """Values (or counters) that never fell and grew GROWTHS_MIN times or more, the most
        grown first."""
        found = [g for (k, _), g in self._seen.items() if k == kind and g.falls == 0 and g.growths >= GROWTHS_MIN]
        return sorted(found, key=lambda g: -g.growths)

    def advice(self) -> str:
        """`it printed values that grew: `processed` (64 -> 9024, grew 40x): --progress '...'`,
        or an empty string."""
        found = self.candidates()[:SHOWN]
        if not found:
            return ""
        return "it printed values that grew, each a --progress to paste: " + "; ".join(g.describe() for g in found)
