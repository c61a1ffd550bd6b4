"""report.html: one self-contained page per run (plotly.js inlined, opens offline).

Header (machine, GPU or why there is none, versions, commit, the command), findings, then
per suite: the scaling chart, throughput over time, histograms, GPU and CPU timelines and
a sortable table of every cell-repeat. Failed, timed-out and never-run cells are rows of
the table like any other, never dropped.

Everything a user or a workload wrote (labels, params, reasons, warnings, findings) is
escaped with html.escape.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import plotly.io as pio

from harness.diagnosis.findings import severity_rank
from harness.record import Record, number
from harness.registry import vocabulary_of
from harness.report import evidence, figures, where
from harness.report.spread import spread_warnings

REPORT_FILE = "report.html"
MAX_TABLE_METRICS = 8
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
NOT_RUN_REASON = "no record: the sweep was interrupted or is still running (finish it with harness sweep --resume)"


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
tr.status-error td,tr.status-timeout td,tr.status-killed td{background:#fde8e8}
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


# ---------------------------------------------------------------------- header


def header(run_dir: Path, meta: dict[str, Any]) -> str:
    gpus = meta.get("gpus") or []
    if gpus:
        gpu = "; ".join(f"{g.get('name')} ({fmt(g.get('memory_total_mb'))} MB)" for g in gpus)
        if meta.get("gpu_driver"):
            gpu += f"; driver {meta['gpu_driver']}"
    else:
        gpu = f"none: {meta.get('gpu_reason') or 'not recorded'}"
    versions = {"python": meta.get("python"), "harness": meta.get("harness_version"), **(meta.get("versions") or {})}
    commit = meta.get("git_commit") or "unknown"
    if meta.get("git_dirty"):
        commit += " (with uncommitted changes)"
    memory = meta.get("memory_total_mb")
    rows = [
        (
            "run",
            f"{run_dir.name} · state {meta.get('state', '?')} · {meta.get('started', '?')} to {meta.get('ended') or '?'}",
        ),
        ("command", Raw(f"<code>{esc(meta.get('command') or '?')}</code>")),
        (
            "machine",
            f"{meta.get('hostname', '?')}: {meta.get('cpu_model', '?')}, {meta.get('cpu_cores', '?')} usable cores "
            f"({meta.get('cpu_count_logical', '?')} logical), "
            f"{fmt(memory / 1024) if isinstance(memory, int | float) else '?'} GiB; {meta.get('platform', '?')}",
        ),
        ("GPU", gpu),
        ("versions", ", ".join(f"{k} {v}" for k, v in versions.items() if v)),
        ("git commit", commit),
        ("machine noise", _noise(meta)),
    ]
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    title = meta.get("label") or run_dir.name
    return f'<header><h1>Benchmark report: {esc(title)}</h1><table class="meta">{body}</table></header>'


def _noise(meta: dict[str, Any]) -> str:
    """The machine's noise as `harness doctor` read it (run.json's machine_noise)."""
    found = meta.get("machine_noise")
    if not isinstance(found, dict):
        return str(meta.get("machine_noise_note") or "not recorded (harness doctor measures it)")
    trust = found.get("trust_pct_by_repeats") or {}
    worth = ", ".join(f"{evidence.number(v)} % with {k} repeat(s) a side" for k, v in trust.items())
    return (
        f"{evidence.number(found.get('between_processes_spread_pct'))} % between fresh processes "
        f"(harness doctor, {found.get('measured_at')}); differences worth trusting: above {worth}"
    )


# ---------------------------------------------------------------------- findings


def evidence_table(value: Any) -> str:
    """A finding's evidence as a small two-column table (harness.report.evidence)."""
    found = evidence.rows(value)
    if not found:
        return ""
    body = "".join(f"<tr><th>{esc(label)}</th><td>{esc(text)}</td></tr>" for label, text in found)
    return f'<table class="evidence">{body}</table>'


FINDING_COLUMNS = ("severity", "rule", "cells", "evidence", "finding")


