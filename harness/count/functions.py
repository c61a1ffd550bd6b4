"""Where counted work grew: each function's own instructions per unit, candidate against
base, from callgrind's dumps of one run of each side.

A function is named as callgrind names it, with the shared object it lives in
(`long_mul (libpython3.11.so.1.0)`, `solve (mysolver.so)`): the machine code that ran. For
a pure-Python program that is the interpreter's, so the growth shows in what kind of work
grew (integer arithmetic, attribute look-ups, calls, allocation), not in the Python
function's name; code in C, C++, Cython, numba or Rust extensions shows by its own names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOP = 8


@dataclass
class Growth:
    function: str
    base: float  # its own instructions per unit
    candidate: float

    @property
    def change(self) -> float:
        return self.candidate - self.base

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function, "base_per_unit": self.base, "candidate_per_unit": self.candidate,
                "change_per_unit": self.change}  # fmt: skip


def window_costs(run_dir: Path) -> dict[str, int]:
    """Each function's own instructions in a run's window: its processes' middle and end dumps."""
    from harness.count.callgrind import dumps, read_dump

    costs: dict[str, int] = {}
    for dump in dumps(run_dir, with_costs=False):
        if not (dump.trigger.endswith("middle") or dump.trigger.endswith("end")):
            continue
        for name, cost in read_dump(dump.path, dump.pid, dump.part, with_costs=True).costs.items():
            costs[name] = costs.get(name, 0) + cost
    return costs


def growth(
    base: dict[str, int], base_units: float, cand: dict[str, int], cand_units: float, top: int = TOP
) -> list[Growth]:
    """The functions whose own instructions per unit grew most (largest growth first)."""
    rows = [
        Growth(name, base.get(name, 0) / base_units, cand.get(name, 0) / cand_units) for name in set(base) | set(cand)
    ]
    return sorted((r for r in rows if r.change > 0), key=lambda r: -r.change)[:top]
