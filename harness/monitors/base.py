"""What a monitor is: a sampler started on a cell's root process and stopped with results;
and the one sampling thread the periodic monitors share."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import psutil


@dataclass
class MonitorResult:
    metrics: dict[str, Any] = field(default_factory=dict)
    # (wall-clock time, metric, value): the runner aligns these with the cell's own series
    series: list[tuple[float, str, float]] = field(default_factory=list)
    # every process of the cell seen while sampling, so the runner can end escaped ones
    processes: dict[int, psutil.Process] = field(default_factory=dict)
    # what the record's warnings should say of this monitor (an instrument that saw nothing)
    warnings: list[str] = field(default_factory=list)


class Monitor(Protocol):
    name: str

    def start(self, root_pid: int) -> None: ...

    def stop(self) -> MonitorResult: ...


class SamplingEnded(Exception):
    """Raised by a sample to end the sampling for good (a source that went away); the
    message is kept as the monitor's `reason`, what it measured until then stays."""


class SamplingMonitor:
    """A monitor that samples on a background thread of its own, every `period_s`, until it
    is stopped. This base owns the thread, the period, the sampler's own CPU time (thread
    time, so that the record states what the watching cost), the stop and the end of
    sampling on SamplingEnded; a monitor says what one sample is (`sample`) and what its
    result is (`result`), and where it needs to, what to prepare (`begin`), how long to wait
    after a sample that cost so much (`next_period`) and what to end in the sampling thread
    when the sampling ends (`finish`)."""

    name: str
    WAIT_FIRST = False  # True: the first sample comes one period after start (a sample of deltas)

    def __init__(self, period_s: float) -> None:
        self.period_s = period_s
        self.root = 0
        self.reason: str | None = None  # why the sampling ended early, or could not begin
        self.own_cpu_s = 0.0  # CPU time of the sampling thread in its samples
        self.started = 0.0  # time.monotonic() at start, 0 before
        self.stopped = 0.0  # time.monotonic() when the sampling thread ended, 0 before
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ what a monitor says
    def begin(self, root_pid: int) -> bool:
        """Prepare, in the caller's thread; False: nothing to sample (no thread is started)."""
        return True

    def sample(self) -> None:
        """One sample of the tree under `self.root` (in the sampling thread)."""
        raise NotImplementedError

    def next_period(self, cost_s: float) -> float:
        """Seconds to wait after a sample whose own CPU time was `cost_s`."""
        return self.period_s

    def finish(self) -> None:
        """In the sampling thread, after its last sample, whichever way the sampling ended."""

    def result(self) -> MonitorResult:
        """What the monitor found: called once, after the sampling thread has ended."""
        raise NotImplementedError

    # ------------------------------------------------------------------ the one way it runs
    def start(self, root_pid: int) -> None:
        self.root = root_pid
        self.started = time.monotonic()
        if self.begin(root_pid):
            self._thread = threading.Thread(target=self._run, name=f"{self.name}-monitor", daemon=True)
            self._thread.start()

    def stop(self) -> MonitorResult:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
        return self.result()

    def _run(self) -> None:
        try:
            if self.WAIT_FIRST and self._stopping.wait(self.period_s):
                return
            while True:
                t0 = time.thread_time()
                try:
                    self.sample()
                except SamplingEnded as exc:
                    self.reason = str(exc)
                    return
                finally:
                    cost = time.thread_time() - t0
                    self.own_cpu_s += cost
                if self._stopping.wait(self.next_period(cost)):
                    return
        finally:
            try:
                self.finish()
            finally:
                self.stopped = time.monotonic()

    # ------------------------------------------------------------------ its own cost
    def ran_s(self) -> float | None:
        """Seconds from start to the end of sampling (to now while it samples); None before
        start."""
        if not self.started:
            return None
        ran = (self.stopped or time.monotonic()) - self.started
        return ran if ran > 0 else None

    def own_cost(self, seconds_key: str, pct_key: str) -> dict[str, float]:
        """The sampling thread's CPU seconds and their share of one core over the time it ran."""
        out = {seconds_key: self.own_cpu_s}
        ran = self.ran_s()
        if ran is not None:
            out[pct_key] = 100.0 * self.own_cpu_s / ran
        return out
