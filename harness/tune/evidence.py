"""The evidence tune gathers about an incumbent before moving a knob: one measured cell
(its record in the tune's run directory, diagnosed by every rule) and, unless turned off,
a causal experiment on the same params (which group of processes limits it).

Both run the incumbent as the user would, in fresh processes of their own; nothing here
compares settings (that is the A/B's job, harness.tune.duel), it only says where to look.

A cell's automatic warm-up ends at its cap (10 s) even when nothing was counted yet, so a
program that takes longer to print its first progress (rl_zoo3's imports and env processes
took 30 s on the loaded VM) closed its measured window before its start-up ended: a window
of start-up, no rate, and findings about imports. Such a cell is measured once more with
the cap at STARTUP_CAP_S, which the tune then keeps for every cell it measures; a window that
still counts nothing gives no findings (they would be the start-up's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.causal.result import CausalOptions
from harness.diagnosis import diagnose
from harness.running.matrix import DEFAULT_DEADLINE_SLACK_S, Cell
from harness.running.runner import CellRunner
from harness.runs.record import Record
from harness.runs.store import RunStore
from harness.runs.view import build_view, headline_rate
from harness.tune.bottleneck import Limit, read_limit


@dataclass
class Evidence:
    record: Record
    findings: list[dict[str, Any]]
    causal: dict[str, Any] | None  # causal.json's document; None: not run or it failed
    causal_error: str | None
    limit: Limit
    seconds: float
    cell: Cell  # as measured: with the longer start-up cap when the first window counted nothing


STARTUP_CAP_S = 60.0  # the warm-up's cap for a program that counted nothing in its first window


def counted(record: Record) -> bool:
    """Whether the record's measured window holds a rate (its program had started)."""
    return record.ok and headline_rate([record]) is not None


def report_gap(run_root: Path, record: Record) -> float | None:
    """The longest stretch, in seconds, over which the headline counter did not grow inside
    the record's measured window (its series, runs/series.py's tidy CSV, to the window's close):
    how far apart the program's progress reports come. None without a rate or a series, or
    for a counter that grew steadily at every sample (`steady`)."""
    import csv

    metric = headline_rate([record]) if counted(record) else None
    if metric is None or not record.series:
        return None
    counter = metric.removesuffix("_per_s")
    try:
        with open(run_root / record.series, newline="") as handle:
            rows = [row for row in csv.DictReader(handle) if row.get("metric") == counter]
            points = [(float(row["t_s"]), float(row["value"])) for row in rows if row.get("phase") == "measure"]
            closed = [(float(row["t_s"]), float(row["value"])) for row in rows if row.get("phase") == "stopped"]
    except (OSError, ValueError, KeyError):
        return None
    # the window ends at its first `stopped` row: the later ones hold the last level to the
    # cell's end (the actor-learner, counting every second, read a 1.8 s "gap" there and got
    # 8.5 s slices, 56 s A/B blocks)
    points += closed[:1]
    if steady(points):
        return None
    grew = [t for (t, v), (_, before) in zip(points[1:], points, strict=False) if v > before]
    edges = [points[0][0], *grew, points[-1][0]] if len(points) >= 2 else []
    return max((b - a for a, b in zip(edges, edges[1:], strict=False)), default=None)


STEADY_CV = 0.5  # a counter whose rate from sample to sample varies less than this (its CV) is steady


def steady(points: list[tuple[float, float]]) -> bool:
    """Whether a counter grew at every sample, at a rate that varied by less than STEADY_CV of
    its mean: it reports more often than it is sampled, and its gaps are the samples' (the
    actor-learner's read 1.00-1.01 s, which a slice does not need to span). CleanRL's global_step
    stood still for two samples while it learned: not steady. A window of one sample interval
    (a 1 s evidence cell) that grew is steady too: nothing in it stood still, and reading its
    interval (1.013 s) as a gap gave 6 s slices and tripled a tune's A/Bs."""
    import numpy as np

    if len(points) < 2:
        return False
    t, v = np.array(points, dtype=float).T
    dt, dv = np.diff(t), np.diff(v)
    keep = dt > 0.05  # the window's close repeats its last sample's time
    rates = dv[keep] / dt[keep]
    if rates.size == 0 or (rates <= 0).any():
        return False
    return rates.size == 1 or float(rates.std() / rates.mean()) < STEADY_CV


