"""One counter's sightings (one name, one slot) turned into units of progress, with the
evidence of what kind of number the program prints.

A counter is printed either as a **level** (a running total: `env_step=11040`,
`total_envstep_count: 388`, tqdm's `1032/10000`), which only grows, or as **increments**
(`envstep_count: 99` for this report alone), small, bounded and up and down. A level is
never summed: it counts what it grew by since its highest sighting. A level that falls is a
restart (a bar starting its next epoch) only when it falls to near zero and then grows again
from there; a fall that is not (a redraw of another bar, the next report of another run
under the same name, a truncated line) is counted as no progress, and noted. A series
whose readings drop below the one before (not to near zero) twice without a restart, more
than twice as often as they reach new highs, is increments: from then on each reading counts in full
(the feed makes up for the readings before, within the measured window). One that drops as
often as it reaches new highs is neither (two running totals under one name, taking turns):
`ambiguous`, and the feed keeps it out of the headline.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

MAX_KEPT = 100_000  # readings kept per series (a bar redrawn 1,000 times a second for 100 s)
STALL_GAPS = 3  # no change for this many of its usual gaps at the window's end: a stall, counted
NEAR_ZERO = 0.10  # a fall to at most this share of the level (or to <= 1) may be a restart
SWITCH_AFTER = 2  # another report grew this often since the counted one last grew (and more in all)
STALE_S = 5.0  # ... and the counted one has not grown for this long: count the other
DROPS_FOR_A_VERDICT = 2  # drops (not to near zero) before a series is judged increments or ambiguous

SeriesKind = Literal["level", "increments", "ambiguous"]


@dataclass(frozen=True)
class Sighting:
    """One reading of a series: when, the number the program printed, the units the series
    had counted by then, and the probe's phase."""

    t: float
    value: float
    total: float
    phase: str


@dataclass(frozen=True)
class Span:
    """What a counter's rate over the window is taken over: from `t0` at `level0` to `t1` at
    `level1` (units counted), resting on the program's readings from `first` on."""

    t0: float
    level0: float
    t1: float
    level1: float
    first: Sighting

    @property
    def rate(self) -> float:
        return (self.level1 - self.level0) / (self.t1 - self.t0)


