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

Some numbers under a counter's word are no count at all: a **value** (`value`, with the
reason in `not_a_count`) is a series that read a negative number (a count never is: EvoTorch's
`pop_best_eval : -969.14`, a fitness), or one whose readings fall and rise like increments but
are not whole numbers (a score per report; an amount of things per report is a whole count).
The feed reads such a series as a logged value from then on, and no rate rests on it.

Some numbers under a counter's word count nothing the window can be rated by: an index
within a unit of work (a move within a game, an evaluation's `episode 0..9`, a simulated
game's number within one move's search) restarts at every unit, and several workers' indices
interleaved drop and rise like increments. A series is judged an **index** (`index`, with
the evidence, in words) when it

- restarts (a fall to near zero that grows again) CYCLES_FOR_AN_INDEX times or more, or
  once inside the measured window, and is not a progress bar's `n` of its total (a bar per
  epoch restarts by design; its own rate and clock check it);
- was read from lines of several processes, as a runtime's prefix names them (Ray's
  `(SelfPlayWorker pid=16590)`: each worker's own number, not the program's total), or from
  a line that stands for several processes' lines (Ray's `[repeated 2x across cluster]`:
  the number is the last of them, one worker's among several);
- has the shape of increments, but its readings are mostly an earlier reading plus one
  (SUCCESSOR_SHARE of them, one of the last RECENT readings): numbers that count up one at
  a time, per worker, are indices, never amounts;
- has the shape of increments, but arrives in bursts (BURST_SHARE of its readings within
  BURST_S of the one before): a program reports an amount once per report, on its own
  clock, not hundreds in an instant.

