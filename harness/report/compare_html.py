"""compare.html: two runs side by side, as `harness compare --html` writes it.

A ratio chart for the metrics with a direction, every ratio in a sortable table, and the
cells that could not be matched. Built from harness.analysis.comparison's data with the run
report's page pieces (escaping, tables, plotly embedding).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.report import figures
from harness.report.html_page import Charts, Raw, esc, page, table


def _run_summary(name: str, run_dir: Path, meta: dict[str, Any]) -> list[tuple[str, Any]]:
    gpus = "; ".join(str(g.get("name")) for g in meta.get("gpus") or []) or "none"
    return [
        (
            f"run {name}",
            f"{run_dir} · commit {meta.get('git_commit') or '?'} · {meta.get('hostname', '?')}, "
            f"{meta.get('cpu_cores', '?')} cores, GPU {gpus} · {meta.get('started', '?')}",
        ),
        (f"command {name}", Raw(f"<code>{esc(meta.get('command') or '?')}</code>")),
    ]


def _ratio_figure(rows: list[dict[str, Any]]) -> figures.Figure:
    colours = {"better": "#1a7f37", "worse": "#b00020", "same": "#555555"}
    data = []
    for name, colour in colours.items():
        picked = [r for r in rows if r["verdict"] == name]
        if not picked:
            continue
        stats = [(r["ratio"], r["low"], r["high"]) for r in picked]
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": [r["ratio"] for r in picked],
                "y": [esc(f"{r['label']} · {r['metric']}") for r in picked],
                "name": name,
                "marker": {"color": colour, "size": 8},
                **figures._error(stats, "error_x"),
            }
        )
    return figures.figure(
        data,
        "B / A: ratio of medians with 95% bootstrap interval",
        "ratio B / A (log axis; 1 = unchanged)",
        "",
        height=max(300, 80 + 24 * len(rows)),
        margin={"l": 20},
        xaxis={"type": "log"},
        shapes=[
            {
                "type": "line",
                "x0": 1,
                "x1": 1,
                "xref": "x",
                "y0": 0,
                "y1": 1,
                "yref": "paper",
                "line": {"dash": "dot", "color": "#888"},
            }
        ],
    )


def _status(cell: dict[str, Any]) -> str:
    if "status_a" in cell:
        return f"A: {cell['status_a']}; B: {cell['status_b']}"
    return str(cell["status"])


def render_compare(comparison: Any) -> str:
    """compare.html: the ratio chart for metrics with a direction, every ratio in a
    sortable table, and the cells that could not be matched."""
    charts = Charts()
    meta_rows = _run_summary("A", comparison.run_a, comparison.meta_a) + _run_summary(
        "B", comparison.run_b, comparison.meta_b
    )
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in meta_rows)
    parts = [f'<header><h1>Comparison: B / A</h1><table class="meta">{body}</table></header>']
    directed = [r for r in comparison.rows if r["direction"]]
    counts = {v: sum(r["verdict"] == v for r in directed) for v in ("better", "worse", "same")}
    parts.append(
        f"<p>{counts['better']} better, {counts['worse']} worse, {counts['same']} same "
        f"(metrics with a known direction, over {len({r['id'] for r in comparison.rows})} matched cells). "
        "A verdict needs the whole 95% interval beyond 1; with one repeat a side there is no interval.</p>"
    )
    if directed:
        parts.append(charts.embed(_ratio_figure(directed), "compare"))
    headers = ["suite", "cell", "id", "metric", "better when", "A median", "B median", "ratio", "low", "high"]
    headers += ["n A", "n B", "verdict"]
    rows = [
        [
            r["suite"],
            r["label"],
            r["id"],
            r["metric"],
            r["direction"] or "–",
            r["median_a"],
            r["median_b"],
            r["ratio"],
            r["low"],
            r["high"],
            r["n_a"],
            r["n_b"],
            r["verdict"],
        ]
        for r in comparison.rows
    ]
    attrs = [f' class="verdict-{esc(r["verdict"])}"' for r in comparison.rows]
    parts.append("<h2>Every matched metric</h2>")
    parts.append(
        table(headers, rows, attrs) if rows else '<p class="note">No matched cell with numbers on both sides.</p>'
    )
    for title, cells in (
        ("Cells only in A", comparison.only_a),
        ("Cells only in B", comparison.only_b),
        ("Matched cells without a successful repeat on one side", comparison.unusable),
    ):
        parts.append(f"<h2>{esc(title)}</h2>")
        if cells:
            parts.append(
                table(
                    ["id", "suite", "cell", "status", "reason"],
                    [[c["id"], c["suite"], c["label"], _status(c), c.get("reason") or ""] for c in cells],
                )
            )
        else:
            parts.append('<p class="note">None.</p>')
    return page("comparison", parts)
