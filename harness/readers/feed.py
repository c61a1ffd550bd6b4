"""Readings into probe calls: counters as counts, values as values, printed rates kept aside.

A counter's readings become `probe.count(name, units)`, so the probe's windowed rate,
automatic warm-up, drift and A/B slices read a program's own progress as they read a
suite's. What a reading adds is decided from the evidence of its series
(harness.readers.series: a running total is never summed; a restart is a fall to near zero
that grows again; per-report increments are summed). One name may be printed in several
slots (two bars of one unit, an evaluator's line and the trainer's): the first slot to
grow is the one counted. A counter counts once it has grown (a hyperparameter printed
once, `n_steps=32`, never does); the first counter to grow restarts the probe's warm-up, so
a program's start-up (imports, environments, workers) is left out of its warm-up. While
the program runs, the finest counter is the headline (`probe.declare_rate`); at the end
every counted rate is checked against the program's other sources of the same thing
(harness.readers.checks) and the headline is the finest counter that passed, with its
provenance (`headline_provenance`, `headline_check`, `progress_provenance`). A warning or
error line is not a progress report: its numbers are not read.

A logged value (a loss, an episode return) is recorded from its second sighting on: one
said once is configuration, not a series. A counter's series that turns out a value (a
negative reading, scores per report: harness.readers.series) is logged as a value from then
on, and its `<name>_per_s` is unknown. The seconds a program prints for one unit of a
counter (`lap` readings: neat-python's `Generation time: 3.681 sec`) are summed into its
clock for the checks, where each lap is one unit (harness.readers.checks.lap_clock). The program's own printed rate (`fps`, `it/s`) is kept as `printed_<name>`, its median over
the measured window, and `printed_<name>_vs_counted` (printed / counted) for the finest
counter of its unit: `fps = steps / time_elapsed` is a running average since the start,
which hides drift and mixes warm-up into the window.

Within one line a name, or a counter's value, is taken once: the first reader that finds it
wins (`Total num frames: 12345` is one counter, not two).
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from harness.readers.checks import SET_ASIDE, Check, clock_rate, lap_clock, paired_printed, printed_median
from harness.readers.growing import Growing
from harness.readers.protocol import FileReader, LineReader, Reading
from harness.readers.series import STALE_S, SWITCH_AFTER, Series
from harness.readers.words import family, is_clock, rank, unit_of

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # colours and cursor moves of loggers and bars
SHOWN_VALUES = 4  # value names listed in progress_recognised, of however many
# A warning or an error: a log level (`WARNING`, `[ERROR]`, absl's `W1125`), Python's
# `UserWarning:` / `ValueError:`, a traceback. DI-engine's replay buffer warns "sample is 64".
_NOT_PROGRESS = re.compile(
    r"\b(?:WARNING|WARN|ERROR|CRITICAL|FATAL)\b|^\W{0,2}[WEF]\d{4} |\b[A-Z]\w*(?:Warning|Error|Exception):"
    r"|^\s*(?i:warning|error)\s*:|^Traceback \(most recent"
)

# How the feed's warnings of a cell with no throughput begin (harness watch says it its own way)
NOTHING_COUNTED = "no progress counter recognised"
NO_RATE = "no throughput can be computed"

_CONTINUED = re.compile(r"^\s{4,}\S")  # an indented line: the record above it goes on
# Ray's log deduplication: one line printed for several processes' alike lines, the last one's numbers
_MERGED = re.compile(r"\[repeated \d+x across cluster\]")
# Ray's prefix on a worker's line, `(SelfPlayWorker pid=16590, ip=10.0.0.2)`: which process said it
_PROCESS = re.compile(r"^\s*\((?:[\w.]+ )?pid=(?P<pid>\d+)(?:, ip=[\w.:-]+)?\)")


class Feed:
    def __init__(
        self,
        probe: Any,
        lines: Sequence[LineReader],
        files: Sequence[FileReader] = (),
        clock: Callable[[], float] = time.monotonic,
        headline: str | None = None,
    ) -> None:
        self.probe = probe
        self.line_readers = list(lines)
        self.file_readers = list(files)
        self.clock = clock
        self.fixed_headline = headline  # the user's --progress NAME=: no other counter replaces it
        self.headline: str | None = None
        self.lines_read = 0
        self.lines_recognised = 0
        self.lines_not_progress = 0
        self._in_warning = False  # the last line was a warning: its indented lines go with it
        self.by_reader: dict[str, Counter[str]] = defaultdict(Counter)  # reader -> "kind name" -> readings
        self._series: dict[tuple[str, str], Series] = {}  # (name, source:slot) -> its readings
        self._counted_slot: dict[str, str] = {}  # counter -> the slot it is counted from
        self._grown: list[str] = []  # counters seen to grow, in the order they did
        self._values_seen: set[str] = set()
        self._printed: dict[str, list[tuple[float, float, str, str]]] = defaultdict(list)  # (t, value, phase, slot)
        self._clocks: list[tuple[float, float]] = []  # (t, the program's elapsed seconds)
        self._laps: dict[str, list[tuple[float, float]]] = defaultdict(list)  # counter -> (t, seconds of one unit)
        self.checks: dict[str, list[Check]] = {}
        self.growing = Growing()  # values that grew: --progress choices when no counter is read
        self.doubted: set[str] = set()  # index-like counters no second source agreed with: no rate

    # ------------------------------------------------------------------ input
    def line(self, text: str) -> bool:
        """One line of the program's output; True when some reader recognised it."""
        self.lines_read += 1
        if "\x1b" in text:
            text = _ANSI.sub("", text)
        if _NOT_PROGRESS.search(text) or (self._in_warning and _CONTINUED.match(text)):
            # a warning's indented continuation lines are the warning too (LightZero's "number
            # of transitions: 141" under "WARNING The data in replay_buffer is not sufficient")
            self._in_warning = True
            self.lines_not_progress += 1
            return False
        self._in_warning = False
        taken: list[tuple[str, Reading]] = []
        for reader in self.line_readers:
            fresh: list[Reading] = []
            for reading in reader.read(text):
                if not _duplicate(reading, [r for _, r in taken] + fresh):
                    fresh.append(reading)
            for reading in fresh:
                self.by_reader[reader.name][f"{reading.kind} {reading.name}"] += 1
            taken += [(reader.name, r) for r in fresh]
            if fresh and getattr(reader, "exclusive", False):
                break
        if taken:
            self.lines_recognised += 1
            now = self.clock()
            merged = _MERGED.search(text) is not None
            process = _PROCESS.match(text)
            said_by = (process["pid"] if process else "", merged)
            for reader_name, reading in taken:
                self._apply_one(reading, now, "output", reader_name, said_by)
        return bool(taken)

    def poll_files(self) -> None:
        for reader in list(self.file_readers):
            try:
                readings = reader.poll()
            except Exception as exc:  # noqa: BLE001 - a file we cannot read must not end the user's run
                self.file_readers.remove(reader)
                self.probe.warn(f"stopped reading {reader.describe()}: {type(exc).__name__}: {exc}")
                continue
            for reading in readings:
                self.by_reader[reader.name][f"{reading.kind} {reading.name}"] += 1
            self.apply(readings, source=reader.name)

    def apply(self, readings: Sequence[Reading], source: str = "output", reader: str = "") -> None:
        now = self.clock()
        for reading in readings:
            self._apply_one(reading, now, source, reader or source)

    def _apply_one(
        self, reading: Reading, now: float, source: str, reader: str, said_by: tuple[str, bool] = ("", False)
    ) -> None:
        """`said_by`: the process a runtime's prefix names on the line (Ray's `pid=`), and
        whether the line stands for several processes' lines."""
        phase = self.probe.current_phase
        if reading.kind == "counter":
            self._count(reading, now, phase, source, reader, said_by)
        elif reading.kind == "rate":
            self._printed[reading.name].append((now, reading.value, phase, reading.slot))
        elif reading.kind == "clock":
            self._clocks.append((now, reading.value))
        elif reading.kind == "lap":
            self._laps[reading.name].append((now, reading.value))
        else:
            self.growing.see(reading, reader)
            if is_clock(reading.name):
                self._clocks.append((now, reading.value))
            target = self.probe.target
            if target is not None and target.metric == reading.name:
                self.probe.quality(reading.name, reading.value)
            elif reading.name in self._values_seen:
                self.probe.set(reading.name, reading.value)
            else:  # a value said once is configuration (Sample Factory prints ~150 at start)
                self._values_seen.add(reading.name)

    def _count(
        self, reading: Reading, now: float, phase: str, source: str, reader: str, said_by: tuple[str, bool]
    ) -> None:
        """A reading of a counter: its series says what it adds; only the counted slot of a
        name reaches the probe. A counter counts from its second value on, once it has grown:
        a number a counter's word labels once (`n_steps=32` in a printed config) is not
        progress."""
        slot = f"{source}:{reading.slot}"
        series = self._series.get((reading.name, slot))
        if series is None:
            series = self._series[(reading.name, slot)] = Series(
                reading.name, slot, reader, reading.key or reading.name, source
            )
        units = series.see(reading.value, phase, now, *said_by)
        if series.kind == "value":  # a fitness, a score: logged as a value from now on, never counted
            self._apply_one(replace(reading, kind="value"), now, source, reader)
            return
        counted_slot = self._counted_slot.get(reading.name)
        if counted_slot is None:
            if units <= 0:
                return
            self._counted_slot[reading.name] = counted_slot = slot
            self._grown.append(reading.name)
            if len(self._grown) == 1 and self.probe.current_phase != "stopped":
                self.probe.phase("warmup")  # the program's start-up (imports, envs) is not its warm-up
                if self.probe.current_phase == "warmup":
                    self._unmeasure()
        if counted_slot != slot:
            counted = self._series[(reading.name, counted_slot)]
            stale = now - counted.grew_at[-1] >= STALE_S
            if not stale or series.growths <= counted.growths or series.grew_since(counted.grew_at[-1]) < SWITCH_AFTER:
                return
            # the counted report stopped growing long ago and this one has grown more: this is
            # the program's progress (Sample Factory's "Decorrelating experience for 32 frames",
            # Lightning's sanity-check bar, grew first). A validation bar that grows while the
            # training bar waits a moment is not the training
            self._counted_slot[reading.name] = slot
        if units and series.index is None:  # an index's readings are never summed into the probe's rate
            self.probe.count(reading.name, units)
        self._choose_headline()

    def _unmeasure(self) -> None:
        """The warm-up restarted at the first growth: nothing read before it (a bar at 0, a
        printed rate, in a window the probe opened while the program was still starting) is
        of the measured window, for the rates and their checks alike."""
        for series in self._series.values():
            series.unmeasure()
        for name, points in self._printed.items():
            self._printed[name] = [(t, v, "warmup" if phase == "measure" else phase, s) for t, v, phase, s in points]

    def _choose_headline(self, eligible: Sequence[str] | None = None) -> None:
        if self.fixed_headline is not None:
            best = self.fixed_headline if self.fixed_headline in self._grown else None
        else:
            names = list(eligible) if eligible is not None else self._grown
            best = min(names, key=self._headline_order) if names else None
        if best is not None and best != self.headline:
            self.headline = best
            self.probe.declare_rate(best)

    def _headline_order(self, name: str) -> tuple[int, int, int, int]:
        """An index last, whatever it counts; then the finest unit first; a level before
        increments of the same unit; then the first to grow."""
        series = self.series_of(name)
        return int(self._in_doubt(name)), rank(name), int(series.kind != "level"), self._grown.index(name)

    def _in_doubt(self, name: str) -> bool:
        """An index (harness.readers.series) no second source agreed with; while the program
        runs, before its checks, any index; a counter whose readings turned out a value."""
        series = self.series_of(name)
        return self._no_rate_from(name) or (not self.checks and series.index is not None)

    def _no_rate_from(self, name: str) -> bool:
        """A counter whose sum is no rate: an index no source agreed with, or a value (a
        negative reading, scores per report) that grew as a counter before it was known."""
        return name in self.doubted or self.series_of(name).kind == "value"

    def series_of(self, name: str) -> Series:
        return self._series[(name, self._counted_slot[name])]

    # ------------------------------------------------------------------ output
    def finish(self) -> None:
        """Printed rates, every counter's checks, the headline that passed them and its
        provenance, and what was recognised."""
        self.poll_files()
        medians = {name: printed_median(points) for name, points in self._printed.items()}
        for name, printed in sorted(medians.items()):
            self.probe.set(name, printed)
        start, end = getattr(self.probe, "measured_window", lambda: (None, None))()
        spans = {n: span for n in self._grown if (span := self.series_of(n).window_span(start, end)) is not None}
        rates = {n: span.rate for n, span in spans.items()}
        # a series not yet known as a running total or increments is set aside unchecked; an
        # index is checked: only a second source that agrees lets its sum be a rate
        judged = [n for n in rates if self.series_of(n).trusted or self.series_of(n).index is not None]
        self.checks = {name: self._checks(name, rates, medians, spans[name].first.t) for name in judged}
        self.doubted = {
            n
            for n in judged
            if self.series_of(n).index is not None and not any(c.outcome == "agrees" for c in self.checks[n])
        }
        for name, printed in sorted(medians.items()):
            paired = [
                c
                for c in self._grown
                if c not in self.doubted and name in paired_printed(c, self.series_of(c).slot, self._printed)
            ]
            counter = min(paired, key=rank) if paired else None
            if counter is not None and rates.get(counter):
                self.probe.set(f"{name}_vs_counted", printed / rates[counter])
        for name, checks in sorted(self.checks.items()):
            differing = [c for c in checks if c.outcome != "agrees"]
            if name in self.doubted:
                self.probe.warn(self._index_warning(name, rates[name]))
            elif differing:
                self.probe.warn(_disagreement(name, rates[name], differing))
        for name, rate in rates.items():
            # between its first and last reports in the window, as one reads a log by hand: a
            # report every 10 s cut by the window's edges would be off by up to a report. An
            # index's sum is no rate: unknown (NaN: no report, chart or rule takes it)
            self.probe.set(f"{name}_per_s", math.nan if self._no_rate_from(name) else rate)
        if self.fixed_headline is None and self._grown:
            passed = [n for n in self._grown if n in rates and not self._set_aside(n)]
            self._choose_headline(passed or self._grown)
        self.probe.set("progress_lines", self.lines_read)
        self.probe.set("progress_lines_recognised", self.lines_recognised)
        if self.lines_not_progress:
            self.probe.set("progress_lines_not_progress", self.lines_not_progress)
        self.probe.set("progress_recognised", self.recognised())
        if self._grown:
            self.probe.set("progress_provenance", "; ".join(self.provenance(n, rates) for n in self._grown))
        if self.headline is not None:
            self.probe.set("headline_provenance", self.provenance(self.headline, rates))
            self.probe.set("headline_check", self.verdict(self.headline, rates))
            aside = [n for n in self._grown if self._set_aside(n)]
            if aside:
                self.probe.set("progress_set_aside", "; ".join(f"{n}: {self._why_aside(n)}" for n in aside))
        if not self._grown:
            self.probe.warn(self._nothing_counted())
        elif all(self._no_rate_from(n) or n not in rates for n in self._grown) and self.fixed_headline is None:
            self.probe.warn(self._no_rate(rates))
        if not self._grown or all(self._no_rate_from(n) for n in self._grown):
            # what the terminal and the report say under the table (harness.runs.provenance)
            self.probe.set("progress_advice", self._where_progress_is())

    def _checks(self, name: str, rates: dict[str, float], medians: dict[str, float], since: float) -> list[Check]:
        """Every other source of the same thing as counter `name`, held against its rate (taken
        over the counter's readings from `since` on)."""
        checks = []
        slot = self.series_of(name).slot
        for printed in paired_printed(name, slot, self._printed):
            if medians[printed] > 0:
                same = " (same report)" if any(s == slot.split(":", 1)[1] for *_, s in self._printed[printed]) else ""
                label = f"printed {printed.removeprefix('printed_')}{same}"
                checks.append(Check(label, medians[printed], rates[name] / medians[printed]))
        series = self.series_of(name)
        increments = series.kind == "increments"
        by_clock = clock_rate(series.points, self._clocks, increments, since)
        laps = [lap for unit, laps in self._laps.items() if unit_of(unit) == unit_of(name) for lap in laps]
        if by_clock is None and (clock := lap_clock(sorted(laps), series.points)):
            by_clock = clock_rate(series.points, clock, increments, since)  # neat-python's `Generation time`s
        if by_clock is not None and by_clock[0] > 0:
            label = f"growth by the program's own numbers and clock ({by_clock[1]:.0f} s)"
            checks.append(Check(label, by_clock[0], rates[name] / by_clock[0]))
        for other, rate in rates.items():
            if other == name or family(other) != family(name) or rate <= 0 or not self.series_of(other).trusted:
                continue
            if rates[name] * SET_ASIDE < rate:
                continue  # the other is read too fast: its check sets it aside, this one is not in doubt
            checks.append(Check(f"counter {other}", rate, rates[name] / rate))
        return checks

    def _set_aside(self, name: str) -> bool:
        """Not a plain running total or increments, or read over 2x faster than another source
        of the same thing while none agreed with it: a source that agrees (the program's own
        clock, above all) says the fast one is an average that lags (Stable-Baselines3's `fps`
        since the start read 0.56x the counter when its first rollouts were slow). An index
        is not, once a second source agreed with its sum."""
        checks = self.checks.get(name, [])
        agreed = any(c.outcome == "agrees" for c in checks)
        over = any(c.outcome == "set aside" for c in checks) and not agreed
        series = self.series_of(name)
        if series.index is not None:
            return not agreed
        return not series.trusted or over

    def _why_aside(self, name: str) -> str:
        series = self.series_of(name)
        if series.not_a_count is not None:
            return f"not a count: {series.not_a_count}; no rate"
        if series.index is not None:
            return f"{series.index}, and no second source agrees with its sum: no rate"
        if series.kind == "ambiguous":
            return "its readings drop as often as they reach new highs (two running totals under one name?)"
        if series.undecided:
            return f"its readings dropped {series.drops}x without a restart: neither a running total nor increments yet"
        return "; ".join(f"read faster than {c.describe()}" for c in self.checks[name] if c.outcome == "set aside")

    def verdict(self, name: str, rates: dict[str, float]) -> str:
        """`passed` (every check agreed), `warned` (one differed), `failed` (set aside, and
        no counter passed), `few reports` (under two changes in the window: the rate is the
        probe's, over reports the window's edges cut), or `unchecked` (the program gave
        nothing to check it against)."""
        checks = self.checks.get(name, [])
        if name in self.doubted:
            return "unchecked"  # no source to hold it against agreed: its sum is no rate
        if self._set_aside(name):
            return "failed"
        if name not in rates:
            return "few reports"
        if not checks:
            return "unchecked"
        return "passed" if all(c.outcome == "agrees" for c in checks) else "warned"

    def provenance(self, name: str, rates: dict[str, float]) -> str:
        """Where a counted rate came from and what it was checked against, in one line:
        `env_step_per_s 26.1/s from `env_step` (pairs, stderr/stdout), a level, 412
        sightings; checks: printed it_per_s 25.9/s: 1.01x, agrees`."""
        series = self.series_of(name)
        rate = rates.get(name)
        where = series.reader + (f", {series.source}" if series.source != "output" else "")
        if rate is None:
            head = f"{name}_per_s (too few readings in the window)"
        elif series.kind == "value":
            head = f"{name}_per_s unknown (not a count)"
        elif name in self.doubted:
            head = f"{name}_per_s unknown (summed, {rate:.4g}/s: not a rate)"
        else:
            head = f"{name}_per_s {rate:.4g}/s"
        checks = self.checks.get(name, [])
        said = "; ".join(c.describe() for c in checks) if checks else "nothing to check it against"
        others = sum(1 for (n, slot) in self._series if n == name and slot != series.slot)
        also = f", {others} other report{'s' if others > 1 else ''} of it not counted" if others else ""
        return f"{head} from `{series.key}` ({where}), {series.describe()}{also}; checks: {said}"

    def recognised(self) -> str:
        """`table: counter total_timesteps x40, rate printed_fps x40, 12 values (approx_kl, ...)`
        per reader, plus the files read: why a rate is, or is not, there."""
        parts = []
        for reader, seen in sorted(self.by_reader.items()):
            order = {"counter": 0, "rate": 1, "clock": 2, "lap": 3}  # what the rate comes from first
            kept = [key for key in seen if not key.startswith("value ")]
            items = [f"{key} x{seen[key]}" for key in sorted(kept, key=lambda k: (order.get(k.split()[0], 4), k))]
            values = sorted(key.removeprefix("value ") for key in seen if key.startswith("value "))
            if values:
                shown = ", ".join(values[:SHOWN_VALUES]) + (", ..." if len(values) > SHOWN_VALUES else "")
                items.append(f"{len(values)} value{'s' if len(values) > 1 else ''} ({shown})")
            parts.append(f"{reader}: {', '.join(items)}")
        parts += [reader.describe() for reader in self.file_readers]
        if self.lines_not_progress:
            parts.append(f"{self.lines_not_progress} warning or error lines not read")
        return "; ".join(parts) or "nothing"

    def _nothing_counted(self) -> str:
        files = f"; {'; '.join(r.describe() for r in self.file_readers)}" if self.file_readers else ""
        return f"{NOTHING_COUNTED} in {self.lines_read} lines of output{files}: {NO_RATE}. {self._where_progress_is()}"

    def _no_rate(self, rates: dict[str, float]) -> str:
        """No counter gave a rate: every one was an index (or a value), and the cell says what
        to pass; or some had too few readings in the window (DEAP's 40 generations in 1.5 s,
        all of them in the warm-up), and the cell says that."""
        names = ", ".join(f"`{self.series_of(n).key}`" for n in self._grown)
        if any(n not in rates and not self._no_rate_from(n) for n in self._grown):
            return (
                f"{NO_RATE}: the counters read in {self.lines_read} lines of output ({names}) changed under twice "
                "in the measured window (the program ended during warm-up, or reports more rarely than the window "
                "is long); a longer run, or a longer --duration, gives them a rate"
            )
        return (
            f"{NO_RATE}: every counter read in {self.lines_read} lines of output ({names}) is an "
            f"index, not progress (see above). {self._where_progress_is()}"
        )

    @property
    def counters(self) -> list[str]:
        """The counters that grew, in the order they did."""
        return list(self._grown)

    def _where_progress_is(self) -> str:
        """The advice: the values that grew as ready --progress flags, then the forms there are."""
        forms = (
            "--progress 'After (?P<frames>\\d+) frames' (a regex with named groups), --progress-file 'runs/**' "
            '(TensorBoard event files or a CSV), or print JSON lines such as {"count": {"steps": 100}}'
        )
        grew = self.growing.advice()
        if grew:
            return f"{grew[0].upper()}{grew[1:]}. Or say where the program's progress is: {forms}"
        return f"Say where the program's progress is: {forms}"

    def _index_warning(self, name: str, rate: float) -> str:
        """An index's sum, refused: why it is an index, what its sum would read, what disagreed."""
        series = self.series_of(name)
        checks = self.checks.get(name, [])
        said = "; ".join(c.describe() for c in checks) if checks else "the program printed nothing to check it against"
        return (
            f"{name} (`{series.key}`) is not a counter to sum: {series.index}; summed, it would read {rate:.4g}/s, "
            f"and no second source agrees ({said}), so {name}_per_s is unknown and no rate rests on it"
        )


