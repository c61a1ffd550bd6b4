"""Column tables printed as text: a header line of names, then one row of numbers per report,
the columns apart by tabs or by two spaces or more. DEAP's Logbook prints one (tab-separated,
padded), one row per generation:

    gen	nevals	avg    	std    	min	max
    0  	300   	50.4933	5.33822	34 	64
    1  	181   	54.8333	4.34958	44 	66

A row is read by the last header above it with as many columns; each number is a reading
named by its column (`gen` a counter of generations, `nevals` and `avg` values: words.py
decides). A line of rules (`----`, `====`) between them changes nothing; a new header
replaces the old one. Names of one or two words (neat-python's `adj fit`); a line of prose
(single spaces, punctuation) is no header.
"""

from __future__ import annotations

import re

from harness.readers.protocol import Reading
from harness.readers.words import reading_kind_name

_APART = re.compile(r"\t\s*|\s*\t|\s{2,}")  # what separates two columns
_NAME = re.compile(r"[A-Za-z_][\w./%-]*(?: [A-Za-z_][\w./%-]*)?")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _fields(line: str) -> list[str]:
    return [f for f in _APART.split(line.strip()) if f]


class Columns:
    name = "columns"
    exclusive = True  # a row of numbers holds nothing else

    def __init__(self) -> None:
        self.header: list[str] | None = None

    def read(self, line: str) -> list[Reading]:
        if "\t" not in line and "  " not in line.strip():
            return []  # no two columns
        fields = _fields(line)
        if len(fields) < 2:
            return []
        if all(_NAME.fullmatch(f) for f in fields):
            self.header = fields
            return []
        if self.header is None or len(fields) != len(self.header) or not all(_NUMBER.fullmatch(f) for f in fields):
            return []
        readings = []
        for key, text in zip(self.header, fields, strict=True):
            kind, name = reading_kind_name(key)
            readings.append(Reading(name, float(text), kind, key))
        return readings
