"""One view of a run, built once and handed to every writer, rule and command.

A run's numbers used to be worked out where they were printed: the suite's headline rate
in the figures, in the rules' view, in history and in the progress line; a cell's median in
CellGroup, in the summary table (which kept the infinities Record.number drops) and in the
charts; the cells regrouped by the HTML page and again by the spread warnings. Two outputs
of one run could then disagree. Here each fact has one function, and `RunView` holds what
they give for a run: its cells, each suite's headline rate and the params that vary, the
medians (CellGroup.spread, harness.runs.record), the repeats that disagree, and the
findings and the scaling fits once the diagnosis and harness.analysis.scaling have filled
them in (both live a layer above: the view keeps what they computed, once), and whether a
rate may carry a verdict (`doubt`). The terminal, CSV, markdown and HTML writers, `harness
diagnose`, `harness history` and the progress line all read it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from harness.model.registry import vocabulary_of
from harness.model.stats import spread_pct
from harness.model.workshare import usable_cores
from harness.runs import provenance
from harness.runs.record import CellGroup, Record, declared_headline, group_by_cell, incomparable_rates

if TYPE_CHECKING:
    import pandas as pd

SPREAD_WARN_PCT = 10.0  # pyperf warns when a benchmark's deviation passes 10 % of its mean


def headline_rate(records: Iterable[Record]) -> str | None:
    """The rate one suite's records are judged and compared by: its first declared Rate,
    unless some ok record's window held too few units for it or the records measured it two
    ways (then the next rate fit in all of them), else the rate they named at run time
    (a program's counter found in its output), else the first `*_per_s` metric. Only the
    ok records' finite numbers count."""
    ok = [r for r in records if r.ok]
    if not ok:
        return None
    present = {name for r in ok for name, value in r.metrics.items() if r.number(name) is not None}
    words = vocabulary_of(ok[0].suite)
    return words.headline(present, incomparable_rates(ok, words), declared_headline(ok))


def record_rate(record: Record) -> tuple[str | None, float | None]:
    """One measured record's headline rate (headline_rate) and its value: (None, None) for a
    failed cell; the rate's name and None where it counted none or its reading is refused
    (harness.runs.provenance: too few units in its window, its check failed), so that
    nothing a tune orders or fits rests on a reading known to be meaningless."""
    metric = headline_rate([record]) if record.ok else None
    if metric is None:
        return None, None
    value = record.number(metric)
    refused = provenance.doubt(metric, [record])
    if value is None or value <= 0 or (refused is not None and refused.refuse):
        return metric, None
    return metric, float(value)


def varying_params(records: Sequence[Record]) -> list[str]:
    """The params whose value differs between these records, in first-seen order."""
    names: dict[str, None] = {}
    for rec in records:
        for key in rec.params:
            names.setdefault(key, None)
    return [n for n in names if len({repr(r.params.get(n)) for r in records}) > 1]


def spread_warnings(cells: Iterable[CellGroup], rate: str | None) -> list[str]:
    """One line per cell whose repeats of `rate` spread beyond SPREAD_WARN_PCT: with 3-5
    repeats a range is the honest summary, so the spread is (max - min) / median."""
    if rate is None:
        return []
    out = []
    for cell in cells:
        values = cell.values(rate)
        spread = spread_pct(values)
        if spread is None or spread <= SPREAD_WARN_PCT:
            continue
        out.append(
            f"{cell.suite} {cell.label}: {rate} spreads {spread:.0f} % across {len(values)} repeats "
            f"({min(values):.4g}-{max(values):.4g}, median {cell.median(rate):.4g}): the machine or the workload "
            "is noisy; add repeats or longer cells before trusting a difference this size (harness doctor)"
        )
    return out


@dataclass
class SuiteView:
    """One suite's part of a run: what its table, chart and warnings are made of."""

    name: str
    records: list[Record]
    cells: list[CellGroup]

    @cached_property
    def rate(self) -> str | None:
        return headline_rate(self.records)

    @cached_property
    def varying(self) -> list[str]:
        return varying_params(self.records)

    @cached_property
    def present(self) -> set[str]:
        """Metrics with a finite number in some ok repeat."""
        return {name for r in self.records if r.ok for name in r.metrics if r.number(name) is not None}

    @cached_property
    def columns(self) -> list[str]:
        """The metrics worth a column, in the suite's order (its rates, its report metrics,
        the harness's own), among those present."""
        return vocabulary_of(self.name).columns(self.present)

    @cached_property
    def spread_warnings(self) -> list[str]:
        return spread_warnings(self.cells, self.rate)

    @cached_property
    def provenance(self) -> str | None:
        """Where the headline came from and how its checks went (harness.runs.provenance)."""
        return provenance.line(self.rate, self.records)


@dataclass
class RunView:
    """A run as every reader sees it. `findings` is None until a diagnosis filled it,
    `scaling` until harness.analysis.scaling.fits(view) did (each scaling group's USL)."""

    records: list[Record]
    cores: int
    meta: dict[str, Any] = field(default_factory=dict)
    findings: list[Any] | None = None
    refused: list[Any] = field(default_factory=list)  # findings their evidence could not carry (diagnosis.needs.Refusal)
    scaling: list[Any] | None = None

    @cached_property
    def cells(self) -> list[CellGroup]:
        return group_by_cell(self.records)

    @cached_property
    def suites(self) -> dict[str, SuiteView]:
        out: dict[str, SuiteView] = {}
        for cell in self.cells:
            suite = out.setdefault(cell.suite, SuiteView(cell.suite, [], []))
            suite.cells.append(cell)
        for name, suite in out.items():
            suite.records = [r for r in self.records if r.suite == name]
        return out

    @cached_property
    def summary(self) -> pd.DataFrame:
        """summary.csv's frame: one row per cell (harness.runs.results.summary_frame)."""
        from harness.runs.results import summary_frame

        return summary_frame(self.cells, self.records)

    @cached_property
    def spread_warnings(self) -> list[str]:
        return [w for suite in self.suites.values() for w in suite.spread_warnings]

    def refused_lines(self) -> list[str]:
        """`not judged: RULE [cells]: why`, one per finding the diagnosis refused."""
        return [r.line() for r in self.refused]

    def findings_json(self) -> list[dict[str, Any]] | None:
        """The findings as the writers print them (None: no diagnosis was run)."""
        if self.findings is None:
            return None
        return [f if isinstance(f, dict) else f.to_json() for f in self.findings]

    def rate(self, cells: Sequence[CellGroup]) -> str | None:
        """The rate these cells are compared by (headline_rate over their records)."""
        return headline_rate(r for c in cells for r in c.records)

    def doubt(self, cells: Sequence[CellGroup], rate: str | None) -> provenance.Doubt | None:
        """What stands against these cells' `rate` carrying a verdict (harness.runs.provenance.
        doubt): its check failed, its window held too few units, its reading is an unchecked
        guess. The diagnosis holds every finding that rests on a rate to it."""
        return provenance.doubt(rate, [r for c in cells for r in c.records])

    def scaling_groups(self) -> list[list[tuple[int, CellGroup]]]:
        """Cells that differ only in their worker count, each group sorted by it."""
        groups: dict[str, list[tuple[int, CellGroup]]] = {}
        for cell in self.cells:
            count = cell.workers(self.cores)
            if count is None or not cell.ok:
                continue
            key = cell.vocabulary.workers
            rest = {k: v for k, v in cell.params.items() if k != key}
            group = json.dumps({"suite": cell.suite, "key": key, "params": rest}, sort_keys=True, default=str)
            groups.setdefault(group, []).append((count, cell))
        return [sorted(members, key=lambda m: m[0]) for members in groups.values() if len(members) > 1]


def build_view(records: Iterable[Record], meta: dict[str, Any] | None = None) -> RunView:
    """The view of a run's records (run.json's `meta` gives the core count the rules use)."""
    meta = dict(meta or {})
    return RunView(list(records), int(meta.get("cpu_cores") or usable_cores()), meta)
