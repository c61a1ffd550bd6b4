"""From the workers' tally rows to the probe: counters, batch histograms, work, the stop.

Workers (threads, processes or Ray actors) write their tallies into rows of one table
(play.py's columns, then a histogram of the batch sizes they evaluated); the main process
alone talks to the probe. `Accounting` turns tally deltas into counters and snapshots the
histograms when the measured window opens and closes; `supervise` is the main loop that
does it every `POLL_S` until the probe says stop or the workers are done.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from harness.probe import Probe
from suites.selfplay.backends.base import POLL_S
from suites.selfplay.play import (
    DRAWS,
    FIRST_WINS,
    GAMES,
    MOVES,
    MOVES_IN_GAMES,
    NN_EVALS,
    SECOND_WINS,
    TALLY_WIDTH,
)
from suites.selfplay.workers import CPU_S, WAIT_S

# tally column -> probe counter; moves_in_games lets the harness estimate games/s from moves
COUNTERS = (("games", GAMES), ("moves", MOVES), ("nn_evals", NN_EVALS), ("moves_in_games", MOVES_IN_GAMES))


class Accounting:
    """Tally rows -> probe counters; batch histograms over the measured window only."""

    def __init__(
        self,
        probe: Probe,
        tally: np.ndarray,
        on_measure: Callable[[], None] | None = None,
        on_stop: Callable[[], None] | None = None,
        clocks: np.ndarray | None = None,
    ):
        self.probe = probe
        self.tally = tally
        self.on_measure = on_measure
        self.on_stop = on_stop
        self.reported = np.zeros(TALLY_WIDTH, dtype=np.int64)
        self.hist_start: np.ndarray | None = None
        self.hist_end: np.ndarray | None = None
        self.clocks = clocks  # per worker: CPU seconds, seconds waiting for replies (workers.Shared)
        self.clocks_start: tuple[float, np.ndarray] | None = None
        self.clocks_end: tuple[float, np.ndarray] | None = None
        for name, _ in COUNTERS:  # present (and 0) even if no game ends
            probe.count(name, 0)

    def update(self) -> None:
        totals = self.tally.sum(axis=0)
        delta = totals[:TALLY_WIDTH] - self.reported
        for name, column in COUNTERS:
            if delta[column]:
                self.probe.count(name, int(delta[column]))
        self.reported += delta
        phase = self.probe.current_phase
        if self.hist_start is None and phase != "warmup":
            # fixed work: the window opened as the workers started, before any batch
            fixed = self.probe.target_work is not None
            self.hist_start = np.zeros_like(totals[TALLY_WIDTH:]) if fixed else totals[TALLY_WIDTH:].copy()
            if self.clocks is not None:
                self.clocks_start = (time.monotonic(), self.clocks.copy())
            if self.on_measure is not None:
                self.on_measure()
        if self.hist_end is None and phase == "stopped":
            self.hist_end = totals[TALLY_WIDTH:].copy()
            if self.clocks is not None:
                self.clocks_end = (time.monotonic(), self.clocks.copy())
            if self.on_stop is not None:
                self.on_stop()

    def finish(self, observe_batches: bool) -> int:
        """Final counts (trickle after the stop goes to totals only); returns games finished."""
        self.update()
        if observe_batches:
            end = self.hist_end if self.hist_end is not None else self.tally.sum(axis=0)[TALLY_WIDTH:]
            start = self.hist_start if self.hist_start is not None else np.zeros_like(end)
            for size, count in enumerate((end - start).tolist()):
                if size and count:
                    self.probe.observe("batch", size, count)
        self.probe.set("first_player_wins", int(self.reported[FIRST_WINS]))
        self.probe.set("second_player_wins", int(self.reported[SECOND_WINS]))
        self.probe.set("draws", int(self.reported[DRAWS]))
        self._report_clocks()
        return int(self.reported[GAMES])

    def _report_clocks(self) -> None:
        """The workers' CPU (% of a core, summed) and their share of time blocked waiting
        for replies, over the measured window (each worker publishes its clocks every step)."""
        if self.clocks_start is None or self.clocks_end is None:
            return
        (t0, start), (t1, end) = self.clocks_start, self.clocks_end
        window = t1 - t0
        if window <= 0:
            return
        spent = (end - start).sum(axis=0)
        self.probe.set("workers_cpu_pct", round(100.0 * float(spent[CPU_S]) / window, 1))
        # each worker publishes its clocks once a search step, so a window's ends are a step
        # stale: a worker that waits all the time can read a hair over 1
        share = float(spent[WAIT_S]) / (window * end.shape[0])
        self.probe.set("client_wait_share", round(min(1.0, share), 4))

    def report_work(self) -> None:
        if self.probe.target_work is not None:
            self.probe.work(requested=self.probe.target_work, done=int(self.reported[GAMES]))


def supervise(probe: Probe, accounting: Accounting, wait: Callable[[float], None], finished: Callable[[], bool]):
    """Main loop: counters and the stop signal every ~50 ms until stopped or all done."""
    while True:
        stop = probe.should_stop()
        if not stop and finished():
            accounting.update()  # the last of the fixed work belongs to the window ...
            probe.stop()  # ... and shutting down counts in no rate
            stop = True
        accounting.update()
        if stop:
            return
        wait(POLL_S)


def observe_server_stats(probe: Probe, stats: dict) -> None:
    """An inference server's recorded batches and waits (measured window only) as observations."""
    for size, count in stats["batch_hist"].items():
        probe.observe("batch", size, count)
    waits, counts = np.unique(np.round(stats["waits_ms"].astype(np.float64), 2), return_counts=True)
    for wait_ms, count in zip(waits.tolist(), counts.tolist(), strict=True):
        probe.observe("wait_ms", wait_ms, count)
    window = stats.get("window_s", 0.0)
    if window > 0:
        probe.set("server_idle_share", round(stats["idle_s"] / window, 4))
        probe.set("server_cpu_pct", round(100.0 * stats["cpu_s"] / window, 1))
        # forward passes' wall seconds summed over the compute threads (up to inflight x 100 %):
        # next to server_cpu_pct it tells a slow forward pass (contended cores) from overhead
        probe.set("server_compute_pct", round(100.0 * stats["compute_s"] / window, 1))
        probe.set("server_batches_computing", round(stats["compute_s"] / window, 3))
        if "compute_threads" in stats:
            probe.set("server_batch_slots", stats["compute_threads"])
        achieved = stats["positions_recorded"] / window
        roofline = stats.get("roofline_evals_per_s")
        if roofline:
            # the bare forward pass at the server's mean batch, same threads, timed in the cell
            probe.set("roofline_evals_per_s_at_batch", round(roofline, 1))
            probe.set("server_efficiency_pct", round(100.0 * achieved / roofline, 1))
