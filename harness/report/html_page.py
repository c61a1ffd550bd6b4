"""The pieces every HTML page of the harness is built from: escaping, number format,
sortable tables, plotly charts embedded (plotly.js inlined once per page), the page shell.

Everything a user or a workload wrote is escaped with html.escape unless it is `Raw`
markup this package built itself.
"""

from __future__ import annotations

import html
import math
from typing import Any

import plotly.io as pio

from harness.report import evidence

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}

class Raw(str):
    """Markup this module built itself (already escaped); any other str is escaped."""


def esc(value: Any) -> str:
    return value if isinstance(value, Raw) else html.escape(str(value), quote=True)


def fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return "–" if isinstance(value, float) and math.isnan(value) else evidence.number(value)
    return str(value)


def _sort_key(value: Any) -> str | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return repr(value)
    return None


WRAP_COLUMNS = {"reason", "warnings", "evidence", "hint", "cell"}


def table(headers: list[str], rows: list[list[Any]], row_attrs: list[str] | None = None, cls: str = "sortable") -> str:
    """A table whose headers sort it on click (numbers numerically); wide ones scroll."""
    head = "".join(f'<th title="click to sort">{esc(h)}</th>' for h in headers)
    wrap = [' class="wrap"' if h in WRAP_COLUMNS else "" for h in headers]
    body = []
    for i, row in enumerate(rows):
        cells = []
        for value, cls_attr in zip(row, wrap, strict=True):
            key = _sort_key(value)
            attr = f' data-v="{esc(key)}"' if key is not None else ""
            text = value if isinstance(value, Raw) else esc(fmt(value))
            cells.append(f"<td{cls_attr}{attr}>{text}</td>")
        attrs = row_attrs[i] if row_attrs else ""
        body.append(f"<tr{attrs}>{''.join(cells)}</tr>")
    return (
        f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


class Charts:
    """Embeds figures; plotly.js is inlined once, with the first (include_plotlyjs=True)."""

    def __init__(self) -> None:
        self.count = 0

    def embed(self, fig: Any, kind: str) -> str:
        div = pio.to_html(fig, include_plotlyjs=self.count == 0, full_html=False, config=PLOTLY_CONFIG, validate=False)
        self.count += 1
        return f'<div class="chart" data-chart="{esc(kind)}">{div}</div>'


STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em auto;max-width:1200px;
 padding:0 1em;color:#222;background:#fff}
h1{font-size:1.5em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}h3{font-size:1.05em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
td,th{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}
table.sortable th{cursor:pointer;background:#f4f4f4;user-select:none}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
table.meta th{background:#f4f4f4;width:11em}table.meta td{white-space:normal;word-break:break-word}
tr.status-error td,tr.status-timeout td,tr.status-killed td,tr.status-harness-error td{background:#fde8e8}
tr.status-not-run td{background:#f0f0f0;color:#666}
tr.verdict-better td{background:#e6f4ea}tr.verdict-worse td{background:#fde8e8}
td{white-space:nowrap}td.wrap{white-space:normal;min-width:14em;max-width:32em;word-break:break-word}
.scroll{overflow-x:auto}
.note{color:#555;font-style:italic}
.sev-critical,.sev-error{color:#b00020;font-weight:bold}.sev-warning,.sev-warn{color:#9a6700;font-weight:bold}
.chart{margin:.5em 0 1em 0;min-height:340px}
code{background:#f4f4f4;padding:0 .2em}
table.meta{width:100%;table-layout:fixed}
table.findings{width:100%;table-layout:fixed}
table.findings td{white-space:normal;overflow-wrap:anywhere}
table.findings th{background:#f4f4f4}
col.f-severity{width:6em}col.f-rule{width:11em}col.f-cells{width:8em}col.f-evidence{width:40%}
table.evidence{margin:0;font-size:1em;width:100%;table-layout:auto}
table.evidence th,table.evidence td{border:0;border-bottom:1px solid #eee;padding:.1em .3em;background:none;
 white-space:normal;overflow-wrap:anywhere}
table.evidence th{font-weight:normal;color:#555;width:30%}
"""

SORT_JS = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = table.querySelectorAll("th");
  heads.forEach(function (th, col) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var asc = th.getAttribute("aria-sort") !== "ascending";
      heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      function key(row) {
        var cell = row.cells[col];
        if (!cell) return "";
        var v = cell.getAttribute("data-v");
        return v === null ? cell.textContent : v;
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b), nx = Number(x), ny = Number(y);
        var numeric = x !== "" && y !== "" && !isNaN(nx) && !isNaN(ny);
        var r = numeric ? nx - ny : x.localeCompare(y);
        return asc ? r : -r;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""


def page(title: str, parts: list[str]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>\n"
        + "\n".join(parts)
        + f"\n<script>{SORT_JS}</script>\n</body></html>\n"
    )