def findings_section(findings: list[dict[str, Any]] | None) -> str:
    """One row per finding in a table that fits the page at any width from 1024 px: fixed
    columns, long text wrapped, never a horizontal scroll bar."""
    head = '<section id="findings"><h2>Findings</h2>'
    if findings is None:
        return head + '<p class="note">No diagnosis was run for this report.</p></section>'
    if not findings:
        return head + '<p class="note">No findings: no diagnosis rule fired.</p></section>'
    ordered = sorted(findings, key=lambda f: severity_rank(str(f.get("severity", ""))))
    body = []
    for f in ordered:
        severity = str(f.get("severity", ""))
        cells = f.get("cells") or []
        if isinstance(cells, str):
            cells = [cells]
        links = ", ".join(f'<a href="#cell-{esc(c)}">{esc(c)}</a>' for c in cells)
        body.append(
            "<tr>"
            f'<td><span class="sev-{esc(severity.lower())}">{esc(severity)}</span></td>'
            f"<td>{esc(f.get('rule', ''))}</td><td>{links}</td>"
            f"<td>{evidence_table(f.get('evidence'))}</td><td>{esc(f.get('hint', ''))}</td>"
            "</tr>"
        )
    cols = "".join(f'<col class="f-{c}">' for c in FINDING_COLUMNS)
    heads = "".join(f"<th>{c}</th>" for c in FINDING_COLUMNS)
    return (
        head + f'<table class="findings"><colgroup>{cols}</colgroup><thead><tr>{heads}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></section>"
    )


# ---------------------------------------------------------------------- suites


def _not_run(meta: dict[str, Any], records: list[Record]) -> list[Record]:
    """Cells the run planned (run.json) that have no record: shown as `not run`."""
    done = {(r.id, r.repeat) for r in records}
    missing = []
    for cell in meta.get("cells") or []:
        for repeat in range(int(cell.get("repeats", 1))):
            if (cell.get("id"), repeat) not in done:
                missing.append(
                    Record(
                        str(cell.get("id")), str(cell.get("suite")), cell.get("params", {}), repeat, "not run",
                        NOT_RUN_REASON,
                    )
                )  # fmt: skip
    return missing


def _table_metrics(records: list[Record], rate: str | None) -> list[str]:
    present = {k for r in records for k, v in r.metrics.items() if number(v) is not None}
    chosen = [rate] if rate else []
    drift = f"{rate.removesuffix('_per_min')}_per_s_drift_pct_per_min" if rate else None
    if drift in present:
        chosen.append(drift)
    columns = vocabulary_of(records[0].suite).columns(present) if records else []
    chosen += [m for m in columns if m not in chosen]
    return chosen[:MAX_TABLE_METRICS]


def cells_table(records: list[Record], rate: str | None) -> str:
    varying = figures.varying_params(records) or list(records[0].params)[:4]
    metrics = _table_metrics(records, rate)
    headers = ["id", "repeat", *varying, "status", "reason", *metrics, "warnings"]
    rows, attrs = [], []
    seen: set[str] = set()
    for rec in records:
        cid = rec.id
        anchor = f'<a id="cell-{esc(cid)}"></a>' if cid not in seen else ""
        seen.add(cid)
        params = rec.params
        status = rec.status
        rows.append(
            [
                Raw(f'{anchor}<span id="cell-{esc(cid)}-{esc(rec.repeat)}">{esc(cid)}</span>'),
                rec.repeat,
                *(
                    params.get(p) if not isinstance(params.get(p), dict | list) else json.dumps(params.get(p))
                    for p in varying
                ),
                status,
                rec.reason or "",
                *(rec.metrics.get(m) for m in metrics),
                "; ".join(str(w) for w in rec.warnings),
            ]
        )
        attrs.append(f' class="status-{esc(status.replace(" ", "-"))}"')
    return table(headers, rows, attrs)


