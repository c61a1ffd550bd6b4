"""Plotly figures for the HTML report, built from a run's records and its series CSVs.

Every figure is built from measured data only; a figure with nothing to draw is None, and
the page says why instead of showing an empty frame. Text that came from the user (labels,
params) is HTML-escaped before it reaches plotly, which renders a subset of HTML in
legends and titles (and decodes the entities back for display).

Figures are plain plotly.js dicts ({"data": [...], "layout": {...}}), not graph_objects:
validating and templating graph_objects costs about 0.3 s a figure, more than drawing.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from harness.model.registry import vocabulary_of
from harness.runs.record import Record, number, spread_of
from harness.runs.view import varying_params

Figure = dict[str, Any]

HEIGHT = 340
_AXIS = {"gridcolor": "#e8e8e8", "zerolinecolor": "#cccccc", "linecolor": "#999999", "automargin": True}


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def ok_records(records: Iterable[Record]) -> list[Record]:
    return [r for r in records if r.ok]


def figure(data: list[dict[str, Any]], title: str, xtitle: str, ytitle: str, **layout: Any) -> Figure:
    base = {
        "title": {"text": esc(title), "font": {"size": 15}},
        "height": HEIGHT,
        "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
        "legend": {"font": {"size": 11}},
        "showlegend": True,
        "hovermode": "closest",
        "plot_bgcolor": "#ffffff",
        "xaxis": {**_AXIS, "title": {"text": esc(xtitle)}},
        "yaxis": {**_AXIS, "title": {"text": esc(ytitle)}},
    }
    for key, value in layout.items():
        base[key] = {**base[key], **value} if isinstance(base.get(key), dict) else value
    return {"data": data, "layout": base}


def _error(stats: list[tuple[float, float, float]], axis: str = "error_y") -> dict[str, Any]:
    return {
        axis: {
            "type": "data",
            "symmetric": False,
            "array": [s[2] - s[0] for s in stats],
            "arrayminus": [s[0] - s[1] for s in stats],
        }
    }


def _spread(values: list[float]) -> tuple[float, float, float]:
    found = spread_of(values)
    assert found is not None  # every point drawn has at least one value
    return found.median, found.low, found.high


def _workers(rec: Record, key: str, cpu_cores: int | None) -> float | None:
    value = number(rec.params.get(key))
    if value is None:
        return None
    if value == 0 and cpu_cores:
        return float(cpu_cores)  # workers=0 means one per core of the machine that ran it
    return value if value > 0 else None


def scaling_figure(records: list[Record], rate: str, cpu_cores: int | None) -> Figure | None:
    """Median rate against workers (log2 axis; the suite's worker param), one line per
    combination of the other varying params (the backend, typically), error bars spanning
    min to max of repeats."""
    key = vocabulary_of(records[0].suite).workers if records else None
    varying = varying_params(records)
    if key is None or key not in varying:
        return None
    others = [p for p in varying if p != key]
    lines: dict[str, dict[float, list[float]]] = {}
    for rec in ok_records(records):
        x, y = _workers(rec, key, cpu_cores), rec.number(rate)
        if x is None or y is None:
            continue
        name = " ".join(f"{p}={rec.params.get(p)}" for p in others) or rate
        lines.setdefault(name, {}).setdefault(x, []).append(y)
    if not lines:
        return None
    data = []
    ticks: set[float] = set()
    for name, points in lines.items():
        xs = sorted(points)
        ticks.update(xs)
        stats = [_spread(points[x]) for x in xs]
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": xs,
                "y": [st[0] for st in stats],
                "name": esc(name),
                "customdata": [[len(points[x])] for x in xs],
                "hovertemplate": key + " %{x}<br>median %{y:.4g}<br>repeats %{customdata[0]}",
                **_error(stats),
            }
        )
    tickvals = sorted(ticks)
    return figure(
        data,
        f"{rate} against {key} (median; bars: min-max of repeats)",
        f"{key} (log2 axis)",
        rate,
        xaxis={"type": "log", "tickvals": tickvals, "ticktext": [f"{t:g}" for t in tickvals]},
    )


def bars_figure(records: list[Record], rate: str) -> Figure | None:
    """Median rate per cell when the sweep has no workers axis to draw a curve along."""
    cells: dict[str, list[float]] = {}
    for rec in ok_records(records):
        y = rec.number(rate)
        if y is not None:
            cells.setdefault(rec.label, []).append(y)
    if not cells:
        return None
    names = list(cells)
    stats = [_spread(cells[n]) for n in names]
    bar = {
        "type": "bar",
        "x": [esc(n) for n in names],
        "y": [st[0] for st in stats],
        "name": esc(rate),
        **_error(stats),
    }
    return figure([bar], f"{rate} per cell (median; bars: min-max of repeats)", "cell", rate, showlegend=False)


Series = dict[str, tuple[list[float], list[float]]]


def load_series(run_dir: Path, rec: Record) -> Series | None:
    """A cell-repeat's tidy series CSV (t_s, phase, metric, value) as metric -> (t, values),
    or None when it has none."""
    rel = rec.series
    if not rel:
        return None
    try:
        frame = pd.read_csv(run_dir / rel)
    except (OSError, ValueError, pd.errors.ParserError):
        return None
    if not {"t_s", "metric", "value"} <= set(frame.columns):
        return None
    frame["value"] = pd.to_numeric(frame["value"], errors="coerce")
    frame = frame.dropna(subset=["t_s", "value"])
    return {
        str(metric): (group["t_s"].tolist(), group["value"].tolist())
        for metric, group in frame.groupby("metric", sort=False)
    }


def timeline_figure(
    series: list[tuple[str, Series]], metric: str, title: str, ytitle: str, scale: float = 1.0
) -> Figure | None:
    """One line per cell-repeat of `metric` over the cell's clock."""
    data = []
    for label, by_metric in series:
        if metric not in by_metric:
            continue
        ts, values = by_metric[metric]
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": ts,
                "y": [v * scale for v in values],
                "name": esc(label),
                "marker": {"size": 4},
            }
        )
    if not data:
        return None
    return figure(data, title, "time since the cell started (s)", ytitle)


def hist_names(records: list[Record]) -> list[str]:
    names: dict[str, None] = {}
    for rec in records:
        for key, value in rec.metrics.items():
            if key.endswith("_hist") and isinstance(value, dict) and value:
                names.setdefault(key, None)
    return list(names)


def hist_figure(records: list[Record], name: str) -> Figure | None:
    """Counts of each observed value (e.g. inference batch size), summed over a cell's
    repeats, one bar series per cell."""
    cells: dict[str, dict[float, float]] = {}
    for rec in records:
        hist = rec.metrics.get(name)
        if not isinstance(hist, dict):
            continue
        counts = cells.setdefault(rec.label, {})
        for value, count in hist.items():
            try:
                counts[float(value)] = counts.get(float(value), 0.0) + float(count)
            except (TypeError, ValueError):
                continue
    cells = {k: v for k, v in cells.items() if v}
    if not cells:
        return None
    data = []
    for label, counts in cells.items():
        xs = sorted(counts)
        data.append({"type": "bar", "x": xs, "y": [counts[x] for x in xs], "name": esc(label)})
    base = name.removesuffix("_hist")
    return figure(data, f"{base}: histogram of observed values (summed over repeats)", base, "count", barmode="group")
