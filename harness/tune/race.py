"""A challenger against the incumbent on the time to a quality target (`harness tune
--objective time-to-target --target METRIC<=V`): whole runs, not slices.

A rate can be sliced (harness.tune.duel), a time to quality cannot: it is one number per run,
and faster iterations that learn less per iteration (MCCFR's stale tables, a bigger batch)
take longer to the same quality however fast they run. So each block is a race: both
settings run afresh in a random order, each until the target is met or its cap passes, and
the block's value is log(incumbent's time / challenger's time) (above 0: the challenger got
there sooner). The blocks feed the A/B's own anytime-valid interval (clipped bets,
harness.ab.sequential.clipped_sequence) and tune's three-way decision (gain_decider), so a
race is decided at the same confidence, by the same rule, as a sliced A/B.

A run that misses the target counts as its cap. That can only shrink a block's gap, never
turn it: when the incumbent reached the target at t and the challenger missed (true time
past the cap), log(t / cap) lies between the truth and 0. A block where both missed says
nothing and is left out. Both sides ran in the same block back to back, so a machine's phase
that lasts longer than one block hits both.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import dataclass
from typing import Any

from harness.ab.sequential import Interval, blocks_to_decide, clipped_sequence
from harness.analysis.gating import TIME_TO_TARGET as TIME
from harness.running.matrix import Cell
from harness.runs.files import append_whole
from harness.runs.record import Record
from harness.runs.store import RunStore
from harness.tune.duel import AT_BUDGET, BETTER, ERROR, UNDECIDED, WORSE, Duel, gain_decider, too_small

RACES_JSONL = "races.jsonl"  # every race run's record, beside cells.jsonl (which holds the evidence)


@dataclass
class RaceOptions:
    alpha: float
    budget_s: float
    min_gain: float
    seed: int | None = None


def time_to_target(record: Record, cap_s: float) -> tuple[float | None, bool]:
    """(seconds to the target, whether it was reached): a run that missed counts as its cap;
    a run that failed, or measured nothing, has no time."""
    if not record.ok:
        return None, False
    reached = record.number(TIME)
    if reached is not None and reached > 0:
        return reached, True
    if record.number("target_reached") == 0:
        return cap_s, False
    return None, False


def block_value(incumbent: tuple[float | None, bool], challenger: tuple[float | None, bool]) -> float | None:
    """log(incumbent's time / challenger's time), or None: a side without a time, or both missed."""
    (t_inc, hit_inc), (t_cha, hit_cha) = incumbent, challenger
    if t_inc is None or t_cha is None or not (hit_inc or hit_cha):
        return None
    return math.log(t_inc / t_cha)


def runner_for(store: RunStore, run_cell: Any) -> Any:
    """`run_cell(cell, repeat) -> Record`: the one given (tests), else the harness's CellRunner."""
    if run_cell is not None:
        return run_cell
    from harness.running.runner import CellRunner

    return CellRunner(store).run


def keep(store: RunStore, side: str, block: int | None, record: Record) -> None:
    """A race run's record, appended to races.jsonl."""
    line = json.dumps({"side": side, "block": block, **record.to_json()}, default=str) + "\n"
    append_whole(store.root / RACES_JSONL, line.encode(), "the race's record")


def pilot(cell: Cell, store: RunStore, run_cell: Any = None) -> tuple[Record, float]:
    """One run of the start to its target, before any race: what it takes (the tune's first
    guess of a race block is two of these) and whether the start reaches the target at all.
    Its record goes to races.jsonl as the side "start"."""
    began = time.monotonic()
    record = runner_for(store, run_cell)(cell, 0)
    keep(store, "start", None, record)
    return record, time.monotonic() - began


def race(incumbent: Cell, challenger: Cell, store: RunStore, opts: RaceOptions, run_cell: Any = None) -> Duel:
    """Blocks of one run of each side (random order) until the interval of log(incumbent's
    time / challenger's time) decides or the next block would end past `opts.budget_s`
    (blocks_to_decide blocks are run whatever the budget: fewer can only end undecided).
    `run_cell(cell, repeat) -> Record` runs one cell (the harness's CellRunner by default)."""
    run_cell = runner_for(store, run_cell)
    if incumbent.target is None or challenger.target is None:
        raise ValueError("a race needs cells with a quality target")
    rng = random.Random(opts.seed)
    decide = gain_decider(opts.min_gain)
    floor = blocks_to_decide(opts.alpha)
    began = time.monotonic()
    values: list[float | None] = []
    details: list[dict[str, Any]] = []
    interval: Interval | None = None
    decision, reason = UNDECIDED, ""
    block_s: list[float] = []
    while True:
        spent = time.monotonic() - began
        per_block = sorted(block_s)[len(block_s) // 2] if block_s else 0.0
        if len(values) >= floor and spent + per_block > opts.budget_s:
            break
        started = time.monotonic()
        order = ["incumbent", "challenger"]
        rng.shuffle(order)
        times: dict[str, tuple[float | None, bool]] = {}
        for side in order:
            cell = incumbent if side == "incumbent" else challenger
            record = run_cell(cell, len(values))
            keep(store, side, len(values), record)
            times[side] = time_to_target(record, cell.duration or 0.0)
            if times[side][0] is None:  # the other side's run would compare with nothing
                why = record.reason or f"it counted no {TIME} and no miss"
                decision, reason = ERROR, f"the {side}'s run ended {record.status}: {why}"
                break
        block_s.append(time.monotonic() - started)
        details.append(
            {"order": order, **{f"{s}_s": times[s][0] for s in times}, **{f"{s}_reached": times[s][1] for s in times}}
        )
        if decision == ERROR:
            values.append(None)
            break
        values.append(block_value(times["incumbent"], times["challenger"]))
        if sum(v is not None for v in values) == 0:
            if len(values) >= floor:
                reason = f"neither side reached the target in {len(values)} blocks: nothing was compared"
                break
            continue
        interval = clipped_sequence(values, opts.alpha)
        said = decide(interval) if interval.n else "continue"
        if said in (BETTER, WORSE):
            decision = said
            break
    if decision == UNDECIDED and not reason:
        reason = AT_BUDGET
    reason = too_small(decision, interval, opts.min_gain) or reason
    ratios = [math.exp(v) if v is not None else None for v in values]
    return Duel(decision, interval, len(values), time.monotonic() - began, TIME, reason, ratios, [], details)
