"""One cell-repeat as a typed record, cells as groups of repeats, and the one cell label.

A `Record` is one line of cells.jsonl (and of `harness run --json`): what ran (suite,
params, budget), how it ended (status, reason) and what it measured (metrics, warnings,
the paths of its series, log and stack dump). Every reader (diagnosis, comparison, gate,
baselines, history, reports, limits) works on Records and `CellGroup`s, built here and
only here, so they all agree on what "the cell's median" or "the cell's name" is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from harness.model.vocabulary import HEADLINE_METRIC, Vocabulary

_FIELDS = (
    "id", "suite", "params", "repeat", "status", "reason", "started", "ended", "budget", "metrics",
    "warnings", "traceback", "series", "log", "stack_dump",
)  # fmt: skip


# The status of a cell-repeat the harness failed (it could not write the cell's files, or its
# own machinery broke), not the program: `harness sweep --resume` runs it again.
HARNESS_ERROR = "harness-error"


def number(value: Any) -> float | None:
    """A finite int or float as float; anything else (bools, strings, NaN) as None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass(frozen=True)
class Spread:
    """A cell's metric over its repeats: the median every report prints, and the range."""

    median: float
    low: float
    high: float
    n: int


def spread_of(values: Sequence[float]) -> Spread | None:
    """The one median (and range) of a cell's repeats: every writer, rule and gate that
    says "the cell's median" gets it here, so none of them can disagree."""
    if not values:
        return None
    v = np.asarray(values, dtype=float)
    return Spread(float(np.median(v)), float(v.min()), float(v.max()), len(v))


@dataclass
class Record:
    """One finished (or planned but never run: status `not run`) cell-repeat."""

    id: str
    suite: str
    params: dict[str, Any]
    repeat: int
    status: str
    reason: str | None = None
    started: str | None = None
    ended: str | None = None
    budget: dict[str, Any] | None = None  # duration, warmup, work, timeout as the cell ran
    metrics: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    traceback: str | None = None
    series: str | None = None  # paths relative to the run directory
    log: str | None = None
    stack_dump: str | None = None
    user_error: bool = False  # the cell failed on the user's input (exit 2 for `harness run`)
    extra: dict[str, Any] = field(default_factory=dict)  # what other writers add (profile, pyperf)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Record:
        known = {k: data[k] for k in _FIELDS if k in data}
        extra = {k: v for k, v in data.items() if k not in _FIELDS and k != "user_error"}
        known.setdefault("params", {})
        known["metrics"] = known.get("metrics") or {}
        known["warnings"] = list(known.get("warnings") or [])
        return cls(**known, user_error=bool(data.get("user_error")), extra=extra)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: getattr(self, k) for k in _FIELDS}
        if self.user_error:
            out["user_error"] = True
        out.update(self.extra)
        return out

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def harness_failed(self) -> bool:
        """Failed by the harness (its disk, its machinery), not by the program."""
        return self.status == HARNESS_ERROR

    @property
    def fixed_work(self) -> bool:
        return (self.budget or {}).get("work") is not None

    def number(self, metric: str) -> float | None:
        return number(self.metrics.get(metric))

    @property
    def label(self) -> str:
        return cell_label(self.suite, self.params)


