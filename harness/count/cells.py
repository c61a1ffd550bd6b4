"""The counted A/B of cells (harness ab/gate --measure instructions): per cell, its counts
(harness.count.experiment), then what counts cannot see, decided natively beside them, and
the verdict of both.

A unit's time without the run queue is its CPU time, which the counts stand for, plus its
waits off the CPU (a sleep, I/O, a lock or the GIL, another process). The waits are decided
by the time A/B's own machinery (harness.ab.experiment.run_all: time-sliced blocks, the
anytime-valid interval) on the "waits" reading of each slice (harness.ab.slicing): the share
of the slice's time without run-queue waits that the cell was on a CPU. It falls by what
waits add to a unit's time, and a change of the CPU's speed, which moves the work and its
time alike, cancels in it: the noise that keeps a time A/B undecided on a shared machine is
not in it. The same blocks give the time A/B's reading (per CPU second and without run-queue
waits), reported beside, not decided on.

The verdict, per cell: a count regression is a regression (the waits are not measured then:
the cell is decided); counts not decidable, or undecided, leave the cell undecided with the
reason; counts ok and waits that grew beyond the tolerance is a regression, named as waits
("a slowdown counts cannot see"); counts ok and waits ok is ok; waits undecided at their
budget, or not measured with no side to blame (a program that runs to its end before it
can be time-sliced: DEAP's onemax example, 1.4 s natively), leave it undecided. Exit codes
as harness ab's: harness.ab.experiment.exit_code reads these results as it reads a time A/B's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.ab.experiment import ABOptions, CellAB, run_all
from harness.ab.revisions import Side
from harness.ab.sequential import Interval, clipped_sequence
from harness.count.experiment import CountAB, CountOptions, count_cell
from harness.count.window import Counted
from harness.running.matrix import Cell

WAITS = ("waits",)
# measured pairs per block of the waits (unless --pairs): blocks agree on them within a few
# thousandths, so it is the floor of blocks a decision needs (6 at 95 %), not the pairs'
# noise, that sets the time: one pair a block, ~8 s on a small program, where the time A/B's
# choice (up to 6 pairs, for its noisier readings) made them 17 s
WAITS_PAIRS = 1
TIME = ("cpu", "runq")


@dataclass
class CountedCell:
    """A cell's counted A/B: counts, waits, the time A/B beside them, and the verdict."""

    cell: Cell
    label: str
    counts: CountAB
    waits: CellAB | None = None
    decision: str = "undecided"  # regression | ok | undecided | error
    reason: str = ""
    failed_side: str | None = None
    time: Interval | None = None  # the time A/B's interval from the waits' blocks (not decided on)

    @property
    def waits_interval(self) -> Interval | None:
        return self.waits.interval if self.waits is not None else None

    @property
    def elapsed_s(self) -> float:
        return self.counts.elapsed_s + (self.waits.elapsed_s if self.waits is not None else 0.0)

    def to_json(self) -> dict[str, Any]:
        told = self.counts.verdict
        speed = None  # the counted speed, as a gate's speed check reads an A/B's interval: base / candidate work
        if told is not None and told.ratio and told.low and told.high:
            speed = {"ratio": 1 / told.ratio, "ratio_low": 1 / told.high, "ratio_high": 1 / told.low}
        return {
            "cell": self.cell.id,
            "suite": self.cell.suite,
            "params": self.cell.params,
            "label": self.label,
            "measure": "instructions",
            "metric": f"instructions per {self.counts.counter}" if self.counts.counter else None,
            "decision": self.decision,
            "reason": self.reason,
            "failed_side": self.failed_side,
            "elapsed_s": self.elapsed_s,
            "interval": speed,
            "counts": self.counts.to_json(),
            "waits": self.waits.to_json() if self.waits is not None else None,
            "time_interval": self.time.to_json() if self.time is not None else None,
        }


