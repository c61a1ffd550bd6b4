"""Where the processes backend loses against sequential on Leduc (docs/records/2026-11-22-mccfr.md,
"Re-measured idle"): the kernel's time per 10,000 iterations in-process against inside a
pool worker, and the pool's throughput with and without workers pinned to cores.

    python benchmarks/mccfr_pool_profile.py
"""

from __future__ import annotations

import os
import time

import numpy as np

from suites.mccfr.backends.processes import ProcessesBackend
from suites.mccfr.games import flatten, leduc
from suites.mccfr.worker import WorkerState, new_tables, warm_kernels

ITERATIONS = 10_000
BATCHES = 40


def in_process_ms(game) -> float:
    state = WorkerState(game, "delta", *new_tables(game.num_infosets))
    times = [state.run(ITERATIONS, (0, i, 0)).compute_s for i in range(BATCHES)]
    return 1000 * float(np.median(times[5:]))


def pool(game, pin: bool) -> tuple[float, float]:
    backend = ProcessesBackend(game, 2, "delta", 0, "auto")
    backend.start()
    if pin:
        for core, proc in enumerate(backend.procs):
            os.sched_setaffinity(proc.pid, {core % os.cpu_count()})
    computes: list[float] = []
    started = time.perf_counter()
    try:
        for batch in range(BATCHES):
            backend.submit([ITERATIONS, ITERATIONS], batch)
            result = backend.collect()
            computes.append(result.busy_s)
    finally:
        backend.close()
    rate = BATCHES * 2 * ITERATIONS / (time.perf_counter() - started)
    return rate, 1000 * float(np.median(computes[5:])) / 2


def main() -> None:
    game = flatten(leduc())
    warm_kernels(game)
    print(f"kernel in-process: {in_process_ms(game):.2f} ms per {ITERATIONS} iterations")
    for pin in (False, True):
        rate, per_worker = pool(game, pin)
        print(
            f"pool of 2 (pinned={pin}, a barrier per batch): {rate:,.0f} it/s; worker kernel {per_worker:.2f} ms per {ITERATIONS}"
        )


if __name__ == "__main__":
    main()
