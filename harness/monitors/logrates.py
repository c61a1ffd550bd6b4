"""Rates a program already prints, read from its log as it runs: `Iteration 4500 (33.4
iter/s)`, `12 games, 68.3 games/min`, tqdm's `33.40it/s`.

A thread follows the log file(s) (an attached program's stdout and stderr) and stamps each
new line with the time it was read, so the rates become a series on the same clock as every
other monitor. A program the harness starts is read from its output as it arrives instead
(`take`, handed each chunk by the pipe that writes its capped log): the rates go on past the
log's cap, stamped on arrival. Every match of the default pattern is a rate named
by its unit: `log_<unit>_per_s` (per second) or `log_<unit>_per_min` (per minute; per hour
becomes per minute); the pattern is the readers' (harness.readers.sentences.PER_UNIT), so
`231646 effective words/s` is `log_effective_words_per_s`. A user pattern (`--rate-regex`)
needs a group named `value` (or exactly one group); groups `unit` and `per` name it the same
way, else it is `log_rate`.

Every line also goes through the progress readers as a sweep cell's would
(harness.monitors.logprogress): the counters the program prints (`EPOCH 3`, `frames: 256`)
give the record its `<counter>_per_s` and headline, with their checks. A log that gave
neither a rate line nor a counter's rate gives no throughput, and `silence` says so, naming
the values that grew with the `harness sweep --progress ...` that would count them.

Metrics per rate: its median over the run, its drift (`<rate>_drift_pct_per_min` and
`_drift_se`, the least-squares slope as in harness.model.stats, so the DRIFT rule reads a log
like a probe's counter; `_drift_span_s`, the seconds the rate lines cover, less than the
window when the program logs its first rate late, after importing torch for instance), `<rate>_points`; and log_lines, log_rate_lines.
"""

from __future__ import annotations

import codecs
import re
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.model.stats import drift_pct_per_min
from harness.monitors.base import MonitorResult, SamplingMonitor
from harness.monitors.logprogress import LogProgress
from harness.readers.sentences import PER_UNIT

DEFAULT_PATTERN = PER_UNIT.pattern  # `33.4 iter/s`, `68.3 games/min`, `231646 effective words/s`
PERIOD_S = 0.2
_PER = {"s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s"}
_PER.update({k: "min" for k in ("min", "mins", "minute", "minutes")})
_PER.update({k: "h" for k in ("h", "hr", "hour", "hours")})


def compile_pattern(text: str | None) -> re.Pattern[str] | None:
    """A user's --rate-regex, checked: it must compile and say which group is the value."""
    if text is None:
        return None
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise UserError(f"--rate-regex {text!r}: not a valid regular expression ({exc})") from None
    if "value" not in pattern.groupindex and pattern.groups != 1:
        raise UserError(
            f"--rate-regex {text!r}: name the number's group (?P<value>...) or use exactly one group; "
            "optional groups (?P<unit>...) and (?P<per>s|min) name the rate"
        )
    return pattern


def rate_name(unit: str | None, per: str | None) -> tuple[str, float]:
    """The metric name for a unit and period, and the factor that converts the value to it."""
    if not unit:
        return "log_rate", 1.0
    clean = re.sub(r"[^a-z0-9]+", "_", unit.lower()).strip("_") or "rate"
    period = _PER.get((per or "s").lower(), "s")
    if period == "h":
        return f"log_{clean}_per_min", 1.0 / 60.0
    return f"log_{clean}_per_{period}", 1.0


def parse_line(line: str, patterns: list[re.Pattern[str]]) -> list[tuple[str, float]]:
    """(name, value) of every rate in one log line."""
    found = []
    for pattern in patterns:
        for match in pattern.finditer(line):
            groups = match.groupdict()
            raw = groups.get("value") if "value" in groups else match.group(1)
            try:
                value = float(raw.replace(",", ""))  # `12,345 steps/s`
            except (TypeError, ValueError):
                continue
            name, factor = rate_name(groups.get("unit"), groups.get("per"))
            found.append((name, value * factor))
    return found


