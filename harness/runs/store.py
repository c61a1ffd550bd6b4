"""The run directory: run.json, cells.jsonl, series/*.csv, logs/.

cells.jsonl is append-only: each finished cell-repeat is one line, written with a single
write and fsynced, so the file is readable after a crash at any instant (at worst its last
line is truncated, and readers skip it with a warning). run.json is replaced atomically.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.runs import DEFAULT_RESULTS as DEFAULT_RESULTS  # its home is harness.runs (a light import)
from harness.runs.record import Record

RUN_FILE = "run.json"
CELLS_FILE = "cells.jsonl"
SCHEMA_VERSION = 1
RECORD_KEYS = ("id", "suite", "params", "repeat", "status")


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=2, default=str)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


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
        (root / "series").mkdir(parents=True)
        (root / "logs").mkdir()
        store = cls(root)
        store.write_meta({"schema": SCHEMA_VERSION, **meta})
        return store

    @classmethod
    def open(cls, root: Path) -> RunStore:
        if not root.is_dir():
            raise UserError(f"{root} is not a run directory (it does not exist)")
        if not (root / RUN_FILE).is_file():
            raise UserError(f"{root} is not a run directory: {RUN_FILE} is missing")
        store = cls(root)
        store.meta()  # fail early and clearly on a corrupt run.json
        (root / "series").mkdir(exist_ok=True)
        (root / "logs").mkdir(exist_ok=True)
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
        write_json_atomic(self.root / RUN_FILE, meta)

    def update_meta(self, **changes: Any) -> None:
        meta = self.meta()
        meta.update(changes)
        self.write_meta(meta)

    # ------------------------------------------------------------------ cells.jsonl
    def append(self, record: Record) -> None:
        line = json.dumps(record.to_json(), default=str, allow_nan=True) + "\n"
        fd = os.open(self.root / CELLS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def repair(self) -> str | None:
        """Before appending to a run that was stopped mid-write (SIGKILL, power loss): cut a
        truncated last line off cells.jsonl, so new lines do not follow a broken one. The
        cut bytes are kept in cells.jsonl.torn; returns a warning, or None if intact."""
        path = self.root / CELLS_FILE
        if not path.exists():
            return None
        with open(path, "rb+") as fh:
            data = fh.read()
            if not data or data.endswith(b"\n"):
                return None
            keep = data.rfind(b"\n") + 1
            with open(self.root / f"{CELLS_FILE}.torn", "ab") as torn:
                torn.write(data[keep:] + b"\n")
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())
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
