"""Every capture of the readers' corpus (tests/corpus/) loads and its meta.toml states the truth:
a capture that cannot be read, or lacks what the corpus test compares with, would drop out
of it unseen."""

from __future__ import annotations

import tomllib
from itertools import pairwise
from pathlib import Path

import pytest

from harness.program.capture import read as read_capture

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
CAPTURES = sorted(p for p in CORPUS.iterdir() if (p / "meta.toml").exists())
REQUIRED = {
    "program",
    "package",
    "version",
    "command",
    "format",
    "log_says",
    "duration",
    "headline",
    "rate",
    "how",
    "load",
}


@pytest.mark.parametrize("folder", CAPTURES, ids=[p.name for p in CAPTURES])
def test_the_capture_loads_and_its_meta_states_the_truth(folder):
    meta = tomllib.loads((folder / "meta.toml").read_text())
    assert REQUIRED <= meta.keys(), f"meta.toml lacks {sorted(REQUIRED - meta.keys())}"
    assert set(meta.get("wrong_on_main", [])) <= {"headline", "check"}
    assert not meta.get("wrong_on_main") or meta.get("wrong_why"), "wrong_on_main without wrong_why"
    output = next(p for p in (folder / "output.jsonl", folder / "output.jsonl.gz") if p.exists())
    header, chunks = read_capture(output)
    assert header["argv"] and chunks
    assert all(b[0] >= a[0] for a, b in pairwise(chunks)), "chunks out of time order"
    assert not any("/work/" in text for text in [*header["argv"], *(d for _, _, d in chunks)]), "a machine path left in"
