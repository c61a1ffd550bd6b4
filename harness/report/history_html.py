"""`harness history` as a self-contained HTML chart (plotly inlined: opens offline)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_chart(path: Path, metric: str, rows: list[dict[str, Any]]) -> None:
    import plotly.graph_objects as go

    fig = go.Figure()
    for cell in dict.fromkeys(r["cell"] for r in rows):
        mine = [r for r in rows if r["cell"] == cell]
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
                name=cell,
                customdata=[[r["commit"], r["run"], r["n"]] for r in mine],
                hovertemplate="%{y:.4g} (median of %{customdata[2]})<br>commit %{customdata[0]}<br>%{customdata[1]}",
            )
        )
    fig.update_layout(
        title=f"{metric}: median per run (bars: min-max of repeats)",
        xaxis_title="run started (UTC)",
        yaxis_title=metric,
        hovermode="closest",
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.write_html(path, include_plotlyjs=True, full_html=True)
