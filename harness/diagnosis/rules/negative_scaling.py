"""NEGATIVE_SCALING (warning): more workers, less throughput.

Over cells that differ only in their worker count: the rate valid at every worker count (the
headline, or a finer one where the headline's window held too few units) at more workers
below the best rate at fewer workers, beyond noise, and staying below at every larger worker
count measured (a dip at 8 workers that 32 and 128 climb out of is not contention). With at
least two repeats a side the bootstrap interval of the ratio of medians must lie wholly below
1 - TOLERANCE; with one repeat the point ratio must lie below 1 - MARGIN (a shared machine is
noisy). A program that runs as a torch.distributed job prints one rank's rate: the hint says
so, with the job's totals (the rate times its ranks) beside the rates compared. The hint
quotes the group's USL fit (harness.analysis.scaling): kappa and the peak, or why the
model says nothing (it does not fit, or the rate failed its checks).
"""

from __future__ import annotations

from harness.analysis import scaling
from harness.diagnosis.findings import Finding, fmt
from harness.diagnosis.needs import COMPARED, Needs
from harness.model.stats import ratio_of_medians, verdict
from harness.runs.provenance import world_size
from harness.runs.record import CellGroup
from harness.runs.view import RunView

RULE = "NEGATIVE_SCALING"
NEEDS = Needs(rate=COMPARED, free_cores=True)  # worker counts compared: the cores must be the program's
TOLERANCE = 0.05  # with repeats: the interval's upper end must lie below 1 - this
MARGIN = 0.15  # single repeats: the ratio must lie below 1 - this
REMEDY = "more workers only add contention (the GIL for threads, IPC, cores)"


def check(view: RunView) -> list[Finding]:
    out = []
    for members in view.scaling_groups():
        rate = view.rate([c for _, c in members])
        if rate is None:
            continue
        drops = []
        for j, (workers, cell) in enumerate(members):
            earlier = [(w, c) for w, c in members[:j] if w < workers and c.median(rate)]
            value = cell.median(rate)
            if not earlier or value is None:
                continue
            best_w, best = max(earlier, key=lambda m: m[1].median(rate) or 0.0)
            base_values, values = best.values(rate), cell.values(rate)
            interval = ratio_of_medians(base_values, values)
            if interval is None:
                continue
            if len(base_values) >= 2 and len(values) >= 2:
                lower = verdict(interval, higher_is_better=True, tolerance=TOLERANCE) == "worse"
            else:
                lower = interval["ratio"] < 1 - MARGIN
            if lower:
                drops.append((best_w, best, workers, cell, interval))
        # a dip that more workers climb out of again is noise or a transient, not contention:
        # a drop counts only if every larger worker count also stays below its best
        dropped = {id(d[3]) for d in drops}
        drops = [d for d in drops if all(id(c) in dropped for w, c in members if w > d[2] and c.median(rate))]
        if not drops:
            continue
        best_w, best, workers, cell, interval = min(drops, key=lambda d: d[4]["ratio"])
        words = members[0][1].vocabulary
        backend = members[0][1].params.get(words.backend) if words.backend else None
        via = f" with {words.backend}={backend}" if backend is not None else ""
        group = scaling.of_cells(view, [c.id for _, c in members])
        fitted = scaling.quote(group) if group is not None else ""
        out.append(
            Finding(
                RULE,
                "warning",
                sorted({d[1].id for d in drops} | {d[3].id for d in drops}),
                f"{rate} falls from {fmt(best.median(rate))} at {best_w} workers to {fmt(cell.median(rate))} at "
                f"{workers}{via} ({interval['ratio']:.2f}x): {words.remedy('negative_scaling', REMEDY)}; "
                f"run {best_w} workers, or a backend that shares less" + fitted + _per_rank(rate, best, cell),
                {
                    "rate": rate,
                    **({"usl": scaling.summary(group)} if group is not None and fitted else {}),
                    "medians": {str(w): c.median(rate) for w, c in members},
                    "drops": [
                        {
                            "metric": rate,
                            "before": d[1].median(rate),
                            "before_at": d[0],
                            "after": d[3].median(rate),
                            "after_at": d[2],
                            "at": words.workers,
                            **{k: d[4][k] for k in ("ratio", "low", "high")},
                        }
                        for d in drops
                    ],
                },
            )
        )
    return out


def _per_rank(rate: str, before: CellGroup, after: CellGroup) -> str:
    """The doubt a torch.distributed job's rates carry: one rank's, and the job's totals."""
    ranks = [world_size(c.records) or 1 for c in (before, after)]
    if ranks == [1, 1]:
        return ""
    totals = [(c.median(rate) or 0.0) * n for c, n in zip((before, after), ranks, strict=True)]
    ratio = f" ({totals[1] / totals[0]:.2f}x)" if totals[0] else ""
    return (
        f". The rates are likely one rank's of a torch.distributed job ({ranks[0]} and {ranks[1]} ranks): "
        f"the job's totals would be about {fmt(totals[0])} and {fmt(totals[1])}{ratio}"
    )