def _disagreement(name: str, rate: float, checks: list[Check]) -> str:
    """The warning for a counter whose checks did not all agree, naming every figure."""
    figures = "; ".join(f"its {c.source} {c.other:.4g}/s ({c.ratio:.2f}x)" for c in checks)
    said = f"{name} grew at {rate:.4g}/s in the measured window; {figures}"
    if any(c.outcome == "set aside" for c in checks):
        return (
            f"{said}: a counter read more than {SET_ASIDE:g}x faster than the program's own figure for the same thing "
            f"is misread (a running total summed, two series mixed), so {name}_per_s is not the headline"
        )
    if any(c.ratio < 1 for c in checks):
        return (
            f"{said}: a rate the program prints over part of the time (while collecting, or an average since the "
            f"start) reads higher than the harness's over the whole window; the harness judges by the counter"
        )
    return f"{said}: a rate printed as an average since the start hides drift and mixes warm-up in; the harness judges by the counter"


def _duplicate(reading: Reading, taken: list[Reading]) -> bool:
    """A name already taken on this line, or the same number under a key that holds the
    other's (`Total num frames: 12345`: sentences' `frames`, pairs' `Total num frames`). Two
    counters that merely show the same number (a bar's n and its postfix's `env_step`) are two."""
    for other in taken:
        if other.name == reading.name:
            return True
        if reading.kind == other.kind == "counter" and reading.value == other.value:
            mine, theirs = reading.key.lower(), other.key.lower()
            if not mine or not theirs or mine in theirs or theirs in mine:
                return True
    return False
