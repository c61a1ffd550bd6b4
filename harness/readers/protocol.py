"""What a progress reader gives back, and the two shapes of reader.

A reader turns what a program already writes (its output lines, a file it appends to) into
`Reading`s: a monotone counter's current value (`Iteration 4500`, `total_timesteps 12800`),
a rate the program printed itself (`33.4 iter/s`, `| fps | 5550 |`), or any other logged
number (a loss, an episode return). `harness.readers.feed.Feed` turns readings into probe
calls; readers never touch the probe, so each one is a pure function of its input and can
be tested on text alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

Kind = Literal["counter", "rate", "value", "clock", "lap"]


@dataclass(frozen=True)
class Reading:
    """One number a reader found. `name` is metric-safe (snake_case); a rate's `value` is per
    second whatever the program printed (per minute and per hour are converted); a `clock` is
    the program's own elapsed seconds (tqdm's `[00:12<...]`), held against the harness's; a
    `lap` the seconds the program says one unit of a counter took, named as that counter
    (neat-python's `Generation time: 3.681 sec` is a lap of `generations`): summed, its clock.

    `key` is the text the program labelled it with (`env_step`, `it`), for the record's
    provenance. `slot` says which of the program's reports it came from, when one name can
    come from several: two tqdm bars of the same unit, `episode` in an evaluator's line and in
    the trainer's. Readings of one name and slot are one series; the feed never mixes two."""

    name: str
    value: float
    kind: Kind
    key: str = ""
    slot: str = ""


class LineReader(Protocol):
    """Reads one line of the program's output at a time. A reader whose class sets
    `exclusive = True` claims a line it found something in (a JSON object, a table row): the
    readers after it do not see that line."""

    name: str

    def read(self, line: str) -> list[Reading]: ...


class FileReader(Protocol):
    """Follows files the program writes; `poll` returns what was appended since the last call."""

    name: str

    def poll(self) -> list[Reading]: ...

    def describe(self) -> str:
        """What it follows and has read so far (files, rows, events), for the record."""
        ...
