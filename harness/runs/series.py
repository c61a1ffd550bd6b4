"""A cell-repeat's time series, series/<id>-<repeat>.csv: tidy rows (t_s, phase, metric,
value) from what the child said (harness.cell.messages) and what the parent's monitors
sampled, on one clock: seconds since the child's probe started. The wall-clock time of that
start is kept on the record (SERIES_ORIGIN), so an export can put each row on the wall clock."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harness.cell.messages import ChildStream
from harness.runs.files import replacing
from harness.runs.store import unix_seconds

if TYPE_CHECKING:
    from harness.runs.record import Record

SERIES_ORIGIN = "series_start_unix"  # record.extra: Unix seconds at the series' t_s = 0


class Sampled(Protocol):
    """What the series takes of a monitor's result (harness.monitors.MonitorResult)."""

    series: list[tuple[float, str, float]]  # (wall-clock time, metric, value)


def write_series(path: Path, stream: ChildStream, monitors: Iterable[Sampled]) -> bool:
    """Tidy time series (t_s, phase, metric, value): counters, their 1 s rates, points the
    suite set, and monitor samples aligned to the cell's clock. False, and no file, when
    there is nothing to write."""
    rows: list[tuple[float, str, str, float]] = []
    previous: dict[str, Any] | None = None
    for sample in stream.samples:
        t, phase, counters = sample["t"], sample["phase"], sample["counters"]
        for name, value in counters.items():
            rows.append((t, phase, name, value))
        if previous is not None and t - previous["t"] >= 0.5:
            dt = t - previous["t"]
            for name, value in counters.items():
                rate = (value - previous["counters"].get(name, 0)) / dt
                rows.append(((t + previous["t"]) / 2, phase, f"{name}_per_s", rate))
        if previous is None or t - previous["t"] >= 0.5:
            previous = sample
    for point in stream.points:
        rows.append((point["t"], "", point["name"], point["value"]))
    origin = stream.start_wall
    for result in monitors:
        for wall, name, value in result.series:
            if origin is not None:
                rows.append((wall - origin, "", name, value))
    if not rows:
        return False
    rows.sort(key=lambda row: row[0])
    with replacing(path, "the cell's series", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["t_s", "phase", "metric", "value"])
        writer.writerows((f"{t:.3f}", phase, name, value) for t, phase, name, value in rows)
    return True


def series_origin(record: Record) -> tuple[float, bool] | None:
    """(Unix seconds at the series' t_s = 0, exact?): the probe's start as the child said it,
    or, for a record written before that was kept, the cell's start in whole seconds (the
    interpreter's start-up, under a second or two, lies between the two). None: no clock."""
    kept = record.extra.get(SERIES_ORIGIN)
    if isinstance(kept, int | float) and not isinstance(kept, bool):
        return float(kept), True
    started = unix_seconds(record.started)
    return (started, False) if started is not None else None
