"""Where the time went: the watch instruments' breakdown per role and per process, as a
terminal table and as a section of report.html (tables and a share-over-time chart).

Reads only the record's metrics (`watch_roles`, `watch_procs`, the cost) and its series
(`where_<role>_<category>`), so it works on any run directory, also later; and says which
instruments saw nothing, why and the fix (harness.monitors.blind), at the end of a run.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.monitors import blind
from harness.report import figures
from harness.runs.record import Record

CATEGORIES = ("compute", "torch", "ipc", "gil_wait", "sleep", "blocked", "cuda_sync", "native")
TERMINAL_PROCESSES = 8
COLUMNS = ("cpu_cores", "wakeups_hz", "read_mb_s", "write_mb_s")


def watched(records: list[Record]) -> list[Record]:
    return [r for r in records if isinstance(r.metrics.get("watch_roles"), dict) and r.metrics["watch_roles"]]


def _present(rows: dict[str, dict[str, Any]]) -> list[str]:
    return [c for c in CATEGORIES if any(float((row.get("pct") or {}).get(c, 0.0)) > 0 for row in rows.values())]


def blind_lines(records: list[Record]) -> list[str]:
    """The instruments that saw nothing (harness.monitors.blind), one line per reason, with
    how many of the watched cell-repeats it was when there are several: the end of a sweep
    or a watch says so, with the fix, instead of leaving an empty table to read as health."""
    watched_ok = [r for r in records if "stacks_samples" in r.metrics or "waits_passes" in r.metrics]
    counts = Counter(line for r in watched_ok for line in dict.fromkeys(blind.warnings(r.metrics)))
    if len(watched_ok) <= 1:
        return list(counts)
    return [f"{line} (in {n} of {len(watched_ok)} cell-repeats)" for line, n in counts.items()]


def cost_line(rec: Record) -> str:
    m = rec.metrics
    rates = m.get("stacks_rate_hz") or []
    rate = "/".join(str(r) for r in rates) if rates else "-"
    parts = [
        f"py-spy {rate} Hz per process, {m.get('stacks_samples', 0)} samples of {m.get('stacks_processes', 0)} processes",
        f"instruments {float(m.get('watch_cpu_pct', 0.0)):.1f} % of one core",
    ]
    if m.get("torch_hook_s"):
        parts.append(f"torch hook {1e3 * float(m['torch_hook_s']):.1f} ms in the program")
    if m.get("stacks_unsampled"):
        parts.append(f"{len(m['stacks_unsampled'])} processes not sampled (see stacks_unsampled)")
    return "; ".join(parts)


def role_rows(rec: Record) -> tuple[list[str], list[list[Any]]]:
    roles: dict[str, dict[str, Any]] = rec.metrics["watch_roles"]
    cats = _present(roles)
    headers = ["role", "processes", "threads", *COLUMNS, *(f"{c} %" for c in cats)]
    rows = []
    for role, row in roles.items():
        pct = row.get("pct") or {}
        rows.append(
            [
                role,
                row.get("processes"),
                row.get("threads"),
                *(row.get(k) for k in COLUMNS),
                *(pct.get(c) for c in cats),
            ]
        )
    return headers, rows


def process_rows(rec: Record, limit: int | None = None) -> tuple[list[str], list[list[Any]]]:
    procs: dict[str, dict[str, Any]] = rec.metrics.get("watch_procs") or {}
    cats = _present(procs)
    waits: dict[str, str] = rec.metrics.get("watch_waits_procs") or {}
    headers = ["pid", "role", "entry", "threads", *COLUMNS, *(f"{c} %" for c in cats), "busiest thread", "waits on",
               "most time at"]  # fmt: skip
    rows = []
    for pid, row in list(procs.items())[:limit]:
        pct = row.get("pct") or {}
        top = max(pct, key=lambda c: pct[c]) if pct else None
        site = (row.get("sites") or {}).get(top, "") if top else ""
        rows.append(
            [pid, row.get("role"), row.get("entry"), row.get("threads"), *(row.get(k) for k in COLUMNS),
             *(pct.get(c) for c in cats), row.get("busiest_thread"), waits.get(pid), f"{top}: {site}" if site else ""]
        )  # fmt: skip
    return headers, rows


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return escape(str(value))


WAITS_SHOWN = 0.1  # role edges under this median share stay in report.html only
HEADS = {"cpu_cores": "cores", "wakeups_hz": "wake-ups/s", "read_mb_s": "read MB/s", "write_mb_s": "write MB/s"}


def render(records: list[Record], console: Console) -> None:
    """The role table and the busiest processes of every watched record (the process table
    without traffic columns, its last column cut to fit: the HTML report has it all)."""
    for rec in watched(records):
        headers, rows = process_rows(rec, TERMINAL_PROCESSES)
        keep = [i for i, h in enumerate(headers) if h not in ("read_mb_s", "write_mb_s", "waits on")]
        procs = ([headers[i] for i in keep], [[row[i] for i in keep] for row in rows])
        count = len(rec.metrics.get("watch_procs") or {})
        for title, (heads, body) in (
            ("where the time went, per role (% of sampled thread time)", role_rows(rec)),
            (f"busiest processes (of {count})", procs),
        ):
            table = Table(title=title, title_justify="left")
            for h in heads:
                if h == "most time at":
                    table.add_column(h, no_wrap=True, overflow="ellipsis", max_width=44)
                else:
                    table.add_column(HEADS.get(h, h.removesuffix(" %")), justify="left" if h in ("role", "entry") else "right")
            for row in body:
                table.add_row(*(_cell(v) for v in row))
            console.print(table)
        for edge in rec.metrics.get("watch_waits") or []:
            if edge["blocked"]["median"] >= WAITS_SHOWN:
                console.print(escape(f"waits: {edge['text']}"), highlight=False)
        console.print(escape(cost_line(rec)), highlight=False)


def html_section(run_dir: Path, records: list[Record], table, embed, esc) -> str:
    """report.html's section: `table(headers, rows)`, `embed(fig, kind)` and `esc` are
    harness.report.html's, so the page keeps one look and one plotly."""
    parts = []
    for rec in watched(records):
        parts.append(f"<h3>Where the time went: {esc(rec.label)}</h3>")
        parts.append(f'<p class="note">{esc(cost_line(rec))}</p>')
        parts.append(table(*role_rows(rec)))
        parts.append(table(*process_rows(rec)))
        edges = rec.metrics.get("watch_waits") or []
        if edges:
            parts.append("<h4>Who waits on whom (read from /proc)</h4>")
            parts.append(wait_diagram(edges, esc))
            parts.append("<ul>" + "".join(f"<li>{esc(e['text'])}</li>" for e in edges) + "</ul>")
        series = figures.load_series(run_dir, rec)
        if not series:
            continue
        for role in rec.metrics["watch_roles"]:
            data = []
            for category in CATEGORIES:
                name = f"where_{role}_{category}"
                if name in series:
                    ts, values = series[name]
                    data.append(
                        {
                            "type": "scatter",
                            "mode": "lines",
                            "stackgroup": "one",
                            "x": ts,
                            "y": [100 * v for v in values],
                            "name": category,
                        }
                    )
            if data:
                fig = figures.figure(
                    data, f"{role}: share of thread time per category", "time since the start (s)", "% of thread time"
                )
                parts.append(embed(fig, "where"))
    return "\n".join(parts)