@dataclass
class Series:
    """The sightings of one counter in one slot (see harness.readers.protocol.Reading)."""

    name: str
    slot: str
    reader: str
    key: str
    source: str = "output"
    sightings: int = 0
    level: float | None = None  # the highest value of the current run
    low: float | None = None  # a fall to near zero, a restart once it grows again
    restarts: int = 0
    falls: int = 0  # readings under the level that were no restart: not counted
    drops: int = 0  # readings under the one before, not to near zero
    highs_after_drop: int = 0  # new highs reached after the first drop
    previous: float | None = None
    kind: SeriesKind = "level"
    grown: bool = False
    growths: int = 0  # readings that added units
    grew_at: list[float] = field(default_factory=list)  # when its last growths were
    # (phase, value, units counted for it): what an increments verdict recounts
    history: list[tuple[str, float, float]] = field(default_factory=list)
    points: list[Sighting] = field(default_factory=list)  # every reading: its rate, its clock check
    counted: float = 0.0

    def see(self, value: float, phase: str, t: float = 0.0) -> float:
        """A new reading at time `t`; the units of progress it adds."""
        self.sightings += 1
        was = self.kind
        units = self._units(value)
        if len(self.history) < MAX_KEPT:
            self.history.append((phase, value, units))
        if was != "increments" and self.kind == "increments":
            # from now on each report counts in full; the window's earlier reports too
            units += self.recount({"measure"} if phase == "measure" else {"warmup", "measure", "stopped"})
        if units > 0:
            self.grown = True
            self.growths += 1
            self.grew_at.append(t)
            del self.grew_at[:-SWITCH_AFTER]
        self.counted += units
        if len(self.points) < MAX_KEPT:
            self.points.append(Sighting(t, value, self.counted, phase))
        return units

    def window_rate(self, start: float | None = None, end: float | None = None) -> float | None:
        """Units per second over the measured window [start, end] (see window_span)."""
        span = self.window_span(start, end)
        return None if span is None else span.rate

    def window_span(self, start: float | None = None, end: float | None = None) -> Span | None:
        """The stretch a rate over the measured window [start, end] is taken over, as one
        reads a log by hand: between its first and last changes in the window (a report every
        10 s cut by the window's edges would be off by up to a report, and a redraw of an old
        number, tianshou's `env_step=256` until the next collection, is not when it was
        reached). A silence at an edge longer than STALL_GAPS of its usual gaps is no report
        pending but no progress (a trainer's update phase between collections): the window
        runs to that edge, the level interpolated at its start (from the reading before it,
        which the span then rests on) and held at its end. None with under two changes."""
        measured = [p for p in self.points if p.phase == "measure"]
        changes = [(a, b) for a, b in zip(self.points, self.points[1:], strict=False) if b.total > a.total]
        grew = [b for _, b in changes if b.phase == "measure"]
        if len(grew) < 2:
            if len(measured) >= 3 and measured[-1].t > measured[0].t:  # a stall, or one growth
                first, last = measured[0], measured[-1]
                return Span(first.t, first.total, last.t, last.total, first)
            return None
        gaps = sorted(b.t - a.t for a, b in zip(grew, grew[1:], strict=False))
        silence = STALL_GAPS * gaps[len(gaps) // 2]
        t0, level0, first = grew[0].t, grew[0].total, grew[0]
        before = [a for a, b in changes if b is grew[0]]
        if start is not None and t0 - start > silence and before and before[0].t < start:
            first = a = before[0]
            level0 = a.total + (grew[0].total - a.total) * (start - a.t) / (grew[0].t - a.t)
            t0 = start
        t1, level1 = grew[-1].t, grew[-1].total
        if end is not None and end - t1 > silence:
            t1 = end
        if t1 <= t0:
            return None
        return Span(t0, level0, t1, level1, first)

    def unmeasure(self) -> None:
        """The readings so far were not in the measured window: the probe measured while no
        counter had grown (its warm-up cap passed during the program's start-up), and the
        first growth restarted the warm-up. A bar at 0 printed then is where the program
        started, not a reading of the window (torchrl's SAC bar at `0/1000000 [00:00<?` made
        its clock check span the random-action phase before the window: 0.88x)."""
        self.points = [replace(p, phase="warmup") if p.phase == "measure" else p for p in self.points]
        self.history = [("warmup" if phase == "measure" else phase, v, u) for phase, v, u in self.history]

    def grew_since(self, t: float) -> int:
        """How many of its last SWITCH_AFTER growths came after `t`."""
        return sum(1 for when in self.grew_at if when > t)

    def _units(self, value: float) -> float:
        if self.kind == "increments":
            return max(value, 0.0)
        previous, self.previous = self.previous, value
        if self.level is None:  # the first sighting: where the program is, not progress
            self.level = value
            return 0.0
        near_zero = value <= max(NEAR_ZERO * self.level, 1.0)
        if previous is not None and value < previous and not near_zero:
            self._dropped()  # down from the last reading, not to zero: evidence of increments
        if value >= self.level:
            units = value - self.level
            self.level = value
            if self.low is not None:  # it fell and came back: another series or a glitch, not a restart
                self.low = None
                self.falls += 1
            if units > 0 and self.drops:
                self.highs_after_drop += 1
            return units
        if self.low is not None and self.low < value:  # grown again from near zero: a new run
            self.restarts += 1
            self.level, self.low = value, None
            return value
        if near_zero:
            self.low = value if self.low is None else min(self.low, value)
        else:
            self.falls += 1
        return 0.0

    def _dropped(self) -> None:
        self.drops += 1
        if self.drops < DROPS_FOR_A_VERDICT or self.restarts:
            return
        if self.drops > 2 * self.highs_after_drop:  # mostly down and up again, rarely a new high
            self.kind = "increments"
        elif self.drops >= DROPS_FOR_A_VERDICT + 1:  # new highs as often as drops: two totals taking turns
            self.kind = "ambiguous"

    @property
    def undecided(self) -> bool:
        """A running total that dropped below an earlier reading, not to zero: no longer
        plainly a level, not yet judged increments. Its count is not evidence for or
        against another counter's."""
        return self.kind == "level" and self.drops > 0

    @property
    def trusted(self) -> bool:
        """A plain level (drops aside, restarts allowed) or judged increments."""
        return self.kind == "increments" or (self.kind == "level" and not self.undecided)

    def recount(self, phases: set[str]) -> float:
        """Once judged increments: the units the readings taken in `phases` add as increments,
        less what they were counted as before (so the window's count is as if the verdict had
        come first)."""
        return sum(value - counted for phase, value, counted in self.history if phase in phases)

    def describe(self) -> str:
        """`a level, 412 sightings, 2 restarts` for the record's provenance."""
        what = {"level": "a level", "increments": "increments per report", "ambiguous": "ambiguous"}[self.kind]
        notes = [f"{self.sightings} sightings"]
        if self.restarts:
            notes.append(f"{self.restarts} restart{'s' if self.restarts > 1 else ''}")
        if self.falls and self.kind == "level":
            notes.append(f"{self.falls} fall{'s' if self.falls > 1 else ''} without a restart, not counted")
        if self.undecided:
            notes.append(f"dropped {self.drops}x: not yet judged a running total or increments")
        return f"{what}, {', '.join(notes)}"
