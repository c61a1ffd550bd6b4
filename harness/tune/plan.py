"""The tune's plan, made from the budget and the space before the search begins: what one
reading of every setting (a full screen) would cost against the budget, and so how to search.

A space the budget can screen whole is screened whole (harness.tune.halving: every setting
read once, then its leaders raced by successive halving, then A/Bs among the last few): on a
program with two knobs and 25 settings, a tune that stepped one knob at a time, with a causal
experiment and an A/B per step, was still running at 900 s where a grid of one 8 s reading
per setting had mapped them all in 341 s. A larger space is searched step by step from the
bottleneck (harness.tune.search), its proposals ordered by a model of every reading made
(harness.tune.sampler).

The plan also says what a grid of the same space would cost (one GRID_WINDOW_S reading per
setting, each with the launch and warm-up this program's cells were measured to take), so
that the result can compare the tune's seconds with it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import product
from typing import Any

from harness.tune.space import Knob

GRID_WINDOW_S = 8.0  # the grid a tune is compared with: one reading of this many seconds per setting
DRIFT_EVERY = 8  # a whole screen reads the start again after this many settings (the machine's drift)
AGAIN = 3  # a whole screen then reads its leaders a second time, and the start after them (their noise)
WHOLE = "whole"  # every setting read, then successive halving (harness.tune.halving)
STEPS = "steps"  # evidence, a model-ordered survey and A/Bs, step by step (harness.tune.search)
# a whole screen is planned when it takes at most this share of the budget: the rest holds the
# halving's rungs, the leaders' A/Bs and the final A/B (each a few blocks of two launches)
WHOLE_SHARE = 0.5


def settings(knobs: Sequence[Knob]) -> list[dict[str, Any]]:
    """Every setting of the space, in the knobs' order."""
    return [dict(zip([k.name for k in knobs], values, strict=True)) for values in product(*(k.values for k in knobs))]


def size(knobs: Sequence[Knob]) -> int:
    return math.prod(len(k.values) for k in knobs)


@dataclass
class Plan:
    mode: str  # WHOLE | STEPS
    settings: int  # the space's size
    reading_s: float  # one screen reading, launch and warm-up included (measured on the start)
    window_s: float  # its measured window
    screen_s: float  # every setting read once, with the start read again every DRIFT_EVERY
    budget_s: float  # what the budget held when the plan was made
    grid_s: float  # a grid of one GRID_WINDOW_S reading per setting, at the same launch cost

    def said(self) -> str:
        twice = f", the {AGAIN} leaders twice" if reads_leaders_twice(self.settings) else ""
        head = (
            f"{self.settings} settings; a full screen ({self.window_s:g} s readings, {self.reading_s:.0f} s each "
            f"with the launch, the start read again every {DRIFT_EVERY}{twice}) costs about {self.screen_s:.0f} s "
            f"of the {self.budget_s:.0f} s budget; a grid of one {GRID_WINDOW_S:g} s reading per setting about "
            f"{self.grid_s:.0f} s"
        )
        if self.mode == WHOLE:
            return f"{head}: the space is screened whole, then its leaders raced"
        return (
            f"{head}: more than {100 * WHOLE_SHARE:.0f} % of the budget, so searched step by step from the bottleneck"
        )

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "said": self.said()}


def reads_leaders_twice(count: int) -> bool:
    """Whether a whole screen of `count` settings reads its AGAIN leaders twice: where it read
    more than that beside the start (harness.tune.halving.Halving.second_look)."""
    return count - 1 > AGAIN


def screen_cost(count: int, reading_s: float) -> float:
    """Every one of `count` settings read once, the start again every DRIFT_EVERY, then the
    AGAIN leaders a second time and the start after them."""
    again = AGAIN + 1 if reads_leaders_twice(count) else 0
    return (count + math.ceil(count / DRIFT_EVERY) + again) * reading_s


def first_launch_may_decide(made: Plan) -> bool:
    """Whether the plan is for steps only because of what the first reading cost: a whole
    screen that fits the budget, but not its WHOLE_SHARE. A first launch is often a cold one
    (MCCFR's first reading took 10.7 s, the next fifty 4.2 s; on a loaded machine 24 s against
    7 s), and a plan for steps from it left a five-setting tune with nothing it could afford:
    the start is read and timed once more before such a plan stands."""
    return made.mode == STEPS and made.screen_s <= made.budget_s


def make_plan(knobs: Sequence[Knob], budget_s: float, window_s: float, reading_s: float) -> Plan:
    """The plan for `knobs` with `budget_s` left, one reading of `window_s` measured seconds
    costing `reading_s` in all (its launch and warm-up)."""
    count = size(knobs)
    cost = screen_cost(count, reading_s)
    launch = max(reading_s - window_s, 0.0)
    grid = count * (GRID_WINDOW_S + launch)
    mode = WHOLE if cost <= WHOLE_SHARE * budget_s else STEPS
    return Plan(mode, count, reading_s, window_s, cost, budget_s, grid)