@dataclass
class CellGroup:
    """One cell over its repeats. Numbers are taken over the repeats that finished ok."""

    id: str
    suite: str
    params: dict[str, Any]
    budget: dict[str, Any] | None
    records: list[Record] = field(default_factory=list)

    @property
    def ok(self) -> list[Record]:
        return [r for r in self.records if r.ok]

    def by_repeat(self, metric: str) -> dict[int, float]:
        """repeat -> value, over the ok repeats with a finite value."""
        out = {}
        for rec in self.ok:
            value = rec.number(metric)
            if value is not None:
                out[rec.repeat] = value
        return out

    def values(self, metric: str) -> list[float]:
        return list(self.by_repeat(metric).values())

    def spread(self, metric: str) -> Spread | None:
        """Median, min and max of a metric over the ok repeats with a finite value."""
        return spread_of(self.values(metric))

    def median(self, metric: str) -> float | None:
        found = self.spread(metric)
        return found.median if found else None

    def signals(self, *names: str) -> dict[str, float | None]:
        """The medians of these generic signals (or plain metrics) under this suite's own
        names, keyed by those names, in order: the numbers a rule tests and the evidence it
        shows, read in one place (`words.signal` then `median`)."""
        words = self.vocabulary
        return {words.signal(name): self.median(words.signal(name)) for name in names}

    def first(self, metric: str) -> Any:
        """The first ok repeat's value of a metric of any type (lists, maps, strings)."""
        for rec in self.ok:
            value = rec.metrics.get(metric)
            if value is not None:
                return value
        return None

    def metric_names(self) -> set[str]:
        return {name for rec in self.ok for name in rec.metrics}

    @property
    def fixed_work(self) -> bool:
        return (self.budget or {}).get("work") is not None or any(r.fixed_work for r in self.records)

    @property
    def label(self) -> str:
        return cell_label(self.suite, self.params)

    @cached_property
    def vocabulary(self) -> Vocabulary:
        from harness.model.registry import vocabulary_of

        return vocabulary_of(self.suite)

    def workers(self, cores: int) -> int | None:
        """The cell's worker count (its vocabulary's worker param; 0 = one per core)."""
        key = self.vocabulary.workers
        value = self.params.get(key) if key else None
        if isinstance(value, int) and not isinstance(value, bool):
            return value if value > 0 else cores
        return None


def group_by_cell(records: Iterable[Record]) -> list[CellGroup]:
    """Records grouped by cell id, in first-seen order, each group's repeats in order."""
    groups: dict[str, CellGroup] = {}
    for rec in records:
        group = groups.get(rec.id)
        if group is None:
            group = groups[rec.id] = CellGroup(rec.id, rec.suite, rec.params, rec.budget)
        group.records.append(rec)
    for group in groups.values():
        group.records.sort(key=lambda r: r.repeat)
    return list(groups.values())


def explicit_params(suite: str, params: dict[str, Any]) -> dict[str, Any]:
    """The params not at their suite's defaults (all of them when the suite is not installed
    here): what names a cell, and what another revision of the suite is asked to run (its
    own defaults, knobs it does not have included, are part of its code)."""
    from harness.model.registry import suite_defaults

    defaults = suite_defaults(suite)
    return {k: v for k, v in params.items() if defaults is None or defaults.get(k, object()) != v}


def cell_label(suite: str, params: dict[str, Any]) -> str:
    """'kind=spin,workers=2': the explicit params, sorted, so a cell has the same name in
    every run, report, comparison and gate."""
    shown = explicit_params(suite, params)
    return ",".join(f"{k}={v}" for k, v in sorted(shown.items())) or "defaults"


def incomparable_rates(records: Iterable[Record], vocabulary: Vocabulary) -> set[str]:
    """Rates (`<counter>_per_s`) these records cannot be compared by: marked invalid in any
    ok one (too few units completed in its window to mean anything), or a long unit's rate
    estimated from its finer counter in some and counted in others. Two estimators have two
    biases: in the headline sweep the 128-worker cells' count of games read 1.13x the
    4-worker cell's estimate where moves/s read 0.98x; the finer rate compares them fairly."""
    ok = [r for r in records if r.ok]
    out = {name.removesuffix("_valid") for r in ok for name, v in r.metrics.items() if name.endswith("_per_s_valid") and v == 0}
    for rate in vocabulary.rates:
        if rate.made_of is None:
            continue
        reported = [r for r in ok if rate.per_s in r.metrics]
        estimated = {f"{rate.counter}_per_s_counted" in r.metrics for r in reported}
        if len(estimated) > 1:
            out.add(rate.per_s)
    return out


def declared_headline(records: Iterable[Record]) -> str | None:
    """The headline rate the ok records named at run time (`headline_rate`: a user's program
    whose progress counter the harness found in its output), the most common one when they
    differ, or None."""
    from collections import Counter

    named = Counter(r.metrics.get(HEADLINE_METRIC) for r in records if r.ok)
    named.pop(None, None)
    return named.most_common(1)[0][0] if named else None
