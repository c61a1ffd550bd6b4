"""Running the pyperf program and turning its JSON into a run directory of limit records.

One record per part, suite "limits": `ipc` (round-trip latencies per transport) and one
per suite limit benchmark (`SUITE.NAME`, its options as params): the time per call at each
size, the rate per size (`<unit>_per_s_b<size>`), the curve, its best point, and pyperf's
own instability warning where a benchmark's spread exceeds 10 % of its mean.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.cell.processes import PACKAGE_ROOT
from harness.errors import StorageError, UserError
from harness.model.registry import discover
from harness.model.vocabulary import LimitBenchmark
from harness.roofline import IPC, SUITE, TRANSPORTS
from harness.running import metadata
from harness.running.matrix import cell_id
from harness.runs.record import Record
from harness.runs.store import RunStore, utc_now

PYPERF_FILE = "pyperf.json"
LOG_FILE = "logs/limits.log"
UNSTABLE_CV = 0.10  # pyperf's own threshold for "the benchmark seems unstable"


@dataclass
class Plan:
    """What `harness limits` will time: parts, sizes and each suite part's validated options."""

    parts: list[str]
    sizes: list[int] | None
    message_bytes: int
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    benches: dict[str, LimitBenchmark] = field(default_factory=dict)


def available_parts() -> dict[str, LimitBenchmark | None]:
    """`ipc` and every installed suite's limit benchmarks as `SUITE.NAME`."""
    suites, _ = discover()
    parts: dict[str, LimitBenchmark | None] = {IPC: None}
    for name, suite in sorted(suites.items()):
        for bench in suite.words.limits:
            parts[f"{name}.{bench.name}"] = bench
    return parts


