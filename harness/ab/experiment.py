"""The cells' A/Bs: blocks of time-sliced pairs, the cells' blocks interleaved on one pooled
budget, each cell until the sequential test decides or the pool is spent. Returns data
(CellAB); printing is the command's business. Between blocks it chooses what the next block
measures (its pairs, from the noise so far) and, at the first, what the decision reads (per
CPU second and without run-queue waits where the kernel tells, else the wall clock).

Which cells can be sliced is decided here, before anything runs: a GPU cell cannot (work
queued on the device keeps running while its process is stopped, and both sides would
share the device), nor a cell whose suite's vocabulary says it relies on wall-clock
timeouts inside a slice (`Vocabulary.sliceable`). A cell budgeted by a fixed amount of
work is sliced for a duration instead: the A/B measures its steady rate, and what a
fixed amount of work guarantees (a quality bound) is the sweep's correctness gate.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.ab.revisions import Side
from harness.ab.sequential import (
    DEFAULT_ALPHA,
    DEFAULT_TOLERANCE,
    Decision,
    Interval,
    blocks_to_decide,
    boundary,
    clipped_sequence,
    confidence_sequence,
    decide,
    final,
    median_sequence,
)
from harness.ab.slicing import ESTIMANDS, Block, CellFailed, Pair, SliceOptions, Slicer
from harness.model.registry import get_suite
from harness.model.vocabulary import Vocabulary
from harness.running.matrix import Cell
from harness.runs.record import cell_label

DEFAULT_BUDGET_S = 180.0
GPU_DEVICES = ("cuda", "gpu", "mps", "xpu")


@dataclass
class ABOptions:
    tolerance: float = DEFAULT_TOLERANCE
    alpha: float = DEFAULT_ALPHA  # each decision's error rate
    # A/B seconds per cell, pooled over the cells of one run: no block starts that would end
    # past the pool, and the time a decided cell leaves goes to the undecided ones. The first
    # launch of each side is not counted: it is set-up (a fresh worktree compiles its numba
    # kernels, tens of seconds)
    budget_s: float = DEFAULT_BUDGET_S
    # blocks run whatever the budget says (hyperfine's --min-runs): None, the fewest that can
    # decide at this confidence. A 75 s budget left the gate's self-play (12-14 s blocks) and
    # actor-learner (14-16 s) cells 5-6 blocks, which can only end undecided: never gated.
    min_blocks: int | None = None
    slicing: SliceOptions = field(default_factory=SliceOptions)
    seed: int | None = None  # the pair orders; None: drawn, and recorded
    # what the decision reads; None: chosen at the first block (decision_estimands). harness tune
    # reads the wall-clock rate: its sides differ in how many cores they use, and the rate per
    # CPU second (or without run-queue waits) is then their efficiency, not their speed
    estimands: tuple[str, ...] | None = None

    @property
    def floor_blocks(self) -> int:
        return blocks_to_decide(self.alpha) if self.min_blocks is None else self.min_blocks


@dataclass
class CellAB:
    """What a cell's A/B found: the decision, the interval, every block and pair."""

    cell: Cell
    label: str
    metric: str | None = None
    decision: str = "undecided"  # regression | ok | undecided | error
    reason: str = ""
    failed_side: str | None = None  # with decision "error": base, candidate, or None (both/pairing)
    estimands: tuple[str, ...] = ("wall",)  # the rates the decision reads (harness.ab.slicing.ESTIMANDS)
    interval: Interval | None = None  # the clipped bets' over `estimands`: what the decision reads
    wall_interval: Interval | None = None  # the median wall-clock block's (sign test), reported alongside
    mean_interval: Interval | None = None  # the mean wall-clock block's (t-mixture), reported alongside
    looks: list[Interval] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    elapsed_s: float = 0.0  # the cell's blocks, the first launches included
    setup_s: float = 0.0  # the first launch of each side: not counted against the budget
    decided_s: float | None = None  # A/B time to the decision, set-up excluded (None: budget spent, or error)
    gave_up: bool = False  # ended undecided before its budget by give_up (harness tune's futility); reason says why
    seed: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def spent_s(self) -> float:
        """A/B seconds so far, as the budget counts them (set-up excluded)."""
        return self.elapsed_s - self.setup_s

    def to_json(self) -> dict[str, Any]:
        return {
            "cell": self.cell.id,
            "suite": self.cell.suite,
            "params": self.cell.params,
            "label": self.label,
            "metric": self.metric,
            "decision": self.decision,
            "reason": self.reason,
            "failed_side": self.failed_side,
            "estimands": list(self.estimands),
            "interval": self.interval.to_json() if self.interval else None,
            "wall_interval": self.wall_interval.to_json() if self.wall_interval else None,
            "mean_interval": self.mean_interval.to_json() if self.mean_interval else None,
            "looks": [i.to_json() for i in self.looks],
            "elapsed_s": self.elapsed_s,
            "setup_s": self.setup_s,
            "decided_s": self.decided_s,
            "order_seed": self.seed,
            "notes": self.notes,
            **({"gave_up": True} if self.gave_up else {}),
            "ab_blocks": [
                {
                    "index": b.index,
                    "value": b.value,
                    **{f"{e}_value": b.value_of(e) for e in ESTIMANDS[1:]},
                    "launch_s": b.launch_s,
                    "elapsed_s": b.elapsed_s,
                    "pairs": [p.to_json() for p in b.pairs],
                }
                for b in self.blocks
            ],
        }