def suite_section(run_dir: Path, meta: dict[str, Any], suite: str, records: list[Record], charts: Charts) -> str:
    parts = [f'<section class="suite" id="suite-{esc(suite)}"><h2>Suite {esc(suite)}</h2>']
    ids = {r.id for r in records}
    bad = [r for r in records if not r.ok]
    summary = f"{len(ids)} cells, {len(records)} cell-repeats"
    if bad:
        summary += f", {len(bad)} not ok (see the table: they are excluded from the charts' medians)"
    parts.append(f"<p>{esc(summary)}</p>")
    rate = figures.primary_rate(records)

    parts.append("<h3>Scaling</h3>")
    fig = None
    if rate:
        fig = figures.scaling_figure(records, rate, meta.get("cpu_cores"))
        kind = "scaling"
        if fig is None:
            fig, kind = figures.bars_figure(records, rate), "throughput"
    if fig is not None:
        parts.append(charts.embed(fig, kind))
    else:
        parts.append('<p class="note">No successful cell reported a throughput (a *_per_s metric).</p>')

    series = []
    for rec in records:
        frame = figures.load_series(run_dir, rec)
        if frame is not None:
            label = f"{rec.label} #{rec.repeat}"
            if not rec.ok:
                label += f" ({rec.status})"
            series.append((label, frame))

    parts.append("<h3>Throughput over time</h3>")
    fig = None
    if rate:
        counter_rate, scale = (
            (rate.removesuffix("_per_min") + "_per_s", 60.0) if rate.endswith("_per_min") else (rate, 1.0)
        )
        fig = figures.timeline_figure(series, counter_rate, f"{rate} over time (1 s windows)", rate, scale)
    if fig is not None:
        parts.append(charts.embed(fig, "throughput-time"))
    else:
        parts.append(
            '<p class="note">No rate series: cells shorter than about 1.5 s record fewer than two samples.</p>'
        )

    for name in figures.hist_names(records):
        fig = figures.hist_figure(records, name)
        if fig is not None:
            parts.append(f"<h3>Histogram: {esc(name)}</h3>")
            parts.append(charts.embed(fig, "histogram"))

    parts.append("<h3>GPU</h3>")
    gpu_figs = [
        figures.timeline_figure(series, "gpu_util", "GPU utilisation", "GPU busy (%)"),
        figures.timeline_figure(series, "gpu_mem_mb", "GPU memory of the cell's processes", "MB"),
    ]
    if any(f is not None for f in gpu_figs):
        parts += [charts.embed(f, "gpu") for f in gpu_figs if f is not None]
    else:
        reason = meta.get("gpu_reason") or "the cells used no GPU"
        parts.append(f'<p class="note">No GPU samples ({esc(reason)}).</p>')

    if where.watched(records):
        parts.append(where.html_section(run_dir, records, table, charts.embed, esc))

    parts.append("<h3>CPU and memory</h3>")
    cpu_figs = [
        figures.timeline_figure(series, "cpu_util", "CPU use of the cell's process tree", "CPU (%, 100 = one core)"),
        figures.timeline_figure(
            series, "mem_pss_mb", "Memory of the cell's process tree (PSS: shared pages counted once)", "PSS (MB)"
        )
        or figures.timeline_figure(series, "rss_mb", "Summed RSS of the cell's process tree (older runs)", "RSS (MB)"),
    ]
    if any(f is not None for f in cpu_figs):
        parts += [charts.embed(f, "cpu") for f in cpu_figs if f is not None]
    else:
        parts.append('<p class="note">No CPU samples.</p>')

    parts.append("<h3>Cells</h3>")
    for warning in spread_warnings(records, rate):
        parts.append(f'<p class="note warn">warning: {esc(warning)}</p>')
    parts.append(cells_table(records, rate))
    parts.append("</section>")
    return "\n".join(parts)


def render_run(
    run_dir: Path,
    meta: dict[str, Any],
    records: list[Record],
    findings: list[dict[str, Any]] | None = None,
) -> str:
    everything = records + _not_run(meta, records)
    suites: dict[str, list[Record]] = {}
    for rec in everything:
        suites.setdefault(rec.suite, []).append(rec)
    charts = Charts()
    parts = [header(run_dir, meta)]
    if suites:
        nav = " · ".join(f'<a href="#suite-{esc(s)}">{esc(s)}</a>' for s in suites)
        parts.append(f"<nav>Suites: {nav} · <a href='#findings'>findings</a></nav>")
    parts.append(findings_section(findings))
    if not suites:
        parts.append('<p class="note">This run has no cells yet.</p>')
    for suite, recs in suites.items():
        parts.append(suite_section(run_dir, meta, suite, recs, charts))
    return page(f"report: {meta.get('label') or run_dir.name}", parts)


def write_html(
    run_dir: Path,
    meta: dict[str, Any],
    records: list[Record],
    findings: list[dict[str, Any]] | None = None,
) -> Path:
    path = run_dir / REPORT_FILE
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(render_run(run_dir, meta, records, findings), encoding="utf-8")
    tmp.replace(path)
    return path
