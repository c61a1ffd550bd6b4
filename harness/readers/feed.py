"""Readings into probe calls: counters as counts, values as values, printed rates kept aside.

A monotone counter's new value becomes `probe.count(name, new - last)`, so the probe's
windowed rate, automatic warm-up, drift and A/B slices read a program's own progress as
they read a suite's. A counter counts once it has grown (a hyperparameter printed once,
`n_steps=32`, never does); the first counter to grow restarts the probe's warm-up, so a
program's start-up (imports, environments, workers) is left out of its warm-up. A counter
that goes back (a progress bar restarting each epoch) starts a new run of it: its new
value counts in full. The finest counter is declared the headline (`probe.declare_rate`).

A logged value (a loss, an episode return) is recorded from its second sighting on: one
said once is configuration, not a series. The program's own printed rate (`fps`, `it/s`) is kept as `printed_<name>`, its median over
the measured window, and held against the counter of the same unit: `fps = steps /
time_elapsed` is a running average since the start, which hides drift and mixes warm-up
into the window, so a disagreement beyond DISAGREE is said in a warning and
`printed_<name>_vs_counted` (printed / counted).

Within one line a name, or a counter's value, is taken once: the first reader that finds it
wins (`Total num frames: 12345` is one counter, not two).
"""

from __future__ import annotations

