"""Progress written as prose: a counter beside its number (`Iteration 4500`, `After 51200
frames`, `global_step=1000`, `Episode #12`) and rates with their unit (`(33.4 iter/s)`,
`68.3 games/min`, `@ 2140.3 fps`, `SPS: 1234`).

A counter is recognised only by its word (harness.readers.words): `4 workers` is not one.
A number that is part of a decimal or a fraction (`33.4`, `12/100`) is never a count.
"""

from __future__ import annotations

import re

from harness.readers.protocol import Reading
from harness.readers.words import COUNTER_WORDS, context, counter_name, kind_of, per_second_name

# A count: `4500`, `12,345` (thousands grouped by threes). A comma after a number ends it: in
# `env_episode=10, env_step=130` the 10 belongs to env_episode, not to the word after it. A
# number inside a name (`iteration_40.pth.tar`, `v2`) is no count.
_COUNT = r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?![\w]|,\d|\.\w|\s*/\s*\d|\s*%)"
_WORD_THEN_COUNT = re.compile(rf"\b(?P<word>[A-Za-z][A-Za-z_]*)\s*[#:=]?\s*(?P<n>{_COUNT})")
# `After 51200 frames`, but not `frames=1000 steps=100` (there `steps` names the next number)
_COUNT_THEN_WORD = re.compile(rf"(?P<n>{_COUNT})\s+(?P<word>[A-Za-z][A-Za-z_]*)\b(?!\s*/|\s*=)")
_VALUE = r"(?P<value>\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_PER_UNIT = re.compile(
    _VALUE + r"\s*(?P<unit>[A-Za-z][A-Za-z_.-]*?)\s*(?:/|\bper\s+)"
    r"(?P<per>s|sec|secs|second|seconds|min|mins|minute|minutes|h|hr|hour|hours)\b"
)
_FPS_AFTER = re.compile(_VALUE + r"\s*(?P<unit>fps|sps|FPS|SPS)\b(?!\s*[=:])")  # `fps=100` is the key of 100
_FPS_BEFORE = re.compile(r"\b(?P<unit>fps|sps|FPS|SPS)\b\s*[:=@]?\s*" + _VALUE)
_LETTERS = re.compile(r"[a-z]+")
_PER_SECONDS = {"s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0}
_PER_SECONDS.update({k: 60.0 for k in ("min", "mins", "minute", "minutes")})
_PER_SECONDS.update({k: 3600.0 for k in ("h", "hr", "hour", "hours")})


def _float(text: str) -> float:
    return float(text.replace(",", ""))


class Sentences:
    name = "sentences"

    def read(self, line: str) -> list[Reading]:
        """The regexes run only on lines that hold what they look for: most lines of a log
        are neither counts nor rates, and a line costs this reader most of its time."""
        readings = []
        lower = line.lower()
        if COUNTER_WORDS.intersection(_LETTERS.findall(lower)):
            for match in (*_WORD_THEN_COUNT.finditer(line), *_COUNT_THEN_WORD.finditer(line)):
                if kind_of(match["word"]) == "counter":
                    slot = context(line[: match.start()])
                    readings.append(
                        Reading(counter_name(match["word"]), _float(match["n"]), "counter", match["word"], slot)
                    )
        if "/" in line or " per " in lower:
            readings += self._per_unit(line)
        if "fps" in lower or "sps" in lower:
            for pattern in (_FPS_AFTER, _FPS_BEFORE):
                for match in pattern.finditer(line):
                    name = f"printed_{match['unit'].lower()}"
                    readings.append(
                        Reading(name, _float(match["value"]), "rate", match["unit"], context(line[: match.start()]))
                    )
        return readings

    def _per_unit(self, line: str) -> list[Reading]:
        readings = []
        for match in _PER_UNIT.finditer(line):
            seconds = _PER_SECONDS[match["per"].lower()]
            rate = _float(match["value"]) / seconds
            readings.append(
                Reading(per_second_name(match["unit"]), rate, "rate", match.group(0), context(line[: match.start()]))
            )
        return readings
