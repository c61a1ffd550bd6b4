"""The run directory: run.json, cells.jsonl, series/*.csv, logs/.

cells.jsonl is append-only: each finished cell-repeat is one line, written whole or not at
all and fsynced (harness.runs.files), so the file is readable after a crash at any instant (a
SIGKILL in the middle of the write can leave its last line truncated: readers skip it with a
warning, and repair() sets it aside before the next append). run.json is replaced
atomically. A write the disk refuses raises StorageError, naming the file.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.errors import StorageError, UserError
from harness.runs import DEFAULT_RESULTS as DEFAULT_RESULTS  # its home is harness.runs (a light import)
from harness.runs.files import append_whole, clean_temporaries, make_dirs, write_json_atomic
from harness.runs.record import Record

RUN_FILE = "run.json"
CELLS_FILE = "cells.jsonl"
SCHEMA_VERSION = 1
RECORD_KEYS = ("id", "suite", "params", "repeat", "status")


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def unix_seconds(stamp: str | None) -> float | None:
    """A time utc_now() wrote (`2026-11-26T14:35:56Z`) as Unix seconds; None if there is none."""
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class RunStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    # ------------------------------------------------------------------ create / open
    @classmethod
    def create(cls, results_dir: Path, label: str | None, meta: dict[str, Any]) -> RunStore:
        if results_dir.exists() and not results_dir.is_dir():
            raise UserError(f"--out {results_dir}: is a file; give a directory for the runs (made if missing)")
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        safe_label = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in (label or "run"))
        root = results_dir / f"{stamp}-{safe_label}"
        suffix = 1
        while root.exists():
            suffix += 1
            root = results_dir / f"{stamp}-{safe_label}-{suffix}"
        try:
            make_dirs(root / "series", "the run directory", exist_ok=False)
            make_dirs(root / "logs", "the run directory")
            store = cls(root)
            store.write_meta({"schema": SCHEMA_VERSION, **meta})
        except StorageError:
            shutil.rmtree(root, ignore_errors=True)  # a run that never started leaves nothing
            raise
        return store

    @classmethod
    def open(cls, root: Path) -> RunStore:
        if not root.is_dir():
            raise UserError(f"{root} is not a run directory (it does not exist)")
        if not (root / RUN_FILE).is_file():
            raise UserError(f"{root} is not a run directory: {RUN_FILE} is missing")
        store = cls(root)
        store.meta()  # fail early and clearly on a corrupt run.json
        make_dirs(root / "series", "the run directory")
        make_dirs(root / "logs", "the run directory")
        return store

    # ------------------------------------------------------------------ run.json
    def meta(self) -> dict[str, Any]:
        path = self.root / RUN_FILE
        try:
            meta = json.loads(path.read_text(errors="replace"))
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
        except OSError as exc:
            raise UserError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        if not isinstance(meta, dict):
            raise UserError(f"{path}: expected a JSON object, found {type(meta).__name__}")
        return meta

    def write_meta(self, meta: dict[str, Any]) -> None:
        write_json_atomic(self.root / RUN_FILE, meta, "the run's description")

    def update_meta(self, **changes: Any) -> None:
        meta = self.meta()
        meta.update(changes)
        self.write_meta(meta)

    # ------------------------------------------------------------------ cells.jsonl
    def append(self, record: Record) -> None:
        line = json.dumps(record.to_json(), default=str, allow_nan=True) + "\n"
        append_whole(self.root / CELLS_FILE, line.encode(), "the cell's record")

    def repair(self) -> str | None:
        """Before appending to a run that was stopped mid-write (SIGKILL, power loss): cut a
        truncated last line off cells.jsonl, so new lines do not follow a broken one. The
        cut bytes are kept in cells.jsonl.torn; returns a warning, or None if intact. Also
        removes the temporary files of writes such a stop interrupted."""
        clean_temporaries(self.root)
        path = self.root / CELLS_FILE
        if not path.exists():
            return None
        data = path.read_bytes()
        if not data or data.endswith(b"\n"):
            return None
        keep = data.rfind(b"\n") + 1
        append_whole(self.root / f"{CELLS_FILE}.torn", data[keep:] + b"\n", "the torn record set aside")
        try:
            with open(path, "rb+") as fh:
                fh.truncate(keep)
                os.fsync(fh.fileno())
        except OSError as exc:
            raise StorageError.from_os(exc, path, "the cell records") from None
        line = data.count(b"\n", 0, keep) + 1
        return f"{path}:{line}: truncated last line removed (kept in {CELLS_FILE}.torn); its cell will run again"

    def iter_records(self) -> Iterator[Record]:
        path = self.root / CELLS_FILE
        if not path.exists():
            return
        try:
            with open(path, errors="replace") as fh:
                lines = fh.readlines()
        except OSError as exc:
            raise UserError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                if number == len(lines) and not line.endswith("\n"):
                    warnings.warn(
                        f"{path}:{number}: truncated last line skipped (the writer was stopped mid-line)",
                        stacklevel=2,
                    )
                    continue
                raise UserError(
                    f"{path}:{number}: not valid JSON ({exc.msg} at column {exc.colno}); each line is one "
                    "cell-repeat: delete the broken line and `harness sweep --resume` reruns that cell"
                ) from None
            missing = [k for k in RECORD_KEYS if not isinstance(record, dict) or k not in record]
            if missing:
                raise UserError(
                    f"{path}:{number}: not a cell record (missing {', '.join(missing)}); "
                    "each line is one cell-repeat: delete the broken line and `harness sweep --resume` reruns that cell"
                )
            yield Record.from_json(record)

    def records(self) -> list[Record]:
        """The latest record of every (cell id, repeat), in the order they were written."""
        latest: dict[tuple[str, int], Record] = {}
        for rec in self.iter_records():
            latest[(rec.id, rec.repeat)] = rec
        return list(latest.values())

    def finished(self) -> set[tuple[str, int]]:
        return {(r.id, r.repeat) for r in self.records()}

    # ------------------------------------------------------------------ per-cell files
    def attempt_key(self, cell_id: str, repeat: int) -> str:
        """The name of a cell-repeat's files (log, series, stack dump): `<id>-<repeat>`, or
        `<id>-<repeat>.N` for its Nth attempt when an earlier attempt left its log. A cell
        run again (--retry-failed, or after an interruption) so never overwrites the files
        an earlier record in cells.jsonl points to."""
        base = key = f"{cell_id}-{repeat}"
        attempt = 1
        while self.log_path(key).exists():
            attempt += 1
            key = f"{base}.{attempt}"
        return key

    def series_path(self, key: str) -> Path:
        return self.root / "series" / f"{key}.csv"

    def log_path(self, key: str) -> Path:
        return self.root / "logs" / f"{key}.log"

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.root))
