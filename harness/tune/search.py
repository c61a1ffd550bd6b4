"""The tune itself: evidence on the incumbent, challengers in the order the evidence says,
each decided by an A/B, until no move helps or the budget is spent; then the winner's A/B
against the start.

A step gathers the incumbent's evidence (harness.tune.evidence: a measured cell, the rules'
findings, a causal experiment), turns it into what limits it (harness.tune.bottleneck), and
proposes moves in this order: the last adopted move again (a climb keeps its direction),
the moves that relieve each limit (the suite's `relieves` and remedies, `@GROUP` knobs), then
every knob in turn. Before any A/B every proposed knob is screened (Tuner.survey: one short
reading of the incumbent and of each value the knob could take, harness.tune.screen), and
the readings order the A/Bs: knobs that each read 20 % above the incumbent together first,
then each such move, then the evidence's order. Each proposal is an A/B against the
incumbent (harness.tune.duel, given up early when its blocks say its budget cannot decide):
the first one decided "better" becomes the incumbent and a new step begins; "worse" and
"undecided" are dropped, never retried. When every single move lost, moves of two knobs (a
categorical knob's other values, each with another knob's values ahead) are read once each, and
the highest readings above the incumbent's are A/B'd (Tuner.pair_survey): a pair that gains
only together is what single moves cannot find.
When the machine is the limit (every group slack, the cores busy) moves that add work are
not proposed. A step with no winner ends the search (converged).

The final A/B runs the winner against the start at the final confidence; if it does not
confirm the winner, the start stays and the conclusion says why. The state is written to
tune.json after every trial, so a Ctrl-C keeps the trail and `--resume` continues it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from harness.ab.experiment import ABOptions
from harness.ab.sequential import blocks_to_decide
from harness.causal.result import CausalOptions
from harness.errors import UserError
from harness.model.vocabulary import Vocabulary
from harness.running.matrix import Cell
from harness.runs.files import write_json_atomic
from harness.runs.store import RunStore
from harness.runs.view import record_rate
from harness.tune import halving, plan, sampler, workers
from harness.tune.bottleneck import ACTED_ON, Limit
from harness.tune.duel import BETTER, Duel, bursty, duel, slicing_for
from harness.tune.evidence import (
    STARTUP_CAP_S,
    counted,
    gather,
    kept_run,
    measure_until_counted,
    report_gap,
    with_startup,
)  # fmt: skip
from harness.tune.race import RaceOptions, pilot, race, time_to_target
from harness.tune.result import TUNE_JSON, Step, Trial, TuneState, key_of
from harness.tune.screen import Screen, ahead, screen, spread
from harness.tune.space import Knob, _same, moves_for

BLOCK_S_GUESS = 15.0  # seconds per A/B block before one was measured
BLOCK_SLICES_S = 6.0  # a block's warm-up pair and first two measured pairs, 1 s slices each side
LAUNCH_S_GUESS = 5.0  # seconds a race run spends starting before its clock runs
FINAL_MARGIN = 1.5  # the final A/B is given this many times the time its fewest blocks take
# a screen reading this far above the incumbent's is tried first and joins the joint move: one
# reading of a cell spreads about 10 % either way on this VM (the campaign's confirmations), and
# the actor-learner's readings of moves worth 0-5 % lay within 20 % of one another
LEAD = 0.2
PAIRS_TRIED = 2  # moves of two knobs A/B'd after a step with no winner: the highest readings above the incumbent's
PAIR_MOST = 3  # an ordered knob's values read a way in a move of two knobs
PAIR_WHY = "two knobs together"  # why a move of the pair survey was tried
MODELLED_MOST = 2  # settings the model of every reading proposes per step, read before any A/B
READING_GAP_S = 0.5  # between one reading's cell and the next: the harness's own bookkeeping


class Tuner:
    def __init__(
        self,
        state: TuneState,
        make_cell: Callable[[dict[str, Any]], Cell],
        words: Vocabulary,
        store: RunStore,
        cores: int,
        announce: Callable[[str], None] = print,
        race_cell: Callable[[dict[str, Any]], Cell] | None = None,
    ) -> None:
        self.state, self.make_cell, self.words, self.store = state, make_cell, words, store
        # with --objective time-to-target: the cell one race run is (its target and cap);
        # challengers are then raced (harness.tune.race), not sliced
        self.race_cell = race_cell
        self.cores, self.announce = cores, announce
        self._began = time.monotonic() - state.elapsed_s
        # seconds per A/B block, measured (those of a resumed tune's trail count too)
        self._block_s: list[float] = [
            t.duel["seconds"] / t.duel["block_count"]
            for s in state.steps
            for t in s.trials
            if t.duel and t.duel.get("block_count")
        ]
        self._block_s += [2 * s.pilot_s for s in state.steps if s.pilot_s and not self._block_s]
        self._model: Any = None  # the worker axis's USL fit (harness.tune.workers), this session's
        self._slow_start = False  # the program needed the longer start-up cap (harness.tune.evidence)
        self._cell_s: float | None = None  # launch to end of the last measured cell, seconds
        self._first: tuple[str | None, float | None, float] | None = None  # the plan's reading of the start
        self._launches: list[float] = []  # each timed reading's seconds beside its window, this session's
        # key_of(params) -> one screen reading's (metric, rate), this session's
        self._readings: dict[str, tuple[str | None, float | None]] = {}
        self._read_params: dict[str, dict[str, Any]] = {}  # key_of(params) -> params, of every reading
        self._adds_work = {m.knob for moves in words.relieves.values() for m in moves if m.adds_work}
        if words.workers:
            self._adds_work.add(words.workers)

    # ------------------------------------------------------------------ time
    def elapsed(self) -> float:
        return time.monotonic() - self._began

    def left(self) -> float:
        return self.state.options.budget_s - self.elapsed()

    def block_s(self) -> float:
        if self._block_s:
            return sorted(self._block_s)[len(self._block_s) // 2]
        if self.race_cell is not None:  # two runs, each guessed to reach the target at half its cap
            return self.state.options.target_cap_s + 2 * LAUNCH_S_GUESS
        if self.state.plan is not None:  # both sides launched as the plan's reading was, then three pairs of 1 s slices
            return 2 * max(self.launch_s(), 0.0) + BLOCK_SLICES_S
        return BLOCK_S_GUESS

    def final_reserve(self) -> float:
        """What the budget holds back for the final A/B: nothing before the first step; while
        nothing is adopted, only its fewest blocks (a challenger that wins must be confirmable,
        but no final runs unless one does: the actor-learner's first tune stopped with 676 s of
        1200 unused, held for a final it never ran); after an adoption, those with a margin."""
        if self.state.best == self.state.start and not self.state.steps and self.state.halving is None:
            return 0.0
        fewest = blocks_to_decide(self.state.options.final_alpha) * self.block_s()
        return fewest if key_of(self.state.best) == key_of(self.state.start) else FINAL_MARGIN * fewest

    def duel_budget(self) -> float:
        """A challenger's A/B: --duel-budget, at least the blocks that can decide at all however
        slow they run, at most what the budget leaves beside the final A/B."""
        return min(max(self.state.options.duel_budget_s, self.duel_time()), self.left() - self.final_reserve())

    def duel_time(self) -> float:
        """The least a challenger's A/B needs to decide at all."""
        return blocks_to_decide(self.state.options.step_alpha) * self.block_s()

    def save(self) -> None:
        self.state.elapsed_s = self.elapsed()
        write_json_atomic(self.store.root / TUNE_JSON, self.state.to_json(), "the tune's trail")

    # ------------------------------------------------------------------ the search
    def run(self) -> TuneState:
        state = self.state
        if not state.ended_by:
            if state.plan is None and self.race_cell is None:
                self.make_plan()
            whole = state.plan is not None and state.plan["mode"] == plan.WHOLE
            state.ended_by = self.whole() if whole else self.search()
            self.save()
        if state.final is None:
            self.final()
        if state.plan is not None:
            state.plan["tune_s"] = self.elapsed()
            if self._launches:  # the grid at the launch the readings measured, not the first's alone
                state.plan["grid_s"] = self.grid_s()
            state.plan["against_grid"] = against_grid(state.plan, self.elapsed())
        state.state = "finished"
        self.save()
        return state

    # ------------------------------------------------------------------ the plan
    def make_plan(self) -> None:
        """The start read once at --screen (its launch and warm-up timed: what every reading
        will cost), then the plan (harness.tune.plan): a whole screen when a reading of every
        setting fits the budget's WHOLE_SHARE, else steps. A program whose progress comes in
        bursts is read for --evidence's seconds instead (a short window may see no report)."""
        opts, start = self.state.options, self.state.start
        window = min(opts.screen_s, opts.evidence_s)
        began = time.monotonic()
        cell, record = measure_until_counted(
            self.measured_cell(start, window), kept_run(self.store, 0), self.announce, "the start's first reading"
        )
        self._slow_start = self._slow_start or cell.steady_max >= STARTUP_CAP_S
        took = (
            (record.number("wall_s") or 0.0) + READING_GAP_S
            if cell.steady_max >= STARTUP_CAP_S
            else time.monotonic() - began
        )
        if not counted(record):
            raise UserError(no_rate(record, describe(start)))
        gap = report_gap(self.store.root, record)
        metric, rate = record_rate(record)
        if not bursty(gap):
            self._readings[key_of(start)] = (metric, rate)
            self._read_params[key_of(start)] = dict(start)
            self._first = (metric, rate, self.elapsed())
        else:  # readings get --evidence's window: the plan counts its cost
            took += max(opts.evidence_s - window, 0.0)
            window = opts.evidence_s
        made = plan.make_plan(self.state.knobs, self.left(), window, took)
        if plan.first_launch_may_decide(made):
            self.announce(
                f"plan: the first reading took {took:.0f} s, which puts a full screen ({made.screen_s:.0f} s) past "
                f"{100 * plan.WHOLE_SHARE:.0f} % of the budget: the start read again to time a warm launch"
            )
            again = time.monotonic()
            self.read_at(start, window)
            took = min(took, time.monotonic() - again)
            made = plan.make_plan(self.state.knobs, self.left(), window, took)
        self.state.plan = {**made.to_json(), "report_gap_s": gap}
        self.announce(f"plan: {made.said()}")
        self.save()

    def launch_s(self) -> float:
        """A reading's seconds beside its window (launch, warm-up, bookkeeping): the median of
        the readings this session timed, else the plan's first. MCCFR's first reading took
        10.7 s (a cold start), the next fifty 4.2 s each: the plan had said 544 s for a screen
        that took 210 s, and a grid of 750 s that takes about 540."""
        if self._launches:
            return float(np.median(self._launches))
        got = self.state.plan or {}
        return float(got.get("reading_s", LAUNCH_S_GUESS)) - float(got.get("window_s", 0.0))

    def plan_reading_s(self, window: float) -> float:
        """One reading of `window` measured seconds, at the launch measured so far."""
        return window + self.launch_s()

    def grid_s(self) -> float:
        """A grid of one GRID_WINDOW_S reading per setting, at the launch measured so far."""
        if self.state.plan is None:
            return math.inf
        return float(self.state.plan["settings"]) * (plan.GRID_WINDOW_S + self.launch_s())

    def whole(self) -> str:
        """The space screened whole and its leaders raced (harness.tune.halving); the winner
        becomes the best, its final A/B against the start follows."""
        state = self.state
        assert state.plan is not None
        if state.halving is None:
            state.halving = {}
        first = None
        if self._first is not None and not state.halving.get("rungs"):
            metric, rate, at = self._first
            first = halving.Reading(dict(state.start), rate, at, reference=True)
        search = halving.Halving(
            state.halving, plan.settings(state.knobs), dict(state.start), float(state.plan["window_s"]),
            read=self.read_at, compare=self.compare_leaders, reading_s=self.plan_reading_s,
            room=self.rung_room, elapsed=self.elapsed,
            announce=self.announce, save=self.save, first=first,
        )  # fmt: skip
        self.announce(f"screen: every setting of {describe_space(state.knobs)}")
        winner, sure = search.run()
        state.best, state.sure = dict(winner), sure
        state.conclusion = f"screened whole: {sure}"
        return "screened"

    def rung_room(self) -> float:
        """What a later rung of a whole screen may spend: what the budget leaves, and no more
        than ends before a grid of the space would have (the plan's estimate), each beside one
        leaders' A/B and the final A/B. A tune exists to be no slower than the grid: a 25-setting
        space's rung 0 (2 s readings) costs about 60 % of its grid, and the A/Bs most of the rest."""
        grid = self.grid_s()
        after = self.final_reserve() + self.duel_time()
        return min(self.left(), grid - self.elapsed()) - after

    def read_at(self, values: dict[str, Any], window: float) -> tuple[str | None, float | None]:
        """One cell of `values` measured for `window` seconds (a record in the tune's run)."""
        began = time.monotonic()
        cell, record = measure_until_counted(
            self.measured_cell(values, window),
            kept_run(self.store, 0),
            self.announce,
            f"the reading of {describe(values)}",
        )
        self._slow_start = self._slow_start or cell.steady_max >= STARTUP_CAP_S
        self._cell_s = record.number("wall_s") or self._cell_s
        metric, rate = record_rate(record)
        if cell.steady_max < STARTUP_CAP_S or self._slow_start:
            self._launches.append(time.monotonic() - began - window)
        self.announce(f"    {describe(values)}: {rate:.4g}" if rate else f"    {describe(values)}: no rate")
        return metric, rate

    def compare_leaders(self, incumbent: dict[str, Any], challenger: dict[str, Any]) -> Duel | None:
        """Two leaders' A/B (ahead, behind or tied at --min-gain, harness.tune.duel), within what
        the budget leaves and ending before a grid of the space would have (beside the final
        A/B); None when that holds fewer than the blocks that can decide. The producers
        program's leaders, read 2 % apart, spent 147 s undecided and put the tune at 1.17x its
        grid's time."""
        budget = min(self.duel_budget(), self.rung_room() + self.duel_time())
        if budget < self.duel_time():
            return None
        opts = self.state.options
        ab = ABOptions(alpha=opts.step_alpha, budget_s=budget, seed=opts.seed, slicing=self.slicing())
        got = duel(
            self.make_cell(incumbent), self.make_cell(challenger), self.store.root, ab, opts.min_gain, self.words,
            leaders=True,
        )  # fmt: skip
        if got.blocks:
            self._block_s.append(got.seconds / got.blocks)
        return got

    def out_of_budget(self) -> str:
        """What the budget allowed, and what a step costs at the blocks measured so far."""
        duels = sum(1 for s in self.state.steps for t in s.trials if t.duel)
        step_s = self.evidence_time() + self.duel_time()
        # before any block ran, a block's length is a guess, and is said to be one
        per_block = f"{self.block_s():.0f} s a block" if self._block_s else f"a guessed {self.block_s():.0f} s a block"
        return (
            f"the budget ({self.state.options.budget_s:g} s) ran out after {duels} A/B(s) at {per_block}: "
            f"a step needs about {step_s:.0f} s and the final A/B {self.final_reserve():.0f} s (--budget)"
        )

    def search(self) -> str:
        """Steps until no move helps ("converged") or the budget is spent ("budget")."""
        state = self.state
        resumed = self.unfinished_step()
        while True:
            need = self.duel_time() + (0.0 if resumed else self.evidence_time())
            if self.left() - self.final_reserve() < need:
                state.conclusion = self.out_of_budget()
                return "budget"
            incumbent = dict(state.best)
            if resumed is not None:
                step, limit = resumed
                resumed = None
                self.announce(f"step {step.index}: incumbent {describe(incumbent)} (resumed: its evidence as gathered)")
            else:
                step = Step(len(state.steps), incumbent, self.elapsed())
                state.steps.append(step)
                self.announce(f"step {step.index}: incumbent {describe(incumbent)}")
                limit = self.evidence(step)
            self.model_workers(incumbent)
            trials = self.propose(incumbent, limit, state.steps[-2] if len(state.steps) > 1 else None)
            if not trials:
                state.conclusion = "every move of every knob was tried from this incumbent"
                return "converged"
            queue = self.modelled(step, self.survey(step, trials))
            while queue:
                trial = queue.pop(0)
                # an A/B gets at least the blocks that can decide at all, however slow they run
                budget = self.duel_budget()
                if budget < self.duel_time():
                    step.seconds = self.elapsed() - step.started_s
                    state.conclusion = self.out_of_budget()
                    return "budget"
                self.trial(step, trial, budget)
                if trial.decision == BETTER:
                    step.adopted = step.trials.index(trial)
                    state.best = dict(trial.params)
                    break
            if step.adopted is None:
                self.pair_survey(step, limit)
            step.seconds = self.elapsed() - step.started_s
            self.save()
            if step.adopted is None:
                paired = f" ({step.pairs['said']})" if step.pairs else ""
                state.conclusion = f"no move from {describe(incumbent)} was decided better{paired}"
                return "converged"

    def slicing(self) -> Any:
        """The A/B's slices: long enough for the widest gap between progress reports any
        incumbent's evidence showed (both sides of an A/B are sliced alike)."""
        gaps = [s.report_gap_s for s in self.state.steps if s.report_gap_s is not None]
        if self.state.plan and self.state.plan.get("report_gap_s") is not None:
            gaps.append(self.state.plan["report_gap_s"])
        return slicing_for(max(gaps) if gaps else None)

    def unfinished_step(self) -> tuple[Step, Limit] | None:
        """The step a Ctrl-C cut short (--resume): its evidence gathered, no move adopted yet.
        It continues with its own evidence, less the trial whose A/B was cut (no duel: it is
        proposed again); gathering the same incumbent's evidence again cost C2 a step."""
        if not self.state.steps:
            return None
        last = self.state.steps[-1]
        if last.adopted is not None or not last.limit or last.incumbent != self.state.best:
            return None
        last.trials = [t for t in last.trials if t.duel is not None]
        return last, Limit.from_json(last.limit)

    def evidence_time(self) -> float:
        opts = self.state.options
        return opts.evidence_s + 20.0 + opts.causal_budget_s

    def measured_cell(self, values: dict[str, Any], seconds: float | None = None) -> Cell:
        """The cell the tune measures (evidence, the worker axis, a screen's reading):
        `--evidence` seconds (or `seconds`), with the longer start-up cap once the program
        has needed it."""
        cell = replace(self.make_cell(values), duration=seconds or self.state.options.evidence_s)
        return with_startup(cell) if self._slow_start else cell

    def evidence(self, step: Step) -> Limit:
        opts = self.state.options
        causal = (
            CausalOptions(budget_s=opts.causal_budget_s, seed=opts.seed, futile_for=ACTED_ON)
            if opts.causal_budget_s > 0
            else None
        )
        pointed = self.pointed(step.incumbent) if step.index > 0 else None
        if causal is not None and pointed is not None:
            causal = None  # the readings say which knobs to move: the experiment's seconds would not change it
            step.causal_skipped = (
                f"no causal experiment: the model of every reading predicts {describe(pointed[0])} "
                f"{pointed[1]:.2f}x the incumbent"
            )
            self.announce(f"  {step.causal_skipped}")
        cell = self.measured_cell(step.incumbent)
        found = gather(cell, self.store, step.index, causal, self.cores, self.announce)
        self._slow_start = self._slow_start or found.cell.steady_max >= STARTUP_CAP_S
        self._cell_s = found.record.number("wall_s") or self._cell_s
        step.report_gap_s = report_gap(self.store.root, found.record)
        if slicing_for(step.report_gap_s).slice_s > slicing_for(None).slice_s:
            self.announce(
                f"  its progress came up to {step.report_gap_s:.1f} s apart: A/B slices of "
                f"{slicing_for(step.report_gap_s).slice_s:.1f} s"
            )
        if step.index == 0 and not counted(found.record):
            raise UserError(no_rate(found.record, describe(step.incumbent)))
        if step.index == 0 and self.race_cell is not None:
            self.measure_start(step)
        if step.causal_skipped:
            found.limit.notes = [n for n in found.limit.notes if n != "no causal experiment"]
        step.limit = found.limit.to_json()
        step.evidence_s = found.seconds
        step.metric, step.rate = record_rate(found.record)
        self.announce(f"  limited by: {found.limit.describe()}")
        for note in found.limit.notes:
            self.announce(f"  ({note})")
        if found.limit.saturated:
            self.state.machine_limit = found.limit.describe()
            self.announce("  the machine is the limit: moves that add work are not tried")
        self.save()
        return found.limit

    def measure_start(self, step: Step) -> None:
        """The start run once to its target (harness.tune.race.pilot): two such runs are the
        first guess of a race block, and a start that fails or misses is said now."""
        cap = self.state.options.target_cap_s
        self.announce(f"  the start to {self.state.options.target} (at most {cap:g} s)")
        record, seconds = pilot(self.race_cell(step.incumbent), self.store)  # type: ignore[misc]
        reached, hit = time_to_target(record, cap)
        if reached is None:
            why = f"{record.status}: {record.reason}" if not record.ok else "it reported no quality value"
            raise UserError(f"harness tune races to {self.state.options.target}, and the start's run ended {why}")
        step.target_s, step.pilot_s = (reached if hit else None), seconds
        self._block_s.append(2 * seconds)
        if hit:
            self.announce(f"  reached it in {reached:.2f} s ({seconds:.0f} s with its launch)")
        else:
            self.announce(
                f"  missed it in its {cap:g} s cap: a race counts a miss as the cap, so only a challenger that reaches "
                "it can win (--target-cap for a longer one)"
            )

    def worker_knob(self) -> Knob | None:
        """The suite's worker count among the knobs, with enough values for a curve."""
        name = self.words.workers
        knob = next((k for k in self.state.knobs if k.name == name and k.ordered), None)
        return knob if knob is not None and len(knob.values) >= workers.FIRST_COUNTS else None

    def model_workers(self, incumbent: dict[str, Any]) -> None:
        """Once per tune, when the worker count is a knob: the USL over the incumbent's
        worker axis (harness.tune.workers), if the budget holds it beside a step's A/B."""
        knob = self.worker_knob()
        if knob is None or self.state.scaling is not None:
            return
        per_cell = max(self.state.options.evidence_s + 10, self._cell_s or 0.0)  # as the incumbent's cell took
        cost = (workers.FIRST_COUNTS + workers.MORE_COUNTS) * workers.REPEATS * per_cell
        if self.left() - self.final_reserve() < cost + self.duel_time():
            self.state.scaling = {
                "knob": knob.name,
                "said": f"not modelled: the budget left does not hold {cost:.0f} s of cells",
            }
            self.announce(f"  the worker axis: {self.state.scaling['said']}")
            return
        found, rates = workers.model_the_axis(
            self.measured_cell, incumbent, knob, self.store, self.state.options.evidence_s, self.cores, self.announce
        )
        self.state.scaling = {"knob": knob.name, "fit": found.to_json(), "rates": rates, "said": workers.said(found)}
        self._model = found
        self.announce(f"  the worker axis: {workers.said(found)}")
        self.save()

    def survey(self, step: Step, trials: list[Trial]) -> list[Trial]:
        """The step's proposals in the order their readings say, before any A/B. Every knob a
        proposal moves is screened (harness.tune.screen): an ordered knob's values ahead that
        way (at most SCREEN_MOST, spread), a categorical knob's proposed values, each read once
        in a `--screen`-long cell, in the proposals' order while the budget holds the readings
        and an A/B after them. Then, in this order:

        1. the joint move, when two or more knobs read LEAD above the incumbent's reading: each
           such knob at its best reading, in one challenger (Hooke and Jeeves' pattern move:
           exploratory moves one knob at a time, then the step along all of them at once). The
           seeds campaign at 0ba8279 found MCCFR's winner (delta sync, batch 400, staleness 1)
           one knob a step, three A/Bs and 723 s in; each of those knobs read above the start;
        2. the moves whose value read LEAD above the incumbent, highest first (a reading of
           4.8x is stronger evidence of a knob's worth than the causal ranking's order);
        3. the rest in the order the evidence proposed them, an ordered knob's best reading
           before its one-step move.

        Where the incumbent's own reading gave no rate, nothing can be LEAD above it: the moves
        that read are taken highest first, then the rest (rl_zoo3 at 8 envs reported every 15
        s; its batch 512 and 256 read 1867 and 1766 steps/s, the incumbent nothing, and every
        knob in turn spent the step's budget on workers and steps before batch's turn came).

        Readings only order: the A/B decides every one (a lucky reading costs an A/B, never an
        adoption). Not screened: races (a rate's reading is not the race's objective) and the
        worker knob once the scaling model has read its axis."""
        if self.race_cell is not None:
            return trials
        screens: dict[tuple[str, str], Screen] = {}
        for trial in trials:
            key = self.screen_key(step, trial)
            if key is None or key in screens:
                continue
            values = self.screen_values(step, trial, key, trials)
            if not values or (len(values) < 2 and not step.rate):
                continue  # a lone value's reading orders something only beside the incumbent's
            unread = [v for v in values if key_of({**step.incumbent, key[0]: v}) not in self._readings]
            base = [] if key_of(step.incumbent) in self._readings else [step.incumbent]
            if self.left() - self.final_reserve() < len(unread + base) * self.reading_s(step) + self.duel_time():
                break
            if base:  # the incumbent read as its challengers are: a rate that decays in a run reads
                # higher in a short window (MCCFR's regret tables grow: 4 s readings 1.2-1.3x its 8 s evidence)
                metric, rate = self.reading(step.incumbent, step)
                self.announce(
                    f"  the incumbent read as the screens read it: {rate:.4g} {metric}"
                    if rate
                    else "  the incumbent's screen reading gave no rate: the moves that read go first, highest first"
                )
            earlier = f" ({len(values) - len(unread)} read earlier)" if len(unread) < len(values) else ""
            way = f" {key[1]}" if key[1] else ""
            self.announce(f"  screen {key[0]}{way}: {', '.join(map(str, values))}, one reading each{earlier}")
            knob = next(k for k in self.state.knobs if k.name == key[0])
            got = screen(
                knob, values, lambda value, name=knob.name: self.reading({**step.incumbent, name: value}, step)
            )
            self.announce(f"    {got.describe()}")
            screens[key] = got
        return self.order(step, trials, screens)

    def screen_key(self, step: Step, trial: Trial) -> tuple[str, str] | None:
        """(knob, way) a trial's screen reads: "up" or "down" for an ordered knob, "" for a
        categorical one; None when it is not screened (the modelled worker knob)."""
        knob = next(k for k in self.state.knobs if k.name == trial.knob)
        if self._model is not None and knob == self.worker_knob():
            return None
        if not knob.ordered:
            return knob.name, ""
        return knob.name, ("up" if float(trial.value) > float(step.incumbent[knob.name]) else "down")

    def screen_values(self, step: Step, trial: Trial, key: tuple[str, str], trials: list[Trial]) -> list[Any]:
        """The values a screen reads: an ordered knob's untried ones ahead that way (spread), a
        categorical knob's proposed ones."""
        name, toward = key
        if not toward:
            return [t.value for t in trials if t.knob == name]
        knob = next(k for k in self.state.knobs if k.name == name)
        tried = self.state.tried() | {key_of(t.params) for t in step.trials}
        return spread(
            [v for v in ahead(knob, step.incumbent[name], toward) if key_of({**step.incumbent, name: v}) not in tried]
        )

    def order(self, step: Step, trials: list[Trial], screens: dict[tuple[str, str], Screen]) -> list[Trial]:
        """The queue of survey()'s three parts, each setting once."""
        queue: list[Trial] = []
        for trial in trials:
            key = self.screen_key(step, trial)
            got = screens.get(key) if key is not None else None
            if got is None:
                queue.append(trial)
                continue
            best = got.best() if key[1] else None
            if best is not None and not _same(best, trial.value):
                params = {**step.incumbent, trial.knob: best}
                queue.append(
                    Trial(trial.knob, best, f"{trial.why}; the screen's best reading", params, screen=got.to_json())
                )
            else:
                trial.screen = got.to_json()
            queue.append(trial)
        seen = self.state.tried() | {key_of(t.params) for t in step.trials}
        tried = set(seen)
        unique: list[Trial] = []
        for trial in queue:  # each setting once, none already tried
            if key_of(trial.params) not in seen:
                seen.add(key_of(trial.params))
                unique.append(trial)
        queue = unique
        base = self._readings.get(key_of(step.incumbent), (None, None))[1]
        rate = {key_of(t.params): self._readings.get(key_of(t.params), (None, None))[1] for t in queue}
        if not base:  # nothing to be above: the moves read, highest first, then the rest as proposed
            read = sorted((t for t in queue if rate[key_of(t.params)]), key=lambda t: -rate[key_of(t.params)])  # type: ignore[operator]
            return read + [t for t in queue if t not in read]
        ahead_of = [t for t in queue if (r := rate[key_of(t.params)]) is not None and r >= base * (1 + LEAD)]
        ahead_of.sort(key=lambda t: -rate[key_of(t.params)])  # type: ignore[operator]
        rest = [t for t in queue if t not in ahead_of]
        leaders: dict[str, Trial] = {}
        for t in ahead_of:
            leaders.setdefault(t.knob, t)
        joint = {name: t.value for name, t in leaders.items()}
        params = {**step.incumbent, **joint}
        if len(joint) < 2 or key_of(params) in tried:
            return ahead_of + rest
        read = ", ".join(f"{t.said()} {rate[key_of(t.params)] / base:.2f}x" for t in leaders.values())  # type: ignore[operator]
        why = f"each knob at its best reading, all {100 * LEAD:.0f} % or more above the incumbent's ({read})"
        return [Trial("+".join(joint), joint, why, params), *ahead_of, *rest]

    def pairs(self, incumbent: dict[str, Any], limit: Limit) -> list[Trial]:
        """Moves of two knobs from the incumbent, not yet tried: each other value of a
        categorical knob with each other value of another categorical knob, and with an ordered
        knob's values ahead either way (at most PAIR_MOST a way, spread, both ends kept). A move
        of two knobs neither of which gains alone is what a step of single moves cannot find;
        a categorical knob (a backend, a sync mode) is where such a pair lives, its values
        changing how the other knobs act. Self-play on 2026-11-27: the server with 4 games a
        worker read 1.26x the tune's winner in the grid and ran 1.11-1.20x in every block of an
        A/B, where the server at 1 game ran 0.78-0.85x and 4 games on processes gained nothing;
        at 2 games the server read 0.95x, hence values ahead, not one step
        (docs/records/2026-11-27-tune-edge.md)."""
        tried = self.state.tried()
        out: list[Trial] = []
        for kind in (k for k in self.state.knobs if not k.ordered):
            for value in neighbours(kind, incumbent[kind.name], False):
                for other in (k for k in self.state.knobs if k.name != kind.name):
                    no_up = limit.saturated and other.name in self._adds_work
                    for second in values_ahead(other, incumbent[other.name], no_up):
                        moved = {kind.name: value, other.name: second}
                        params = {**incumbent, **moved}
                        if key_of(params) in tried:
                            continue
                        tried.add(key_of(params))
                        out.append(Trial("+".join(moved), moved, PAIR_WHY, params))
        return out

    def pair_survey(self, step: Step, limit: Limit) -> bool:
        """After a step whose single moves all lost: every move of two knobs (pairs()) read
        once, as the survey reads, beside the incumbent's reading; the PAIRS_TRIED that read
        highest above it are A/B'd, and the first decided better is adopted (True). Readings
        only choose what to A/B, as in the survey. Not for races, nor when the budget cannot
        hold the readings and an A/B after them."""
        if self.race_cell is not None:
            return False
        trials = self.pairs(step.incumbent, limit)
        if not trials:
            return False
        began = self.elapsed()
        cost = (len(trials) + 1) * self.reading_s(step) + self.duel_time()
        room = self.left() - self.final_reserve()
        if room < cost:
            step.pairs = {"said": f"{len(trials)} moves of two knobs not read: they need about {cost:.0f} s, "
                                  f"the budget leaves {max(room, 0):.0f} s", "seconds": 0.0}  # fmt: skip
            return False
        base = self.reading(step.incumbent, step)[1]
        if not base:
            step.pairs = {"said": f"{len(trials)} moves of two knobs not read: the incumbent's reading gave no rate "
                                  "to be above", "seconds": self.elapsed() - began}  # fmt: skip
            return False
        self.announce(f"  no single move won: {len(trials)} moves of two knobs, one reading each")
        read = [(trial, self.reading(trial.params, step)[1]) for trial in trials]
        ahead = sorted(((t, r) for t, r in read if r and r > base), key=lambda tr: -tr[1])[:PAIRS_TRIED]
        readings = ", ".join(f"{t.said()} {r / base:.2f}x" if r else f"{t.said()} no rate" for t, r in read)
        verdict = ("A/B'd: " + ", ".join(t.said() for t, _ in ahead)) if ahead else "none read above it: none A/B'd"
        step.pairs = {"said": f"{len(trials)} moves of two knobs, one reading each against the incumbent's: "
                              f"{readings}; {verdict}",
                      "seconds": self.elapsed() - began, "first_trial": len(step.trials)}  # fmt: skip
        self.announce(f"    {step.pairs['said']}")
        self.save()
        for trial, rate in ahead:
            trial.why = f"{PAIR_WHY}, read {rate / base:.2f}x the incumbent (no single move won)"
            budget = self.duel_budget()
            if budget < self.duel_time():
                step.pairs["said"] += f"; the budget ended before the A/B of {trial.said()}"
                return False
            self.trial(step, trial, budget)
            if trial.decision == BETTER:
                step.adopted = step.trials.index(trial)
                self.state.best = dict(trial.params)
                return True
        return False

    def model(self) -> sampler.Model | None:
        """The main-effects model of every reading of this session (harness.tune.sampler)."""
        known = dict(self._read_params)
        for step in self.state.steps:  # a reading of a setting the trail names (an incumbent, a challenger)
            for params in [step.incumbent, *(t.params for t in step.trials)]:
                known.setdefault(key_of(params), params)
        got = [(known[k], r) for k, (_, r) in self._readings.items() if r and k in known]
        return sampler.fit(self.state.knobs, got)

    def pointed(self, incumbent: dict[str, Any]) -> tuple[dict[str, Any], float] | None:
        """The setting not yet read or tried that the model predicts LEAD or more above the
        incumbent, and the predicted ratio; None when the readings point nowhere."""
        model = self.model()
        if model is None:
            return None
        skip = set(self._readings) | self.state.tried()
        best = sampler.best_unread(model, skip, 1)
        if not best:
            return None
        ratio = math.exp(best[0][1] - model.predict(incumbent))
        return (best[0][0], ratio) if ratio >= 1 + LEAD else None

    def modelled(self, step: Step, queue: list[Trial]) -> list[Trial]:
        """The queue with the settings the model of every reading predicts LEAD above the
        incumbent (at most MODELLED_MOST, not yet read or tried) read once each and placed by
        their readings: before every queued move that read lower (the survey's joint move,
        unread, stays first). Not for races, nor when the
        incumbent's reading gave no rate or the budget cannot hold the readings and an A/B."""
        base = self._readings.get(key_of(step.incumbent), (None, None))[1]
        model = self.model() if self.race_cell is None and base else None
        if model is None:
            return queue
        skip = set(self._readings) | self.state.tried() | {key_of(t.params) for t in [*step.trials, *queue]}
        here = model.predict(step.incumbent)
        picks = [(p, math.exp(v - here)) for p, v in sampler.best_unread(model, skip, MODELLED_MOST)]
        picks = [(p, r) for p, r in picks if r >= 1 + LEAD]
        if not picks or self.left() - self.final_reserve() < len(picks) * self.reading_s(step) + self.duel_time():
            return queue
        self.announce(f"  the model of {model.readings} readings predicts: "
                      + ", ".join(f"{describe(p)} {r:.2f}x" for p, r in picks))  # fmt: skip
        rate = {key_of(t.params): self._readings.get(key_of(t.params), (None, None))[1] for t in queue}
        for params, predicted in picks:
            got = self.reading(params, step)[1]
            self.announce(f"    read {got / base:.2f}x the incumbent" if got else "    no rate")
            if not got or got < base * (1 + LEAD):
                continue
            moved = {k: params[k] for k in sampler.differs(params, step.incumbent)}
            name, value = (
                (next(iter(moved)), next(iter(moved.values()))) if len(moved) == 1 else ("+".join(moved), moved)
            )
            why = f"the model of {model.readings} readings predicted {predicted:.2f}x; read {got / base:.2f}x"
            # the survey's joint move (each of its knobs read LEAD above) stays first
            ranks = [rate.get(key_of(t.params)) or (math.inf if t.joint else 0.0) for t in queue]
            at = next((i for i, r in enumerate(ranks) if r < got), len(queue))
            queue.insert(at, Trial(name, value, why, params))
            rate[key_of(params)] = got
        return queue

    def reading_s(self, step: Step) -> float:
        """What one screen reading is guessed to cost: its window and a launch, or the last
        measured cell's time if that was longer."""
        return max(self.screen_window(step) + 10, self._cell_s or 0.0)

    def screen_window(self, step: Step) -> float:
        """A screen reading's measured seconds: --screen, or --evidence's for a program whose
        progress came in bursts (a short window may see no report: rl_zoo3's readings of 64
        and 256 steps read "no rate")."""
        opts = self.state.options
        return opts.evidence_s if bursty(step.report_gap_s) else min(opts.screen_s, opts.evidence_s)

    def reading(self, values: dict[str, Any], step: Step) -> tuple[str | None, float | None]:
        """One `--screen`-long cell of `values` (a record in the tune's run): its headline and
        rate (harness.runs.view.record_rate: none where the reading is refused). Settings read
        before in this session are not read again: self-play's second screen read leaves 8, 4,
        2, 1 again, 56 s, all of which its first screen had read. An incumbent's evidence cell
        is not one of them: its window is longer (survey() reads the incumbent as it reads the
        challengers)."""
        key = key_of(values)
        if key not in self._readings:
            cell = self.measured_cell(values, self.screen_window(step))
            cell, record = measure_until_counted(
                cell, kept_run(self.store, 0), self.announce, f"the reading of {describe(values)}"
            )
            self._slow_start = self._slow_start or cell.steady_max >= STARTUP_CAP_S
            self._cell_s = record.number("wall_s") or self._cell_s
            self._readings[key] = record_rate(record)
            self._read_params[key] = dict(values)
        return self._readings[key]

    def trial(self, step: Step, trial: Trial, budget: float) -> None:
        opts = self.state.options
        trial.started_s = self.elapsed()
        step.trials.append(trial)
        self.announce(f"  try {trial.said()} ({trial.why})")
        got = self.compare(step.incumbent, trial.params, opts.step_alpha, budget)
        if got.blocks:
            self._block_s.append(got.seconds / got.blocks)
        trial.duel = got.to_json()
        self.announce(f"    {got.describe()}")
        self.save()

    def compare(
        self, incumbent: dict[str, Any], challenger: dict[str, Any], alpha: float, budget: float, final: bool = False
    ) -> Duel:
        """The challenger against the incumbent: a race to the target with --objective
        time-to-target, else the time-sliced A/B of the rate (a step's stopped when it cannot
        decide in its budget; the `final` one runs to its budget)."""
        opts = self.state.options
        if self.race_cell is not None:
            race_opts = RaceOptions(alpha=alpha, budget_s=budget, min_gain=opts.min_gain, seed=opts.seed)
            return race(self.race_cell(incumbent), self.race_cell(challenger), self.store, race_opts)
        slicing = self.slicing()
        if final and self.far_from_start():
            slicing = replace(slicing, pairs=1)
        ab = ABOptions(alpha=alpha, budget_s=budget, seed=opts.seed, slicing=slicing)
        return duel(
            self.make_cell(incumbent), self.make_cell(challenger), self.store.root, ab, opts.min_gain, self.words,
            stop_futile=not final,
        )  # fmt: skip

    def far_from_start(self) -> bool:
        """Whether a whole screen read the winner beyond twice the noise band above the start: its
        final A/B then measures one pair a block (a gap that large is decided by the blocks'
        signs, and fresh processes, not pairs within a block, carry the noise of an idle
        machine: harness.ab.experiment.next_pairs picks one there too). The producers program's
        final A/B took 6 blocks of 15.5 s with the first blocks' two pairs: half a grid of its
        six settings."""
        screened = self.state.halving or {}
        over = screened.get("winner_over_start")
        return over is not None and over > halving.band(screened.get("noise_sd", halving.NOISE_FLOOR)) ** 2

    # ------------------------------------------------------------------ proposals
    def propose(self, incumbent: dict[str, Any], limit: Limit, previous: Step | None) -> list[Trial]:
        knobs = {k.name: k for k in self.state.knobs}
        tried = self.state.tried()
        out: list[Trial] = []
        settings = self.state.settings(incumbent)

        def add(knob: Knob, value: Any, why: str) -> None:
            if value is None or _same(value, incumbent.get(knob.name)):
                return
            params = {**incumbent, knob.name: value}
            key = key_of(params)
            if key in tried:
                return
            tried.add(key)
            out.append(Trial(knob.name, value, why, params))

        def blocked(knob: Knob, toward: Any) -> bool:
            """A move that adds work while the machine is the limit."""
            return limit.saturated and knob.name in self._adds_work and toward == "up"

        model, knob = self._model, self.worker_knob()
        if model is not None and knob is not None:
            pointed = workers.proposal(model, knob, incumbent[knob.name])
            if pointed is not None and not blocked(
                knob, "up" if float(pointed[0]) > float(incumbent[knob.name]) else "down"
            ):
                add(knob, pointed[0], pointed[1])
        if previous is not None and previous.adopted is not None and not previous.trials[previous.adopted].joint:
            last = previous.trials[previous.adopted]  # a joint move's knobs are each read again by the survey
            knob = knobs[last.knob]
            if knob.ordered:
                toward = "up" if float(last.value) > float(previous.incumbent[last.knob]) else "down"
                onward = knob.step(incumbent[knob.name], toward)
                if not blocked(knob, toward) and not screened_lower(previous, last, onward):
                    add(knob, onward, f"continues {knob.name} {toward}")
        for name in limit.limits():
            kind = "critical" if name in limit.groups else "finding"
            for move in moves_for(self.words, name, settings):
                knob = knobs.get(move.knob)
                if knob is None or (move.adds_work and limit.saturated) or blocked(knob, move.toward):
                    continue
                if move.ordered:
                    add(knob, knob.step(incumbent[knob.name], move.toward), f"relieves {name} ({kind})")
                elif knob.index(move.toward) is not None:
                    add(knob, knob.values[knob.index(move.toward)], f"relieves {name} ({kind})")
            for knob in knobs.values():
                if knob.group == name:
                    for value in neighbours(
                        knob, incumbent[knob.name], limit.saturated and knob.name in self._adds_work
                    ):
                        add(knob, value, f"acts on {name} ({kind})")
        for knob in knobs.values():
            for value in neighbours(knob, incumbent[knob.name], limit.saturated and knob.name in self._adds_work):
                add(knob, value, "every knob in turn")
        return out

    # ------------------------------------------------------------------ the end
    def final(self) -> None:
        state = self.state
        if key_of(state.best) == key_of(state.start):
            state.conclusion = state.conclusion or "no challenger beat the start"
            state.conclusion = f"the start stays: {state.conclusion}"
            state.best = dict(state.start)
            return
        # what the budget leaves, but no later than a grid of the space would have ended: the
        # actor-learner's flat space (every setting within 3 % of the start) was screened and
        # raced in 498 s of its grid's 589, and a final A/B given the rest of a 1200 s budget
        # ran 12 blocks, 228 s, to say "less than the 3 % a change must gain" (1.23x the grid)
        budget = min(self.left(), self.grid_s() - self.elapsed())
        need = blocks_to_decide(state.options.final_alpha) * self.block_s()
        if budget < need:
            budget = need  # the final A/B is the tune's answer: it gets the blocks it needs to decide at all
        self.announce(f"final A/B: {describe(state.best)} against the start {describe(state.start)}")
        got = self.compare(state.start, state.best, state.options.final_alpha, budget, final=True)
        state.final = got.to_json()
        self.announce(f"  {got.describe()}")
        if got.decision == BETTER:
            ratio, low, high = got.ratio() or (math.nan, math.nan, math.nan)
            how = f"reaches {state.options.target} {ratio:.2f}x sooner than" if self.race_cell else f"runs {ratio:.2f}x"
            state.conclusion = (
                f"{describe(state.best)} {how} the start [{low:.2f}, {high:.2f}] "
                f"at {100 * (1 - state.options.final_alpha):g} %"
            )
        else:
            state.conclusion = (
                f"the start stays: the final A/B did not confirm {describe(state.best)} ({got.describe()})"
            )
            state.best = dict(state.start)


