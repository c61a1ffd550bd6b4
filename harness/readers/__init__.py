"""Progress readers: what a program already writes, turned into the harness's counters and
values (harness.readers.feed) as it runs. One module per shape, behind the two protocols
of harness.readers.protocol:

    lines: pattern (the user's --progress regex), jsonlines (JSON objects), table (`| key |
           value |` rows), columns (a header of names, then rows of numbers: DEAP's Logbook),
           progress_bar (tqdm, rich), sentences (`Iteration 4500 (33.4 iter/s)`, `After 51200
           frames`, `Generation time: 3.6 sec`), pairs (`key=value`, `key: value`)
    files: csvfile (CSV progress files), tensorboard (event files)

`line_readers()` gives them in the order they are tried on a line (the first to find a name
keeps it); `file_readers()` one per --progress-file pattern, by what it names.
"""

from __future__ import annotations

from pathlib import Path

from harness.readers.columns import Columns
from harness.readers.csvfile import CsvFile
from harness.readers.feed import Feed
from harness.readers.jsonlines import JsonLines
from harness.readers.pairs import Pairs
from harness.readers.pattern import Pattern
from harness.readers.progress_bar import ProgressBar
from harness.readers.protocol import FileReader, LineReader, Reading
from harness.readers.sentences import Sentences
from harness.readers.table import Table
from harness.readers.tensorboard import TensorBoardEvents

__all__ = ["Feed", "FileReader", "LineReader", "Reading", "file_readers", "line_readers", "patterns"]


def patterns(specs: str) -> list[Pattern]:
    """The user's --progress specs, one a line; ValueError on a bad one."""
    return [Pattern(spec) for spec in specs.splitlines() if spec.strip()]


def line_readers(specs: str = "") -> list[LineReader]:
    """The user's --progress patterns first: what they name is taken from any line, a JSON
    object's or a table row's too (those readers claim their lines from the readers after them)."""
    return [*patterns(specs), JsonLines(), Table(), Columns(), ProgressBar(), Sentences(), Pairs()]


def file_readers(specs: str, cwd: Path) -> list[FileReader]:
    """One reader per pattern: `.csv` files are CSV, anything else (an event file, a log
    directory, `runs/**`) TensorBoard events."""
    out: list[FileReader] = []
    for spec in (s.strip() for s in specs.splitlines()):
        if not spec:
            continue
        out.append(CsvFile(spec, cwd) if spec.lower().endswith(".csv") else TensorBoardEvents(spec, cwd))
    return out
