"""GIL_BOUND (warning): threads of one process queue for the GIL instead of running.

Reads the signals harness watch derives from stacks and the kernel's per-thread counters:
`gil_wait_share` (share of the time that process's threads wanted a CPU spent waiting for
the GIL), `gil_threads` (how many of its threads wanted a CPU, on average) and
`gil_cpu_cores` (its CPU use). Fires when gil_wait_share >= WAIT_SHARE with gil_threads >=
MIN_THREADS and the process capped near one core (gil_cpu_cores <= CAP_CORES): more
threads, no more CPU. Python threads help with waiting, not with computing.
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
REMEDY = (
    "move the CPU-bound work to processes (a multiprocessing pool, one worker per core), or batch it into "
    "calls that release the GIL (numpy, torch: one batched call instead of many small ones)"
)


def check(view: RunView) -> list[Finding]:
    out = []
    for cell in view.cells:
        words = cell.vocabulary
        found = cell.signals("gil_wait_share", "gil_threads", "gil_cpu_cores")
        share, threads, cores = found.values()
        if share is None or threads is None or share < WAIT_SHARE or threads < MIN_THREADS:
            continue
        if cores is not None and cores > CAP_CORES:
            continue
        where = cell.first("gil_process") or "a process"
        cpu = f" on {fmt(cores)} cores of CPU" if cores is not None else ""
        out.append(
            Finding(
                RULE,
                "warning",
                [cell.id],
                f"{where}: {fmt(threads)} threads want to run{cpu}, and {100 * share:.0f} % of their time goes to "
                f"waiting for the GIL: {words.remedy('gil_bound', REMEDY)}",
                {n: v for n, v in found.items() if v is not None},
            )
        )
    return out
