"""DRIFT (warning): a rate that falls steadily over the measured window.

Reads `<rate>_drift_pct_per_min` and `<rate>_drift_se` (the probe's least-squares slope of
the 1 s rates, with a standard error that also comes from 10 s block means, so a machine
that wanders is not taken for a drift). Fires when the median slope is below
SLOPE_PCT_PER_MIN and most repeats are more than SIGMAS standard errors from zero (Student's
t at 95 % when the error rests on a few blocks, `<rate>_drift_dof`: a 40 s watch of a
Lightning DDP rank, flat in phases of the host, fell -19.2 %/min at 2.1 standard errors of 2
degrees of freedom, where t is 4.3; two more watches of it read -31.6 and +52.9), over a
window of at least MIN_MEASURE_S whose fitted rates themselves span that long
(`<rate>_drift_span_s`): a program that prints its first rate after seconds of start-up
(importing torch) leaves a short stretch of points, and on a shared machine one slow
phase of the host or a neighbour starting its work in that stretch reads as a steep fall
(a 10 s watch of a batched torch loop fitted 7 s of points at -311 %/min, 3 standard
errors, while the program beside it started computing). Duration-mode cells only: a
fixed-work run ends with its slowest workers finishing alone, a ramp-down by construction.

A fall while the rest of the machine took more of it (`cpu_others_rise_pct`, harness.monitors.
others: at least OTHERS_RISE_PCT of a core more at the end than at the start, SIGMAS standard
errors from zero) is reported as info, naming the neighbour's rise: the fall may be theirs,
and only a re-run on a quiet machine tells (15 s watches of a batched torch loop beside a
16-thread program fell -478 and -299 %/min, nothing of its own growing, while the rest of
the machine rose by 46 and 37 % of a core).
"""

from __future__ import annotations

import statistics

from harness.diagnosis.findings import Finding, fmt
from harness.diagnosis.needs import COMPARED, Needs
from harness.model.stats import t_quantile
from harness.runs.record import CellGroup
from harness.runs.view import RunView

RULE = "DRIFT"
NEEDS = Needs(rate=COMPARED)
SLOPE_PCT_PER_MIN = -2.0  # a slope below this ...
SIGMAS = 2.0  # ... and this many standard errors from zero (Student's t where the error has few dof)
T_EXACT_BELOW_DOF = 60  # t(60) at 95 % is 2.0: SIGMAS from there on
# ... over a window long enough to fit: 1 s rate points, and a slope's standard error from
# 3-4 points (1-2 degrees of freedom) calls noise significant far too often
MIN_MEASURE_S = 10.0
SUFFIX = "_drift_pct_per_min"
OTHERS_RISE_PCT = 25.0  # % of one core more used by the rest of the machine by the window's end


def check(view: RunView) -> list[Finding]:
    out = []
    for cell in view.cells:
        measure_s = cell.median("measure_s")
        if cell.fixed_work or (measure_s is not None and measure_s < MIN_MEASURE_S):
            continue
        drifting = {}
        for name in sorted(n for n in cell.metric_names() if n.endswith(SUFFIX)):
            rate = name[: -len(SUFFIX)]
            fits = []
            for rec in cell.ok:
                slope, se = rec.number(name), rec.number(f"{rate}_drift_se")
                span = rec.number(f"{rate}_drift_span_s")
                if span is not None and span < MIN_MEASURE_S:
                    continue  # too short a stretch of rates to tell a trend from a slow phase
                if slope is not None:
                    fits.append((slope, se, rec.number(f"{rate}_drift_dof")))
            if not fits:
                continue
            significant = [_significant_fall(s, se, dof) for s, se, dof in fits]
            slope = statistics.median(s for s, _, _ in fits)
            ses = [se for _, se, _ in fits if se is not None]
            if slope < SLOPE_PCT_PER_MIN and 2 * sum(significant) >= len(fits) and sum(significant):
                drifting[rate] = {
                    "slope_pct_per_min": slope,
                    "se": statistics.median(ses) if ses else None,
                    "repeats_significant": sum(significant),
                    "repeats": len(fits),
                }
        if not drifting:
            continue
        # name the suite's headline rate when it drifts, else the rate that falls fastest
        headline = view.rate([cell])
        primary = (
            headline.removesuffix("_per_min") + "_per_s" if headline and headline.endswith("_per_min") else headline
        )
        worst = primary if primary in drifting else min(drifting, key=lambda r: drifting[r]["slope_pct_per_min"])
        w = drifting[worst]
        se = f" ± {fmt(w['se'])}" if w["se"] is not None else ""
        falls = f"{worst} falls {fmt(w['slope_pct_per_min'])} %/min{se} over the measured window"
        others = _others_rise(cell)
        evidence = {"rate": worst, "rates": drifting, "measure_s": measure_s, "cpu_others_rise_pct": others}
        if others is not None:
            out.append(
                Finding(
                    RULE,
                    "info",
                    [cell.id],
                    f"{falls}, while the rest of the machine used {fmt(others)} % of a core more by the end than at "
                    "the start: the fall may be theirs, not the program's; re-run with the machine quiet to tell",
                    evidence,
                )
            )
            continue
        out.append(
            Finding(
                RULE,
                "warning",
                [cell.id],
                f"{falls}: something grows with time (state sent whole each batch, a growing buffer or table); "
                "send deltas or bound what each message carries, and check the series CSV for where it starts",
                evidence,
            )
        )
    return out


def _others_rise(cell: CellGroup) -> float | None:
    """The median rise of the rest of the machine's CPU use over the cell's repeats, when it
    rose by OTHERS_RISE_PCT of a core or more, beyond noise; else None."""
    rises = []
    for rec in cell.ok:
        value, se = rec.number("cpu_others_rise_pct"), rec.number("cpu_others_rise_se")
        if value is not None:
            rises.append(value if se is not None and value > SIGMAS * se else 0.0)
    if not rises:
        return None
    rise = statistics.median(rises)
    return rise if rise >= OTHERS_RISE_PCT else None


def _significant_fall(slope: float, se: float | None, dof: float | None) -> bool:
    """Below SLOPE_PCT_PER_MIN and more than SIGMAS standard errors from zero, or Student's t
    at 95 % where the error rests on a few blocks (4 blocks of 10 s: 2 degrees of freedom,
    4.3). t is only asked for (scipy, in the harness's process) when SIGMAS alone would pass."""
    if slope >= SLOPE_PCT_PER_MIN or se is None or abs(slope) <= SIGMAS * se:
        return False
    return dof is None or dof >= T_EXACT_BELOW_DOF or abs(slope) > t_quantile(max(1, int(dof))) * se
