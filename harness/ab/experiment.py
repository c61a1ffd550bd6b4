"""One cell's A/B: blocks of time-sliced pairs until the sequential test decides or the
budget is spent. Returns data (CellAB); printing is the command's business.

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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.ab.revisions import Side
from harness.ab.sequential import (
    DEFAULT_ALPHA,
    DEFAULT_TOLERANCE,
    Interval,
    blocks_to_decide,
    confidence_sequence,
    decide,
    final,
    median_sequence,
)
from harness.ab.slicing import Block, CellFailed, SliceOptions, Slicer
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
    # per cell: no block starts that would end past it. The first launch of each side is
    # not counted: it is set-up (a fresh worktree compiles its numba kernels, tens of seconds)
    budget_s: float = DEFAULT_BUDGET_S
    # blocks run whatever the budget says (hyperfine's --min-runs): None, the fewest that can
    # decide at this confidence. A 75 s budget left the gate's self-play (12-14 s blocks) and
    # actor-learner (14-16 s) cells 5-6 blocks, which can only end undecided: never gated.
    min_blocks: int | None = None
    slicing: SliceOptions = field(default_factory=SliceOptions)
    seed: int | None = None  # the pair orders; None: drawn, and recorded

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
    interval: Interval | None = None  # the median block's: what the decision reads
    mean_interval: Interval | None = None  # the mean's (t-mixture), reported alongside
    looks: list[Interval] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    elapsed_s: float = 0.0  # everything, the first launches included
    setup_s: float = 0.0  # the first launch of each side: not counted against the budget
    decided_s: float | None = None  # A/B time to the decision, set-up excluded (None: budget spent, or error)
    seed: int = 0
    notes: list[str] = field(default_factory=list)

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
            "interval": self.interval.to_json() if self.interval else None,
            "mean_interval": self.mean_interval.to_json() if self.mean_interval else None,
            "looks": [i.to_json() for i in self.looks],
            "elapsed_s": self.elapsed_s,
            "setup_s": self.setup_s,
            "decided_s": self.decided_s,
            "order_seed": self.seed,
            "notes": self.notes,
            "ab_blocks": [
                {
                    "index": b.index,
                    "value": b.value,
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
) -> CellAB:
    """Blocks until a decision or the budget; a side that fails ends it with "error".
    `cand_cell` runs other params on the candidate's side (harness tune's challenger);
    `decider` reads the interval instead of the tolerance's regression / ok / continue
    (anything but "continue" ends the A/B); `words` another vocabulary than the suite's
    (its first rate the counter slices are measured by: harness tune --objective)."""
    seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(2**31)
    result = CellAB(cell, cell_label(cell.suite, cell.params), seed=seed)
    if cell.work is not None:
        result.notes.append(f"budgeted by work={cell.work}: sliced for a duration (the A/B measures the steady rate)")
    words = words or get_suite(cell.suite).words
    slicer = Slicer(cell, words, base, cand, run_root, opts.slicing, random.Random(seed), cand_cell)
    judge = decider if decider is not None else (lambda interval: decide(interval, opts.tolerance))
    started = time.monotonic()
    decision = "continue"
    try:
        while True:
            block = slicer.block(len(result.blocks))
            result.blocks.append(block)
            if len(result.blocks) == 1:
                result.setup_s = sum(block.launch_s.values())
            result.metric = f"{slicer.counter}_per_s" if slicer.counter else None
            values = [b.value for b in result.blocks if b.value is not None]
            result.interval = median_sequence(values, opts.alpha)
            result.mean_interval = confidence_sequence(values, opts.alpha)
            result.looks.append(result.interval)
            decision = judge(result.interval) if values else "continue"
            elapsed = time.monotonic() - started - result.setup_s
            if on_block is not None:
                result.elapsed_s = elapsed + result.setup_s
                on_block(result)
            if decision != "continue":
                result.decided_s = elapsed
                break
            per_block = elapsed / len(result.blocks)
            if len(result.blocks) >= opts.floor_blocks and elapsed + per_block > opts.budget_s:
                break
    except CellFailed as exc:
        result.decision, result.reason, result.failed_side = "error", str(exc), exc.side
    finally:
        slicer.close()
        result.elapsed_s = time.monotonic() - started
    if result.decision != "error":
        result.decision = final(decision)
        result.reason = _reason(result, opts) if decider is None else ""
    return result


def _reason(result: CellAB, opts: ABOptions) -> str:
    interval = result.interval
    if interval is None or interval.n == 0 or not math.isfinite(interval.estimate):
        return "no block gave a rate on both sides"
    ratio, low, high = interval.ratios()
    edge = 1 - opts.tolerance
    span = f"candidate/base {ratio:.3f} [{low:.3f}, {high:.3f}] (median block) after {interval.n} blocks"
    if result.decision == "regression":
        return f"{span}: the whole interval is below {edge:.3f}"
    if result.decision == "ok":
        return f"{span}: the whole interval is above {edge:.3f}"
    spent = result.elapsed_s - result.setup_s
    reason = f"{span}: the interval still holds {edge:.3f} after {spent:.0f} s (budget {opts.budget_s:g} s)"
    fewest = blocks_to_decide(opts.alpha)
    if interval.n < fewest:
        reason += f"; no decision is possible before {fewest} blocks at {100 * (1 - opts.alpha):g} % (--min-blocks)"
    return reason


def run_all(
    cells: list[Cell],
    base: Side,
    cand: Side,
    run_root: Path,
    opts: ABOptions,
    on_block: Callable[[CellAB], None] | None = None,
    on_cell: Callable[[list[CellAB]], None] | None = None,
) -> list[CellAB]:
    """Every cell's A/B in turn; `on_cell` gets the results so far after each cell (so an
    interrupted A/B still leaves what it measured)."""
    results: list[CellAB] = []
    for cell in cells:
        results.append(run_cell(cell, base, cand, run_root, opts, on_block))
        if on_cell is not None:
            on_cell(results)
    return results


# Exit codes of `harness ab` (and `harness gate --against`): docs/guide/ab-and-gates.md.
EXIT_OK, EXIT_REGRESSION, EXIT_UNDECIDED = 0, 1, 3


def exit_code(results: list[CellAB]) -> int:
    """1 when a cell regressed or a side's cell failed, else 3 when one stayed undecided (or
    could not be measured, no side to blame), else 0."""
    if any(r.decision == "regression" or (r.decision == "error" and r.failed_side) for r in results):
        return EXIT_REGRESSION
    if any(r.decision in ("undecided", "error") for r in results):
        return EXIT_UNDECIDED
    return EXIT_OK
