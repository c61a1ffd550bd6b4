"""IDLE_WORKERS (warning): most worker processes sit near 0 % CPU while the program reports
progress: work is lost in the split (the classic `total // workers` that gives every
worker 0 units once workers > total) or the workers wait on one bottleneck.

Reads `worker_wait_pct` ({pid: % of its sampled time blocked or asleep}, from stacks),
`worker_cpu_pct` ({pid: % of one core}) and `worker_runnable_pct` ({pid: % of a core it ran
or sat runnable: what it wanted}) of each worker process (harness watch's roles), and for
progress the cell's headline rate (a rate the program logs) or `main_cpu_pct` (the other
processes' CPU). A worker is idle when its stacks wait at least IDLE_WAIT_PCT of the time,
or, where it has no stacks, when it wants (else uses) less than IDLE_CPU_PCT of a core:
stacks first, because on a crowded machine a busy worker gets little CPU too, but its stack
is in its work. The kernel has the last word: a worker that wanted at least
CONTRADICT_PCT of a core (or used it, where its demand is unknown) is not idle whatever its
stacks say (a C call on a line the classifier takes for a wait, a main thread blocked while
its own threads compute). Fires with at least MIN_WORKERS workers, at least IDLE_SHARE of
them idle, while the headline rate is above zero or main_cpu_pct >= BUSY_MAIN_PCT; the rate
is only a sign of progress, so a doubted one marks the finding (NEEDS) instead of refusing it.

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
from harness.diagnosis.needs import PROGRESS, Needs
from harness.model.stats import spread_summary
from harness.runs.view import RunView

RULE = "IDLE_WORKERS"
NEEDS = Needs(rate=PROGRESS)  # the rate says only that the program progressed
MIN_WORKERS = 2
IDLE_WAIT_PCT = 90.0
IDLE_CPU_PCT = 5.0
# a worker whose stacks wait 90 % of the time cannot want half a core: the kernel contradicts them
CONTRADICT_PCT = 50.0
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
        waits = _numbers(cell.first(words.signal("worker_wait_pct")))
        wanted = _numbers(cell.first(words.signal("worker_runnable_pct")))
        loads = _numbers(workers)
        idle = [pid for pid, cpu in loads.items() if _idle(waits.get(pid), wanted.get(pid, cpu))]
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
            progress, rate = f"while its other processes use {fmt(main)} % of a core", None
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
                    "rate": rate,  # the progress it rests on (None: the other processes' CPU)
                    **({rate: rate_value} if rate else {}),
                    "main_cpu_pct": main,
                    "waited_on": waited,
                },
            )
        )
    return out


def _numbers(value: object) -> dict[str, float]:
    """A {pid: number} signal as floats (anything else: empty)."""
    if not isinstance(value, dict):
        return {}
    return {str(pid): float(v) for pid, v in value.items() if isinstance(v, int | float)}


def _idle(waiting_pct: float | None, wanted_pct: float) -> bool:
    """Idle by its stacks unless the kernel says it wanted CONTRADICT_PCT of a core; without
    stacks, by what it wanted (or used) of a core."""
    if waiting_pct is not None:
        return waiting_pct >= IDLE_WAIT_PCT and wanted_pct < CONTRADICT_PCT
    return wanted_pct < IDLE_CPU_PCT
