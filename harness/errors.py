"""Errors the CLI turns into a message and an exit code, never a traceback.

UserError is the user's to fix (exit 2). StorageError is the harness's environment's: one of
its own files could not be written (exit 74). ClusterLost is the harness's environment's too:
the Ray cluster a sweep ran on lost its head (exit 75).
"""

from __future__ import annotations

import errno
from pathlib import Path

USER_ERROR_EXIT = 2
STORAGE_EXIT = 74  # sysexits.h's EX_IOERR: "an error occurred while doing I/O on some file"
CLUSTER_EXIT = 75  # sysexits.h's EX_TEMPFAIL: "a temporary failure ... the user is invited to retry"

# What to do about each errno a write of the harness meets, before `then` (how to go on).
_REMEDIES = {
    errno.ENOSPC: "free space on its filesystem",
    errno.EDQUOT: "free space within the disk quota",
    errno.EROFS: "its filesystem is read-only: make it writable again",
    errno.EIO: "the device reported an I/O error: check the disk (dmesg)",
    errno.ENOENT: "its directory was removed: restore it",
    errno.EACCES: "the harness may not write there: give it permission",
    errno.EPERM: "the harness may not write there: give it permission",
    errno.EFBIG: "the file passed a size limit (ulimit -f)",
}
# Errnos that say the environment refused a write, wherever it happened: the CLI reports an
# OSError with one of them as a StorageError even if no writer of the harness caught it.
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})
_KEEPS_DATA = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


class UserError(Exception):
    """Bad input: an unknown suite or key, a value out of range, a missing or corrupt file.

    The message names what was wrong and what is allowed.
    """


class StorageError(Exception):
    """The harness could not write one of its own files (a full disk, an I/O error, a
    read-only filesystem, a directory removed under it): the failure of its environment,
    neither the user's input nor the program's. Raised by harness.runs.files, which left no
    temporary file behind; the command that stops on it fills in `run_dir` and `then` (how
    to go on, e.g. `harness sweep --resume DIR`), and the CLI prints it and exits 74."""

    def __init__(self, path: Path | str, code: int | None, detail: str, what: str | None = None) -> None:
        super().__init__(str(path))
        self.path = Path(path)
        self.errno = code
        self.detail = detail
        self.what = what
        self.run_dir: Path | None = None
        self.then: str | None = None

    @classmethod
    def from_os(cls, exc: OSError, path: Path | str | None = None, what: str | None = None) -> StorageError:
        target = path if path is not None else (exc.filename or "?")
        return cls(target, exc.errno, exc.strerror or str(exc), what)

    @property
    def errno_name(self) -> str:
        return errno.errorcode.get(self.errno or 0, "")

    @property
    def remedy(self) -> str:
        return _REMEDIES.get(self.errno or 0, "fix the cause")

    def __str__(self) -> str:
        what = f"{self.what} " if self.what else ""
        code = f" ({self.errno_name})" if self.errno_name else ""
        text = f"the harness could not write {what}{self.path}: {self.detail}{code}"
        if self.run_dir is not None:
            text += f"; run directory: {self.run_dir}"
        then = self.then or "run the command again"
        # a full or read-only disk refuses writes and keeps what it holds; a failing or
        # vanished one promises nothing
        intact = "what was recorded before is intact; " if self.errno in _KEEPS_DATA else ""
        advice = f"{intact}{self.remedy}, then {then}"
        return f"{text}. {advice[0].upper()}{advice[1:]}"


def is_storage_error(exc: BaseException) -> bool:
    """An OSError that says the environment refused a write (full, read-only, failing)."""
    return isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS


class ClusterLost(Exception):
    """The Ray cluster's head (its GCS) stopped answering for longer than the sweep's grace:
    the cluster is gone, and with it every cell still running on it. Neither the user's input
    nor the program's failure; what was recorded is intact (each record was appended whole and
    fsynced as it came), and `harness sweep --resume RUN_DIR --executor ray --address NEW_HEAD`
    runs what is missing. The sweep that stops on it fills in `run_dir`; the CLI prints it and
    exits 75."""

    def __init__(self, address: str, lost_at: str, grace_s: float, running: int) -> None:
        super().__init__(address)
        self.address = address
        self.lost_at = lost_at
        self.grace_s = grace_s
        self.running = running  # cell-repeats that were running on the cluster then
        self.run_dir: Path | None = None

    def __str__(self) -> str:
        where = f"{self.run_dir}" if self.run_dir is not None else "RUN_DIR"
        running = (
            f"; the {self.running} cell-repeat(s) running on it are recorded `harness-error`" if self.running else ""
        )
        return (
            f"the Ray cluster's head at {self.address} was lost at {self.lost_at} (no answer for {self.grace_s:g} s)"
            f"{running}. What was recorded before is intact; start a new head (and its nodes), then "
            f"harness sweep --resume {where} --executor ray --address NEW_HEAD:PORT"
        )