def verdict(counts: CountAB, waits: CellAB | None, tolerance: float) -> tuple[str, str, str | None]:
    """(decision, reason, failed side) of a cell from its counts and waits (the module's docstring)."""
    if counts.error is not None:
        return "error", counts.error, counts.failed_side
    assert counts.verdict is not None
    told = counts.verdict
    if told.decision == "regression":
        return "regression", f"counted work: {told.reason}", None
    if told.decision in ("refused", "undecided"):
        return "undecided", f"counts: {told.reason}", None
    if waits is None:
        return "undecided", f"counts: {told.reason}; waits not measured", None
    if waits.decision == "error" and waits.failed_side is None:  # no side failed: e.g. the program ran to its end
        return "undecided", f"counts: {told.reason}; waits not measured: {waits.reason}", None
    if waits.decision == "error":
        return "error", f"counts: {told.reason}; waits: {waits.reason}", waits.failed_side
    said = waits_reason(waits, tolerance)
    if waits.decision == "regression":
        return (
            "regression",
            f"waits grew while counts are flat (a slowdown counts cannot see: sleep, I/O, locks): {said}; "
            f"counts: {told.reason}",
            None,
        )
    if waits.decision == "ok":
        return "ok", f"counts: {told.reason}; waits: {said}", None
    return "undecided", f"counts: {told.reason}; waits: {said}", None


def waits_reason(waits: CellAB, tolerance: float) -> str:
    """The waits' interval in words: the candidate's share of time on the CPU over the base's."""
    interval = waits.interval
    if interval is None or interval.n == 0 or not math.isfinite(interval.estimate):
        return "no block gave a reading on both sides"
    ratio, low, high = interval.ratios()
    edge = 1 - tolerance
    span = f"share of time on the CPU candidate/base {ratio:.3f} [{low:.3f}, {high:.3f}] after {interval.n} blocks"
    if waits.decision == "regression":
        return f"{span}, wholly below {edge:.3f}"
    if waits.decision == "ok":
        return f"{span}, wholly above {edge:.3f}"
    return f"{span}, still holding {edge:.3f} at the budget ({waits.spent_s:.0f} s)"


def time_interval(waits: CellAB, alpha: float) -> Interval | None:
    """The time A/B's reading of the waits' blocks: per CPU second and without run-queue waits."""
    series = [[b.value_of(e) for b in waits.blocks] for e in TIME]
    if not any(v is not None for row in series for v in row):
        return None
    return clipped_sequence(series, alpha)


def run_counted(
    cells: list[Cell],
    base: Side,
    cand: Side,
    root: Path,
    count_opts: CountOptions,
    ab_opts: ABOptions,
    on_run: Callable[[Counted], None] | None = None,
    on_block: Callable[[CellAB], None] | None = None,
    on_cell: Callable[[list[CountedCell]], None] | None = None,
    found: dict[str, str] | None = None,
) -> list[CountedCell]:
    """Every cell's counts, then the waits of the cells whose counts did not decide them
    (their blocks interleaved on the pooled budget, as a time A/B's), then the verdicts."""
    results = []
    for cell in cells:
        counts = count_cell(cell, base, cand, root, count_opts, on_run, found)
        results.append(CountedCell(cell, counts.label, counts))
        if on_cell is not None:
            on_cell(results)
    pending = [r for r in results if r.counts.verdict is not None and r.counts.verdict.decision == "ok"]
    if pending:
        slicing = replace(ab_opts.slicing, pairs=ab_opts.slicing.pairs or WAITS_PAIRS)
        waits = run_all(
            [r.cell for r in pending], base, cand, root, replace(ab_opts, estimands=WAITS, slicing=slicing),
            on_block=on_block,
        )  # fmt: skip
        for result, got in zip(pending, waits, strict=True):
            result.waits = got
            result.time = time_interval(got, ab_opts.alpha)
    for result in results:
        result.decision, result.reason, result.failed_side = verdict(result.counts, result.waits, ab_opts.tolerance)
    if on_cell is not None:
        on_cell(results)
    return results
