"""Progress written as prose: a counter beside its number (`Iteration 4500`, `After 51200
frames`, `global_step=1000`, `Episode #12`), rates with their unit (`(33.4 iter/s)`,
`68.3 games/min`, `231646 effective words/s`, `@ 2140.3 fps`, `SPS: 1234`) and the time one
unit took (`Generation time: 3.681 sec`: a lap of `generations`, the program's own clock).

A counter is recognised only by its word (harness.readers.words): `4 workers` is not one,
nor is a unit word that a rate word names (rl_games' `fps step: 742` is a rate's key).
A number that is part of a decimal or a fraction (`33.4`, `12/100`) is never a count, and
one that is a key's value (`fps step: 742 fps ...`) is not the number of the `fps` after it.
"""

from __future__ import annotations

import re

from harness.readers.protocol import Reading
from harness.readers.words import COUNTER_WORDS, RATE_WORDS, context, counter_name, kind_of, per_second_name

# A count: `4500`, `12,345` (thousands grouped by threes). A comma after a number ends it: in
# `env_episode=10, env_step=130` the 10 belongs to env_episode, not to the word after it. A
# number inside a name (`iteration_40.pth.tar`, `v2`) is no count, nor is a negative one
# (`pop_best_eval : -969`: pairs reads it whole, and the feed takes it for a value).
_COUNT = r"(?<![\w.,-])(?:\d{1,3}(?:,\d{3})+|\d+)(?![\w]|,\d|\.\w|\s*/\s*\d|\s*%)"
_WORD_THEN_COUNT = re.compile(rf"\b(?P<word>[A-Za-z][A-Za-z_]*)\s*[#:=]?\s*(?P<n>{_COUNT})")
# `After 51200 frames` (`: @ 2140.3 fps` after it too), but not `frames=1000 steps=100` nor
# `step 400 eval: -2` (there the word names the next number)
_COUNT_THEN_WORD = re.compile(rf"(?P<n>{_COUNT})\s+(?P<word>[A-Za-z][A-Za-z_]*)\b(?!\s*[/=]|\s*:\s*[-+]?\.?\d)")
_VALUE = r"(?P<value>\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?)"
# `33.4 iter/s`, `68.3 games per minute`, and one word before the unit: `231646 effective words/s`
PER_UNIT = re.compile(
    _VALUE + r"\s*(?P<unit>[A-Za-z][A-Za-z_.-]*?(?: [A-Za-z][A-Za-z_.-]*?)?)\s*(?:/|\bper\s+)"
    r"(?P<per>s|sec|secs|second|seconds|min|mins|minute|minutes|h|hr|hour|hours)\b"
)
# `Generation time: 3.681 sec`, `epoch_time=12.5s`: the seconds one unit of a counter took
_LAP = re.compile(
    r"\b(?P<word>[A-Za-z]+)[ _]time\s*[:=]\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>ms|s|sec|secs|seconds|min|mins|minutes)\b"
)
_OF_A_KEY = re.compile(r"[:=]\s*$")  # text before a number that makes it a key's value
_FPS_AFTER = re.compile(_VALUE + r"\s*(?P<unit>fps|sps|FPS|SPS)\b(?!\s*[=:])")  # `fps=100` is the key of 100
_FPS_BEFORE = re.compile(r"\b(?P<unit>fps|sps|FPS|SPS)\b\s*[:=@]?\s*" + _VALUE)
_LETTERS = re.compile(r"[a-z]+")
_WORDS = re.compile(r"[A-Za-z]+")
_PER_SECONDS = {"s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0}
_PER_SECONDS.update({k: 60.0 for k in ("min", "mins", "minute", "minutes")})
_PER_SECONDS.update({k: 3600.0 for k in ("h", "hr", "hour", "hours")})
_SECONDS = {"ms": 0.001, **{k: 60.0 for k in ("min", "mins", "minutes")}}  # a lap's unit, in seconds


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
                if kind_of(match["word"]) == "counter" and not _named_by_a_rate(line, match):
                    slot = context(line[: match.start()])
                    readings.append(
                        Reading(counter_name(match["word"]), _float(match["n"]), "counter", match["word"], slot)
                    )
        if "/" in line or " per " in lower:
            readings += self._per_unit(line)
        if "time" in lower:
            readings += self._laps(line)
        if "fps" in lower or "sps" in lower:
            for pattern in (_FPS_AFTER, _FPS_BEFORE):
                for match in pattern.finditer(line):
                    if pattern is _FPS_AFTER and _OF_A_KEY.search(line[: match.start()]):
                        continue  # `fps step: 742 fps ...`: 742 is `fps step`'s
                    name = f"printed_{match['unit'].lower()}"
                    readings.append(
                        Reading(name, _float(match["value"]), "rate", match["unit"], context(line[: match.start()]))
                    )
        return readings

    def _per_unit(self, line: str) -> list[Reading]:
        readings = []
        for match in PER_UNIT.finditer(line):
            seconds = _PER_SECONDS[match["per"].lower()]
            rate = _float(match["value"]) / seconds
            readings.append(
                Reading(per_second_name(match["unit"]), rate, "rate", match.group(0), context(line[: match.start()]))
            )
        return readings

    def _laps(self, line: str) -> list[Reading]:
        readings = []
        for match in _LAP.finditer(line):
            if kind_of(match["word"]) != "counter":
                continue
            seconds = _float(match["value"]) * _SECONDS.get(match["unit"].lower(), 1.0)
            slot = context(line[: match.start()])
            readings.append(Reading(counter_name(match["word"]), seconds, "lap", match.group(0), slot))
        return readings


def _named_by_a_rate(line: str, match: re.Match[str]) -> bool:
    """A unit word right after a rate word is that rate's key (`fps step: 742`), not a counter."""
    before = _WORDS.findall(line[: match.start("word")])
    return bool(before) and before[-1].lower() in RATE_WORDS
