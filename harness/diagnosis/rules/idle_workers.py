"""IDLE_WORKERS (warning): most worker processes sit near 0 % CPU while the program reports
progress: work is lost in the split (the classic `total // workers` that gives every
worker 0 units once workers > total) or the workers wait on one bottleneck.

Reads `worker_cpu_pct` ({pid: % of one core} of each worker process, from harness watch's
roles) and, for progress, the cell's headline rate (a rate the program logs) or
`main_cpu_pct` (the other processes' CPU). Fires with at least MIN_WORKERS workers, of
which at least IDLE_SHARE use less than IDLE_CPU_PCT of a core, while the headline rate is
above zero or main_cpu_pct >= BUSY_MAIN_PCT.
"""

from __future__ import annotations

from harness.diagnosis.findings import Finding, fmt
from harness.diagnosis.view import RunView

RULE = "IDLE_WORKERS"
MIN_WORKERS = 2
IDLE_CPU_PCT = 5.0
IDLE_SHARE = 0.5
BUSY_MAIN_PCT = 50.0
REMEDY = (
    "check how work is split: total // workers is 0 per worker once workers > total; split_work(total, workers) "
    "gives the first total % workers one unit more and starts no worker with nothing to do. If the workers "
    "wait on the main process instead, that process is the bottleneck"
)


def check(view: RunView) -> list[Finding]:
    out = []
    for cell in view.cells:
        words = cell.vocabulary
        name = words.signal("worker_cpu_pct")
        workers = cell.first(name)
        if not isinstance(workers, dict) or len(workers) < MIN_WORKERS:
            continue
        loads = [float(v) for v in workers.values() if isinstance(v, int | float)]
        idle = [v for v in loads if v < IDLE_CPU_PCT]
        if not loads or len(idle) < IDLE_SHARE * len(loads):
            continue
        rate = view.rate([cell])
        rate_value = cell.median(rate) if rate else None
        main = cell.median(words.signal("main_cpu_pct"))
        if rate_value:
            progress = f"while it reports {fmt(rate_value)} {rate}"
        elif main is not None and main >= BUSY_MAIN_PCT:
            progress = f"while its other processes use {fmt(main)} % of a core"
        else:
            continue
        out.append(
            Finding(
                RULE,
                "warning",
                [cell.id],
                f"{len(idle)} of {len(loads)} workers use less than {IDLE_CPU_PCT:g} % of a core {progress}: "
                f"{words.remedy('idle_workers', REMEDY)}",
                {
                    name: workers,
                    "idle_workers": len(idle),
                    "workers": len(loads),
                    rate or "rate": rate_value,
                    "main_cpu_pct": main,
                },
            )
        )
    return out