def no_rate(record: Any, start: str) -> str:
    """Why a tune cannot begin: its start measured no rate (the cell failed, or its progress
    was not read), in the record's words."""
    if not record.ok:
        why = f"its cell ended {record.status}: {record.reason}"
    else:
        said = [w for w in record.warnings if "progress" in w or "throughput" in w]
        why = said[0] if said else "it counted no progress in its measured window"
    return f"harness tune compares rates, and the start ({start}) measured none: {why}"


def screened_lower(step: Step, adopted: Trial, onward: Any) -> bool:
    """Whether a screen of the adopted move's knob in `step` read the next value that way
    lower than the adopted one: the climb then does not continue first (the value is still
    tried with every knob in turn)."""
    for trial in step.trials:
        if trial.screen is None or trial.screen["knob"] != adopted.knob or onward is None:
            continue
        got = Screen.from_json(trial.screen)
        there, here = got.read(onward), got.read(adopted.value)
        if there is not None and here is not None and there < here:
            return True
    return False


def values_ahead(knob: Knob, value: Any, no_up: bool) -> list[Any]:
    """A pair's second knob: an ordered knob's values ahead either way (PAIR_MOST a way,
    spread), a categorical knob's other values."""
    if not knob.ordered:
        return neighbours(knob, value, no_up)
    ways = ("down",) if no_up else ("up", "down")
    return [v for way in ways for v in spread(ahead(knob, value, way), PAIR_MOST)]


def neighbours(knob: Knob, value: Any, no_up: bool) -> list[Any]:
    if knob.ordered:
        return [v for v in ((None if no_up else knob.step(value, "up")), knob.step(value, "down")) if v is not None]
    return [v for v in knob.values if not _same(v, value)]


def against_grid(made: dict[str, Any], tune_s: float) -> str:
    """The tune's seconds beside a grid's of the same space (the plan's estimate)."""
    grid = float(made.get("grid_s") or 0.0)
    if not grid:
        return f"the tune took {tune_s:.0f} s"
    return (
        f"the tune took {tune_s:.0f} s; a grid of one {plan.GRID_WINDOW_S:g} s reading of each of its "
        f"{made['settings']} settings would take about {grid:.0f} s ({tune_s / grid:.2f}x)"
    )


def describe_space(knobs: list[Knob]) -> str:
    return " x ".join(f"{k.name} ({len(k.values)})" for k in knobs)


def describe(values: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items()) or "(no knobs)"
