"""The suite's run loop: build the game, start a backend, run batches, report.

Duration mode runs batches of `batch_size` iterations until the probe says stop; work
mode runs exactly `probe.target_work` iterations (the last batch is the remainder). Each
batch is split over the workers by the harness's no-loss `split_work`. `staleness + 1`
batches are kept in flight, and the ones still running when the probe says stop are
collected and counted (they were asked for). Exploitability is computed after the measured
window has closed (duration mode), so it costs no rate. The backend comes from `BACKENDS`
(backends/base.py says what one does); `run_mccfr` returns the tables it ended with.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from harness.probe import Probe, SuiteError, resolve_workers, split_work

if TYPE_CHECKING:
    from suites.mccfr.games import FlatGame


class Solution(NamedTuple):
    """What a run ends with: the game and copies of the global tables after the last merge."""

    game: FlatGame
    regret: np.ndarray
    avg: np.ndarray


def game_spec(params: Any) -> Any:
    from suites.mccfr.games import kuhn, leduc, leduc_variant

    if params.game == "kuhn":
        return kuhn()
    if params.game == "leduc":
        return leduc()
    return leduc_variant(params.ranks, params.suits, params.raises)


def pool_size(batch_size: int, workers: int) -> int:
    """Workers worth starting: those with a share of a full batch."""
    return len(split_work(batch_size, workers))


def plan(target: int, batch_size: int, workers: int) -> Iterator[list[int]]:
    """Per-worker shares of each batch of a fixed-work run of `target` iterations."""
    remaining = target
    while remaining > 0:
        size = min(batch_size, remaining)
        yield split_work(size, workers)
        remaining -= size


def run_mccfr(params: Any, probe: Probe) -> Solution:
    from suites.mccfr.backends import BACKENDS
    from suites.mccfr.backends.base import BatchResult
    from suites.mccfr.exploitability import exploitability as exploitability_of
    from suites.mccfr.exploitability import nash_conv
    from suites.mccfr.games import flatten

    spec = game_spec(params)
    try:
        game = flatten(spec)
    except ValueError as exc:
        raise SuiteError(f"game={params.game}: {exc}; raise ranks or suits") from None
    backend_class = BACKENDS.get(params.backend)
    if backend_class.single_worker:
        workers = 1
        if params.workers not in (0, 1):
            probe.warn(f"backend={params.backend} runs one worker; workers={params.workers} is ignored")
    else:
        workers = resolve_workers(params.workers)
    pool = pool_size(params.batch_size, workers)
    if params.batch_size < workers:
        probe.warn(
            f"batch_size={params.batch_size} < workers={workers}: {workers - pool} workers stay idle "
            f"(not started); use batch_size >= {workers} to keep every worker busy"
        )
    probe.log(
        f"mccfr: {spec.name}, {game.num_infosets} information sets, {game.num_nodes} betting nodes, "
        f"backend={params.backend} workers={pool} sync={params.sync} batch_size={params.batch_size} "
        f"staleness={params.staleness}"
    )
    backend = backend_class(game, pool, params.sync, params.seed, params.start_method)
    syncs = not backend_class.single_worker
    depth = params.staleness + 1 if syncs else 1
    busy_s = 0.0
    done_total = 0
    next_checkpoint = params.exploitability_every or None

    def account(result: BatchResult) -> None:
        nonlocal busy_s, done_total, next_checkpoint
        probe.work(requested=result.requested, done=result.done)
        probe.count("iterations", result.done)
        probe.count("nodes", result.nodes)
        probe.count("infosets_touched", result.touched)
        if syncs:
            probe.observe("sync_bytes", result.sync_bytes)
            probe.observe("merge_ms", 1000.0 * result.merge_s)
        busy_s += result.busy_s
        done_total += result.done
        if next_checkpoint is not None and done_total >= next_checkpoint:
            probe.set("exploitability", exploitability_of(game, backend.avg))
            while next_checkpoint <= done_total:
                next_checkpoint += params.exploitability_every

    try:
        backend.start()
        if backend.torch_in_workers:
            probe.warn(f"{backend.torch_in_workers} mccfr worker processes have torch loaded")
        probe.phase("warmup")
        if probe.target_work is not None:
            batches: Iterator[list[int]] = plan(int(probe.target_work), params.batch_size, pool)
        else:
            batches = _forever(split_work(params.batch_size, pool), probe)
        in_flight = 0
        pool_started = time.perf_counter()
        for batch, shares in enumerate(batches):
            if probe.target_work is not None:
                probe.should_stop()  # never True in work mode; it moves warm-up to measure
            if probe.quality_due():
                # merge what is in flight first: the check judges every batch asked for so far,
                # and no worker computes during the evaluation the probe leaves out of the window
                for _ in range(in_flight):
                    account(backend.collect())
                in_flight = 0
                with probe.evaluating():
                    conv = nash_conv(game, np.array(backend.avg, copy=True))
                probe.quality("nash_conv", conv)
                probe.quality("exploitability", conv / 2.0)
                if probe.should_stop():
                    break
            if in_flight == depth:
                account(backend.collect())
                in_flight -= 1
            backend.submit(shares, batch)
            in_flight += 1
        for _ in range(in_flight):  # the batches still running count: they were asked for
            account(backend.collect())
        pool_s = time.perf_counter() - pool_started
        probe.stop()  # the window closes before the final evaluation, in both modes
        regret = np.array(backend.regret, copy=True)
        avg = np.array(backend.avg, copy=True)
    finally:
        backend.close()
    started = time.perf_counter()
    conv = nash_conv(game, avg)
    probe.set("nash_conv", conv)
    probe.set("exploitability", conv / 2.0)
    probe.set("exploitability_s", time.perf_counter() - started)
    probe.set("infosets", game.num_infosets)
    probe.set("infosets_seen", int(np.count_nonzero(np.any(avg != 0.0, axis=1) | np.any(regret != 0.0, axis=1))))
    probe.set("workers_started", backend.workers_started)
    probe.set("start_method", backend.start_method)
    if syncs and pool_s > 0:
        # the share of the pool's worker time not spent in the kernel: syncing, merging, waiting
        probe.set("sync_share", max(0.0, 1.0 - busy_s / (pool * pool_s)))
    return Solution(game, regret, avg)


def _forever(shares: list[int], probe: Probe) -> Iterator[list[int]]:
    while not probe.should_stop():
        yield shares
