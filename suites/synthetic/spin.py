"""CPU spin: fixed-size pure-Python work units in worker processes.

Workers count finished units into a shared array (one slot each, no lock: a single
writer per slot); the main process turns deltas into probe counts, so the probe sees the
rate of the whole pool without any per-unit messaging.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import time
from multiprocessing.sharedctypes import SynchronizedArray
from multiprocessing.synchronize import Event

from harness.probe import Probe, resolve_workers, split_work
from suites.synthetic.faults import inject

POLL_S = 0.02


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def spin_unit(steps: int) -> int:
    x = 0
    for i in range(steps):
        x = (x * 31 + i) & 0xFFFF
    return x


def worker(slot: int, steps: int, quota: int | None, done: SynchronizedArray, stop: Event) -> None:
    finished = 0
    while (quota is None or finished < quota) and not stop.is_set():
        spin_unit(steps)
        finished += 1
        done[slot] = finished


def run_spin(params, probe: Probe) -> None:
    steps = max(1, round(params.unit_size * params.slowdown))
    workers = resolve_workers(params.workers)
    quotas: list[int | None]
    if probe.target_work is not None:
        quotas = list(split_work(probe.target_work, workers))
        probe.work(requested=probe.target_work)
    else:
        quotas = [None] * workers
    ctx = mp.get_context("fork")
    done = ctx.Array("q", len(quotas), lock=False)
    stop = ctx.Event()
    procs = [ctx.Process(target=worker, args=(i, steps, q, done, stop), daemon=True) for i, q in enumerate(quotas)]
    started = time.monotonic()
    seen = 0
    fault = params.fail if params.fail != "none" else None
    try:
        for proc in procs:
            proc.start()
        probe.phase("warmup")  # workers are up: start-up is not part of warm-up or the window
        while True:
            if fault is not None and time.monotonic() - started >= params.fail_after_s:
                inject(fault, procs)
                fault = None  # the faults that return fire once
            total = sum(done)
            if total > seen:
                probe.count("units", total - seen)
                seen = total
            if probe.should_stop() or not any(p.is_alive() for p in procs):
                break
            time.sleep(POLL_S)
        stop.set()
        for proc in procs:
            proc.join()
        total = sum(done)
        probe.count("units", total - seen)
        if probe.target_work is not None:
            probe.work(done=total)
        bad = [describe_exit(p.exitcode) for p in procs if p.exitcode not in (0, None)]
        if bad:
            raise RuntimeError(f"{len(bad)} of {len(procs)} spin workers failed: {', '.join(bad)}")
    finally:
        stop.set()
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
                proc.join(1)
