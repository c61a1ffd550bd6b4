"""A model of every reading a tune has made, for a space too large to screen whole: which
settings not yet read it predicts fastest.

The step-by-step search (harness.tune.search) reads settings around each incumbent (its
screens) and A/Bs the best; what the readings of earlier steps said about a knob was used only
in that step. Here every reading counts: log(rate) is fitted as a sum of one effect per knob
value (ridge-regularised least squares: a value never read shrinks to the knobs' average), so a
batch that read well beside one backend is predicted well beside another, and a setting that
combines the best value of each knob is proposed before it was ever read. This is the
main-effects model behind a Taguchi screen, and the part of Optuna's TPE that treats knobs as
independent; interactions (a pair that gains only together) stay the pair survey's job.

The model proposes readings; a reading proposes an A/B; only the A/B adopts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np

from harness.tune.plan import settings
from harness.tune.result import key_of
from harness.tune.space import Knob, _same

RIDGE = 0.3  # the prior's weight on each knob value's effect (in readings): one reading moves it partly
MOST_SETTINGS = 50_000  # the largest space whose settings are enumerated to find the model's best


@dataclass
class Model:
    knobs: list[Knob]
    mean: float  # the mean log rate
    effects: dict[tuple[str, int], float]  # (knob, value index) -> its effect on log(rate)
    readings: int

    def predict(self, params: Mapping[str, Any]) -> float:
        """The predicted log rate of `params`."""
        total = self.mean
        for knob in self.knobs:
            at = knob.index(params.get(knob.name))
            if at is not None:
                total += self.effects.get((knob.name, at), 0.0)
        return total


def fit(knobs: Sequence[Knob], readings: Iterable[tuple[Mapping[str, Any], float]]) -> Model | None:
    """The main-effects model of log(rate) over `readings` ((params, rate) with rate > 0);
    None with fewer than two readings."""
    rows = [(p, math.log(r)) for p, r in readings if r and r > 0]
    if len(rows) < 2:
        return None
    columns = [(k.name, i) for k in knobs for i in range(len(k.values))]
    where = {c: j for j, c in enumerate(columns)}
    x = np.zeros((len(rows), len(columns)))
    y = np.array([v for _, v in rows])
    for n, (params, _) in enumerate(rows):
        for knob in knobs:
            at = knob.index(params.get(knob.name))
            if at is not None:
                x[n, where[(knob.name, at)]] = 1.0
    mean = float(y.mean())
    beta = np.linalg.solve(x.T @ x + RIDGE * np.eye(len(columns)), x.T @ (y - mean))
    return Model(list(knobs), mean, {c: float(b) for c, b in zip(columns, beta, strict=True)}, len(rows))


def best_unread(model: Model, skip: set[str], most: int) -> list[tuple[dict[str, Any], float]]:
    """The `most` settings not in `skip` (keys) that the model predicts fastest, with each
    predicted log rate. A space past MOST_SETTINGS is searched by each knob's best values only."""
    knobs = model.knobs
    if math.prod(len(k.values) for k in knobs) > MOST_SETTINGS:
        pruned = []
        for knob in knobs:
            ranked = sorted(range(len(knob.values)), key=lambda i: -model.effects.get((knob.name, i), 0.0))
            pruned.append(Knob(knob.name, tuple(knob.values[i] for i in ranked[:3]), False))
        knobs = pruned
    scored = [(p, model.predict(p)) for p in islice(settings(knobs), MOST_SETTINGS) if key_of(p) not in skip]
    scored.sort(key=lambda pr: -pr[1])
    return scored[:most]


def differs(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The knobs whose values differ between two settings."""
    return [k for k in a if not _same(a[k], b.get(k))]
