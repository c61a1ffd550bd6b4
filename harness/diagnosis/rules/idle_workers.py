"""IDLE_WORKERS (warning): most worker processes sit near 0 % CPU while the program reports
progress: work is lost in the split (the classic `total // workers` that gives every
worker 0 units once workers > total) or the workers wait on one bottleneck.

Each worker process (harness watch's roles) is judged on the best evidence there is for it:

- its stacks (`worker_wait_pct`, % of its sampled time blocked or asleep), where py-spy
  sampled it: idle when they wait at least IDLE_WAIT_PCT of the time;
- else the wait edges read from /proc (`worker_blocked_pct`, % of the sampled instants it
  waited on another process of the program: measured, not guessed): idle at IDLE_WAIT_PCT,
  each worker by its own share where the reader made MIN_WAIT_PASSES passes, else all the
  workers' shares pooled (a share of 3 passes is 0, 33, 67 or 100 %: a healthy pool of 100
  workers each computing a third of the time read 61 of them at 100 %, pooled 71 %);
- else its CPU, read with its wake-ups and the run queue (`worker_cpu_pct` what it got,
  `worker_runnable_pct` what it wanted: ran or sat runnable, `worker_wakeups_hz`): idle when
  it wanted under IDLE_CPU_PCT of a core, or when it used under IDLE_CPU_PCT and spent under
  WAKE_WORK_MS of CPU a wake-up while waking at least WAKING_HZ times a second. A process that
  wakes hundreds of times a second to find its lock taken waits, though each wake-up queues
  for a CPU: 128 pool workers given nothing to do on 2 cores each sat runnable 7-10 % of a
  core while they ran 0.5 % (40 us a wake-up), over the 5 % line by the run queue alone.

The kernel has the last word: a worker that wanted at least CONTRADICT_PCT of a core (or used
it, where its demand is unknown) is not idle whatever its stacks or waits say (a C call on a
line the classifier takes for a wait, a main thread blocked while its own threads compute);
nor is one starved of a CPU (it sat in the run queue STARVED_RATIO times as long as it ran,
and each wake-up brought WAKE_WORK_MS of work or more): it has work, the machine has no core
for it, and the samplers, which wait for a core too, saw it mostly asleep.
Fires with at least MIN_WORKERS workers, at least IDLE_SHARE of them idle, while the headline
rate is above zero or main_cpu_pct >= BUSY_MAIN_PCT; the rate is only a sign of progress, so a
doubted one marks the finding (NEEDS) instead of refusing it. The finding says how many
workers each kind of evidence judged (`idle_by`).

Where the busiest other process is a server beside the workers (`waited_on`, harness
watch's roles) using at least BUSY_MAIN_PCT of a core, the finding names it first: workers
blocked on the replies of a busy inference server are a server-bound pipeline, not a bad
split (a watched self-play cell read 8 of 8 workers idle beside a server on 133 % of a core,
and the split remedy alone sent the reader to the wrong process). Where harness watch read
what the workers block on (`waits_on`, harness.watch.waits: the other end of their pipe,
socket or shared semaphore), the finding names that process and drops the alternatives.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from harness.diagnosis.findings import Finding, fmt
from harness.diagnosis.needs import PROGRESS, Needs
from harness.model.stats import spread_summary
from harness.monitors.blind import STACKS, WAITS, blind
from harness.runs.view import RunView

RULE = "IDLE_WORKERS"
NEEDS = Needs(rate=PROGRESS)  # the rate says only that the program progressed
MIN_WORKERS = 2
IDLE_WAIT_PCT = 90.0
IDLE_CPU_PCT = 5.0
WAKING_HZ = 20.0  # wakes often enough that its CPU per wake-up says what a wake-up does
WAKE_WORK_MS = 0.25  # a wake-up that computes less than this found nothing to do (a Python task
# round trip of a pool's empty job costs about 0.04 ms; one unit of real work, milliseconds)
# a worker whose stacks wait 90 % of the time cannot want half a core: the kernel contradicts them
CONTRADICT_PCT = 50.0
# nor sit in the run queue twice as long as it ran, each wake-up bringing work: a CPU-starved
# worker. Samplers need a CPU too, so on a machine the workers saturate they see them mostly
# when they sleep: 100 pool workers with a game each on 2 cores (1.7 % of a core each, 3.6 ms a
# wake-up, 31 % of a core in the run queue) read 92 % waiting in their stacks, blocked at every
# wait pass
STARVED_RATIO = 2.0
INFINITE_MS = float("inf")  # CPU a wake-up of a worker that never slept
IDLE_SHARE = 0.5
MIN_WAIT_PASSES = 10  # a worker's own share of blocked instants needs this many (else: pooled)
BUSY_MAIN_PCT = 50.0
LIST_MAX = 8  # more workers than this: their CPU as count, quantiles and extremes, not pid by pid
# the process that hands out the work is also the one that splits it
SPLIT_TOO = "; if it hands each worker too little (total // workers is 0 once workers > total), split the work so each gets some"
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
        evidence = Evidence.of(cell, workers)
        loads = evidence.used
        judged = {pid: evidence.judge(pid) for pid in loads}
        idle = [pid for pid, (is_idle, _) in judged.items() if is_idle]
        if not loads or len(idle) < IDLE_SHARE * len(loads):
            continue
        idle_by = {source: sum(1 for pid in idle if judged[pid][1] == source) for source in SOURCES}
        idle_by = {source: n for source, n in idle_by.items() if n}
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
                + (SPLIT_TOO if edge.get("role") == "main" else "")
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
                f"{IDLE_CPU_PCT:g} % of a core; by {_said(idle_by)}) {progress}: "
                f"{remedy}",
                {
                    name: workers if len(workers) <= LIST_MAX else spread_summary(list(loads.values())),
                    "idle_workers": len(idle),
                    "idle_by": idle_by,
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


SOURCES = ("stacks", "waits", "cpu")
SOURCE_WORDS = {"stacks": "their stacks", "waits": "/proc wait edges", "cpu": "CPU, wake-ups and run queue"}


def _said(idle_by: dict[str, int]) -> str:
    """'their stacks for 18, /proc wait edges for 90': which evidence judged how many."""
    return ", ".join(f"{SOURCE_WORDS[source]} for {n}" for source, n in idle_by.items())


@dataclass(frozen=True)
class Evidence:
    """What a watch read of each worker ({pid: value} per signal; a pid missing from one
    signal was not read by that instrument)."""

    stacks: dict[str, float]  # % of its sampled time blocked or asleep
    blocked: dict[str, float]  # % of the sampled instants it waited on another process (/proc)
    used: dict[str, float]  # % of a core it ran
    wanted: dict[str, float]  # % of a core it ran or sat runnable
    wakeups: dict[str, float]  # wake-ups a second
    wait_passes: int = 0  # passes of the wait reader: the instants each worker's edges rest on

    @classmethod
    def of(cls, cell, workers: object) -> Evidence:
        """A cell's evidence; an instrument that saw nothing (harness.monitors.blind) gives none."""
        words = cell.vocabulary
        deaf = {name for rec in cell.ok for name in blind(rec.metrics)}
        passes = cell.first("waits_passes")
        return cls(
            stacks={} if STACKS in deaf else _numbers(cell.first(words.signal("worker_wait_pct"))),
            blocked={} if WAITS in deaf else _numbers(cell.first(words.signal("worker_blocked_pct"))),
            used=_numbers(workers),
            wanted=_numbers(cell.first(words.signal("worker_runnable_pct"))),
            wakeups=_numbers(cell.first(words.signal("worker_wakeups_hz"))),
            wait_passes=int(passes) if isinstance(passes, int | float) else 0,
        )

    @cached_property
    def blocked_together(self) -> bool:
        """Where too few passes give each worker its own share (the reader stretches its period
        to stay cheap: 3 passes in 12 s over 128 processes), the workers' shares pooled: most
        workers blocked on another process most of the time, read over workers x passes."""
        if not self.blocked or self.wait_passes >= MIN_WAIT_PASSES:
            return False
        return float(np.mean([self.blocked.get(pid, 0.0) for pid in self.used])) >= IDLE_WAIT_PCT

    def judge(self, pid: str) -> tuple[bool, str]:
        """(idle?, the evidence that decided): stacks, else /proc wait edges, else CPU; the
        kernel's demand contradicts any of them."""
        used = self.used.get(pid, 0.0)
        demand = self.wanted.get(pid, used)
        wakes = self.wakeups.get(pid)
        ms_per_wake = None if wakes is None else (INFINITE_MS if wakes <= 0 else 1000.0 * (used / 100.0) / wakes)
        starved = ms_per_wake is not None and ms_per_wake >= WAKE_WORK_MS and demand - used >= STARVED_RATIO * used > 0
        if demand >= CONTRADICT_PCT or starved:  # the kernel's word: it had work, and wanted a CPU for it
            return False, "cpu"
        if pid in self.stacks:
            return self.stacks[pid] >= IDLE_WAIT_PCT, "stacks"
        own_edges = self.wait_passes >= MIN_WAIT_PASSES and self.blocked.get(pid, 0.0) >= IDLE_WAIT_PCT
        if own_edges or self.blocked_together:
            return True, "waits"
        if demand < IDLE_CPU_PCT:
            return True, "cpu"
        if used < IDLE_CPU_PCT and wakes is not None and wakes >= WAKING_HZ and ms_per_wake is not None:
            return ms_per_wake < WAKE_WORK_MS, "cpu"
        return False, "cpu"
