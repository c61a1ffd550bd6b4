"""The Probe: what a suite reports through, inside its cell.

A suite reports what it did (counters, observations, values, work accounting) and asks
whether to stop; the probe owns the clock, the warm-up/measure split and the 1 s time
series, so every suite measures the same way. Rates are computed over the measured
window only, which starts when warm-up ends and ends the first time `should_stop()`
answers True (or when the run returns, for fixed-work runs): work that trickles in
while workers shut down counts toward totals, never toward rates.

The probe lives in the suite's main process. Worker processes funnel their counts to
it (result messages, shared counters); it is not shared across processes. It sits in cell/
beside the child's entry point (cell/main.py) that makes it; suites import it, with the rest
of their contract, from harness.probe, the facade one floor up.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

from harness.cell import messages
from harness.cell.observations import Observations
from harness.cell.steady import Steady, settled, trend
from harness.cell.targets import DEFAULT_EVERY_S, Target
from harness.cell.window import counter_rates, declared_rates, drift_metrics
from harness.model.vocabulary import HEADLINE_METRIC, Rate

Phase = Literal["warmup", "measure"]
# a counter whose last count came this long before a sample is said, in the sample, to lag it
# (messages.sample's `counted`): a program that prints its progress every 0.2 s is read at a
# second's samples up to 0.2 s late, and a 1 s slice of an A/B read its rate 7-8 % apart
# (cv) where the reports' own times read it 1-2 % apart (harness.ab.slicing.Slicer._measure)
LAG_S = 0.001
Sink = Callable[[messages.Message], None]  # receives the child's channel messages


class Probe:
    """Counters, observations, values, work accounting, phases, quality and the stop signal.

    Parameters come from the harness: `duration_s` is the measured window (None for a
    fixed-work run, which sets `target_work` and stops by itself; the cap of a run with a
    `target`), `warmup_s` the time excluded from rates (with `steady`, the floor of an
    automatic warm-up that ends once the rate has settled), `sink` receives the time series
    as it is sampled so that a cell that hangs or is killed still leaves its series behind,
    `rates` are the suite's declared rates (per minute, long units), `workers` the cell's
    worker count (a rate needs completions per worker to mean anything), `target` a quality
    target checked whenever the suite reports that metric, at most every `target_every_s`
    measured seconds (`quality_due`).
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
        rates: tuple[Rate, ...] = (),
        workers: int | None = None,
        steady: Steady | None = None,
        target: Target | None = None,
        target_every_s: float = DEFAULT_EVERY_S,
        marks: str | None = None,
    ) -> None:
        if duration_s is not None and duration_s <= 0:
            raise ValueError(f"duration_s must be > 0, got {duration_s}")
        if warmup_s < 0:
            raise ValueError(f"warmup_s must be >= 0, got {warmup_s}")
        whole_run = target_work is not None or target is not None  # every unit of progress counts
        self.duration_s = duration_s
        self.warmup_s = 0.0 if whole_run else warmup_s
        self.target_work = target_work
        self.target = target
        self._rates = tuple(rates)
        self._runtime_headline: str | None = None  # declare_rate(): a counter found at run time
        self._workers = workers
        self._steady = None if whole_run else steady
        self._target_every = target_every_s
        self._sink = sink
        self._clock = clock
        self._period = series_period_s
        self._lock = threading.Lock()

        self._t0 = clock()
        self._warmup_started = self._t0
        waits = self.warmup_s > 0 or self._steady is not None
        self._phase: Phase = "warmup" if waits else "measure"
        self._measure_start: float | None = None if waits else self._t0
        self._measure_end: float | None = None
        self._warmup_reason = "none" if not waits else ""
        self._settle: list[tuple[float, float]] = []  # (t, count) every steady.PERIOD_S in warm-up
        self._judged: tuple[str, bool, str] | None = None  # (counter, settled?, how) at the last point
        self._counters: dict[str, float] = {}
        self._counted_at: dict[str, float] = {}  # the clock when each counter last moved
        self._at_measure_start: dict[str, float] = {}
        self._at_measure_end: dict[str, float] | None = None
        self._observations: dict[str, Observations] = {}
        self._values: dict[str, Any] = {}
        self._requested = 0
        self._done = 0
        self._work_reported = False
        self._warnings: list[str] = []
        self._next_sample = self._t0 + self._period
        self._samples: list[tuple[float, str, dict[str, float]]] = []
        self._paused_s = 0.0  # measured time spent evaluating quality, excluded from the window
        self._pause_started: float | None = None
        self._last_check: float | None = None  # active measured time of the last quality check
        self._checks = 0
        self._best: float | None = None
        # (active seconds, work) when the target was met, and the active seconds of the check
        # before: the target was crossed in between
        self._reached: tuple[float, float, float] | None = None
        self._deadline = False  # the cell's deadline came: close the window and report (cut_short)
        # a counted run (harness.count): each count of this counter printed on stdout as the
        # harness's own JSON line, where the run's hook marks it. Every count, not every so
        # many seconds: a window then opens and closes at the same unit in every run
        self._marks = marks

    # ------------------------------------------------------------------ reporting
    def count(self, name: str, n: float = 1) -> None:
        """Add `n` to counter `name` (a plural noun: what the suite counts)."""
        now = self._clock()
        with self._lock:
            self._counters[name] = self._counters.get(name, 0) + n
            self._counted_at[name] = now
        if name == self._marks:
            self._mark(name, n)
        self._tick(now)

    def _mark(self, name: str, n: float) -> None:
        """Print this count (a counted run's window opens and closes at such a line: right
        after a unit, in the thread that counted it)."""
        print(json.dumps({"count": {name: n}}), flush=True)

    def total(self, name: str) -> float:
        """Counter `name` so far (0 before it counted): a counted run's marks read it."""
        with self._lock:
            return self._counters.get(name, 0.0)

    def observe(self, name: str, value: float, count: float = 1) -> None:
        """Record `count` occurrences of `value` (batch sizes, waits). Warm-up ones are dropped."""
        if self._phase == "warmup":
            self._tick()
            return
        with self._lock:
            obs = self._observations.get(name)
            if obs is None:
                obs = self._observations[name] = Observations()
            obs.add(float(value), float(count))
        self._tick()

    def set(self, name: str, value: Any) -> None:
        """Set a value (a quality metric, a fact); numbers also become a point of the series."""
        with self._lock:
            self._values[name] = value
        if isinstance(value, int | float) and not isinstance(value, bool) and self._sink is not None:
            self._emit(messages.point(self._clock() - self._t0, name, value))
        self._tick()

    def declare_rate(self, counter: str) -> None:
        """Name the counter this run is judged by when the suite learns it only at run time
        (a user's program whose progress is read from its output: `total_timesteps`, not
        known before the program printed it). Its rate is the record's headline
        (`headline_rate`), the one the warm-up waits to settle and the A/B slices count."""
        self._runtime_headline = counter
        self._emit(messages.rate(counter))

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

    # ------------------------------------------------------------------ quality
    def quality_due(self) -> bool:
        """True when a quality target is set and a check is due: the suite then evaluates
        inside `evaluating()` and reports the value with `quality()`."""
        if self.target is None or self.current_phase != "measure" or self._pause_started is not None:
            return False
        active = self._active(self._clock())
        return self._last_check is None or active - self._last_check >= self._target_every

    @contextmanager
    def evaluating(self) -> Iterator[None]:
        """Time spent in here (a quality evaluation) is left out of the measured window."""
        self._pause_started = self._clock()
        try:
            yield
        finally:
            self._paused_s += self._clock() - self._pause_started
            self._pause_started = None

    def quality(self, name: str, value: float) -> None:
        """Report a quality metric; reaching the target closes the measured window."""
        self.set(name, value)
        target = self.target
        if target is None or name != target.metric or self._measure_end is not None:
            return
        now = self._clock()
        previous, self._last_check = self._last_check, self._active(now)
        self._checks += 1
        if self._best is None or (value < self._best if target.op == "<=" else value > self._best):
            self._best = value
        if target.met(value):
            counter = self._rates[0].counter if self._rates else self._runtime_headline
            work = self._counters.get(counter, 0) - self._at_measure_start.get(counter, 0) if counter else 0.0
            self._reached = (self._last_check, work, previous if previous is not None else 0.0)
            self._stop(now)

    # ------------------------------------------------------------------ phases
    def measured_window(self) -> tuple[float | None, float | None]:
        """When the measured window opened and closed, on the probe's clock (None: not yet)."""
        return self._measure_start, self._measure_end

    def now(self) -> float:
        """The probe's clock: what stamps readings to be held against its window."""
        return self._clock()

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
                self._settle = []
                self._judged = None
        elif name == "measure":
            if self._phase == "warmup":
                self._enter_measure(now, "the suite began measuring")
        else:
            raise ValueError(f"phase must be 'warmup' or 'measure', got {name!r}")

    def should_stop(self) -> bool:
        """True once the measured window has lasted `duration_s` (never, in fixed-work
        runs), or a quality target was reached, or the cell's deadline came (cut_short)."""
        now = self._clock()
        self._tick(now)
        if self._measure_end is not None:
            return True
        if self._deadline:
            self._cut(now)
            return True
        if self._phase == "warmup":
            self._warm(now)
        if self.duration_s is None or self._measure_start is None:
            return False
        if self._active(now) >= self.duration_s:
            self._stop(now)
            return True
        return False

    def cut_short(self) -> None:
        """The cell's deadline came (harness.cell.main's handler of the runner's signal): the
        next should_stop() closes the window, so what was measured reaches the record before
        the cell is ended. Only sets a flag: it runs inside a signal handler."""
        self._deadline = True

    def _cut(self, now: float) -> None:
        window = self._active(now)
        self.stop()
        asked = f" of the {self.duration_s:g} s asked" if self.duration_s else ""
        self.warn(
            f"cut short by the cell's deadline: its measured window ran {window:.1f} s{asked}; the rates are over that "
            "part"
            if self._measure_start is not None and window > 0
            else "cut short by the cell's deadline before its measured window opened: nothing was measured"
        )

    def stop(self) -> None:
        """Close the measured window now, e.g. when fixed work is done: what follows (a final
        evaluation, shutting workers down) then counts in no rate."""
        if self._measure_end is None:
            now = self._clock()
            if self._measure_start is None:
                self._enter_measure(now, "the run ended during warm-up")
            self._stop(now)

    def _active(self, now: float) -> float:
        """Measured seconds so far, quality evaluations left out."""
        if self._measure_start is None:
            return 0.0
        paused = self._paused_s + (now - self._pause_started if self._pause_started is not None else 0.0)
        return (self._measure_end or now) - self._measure_start - paused

    def _warm(self, now: float) -> None:
        """Warm-up: end it at the floor (fixed), or once the rate has settled (steady).

        Called on every `should_stop()`, which a suite may call per unit of work, so the
        steady test runs only when a new period's point arrives, on the last window: judged
        on every call, its cost fell on the very rate it judged (docs/records/2026-11-23-ab-gate.md, "What
        the gate caught")."""
        elapsed = now - self._warmup_started
        steady = self._steady
        if steady is None:
            if elapsed >= self.warmup_s:
                self._enter_measure(now, f"fixed warm-up of {self.warmup_s:g} s")
            return
        if not self._settle or now - self._settle[-1][0] >= steady.period_s:
            name = self._settle_counter()
            self._settle.append((now, self._counters.get(name, 0.0)))
            del self._settle[: -(steady.window + 1)]  # the test reads the last window's rates only
            points = self._settle
            rates = [(c1 - c0) / (t1 - t0) for (t0, c0), (t1, c1) in zip(points, points[1:], strict=False)]
            fit = trend(rates)
            how = (
                f"trend {fit[0]:+.1%} (t {fit[1]:.1f}) over {steady.window * steady.period_s:.2g} s"
                if fit
                else "no counts"
            )
            self._judged = (name, settled(rates, steady), how)
        if self._judged is None or elapsed < steady.floor_s:
            return
        name, calm, how = self._judged
        if calm:
            self._enter_measure(now, f"{name} rate settled after {elapsed:.1f} s ({how})")
        elif elapsed >= steady.cap_s:
            self._enter_measure(now, f"cap of {steady.cap_s:g} s reached while the {name} rate still rose ({how})")

    def _settle_counter(self) -> str:
        """The counter whose rate must settle: the headline's finer part, else the busiest."""
        if self._rates:
            return self._rates[0].made_of or self._rates[0].counter
        if self._runtime_headline is not None:
            return self._runtime_headline
        return max(self._counters, key=lambda k: self._counters[k], default="")

    def _enter_measure(self, now: float, why: str) -> None:
        with self._lock:
            self._phase = "measure"
            self._measure_start = now
            self._at_measure_start = dict(self._counters)
            self._warmup_reason = why
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
            lagging = {name: at - self._t0 for name, at in self._counted_at.items() if now - at > LAG_S}
            phase = self.current_phase
            self._samples.append((now - self._t0, phase, counts))
        self._emit(messages.sample(now - self._t0, phase, counts, lagging))

    def _emit(self, record: dict[str, Any]) -> None:
        if self._sink is not None:
            self._sink(record)

    # ------------------------------------------------------------------ results
    def finish(self) -> dict[str, Any]:
        """Close the window (if the run ended on its own) and summarise everything as metrics."""
        now = self._clock()
        if self._measure_start is None:  # the run ended during warm-up
            self._enter_measure(now, "the run ended during warm-up")
        if self._measure_end is None:
            self._stop(now)
        assert self._measure_start is not None and self._measure_end is not None
        window = self._active(self._measure_end)
        metrics: dict[str, Any] = {"wall_s": now - self._t0, "measure_s": window}
        if self._warmup_reason != "none":
            metrics["warmup_s"] = self._measure_start - self._warmup_started
            metrics["warmup_reason"] = self._warmup_reason
        end_counts = self._at_measure_end or {}
        metrics.update(counter_rates(self._counters, self._at_measure_start, end_counts, window))
        for warning in declared_rates(
            self._rates, self._counters, self._at_measure_start, end_counts, window, self._workers, metrics
        ):
            self.warn(warning)
        for name, obs in sorted(self._observations.items()):
            metrics.update(obs.summary(name))
        if self._work_reported:
            metrics["work_requested"] = self._requested
            metrics["work_done"] = self._done
        metrics.update(drift_metrics(self._window_samples(), sorted(self._counters)))
        metrics.update(self._values)
        if self._runtime_headline is not None and not self._rates:
            metrics[HEADLINE_METRIC] = f"{self._runtime_headline}_per_s"
        metrics.update(self._target_metrics())
        return metrics

    def _target_metrics(self) -> dict[str, Any]:
        target = self.target
        if target is None:
            return {}
        out: dict[str, Any] = {
            "target": str(target),
            "target_reached": int(self._reached is not None),
            "quality_checks": self._checks,
            "quality_eval_s": self._paused_s,
        }
        if self._best is not None:
            out["target_best"] = self._best
        if self._reached is not None:
            out["time_to_target_s"], out["work_to_target"], out["time_to_target_low_s"] = self._reached
        else:
            seen = f"best {target.metric} {self._best:.4g} in {self._checks} checks" if self._checks else (
                f"the suite never reported {target.metric}"
            )  # fmt: skip
            self.warn(f"target {target} not reached within the {self.duration_s:g} s cap: {seen}")
        return out

    @property
    def warnings(self) -> list[str]:
        return list(self._warnings)

    def _window_samples(self) -> list[tuple[float, dict[str, float]]]:
        """The measured window's samples, at least half a period apart: samples taken while
        workers shut down (after the window's closing sample) show the shutdown, not a drift,
        forced samples at phase changes can sit a few ms from a periodic one, and samples of
        a window the warm-up restarted (a program's first counter grew 70 s after its start,
        the warm-up cap long passed: EvoTorch's drift spanned 141 s of a 53 s window) are not
        this window's."""
        measured: list[tuple[float, dict[str, float]]] = []
        end = (self._measure_end if self._measure_end is not None else self._clock()) - self._t0
        start = (self._measure_start if self._measure_start is not None else end) - self._t0
        for t, phase, counts in self._samples:
            if phase == "warmup" or t > end or t < start:
                continue
            if not measured or t - measured[-1][0] >= 0.5 * self._period:
                measured.append((t, counts))
        return measured
