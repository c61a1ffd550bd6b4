"""Constructed run directories for report tests: known numbers, hostile strings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.runs.record import Record
from harness.runs.store import RunStore
from tests.records import make_record

XSS = "<script>alert(1)</script>"

META = {
    "command": f"harness sweep --label '{XSS}'",
    "harness_version": "0.1.0",
    "git_commit": "0123456789abcdef",
    "git_dirty": False,
    "hostname": "testhost",
    "platform": "Linux",
    "cpu_model": "Test CPU",
    "cpu_cores": 2,
    "cpu_count_logical": 2,
    "memory_total_mb": 4096.0,
    "python": "3.11",
    "versions": {"numpy": "2"},
    "gpus": [{"index": 0, "name": "Test GPU", "memory_total_mb": 1024.0}],
    "gpu_driver": "1.0",
    "gpu_reason": None,
    "state": "finished",
}

FINDINGS = [
    {
        "severity": "warning",
        "rule": "SMALL_BATCHES",
        "cells": ["c-server"],
        "evidence": {"batch_mean": 3.1, "note": XSS},
        "hint": f"more workers {XSS}",
    },
    {"severity": "info", "rule": "DRIFT", "cells": "c-server", "evidence": "slope -2 %/min", "hint": "-"},
]


def record(cell_id: str, repeat: int, params: dict[str, Any], metrics: dict[str, Any], **extra: Any) -> Record:
    return make_record(cell_id, metrics, params, suite="toy", repeat=repeat, **extra)


def series_csv(rate: float, gpu: bool = True) -> str:
    lines = ["t_s,phase,metric,value"]
    for i in range(5):
        t = 0.5 + i
        lines += [
            f"{t},measure,games_per_s,{rate * (1 - 0.02 * i)}",
            f"{t},,cpu_util,{90 + i}",
            f"{t},,mem_pss_mb,{200 + 10 * i}",
        ]
        if gpu:
            lines += [f"{t},,gpu_util,{50 + i}", f"{t},,gpu_mem_mb,{700 + i}"]
    return "\n".join(lines) + "\n"


def make_run(
    root: Path,
    label: str,
    scale: float = 1.0,
    latency_scale: float = 1.0,
    drop: str | None = None,
    add: str | None = None,
    fail: str | None = None,
) -> Path:
    """A `toy` suite run: backends {local, server} x workers {1, 2, 4}, three repeats each,
    plus a failed cell whose reason and params carry XSS. `scale` multiplies throughput,
    `latency_scale` the latency; `drop`/`add` remove or add a cell id; `fail` makes a
    cell's every repeat an error."""
    cells = []
    records = []
    for backend in ("local", "server"):
        for workers in (1, 2, 4):
            cid = f"c-{backend}" if workers == 4 else f"c-{backend}-{workers}"
            if cid == drop:
                continue
            params = {"backend": backend, "workers": workers, "note": XSS if backend == "server" else "plain"}
            cells.append({"id": cid, "suite": "toy", "params": params, "repeats": 3})
            for repeat in range(3):
                metrics = {
                    "games_per_s": scale * workers * (10 + repeat),
                    "games_per_min": scale * workers * (10 + repeat) * 60,
                    "wait_ms_p95": latency_scale * (5.0 + repeat * 0.1),
                    "games": 100 * workers,
                    "cpu_util_mean": 80.0 + repeat,
                    "mem_pss_peak_mb": 250.0,
                    "batch_mean": 3.0 + workers,
                    "batch_hist": {"1": 5, str(workers): 20, "8": 2},
                }
                extra: dict[str, Any] = {"series": f"series/{cid}-{repeat}.csv", "warnings": [f"warned {XSS}"]}
                if cid == fail:
                    extra.update(status="error", reason=f"ValueError: bad {XSS}", series=None)
                    metrics = {"cpu_util_mean": 1.0}
                records.append(record(cid, repeat, params, metrics, **extra))
    failed_params = {"backend": XSS, "workers": 1, "note": XSS}
    cells.append({"id": "c-bad", "suite": "toy", "params": failed_params, "repeats": 1})
    records.append(
        record("c-bad", 0, failed_params, {}, status="timeout", reason=f"no result within 4 s: {XSS}", series=None)
    )
    if add:
        params = {"backend": "extra", "workers": 8, "note": "plain"}
        cells.append({"id": add, "suite": "toy", "params": params, "repeats": 1})
        records.append(record(add, 0, params, {"games_per_s": 1.0}))
    # planned but never run (an interrupted sweep)
    cells.append({"id": "c-never", "suite": "toy", "params": {"backend": "never", "workers": 2}, "repeats": 1})
    store = RunStore.create(root, label, {**META, "label": label, "cells": cells})
    for rec in records:
        store.append(rec)
        if rec.series:
            (store.root / rec.series).write_text(series_csv(rec.metrics["games_per_s"]))
    return store.root


def viewed(store, findings=None):
    """A stored run's one view (harness.runs.view), with these findings as if diagnosed."""
    from harness.runs.view import build_view

    view = build_view(store.records(), store.meta())
    view.findings = findings
    return view