def wait_diagram(edges: list[dict[str, Any]], esc) -> str:
    """The role edges as an inline SVG: one box per role, an arrow from each waiting role to
    what it waits on, labelled with the median share of the time it waits so."""
    targets = [e for e in edges if e["peers"]]
    names = list(dict.fromkeys([*(e["waiter"] for e in targets), *(e["on"] for e in targets)]))
    if not names:
        return ""
    width, box_w, box_h, gap = 720, 150, 36, 90
    xs = {n: 20 + i * (width - box_w - 40) / max(len(names) - 1, 1) for i, n in enumerate(names)}
    parts = [
        f'<svg width="{width}" height="{box_h + 2 * gap + 40}" xmlns="http://www.w3.org/2000/svg" '
        'font-family="sans-serif" font-size="12"><defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/></marker></defs>'
    ]
    y = gap
    for name, x in xs.items():
        parts.append(
            f'<rect x="{x:.0f}" y="{y}" width="{box_w}" height="{box_h}" rx="6" fill="#eef3fb" stroke="#446"/>'
        )
        parts.append(f'<text x="{x + box_w / 2:.0f}" y="{y + 22}" text-anchor="middle">{esc(name)}</text>')
    for i, e in enumerate(targets):
        a, b = xs[e["waiter"]] + box_w / 2, xs[e["on"]] + box_w / 2
        up = i % 2 == 0
        edge_y = y if up else y + box_h
        bend = edge_y - gap * 0.8 if up else edge_y + gap * 0.8
        if a == b:
            a, b = a - 30, a + 30
        parts.append(f'<path d="M {a:.0f} {edge_y} Q {(a + b) / 2:.0f} {bend:.0f} {b:.0f} {edge_y}" fill="none" '
                     'stroke="#a33" stroke-width="2" marker-end="url(#arrow)"/>')  # fmt: skip
        label = f"{e['waiters']} of {e['of']}: {100 * e['blocked']['median']:.0f} %"
        parts.append(
            f'<text x="{(a + b) / 2:.0f}" y="{(edge_y + bend) / 2:.0f}" text-anchor="middle">{esc(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
