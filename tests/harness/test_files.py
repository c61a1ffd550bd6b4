"""The one write layer (harness.runs.files): a write the disk refuses leaves the old file and
no temporary behind, an append never leaves half a record, and the error names the file."""

from __future__ import annotations

import errno
import json

import pytest

from harness.errors import StorageError
from harness.runs.files import (
    FAULT_ENV,
    append_whole,
    clean_temporaries,
    injected,
    replacing,
    write_atomic,
    write_json_atomic,
)


@pytest.fixture
def fault(tmp_path, monkeypatch):
    """The fault switch: set(text) makes the harness's writes fail as the text says."""
    switch = tmp_path / "switch"
    monkeypatch.setenv(FAULT_ENV, str(switch))

    class Switch:
        def set(self, text: str) -> None:
            switch.write_text(text)

        def clear(self) -> None:
            switch.unlink(missing_ok=True)

    return Switch()


def test_without_the_switch_file_nothing_is_injected(fault):
    assert injected(100) == (100, None)


@pytest.mark.parametrize("name", ["ENOSPC", "EIO", "EROFS"])
def test_a_refused_atomic_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, fault, name):
    path = tmp_path / "run.json"
    write_json_atomic(path, {"state": "running"})
    fault.set(name)
    with pytest.raises(StorageError) as caught:
        write_json_atomic(path, {"state": "finished"}, "the run's description")
    assert json.loads(path.read_text()) == {"state": "running"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json", "switch"]
    exc = caught.value
    assert exc.errno == getattr(errno, name) and exc.errno_name == name
    assert str(path) in str(exc) and "the run's description" in str(exc)


def test_a_short_write_is_cut_back_so_no_record_is_torn(tmp_path, fault):
    path = tmp_path / "cells.jsonl"
    append_whole(path, b'{"a": 1}\n')
    fault.set("ENOSPC 5")  # five more bytes fit: the next line is cut short by the disk
    with pytest.raises(StorageError):
        append_whole(path, b'{"b": 2}\n')
    assert path.read_bytes() == b'{"a": 1}\n'
    fault.clear()
    append_whole(path, b'{"b": 2}\n')
    assert path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'


def test_a_budget_is_shared_and_spent(tmp_path, fault):
    fault.set("ENOSPC 10")
    assert injected(4) == (4, None)
    assert injected(10) == (6, errno.ENOSPC)
    assert injected(1) == (0, errno.ENOSPC)


def test_a_streamed_write_replaces_only_whole(tmp_path, fault):
    path = tmp_path / "summary.csv"
    write_atomic(path, "old\n")
    fault.set("EIO")
    with pytest.raises(StorageError, match="EIO"), replacing(path, "the summary") as fh:
        fh.write("new\n")
    assert path.read_text() == "old\n" and not list(tmp_path.glob(".*.tmp"))


def test_the_error_says_what_to_do_and_how_to_go_on(tmp_path):
    exc = StorageError(tmp_path / "cells.jsonl", errno.ENOSPC, "No space left on device", "the cell's record")
    exc.run_dir, exc.then = tmp_path, f"harness sweep --resume {tmp_path}"
    text = str(exc)
    assert "cells.jsonl" in text and "ENOSPC" in text and "free space" in text
    assert f"run directory: {tmp_path}" in text and f"harness sweep --resume {tmp_path}" in text
    ro = StorageError(tmp_path / "run.json", errno.EROFS, "Read-only file system")
    assert "read-only" in str(ro) and "run the command again" in str(ro)


def test_temporaries_of_a_killed_write_are_cleaned(tmp_path):
    (tmp_path / "series").mkdir()
    (tmp_path / "stacks").mkdir()
    leftovers = [tmp_path / ".run.json.tmp", tmp_path / "series" / ".a-0.csv.tmp", tmp_path / "stacks" / ".a-0.txt.tmp"]
    for path in leftovers:
        path.write_text("half")
    (tmp_path / "keep.json").write_text("{}")
    assert sorted(clean_temporaries(tmp_path)) == sorted(leftovers)
    assert not any(p.exists() for p in leftovers) and (tmp_path / "keep.json").exists()
