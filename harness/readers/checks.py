"""Every counted rate held against every other source of the same thing the program gave.

A counter the harness found in a program's output is a guess: a word that looked like a
unit, a number that looked like a running total. Each guess is checked, at the end of the
cell, against what else the program said about the same progress:

- a rate it printed of the same unit (tqdm's `it/s` beside its own `n`, `fps` beside
  `total_timesteps`, `avg_envstep_per_sec` beside `total_envstep_count`), preferring one of
  the same bar or line;
- its own clock (tqdm's elapsed `[00:12<`, a logged `time_elapsed`) on the same report: the
  counter's growth per second of the program's clock; or, where it prints how long each unit
  took (neat-python's `Generation time: 3.681 sec` beside `Running generation 4`), those
  seconds summed into its clock, when each lap is one unit of the counter (`lap_clock`);
- other counters of the same thing (`env_step` and `total_timesteps` both count environment
  steps).

Within 10 %: agreed. Beyond: a warning naming both figures. A counter read more than 2x
*faster* than another source of the same thing, and agreeing with none, is set aside from
the headline: a counter cannot progress faster than the program's own measure of it, and
reading it too fast is how a reader fails (a running total summed, two series mixed). One
source that agrees (the program's own numbers and clock above all) outweighs a printed
rate averaged since the start, which lags a program that sped up. Read more than 2x *slower*,
the counter keeps its place with the warning: a printed rate may cover only part of the
time (DI-engine's `avg_envstep_per_sec` is over the collection phase alone), and the
harness's rate is over the whole window.
"""

from __future__ import annotations

import bisect
import statistics
from dataclasses import dataclass
from typing import Literal

from harness.readers.series import Sighting
from harness.readers.words import family, rate_unit, unit_of

AGREE = 0.10  # |ratio - 1| within this: the two agree
SET_ASIDE = 2.0  # counted more than this many times another source: not the headline
CLOCK_MIN_S = 10.0  # seconds of the program's clock a check needs (tqdm prints whole seconds)
SAME_REPORT_S = 0.05  # a clock printed this close to a counter's sighting is of the same report
_UNITLESS_STEP_RATES = {"fps", "sps"}  # `fps`, `SPS`: frames or steps per second, unit unsaid
_STEP_LIKE = {"frames", "samples", "timesteps", "steps", "interactions", "transitions"}

Outcome = Literal["agrees", "differs", "set aside"]


@dataclass(frozen=True)
class Check:
    """One source held against a counter's rate: `ratio` is counted / other."""

    source: str  # `printed it_per_s (same bar)`, `the program's clock`, `counter total_timesteps`
    other: float  # the other source's rate, per second
    ratio: float

    @property
    def outcome(self) -> Outcome:
        if abs(self.ratio - 1.0) <= AGREE:
            return "agrees"
        return "set aside" if self.ratio > SET_ASIDE else "differs"

    def describe(self) -> str:
        return f"{self.source} {self.other:.4g}/s: {self.ratio:.2f}x, {self.outcome}"


def printed_median(points: list[tuple[float, float, str, str]]) -> float:
    """A printed rate's median over the measured window (all its readings if none fell in it)."""
    measured = [v for _, v, phase, _ in points if phase == "measure"] or [v for _, v, _, _ in points]
    return statistics.median(measured)


def paired_printed(counter: str, slot: str, printed: dict[str, list[tuple[float, float, str, str]]]) -> list[str]:
    """The printed rates of the same unit as `counter` (`it/s` for `iterations`,
    `avg_envstep_per_sec` for `total_envstep_count`, unitless `fps` for a step-like counter);
    those of the counter's own slot (its bar) when there are any."""
    unit = unit_of(counter)
    same = [
        p
        for p in printed
        if rate_unit(p) == unit
        or family(rate_unit(p)) == family(counter)
        or (rate_unit(p) in _UNITLESS_STEP_RATES and unit in _STEP_LIKE)
    ]
    own_slot = [p for p in same if any(s == slot for _, _, _, s in printed[p])]
    return own_slot or same