class LogRatesMonitor(SamplingMonitor):
    """Follows log files from their current end (or start), or output handed to `take`, and
    parses rate lines."""

    name = "log"

    def __init__(
        self,
        paths: list[Path],
        user_pattern: re.Pattern[str] | None = None,
        from_start: bool = True,
        fed: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`clock`: what the progress readers stamp each line with (a replay's own time in tests)."""
        super().__init__(PERIOD_S)
        self.paths = paths
        self.fed = fed  # output comes through `take`
        self.patterns = [user_pattern] if user_pattern is not None else [re.compile(DEFAULT_PATTERN)]
        self.from_start = from_start
        self.points: list[tuple[float, str, float]] = []
        self.lines = 0
        self.rate_lines = 0
        self._offsets: dict[Path, int] = {}
        self._partial: dict[Path | None, str] = {}  # None: the output handed to `take`
        self._decoders: dict[Path | None, codecs.IncrementalDecoder] = {}  # a character cut between reads
        self._lock = threading.Lock()  # `take` runs on the log's thread
        self._closed = False
        self._take_cpu_s = 0.0  # parsing in `take`, on the log's thread
        self.progress = LogProgress(clock)  # the program's counters, read as a sweep cell reads them

    def begin(self, root_pid: int) -> bool:
        for path in self.paths:
            self._offsets[path] = 0 if self.from_start or not path.exists() else path.stat().st_size
        return True

    def sample(self) -> None:
        self.read_once()
        with self._lock:
            if not self._closed:
                self.progress.tick()

    def finish(self) -> None:
        self.read_once(final=True)  # the last line, whether or not it ended
        with self._lock:
            self._parse(None, b"", final=True)
            self._closed = True  # output after the window is not the window's
            self.progress.finish(printed_already={name for _, name, _ in self.points})

    def take(self, data: bytes) -> None:
        """A chunk of the program's output, as it arrives (its parsing counts in the
        monitor's own CPU like a sample's)."""
        t0 = time.thread_time()
        with self._lock:
            if not self._closed:
                self._parse(None, data, final=False)
            self._take_cpu_s += time.thread_time() - t0

    def read_once(self, final: bool = False) -> None:
        wall = time.time()
        for path in self.paths:
            try:
                with open(path, "rb") as fh:
                    fh.seek(self._offsets.get(path, 0))
                    chunk = fh.read()
            except OSError:
                continue
            self._offsets[path] = self._offsets.get(path, 0) + len(chunk)
            with self._lock:
                self._parse(path, chunk, final, wall)

    def _parse(self, source: Path | None, chunk: bytes, final: bool, wall: float | None = None) -> None:
        wall = time.time() if wall is None else wall
        decoder = self._decoders.setdefault(source, codecs.getincrementaldecoder("utf-8")(errors="replace"))
        text = self._partial.pop(source, "") + decoder.decode(chunk, final=final)
        lines = text.replace("\r", "\n").split("\n")
        if not final:
            self._partial[source] = lines.pop()  # an unfinished line waits for its end
        for line in lines:
            if not line.strip():
                continue
            self.lines += 1
            found = parse_line(line, self.patterns)
            if found:
                self.rate_lines += 1
                self.points += [(wall, name, value) for name, value in found]
            self.progress.line(line)

    def silence(self, command: str) -> str | None:
        """The warning for a log that gave no throughput, neither a printed rate nor a
        counter's rate: why, and what to pass (None when a rate was read, or no log was
        followed). `command`: the program's, for the flags to paste."""
        if self.rate_lines or (not self.paths and not self.fed) or self.progress.rate() is not None:
            return None
        shape = "the --rate-regex given" if self.patterns[0].pattern != DEFAULT_PATTERN else "`<n> <unit>/s`"
        counters = self.progress.feed.counters
        if counters:
            keys = ", ".join(f"`{self.progress.feed.series_of(n).key}`" for n in counters)
            why = f"the counters it printed ({keys}) gave no rate (progress_provenance says why)"
        else:
            why = "no progress counter was recognised"
        said = [f"no throughput: none of its {self.lines} lines of output held a rate ({shape}), and {why}"]
        for grown in self.progress.growing.candidates("value")[:3]:
            said.append(
                f"`{grown.key}` grew ({grown.first:g} -> {grown.last:g}): `harness sweep --duration 60 {grown.choice()} -- {command}` counts it"
            )
        said.append(
            "a rate printed in another shape: --rate-regex '(?P<value>[\\d.]+) samples/s' (a group named value)"
        )
        return "; ".join(said)

    def result(self) -> MonitorResult:
        if not self.paths and not self.fed:
            return MonitorResult(metrics={}, series=[])  # nothing to follow (a suite reads its own output)
        metrics: dict[str, Any] = {"log_lines": self.lines, "log_rate_lines": self.rate_lines}
        by_name: dict[str, list[tuple[float, float]]] = {}
        for wall, name, value in self.points:
            by_name.setdefault(name, []).append((wall, value))
        for name, points in sorted(by_name.items()):
            values = [v for _, v in points]
            metrics[name] = statistics.median(values)
            metrics[f"{name}_points"] = len(values)
            drift = drift_pct_per_min([t - points[0][0] for t, _ in points], values) if len(points) >= 10 else None
            if drift is not None:
                metrics[f"{name}_drift_pct_per_min"], metrics[f"{name}_drift_se"], metrics[f"{name}_drift_dof"] = drift
                # the time the rates cover: each line's rate is over the gap before it
                gap = statistics.median(b[0] - a[0] for a, b in zip(points, points[1:], strict=False))
                metrics[f"{name}_drift_span_s"] = points[-1][0] - points[0][0] + gap
        metrics.update(self.progress.metrics)
        metrics["log_monitor_cpu_s"] = self.own_cpu_s + self._take_cpu_s
        return MonitorResult(metrics=metrics, series=list(self.points))
