"""A challenger against the incumbent: the A/B of `harness ab` (time-sliced fresh processes,
blocks, the anytime-valid interval of the median block log-ratio), with the two sides the
same code and different params, and tune's three-way decision in place of the gate's.

One edge decides both ways: 1 + min_gain, the smallest gain worth a change of settings.
"better": the whole interval lies above it (the challenger is faster by at least that, at the
A/B's confidence); "worse": the whole interval lies below it (slower, or faster by less than a
change is worth); otherwise more blocks, and at the budget "undecided". An edge at 1 for
adoption adopted any decided gain, however small: MCCFR's campaign at 71df82e adopted sync
modes 1.046x [1.005, 1.089] and then 1.116x apart, 374 s of a tune spent on settings its
confirmations could not rank (5-12 % apart). Nothing is adopted on a single reading: a
decision needs the interval, and the interval needs the blocks
(harness.ab.sequential.blocks_to_decide).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.ab.experiment import ABOptions, CellAB, GiveUp, blocks_needed, run_cell
from harness.ab.revisions import WORKING_TREE, Side
from harness.ab.sequential import Interval
from harness.ab.slicing import SliceOptions
from harness.model.vocabulary import Vocabulary
from harness.running.matrix import Cell

BETTER, WORSE, UNDECIDED, ERROR = "better", "worse", "undecided", "error"
# between two leaders of a whole screen (harness.tune.halving): the challenger is behind by at
# least --min-gain, or the two are within it of each other
BEHIND, TIE = "behind", "tie"


# the A/B's decision reads the wall-clock rate: a tune's sides differ in how many cores they use
# (a backend, workers, games in flight), and the rate per CPU second then measures efficiency.
# Self-play's server with 4 games a worker ran 1.11-1.20x processes by its blocks' wall rates and
# was decided 0.778x on the rate per CPU second and without run-queue waits (2026-11-27)
TUNE_ESTIMANDS = ("wall",)
SLICE_CYCLES = 3  # a slice spans this many of the program's gaps between progress reports
SAMPLE_S = 1.0  # the cell's samples come about this far apart: a gap read from them may be this much longer
MAX_SLICE_S = 10.0


# a gap up to this many sample periods is the samples' own jitter (a counter that grew at every
# sample read gaps of 1.018 s, which gave the producers program 6 s slices and 42 s blocks);
# one that missed a sample reads about two periods
BURSTY_SAMPLES = 1.5


def bursty(gap_s: float | None) -> bool:
    """Whether a program's progress comes in bursts: its longest gap between reports
    (harness.tune.evidence.report_gap) spans more than a sample period and its jitter."""
    return gap_s is not None and gap_s > BURSTY_SAMPLES * SAMPLE_S


def slicing_for(gap_s: float | None) -> SliceOptions:
    """Slices long enough for a program whose progress comes in bursts. A trainer that
    collects, then learns for seconds in silence (CleanRL's PPO: 2-3 s without a report) has a
    1 s slice's rate depend on which phase it caught: C1's A/B of a change worth about 2x read
    2.9x, 7.4x and 6.2x in its blocks, and with 2.4 s slices (two gaps as the 1 s samples showed
    them) C3's blocks still read 5.2x, 1.2x and 0.95x. A slice spans SLICE_CYCLES gaps, each taken
    a sample period longer than the series shows it (at most MAX_SLICE_S); a program whose
    counter grew steadily at every sample (no gap: harness.tune.evidence.report_gap) keeps the
    A/B's own slices."""
    default = SliceOptions()
    if not bursty(gap_s):
        return default
    length = min(MAX_SLICE_S, SLICE_CYCLES * (gap_s + SAMPLE_S))
    return SliceOptions(slice_s=length, max_slice_s=length + default.max_slice_s)


def gain_decider(min_gain: float):
    """The decision on the interval of log(challenger / incumbent), at the one edge
    log(1 + min_gain)."""
    worth = math.log1p(min_gain)

    def decide(interval: Interval) -> str:
        if interval.low > worth:
            return BETTER
        if interval.high < worth:
            return WORSE
        return "continue"

    return decide


def leaders_decider(min_gain: float):
    """The decision between two leaders on the interval of log(challenger / incumbent), at the
    edges -log(1 + min_gain) and +log(1 + min_gain): ahead (better), behind, or a tie (the whole
    interval between the edges: neither is worth a change from the other)."""
    worth = math.log1p(min_gain)

    def decide(interval: Interval) -> str:
        if interval.low > worth:
            return BETTER
        if interval.high < -worth:
            return BEHIND
        if interval.low > -worth and interval.high < worth:
            return TIE
        return "continue"

    return decide


FUTILE_AFTER = 5  # blocks before the spread is trusted for a projection
FUTILE_FACTOR = 1.5  # stop when the blocks projected to decide exceed this many times those the budget holds


def futility(min_gain: float, alpha: float) -> GiveUp:
    """Stop a challenger's A/B, undecided, once its blocks say no budget it has is likely to
    decide: the blocks projected to reach the edge (1 + min_gain, either way) at the blocks'
    spread (harness.ab.experiment.blocks_needed, at the A/B's confidence) exceed FUTILE_FACTOR
    times the blocks its budget holds. In the seeds campaign
    at 0ba8279 the undecided A/Bs (gains of 0-5 %, 139-156 s each, six of them) were most of a
    tune's time; replayed on their recorded blocks, this rule stopped each after 5-7 blocks
    (444 s of the campaign's time) and no A/B that decided. Stopping decides nothing, so it
    cannot make a wrong decision: it gives up a small gain a longer A/B might have shown."""
    edge = math.log1p(min_gain)

    def give_up(series: list[list[float | None]], interval: Interval, blocks: int, held: float) -> str | None:
        if blocks < FUTILE_AFTER:
            return None
        needs = blocks_needed(series, interval.estimate, edge, blocks, alpha)
        if needs is None or needs <= FUTILE_FACTOR * held:
            return None
        return (
            f"stopped after {blocks} blocks: at their spread about {needs} blocks would decide, "
            f"its budget holds about {held:.0f} (a gain this small is not worth the time)"
        )

    return give_up


@dataclass
class Duel:
    decision: str  # better | worse | undecided | error
    interval: Interval | None
    blocks: int
    seconds: float
    metric: str | None
    reason: str
    block_ratios: list[float | None] = field(
        default_factory=list
    )  # each block's challenger / incumbent (None: unmeasured)
    launch_s: list[float] = field(default_factory=list)  # each launch's seconds to counted work, both sides
    races: list[dict[str, Any]] = field(default_factory=list)  # a race's blocks (harness.tune.race): order, times
    gave_up: bool = False  # undecided before its budget: too small a gain to decide in it (futility)

    def ratio(self) -> tuple[float, float, float] | None:
        return self.interval.ratios() if self.interval is not None and self.interval.n else None

    def describe(self) -> str:
        got = self.ratio()
        if got is None:
            return f"{self.decision}: {self.reason}"
        ratio, low, high = got
        said = f"{self.decision}: {ratio:.3f}x [{low:.3f}, {high:.3f}] after {self.blocks} blocks, {self.seconds:.0f} s"
        return f"{said}; {self.reason}" if self.gave_up or (self.decision == WORSE and self.reason) else said

    def to_json(self) -> dict[str, Any]:
        got = self.ratio()
        return {
            "decision": self.decision,
            "ratio": got[0] if got else None,
            "low": got[1] if got else None,
            "high": got[2] if got else None,
            "block_count": self.blocks,
            "seconds": self.seconds,
            "metric": self.metric,
            "reason": self.reason,
            "block_ratios": self.block_ratios,
            "launch_s": self.launch_s,
            **({"races": self.races} if self.races else {}),
            **({"gave_up": True} if self.gave_up else {}),
            "said": self.describe(),
        }


def same_code() -> tuple[Side, Side]:
    """Both sides run the code at hand, from the current directory (a program's own files)."""
    root = Path.cwd()
    return Side("base", WORKING_TREE, None, root), Side("candidate", WORKING_TREE, None, root)


def duel(
    incumbent: Cell,
    challenger: Cell,
    run_root: Path,
    opts: ABOptions,
    min_gain: float,
    words: Vocabulary | None = None,
    stop_futile: bool = True,
    leaders: bool = False,
) -> Duel:
    """The A/B of `challenger` against `incumbent` until a decision or `opts.budget_s`
    (`words`: the vocabulary whose first rate the slices count, the suite's by default), or
    until its blocks say the budget will not decide (`stop_futile`: a step's challengers; the
    final A/B, the tune's answer, runs to its budget). `leaders`: two leaders of a whole
    screen, decided ahead, behind or tied (leaders_decider) instead of better or worse."""
    base, cand = same_code()
    opts = replace(opts, estimands=opts.estimands or TUNE_ESTIMANDS)
    decider = leaders_decider(min_gain) if leaders else gain_decider(min_gain)
    got: CellAB = run_cell(
        incumbent, base, cand, run_root, opts, cand_cell=challenger, decider=decider, words=words,
        give_up=futility(min_gain, opts.alpha) if stop_futile else None,
    )  # fmt: skip
    known = (BETTER, BEHIND, TIE, ERROR) if leaders else (BETTER, WORSE, ERROR)
    decision = got.decision if got.decision in known else UNDECIDED
    gave_up = decision == UNDECIDED and got.gave_up
    reason = got.reason if gave_up else (undecided_reason(got) if decision == UNDECIDED else got.reason)
    reason = too_small(decision, got.interval, min_gain) or reason
    ratios = [math.exp(b.value) if b.value is not None else None for b in got.blocks]
    launches = [s for b in got.blocks for s in b.launch_s.values()]
    return Duel(
        decision, got.interval, len(got.blocks), got.elapsed_s, got.metric, reason, ratios, launches, gave_up=gave_up
    )


def undecided_reason(got: CellAB) -> str:
    """Why an A/B that reached its budget decided nothing: an interval that still holds both
    1 and a gain, or no interval at all (no block measured both sides: nothing was compared)."""
    if got.interval is None or got.interval.n == 0:
        counter = got.metric or "no counter the sides agreed on"
        return (
            f"no block of {len(got.blocks)} measured a rate on both sides ({counter}) in {got.elapsed_s:.0f} s: "
            "nothing was compared"
        )
    return AT_BUDGET


AT_BUDGET = "the interval still holds the smallest gain worth taking (--min-gain) at the budget"


def too_small(decision: str, interval: Interval | None, min_gain: float) -> str | None:
    """What "worse" means when the interval reaches above 1: the trail would otherwise say
    "worse: 1.02x [1.01, 1.029]" (or, told 10 %, "worse: 1.002x [0.902, 1.086]") and leave the
    reader to work out why."""
    if decision != WORSE or interval is None or not interval.n or interval.high <= 0:
        return None
    said = f"the {100 * min_gain:g} % a change must gain (--min-gain)"
    return f"faster, by less than {said}" if interval.low > 0 else f"less than {said}, if faster at all"