def refusal(cell: Cell) -> str | None:
    """Why this cell cannot be time-sliced, or None."""
    suite = get_suite(cell.suite)
    words = suite.words
    if words.device is not None:
        device = str(cell.params.get(words.device, "")).lower()
        if device == "auto" and _has_gpu():
            device = "auto (this machine has a GPU)"
        if device.startswith(GPU_DEVICES) or device.startswith("auto ("):
            return (
                f"{words.device}={device}: a GPU keeps running the work a stopped process queued, and both "
                "sides would share it, so slices cannot separate them (compare GPU cells with sweeps and gate --baseline)"
            )
    if words.sliceable is not None:
        why = words.sliceable(suite.params.model_validate(cell.params))
        if why:
            return f"suite {cell.suite} says: {why}"
    return None


def _has_gpu() -> bool:
    from harness.running.metadata import gpu_info

    return bool(gpu_info()["gpus"])


# give_up(series, interval, blocks run, blocks the budget holds) -> why the A/B stops undecided
# now, or None to go on (harness tune: a challenger's gain too small to decide in its budget)
GiveUp = Callable[[list[list[float | None]], Interval, int, float], str | None]


class CellRun:
    """One cell's A/B in progress: its slicer, the blocks so far, the decision they give."""

    def __init__(
        self,
        cell: Cell,
        base: Side,
        cand: Side,
        run_root: Path,
        opts: ABOptions,
        cand_cell: Cell | None = None,
        decider: Callable[[Interval], str] | None = None,
        words: Vocabulary | None = None,
        give_up: GiveUp | None = None,
    ) -> None:
        self.opts = opts
        self.decider = decider
        self.give_up = give_up
        seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(2**31)
        self.result = CellAB(cell, cell_label(cell.suite, cell.params), seed=seed)
        if cell.work is not None:
            self.result.notes.append(
                f"budgeted by work={cell.work}: sliced for a duration (the A/B measures the steady rate)"
            )
        words = words or get_suite(cell.suite).words
        self.slicer = Slicer(cell, words, base, cand, run_root, opts.slicing, random.Random(seed), cand_cell)
        self.decision: Decision = "continue"
        self.finished = False

    @property
    def per_block_s(self) -> float:
        """The A/B seconds a block of this cell has taken on average (set-up excluded)."""
        return self.result.spent_s / max(len(self.result.blocks), 1)

    @property
    def below_floor(self) -> bool:
        """Fewer blocks run than the fewest that can decide. Blocks run, not blocks that gave a
        value: counting only those kept a CI gate's cells running 11-12 blocks on a machine at
        load 12-15 where the budget held 6, and its time more than doubled."""
        return len(self.result.blocks) < self.opts.floor_blocks

    def step(self) -> bool:
        """Run one block and judge all blocks so far; True when the cell is finished (decided,
        or a side failed)."""
        result = self.result
        try:
            share = self.opts.budget_s / max(self.opts.floor_blocks, 1)
            pairs = self.opts.slicing.pairs or next_pairs(result.blocks, result.estimands, share)
            block = self.slicer.block(len(result.blocks), pairs)
        except CellFailed as exc:
            result.decision, result.reason, result.failed_side = "error", str(exc), exc.side
            self.close()
            return True
        result.blocks.append(block)
        result.elapsed_s += block.elapsed_s
        if len(result.blocks) == 1:
            result.setup_s = sum(block.launch_s.values())
            result.estimands = self.opts.estimands or decision_estimands(block)
        result.metric = f"{self.slicer.counter}_per_s" if self.slicer.counter else None
        series = [[b.value_of(e) for b in result.blocks] for e in result.estimands]
        walls = [v for b in result.blocks if (v := b.value) is not None]
        result.interval = clipped_sequence(series, self.opts.alpha)
        result.wall_interval = median_sequence(walls, self.opts.alpha)
        result.mean_interval = confidence_sequence(walls, self.opts.alpha)
        result.looks.append(result.interval)
        if result.interval.n:
            judge = self.decider or (lambda interval: decide(interval, self.opts.tolerance))
            self.decision = judge(result.interval)  # type: ignore[assignment]
        if self.decision != "continue":
            result.decided_s = result.spent_s
            self.close()
            return True
        if self.give_up is not None and result.interval.n:
            held = self.opts.budget_s / max(self.per_block_s, 1e-9)
            why = self.give_up(series, result.interval, len(result.blocks), held)
            if why:
                result.gave_up, result.reason = True, why
                self.close()
                return True
        return False

    def finish(self) -> CellAB:
        """The result, its decision final (undecided where the budget ended it) and said why."""
        self.close()
        result = self.result
        if result.decision != "error":
            result.decision = final(self.decision)
            if not result.gave_up:
                result.reason = _reason(result, self.opts, self.per_block_s) if self.decider is None else ""
        return result

    def close(self) -> None:
        self.finished = True
        self.slicer.close()


