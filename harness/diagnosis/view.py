"""A run as the rules see it: its cells (medians over ok repeats) and the machine's cores."""

from __future__ import annotations

import json
from dataclasses import dataclass

from harness.runs.record import CellGroup, declared_headline, incomparable_rates


@dataclass
class RunView:
    cells: list[CellGroup]
    cores: int

    def rate(self, cells: list[CellGroup]) -> str | None:
        """The rate these cells are compared by: their suite's headline, unless a cell's
        window held too few completed units for it or the cells measured it two ways
        (then the next declared rate fit in every cell, e.g. moves where games were too few)."""
        if not cells:
            return None
        names = set().union(*(c.metric_names() for c in cells))
        invalid = incomparable_rates([r for c in cells for r in c.records], cells[0].vocabulary)
        records = [r for c in cells for r in c.records]
        return cells[0].vocabulary.headline(names, invalid, declared_headline(records))

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
