"""Replay recorded causal experiments round by round under today's stopping rules: where each
would have stopped, why, and what it would have read then, beside what it read as run.

    python benchmarks/causal_replay.py FILE [FILE ...]

FILE: a causal.json (harness causal's, or a tune's causal-N.json) or a test fixture
(tests/harness/data/causal/*.json.gz). Two callers are replayed: `harness causal` (spends its
budget; a group leaves the rounds once settled) and `harness tune` (also stops once no group
could settle into a reading the tune acts on: futile). The readings are the intervals' alone,
before the evidence's caveats (harness.causal.verdicts), so "was" (the verdicts) may say
unknown where a replayed reading says critical; what to compare is when each stops and which
readings it has settled by then. The budget left at a round is the options' budget less the
launch, the warm-up and the rounds' time so far (a replay does not see the harness's own
overheads: a little generous).
"""

from __future__ import annotations

import argparse
import gzip
import json
from dataclasses import dataclass
from pathlib import Path

from harness.causal.periods import Period
from harness.causal.rounds import observations
from harness.causal.sensitivity import estimate, futile, rounds_alone, settled
from harness.tune.bottleneck import ACTED_ON

CALLERS = {"harness causal": (), "harness tune": ACTED_ON}


def load(path: Path) -> dict:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


@dataclass(frozen=True)
class Stop:
    how: str  # narrow / futile / as run
    rounds: int
    seconds: float  # from the first period's start to the last round's end
    readings: dict[str, str]  # the groups settled by then, and their readings

    def describe(self) -> str:
        said = " ".join(f"{g}={r}" for g, r in self.readings.items()) or "none settled"
        return f"{self.how} after {self.rounds} rounds, {self.seconds:.0f} s: {said}"


def replay(doc: dict, wanted: tuple[str, ...]) -> Stop:
    """Round by round, the experiment's stop under today's rules for a caller that acts on
    `wanted` (empty: spends its budget)."""
    periods = [Period(**p) for p in doc["periods"]]
    t0 = periods[0].started
    opts = doc["options"]
    width, fraction, budget = opts.get("width", 0.15), opts.get("fraction", 0.5), opts["budget_s"]
    before = doc["launch_s"] + doc["warmup_s"]
    lengths = doc["cadence"].get("periods_s") or [opts.get("period_s", 0.5)]
    stop = Stop("as run", 0, 0.0, {})
    for r in range(max(p.round for p in periods) + 1):
        upto = [p for p in periods if p.round <= r]
        end = max(p.ended for p in upto) - t0
        values, _ = observations(upto, fraction)
        found = [estimate(g, v) for g, v in values.items() if not g.startswith("(")]
        readings = {s.group: s.reading for s in found if settled(s, width)}
        stop = Stop("as run", r + 1, end, readings)
        if found and len(readings) == len(found):
            return Stop("narrow", r + 1, end, readings)
        left = rounds_alone(budget - before - end, lengths[min(r, len(lengths) - 1)])
        if futile(found, values, left, width, wanted):
            return Stop("futile", r + 1, end, readings)
    return stop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    for path in parser.parse_args().files:
        doc = load(path)
        periods = doc["periods"]
        was = " ".join(f"{s['group']}={s['verdict']}" for s in doc["sensitivity"])
        span = periods[-1]["ended"] - periods[0]["started"]
        print(f"{path}: as run {doc['reason']} after {doc['rounds']} rounds, {span:.0f} s: {was}")
        for caller, wanted in CALLERS.items():
            print(f"    {caller}: {replay(doc, wanted).describe()}")


if __name__ == "__main__":
    main()
