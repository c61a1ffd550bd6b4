"""The only API a suite sees.

A suite reports what it did (counters, observations, values, work accounting) and asks
whether to stop; the probe owns the clock, the warm-up/measure split and the 1 s time
series, so every suite measures the same way. Rates are computed over the measured
window only, which starts when warm-up ends and ends the first time `should_stop()`
answers True (or when the run returns, for fixed-work runs): work that trickles in
while workers shut down counts toward totals, never toward rates.

The probe lives in the suite's main process. Worker processes funnel their counts to
it (result messages, shared counters); it is not shared across processes.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel

from harness.choices import Choices
from harness.vocabulary import EMPTY, LimitBenchmark, Quality, Rate, Reference, Vocabulary
from harness.workshare import resolve_workers, split_work, usable_cores

__all__ = [
    "Choices",
    "LimitBenchmark",
    "Probe",
    "Quality",
    "Rate",
    "Reference",
    "Resources",
    "Suite",
    "SuiteError",
    "Vocabulary",
    "resolve_workers",
    "split_work",
    "usable_cores",
]

Phase = Literal["warmup", "measure"]
Sink = Callable[[dict[str, Any]], None]

_HIST_MAX_DISTINCT = 512
# A slope fitted to fewer 1 s rates is noise (thousands of %/min on a 2 s cell), not drift.
MIN_DRIFT_SAMPLES = 10


class SuiteError(Exception):
    """A failure the suite can explain in one line (bad device, unsupported combination).

    The cell is recorded as `error` with this message as its reason and no traceback; the
    CLI's `harness run` exits 2 for it, because it is the user's input that was wrong.
    """


@dataclass(frozen=True)
class Resources:
    """What one cell occupies while it runs: used to flag oversubscription and by Ray."""

    cpus: int
    gpus: int = 0


@dataclass(frozen=True)
class Suite:
    """What a suite package exposes as `SUITE` through the `harness.suites` entry points.

    `run` should import its heavy modules (torch) lazily, so that listing suites and
    starting worker processes that need no network stays cheap. `vocabulary` says what
    its numbers mean (harness.vocabulary); `words` is it with conventions filled in.
    `watch=True` asks the runner to put the outside-in instruments of `harness watch`
    (sampled stacks, pipe traffic, the torch hook, rates in the log) over every cell: for a
    suite that launches a program it does not control and so cannot report from inside.
    """

    name: str
    description: str
    params: type[BaseModel]
    run: Callable[[Any, Probe], None]
    resources: Callable[[Any], Resources] | None = None
    vocabulary: Vocabulary = EMPTY
    watch: bool = False

    @cached_property
    def words(self) -> Vocabulary:
        return self.vocabulary.resolve(self.params)

    def resources_for(self, params: BaseModel) -> Resources:
        """CPUs a cell occupies: declared, else its workers plus its extra processes."""
        if self.resources is not None:
            return self.resources(params)
        key = self.words.workers
        workers = getattr(params, key, 1) if key else 1
        cpus = resolve_workers(int(workers)) if isinstance(workers, int) else 1
        if self.words.extra_processes is not None:
            cpus += self.words.extra_processes(params)
        return Resources(cpus=cpus)


class _Observations:
    """Weighted samples of one observed quantity (a batch size, a wait in ms)."""

    __slots__ = ("values", "weights")

    def __init__(self) -> None:
        self.values = array("d")
        self.weights = array("d")

    def add(self, value: float, count: float) -> None:
        self.values.append(value)
        self.weights.append(count)

    def summary(self, name: str) -> dict[str, Any]:
        import numpy as np

        values = np.frombuffer(self.values, dtype=np.float64)
        weights = np.frombuffer(self.weights, dtype=np.float64)
        keep = weights > 0
        values, weights = values[keep], weights[keep]
        if values.size == 0:
            return {f"{name}_count": 0}
        order = np.argsort(values, kind="stable")
        values, weights = values[order], weights[order]
        cumulative = np.cumsum(weights)
        total = float(cumulative[-1])

        def quantile(q: float) -> float:
            return float(values[min(int(np.searchsorted(cumulative, q * total)), values.size - 1)])

        out: dict[str, Any] = {
            f"{name}_count": total,
            f"{name}_mean": float(np.dot(values, weights) / total),
            f"{name}_p50": quantile(0.50),
            f"{name}_p95": quantile(0.95),
            f"{name}_max": float(values[-1]),
        }
        distinct, inverse = np.unique(values, return_inverse=True)
        if distinct.size <= _HIST_MAX_DISTINCT and np.all(distinct == np.round(distinct)):
            counts = np.bincount(inverse, weights=weights)
            out[f"{name}_hist"] = {str(int(v)): float(c) for v, c in zip(distinct, counts, strict=True)}
        return out


class Probe:
    """Counters, observations, values, work accounting, phases and the stop signal.

    Parameters come from the harness: `duration_s` is the measured window (None for a
    fixed-work run, which sets `target_work` and stops by itself), `warmup_s` the time
    excluded from rates, `sink` receives the time series as it is sampled so that a
    cell that hangs or is killed still leaves its series behind, `per_minute` names the
    counters the suite's vocabulary rates per minute (`<counter>_per_min` as well).
    """

    def __init__(
        self,
        *,
        duration_s: float | None = None,
        warmup_s: float = 0.0,
        target_work: int | None = None,
        sink: Sink | None = None,
        series_period_s: float = 1.0,
        clock: Callable[[], float] = time.perf_counter,
        per_minute: tuple[str, ...] = (),
    ) -> None:
        if duration_s is not None and duration_s <= 0:
            raise ValueError(f"duration_s must be > 0, got {duration_s}")
        if warmup_s < 0:
            raise ValueError(f"warmup_s must be >= 0, got {warmup_s}")
        self.duration_s = duration_s
        self.warmup_s = warmup_s if target_work is None else 0.0
        self.target_work = target_work
        self._per_minute = set(per_minute)  # counters whose rate reads better per minute (games)
        self._sink = sink
        self._clock = clock
        self._period = series_period_s
        self._lock = threading.Lock()

        self._t0 = clock()
        self._warmup_started = self._t0
        self._phase: Phase = "warmup" if self.warmup_s > 0 else "measure"
        self._measure_start: float | None = None if self.warmup_s > 0 else self._t0
        self._measure_end: float | None = None
        self._counters: dict[str, float] = {}
        self._at_measure_start: dict[str, float] = {}
        self._at_measure_end: dict[str, float] | None = None
        self._observations: dict[str, _Observations] = {}
        self._values: dict[str, Any] = {}
        self._requested = 0
        self._done = 0
        self._work_reported = False
        self._warnings: list[str] = []
        self._next_sample = self._t0 + self._period
        self._samples: list[tuple[float, str, dict[str, float]]] = []

    # ------------------------------------------------------------------ reporting
    def count(self, name: str, n: float = 1) -> None:
        """Add `n` to counter `name` (a plural noun: iterations, games, nn_evals)."""
        with self._lock:
            self._counters[name] = self._counters.get(name, 0) + n
        self._tick()

    def observe(self, name: str, value: float, count: float = 1) -> None:
        """Record `count` occurrences of `value` (batch sizes, waits). Warm-up ones are dropped."""
        if self._phase == "warmup":
            self._tick()
            return
        with self._lock:
            obs = self._observations.get(name)
            if obs is None:
                obs = self._observations[name] = _Observations()
            obs.add(float(value), float(count))
        self._tick()

    def set(self, name: str, value: Any) -> None:
        """Set a value (nash_conv, mean_return); numbers also become a point of the series."""
        with self._lock:
            self._values[name] = value
        if isinstance(value, int | float) and not isinstance(value, bool) and self._sink is not None:
            self._emit({"type": "point", "t": self._clock() - self._t0, "name": name, "value": value})
        self._tick()

    def work(self, requested: int = 0, done: int = 0) -> None:
        """Add to the work accounting: units asked for and units actually carried out."""
        with self._lock:
            self._requested += requested
            self._done += done
            self._work_reported = True

    def warn(self, message: str) -> None:
        """A warning the user should see next to the cell's numbers (e.g. idle workers)."""
        self._warnings.append(message)
        print(f"warning: {message}", file=sys.stderr, flush=True)

    def log(self, message: str) -> None:
        """A line in the cell's log."""
        print(message, file=sys.stderr, flush=True)

    # ------------------------------------------------------------------ phases
    @property
    def current_phase(self) -> Literal["warmup", "measure", "stopped"]:
        return "stopped" if self._measure_end is not None else self._phase

    def phase(self, name: Phase) -> None:
        """`warmup` restarts the warm-up clock (call it once workers are up, so start-up is
        not counted as warm-up); `measure` ends warm-up now."""
        now = self._clock()
        if name == "warmup":
            if self._measure_end is None:
                self._phase = "warmup"
                self._measure_start = None
                self._warmup_started = now
        elif name == "measure":
            if self._phase == "warmup":
                self._enter_measure(now)
        else:
            raise ValueError(f"phase must be 'warmup' or 'measure', got {name!r}")

    def should_stop(self) -> bool:
        """True once the measured window has lasted `duration_s` (never, in fixed-work runs)."""
        now = self._clock()
        self._tick(now)
        if self._measure_end is not None:
            return True
        if self._phase == "warmup" and now - self._warmup_started >= self.warmup_s:
            self._enter_measure(now)
        if self.duration_s is None or self._measure_start is None:
            return False
        if now - self._measure_start >= self.duration_s:
            self._stop(now)
            return True
        return False

    def stop(self) -> None:
        """Close the measured window now, e.g. when fixed work is done: what follows (a final
        exploitability evaluation, shutting workers down) then counts in no rate."""
        if self._measure_end is None:
            now = self._clock()
            if self._measure_start is None:
                self._enter_measure(now)
            self._stop(now)

    def _enter_measure(self, now: float) -> None:
        with self._lock:
            self._phase = "measure"
            self._measure_start = now
            self._at_measure_start = dict(self._counters)
        self._sample(now, force=True)

    def _stop(self, now: float) -> None:
        with self._lock:
            self._measure_end = now
            self._at_measure_end = dict(self._counters)
        self._sample(now, force=True)

    # ------------------------------------------------------------------ series
    def _tick(self, now: float | None = None) -> None:
        if now is None:
            now = self._clock()
        if now >= self._next_sample:
            self._sample(now)

    def _sample(self, now: float, force: bool = False) -> None:
        with self._lock:
            if not force and now < self._next_sample:
                return
            self._next_sample = now + self._period
            counts = dict(self._counters)
            phase = self.current_phase
            self._samples.append((now - self._t0, phase, counts))
        self._emit({"type": "sample", "t": now - self._t0, "phase": phase, "counters": counts})

    def _emit(self, record: dict[str, Any]) -> None:
        if self._sink is not None:
            self._sink(record)

    # ------------------------------------------------------------------ results
    def finish(self) -> dict[str, Any]:
        """Close the window (if the run ended on its own) and summarise everything as metrics."""
        now = self._clock()
        if self._measure_start is None:  # the run ended during warm-up
            self._enter_measure(now)
        if self._measure_end is None:
            self._stop(now)
        assert self._measure_start is not None and self._measure_end is not None
        window = self._measure_end - self._measure_start
        metrics: dict[str, Any] = {"wall_s": now - self._t0, "measure_s": window}
        end_counts = self._at_measure_end or {}
        for name, total in sorted(self._counters.items()):
            metrics[name] = total
            measured = end_counts.get(name, total) - self._at_measure_start.get(name, 0)
            metrics[f"{name}_per_s"] = measured / window if window > 0 else math.nan
            if name in self._per_minute:
                metrics[f"{name}_per_min"] = metrics[f"{name}_per_s"] * 60.0
        for name, obs in sorted(self._observations.items()):
            metrics.update(obs.summary(name))
        if self._work_reported:
            metrics["work_requested"] = self._requested
            metrics["work_done"] = self._done
        metrics.update(self._drift_metrics())
        metrics.update(self._values)
        return metrics

    @property
    def warnings(self) -> list[str]:
        return list(self._warnings)

    def _drift_metrics(self) -> dict[str, float]:
        """Least-squares slope of each counter's rate over the measured window, in % of the
        mean rate per minute: a throughput that decays as state grows shows up here."""
        from harness.stats import drift_pct_per_min

        measured: list[tuple[float, dict[str, float]]] = []
        end = (self._measure_end if self._measure_end is not None else self._clock()) - self._t0
        for t, phase, counts in self._samples:
            # only the measured window: samples taken while workers shut down (phase
            # "stopped", after the window's closing sample) show the shutdown, not a drift.
            # Forced samples at phase changes can sit a few ms from a periodic one; an
            # interval that short gives a meaningless rate, so keep samples >= half a period apart
            if phase == "warmup" or t > end:
                continue
            if not measured or t - measured[-1][0] >= 0.5 * self._period:
                measured.append((t, counts))
        out: dict[str, float] = {}
        if len(measured) < MIN_DRIFT_SAMPLES:
            return out
        for name in self._counters:
            times, rates = [], []
            for (t_a, c_a), (t_b, c_b) in zip(measured, measured[1:], strict=False):
                if t_b - t_a <= 0:
                    continue
                times.append((t_a + t_b) / 2)
                rates.append((c_b.get(name, 0) - c_a.get(name, 0)) / (t_b - t_a))
            drift = drift_pct_per_min(times, rates)
            if drift is not None:
                out[f"{name}_per_s_drift_pct_per_min"] = drift[0]
                out[f"{name}_per_s_drift_se"] = drift[1]
        return out
