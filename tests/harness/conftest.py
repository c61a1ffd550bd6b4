"""Expected failures of the readers' corpus, from the captures' own meta.toml.

A capture whose meta.toml names what main's readers get wrong (`wrong_on_main`: `headline`,
`check`; `wrong_why` says how) keeps its truth in `rate`, `check` and `clock`, and the corpus
test of that part runs as a strict expected failure: it must fail while the readers get it
wrong, and fails (XPASS) once they get it right, to say the key can go. Marked here, at
collection, so that tests/harness/test_corpus.py stays as it is."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
PART_OF_TEST = {
    "test_the_headline_is_the_hand_computed_rate": "headline",
    "test_the_headline_is_checked_as_its_meta_says": "check",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        part = PART_OF_TEST.get(getattr(item, "originalname", ""))
        callspec = getattr(item, "callspec", None)
        if part is None or callspec is None or not item.nodeid.startswith("tests/harness/test_corpus.py"):
            continue
        meta_file = CORPUS / callspec.id / "meta.toml"
        if not meta_file.exists():
            continue
        meta = tomllib.loads(meta_file.read_text())
        if part in meta.get("wrong_on_main", []):
            reason = f"{part}: {meta['wrong_why']} (once this passes, take {part!r} out of wrong_on_main)"
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason))
