"""The readers on real programs' output (tests/corpus/): each capture replayed at its recorded
times through the command suite's readers and a probe, as a `--duration` cell reads it.

Every capture's headline is the counter a person reading the program's log would judge it by,
at the rate computed by hand from that log, within 5 %; and no counter read more than 2x faster
than a rate the program printed of the same thing reaches the headline without a warning."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from harness.program.capture import replay_cell
from harness.readers.checks import SET_ASIDE
from harness.readers.words import family, rate_unit, unit_of

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
CAPTURES = sorted(p for p in CORPUS.iterdir() if (p / "meta.toml").exists())
TOLERANCE = 0.05


def _output(folder: Path) -> Path:
    return next(p for p in (folder / "output.jsonl", folder / "output.jsonl.gz") if p.exists())


@pytest.fixture(scope="module", params=CAPTURES, ids=[p.name for p in CAPTURES])
def replayed(request) -> tuple[dict, dict, list[str]]:
    meta = tomllib.loads((request.param / "meta.toml").read_text())
    metrics, warnings = replay_cell(_output(request.param), meta["duration"], meta.get("progress", ""))
    return meta, metrics, warnings


def test_the_corpus_holds_ten_programs():
    assert len({tomllib.loads((p / "meta.toml").read_text())["package"] for p in CAPTURES}) >= 10


def test_the_headline_is_the_hand_computed_rate(replayed):
    meta, metrics, _ = replayed
    assert metrics.get("headline_rate") == f"{meta['headline']}_per_s", metrics.get("progress_provenance")
    assert metrics[f"{meta['headline']}_per_s"] == pytest.approx(meta["rate"], rel=TOLERANCE), meta["how"]


def test_the_headline_is_checked_as_its_meta_says(replayed):
    """The verdict a cell shows beside its rate, and the check by the program's own clock: a
    check that wanders (a reading before the window taken as in it) shows here first."""
    meta, metrics, _ = replayed
    assert metrics.get("headline_check") == meta["check"], metrics.get("headline_provenance")
    clocks = re.findall(r"clock \(\d+ s\) [\d.]+/s: [\d.]+x, (\w+)", metrics["headline_provenance"])
    assert clocks == ([meta["clock"]] if "clock" in meta else []), metrics["headline_provenance"]


def test_no_counter_read_2x_faster_than_a_printed_rate_reaches_the_headline_unwarned(replayed):
    _, metrics, warnings = replayed
    printed = {k: v for k, v in metrics.items() if k.startswith("printed_") and not k.endswith("_vs_counted")}
    for name, rate in metrics.items():
        if not name.endswith("_per_s") or name.startswith("printed_") or "_drift_" in name:
            continue
        counter = name.removesuffix("_per_s")
        for rate_name, value in printed.items():
            unit = rate_unit(rate_name)
            same = unit == unit_of(counter) or family(unit) == family(counter)
            if same and isinstance(value, float) and value > 0 and rate > SET_ASIDE * value:
                assert metrics.get("headline_rate") != name, f"{name} {rate:.4g}/s vs {rate_name} {value:.4g}"
                assert any(w.startswith(f"{counter} grew at") for w in warnings), f"no warning for {name}"
