"""GIL_BOUND (warning): threads of one process queue for the GIL instead of running.

Reads the signals harness watch derives from stacks and the kernel's per-thread counters:
`gil_wait_share` (share of the time that process's threads wanted a CPU spent waiting for
the GIL), `gil_threads` (how many of its threads wanted a CPU, on average) and
`gil_cpu_cores` (its CPU use). Fires when gil_wait_share >= WAIT_SHARE with gil_threads >=
MIN_THREADS and the process capped near one core (gil_cpu_cores <= CAP_CORES): more
threads, no more CPU. Python threads help with waiting, not with computing.

Waiting for the GIL is not yet being limited by it: a thread that runs a few microseconds per
wake-up (a multiprocessing.Queue's feeder beside a spinning main thread) waits a switch
interval each time, and a process of one busy thread and such helpers read 1.6 threads and 39 %
GIL waits (the healthy control of tests/harness/test_watch.py, once in a full run). So the
compute must be spread: `gil_compute_spread` (the threads' compute over the busiest one's, the
cores it could fill in parallel) at least MIN_SPREAD. Records made before that signal existed
are read as before.
"""

from __future__ import annotations

from harness.diagnosis.findings import Finding, fmt
from harness.diagnosis.needs import STACKS, Needs
from harness.runs.view import RunView

RULE = "GIL_BOUND"
NEEDS = Needs(instruments=(STACKS,))
WAIT_SHARE = 0.3
MIN_THREADS = 1.5
CAP_CORES = 1.3
MIN_SPREAD = 1.3  # below it, running the threads in parallel gains under 30 %: one thread does the work
REMEDY = (
    "move the CPU-bound work to processes (a multiprocessing pool, one worker per core), or batch it into "
    "calls that release the GIL (numpy, torch: one batched call instead of many small ones)"
)


def check(view: RunView) -> list[Finding]:
    out = []
    for cell in view.cells:
        words = cell.vocabulary
        found = cell.signals("gil_wait_share", "gil_threads", "gil_cpu_cores", "gil_compute_spread")
        share, threads, cores, spread = found.values()
        if share is None or threads is None or share < WAIT_SHARE or threads < MIN_THREADS:
            continue
        if spread is not None and spread < MIN_SPREAD:
            continue
        if cores is not None and cores > CAP_CORES:
            continue
        where = cell.first("gil_process") or "a process"
        cpu = f" on {fmt(cores)} cores of CPU" if cores is not None else ""
        fill = f" (their compute would fill {fmt(spread)} cores run in parallel)" if spread is not None else ""
        out.append(
            Finding(
                RULE,
                "warning",
                [cell.id],
                f"{where}: {fmt(threads)} threads want to run{cpu}, and {100 * share:.0f} % of their time goes to "
                f"waiting for the GIL{fill}: {words.remedy('gil_bound', REMEDY)}",
                {n: v for n, v in found.items() if v is not None},
            )
        )
    return out
