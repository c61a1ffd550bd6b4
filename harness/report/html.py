"""report.html: one self-contained page per run (plotly.js inlined, opens offline).

Header (machine, GPU or why there is none, versions, commit, the command), findings, then
per suite: the scaling chart, throughput over time, histograms, GPU and CPU timelines and
a sortable table of every cell-repeat. Failed, timed-out and never-run cells are rows of
the table like any other, never dropped.

Everything a user or a workload wrote (labels, params, reasons, warnings, findings) is
escaped with html.escape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.analysis import scaling
from harness.diagnosis.findings import severity_rank
from harness.model.registry import vocabulary_of
from harness.report import evidence, figures, where
from harness.report.html_page import Charts, Raw, esc, fmt, page, table
from harness.report.markdown import run_end
from harness.runs import nodes, provenance
from harness.runs.files import write_atomic
from harness.runs.record import Record, number
from harness.runs.view import RunView, SuiteView, varying_params

REPORT_FILE = "report.html"
MAX_TABLE_METRICS = 8
NOT_RUN_REASON = "no record: the sweep was interrupted or is still running (finish it with harness sweep --resume)"


# ---------------------------------------------------------------------- header


def header(run_dir: Path, meta: dict[str, Any], records: list[Record]) -> str:
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
            f"{run_dir.name} · {run_end(meta, records)}",
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


def findings_section(findings: list[dict[str, Any]] | None, refused: list[str] | None = None) -> str:
    """One row per finding in a table that fits the page at any width from 1024 px: fixed
    columns, long text wrapped, never a horizontal scroll bar; then the rules that could not
    judge (their evidence failed), one note each."""
    head = '<section id="findings"><h2>Findings</h2>' + "".join(
        f'<p class="note warn">{esc(line)}</p>' for line in refused or []
    )
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
    varying = varying_params(records) or list(records[0].params)[:4]
    metrics = _table_metrics(records, rate)
    on_nodes = any(nodes.node_of(r) for r in records)  # a sweep on Ray: the node each repeat ran on
    headers = ["id", "repeat", *varying, "status", "reason", *metrics, *(["Ray node"] if on_nodes else []), "warnings"]
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
                *(_rate_cell(rec, m) if m == rate else rec.metrics.get(m) for m in metrics),
                *([nodes.node_of(rec) or ""] if on_nodes else []),
                "; ".join(str(w) for w in rec.warnings),
            ]
        )
        attrs.append(f' class="status-{esc(status.replace(" ", "-"))}"')
    return table(headers, rows, attrs)


def _rate_cell(rec: Record, metric: str) -> Any:
    """The headline's value, with a note where the cell's headline failed its checks or its
    counter changed too seldom in the window to be rated between its reports."""
    value = rec.metrics.get(metric)
    note = provenance.cell_note([rec])
    if note is None or number(value) is None:
        return value
    return Raw(f'{esc(fmt(value))} <span class="warn">({esc(note)})</span>')


def suite_section(
    run_dir: Path,
    meta: dict[str, Any],
    suite: str,
    records: list[Record],
    charts: Charts,
    view: SuiteView | None,
    run_view: RunView | None = None,
) -> str:
    """One suite's section. `records` are its records and the repeats the run planned but
    never ran; `view` (None when nothing of the suite ran) gives the headline and warnings,
    `run_view` the scaling fits drawn over the scaling chart."""
    parts = [f'<section class="suite" id="suite-{esc(suite)}"><h2>Suite {esc(suite)}</h2>']
    ids = {r.id for r in records}
    bad = [r for r in records if not r.ok]
    summary = f"{len(ids)} cells, {len(records)} cell-repeats"
    if bad:
        summary += f", {len(bad)} not ok (see the table: they are excluded from the charts' medians)"
    parts.append(f"<p>{esc(summary)}</p>")
    rate = view.rate if view else None

    parts.append("<h3>Scaling</h3>")
    fig = None
    groups = scaling.of_suite(run_view, suite) if run_view is not None else []
    if rate:
        fig = figures.scaling_figure(records, rate, meta.get("cpu_cores"), groups)
        kind = "scaling"
        if fig is None:
            fig, kind = figures.bars_figure(records, rate), "throughput"
    if fig is not None:
        parts.append(charts.embed(fig, kind))
    else:
        parts.append('<p class="note">No successful cell reported a throughput (a *_per_s metric).</p>')
    for group in groups:
        parts.append(f'<p class="note usl">{esc(scaling.line(group))}</p>')

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
    if view and view.provenance:
        parts.append(f'<p class="note">headline {esc(view.provenance)}</p>')
    for warning in view.spread_warnings if view else []:
        parts.append(f'<p class="note warn">warning: {esc(warning)}</p>')
    parts.append(cells_table(records, rate))
    parts.append("</section>")
    return "\n".join(parts)


def nodes_section(view: RunView) -> str:
    """The Ray nodes the cells ran on, when each joined and was lost (harness.runs.nodes);
    nothing for a run that did not run on Ray."""
    found = nodes.rows(view.records, view.meta)
    if not found:
        return ""
    headers = ["node", "role", "joined", "lost", "why", "cell-repeats recorded", "ok", "lost with it (run again)"]
    rows = [
        [r.label, r.role, r.joined or "", r.lost or "", r.why or "", r.recorded, r.ok, ", ".join(r.cells_lost)]
        for r in found
    ]
    attrs = [' class="status-harness-error"' if r.lost else "" for r in found]
    return f'<section id="ray-nodes"><h2>Ray nodes</h2>{table(headers, rows, attrs)}</section>'


def render_run(run_dir: Path, view: RunView) -> str:
    meta, records = view.meta, view.records
    findings = view.findings_json()
    everything = records + _not_run(meta, records)
    suites: dict[str, list[Record]] = {}
    for rec in everything:
        suites.setdefault(rec.suite, []).append(rec)
    charts = Charts()
    parts = [header(run_dir, meta, records)]
    if suites:
        nav = " · ".join(f'<a href="#suite-{esc(s)}">{esc(s)}</a>' for s in suites)
        parts.append(f"<nav>Suites: {nav} · <a href='#findings'>findings</a></nav>")
    parts.append(findings_section(findings, view.refused_lines()))
    parts.append(nodes_section(view))
    tune_doc = _tune_document(run_dir)
    if tune_doc is not None:
        from harness.report.tune import html_section

        parts.append(html_section(tune_doc, table, esc))
    if not suites:
        parts.append('<p class="note">This run has no cells yet.</p>')
    for suite, recs in suites.items():
        parts.append(suite_section(run_dir, meta, suite, recs, charts, view.suites.get(suite), view))
    return page(f"report: {meta.get('label') or run_dir.name}", parts)


def _tune_document(run_dir: Path) -> dict | None:
    """A tune's tune.json beside the run's cells (harness tune), or None."""
    path = run_dir / "tune.json"
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        return None


def write_html(run_dir: Path, view: RunView) -> Path:
    path = run_dir / REPORT_FILE
    write_atomic(path, render_run(run_dir, view), "the run's report")
    return path
