"""The worker axis in a tune, by a fitted model instead of step by step: the incumbent measured
at a few worker counts, Gunther's USL fitted to them (harness.analysis.usl), more counts
measured where the model is least certain, and the count at the model's peak proposed as a
challenger, which an A/B then decides like any other.

Stepping a worker count one value at a time costs an A/B per value and stops at the first
that does not win, though throughput often falls before it rises again (a cliff at the core
count, then a plateau); a curve through four counts says where the peak is and how sure it
is. The model proposes; it never adopts: a count is only adopted when its A/B says so.
Where the model does not fit (a cliff), or has no peak inside the range, it says so and the
worker knob is stepped like the others.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from harness.analysis import usl
from harness.analysis.scaling import interval
from harness.running.matrix import Cell
from harness.running.runner import CellRunner
from harness.runs.store import RunStore
from harness.runs.view import record_rate
from harness.tune.space import Knob

FIRST_COUNTS = 4  # the USL's three parameters and one count to test them with
MORE_COUNTS = 2  # counts added where the model is least certain
REPEATS = 2  # per count: the fit's lack-of-fit test needs the repeats' scatter


def first_counts(knob: Knob, current: Any) -> list[Any]:
    """FIRST_COUNTS of the knob's values spread evenly along it, the current one among them."""
    values = list(knob.values)
    if len(values) <= FIRST_COUNTS:
        return values
    picks = {round(i * (len(values) - 1) / (FIRST_COUNTS - 1)) for i in range(FIRST_COUNTS)}
    chosen = [values[i] for i in sorted(picks)]
    if knob.index(current) is not None and current not in chosen:
        nearest = min(chosen[1:-1] or chosen, key=lambda v: abs(math.log(float(v)) - math.log(float(current))))
        chosen[chosen.index(nearest)] = current
    return sorted(set(chosen), key=float)


def measure(
    make_cell: Callable[[dict[str, Any]], Cell],
    incumbent: dict[str, Any],
    knob: Knob,
    counts: list[Any],
    store: RunStore,
    duration: float,
    rates: dict[int, list[float]],
    announce: Callable[[str], None],
) -> None:
    """Each count's REPEATS measured cells into `rates` (count -> its rates; a count whose
    cells gave none is there with an empty list: measured, not to be measured again)."""
    for count in counts:
        cell = replace(make_cell({**incumbent, knob.name: count}), duration=duration, repeats=REPEATS)
        runner = CellRunner(store)
        rates.setdefault(int(count), [])
        for repeat in range(REPEATS):
            record = runner.run(cell, repeat)
            store.append(record)
            _, value = record_rate(record)
            if value is not None:
                rates[int(count)].append(value)
        announce(f"    {knob.name}={count}: {', '.join(f'{v:.4g}' for v in rates.get(int(count), [])) or 'no rate'}")


def model_the_axis(
    make_cell: Callable[[dict[str, Any]], Cell],
    incumbent: dict[str, Any],
    knob: Knob,
    store: RunStore,
    duration: float,
    cores: int,
    announce: Callable[[str], None],
) -> tuple[usl.UslFit, dict[int, list[float]]]:
    """The USL fitted to the incumbent's rates along the worker knob, refined where least certain."""
    rates: dict[int, list[float]] = {}
    counts = first_counts(knob, incumbent[knob.name])
    announce(f"  the worker axis: {knob.name} at {', '.join(map(str, counts))}, {REPEATS} repeats each")
    measure(make_cell, incumbent, knob, counts, store, duration, rates, announce)
    found = usl.fit(with_rates(rates), cores=cores)
    for _ in range(MORE_COUNTS):
        left = [int(v) for v in knob.values if int(v) not in rates]
        if not left or len(with_rates(rates)) < len(rates) / 2:
            break  # every count measured, or most gave no rate: more cells would not fit a curve
        where = found.least_certain(left)
        announce(f"  the model is least certain at {knob.name}={where}")
        measure(make_cell, incumbent, knob, [where], store, duration, rates, announce)
        found = usl.fit(with_rates(rates), cores=cores)
    return found, with_rates(rates)


def with_rates(rates: dict[int, list[float]]) -> dict[int, list[float]]:
    """The counts that gave a rate (the fit's input)."""
    return {count: values for count, values in rates.items() if values}


def said(found: usl.UslFit) -> str:
    if not found.ok:
        return f"no USL fit ({found.status}): {found.reason}"
    assert found.sigma is not None and found.kappa is not None
    text = f"sigma {interval(found.sigma)}, kappa {interval(found.kappa)}"
    if found.peak is not None:
        return f"{text}; peak at {interval(found.peak, 'workers')}"
    return f"{text}; no peak: {found.no_peak}"


def proposal(found: usl.UslFit, knob: Knob, current: Any) -> tuple[Any, str] | None:
    """The knob value the model points to, and why; None when it points nowhere new."""
    if not found.ok:
        return None
    if found.peak is not None and found.peak.value is not None:
        target = min(knob.values, key=lambda v: abs(math.log(float(v)) - math.log(found.peak.value)))
        why = f"the scaling model's peak ({said(found)})"
    else:
        target, why = knob.values[-1], f"the scaling model sees no peak in the range ({said(found)})"
    if knob.index(target) == knob.index(current):
        return None
    return target, why