What such a series counts is kept (to be held against the program's other sources), but
the feed sums none of it into a rate unless a second source agrees (harness.readers.feed).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from typing import Literal

MAX_KEPT = 100_000  # readings kept per series (a bar redrawn 1,000 times a second for 100 s)
STALL_GAPS = 3  # no change for this many of its usual gaps at the window's end: a stall, counted
NEAR_ZERO = 0.10  # a fall to at most this share of the level (or to <= 1) may be a restart
SWITCH_AFTER = 2  # another report grew this often since the counted one last grew (and more in all)
STALE_S = 5.0  # ... and the counted one has not grown for this long: count the other
DROPS_FOR_A_VERDICT = 2  # drops (not to near zero) before a series is judged increments or ambiguous
CYCLES_FOR_AN_INDEX = 2  # restarts of a series that is no bar: an index within a unit of work
RECENT = 4  # readings an index's next one may follow (one per worker taking turns)
SUCCESSOR_SHARE = 0.5  # readings one more than a recent one: counting up, not amounts
BURST_S = 0.005  # readings this close to the one before arrived in one burst
BURST_SHARE = 0.5  # ... this share of them: bursts unrelated to the clock
EVIDENCE_MIN = 8  # readings before the successor and burst shares say anything
BARS = ("progress_bar",)  # readers whose counter is a bar's n of its total

SeriesKind = Literal["level", "increments", "ambiguous", "value"]


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
    reasons: dict[str, None] = field(default_factory=dict)  # the kinds of evidence that it is an index, in order found
    restarts_measured: int = 0  # restarts read inside the measured window
    merged: int = 0  # readings from a line that stands for several processes' lines
    processes: set[str] = field(default_factory=set)  # the processes a runtime's prefix named (a few)
    successors: int = 0  # readings one more than one of the RECENT before
    bursts: int = 0  # readings within BURST_S of the one before
    whole: bool = True  # every reading a whole number (increments must be)
    not_a_count: str | None = None  # why its readings are a value, not a count (kind "value")
    _recent: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT))
    _last_t: float | None = None

    def see(self, value: float, phase: str, t: float = 0.0, process: str = "", merged: bool = False) -> float:
        """A new reading at time `t`; the units of progress it adds. `process`: the process a
        runtime's prefix on its line names; `merged`: its line stands for several processes'."""
        self.sightings += 1
        self.merged += merged
        if process and len(self.processes) < RECENT:
            self.processes.add(process)
        self._evidence(value, t)
        if value < 0 and self.kind != "value":
            self._not_a_count(f"it read {value:g}: a count is never negative")
        was, restarts = self.kind, self.restarts
        units = 0.0 if self.kind == "value" else self._units(value)
        if self.restarts > restarts and phase == "measure":
            self.restarts_measured += 1
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
        self._judge_index()
        if len(self.points) < MAX_KEPT:
            self.points.append(Sighting(t, value, self.counted, phase))
        return units

    def _evidence(self, value: float, t: float) -> None:
        """What the reading says of the series' nature: one more than a recent reading
        (counting up), in a burst with the one before."""
        whole = value == int(value)
        self.whole = self.whole and whole
        if whole and value - 1 in self._recent:
            self.successors += 1
        if self.kind == "increments" and not whole:
            self._not_a_count(f"it fell and rose like amounts per report, but read {value:g}: amounts are whole counts")
        self._recent.append(value)
        if self._last_t is not None and t - self._last_t <= BURST_S:
            self.bursts += 1
        self._last_t = t

    def _judge_index(self) -> None:
        """An index within a unit of work, from the evidence so far (see the module's
        docstring): each kind of evidence, once found, is kept in `reasons`."""
        found = self.reasons
        if len(self.processes) > 1:
            found.setdefault("processes")
        if self.merged:
            found.setdefault("merged")
        if (self.restarts >= CYCLES_FOR_AN_INDEX or self.restarts_measured > 0) and self.reader not in BARS:
            found.setdefault("cycles")
        if self.kind != "increments" or self.sightings < EVIDENCE_MIN:
            return
        if self.successors >= SUCCESSOR_SHARE * self.sightings:
            found.setdefault("successors")
        if self.bursts >= BURST_SHARE * self.sightings:
            found.setdefault("bursts")

    @property
    def index(self) -> str | None:
        """Why its readings are an index, not progress, in words; None: no such evidence."""
        said = {
            "processes": f"its readings come from {len(self.processes)} processes (a runtime's `pid=` prefix on its "
            "lines): each one's own number, not the program's total",
            "merged": f"{self.merged} of its readings came from lines that stand for several processes' lines "
            "(`[repeated Nx across cluster]`)",
            "cycles": f"it restarted from near zero {'once' if self.restarts == 1 else f'{self.restarts} times'} "
            "(an index within a unit of work)",
            "successors": f"{self.successors / self.sightings:.0%} of its readings are one more than a recent one "
            "(counting up, not amounts)",
            "bursts": f"{self.bursts / self.sightings:.0%} of its readings came in bursts, {BURST_S * 1000:g} ms apart "
            "or less (not one report per interval of the program's clock)",
        }
        return "; ".join(said[kind] for kind in self.reasons) or None

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
            if self.whole:
                self.kind = "increments"
            else:  # a score per report: it falls and rises, and counts no things
                self._not_a_count("it falls and rises, and its readings are not whole numbers (a score, not amounts)")
        elif self.drops >= DROPS_FOR_A_VERDICT + 1:  # new highs as often as drops: two totals taking turns
            self.kind = "ambiguous"

    def _not_a_count(self, why: str) -> None:
        self.kind = "value"
        self.not_a_count = why

    @property
    def undecided(self) -> bool:
        """A running total that dropped below an earlier reading, not to zero: no longer
        plainly a level, not yet judged increments. Its count is not evidence for or
        against another counter's."""
        return self.kind == "level" and self.drops > 0

    @property
    def trusted(self) -> bool:
        """A plain level (drops aside, restarts allowed) or judged increments, and no index."""
        return self.index is None and (self.kind == "increments" or (self.kind == "level" and not self.undecided))

    def recount(self, phases: set[str]) -> float:
        """Once judged increments: the units the readings taken in `phases` add as increments,
        less what they were counted as before (so the window's count is as if the verdict had
        come first)."""
        return sum(value - counted for phase, value, counted in self.history if phase in phases)

    def describe(self) -> str:
        """`a level, 412 sightings, 2 restarts` for the record's provenance."""
        what = {
            "level": "a level",
            "increments": "increments per report",
            "ambiguous": "ambiguous",
            "value": "a value",
        }[self.kind]
        notes = [f"{self.sightings} sightings"]
        if self.restarts:
            notes.append(f"{self.restarts} restart{'s' if self.restarts > 1 else ''}")
        if self.falls and self.kind == "level":
            notes.append(f"{self.falls} fall{'s' if self.falls > 1 else ''} without a restart, not counted")
        if self.undecided:
            notes.append(f"dropped {self.drops}x: not yet judged a running total or increments")
        if self.not_a_count is not None:
            notes.append(f"not a count: {self.not_a_count}")
        if self.index is not None:
            notes.append(f"an index, not progress: {self.index}")
        return f"{what}, {', '.join(notes)}"
