"""Every file of a run the harness writes goes through here, so a full disk (ENOSPC, EDQUOT),
a failing device (EIO) or a read-only filesystem (EROFS) is met in one place.

Each writer either completes or leaves what was there before: a replaced file (run.json,
reports, baselines, A/B results, series) is written to a temporary `.NAME.tmp` beside it,
fsynced and renamed over it, and the temporary file is removed when anything fails; an
appended line (cells.jsonl) goes in whole or not at all, a short write being cut back, so a
full disk never tears a record (only a SIGKILL in the middle of the write can, and
RunStore.repair sets that line aside). Any OSError becomes a StorageError naming the file;
the command that stops on it says how to go on.

The fault switch: with HARNESS_WRITE_FAULT=PATH in the environment, the file PATH, when it
exists, makes these writes fail as a disk would: it holds an errno name (ENOSPC, EIO, EROFS)
and optionally a number of bytes that may still be written first (shared by every process
through the file, under a lock; the write that crosses it is cut short there, like a real
short write). Tests and the chaos benchmark use it where a small filesystem cannot be
mounted, and to get EIO, which no tmpfs gives.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from harness.errors import StorageError

FAULT_ENV = "HARNESS_WRITE_FAULT"
TMP_PREFIX = "."
TMP_SUFFIX = ".tmp"


def temporary(path: Path) -> Path:
    """Where `path` is written before it replaces the real one."""
    return path.with_name(f"{TMP_PREFIX}{path.name}{TMP_SUFFIX}")


def write_atomic(path: Path, data: bytes | str, what: str | None = None) -> None:
    """Replace `path` with `data`, whole or not at all."""
    raw = data.encode() if isinstance(data, str) else data
    tmp = temporary(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            write_all(fd, raw, tmp)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        discard(tmp)
        raise StorageError.from_os(exc, path, what) from None


def write_json_atomic(path: Path, data: Any, what: str | None = None) -> None:
    write_atomic(path, json.dumps(data, indent=2, default=str) + "\n", what)


@contextmanager
def replacing(path: Path, what: str | None = None, mode: str = "w", **open_args: Any) -> Iterator[IO[Any]]:
    """For writers that stream into a file (csv.writer, pandas, matplotlib): they write to
    the handle given here, which replaces `path` only once the block completes."""
    tmp = temporary(path)
    try:
        with open(tmp, mode, **open_args) as fh:
            yield fh
            fh.flush()
            size = os.fstat(fh.fileno()).st_size
            _, code = injected(size)
            if code is not None:
                raise OSError(code, os.strerror(code), str(tmp))
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        discard(tmp)
        raise StorageError.from_os(exc, path, what) from None
    except BaseException:
        discard(tmp)
        raise


def append_whole(path: Path, data: bytes, what: str | None = None) -> None:
    """Append `data` whole or not at all, and fsync it. A short write (the disk filled in
    the middle) is cut back to where the file ended, so the file never ends mid-record."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StorageError.from_os(exc, path, what) from None
    try:
        start = os.fstat(fd).st_size
        try:
            write_all(fd, data, path)
            os.fsync(fd)
        except OSError as exc:
            _cut_back(fd, start)
            raise StorageError.from_os(exc, path, what) from None
    finally:
        os.close(fd)


def make_dirs(path: Path, what: str | None = None, exist_ok: bool = True) -> None:
    try:
        path.mkdir(parents=True, exist_ok=exist_ok)
    except FileExistsError:
        raise
    except OSError as exc:
        raise StorageError.from_os(exc, path, what) from None


def write_all(fd: int, data: bytes, path: Path) -> None:
    """os.write until every byte is out: a regular file may take fewer bytes than asked
    (the last blocks of a filling disk) without an error; the next write then raises."""
    view = memoryview(data)
    allowed, code = injected(len(view))
    while allowed and view:
        done = os.write(fd, view[:allowed])
        view, allowed = view[done:], allowed - done
    if code is not None:
        raise OSError(code, os.strerror(code), str(path))


def discard(path: Path) -> None:
    """Remove a temporary file, quietly: it is cleanup on a path that already failed."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


def clean_temporaries(root: Path) -> list[Path]:
    """Remove the temporary files a harness killed mid-write left anywhere in a run
    directory (series/, logs/, stacks/ included); returns them. Only ours: `.NAME.tmp`."""
    removed = sorted(root.rglob(f"{TMP_PREFIX}*{TMP_SUFFIX}"))
    for path in removed:
        discard(path)
    return removed


def _cut_back(fd: int, size: int) -> None:
    try:
        if os.fstat(fd).st_size > size:
            os.ftruncate(fd, size)
            os.fsync(fd)
    except OSError:
        pass  # the torn tail stays; RunStore.repair sets it aside before the next append


def injected(size: int) -> tuple[int, int | None]:
    """How many of `size` bytes the fault switch lets through, and the errno that follows
    them (None: no fault). Without the switch: all of them, no fault."""
    switch = os.environ.get(FAULT_ENV)
    if not switch:
        return size, None
    try:
        fd = os.open(switch, os.O_RDWR)
    except OSError:
        return size, None  # no switch file: the disk is fine
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        words = os.read(fd, 200).decode(errors="replace").split()
        code = getattr(errno, words[0], errno.EIO) if words else errno.EIO
        if len(words) < 2:
            return 0, code
        budget = int(words[1])
        allowed = min(size, budget)
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, f"{words[0]} {budget - allowed}\n".encode())
        return allowed, code if allowed < size else None
    finally:
        os.close(fd)
