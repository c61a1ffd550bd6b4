"""A cell's log: what its processes write to stdout and stderr, kept within a cap.

The cell's processes (the child, its workers, a program it runs, faulthandler's report of a
native crash) write into one pipe, and a thread of the harness copies it to logs/KEY.log:
the harness is the only writer of the file, so it alone decides how big it gets and meets
a full disk in one place (harness.runs.files). A program that floods its output fills the
file up to the cap; past it the newest output is held in memory (at most one cap), and when
the cell ends the file is rewritten as a first line saying what was dropped and the last
`cap` bytes, the end of the output being what explains how a cell ended. The pipe never
backs up on the harness's account: when the file cannot be written (full disk) the output
is still read and counted, and its last lines still give the record its reason.
"""

from __future__ import annotations

import errno
import fcntl
import os
import select
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.errors import StorageError
from harness.runs.files import write_all

DEFAULT_CAP_MB = 16.0
CHUNK = 1 << 20
RECENT_BYTES = 16 * 1024  # kept in memory for the record's reason, whatever reaches the file
DRAIN_S = 1.0  # after the cell: how long output still arriving (an escaped writer) is read
_F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ, Linux (Python 3.10+ names it; not every build)


@dataclass
class LogSummary:
    """What became of a cell's output."""

    written: int  # bytes the cell's processes wrote
    kept: int  # bytes of it in the log file
    cap: int
    error: StorageError | None = None  # the file stopped being written here

    @property
    def capped(self) -> bool:
        return self.error is None and self.written > self.kept

    def note(self) -> dict[str, int] | None:
        """The record's `log_capped`: the cap and what it cut, or None when nothing was."""
        if not self.capped:
            return None
        return {"cap_bytes": self.cap, "written_bytes": self.written, "kept_bytes": self.kept}

    def warning(self) -> str | None:
        if self.error is not None:
            return (
                f"the cell's log could not be written past {_size(self.kept)} of {_size(self.written)} "
                f"({self.error.detail}); the harness's failure, not the program's"
            )
        if self.capped:
            return (
                f"the cell wrote {_size(self.written)} to its log, past its cap of {_size(self.cap)}: "
                f"only the last {_size(self.kept)} are kept (log_cap_mb, --log-cap-mb)"
            )
        return None


class CellLog:
    """The pipe a cell writes to and the thread that copies it into the log, capped.

    `on_data`, when given, is handed every chunk of output as it arrives, before the cap
    (harness watch reads its program's rates there, so they go on past the cap)."""

    def __init__(self, path: Path, cap_bytes: int, on_data: Callable[[bytes], None] | None = None) -> None:
        self.path = path
        self.cap = max(int(cap_bytes), 1024)
        self._on_data = on_data
        self._file = _open_log(path)  # StorageError when even that fails
        self.read_fd, self.write_fd = os.pipe()
        _widen(self.write_fd)
        self.written = 0
        self.on_disk = 0
        self.error: StorageError | None = None
        self._overflow: deque[bytes] = deque()
        self._overflow_size = 0
        self._recent = b""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._pump, name=f"log {path.name}", daemon=True)
        self._thread.start()

    def started(self) -> None:
        """The child has its copy of the pipe: close ours, so the pipe ends with the cell."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def drain(self, timeout_s: float = 1.0) -> None:
        """Wait, at most `timeout_s`, until every writer has closed the pipe and the thread has
        handed on all it read: a program that printed its last rates just before it exited
        had them read by the thread after the watch's instruments had stopped (10 of 12)."""
        self._thread.join(timeout_s)

    def close(self) -> LogSummary:
        """After the cell's processes have ended: read what is left, cut to the cap."""
        self.started()
        self._stop.set()
        self._thread.join()
        os.close(self.read_fd)
        try:
            if self.error is None and self._overflow_size:
                self._keep_tail()
        finally:
            os.close(self._file)
        return LogSummary(self.written, self.on_disk, self.cap, self.error)

    def recent_text(self) -> str:
        """The output's last lines, from memory: there even when the file could not be written."""
        return self._recent.decode(errors="replace")

    # ------------------------------------------------------------------ the thread
    def _pump(self) -> None:
        poller = select.poll()
        poller.register(self.read_fd, select.POLLIN)
        drain_until: float | None = None
        while True:
            stopping = self._stop.is_set()
            if stopping and drain_until is None:
                drain_until = _now() + DRAIN_S
            if stopping and _now() > drain_until:
                return  # a writer that escaped the cell still holds the pipe
            if not poller.poll(0 if stopping else 100):
                if stopping:
                    return
                continue
            data = os.read(self.read_fd, CHUNK)
            if not data:
                return  # every writer has closed it
            self._take(data)

    def _take(self, data: bytes) -> None:
        if self._on_data is not None:
            self._on_data(data)
        self.written += len(data)
        self._recent = (self._recent + data)[-RECENT_BYTES:]
        room = self.cap - self.on_disk
        if room > 0 and self.error is None and not self._overflow_size:
            head = data[:room]
            try:
                write_all(self._file, head, self.path)
                self.on_disk += len(head)
            except OSError as exc:
                self.error = StorageError.from_os(exc, self.path, "the cell's log")
                self.on_disk = _size_of(self._file, self.on_disk + len(head))
            data = data[room:]
        if data and self.error is None:
            self._overflow.append(data)
            self._overflow_size += len(data)
            while self._overflow_size - len(self._overflow[0]) >= self.cap:
                self._overflow_size -= len(self._overflow.popleft())

    def _keep_tail(self) -> None:
        """Rewrite the file as a line saying what was dropped and the output's last bytes."""
        later = b"".join(self._overflow)
        header = (
            f"[harness: this cell wrote {self.written} bytes to its log, past its cap of {self.cap} bytes "
            f"(log_cap_mb); the first {{dropped}} bytes are dropped, the last {{kept}} kept]\n"
        )
        want = self.cap - len(header) - 40  # room for the numbers
        tail = later[-want:]
        if len(tail) < want:  # the rest comes from the end of what is on disk
            need = min(want - len(tail), self.on_disk)
            tail = os.pread(self._file, need, self.on_disk - need) + tail
        text = header.format(dropped=self.written - len(tail), kept=len(tail)).encode() + tail
        try:
            os.ftruncate(self._file, 0)  # frees the space the rewrite needs
            os.lseek(self._file, 0, os.SEEK_SET)
            write_all(self._file, text, self.path)
            self.on_disk = len(tail)
        except OSError as exc:
            self.error = StorageError.from_os(exc, self.path, "the cell's log")
            self.on_disk = 0


def _open_log(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)  # read back to keep the tail
    except OSError as exc:
        raise StorageError.from_os(exc, path, "the cell's log") from None


def _size_of(fd: int, most: int) -> int:
    """What a short write left in the file (at most `most` bytes)."""
    try:
        return min(os.fstat(fd).st_size, most)
    except OSError:
        return 0


def _widen(fd: int) -> None:
    """A 1 MB pipe instead of 64 KB: a flooding writer then costs a sixteenth of the wake-ups."""
    try:
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", _F_SETPIPE_SZ), CHUNK)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EINVAL, errno.EBUSY):
            raise


def _now() -> float:
    return time.monotonic()


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
