"""CSV progress files (a header row, then a row appended per report: Stable-Baselines3's
progress.csv, Lightning's CSVLogger metrics.csv, a hand-written log), followed as they grow.

Every numeric cell of a new row is a reading named by its column (`time/total_timesteps` a
counter, `time/fps` a printed rate, `rollout/ep_rew_mean` a value); empty cells are skipped.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

from harness.readers.files import matching
from harness.readers.protocol import Reading
from harness.readers.words import reading_kind_name


class _Followed:
    def __init__(self) -> None:
        self.offset = 0
        self.header: list[str] | None = None
        self.partial = ""
        self.rows = 0


class CsvFile:
    name = "csv"

    def __init__(self, pattern: str, cwd: Path) -> None:
        self.pattern = pattern
        self.cwd = cwd
        self.since = time.time()
        self._files: dict[Path, _Followed] = {}

    def poll(self) -> list[Reading]:
        readings: list[Reading] = []
        for path in matching(self.pattern, self.cwd, self.since):
            state = self._files.setdefault(path, _Followed())
            try:
                with open(path, "rb") as fh:
                    fh.seek(state.offset)
                    chunk = fh.read()
            except OSError:
                continue
            state.offset += len(chunk)
            lines = (state.partial + chunk.decode(errors="replace")).split("\n")
            state.partial = lines.pop()  # a row being written waits for its end
            for row in csv.reader(line for line in lines if line.strip()):
                if state.header is None:
                    state.header = row
                    continue
                state.rows += 1
                readings += _row(state.header, row)
        return readings

    def describe(self) -> str:
        if not self._files:
            return f"csv {self.pattern}: no file yet"
        rows = sum(s.rows for s in self._files.values())
        return f"csv {self.pattern}: {len(self._files)} file(s), {rows} rows"


def _row(header: list[str], row: list[str]) -> list[Reading]:
    out = []
    for key, cell in zip(header, row, strict=False):
        try:
            value = float(cell)
        except ValueError:
            continue
        kind, name = reading_kind_name(key)
        out.append(Reading(name, value, kind, key))
    return out
