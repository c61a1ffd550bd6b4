"""The seeds' failures as captured records: the regression set every rule change is run
against. Each folder of tests/harness/data/seeds/ is a `harness watch --duration 12` of one of
the four failures the harness was built for (the busy-waiting learner, the full-state solver,
threaded self-play at batch 1, lost work over 128 pool workers), or of its healthy control, on
an idle machine or beside two CPU-bound neighbours, kept by `benchmarks/seed_failures.py
--capture`: its run.json and cells.jsonl, the record every rule reads, and meta.json (which
seed, which finding). The rules run over the record as `harness diagnose` runs them.

The lost-work captures hold what the rule missed before it judged workers without stacks by
their wake-ups and the /proc wait edges: 128 workers, about 20 of them sampled by py-spy, the
rest each sitting runnable 7-14 % of a core (the run queue after each of ~35-130 wake-ups a
second) while running 0.1-0.5 %; the rule of that time read "wanted 5 % of a core or more:
busy" and drew nothing, and this test fails with it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.diagnosis import diagnose
from harness.runs.store import RunStore

SEEDS = Path(__file__).resolve().parent / "data" / "seeds"
CAPTURES = sorted(p for p in SEEDS.iterdir() if (p / "meta.json").exists()) if SEEDS.exists() else []
SEED_RULES = {"BUSY_WAIT", "SERIALIZATION", "SMALL_BATCHES", "IDLE_WORKERS"}


def rules_over(folder: Path) -> set[str]:
    store = RunStore.open(folder)
    return {f.rule for f in diagnose(store.records(), store.meta())}


def test_the_regression_set_holds_every_seed_failure_and_control_at_both_loads():
    kinds = {(m["seed"], m["mode"], m["neighbours"] > 0) for m in (json.loads((p / "meta.json").read_text()) for p in CAPTURES)}
    seeds = {seed for seed, _, _ in kinds}
    assert len(seeds) == 4 and len(kinds) == 4 * 2 * 2, sorted(kinds)


@pytest.mark.parametrize("folder", CAPTURES, ids=[p.name for p in CAPTURES])
def test_each_seed_failure_is_named_and_its_control_draws_no_seed_finding(folder):
    meta = json.loads((folder / "meta.json").read_text())
    found = rules_over(folder)
    if meta["mode"] == "failure":
        assert meta["rule"] in found, f"{folder.name}: {meta['rule']} not named; drew {sorted(found)}"
    else:
        assert not found & SEED_RULES, f"{folder.name}: the healthy control drew {sorted(found & SEED_RULES)}"
