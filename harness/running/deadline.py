"""When a cell's time is up, and how it is asked to keep what it measured before it is ended.

A cell's deadline comes from the flags (duration + warm-up + DEFAULT_DEADLINE_SLACK_S,
harness.running.matrix) unless the user set `--timeout`. The automatic warm-up starts again
at the program's first progress, so a program whose first report comes late opens its
measured window late: EvoTorch on Ray reported its first generation 55-70 s in, its window
opened past 70 s, and both `--duration 90` cells were killed at their 160 s deadline with 7
and 11 generations in their logs and nothing recorded. So a deadline taken from the flags
follows the window: each time the child's channel (harness.cell.messages) says the window
opened, the first time or again after the warm-up started over, the deadline is at least
that moment + duration + the slack, and at most FOLLOW_MAX times what the flags set (a live
EvoTorch cell's window opened at the 10 s cap, 14 s in, and again after its first generation:
following only the first opening, it was cut short at 164 s with 73 of its 90 s). A window
that never opens leaves the deadline where the flags put it, and a `--timeout` the user gave
is never moved.

At the deadline the runner first asks the cell to close its window (DEADLINE_SIGNAL to the
cell's interpreter, which makes the probe's next `should_stop()` true: harness.cell.main),
waits ACK_S for the channel to show it did and CUT_SHORT_GRACE_S for its result, and then
ends the tree as always (a hung cell costs ACK_S more than before, no more). A cell that
answered keeps what it measured, its status still `timeout`, its reason saying it was cut
short and how much of its window it had (harness.running.runner).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from harness.cell.main import DEADLINE_SIGNAL
from harness.cell.messages import SAMPLE, Reader
from harness.cell.processes import KILL_GRACE_S
from harness.running import interrupts
from harness.running.matrix import DEFAULT_DEADLINE_SLACK_S, Cell

# seconds a cell gets to close its window and report: a program's suite stops it first
# (harness.program's stop_grace_s, 5 s by default), then reads what it printed last
CUT_SHORT_GRACE_S = 15.0
# seconds for its channel to show the window closed: the probe does it at the suite's next
# should_stop(), which a program's suite asks every 0.1 s; a hung suite never does
ACK_S = 3.0
MEASURE, STOPPED = "measure", "stopped"
FOLLOW_MAX = 2.0  # the most a followed deadline reaches, in deadlines the flags set
# seconds the runner may take past the deadline besides the report: the stack dump at the
# deadline and the tree's ends (SIGTERM, then SIGKILL, twice: the group, then escaped processes)
END_S = 15.0 + 2 * KILL_GRACE_S


def longest_s(cell: Cell) -> float:
    """The longest one cell-repeat can take in its runner, from its start to its record: its
    deadline (a followed one moved at most to FOLLOW_MAX times the flags'), the time it is
    given to close its window and report, and the time to dump its stacks and end its tree.
    A caller that waits on a cell it cannot see (a Ray node) waits this plus its own grace."""
    follows = cell.deadline_follows_window and cell.duration is not None
    return cell.timeout * (FOLLOW_MAX if follows else 1.0) + ACK_S + CUT_SHORT_GRACE_S + END_S


class Deadline:
    """A cell-repeat's deadline, on the monotonic clock, moved by a window that opens late:
    each time the child's channel says the window opened (the first time, and again after a
    warm-up that started over), the deadline is at least then + duration + the slack, and at
    most FOLLOW_MAX times what the flags set (a suite that keeps restarting its warm-up
    cannot keep its cell alive)."""

    def __init__(self, cell: Cell, channel: Path, started: float | None = None) -> None:
        self.started = time.monotonic() if started is None else started
        self.set_at = self.started + cell.timeout
        self.at = self.set_at
        self._timeout = cell.timeout
        follows = cell.deadline_follows_window and cell.duration is not None
        self._duration = cell.duration or 0.0
        self._reader = Reader(channel) if follows else None
        self._phase: str | None = None
        self.opened_after: float | None = None  # seconds from the start to the window's last opening

    def left(self) -> float:
        """Seconds to the deadline, once the child's new lines have been read."""
        self._follow()
        return self.at - time.monotonic()

    def _follow(self) -> None:
        if self._reader is None:
            return
        for message in self._reader.read():
            if message.get("type") != SAMPLE:
                continue
            phase = message.get("phase")
            opened = phase == MEASURE and self._phase != MEASURE  # the first measure sample after another phase
            self._phase = phase
            if opened:
                now = time.monotonic()
                self.opened_after = now - self.started
                cap = max(self.started + FOLLOW_MAX * self._timeout, self.set_at)
                self.at = min(max(self.at, now + self._duration + DEFAULT_DEADLINE_SLACK_S), cap)

    def said(self) -> str:
        """`160 s` or, moved, `232 s (160 s from the flags, moved with the window that opened at 72 s)`."""
        total = self.at - self.started
        if self.at <= self.set_at or self.opened_after is None:
            return f"{self._timeout:g} s"
        return (
            f"{total:.0f} s ({self._timeout:g} s from the flags, moved with the measured window that opened at "
            f"{self.opened_after:.0f} s)"
        )

    def wait(self, proc: subprocess.Popen[bytes]) -> None:
        """proc.wait until the deadline (TimeoutExpired past it)."""
        wait_until(proc, self.left)


def wait_until(proc: subprocess.Popen[bytes], left: Callable[[], float]) -> None:
    """proc.wait while `left()` seconds remain, raising TimeoutExpired once none do; a Ctrl-C
    recorded by harness.running.interrupts is raised here every POLL_S, in ordinary code, so
    the caller's cleanup runs."""
    while True:
        interrupts.check()
        remaining = left()
        if remaining <= 0:
            raise subprocess.TimeoutExpired(proc.args, 0)
        try:
            proc.wait(timeout=min(interrupts.POLL_S, remaining))
            return
        except subprocess.TimeoutExpired:
            continue


def ask_to_report(proc: subprocess.Popen[bytes], channel: Path) -> bool:
    """Ask the cell's interpreter to close its window and report; wait ACK_S for its channel
    to show the window closed (a suite that is hung, or never asks should_stop(), cannot),
    then up to CUT_SHORT_GRACE_S for it to end. True when it ended (its result, if it wrote
    one, is in its channel). The caller ends the tree either way."""
    reader = Reader(channel)
    try:
        proc.send_signal(DEADLINE_SIGNAL)
    except ProcessLookupError:
        return True
    start = time.monotonic()
    closed = False

    def left() -> float:
        nonlocal closed
        closed = closed or any(m.get("phase") == STOPPED for m in reader.read() if m.get("type") == SAMPLE)
        return start + (CUT_SHORT_GRACE_S if closed else ACK_S) - time.monotonic()

    try:
        wait_until(proc, left)
    except subprocess.TimeoutExpired:
        return False
    return True
