"""How far repeats of a cell disagree, and the warning when they disagree too much.

A median means little when repeats spread widely: pyperf warns when a benchmark's standard
deviation passes 10 % of its mean. With 3-5 repeats a range is the honest summary, so the
spread is (max - min) / median of the cell's headline rate, and every report warns above
SPREAD_WARN_PCT, naming the cell, its numbers, and what to do.
"""

from __future__ import annotations

from harness.model.stats import spread_pct
from harness.runs.record import Record, group_by_cell

SPREAD_WARN_PCT = 10.0


def spread_warnings(records: list[Record], rate: str | None) -> list[str]:
    """One line per cell whose repeats of `rate` spread beyond SPREAD_WARN_PCT."""
    if rate is None:
        return []
    out = []
    for cell in group_by_cell(records):
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
