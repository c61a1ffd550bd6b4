"""A watched program's progress read from its output as a sweep cell reads it: the same
readers, Feed and Probe (harness.readers, harness.cell.probe), with the cell's automatic
warm-up after the first counter grows, so `harness watch` and `harness sweep` give one
program the same headline, checked the same way.

Before, watch read only printed `<n> <unit>/s` rates, and the six programs of
docs/records/2026-11-26-blind-programs.md printed their progress otherwise (gensim's
`EPOCH 3: ...`, neat-python's `Running generation 4`, EvoTorch's `total_interaction_count :
60000`, rl_games' `frames: 256`): every watch there ended with no throughput. The log
monitor (harness.monitors.logrates) hands every line here as it arrives; at the end the
counters' rates (`<counter>_per_s`, their drift), the headline (`headline_rate`,
`headline_check`, `headline_provenance`), what was read (`progress_*`) and the printed
rates the `<n> <unit>/s` pattern did not already give join the watch's record. The
counters' window is the probe's: `progress_warmup_s` of it went to warm-up and
`progress_measure_s` were measured, inside the watch's `measure_s`. Where no counter gave a
finite rate but the log printed rates (a short watch that ended in the counters' warm-up),
the printed rates stay the watch's throughput: only `progress_*` is added.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from harness.cell.probe import Probe
from harness.cell.steady import DEFAULT_CAP_S, Steady
from harness.program.launch import handle_line
from harness.readers import Feed, line_readers
from harness.readers.feed import NO_RATE, NOTHING_COUNTED
from harness.readers.growing import Growing

# what a sweep cell's record says of its progress, kept as they are
_KEPT = (
    "headline_rate",
    "headline_check",
    "headline_provenance",
    "progress_provenance",
    "progress_set_aside",
    "progress_advice",
    "progress_recognised",
    "progress_lines",
    "progress_lines_recognised",
    "progress_lines_not_progress",
)
# the probe's window, renamed: the watch's own `measure_s` is the whole watch
_WINDOW = {
    "warmup_s": "progress_warmup_s",
    "warmup_reason": "progress_warmup_reason",
    "measure_s": "progress_measure_s",
}


class _QuietProbe(Probe):
    """A probe whose warnings are kept, not printed: the watch prints them with its own."""

    def warn(self, message: str) -> None:
        self._warnings.append(message)


class LogProgress:
    """The readers over one program's output lines; `finish` once, then `metrics` and `warnings`."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.probe = _QuietProbe(duration_s=None, steady=Steady.for_window(0.0, DEFAULT_CAP_S, None), clock=clock)
        self.feed = Feed(self.probe, line_readers(), clock=clock)
        self.metrics: dict[str, Any] = {}
        self.warnings: list[str] = []  # the feed's, less its "no throughput" (the watch says it its own way)
        self.finished = False

    @property
    def growing(self) -> Growing:
        """The values that grew though no reader took them for progress (the `--progress` choices)."""
        return self.feed.growing

    def line(self, text: str) -> None:
        handle_line(self.probe, self.feed, text, echo=False)
        self.probe.should_stop()  # the warm-up is judged as lines come, as in a cell

    def tick(self) -> None:
        """Between lines: the warm-up may end in a quiet stretch too."""
        self.probe.should_stop()

    def finish(self, printed_already: set[str] = frozenset()) -> None:
        """Close the window. `printed_already`: metric names the log monitor gave printed rates
        (`log_words_per_s`): a printed rate the readers found under the same name is left out."""
        if self.finished:
            return
        self.finished = True
        self.feed.finish()
        found = self.probe.finish()
        kept: dict[str, Any] = {k: found[k] for k in _KEPT if k in found}
        kept |= {new: found[old] for old, new in _WINDOW.items() if old in found}
        for name in self.feed.counters:
            kept |= {k: v for k, v in found.items() if k == f"{name}_per_s" or k.startswith(f"{name}_per_s_drift_")}
        for name, value in found.items():
            if name.startswith("printed_") and not _log_names(name) & printed_already:
                kept[name] = value
        self.metrics = kept
        if self.rate() is None and printed_already:
            # no counter gave a rate (a short watch ended in the counters' warm-up) but the log
            # printed rates: those stay the watch's throughput; what was read is still said
            self.metrics = {k: v for k, v in kept.items() if k.startswith("progress_") or k.startswith("printed_")}
        self.warnings = [w for w in self.probe.warnings if not w.startswith((NOTHING_COUNTED, NO_RATE))]

    def rate(self) -> float | None:
        """The headline's rate, when there is a finite one."""
        headline = self.metrics.get("headline_rate")
        value = self.metrics.get(headline) if isinstance(headline, str) else None
        return value if isinstance(value, float) and math.isfinite(value) else None


def _log_names(printed: str) -> set[str]:
    """The log monitor's names for the same printed rate: `printed_words_per_s` ->
    `log_words_per_s`, `printed_games_per_s` -> `log_games_per_min` too (the readers give
    every rate per second); `printed_x_per_s_vs_counted` goes with its rate."""
    stem = "log_" + printed.removeprefix("printed_").removesuffix("_vs_counted")
    return {stem, stem.removesuffix("_per_s") + "_per_min"}
