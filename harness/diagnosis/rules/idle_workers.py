"""IDLE_WORKERS (warning): most worker processes sit near 0 % CPU while the program reports
progress: work is lost in the split (the classic `total // workers` that gives every
worker 0 units once workers > total) or the workers wait on one bottleneck.

Reads `worker_wait_pct` ({pid: % of its sampled time blocked or asleep}, from stacks) and
`worker_cpu_pct` ({pid: % of one core}) of each worker process (harness watch's roles), and
for progress the cell's headline rate (a rate the program logs) or `main_cpu_pct` (the
other processes' CPU). A worker is idle when its stacks wait at least IDLE_WAIT_PCT of the
time, or, where it has no stacks, when it uses less than IDLE_CPU_PCT of a core: stacks
first, because on a crowded machine a busy worker gets little CPU too, but its stack is in
its work. Fires with at least MIN_WORKERS workers, at least IDLE_SHARE of them idle, while
the headline rate is above zero or main_cpu_pct >= BUSY_MAIN_PCT.

Where the busiest other process is a server beside the workers (`waited_on`, harness
watch's roles) using at least BUSY_MAIN_PCT of a core, the finding names it first: workers
blocked on the replies of a busy inference server are a server-bound pipeline, not a bad
split (a watched self-play cell read 8 of 8 workers idle beside a server on 133 % of a core,
and the split remedy alone sent the reader to the wrong process). Where harness watch read
what the workers block on (`waits_on`, harness.watch.waits: the other end of their pipe,
socket or shared semaphore), the finding names that process and drops the alternatives.
"""

from __future__ import annotations

from harness.diagnosis.findings import Finding, fmt
from harness.model.stats import spread_summary
from harness.runs.view import RunView

RULE = "IDLE_WORKERS"
MIN_WORKERS = 2
IDLE_WAIT_PCT = 90.0
IDLE_CPU_PCT = 5.0
IDLE_SHARE = 0.5
BUSY_MAIN_PCT = 50.0
LIST_MAX = 8  # more workers than this: their CPU as count, quantiles and extremes, not pid by pid
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
        waits = cell.first(words.signal("worker_wait_pct"))
        waits = waits if isinstance(waits, dict) else {}
        loads = {pid: float(v) for pid, v in workers.items() if isinstance(v, int | float)}
        idle = [
            pid for pid, cpu in loads.items()
            if (float(waits[pid]) >= IDLE_WAIT_PCT if pid in waits else cpu < IDLE_CPU_PCT)
        ]  # fmt: skip
        if not loads or len(idle) < IDLE_SHARE * len(loads):
            continue
        rate = view.rate([cell])
        rate_value = cell.median(rate) if rate else None
        main = cell.median(words.signal("main_cpu_pct"))
        waited = cell.first(words.signal("waited_on"))
        edge = cell.first(words.signal("waits_on"))
        dormant = cell.first(words.signal("worker_dormant"))
        dormant = [str(p) for p in dormant] if isinstance(dormant, list) else []
        remedy = words.remedy("idle_workers", REMEDY)
        if isinstance(edge, dict) and edge.get("pids") and not edge.get("idle_by_design"):
            # read from /proc: the other end of what they block on, no guess left to hedge
            remedy = (
                f"they wait on {edge.get('text')} (read from /proc): that is the bottleneck; see where its time goes, "
                "give it more compute, or batch more per call"
            )
            waited = edge
        elif isinstance(waited, dict) and waited.get("role") == "server" and (waited.get("cpu_pct") or 0) >= BUSY_MAIN_PCT:
            remedy = (
                f"they wait on the server, pid {waited.get('pid')} on {fmt(waited.get('cpu_pct'))} % of a core: it is the "
                "bottleneck (see where its time goes); give it more compute or batch more per call. Otherwise "
                + remedy
            )
        if rate_value:
            progress = f"while it reports {fmt(rate_value)} {rate}"
        elif main is not None and main >= BUSY_MAIN_PCT:
            progress = f"while its other processes use {fmt(main)} % of a core"
        else:
            continue
        asleep = [p for p in idle if p in dormant]
        if asleep:  # woken less than once a second: evaluators between evaluations, or never given work
            progress += f"; {len(asleep)} of them woke less than once a second (idle by design, or never given work)"
        out.append(
            Finding(
                RULE,
                "warning",
                [cell.id],
                f"{len(idle)} of {len(loads)} workers sit idle (waiting >= {IDLE_WAIT_PCT:g} % of the time, or under "
                f"{IDLE_CPU_PCT:g} % of a core) {progress}: "
                f"{remedy}",
                {
                    name: workers if len(workers) <= LIST_MAX else spread_summary(list(loads.values())),
                    "idle_workers": len(idle),
                    "workers": len(loads),
                    rate or "rate": rate_value,
                    "main_cpu_pct": main,
                    "waited_on": waited,
                },
            )
        )
    return out