def clock_rate(
    sightings: list[Sighting], clocks: list[tuple[float, float]], increments: bool = False, since: float | None = None
) -> tuple[float, float] | None:
    """The counter's growth by the program's own numbers and its own clock over the measured
    window: (per second, seconds of its clock), from the readings where its number changed,
    each with a clock reading of the same report (tqdm's `[00:12<`, a `time_elapsed` row of the
    same table). `since`: the harness's rate rests on the readings from then on, one before the
    window among them when the window opened in a silence (Stable-Baselines3's own 18 s stall):
    the clock is read over the same stretch. Nothing of the
    harness's is in it: neither its accounting (a summed running total would show against it)
    nor its clock (lines that reach it in bursts would). A stretch where the number or the
    clock goes back (a new bar) is left out. None with under CLOCK_MIN_S of clock."""
    if not clocks:
        return None
    clocks = sorted(clocks)
    times = [t for t, _ in clocks]
    paired: list[tuple[float, float]] = []  # (clock seconds, the program's number)
    for before, s in zip([None, *sightings], sightings, strict=False):
        if s.phase == "stopped" or (s.phase != "measure" and (since is None or s.t < since)):
            continue
        if not increments and before is not None and s.value == before.value:
            continue  # a redraw of a number reached earlier (tianshou's env_step lags its bar)
        i = bisect.bisect_left(times, s.t)
        near = min((k for k in (i - 1, i) if 0 <= k < len(times)), key=lambda k: abs(times[k] - s.t))
        if abs(times[near] - s.t) <= SAME_REPORT_S:
            paired.append((clocks[near][1], s.value))
    units = seconds = 0.0
    stretch = [0.0, 0.0]  # units, seconds of the stretch so far
    for (e0, v0), (e1, v1) in zip(paired, paired[1:], strict=False):
        if e1 >= e0 and (increments or v1 >= v0):
            stretch[0] += v1 if increments else v1 - v0
            stretch[1] += e1 - e0
            continue
        units, seconds = _close(stretch, units, seconds)
        stretch = [0.0, 0.0]
    units, seconds = _close(stretch, units, seconds)
    if seconds < CLOCK_MIN_S:
        return None
    return units / seconds, seconds


def _close(stretch: list[float], units: float, seconds: float) -> tuple[float, float]:
    """A stretch counts only if its clock spans CLOCK_MIN_S: tqdm prints whole seconds, so a
    bar of 1.9 s reads as 1 s, and many short bars (an epoch a second) would read twice as fast."""
    if stretch[1] >= CLOCK_MIN_S:
        return units + stretch[0], seconds + stretch[1]
    return units, seconds


def lap_clock(laps: list[tuple[float, float]], sightings: list[Sighting]) -> list[tuple[float, float]] | None:
    """The program's own clock from the seconds it printed for each unit of a counter
    (`laps`: (t, seconds), neat-python's `Generation time: 3.681 sec`), summed: (t, elapsed)
    for clock_rate. Only when each lap is one unit: between every two laps with a reading of
    the counter on the same report, the counter grew by exactly one per lap (a `step_time`
    printed every 100 steps is the time of one step, not of the report, and is no clock).
    None otherwise, or with under two such reports."""
    if len(laps) < 2 or not sightings:
        return None
    times = [s.t for s in sightings]
    clock: list[tuple[float, float]] = []
    paired: list[tuple[int, float]] = []  # (laps summed so far, the counter on the same report)
    elapsed = 0.0
    for k, (t, seconds) in enumerate(laps, start=1):
        elapsed += seconds
        clock.append((t, elapsed))
        near = sightings[bisect.bisect_left(times, t - SAME_REPORT_S) : bisect.bisect_right(times, t + SAME_REPORT_S)]
        if near:
            paired.append((k, near[-1].value))
    steps = [(v1 - v0, k1 - k0) for (k0, v0), (k1, v1) in zip(paired, paired[1:], strict=False)]
    if not steps or any(grew != laps_between for grew, laps_between in steps):
        return None
    return clock
