"""Tabular loggers that print `| key | value |` rows (Stable-Baselines3's, and the many
loggers modelled on it):

    | rollout/           |          |
    |    ep_rew_mean     | 22.3     |
    | time/              |          |
    |    fps             | 5550     |
    |    total_timesteps | 2048     |

A row with a number is a reading named by its key (the section row above it only groups:
`fps` is a printed rate, `total_timesteps` a counter, `ep_rew_mean` a value).
"""

from __future__ import annotations

import re

from harness.readers.protocol import Reading
from harness.readers.words import reading_kind_name

_ROW = re.compile(
    r"^\s*\|\s*(?P<key>[^|]*?[A-Za-z][^|]*?)\s*\|\s*(?P<value>[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*\|\s*$"
)


class Table:
    name = "table"
    exclusive = True  # a table row holds one key and its number

    def read(self, line: str) -> list[Reading]:
        match = _ROW.match(line)
        if match is None:
            return []
        try:
            value = float(match["value"].replace(",", ""))
        except ValueError:
            return []
        kind, name = reading_kind_name(match["key"])
        return [Reading(name, value, kind, match["key"].strip())]
