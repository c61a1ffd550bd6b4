"""A space screened whole, then its leaders raced: every setting read once in a random order
(the start read again between them, to see the machine's drift), the leaders read again in
longer windows by successive halving, and the last few decided by A/Bs only where their
readings lie within the noise of each other.

Successive halving (Jamieson and Talwalkar; the rungs of Ray Tune's ASHA, Hyperband's
brackets) spends many cheap readings on the whole space and a few long ones on its leaders:
rung 0 reads every setting for `--screen` seconds, then its AGAIN leaders a second time (how
far a leader's readings move, which the start's may understate: noise()); each later rung
keeps the readings' leaders
(at most one in HALVING of them, fewer where the rest read below the leader by more than the
readings' noise, the pruner) and reads them again for twice the window, until at most
FINAL_FEW are left. Readings are compared only with readings that a window of the same length
saw close in time: rung 0's relative to the start read before and after them (the machine's
speed on this VM moves 7-9 % a second, docs/records/2026-11-27-gate-idle.md), a later rung's
among themselves, read back to back in a random order.

An A/B (harness.tune.duel, the leaders' three-way decision) is run only between the leader and
a last few whose reading lies within the noise band of the leader's: between a setting and one
read 2x slower a reading already decides. The search stops when its leaders are decided: ahead
by at least --min-gain, behind (they swap), or tied within it.

The state (rungs, readings, A/Bs) is the tune.json's `halving`, saved after every reading, so a
Ctrl-C keeps it and `--resume` reads no setting twice.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.tune.duel import BEHIND, BETTER, TIE, Duel
from harness.tune.plan import AGAIN, DRIFT_EVERY, reads_leaders_twice
from harness.tune.result import key_of

HALVING = 4  # a rung keeps at most one in this many of the settings it read
FINAL_FEW = 3  # the rungs end when this many are left: A/Bs decide among them
NOISE_FLOOR = 0.03  # the readings' noise (sd of a log reading) is taken as at least this
BAND_Z = 2.0  # two readings lie within noise when their log ratio is within this many sds of a difference


@dataclass
class Reading:
    params: dict[str, Any]
    rate: float | None
    at_s: float  # when it was read, seconds into the tune
    reference: bool = False  # the start read again (rung 0)
    again: bool = False  # a leader read a second time (rung 0's second look)

    def to_json(self) -> dict[str, Any]:
        out = {"params": self.params, "rate": self.rate, "at_s": self.at_s, "reference": self.reference}
        return {**out, "again": True} if self.again else out


def relative_logs(readings: list[Reading]) -> dict[str, list[float]]:
    """Every non-reference reading's log over the start's, interpolated at its time between the
    references read before and after it, by setting (a leader read twice has two)."""
    refs = [(r.at_s, math.log(r.rate)) for r in readings if r.reference and r.rate]
    out: dict[str, list[float]] = {}
    if not refs:
        return out
    times, logs = np.array(refs).T
    for r in readings:
        if r.reference or not r.rate:
            continue
        base = float(np.interp(r.at_s, times, logs))
        out.setdefault(key_of(r.params), []).append(math.log(r.rate) - base)
    return out


def relative(readings: list[Reading]) -> dict[str, float]:
    """Each setting's reading over the start's (the geometric mean of a leader's two; the
    start itself: 1)."""
    return {key: math.exp(float(np.mean(logs))) for key, logs in relative_logs(readings).items()}


def noise(readings: list[Reading]) -> float:
    """The sd of one log reading: the larger of the start's and the leaders' (those read twice),
    at least NOISE_FLOOR. The start's successive readings differ by two readings' noise and the
    drift between them (so this errs high). Two readings give one difference, which is taken
    whole: a five-setting screen on a loaded machine read its start 67 % apart and, at the
    floor, called its leaders (2.2x apart) "beyond the readings' noise". The start's is not
    enough: the producers program's start (one process) read 3 % apart in its 2 s readings,
    while its multi-process settings read 10 % apart from one screen to the next (workers 2,
    batch 128: 1.92-2.40x the start in six), and a screen kept only two leaders, neither the
    best; the leaders' second readings show their own noise (chosen for reading high, their
    second readings fall back: this too errs high)."""
    logs = [math.log(r.rate) for r in readings if r.reference and r.rate]
    start = NOISE_FLOOR
    if len(logs) == 2:
        start = abs(logs[1] - logs[0]) / math.sqrt(2)
    elif len(logs) > 2:
        start = float(np.std(np.diff(logs), ddof=1) / math.sqrt(2))
    twice = [float(np.var(v, ddof=1)) for v in relative_logs(readings).values() if len(v) >= 2]
    leaders = math.sqrt(float(np.mean(twice))) if twice else 0.0
    return max(NOISE_FLOOR, start, leaders)


def band(sd: float) -> float:
    """The largest ratio of two readings that lies within their noise."""
    return math.exp(BAND_Z * math.sqrt(2) * sd)


def survivors(scores: dict[str, float], sd: float, final_few: int = FINAL_FEW) -> list[str]:
    """The leaders a rung keeps (keys, best first): at most one in HALVING of those read (never
    fewer than `final_few`), and none read below the leader by more than the noise band."""
    ranked = sorted(scores, key=lambda k: -scores[k])
    if not ranked:
        return []
    most = max(final_few, math.ceil(len(ranked) / HALVING))
    lead = scores[ranked[0]]
    within = [k for k in ranked if lead / scores[k] <= band(sd)]
    return within[:most] if len(within) >= 2 else ranked[: min(2, len(ranked))]


def drift_said(readings: list[Reading]) -> str:
    rates = [r.rate for r in readings if r.reference and r.rate]
    if len(rates) < 2:
        return "the start read once"
    return (
        f"the start read {len(rates)} times between them: {min(rates):.4g}-{max(rates):.4g} "
        f"({100 * (max(rates) / min(rates) - 1):.0f} % apart)"
    )


class Halving:
    """The whole-screen search. `read(params, window_s) -> (metric, rate)` measures one
    setting; `compare(incumbent, challenger) -> Duel` is the leaders' A/B (None: the budget
    holds none); `room() -> seconds` what the budget leaves for readings; `save()` writes the
    state."""

    def __init__(
        self,
        state: dict[str, Any],
        space: list[dict[str, Any]],
        start: dict[str, Any],
        window_s: float,
        read: Callable[[dict[str, Any], float], tuple[str | None, float | None]],
        compare: Callable[[dict[str, Any], dict[str, Any]], Duel | None],
        reading_s: Callable[[float], float],
        room: Callable[[], float],
        elapsed: Callable[[], float],
        announce: Callable[[str], None],
        save: Callable[[], None],
        first: Reading | None = None,
    ) -> None:
        self.state, self.space, self.start, self.window_s = state, space, start, window_s
        self.read_cell, self.compare, self.reading_s, self.room = read, compare, reading_s, room
        self.elapsed, self.announce, self.save = elapsed, announce, save
        state.setdefault("order_seed", random.SystemRandom().randrange(2**31))
        state.setdefault("rungs", [])
        state.setdefault("duels", [])
        self.by_key = {key_of(p): p for p in space}
        self.first = first  # the start's reading the plan made, rung 0's first reference

    # ------------------------------------------------------------------ readings
    def readings(self, rung: dict[str, Any]) -> list[Reading]:
        return [
            Reading(r["params"], r["rate"], r["at_s"], r.get("reference", False), r.get("again", False))
            for r in rung["readings"]
        ]

    def take(self, rung: dict[str, Any], params: dict[str, Any], reference: bool = False, again: bool = False) -> None:
        metric, rate = self.read_cell(params, rung["window_s"])
        rung.setdefault("metric", metric)
        rung["readings"].append(Reading(params, rate, self.elapsed(), reference, again).to_json())
        self.save()

    def rung0(self) -> dict[str, Any]:
        """Every setting once, in a random order, the start read first, again every DRIFT_EVERY
        settings and last."""
        if not self.state["rungs"]:
            order = [p for p in self.space if key_of(p) != key_of(self.start)]
            random.Random(self.state["order_seed"]).shuffle(order)
            first = [self.first.to_json()] if self.first is not None else []
            self.state["rungs"].append(
                {"index": 0, "window_s": self.window_s, "reference": self.start, "order": order, "readings": first}
            )
        rung = self.state["rungs"][0]
        self.announce(
            f"  rung 0: {len(rung['order']) + 1} settings, {rung['window_s']:g} s each, in a random order "
            f"(seed {self.state['order_seed']}), the start again every {DRIFT_EVERY}"
        )
        return self.read_rung(rung)

    def read_rung(self, rung: dict[str, Any]) -> dict[str, Any]:
        """The rung's settings in its order, its reference read first, again every DRIFT_EVERY
        settings and last (those already read, before a Ctrl-C, are not read again)."""
        done = {key_of(r["params"]) for r in rung["readings"] if not r.get("reference") and not r.get("again")}
        refs = sum(1 for r in rung["readings"] if r.get("reference"))
        for i, params in enumerate(rung["order"]):
            if i % DRIFT_EVERY == 0 and refs <= i // DRIFT_EVERY:
                self.take(rung, rung["reference"], reference=True)
                refs += 1
            if key_of(params) not in done:
                self.take(rung, params)
        if refs <= math.ceil(len(rung["order"]) / DRIFT_EVERY):  # the last reference, after every setting
            self.take(rung, rung["reference"], reference=True)
        return rung

    def second_look(self, rung: dict[str, Any]) -> None:
        """Rung 0's AGAIN leaders read a second time, then the start (the noise of a leader's
        reading, which the start's may understate: noise()); not where the screen read no more
        than that, or where the budget or a grid's time leaves no room for it."""
        if "again" not in rung:
            scores = self.scores(rung)
            ranked = [k for k in sorted(scores, key=lambda k: -scores[k]) if k != key_of(rung["reference"])]
            wanted = reads_leaders_twice(len(ranked) + 1)  # the start beside them
            room = (AGAIN + 1) * self.reading_s(rung["window_s"]) <= self.room()
            rung["again"] = [self.by_key[k] for k in ranked[:AGAIN]] if wanted and room else []
            if wanted and not room:
                self.announce("  rung 0: its leaders not read again (it would end past the budget or a grid's time)")
            self.save()
        if not rung["again"]:
            return
        read = {key_of(r["params"]) for r in rung["readings"] if r.get("again")}
        self.announce(f"  rung 0: its {len(rung['again'])} leaders again, then the start (their readings' noise)")
        for params in rung["again"]:
            if key_of(params) not in read:
                self.take(rung, params, again=True)
        if not rung["readings"][-1].get("reference"):
            self.take(rung, rung["reference"], reference=True)

    def scores(self, rung: dict[str, Any]) -> dict[str, float]:
        """Each reading relative to the rung's reference (the start in rung 0, the last rung's
        leader after it) read around it; the reference itself: 1."""
        out = relative(self.readings(rung))
        if any(r.get("reference") and r.get("rate") for r in rung["readings"]):
            out[key_of(rung["reference"])] = 1.0
        return out

    # ------------------------------------------------------------------ the search
    def run(self) -> tuple[dict[str, Any], str]:
        """(the winner, how sure the tune is of it)."""
        rung = self.rung0()
        self.second_look(rung)
        sd = noise(self.readings(rung))
        self.state["noise_sd"] = sd
        self.state["drift"] = drift_said(self.readings(rung))
        self.announce(f"    {self.state['drift']}; a reading's noise taken as {100 * sd:.1f} %")
        keep = survivors(self.scores(rung), sd)
        self.said_rung(rung, keep)
        while len(keep) > FINAL_FEW:
            index = rung["index"] + 1
            window = self.window_s * 2**index
            if len(self.state["rungs"]) <= index:
                if (len(keep) + 2) * self.reading_s(window) > self.room():
                    self.state["stopped"] = (
                        f"rung {index} ({len(keep) + 2} readings of {window:g} s) would end past the budget or a grid's "
                        f"time: the first {FINAL_FEW} of rung {rung['index']} go to the A/Bs"
                    )
                    self.announce(f"  {self.state['stopped']}")
                    keep = keep[:FINAL_FEW]
                    break
                order = [self.by_key[k] for k in keep[1:]]
                random.Random(self.state["order_seed"] + index).shuffle(order)
                reference = self.by_key[keep[0]]
                self.state["rungs"].append(
                    {"index": index, "window_s": window, "reference": reference, "order": order, "readings": []}
                )
            rung = self.state["rungs"][index]
            self.announce(
                f"  rung {index}: the {len(rung['order']) + 1} leaders again, {window:g} s each, "
                f"the leader first and last"
            )
            self.read_rung(rung)
            keep = survivors(self.scores(rung), sd)
            self.said_rung(rung, keep)
        return self.settle(keep, rung, sd)

    def said_rung(self, rung: dict[str, Any], keep: list[str]) -> None:
        scores = self.scores(rung)
        top = sorted(scores, key=lambda k: -scores[k])[:6]
        unit = "the start's" if rung["index"] == 0 else f"{describe(rung['reference'])}'s"
        text = ", ".join(f"{describe(self.by_key[k])} {scores[k]:.2f}" for k in top)
        rung["kept"] = [self.by_key[k] for k in keep]
        rung["said"] = f"{len(scores)} read ({rung['window_s']:g} s, over {unit}): {text}; kept {len(keep)}"
        self.announce(f"    {rung['said']}")
        self.save()

    def ratios(self, leader: str, other: str) -> list[float]:
        """`leader`'s score over `other`'s in every rung that read both: a leader is decided by
        readings only where they all put it beyond the noise. The producers program's workers 5
        read 0.93x workers 3 in rung 0 and 1.26x in rung 1 (a 6 % noise from the start's
        readings): one rung alone would have called it."""
        out = []
        for rung in self.state["rungs"]:
            got = self.scores(rung)
            if got.get(leader) and got.get(other):
                out.append(got[leader] / got[other])
        return out

    def settle(self, keep: list[str], rung: dict[str, Any], sd: float) -> tuple[dict[str, Any], str]:
        """The leader against each of the last few whose reading lies within the noise band of
        its own: ahead, behind (they swap) or tied, by A/B; the others by their readings."""
        scores = self.scores(rung)
        leader = keep[0]
        said: list[str] = []
        done = {(d["incumbent"], d["challenger"]): d for d in self.state["duels"]}
        for other in keep[1:]:
            ratio = scores[leader] / scores[other] if scores.get(other) else math.inf
            every = self.ratios(leader, other)
            if min(every, default=ratio) > band(sd):
                said.append(
                    f"{describe(self.by_key[other])} read {ratio:.2f}x below, beyond the readings' noise in every rung"
                )
                continue
            ratio = min(every, default=ratio)
            pair = (other, leader)
            if pair not in done:
                self.announce(
                    f"  A/B: {describe(self.by_key[leader])} against {describe(self.by_key[other])} "
                    f"(read {ratio:.2f}x apart, within the noise)"
                )
                got = self.compare(self.by_key[other], self.by_key[leader])
                if got is None:
                    said.append(
                        f"ties with {describe(self.by_key[other])} by readings ({ratio:.2f}x, within the noise; "
                        "no A/B: it would end past the budget or a grid's time)"
                    )
                    continue
                done[pair] = {"incumbent": other, "challenger": leader, **got.to_json()}
                self.state["duels"].append(done[pair])
                self.announce(f"    {got.describe()}")
                self.save()
            duel = done[pair]
            ab = f"A/B {duel['ratio']:.3f}x [{duel['low']:.3f}, {duel['high']:.3f}]" if duel.get("ratio") else "A/B"
            ab = f"{ab}, {describe(self.by_key[leader])} over {describe(self.by_key[other])}"
            turned = (duel.get("ratio") or 1.0) < 1.0  # the other read higher in the A/B
            if duel["decision"] == BEHIND or (duel["decision"] != BETTER and turned):
                beaten, leader = leader, other
            else:
                beaten = other
            name = describe(self.by_key[beaten])
            if duel["decision"] == BETTER:
                said.append(f"ahead of {name} ({ab})")
            elif duel["decision"] == BEHIND:
                said.append(f"ahead of {name}, which led the readings ({ab})")
            elif duel["decision"] == TIE:
                said.append(f"ties with {name} within the --min-gain ({ab})")
            else:
                said.append(f"not decided against {name} ({duel.get('said', duel['decision'])}; {ab})")
        winner = self.by_key[leader]
        rest = sorted((v for k, v in scores.items() if k not in keep), reverse=True)
        below = f"; every other setting read at most {rest[0] / scores[keep[0]]:.2f}x the leaders'" if rest else ""
        sure = f"{describe(winner)}: " + "; ".join(said or ["the only leader"]) + below
        first = relative(self.readings(self.state["rungs"][0]))
        self.state["winner_over_start"] = 1.0 if winner == self.start else first.get(key_of(winner))
        self.state["winner"], self.state["sure"] = winner, sure
        self.save()
        return winner, sure


def describe(values: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items()) or "(no knobs)"
