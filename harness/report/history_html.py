"""`harness history` as a self-contained HTML chart (plotly inlined: opens offline): one
line per machine and cell, change points marked where the level stepped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.analysis.trend import series
from harness.runs.files import make_dirs, write_atomic


def write_chart(path: Path, metric: str, rows: list[dict[str, Any]]) -> None:
    import plotly.graph_objects as go

    fig = go.Figure()
    for (machine, cell), mine in series(rows).items():
        host = machine.split(" / ")[0]
        fig.add_trace(
            go.Scatter(
                x=[r["started"] for r in mine],
                y=[r["median"] for r in mine],
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [r["max"] - r["median"] for r in mine],
                    "arrayminus": [r["median"] - r["min"] for r in mine],
                },
                mode="lines+markers",
                name=f"{cell} @ {host}",
                customdata=[[r["commit"], r["run"], r["n"], machine] for r in mine],
                hovertemplate="%{y:.4g} (median of %{customdata[2]})<br>commit %{customdata[0]}<br>"
                "%{customdata[1]}<br>%{customdata[3]}",
            )
        )
        changed = [r for r in mine if r.get("change") is not None]
        if changed:
            fig.add_trace(
                go.Scatter(
                    x=[r["started"] for r in changed],
                    y=[r["median"] for r in changed],
                    mode="markers+text",
                    marker={"symbol": "diamond-open", "size": 16, "line": {"width": 2}},
                    text=[f"{100 * r['change']:+.1f} %" for r in changed],
                    textposition="top center",
                    name=f"change points: {cell} @ {host}",
                    customdata=[[r["commit"], r["change_p"]] for r in changed],
                    hovertemplate="level changed here: %{text}<br>commit %{customdata[0]}<br>p %{customdata[1]:.3f}",
                )
            )
    fig.update_layout(
        title=f"{metric}: median per run (bars: min-max of repeats; diamonds: change points), one line per machine",
        xaxis_title="run started (UTC)",
        yaxis_title=metric,
        hovermode="closest",
    )
    make_dirs(path.parent, "the history chart's folder")
    write_atomic(path, fig.to_html(include_plotlyjs=True, full_html=True), "the history chart")
