"""The child's channel: the JSON lines a cell (`python -m harness.cell`) writes to its parent,
and the one reader of them.

One line per message, written as it happens, so a cell that hangs or is killed still leaves
what it had said by then:

- `start`   the child's wall clock as it began (the parent aligns its monitors' samples with it)
- `sample`  the probe's counters, every second and at each phase change (`t`: seconds on
            the child's clock since its probe started)
- `point`   a number the suite set (a quality metric, a fact), at `t`
- `rate`    the headline counter the cell declared at run time (Probe.declare_rate)
- `result`  the probe's metrics and warnings, last
- `error`   or instead: why the cell failed, whether that is the user's input, the tail of
            the traceback, the warnings so far

The writers (harness.cell.main, harness.probe) build messages only through the constructors
here; the readers (the cell runner once the child has ended, the A/B slicer while it runs)
read them only through `Reader` and `ChildStream`. The format is also a contract between
revisions: an A/B's base side runs an older tree's cell, whose lines this reader must still
understand, so fields are added, never renamed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Message = dict[str, Any]  # one line of the channel, as the probe's sink receives it

START = "start"
SAMPLE = "sample"
POINT = "point"
RATE = "rate"
RESULT = "result"
ERROR = "error"


# ---------------------------------------------------------------------- writing
def start(wall: float) -> Message:
    return {"type": START, "wall": wall}


def sample(t: float, phase: str, counters: dict[str, float], counted: dict[str, float] | None = None) -> Message:
    """`counted`: when each counter that lags the sample last moved (harness.cell.probe)."""
    message = {"type": SAMPLE, "t": t, "phase": phase, "counters": counters}
    if counted:
        message["counted"] = counted
    return message


def point(t: float, name: str, value: float) -> Message:
    return {"type": POINT, "t": t, "name": name, "value": value}


def rate(counter: str) -> Message:
    return {"type": RATE, "counter": counter}


def result(metrics: dict[str, Any], warnings: list[str]) -> Message:
    return {"type": RESULT, "metrics": metrics, "warnings": warnings}


def error(reason: str, *, user_error: bool, traceback: str | None, warnings: list[str]) -> Message:
    return {"type": ERROR, "reason": reason, "user_error": user_error, "traceback": traceback, "warnings": warnings}


def line(message: Message) -> str:
    """The message as one line of the channel (values JSON cannot hold become strings)."""
    return json.dumps(message, default=str) + "\n"


# ---------------------------------------------------------------------- reading
class Reader:
    """Reads a channel file as it grows: each call returns the messages completed since the
    last one. The child may be writing a line at the moment it is read, or be killed in the
    middle of one: an unfinished last line waits for its end, and a line that is not a JSON
    object (the torn remains of a kill) is skipped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._tail = b""

    def read(self, final: bool = False) -> list[Message]:
        """New messages. `final`: the child has ended, so an unfinished last line is all it
        will ever write: it is read if it holds a whole message, else dropped."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                data = fh.read()
        except FileNotFoundError:
            data = b""
        self._offset += len(data)
        lines = (self._tail + data).split(b"\n")
        self._tail = b"" if final else lines.pop()
        messages = []
        for raw in lines:
            try:
                message = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue  # blank, or cut short by a kill
            if isinstance(message, dict):
                messages.append(message)
        return messages


@dataclass
class ChildStream:
    """What the child has said, by kind of message."""

    start_wall: float | None = None
    samples: list[Message] = field(default_factory=list)
    points: list[Message] = field(default_factory=list)
    declared: str | None = None  # the headline counter declared at run time
    final: Message | None = None  # its result or error

    @classmethod
    def read(cls, path: Path) -> ChildStream:
        """Everything an ended child wrote (nothing, when it wrote no file)."""
        stream = cls()
        stream.add(Reader(path).read(final=True))
        return stream

    def add(self, messages: list[Message]) -> list[Message]:
        """Take in messages in the order they were written; returns the new samples."""
        new = []
        for message in messages:
            kind = message.get("type")
            if kind == SAMPLE:
                self.samples.append(message)
                new.append(message)
            elif kind == POINT:
                self.points.append(message)
            elif kind == START:
                self.start_wall = message["wall"]
            elif kind == RATE:
                self.declared = str(message.get("counter"))
            elif kind in (RESULT, ERROR):
                self.final = message
        return new

    @property
    def error_message(self) -> Message | None:
        """The child's `error` message, when it ended with one."""
        return self.final if self.final is not None and self.final.get("type") == ERROR else None