PAIRS_FIRST = 2  # measured pairs of the first blocks, before their noise is known
PAIRS_MAX = 6
PAIRS_AFTER = 3  # blocks before the pairs are chosen from them


def next_pairs(blocks: list[Block], estimands: tuple[str, ...], block_budget_s: float = math.inf) -> int:
    """Measured pairs for the next block, from the blocks so far: the optimum of two-stage
    sampling, m = sqrt((c_block / c_pair) x (s_pair^2 / s_block^2)), with c_block a block's
    seconds beside its measured pairs (launches, the warm-up pair, the ending), c_pair a
    measured pair's, s_pair the spread of pairs within a block and s_block that of the
    processes' own offsets. On an idle machine the pairs of one block agree within 0.015 and
    blocks differ by 0.065 (spin, the 2026-11-23 campaign): one pair; with neighbours taking
    the CPU the pairs of a block differ by 0.06-0.1 even per CPU second: four or more.
    Robust spreads (median within-block variance, MAD of the block values), the noisiest
    estimand's; the count depends on past blocks only, so the test's bets stay fair. No more
    pairs than fit `block_budget_s` (the budget over the floor of blocks: the fewest blocks
    that can decide must fit the budget, or a CI gate's time would grow with its neighbours)."""
    usable = [b for b in blocks if len(b.log_ratios(estimands[0])) >= 2]
    if len(usable) < PAIRS_AFTER:
        return PAIRS_FIRST
    c_pair = float(np.median([_pair_seconds(p) for b in usable for p in b.pairs if not p.warmup]))
    c_block = float(np.median([b.elapsed_s - sum(_pair_seconds(p) for p in b.pairs if not p.warmup) for b in usable]))
    from scipy.stats import chi2

    best = 1.0
    for estimand in estimands:
        # the median of variances of k pairs is chi2(k - 1)'s median over k - 1 of the true one (0.45 at k = 2)
        dof = max(int(np.median([len(b.log_ratios(estimand)) for b in usable])) - 1, 1)
        within = float(np.median([np.var(b.log_ratios(estimand), ddof=1) for b in usable])) / (chi2.median(dof) / dof)
        values = np.array([b.value_of(estimand) for b in usable], dtype=float)
        between = (1.4826 * np.median(np.abs(values - np.median(values)))) ** 2
        mean_pairs = float(np.mean([len(b.log_ratios(estimand)) for b in usable]))
        offsets = max(between - within / mean_pairs, 0.05 * between, 1e-8)
        best = max(best, math.sqrt(max(c_block, 0.0) / max(c_pair, 1e-3) * within / offsets))
    fits = math.floor((block_budget_s - c_block) / max(c_pair, 1e-3)) if math.isfinite(block_budget_s) else PAIRS_MAX
    return int(max(min(round(best), PAIRS_MAX, fits), 1))


