"""How an A/B spends its time: cells interleaved on one pooled budget, a decided cell leaving
its time to the undecided ones; what an undecided one says it would need; how many pairs a
block gets. The slicer is replaced by a script of block values, so nothing runs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from harness.ab import experiment
from harness.ab.experiment import ABOptions, blocks_needed, next_pairs, run_all
from harness.ab.revisions import WORKING_TREE, Side
from harness.ab.sequential import blocks_to_decide, boundary, evidence
from harness.ab.slicing import Block, Pair, SliceResult
from harness.running.matrix import Cell

BLOCK_S = 10.0


def block(index: int, values: list[float], seconds: float = BLOCK_S) -> Block:
    """A block whose measured pairs have these log-ratios in every estimand, each slice a
    second long on a whole CPU, no run-queue wait."""
    pairs = [
        Pair(index, i, False, "base", SliceResult("base", 0, 1.0, 1.0, 100.0, 1.0, runq_s=0.0),
             SliceResult("candidate", 0, 1.0, 1.0, 100.0 * math.exp(v), 1.0, runq_s=0.0))
        for i, v in enumerate(values)
    ]  # fmt: skip
    return Block(index, pairs, {}, seconds)


class ScriptedSlicer:
    """Stands in for harness.ab.slicing.Slicer: each cell's blocks from its script."""

    scripts: dict[str, tuple[float, float]] = {}  # cell kind -> (log-ratio, spread of its pairs)
    calls: list[str] = []

    def __init__(self, cell, words, base, cand, run_root, opts, rng, cand_cell=None):
        self.cell, self.rng = cell, np.random.default_rng(len(self.calls))
        self.counter = "units"

    def block(self, index: int, pairs: int | None = None) -> Block:
        self.calls.append(self.cell.params["kind"])
        centre, spread = self.scripts[self.cell.params["kind"]]
        return block(index, list(centre + self.rng.normal(0, spread, pairs or 2)))

    def close(self) -> None:
        pass


def cell(kind: str) -> Cell:
    return Cell("synthetic", {"kind": kind, "workers": 1}, 5.0, 0.0, None, 1, 60.0, id=kind)


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setattr(experiment, "Slicer", ScriptedSlicer)
    ScriptedSlicer.calls = []
    return ScriptedSlicer


def sides() -> tuple[Side, Side]:
    return Side("base", WORKING_TREE, None, Path(".")), Side("candidate", WORKING_TREE, None, Path("."))


def test_a_decided_cell_leaves_its_time_to_the_undecided_one(scripted):
    # "spin" regresses by 20 %: decided at the fewest blocks; "sleep" sits on the boundary
    scripted.scripts = {"spin": (-0.2, 0.01), "sleep": (boundary(0.03), 0.01)}
    opts = ABOptions(tolerance=0.03, budget_s=100.0, seed=1)
    spin, sleep = run_all([cell("spin"), cell("sleep")], *sides(), Path("."), opts)
    assert spin.decision == "regression" and len(spin.blocks) == blocks_to_decide()
    assert sleep.decision == "undecided"
    # the pool is 2 x 100 s: what spin did not use went to sleep, and no block ran past it
    assert len(sleep.blocks) == int(200 / BLOCK_S) - len(spin.blocks)
    assert spin.spent_s + sleep.spent_s <= 200.0
    # the blocks were interleaved, not one cell after the other
    assert scripted.calls[:4] == ["spin", "sleep", "spin", "sleep"]


def test_every_cell_runs_its_floor_of_blocks_whatever_the_budget(scripted):
    scripted.scripts = {"spin": (boundary(0.03), 0.01), "sleep": (boundary(0.03), 0.01)}
    results = run_all([cell("spin"), cell("sleep")], *sides(), Path("."), ABOptions(budget_s=5.0, seed=2))
    assert [len(r.blocks) for r in results] == [blocks_to_decide()] * 2
    assert all(r.decision == "undecided" for r in results)


