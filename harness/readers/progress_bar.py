"""Progress bars: tqdm's `1234/10000 [00:12<01:30, 98.7it/s]` (or `1.23s/it` when slow,
a unit of its own: `512/2000 [00:03<00:09, 160.52steps/s]`, counts like `12.3k`), and rich's
`1,234/10,000 ... 98.7 it/s`.

The count is a counter named by the bar's unit (`it` -> `iterations`), the rate a printed
rate, the elapsed time (`[00:12<`) the program's clock. A bar restarts at 0 each epoch; the
feed treats a counter that falls to zero and grows again as a new run of it, so every
epoch's units still count. Each bar is its own slot, told by its description's words and
its total: an outer `2/10` epoch bar and the inner `1032/10000` bar are two series.
"""

from __future__ import annotations

import re

from harness.readers.protocol import Reading
from harness.readers.words import context, counter_name, per_second_name

_NUM = r"\d[\d,]*(?:\.\d+)?[kMGT]?"
_TQDM = re.compile(
    rf"(?P<n>{_NUM})(?:/(?P<total>{_NUM}))?\s*\[(?P<elapsed>[\d:]+)(?:<[\d:?]+)?,\s*"
    r"(?:(?P<rate>[\d.]+[kMGT]?|\?)\s*(?P<unit>[A-Za-z_]*)/s|(?P<inverse>[\d.]+)\s*s/(?P<unit2>[A-Za-z_]+))"
)
_RICH = re.compile(rf"(?P<n>{_NUM})/(?P<total>{_NUM})\b.*?(?P<rate>\d[\d,]*(?:\.\d+)?)\s*(?P<unit>[A-Za-z_]+)/s\b")
_SCALE = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def number(text: str) -> float:
    text = text.replace(",", "")
    if text and text[-1] in _SCALE:
        return float(text[:-1]) * _SCALE[text[-1]]
    return float(text)


class ProgressBar:
    name = "progress_bar"

    def read(self, line: str) -> list[Reading]:
        match = _TQDM.search(line) or _RICH.search(line)
        if match is None:
            return []
        groups = match.groupdict()
        unit = groups.get("unit") or groups.get("unit2") or "it"
        counter = counter_name(unit)
        slot = f"bar {context(line[: match.start()])}/{groups.get('total') or ''}"
        readings = [Reading(counter, number(groups["n"]), "counter", unit, slot)]
        if groups.get("rate") not in (None, "?"):
            readings.append(Reading(per_second_name(unit), number(groups["rate"]), "rate", f"{unit}/s", slot))
        elif groups.get("inverse"):
            seconds = float(groups["inverse"])
            if seconds > 0:
                readings.append(Reading(per_second_name(unit), 1.0 / seconds, "rate", f"s/{unit}", slot))
        if groups.get("elapsed"):
            readings.append(Reading("elapsed_s", clock_seconds(groups["elapsed"]), "clock", "elapsed", slot))
        return readings


def clock_seconds(text: str) -> float:
    """`01:30` -> 90, `1:02:03` -> 3723."""
    seconds = 0.0
    for part in text.split(":"):
        seconds = seconds * 60 + float(part or 0)
    return seconds