def _pair_seconds(pair: Pair) -> float:
    return pair.base.length_s + pair.cand.length_s


def decision_estimands(block: Block) -> tuple[str, ...]:
    """What the decision reads, chosen at the first block: the rate per CPU second and the
    rate with the run-queue wait taken out (both: harness.ab.slicing.SliceResult), where the
    kernel told each slice's run-queue time; the wall-clock rate where it did not. Both
    adjusted rates take a neighbour's share of the CPU out of a slice; the rate per CPU
    second is blind to a candidate that waits more (a sleep, a lock, I/O), the other to one
    whose own extra threads crowd its workers, and "ok" needs both."""
    measured = [p for p in block.pairs if p.base.rate and p.cand.rate]
    if measured and all(s.runq_s is not None for p in measured for s in (p.base, p.cand)):
        return ("cpu", "runq")
    return ("wall",)


def _reason(result: CellAB, opts: ABOptions, per_block_s: float) -> str:
    interval = result.interval
    if interval is None or interval.n == 0 or not math.isfinite(interval.estimate):
        return "no block gave a rate on both sides"
    ratio, low, high = interval.ratios()
    edge = 1 - opts.tolerance
    read = "the rate per CPU second and without run-queue waits" if "cpu" in result.estimands else "wall clock"
    span = f"candidate/base {ratio:.3f} [{low:.3f}, {high:.3f}] ({read}) after {interval.n} blocks"
    if result.decision == "regression":
        return f"{span}: the whole interval is below {edge:.3f}"
    if result.decision == "ok":
        return f"{span}: the whole interval is above {edge:.3f}"
    reason = f"{span}: the interval still holds {edge:.3f} after {result.spent_s:.0f} s (budget {opts.budget_s:g} s)"
    fewest = blocks_to_decide(opts.alpha)
    if interval.n < fewest:
        return (
            reason + f"; no decision is possible before {fewest} blocks at {100 * (1 - opts.alpha):g} % (--min-blocks)"
        )
    series = [[v for b in result.blocks if (v := b.value_of(e)) is not None] for e in result.estimands]
    need = blocks_needed(series, interval.estimate, boundary(opts.tolerance), opts.floor_blocks, opts.alpha)
    if need is None:
        return (
            reason + f"; its estimate sits at {edge:.3f}: no budget is likely to decide, a tolerance either side would"
        )
    if need > interval.n:
        return reason + (
            f"; at this spread of blocks about {need} would decide, a budget of about "
            f"{math.ceil(need * per_block_s / 10) * 10:.0f} s (--budget)"
        )
    return reason


# blocks to decide, as the clipped bets need them at 95 % for normal blocks of robust sd s at a
# distance d from the boundary: median over simulated A/Bs ~ NEED_PER_SPREAD (s/d)^2 + NEED_EXTRA
# (4 at s/d = 0.5 (the floor), 12 at 1, 30 at 2, 64 at 3; heavier tails need fewer). Another
# confidence scales the first term by log(1/alpha) / log(20): at 80 % the simulation needed 14
# blocks at s/d = 2 and 35 at 3, the scaled projection says 20 and 40.
NEED_PER_SPREAD, NEED_EXTRA, NEED_ALPHA = 7.5, 4.0, 0.05


