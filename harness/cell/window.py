"""A measured window's rates: every counter's, the declared rates' with their validity,
long units counted fairly, and drift.

A unit that takes seconds (a game, an episode) is badly counted by completions in a short
window: at 128 workers every game starts in the same second and few end inside 5 s, so
games/s reads low for reasons of the window, not of the system. When the suite's Rate says
what a unit is made of (`made_of`, e.g. moves) and counts the finer units of each completed
unit (`Rate.completed_fine`), the unit rate is the finer rate over the mean unit length
(renewal: in steady state units complete as fast as their parts are made, divided by the
parts per unit). The mean length is trusted only when every worker finished several units in
the run: a worker that finished one or two had its long units still running, so the lengths
it finished are the short ones (simulated, gamma-shaped game lengths: the mean of completed
games reads 0.72x the true mean at one game per worker, 0.91x at two, 0.97x at five; the
headline sweep's 128-worker cells read 15.4 moves a game against 18.7 at 4 workers, which
made games/s look 20 % better than moves/s said). Below that the plain count stands. A declared rate with fewer than MIN_UNITS_PER_WORKER completions per
worker in the window and no such estimate is marked invalid (`<rate>_valid` = 0) with a
warning, and the diagnosis rules do not use it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from harness.model.vocabulary import Rate

MIN_UNITS_FOR_LENGTH = 10  # completed units in the whole run before their mean length is trusted
MIN_UNITS_PER_WORKER_FOR_LENGTH = 5.0  # ... and per worker: fewer finished is a sample of the short ones
MIN_UNITS_PER_WORKER = 1.0  # completions per worker in the window for a count to mean anything
MIN_DRIFT_SAMPLES = 10  # a slope fitted to fewer 1 s rates is noise, not drift


def counter_rates(
    totals: dict[str, float], start: dict[str, float], end: dict[str, float], window_s: float
) -> dict[str, float]:
    """Every counter's total and its rate over the window."""
    out: dict[str, float] = {}
    for name, total in sorted(totals.items()):
        out[name] = total
        measured = end.get(name, total) - start.get(name, 0)
        out[f"{name}_per_s"] = measured / window_s if window_s > 0 else math.nan
    return out


def declared_rates(
    rates: Sequence[Rate],
    totals: dict[str, float],
    start: dict[str, float],
    end: dict[str, float],
    window_s: float,
    workers: int | None,
    metrics: dict[str, Any],
) -> list[str]:
    """Adds each declared rate's window count, estimate and validity to `metrics` (which
    holds counter_rates' output); returns warnings."""
    warnings = []
    for rate in rates:
        if rate.counter not in totals:
            continue
        in_window = end.get(rate.counter, totals[rate.counter]) - start.get(rate.counter, 0)
        metrics[f"{rate.counter}_in_window"] = in_window
        counted = metrics[rate.per_s]
        estimated = _estimate(rate, totals, metrics, workers)
        if estimated is not None:
            metrics[f"{rate.counter}_per_s_counted"] = counted
            metrics[rate.per_s] = estimated
        per_worker = in_window / workers if workers else in_window
        valid = estimated is not None or per_worker >= MIN_UNITS_PER_WORKER
        metrics[f"{rate.per_s}_valid"] = int(valid)
        if not valid:
            how = (
                f" (and under {MIN_UNITS_FOR_LENGTH:g} completed in the run, or {MIN_UNITS_PER_WORKER_FOR_LENGTH:g} per"
                f" worker, to estimate it from {rate.made_of})"
            )
            warnings.append(
                f"{rate.per_s} rests on {in_window:g} {rate.counter} completed in the {window_s:.1f} s window"
                f" over {workers or 1} workers ({per_worker:.2g} per worker){how if rate.made_of else ''}: too few"
                " to mean anything, so diagnoses do not use it; measure longer"
            )
    for rate in rates:
        if rate.per == "min" and rate.per_s in metrics:
            metrics[rate.metric] = metrics[rate.per_s] * 60.0
    return warnings


def _estimate(rate: Rate, totals: dict[str, float], metrics: dict[str, Any], workers: int | None) -> float | None:
    """The finer rate over the mean length of completed units, when enough completed (in all
    and per worker) for that mean not to be a sample of the short ones."""
    if rate.made_of is None or rate.completed_fine not in totals or f"{rate.made_of}_per_s" not in metrics:
        return None
    units, parts = totals[rate.counter], totals[rate.completed_fine]  # type: ignore[index]
    if units < MIN_UNITS_FOR_LENGTH or parts <= 0:
        return None
    length = parts / units
    metrics[f"{rate.counter}_length_mean"] = length
    if units / (workers or 1) < MIN_UNITS_PER_WORKER_FOR_LENGTH:
        return None
    return metrics[f"{rate.made_of}_per_s"] / length


def drift_metrics(samples: Sequence[tuple[float, dict[str, float]]], counters: Sequence[str]) -> dict[str, float]:
    """Least-squares slope of each counter's 1 s rate over the window's samples, in % of
    the mean rate per minute: a throughput that decays as state grows shows up here; with
    the time the fitted rates span, which the DRIFT rule asks to be long enough."""
    from harness.model.stats import drift_pct_per_min

    out: dict[str, float] = {}
    if len(samples) < MIN_DRIFT_SAMPLES:
        return out
    for name in counters:
        times, rates = [], []
        for (t_a, c_a), (t_b, c_b) in zip(samples, samples[1:], strict=False):
            if t_b - t_a <= 0:
                continue
            times.append((t_a + t_b) / 2)
            rates.append((c_b.get(name, 0) - c_a.get(name, 0)) / (t_b - t_a))
        drift = drift_pct_per_min(times, rates)
        if drift is not None:
            out[f"{name}_per_s_drift_pct_per_min"] = drift.slope_pct_per_min
            out[f"{name}_per_s_drift_se"] = drift.se
            out[f"{name}_per_s_drift_dof"] = drift.dof
            out[f"{name}_per_s_drift_span_s"] = samples[-1][0] - samples[0][0]  # the time the rates cover
    return out