def with_startup(cell: Cell) -> Cell:
    """`cell` with its automatic warm-up allowed STARTUP_CAP_S (and its deadline moved with it)."""
    cap = max(cell.steady_max, STARTUP_CAP_S)
    timeout = max(cell.timeout, (cell.duration or 0.0) + cap + DEFAULT_DEADLINE_SLACK_S)
    return replace(cell, steady_max=cap, timeout=timeout)


def kept_run(store: RunStore, repeat: int) -> Callable[[Cell], Record]:
    """Run a cell as `repeat` and append its record to the store: how the tune measures."""

    def run(cell: Cell) -> Record:
        record = CellRunner(store).run(cell, repeat)
        store.append(record)
        return record

    return run


def measure_until_counted(
    cell: Cell, run: Callable[[Cell], Record], announce: Callable[[str], None], what: str
) -> tuple[Cell, Record]:
    """`run(cell)`, and once more with up to STARTUP_CAP_S for its start-up when the program
    counted nothing in its window (it had not started: rl_zoo3 prints its first table 20-30 s
    after launch at 8 envs, where a screen's 14 s cells read "no rate" nine times over). The
    cell the record came from is returned: the tune measures later cells with its start-up."""
    record = run(cell)
    if record.ok and not counted(record) and cell.steady_max < STARTUP_CAP_S:
        announce(
            f"  {what} counted nothing in its window ({record.number('wall_s') or 0:.0f} s from its launch): "
            f"measured again with up to {STARTUP_CAP_S:g} s for its start-up"
        )
        cell = with_startup(cell)
        record = run(cell)
    return cell, record


def gather(
    cell: Cell,
    store: RunStore,
    step: int,
    causal: CausalOptions | None,
    cores: int,
    announce: Callable[[str], None],
) -> Evidence:
    """Measure `cell` once (a record in the store), diagnose it, and run the causal
    experiment on it when `causal` is given; what limits it, from all of that."""
    import time

    from harness.ab.slicing import CellFailed
    from harness.causal.experiment import Experiment
    from harness.causal.stopper import StopperDied
    from harness.errors import UserError
    from harness.model.registry import get_suite
    from harness.program import NAME as COMMAND_SUITE
    from harness.runs.files import write_json_atomic

    started = time.monotonic()
    measured, record = measure_until_counted(replace(cell, repeats=1), kept_run(store, step), announce, "the incumbent")
    view = build_view([record], store.meta())
    findings = [f.to_json() for f in diagnose(view)] if counted(record) else []
    document, error = None, None
    if causal is not None and record.ok:
        announce(f"  causal experiment on the incumbent ({causal.budget_s:g} s at most)")
        experiment = Experiment(
            cell, get_suite(cell.suite).words, store.root, causal, None, suite_cell=cell.suite != COMMAND_SUITE,
            announce=lambda line: announce(f"    {line}"),
        )  # fmt: skip
        try:
            document = experiment.run().to_json()
            write_json_atomic(store.root / f"causal-{step}.json", document, "the tune's causal experiment")
        except (CellFailed, StopperDied, UserError) as exc:  # UserError: it refused (its budget, the program's cadence)
            error = str(exc)
    limit = read_limit(document, findings, record.metrics, cores)
    if error:
        limit.notes.append(f"the causal experiment failed: {error}")
    if not record.ok:
        limit.notes.append(f"the incumbent's cell did not finish ok ({record.status}: {record.reason})")
    elif not counted(record):
        limit.notes.append(
            "the incumbent's cell counted no progress in its window: no findings (they would be of its start-up)"
        )
    return Evidence(
        record, findings, document, error, limit, time.monotonic() - started, replace(measured, repeats=cell.repeats)
    )