def blocks_needed(
    series: list[list[float]], estimate: float, edge: float, floor: int, alpha: float = NEED_ALPHA
) -> int | None:
    """About how many blocks would decide, if the blocks keep their robust spread (the widest
    estimand's) and the estimate stays where it is: a projection from the spread, not the
    interval's width (with few blocks that is set by the farthest ones); None where the
    estimate sits at the edge or no spread is known yet. Missing values (None) are left out."""
    kept = [[v for v in x if v is not None and math.isfinite(v)] for x in series]
    spreads = [1.4826 * float(np.median(np.abs(np.array(x) - np.median(x)))) for x in kept if len(x) >= 3]
    distance = abs(estimate - edge)
    if not spreads or distance < 1e-4 or not math.isfinite(estimate):
        return None
    per_spread = NEED_PER_SPREAD * math.log(1 / alpha) / math.log(1 / NEED_ALPHA)
    return max(floor, math.ceil(per_spread * (max(spreads) / distance) ** 2 + NEED_EXTRA))



def run_cell(
    cell: Cell,
    base: Side,
    cand: Side,
    run_root: Path,
    opts: ABOptions,
    on_block: Callable[[CellAB], None] | None = None,
    cand_cell: Cell | None = None,
    decider: Callable[[Interval], str] | None = None,
    words: Vocabulary | None = None,
    give_up: GiveUp | None = None,
) -> CellAB:
    """One cell's A/B: blocks until a decision or its budget. `cand_cell` runs other params
    on the candidate's side (harness tune's challenger); `decider` reads the interval instead
    of the tolerance's regression / ok / continue (anything but "continue" ends the A/B);
    `words` another vocabulary than the suite's (its first rate the counter slices are
    measured by: harness tune --objective); `give_up` may end it undecided before its budget
    (a stop that decides nothing cannot make a wrong decision)."""
    return run_all(
        [cell], base, cand, run_root, opts, on_block, cand_cell=cand_cell, decider=decider, words=words, give_up=give_up
    )[0]


def run_all(
    cells: list[Cell],
    base: Side,
    cand: Side,
    run_root: Path,
    opts: ABOptions,
    on_block: Callable[[CellAB], None] | None = None,
    on_cell: Callable[[list[CellAB]], None] | None = None,
    cand_cell: Cell | None = None,
    decider: Callable[[Interval], str] | None = None,
    words: Vocabulary | None = None,
    give_up: GiveUp | None = None,
) -> list[CellAB]:
    """Every cell's A/B, the cells' blocks interleaved and their budget pooled: the next block
    goes to the undecided cell that has had the least A/B time (so a slow cell cannot starve
    the others, and what a decided cell leaves goes to the rest), every cell runs its floor
    of blocks, and no block starts that would end past the pool (budget x cells).
    `on_cell` gets the finished results, in the cells' order, each time one finishes (so an
    interrupted A/B still leaves what it measured). `cand_cell`, `decider`, `words`: as
    run_cell's (harness tune runs one cell), `give_up` too."""
    runs = [CellRun(cell, base, cand, run_root, opts, cand_cell, decider, words, give_up) for cell in cells]
    pool = opts.budget_s * len(cells)
    done: dict[int, CellAB] = {}

    def finish(i: int) -> None:
        done[i] = runs[i].finish()
        if on_cell is not None:
            on_cell([done[k] for k in sorted(done)])

    try:
        while len(done) < len(runs):
            active = [i for i in range(len(runs)) if i not in done]
            i = min(active, key=lambda k: (not runs[k].below_floor, runs[k].result.spent_s, k))
            run = runs[i]
            spent = sum(r.result.spent_s for r in runs)
            if not run.below_floor and spent + run.per_block_s > pool:
                finish(i)
                continue
            finished = run.step()
            if on_block is not None and run.result.blocks:
                on_block(run.result)
            if finished:
                finish(i)
    finally:
        for run in runs:
            run.close()
    return [done[i] for i in range(len(runs))]


# Exit codes of `harness ab` (and `harness gate --against`): the table in docs/guide/commands.md.
EXIT_OK, EXIT_REGRESSION, EXIT_UNDECIDED = 0, 1, 3


def exit_code(results: list[CellAB]) -> int:
    """1 when a cell regressed or a side's cell failed, else 3 when one stayed undecided (or
    could not be measured, no side to blame), else 0."""
    if any(r.decision == "regression" or (r.decision == "error" and r.failed_side) for r in results):
        return EXIT_REGRESSION
    if any(r.decision in ("undecided", "error") for r in results):
        return EXIT_UNDECIDED
    return EXIT_OK