def test_undecided_says_what_budget_would_decide():
    """A projection from the blocks' spread and the estimate's distance from the boundary,
    checked against the clipped bets themselves on simulated blocks."""
    edge = boundary(0.03)
    rng = np.random.default_rng(0)
    for ratio in (1.0, 2.0):  # spread / distance
        spread = 0.03
        x = edge + spread / ratio + rng.normal(0, spread, (300, 150))
        _, above = evidence(x, edge)
        hit = above >= math.log(20)
        taken = np.median(np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, 151))
        projected = blocks_needed([list(x[0, :40])], edge + spread / ratio, edge, blocks_to_decide())
        assert 0.6 * taken <= projected <= 1.6 * taken, (ratio, taken, projected)
    # at 80 % (a tune's challenger) the bets reach 1/alpha sooner, and the projection says so
    x = edge + 0.03 / 2.0 + rng.normal(0, 0.03, (300, 150))
    _, above = evidence(x, edge)
    hit = above >= math.log(5)
    taken = np.median(np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, 151))
    projected = blocks_needed([list(x[0, :40])], edge + 0.015, edge, 4, alpha=0.2)
    assert 0.6 * taken <= projected <= 1.6 * taken, (taken, projected)
    assert projected < blocks_needed([list(x[0, :40])], edge + 0.015, edge, 4)
    assert blocks_needed([[edge, edge + 0.01, edge - 0.01]], edge, edge, 6) is None  # at the boundary
    assert blocks_needed([[0.0, 0.1]], 0.0, edge, 6) is None  # no spread known yet
    assert blocks_needed([[0.1, 0.1001, 0.0999, 0.1]], 0.1, edge, 6) == 6  # far, tight: the floor


def test_the_undecided_reason_names_a_budget(scripted):
    scripted.scripts = {"spin": (-0.02, 0.1)}  # 2 % slower, noisy: not enough blocks to rule out 3 %
    (result,) = run_all([cell("spin")], *sides(), Path("."), ABOptions(tolerance=0.03, budget_s=70.0, seed=3))
    assert result.decision == "undecided"
    assert "would decide, a budget of about" in result.reason, result.reason


def test_pairs_per_block_follow_where_the_noise_is():
    rng = np.random.default_rng(0)
    # processes differ (offsets 0.06), pairs of one process agree (0.005): one pair a block
    launches = [block(i, list(rng.normal(0, 0.06) + rng.normal(0, 0.005, 2)), seconds=9.0) for i in range(8)]
    assert next_pairs(launches, ("cpu", "runq")) == 1
    # slices differ (0.1), processes agree (0.005): several
    slices = [block(i, list(rng.normal(0, 0.005) + rng.normal(0, 0.1, 2)), seconds=9.0) for i in range(30)]
    assert next_pairs(slices, ("cpu", "runq")) >= 4
    assert next_pairs(slices, ("cpu", "runq"), block_budget_s=9.0) == 2  # what fits: 5 s of launches + 2 x 2 s
    assert next_pairs(slices[:2], ("cpu",)) == experiment.PAIRS_FIRST  # too few blocks to say


def test_an_ab_given_up_ends_undecided_before_its_budget_and_says_why(scripted):
    """give_up (harness tune's futility) is asked after every undecided block; what it says
    ends the A/B, undecided, and is the reason. One that never gives up leaves the budget's."""
    scripted.scripts = {"spin": (0.0, 0.05)}
    asked: list[int] = []

    def give_up(series, interval, blocks, held):
        asked.append(blocks)
        return f"given up at {blocks} of {held:.0f}" if blocks == 5 else None

    opts = ABOptions(tolerance=0.03, budget_s=150.0, seed=4)
    (result,) = run_all([cell("spin")], *sides(), Path("."), opts, give_up=give_up)
    assert result.decision == "undecided" and len(result.blocks) == 5
    assert result.reason == "given up at 5 of 15" and asked == [1, 2, 3, 4, 5]
    assert result.gave_up and result.to_json()["gave_up"] is True
    (whole,) = run_all([cell("spin")], *sides(), Path("."), opts, give_up=lambda *_: None)
    assert whole.decision == "undecided" and len(whole.blocks) == 15 and "budget" in whole.reason
    assert not whole.gave_up and "gave_up" not in whole.to_json()