import re
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from harness.readers.protocol import FileReader, LineReader, Reading
from harness.readers.words import rank, unit_of

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # colours and cursor moves of loggers and bars
SHOWN_VALUES = 4  # value names listed in progress_recognised, of however many
DISAGREE = 0.10  # |printed / counted - 1| beyond this is reported
_STEP_LIKE = {"frames", "samples", "timesteps", "steps", "transitions"}
_FPS_LIKE = {"fps", "sps", "steps_per_second", "samples_per_second", "frames_per_second"}


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
        self.by_reader: dict[str, Counter[str]] = defaultdict(Counter)  # reader -> "kind name" -> readings
        self._last: dict[str, float] = {}
        self._grown: list[str] = []  # counters seen to grow, in the order they did
        self._values_seen: set[str] = set()
        self._source: dict[str, str] = {}  # counter -> where it is read from (the output, a file reader)
        self._counted: dict[str, list[tuple[float, float, str]]] = defaultdict(list)  # (t, total, phase)
        self._totals: dict[str, float] = defaultdict(float)
        self._printed: dict[str, list[tuple[float, str]]] = defaultdict(list)  # (value, phase)

    # ------------------------------------------------------------------ input
    def line(self, text: str) -> bool:
        """One line of the program's output; True when some reader recognised it."""
        self.lines_read += 1
        if "\x1b" in text:
            text = _ANSI.sub("", text)
        taken: list[Reading] = []
        for reader in self.line_readers:
            fresh = [r for r in reader.read(text) if not _duplicate(r, taken)]
            for reading in fresh:
                self.by_reader[reader.name][f"{reading.kind} {reading.name}"] += 1
            taken += fresh
            if fresh and getattr(reader, "exclusive", False):
                break
        if taken:
            self.lines_recognised += 1
            self.apply(taken)
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

    def apply(self, readings: Sequence[Reading], source: str = "output") -> None:
        now = self.clock()
        phase = self.probe.current_phase
        for reading in readings:
            if reading.kind == "counter":
                # a counter is read from one source: CleanRL prints global_step and writes it as
                # its event files' step, at other moments; mixed, the two would look like restarts
                if self._source.setdefault(reading.name, source) == source:
                    self._count(reading, now, phase)
            elif reading.kind == "rate":
                self._printed[reading.name].append((reading.value, phase))
            else:
                target = self.probe.target
                if target is not None and target.metric == reading.name:
                    self.probe.quality(reading.name, reading.value)
                elif reading.name in self._values_seen:
                    self.probe.set(reading.name, reading.value)
                else:  # a value said once is configuration (Sample Factory prints ~150 at start)
                    self._values_seen.add(reading.name)

    def _count(self, reading: Reading, now: float, phase: str) -> None:
        """A counter counts from its second value on, once it has grown: a number a counter's
        word labels once (`n_steps=32` in a printed config) is not progress."""
        last = self._last.get(reading.name)
        self._last[reading.name] = reading.value
        if last is None:
            return
        delta = reading.value - last if reading.value >= last else reading.value
        if reading.name not in self._grown:
            if delta <= 0:
                return
            self._grown.append(reading.name)
            if len(self._grown) == 1 and self.probe.current_phase != "stopped":
                self.probe.phase("warmup")  # the program's start-up (imports, envs) is not its warm-up
        self._totals[reading.name] += delta
        self._counted[reading.name].append((now, self._totals[reading.name], phase))
        if delta:
            self.probe.count(reading.name, delta)
        self._choose_headline()

    def _choose_headline(self) -> None:
        if self.fixed_headline is not None:
            best = self.fixed_headline if self.fixed_headline in self._grown else None
        else:
            best = min(self._grown, key=lambda name: (rank(name), self._grown.index(name)))
        if best is not None and best != self.headline:
            self.headline = best
            self.probe.declare_rate(best)

    # ------------------------------------------------------------------ output
    def finish(self) -> None:
        """Printed rates and their agreement with the counters, and what was recognised."""
        self.poll_files()
        for name, points in sorted(self._printed.items()):
            measured = [v for v, phase in points if phase == "measure"] or [v for v, _ in points]
            printed = statistics.median(measured)
            self.probe.set(name, printed)
            self._compare(name, printed)
        self.probe.set("progress_lines", self.lines_read)
        self.probe.set("progress_lines_recognised", self.lines_recognised)
        self.probe.set("progress_recognised", self.recognised())
        if not self._grown:
            self.probe.warn(self._nothing_counted())

    def _compare(self, printed_name: str, printed: float) -> None:
        counter = self._pair(printed_name)
        counted = self._window_rate(counter) if counter else None
        if counter is None or counted is None or counted <= 0:
            return
        ratio = printed / counted
        self.probe.set(f"{printed_name}_vs_counted", ratio)
        if abs(ratio - 1.0) > DISAGREE:
            self.probe.warn(
                f"the program prints {printed_name.removeprefix('printed_')} {printed:.4g} (median over the measured "
                f"window) but {counter} grew at {counted:.4g}/s in the same window ({ratio:.2f}x): a rate printed as "
                "an average since the start hides drift and mixes warm-up in; the harness judges by the counter "
                f"({counter}_per_s)"
            )

    def _pair(self, printed_name: str) -> str | None:
        """The counter a printed rate measures: the one of its unit (`iter/s` <-> `iterations`),
        or for a unitless frame rate (`fps`, `SPS`) the headline when it counts steps or frames."""
        stem = printed_name.removeprefix("printed_")
        unit = unit_of(stem.removesuffix("_per_s"))
        same = [c for c in self._grown if unit_of(c) == unit]
        if same:
            return min(same, key=rank)
        if stem in _FPS_LIKE and self.headline and unit_of(self.headline) in _STEP_LIKE:
            return self.headline
        return None

    def _window_rate(self, counter: str) -> float | None:
        points = [(t, total) for t, total, phase in self._counted[counter] if phase == "measure"]
        if len(points) < 3 or points[-1][0] <= points[0][0]:
            return None
        return (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0])

    def recognised(self) -> str:
        """`table: counter total_timesteps x40, rate printed_fps x40, 12 values (approx_kl, ...)`
        per reader, plus the files read: why a rate is, or is not, there."""
        parts = []
        for reader, seen in sorted(self.by_reader.items()):
            items = [f"{key} x{n}" for key, n in sorted(seen.items()) if not key.startswith("value ")]
            values = sorted(key.removeprefix("value ") for key in seen if key.startswith("value "))
            if values:
                shown = ", ".join(values[:SHOWN_VALUES]) + (", ..." if len(values) > SHOWN_VALUES else "")
                items.append(f"{len(values)} value{'s' if len(values) > 1 else ''} ({shown})")
            parts.append(f"{reader}: {', '.join(items)}")
        parts += [reader.describe() for reader in self.file_readers]
        return "; ".join(parts) or "nothing"

    def _nothing_counted(self) -> str:
        files = f"; {'; '.join(r.describe() for r in self.file_readers)}" if self.file_readers else ""
        return (
            f"no progress counter recognised in {self.lines_read} lines of output{files}: no throughput can be "
            "computed. Say where the program's progress is: --progress 'After (?P<frames>\\d+) frames' (a regex "
            "with named groups), --progress-file 'runs/**' (TensorBoard event files or a CSV), or print JSON "
            'lines such as {"count": {"steps": 100}}'
        )


def _duplicate(reading: Reading, taken: list[Reading]) -> bool:
    for other in taken:
        if other.name == reading.name:
            return True
        if reading.kind == other.kind == "counter" and reading.value == other.value:
            return True
    return False