def parse_sizes(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        sizes = [int(b) for b in text.split(",")]
    except ValueError:
        raise UserError(f"--sizes {text!r}: expected a comma list of integers, e.g. 1,2,4,8") from None
    if not sizes or any(b < 1 or b > 65536 for b in sizes):
        raise UserError(f"--sizes {text!r}: every size must be 1..65536")
    return sorted(set(sizes))


def plan(parts: str | None, sizes: str | None, message_bytes: int, settings: dict[str, str]) -> Plan:
    """Validate the command line: known parts, options each suite part accepts."""
    known = available_parts()
    wanted = [p.strip() for p in (parts or ",".join(known)).split(",") if p.strip()]
    unknown = [p for p in wanted if p not in known]
    if not wanted or unknown:
        raise UserError(f"--parts {parts!r}: allowed: {', '.join(known)} (a comma list)")
    if message_bytes < 1:
        raise UserError("--message-bytes must be >= 1")
    result = Plan(wanted, parse_sizes(sizes), message_bytes)
    used: set[str] = set()
    for part in wanted:
        bench = known[part]
        if bench is None:
            continue
        fields = getattr(bench.options, "model_fields", {})
        mine = {k: v for k, v in settings.items() if k in fields}
        used |= set(mine)
        try:
            result.options[part] = bench.options.model_validate(mine).model_dump(mode="json")
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise UserError(f"{part}: {problems}; options: {', '.join(fields)}") from None
        result.benches[part] = bench
    stray = sorted(set(settings) - used)
    if stray:
        accepted = sorted({f for b in result.benches.values() for f in getattr(b.options, "model_fields", {})})
        raise UserError(f"--set {', '.join(stray)}: no part takes it; options: {', '.join(accepted) or 'none'}")
    return result


def measure(what: Plan, fast: bool, pyperf_args: str | None, out: Path) -> tuple[RunStore, list[Record]]:
    """Run pyperf over the plan; store and return one record per part."""
    label = "limits-" + "-".join(p.replace(".", "-") for p in what.parts)
    meta = {
        **metadata.collect(sys.argv),
        "label": label,
        "kind": "limits",
        "started": utc_now(),
        "ended": None,
        "state": "running",
        "cells": [],
        "limits": {"parts": what.parts, "sizes": what.sizes, "options": what.options},
    }
    store = RunStore.create(out, label, meta)
    output = store.root / PYPERF_FILE
    command = [sys.executable, "-m", "harness.roofline.bench", "--output", str(output)]
    command += ["--parts", ",".join(what.parts), "--sizes", ",".join(map(str, what.sizes or []))]
    command += ["--message-bytes", str(what.message_bytes), "--options", json.dumps(what.options)]
    command += ["--inherit-environ", "PYTHONPATH,HARNESS_SUITES,HARNESS_PLUGINS"]
    command += ["--fast"] if fast else []
    command += shlex.split(pyperf_args or "")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)}
    started = utc_now()
    print(f"pyperf: {shlex.join(command[1:])}", flush=True)
    try:
        log = open(store.root / LOG_FILE, "w")  # noqa: SIM115 - closed below; pyperf writes into it
    except OSError as exc:
        raise StorageError.from_os(exc, store.root / LOG_FILE, "pyperf's log") from None
    with log:
        done = subprocess.run(command, cwd=PACKAGE_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode != 0 or not output.exists():
        store.update_meta(state="failed", ended=utc_now())
        tail = (store.root / LOG_FILE).read_text(errors="replace").strip().splitlines()[-5:]
        raise UserError(f"pyperf failed (exit {done.returncode}); {store.root / LOG_FILE}: " + " | ".join(tail))
    records = records_from_pyperf(output, what, started)
    for record in records:
        store.append(record)
    store.update_meta(state="finished", ended=utc_now())
    return store, records


def records_from_pyperf(path: Path, what: Plan, started: str) -> list[Record]:
    """pyperf's JSON -> one `ipc` record and one record per suite part."""
    import numpy as np
    import pyperf

    benches = {b.get_name(): b for b in pyperf.BenchmarkSuite.load(str(path)).get_benchmarks()}
    records = []
    if IPC in what.parts:
        ipc: dict[str, Any] = {}
        warnings: list[str] = []
        for name in TRANSPORTS:
            bench = benches.get(f"{name}_rtt")
            if bench is None:
                continue
            values = np.array(bench.get_values()) * 1e6
            ipc[f"{name}_rtt_us_p50"] = float(np.median(values))
            ipc[f"{name}_rtt_us_p95"] = float(np.percentile(values, 95))
            ipc[f"{name}_rtt_us_mean"] = float(values.mean())
            warnings += _stability(f"{name}_rtt", values)
        if ipc:
            records.append(_record({"part": IPC, "payload_bytes": what.message_bytes}, ipc, warnings, started, path))
    for part, limit in what.benches.items():
        metrics: dict[str, Any] = {}
        curve: dict[str, float] = {}
        warnings = []
        prefix = f"{part}:{limit.name}_b"
        for name, bench in benches.items():
            if not name.startswith(prefix):
                continue
            size = int(name.removeprefix(prefix))
            values = np.array(bench.get_values())
            seconds = float(np.median(values))
            metrics[f"{limit.name}_ms_b{size}"] = seconds * 1e3
            metrics[f"{limit.unit}_per_s_b{size}"] = size / seconds
            curve[str(size)] = size / seconds
            warnings += _stability(name, values)
        if curve:
            best = max(curve, key=lambda b: curve[b])
            metrics[f"{limit.unit}_per_s_max"] = curve[best]
            metrics[f"{limit.unit}_per_s_best_size"] = int(best)
            metrics[f"{limit.unit}_per_s_curve"] = curve
            records.append(_record({"part": part, **what.options[part]}, metrics, warnings, started, path))
    return records


def _stability(name: str, values: Any) -> list[str]:
    """pyperf's own rule of thumb, kept in the record: a spread over 10 % of the mean."""
    if len(values) < 2 or values.mean() <= 0:
        return []
    cv = float(values.std(ddof=1) / values.mean())
    if cv <= UNSTABLE_CV:
        return []
    return [f"{name}: std dev is {cv:.0%} of the mean; the machine was busy, rerun with --pyperf-args=--rigorous"]


def _record(params: dict[str, Any], metrics: dict[str, Any], warnings: list[str], started: str, path: Path) -> Record:
    return Record(
        id=cell_id(SUITE, params),
        suite=SUITE,
        params=params,
        repeat=0,
        status="ok",
        started=started,
        ended=utc_now(),
        metrics=metrics,
        warnings=warnings,
        log=LOG_FILE,
        extra={"pyperf": path.name},
    )
