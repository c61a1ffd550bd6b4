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
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from harness.model.registry import vocabulary_of
from harness.runs.record import Record, number, spread_of
from harness.runs.view import varying_params

if TYPE_CHECKING:
    from harness.analysis.scaling import ScalingGroup

Figure = dict[str, Any]

HEIGHT = 340
# plotly.js's default colorway, named so a fitted curve and its band take their line's colour
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
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


def scaling_figure(
    records: list[Record], rate: str, cpu_cores: int | None, groups: Sequence[ScalingGroup] = ()
) -> Figure | None:
    """Median rate against workers (log2 axis; the suite's worker param), one line per
    combination of the other varying params (the backend, typically), error bars spanning
    min to max of repeats; over each line whose scaling group the USL fits, the fitted
    curve and its band (harness.analysis.scaling), dashed past the largest count measured."""
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
    fitted = {" ".join(f"{p}={g.params.get(p)}" for p in others) or rate: g for g in groups if g.rate == rate}
    data = []
    ticks: set[float] = set()
    tops = []
    for i, (name, points) in enumerate(lines.items()):
        colour = COLOURS[i % len(COLOURS)]
        xs = sorted(points)
        ticks.update(xs)
        stats = [_spread(points[x]) for x in xs]
        tops.append(max(st[2] for st in stats))
        group = fitted.get(name)
        if group is not None and group.fit.ok:
            data += usl_traces(group, esc(name), colour)
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": xs,
                "y": [st[0] for st in stats],
                "name": esc(name),
                "line": {"color": colour},
                "marker": {"color": colour},
                "customdata": [[len(points[x])] for x in xs],
                "hovertemplate": key + " %{x}<br>median %{y:.4g}<br>repeats %{customdata[0]}",
                **_error(stats),
            }
        )
    tickvals = sorted(ticks)
    drawn = any(t.get("meta") == "usl-curve" for t in data)
    title = f"{rate} against {key} (median; bars: min-max of repeats"
    title += "; USL fit, its 95 % band, dashed past the counts measured)" if drawn else ")"
    layout: dict[str, Any] = {"type": "log", "tickvals": tickvals, "ticktext": [f"{t:g}" for t in tickvals]}
    yaxis = {"range": [0, 1.3 * max(tops)]} if drawn else {}  # a band far past the data would flatten it
    return figure(data, title, f"{key} (log2 axis)", rate, xaxis=layout, yaxis=yaxis)


def usl_traces(group: ScalingGroup, name: str, colour: str) -> list[dict[str, Any]]:
    """A fitted group's band (two edges, the upper filled down to the lower) and curve:
    solid over the counts measured, dashed one doubling past them (or to just past the
    peak, when it lies within two doublings)."""
    found = group.fit
    top = max(found.counts)
    end = 2.0 * top
    if found.peak is not None and top < found.peak.value <= 4.0 * top:
        end = max(end, min(1.25 * found.peak.value, 4.0 * top))
    grid = np.unique(np.concatenate([np.geomspace(min(found.counts), end, 80), found.counts]))
    band = found.predict(grid)
    xs = grid.tolist()
    edge = {"type": "scatter", "mode": "lines", "line": {"width": 0, "color": colour}, "hoverinfo": "skip"}
    out = []
    if band.low is not None and band.high is not None:
        out += [
            {**edge, "x": xs, "y": band.low.tolist(), "showlegend": False, "legendgroup": name, "meta": "usl-band"},
            {
                **edge,
                "x": xs,
                "y": band.high.tolist(),
                "fill": "tonexty",
                "fillcolor": _translucent(colour),
                "name": f"{name}: USL 95 % band",
                "legendgroup": name,
                "meta": "usl-band",
            },
        ]
    inside, past = grid <= top, grid >= top
    curve = {"type": "scatter", "mode": "lines", "legendgroup": name, "hovertemplate": "USL %{x:.3g}: %{y:.4g}"}
    out.append(
        {
            **curve,
            "x": grid[inside].tolist(),
            "y": band.rate[inside].tolist(),
            "line": {"color": colour, "width": 1.5},
            "name": f"{name}: USL fit",
            "meta": "usl-curve",
        }
    )
    out.append(
        {
            **curve,
            "x": grid[past].tolist(),
            "y": band.rate[past].tolist(),
            "line": {"color": colour, "width": 1.5, "dash": "dash"},
            "name": f"{name}: USL past the counts measured",
            "showlegend": False,
            "meta": "usl-extrapolated",
        }
    )
    return out


def _translucent(colour: str, alpha: float = 0.18) -> str:
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


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
