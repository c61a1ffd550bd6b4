"""`harness limits`: what this machine can do at best, so reports can say how far a cell is.

Micro benchmarks run by pyperf in its own worker processes (harness.limits_bench): round
trips through multiprocessing Queue, Pipe and shared memory + Event, and the self-play
net's forward time per batch size -> an evals/s curve. The result is a run directory like a
sweep's (run.json, cells.jsonl: one `ipc` record and one `net` record, suite "limits") plus
pyperf's own JSON, so `pyperf stats/compare_to` work on it too.

`efficiency(record, limits_records)` is what reports call: a self-play cell's nn_evals/s over
the net's evals/s at the cell's mean batch size.
"""

from __future__ import annotations

import math
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness import metadata
from harness.errors import UserError
from harness.matrix import cell_id
from harness.store import RunStore, utc_now

SUITE = "limits"
TRANSPORTS = ("queue", "pipe", "shm")
DEFAULT_BATCHES = "1,2,4,8,16,32,64,128,256,512,1024"
PYPERF_FILE = "pyperf.json"
LOG_FILE = "logs/limits.log"
UNSTABLE_CV = 0.10  # pyperf's own threshold for "the benchmark seems unstable"
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def parse_batches(text: str) -> list[int]:
    try:
        batches = [int(b) for b in text.split(",")]
    except ValueError:
        raise UserError(f"--batches {text!r}: expected a comma list of integers, e.g. 1,2,4,8") from None
    if not batches or any(b < 1 or b > 65536 for b in batches):
        raise UserError(f"--batches {text!r}: every batch size must be 1..65536")
    return sorted(set(batches))


def cmd_limits(
    device: str,
    blocks: int,
    channels: int,
    batches: str,
    message_bytes: int,
    parts: str,
    fast: bool,
    pyperf_args: str | None,
    out: Path,
    threads: int = 0,
) -> int:
    if device not in ("cpu", "cuda"):
        raise UserError(f"--device {device!r}: allowed cpu, cuda")
    wanted = [p.strip() for p in parts.split(",") if p.strip()]
    if not wanted or set(wanted) - {"ipc", "net"}:
        raise UserError(f"--parts {parts!r}: allowed ipc, net or ipc,net")
    if blocks < 0 or channels < 1 or message_bytes < 1 or threads < 0:
        raise UserError("--blocks and --threads must be >= 0, --channels and --message-bytes >= 1")
    sizes = parse_batches(batches)
    if "net" in wanted and device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise UserError("--device cuda: torch sees no CUDA device here; use --device cpu")
    from harness.limits_bench import net_builder

    _, planes, net_source = net_builder() if "net" in wanted else (None, None, None)
    meta = {
        **metadata.collect(sys.argv),
        "label": f"limits-{device}",
        "kind": "limits",
        "started": utc_now(),
        "ended": None,
        "state": "running",
        "cells": [],
        "limits": {
            "device": device,
            "blocks": blocks,
            "channels": channels,
            "threads": threads,
            "batches": sizes,
            "parts": wanted,
        },
        "net_source": net_source,
    }
    store = RunStore.create(out, f"limits-{device}", meta)
    output = store.root / PYPERF_FILE
    command = [sys.executable, "-m", "harness.limits_bench", "--output", str(output)]
    command += ["--device", device, "--blocks", str(blocks), "--channels", str(channels)]
    command += ["--batches", ",".join(map(str, sizes)), "--message-bytes", str(message_bytes)]
    command += ["--parts", ",".join(wanted), "--threads", str(threads), "--inherit-environ", "PYTHONPATH"]
    command += ["--fast"] if fast else []
    command += shlex.split(pyperf_args or "")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(_PACKAGE_ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    started = utc_now()
    print(f"pyperf: {shlex.join(command[1:])}", flush=True)
    with open(store.root / LOG_FILE, "w") as log:
        done = subprocess.run(command, cwd=_PACKAGE_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode != 0 or not output.exists():
        store.update_meta(state="failed", ended=utc_now())
        tail = (store.root / LOG_FILE).read_text(errors="replace").strip().splitlines()[-5:]
        raise UserError(f"pyperf failed (exit {done.returncode}); {store.root / LOG_FILE}: " + " | ".join(tail))
    records = records_from_pyperf(output, device, blocks, channels, planes, net_source, message_bytes, started, threads)
    for record in records:
        store.append(record)
    store.update_meta(state="finished", ended=utc_now())
    print_limits(records)
    print(f"run directory: {store.root}")
    return 0


def records_from_pyperf(
    path: Path,
    device: str,
    blocks: int,
    channels: int,
    planes: int | None,
    net_source: str | None,
    message_bytes: int,
    started: str,
    threads: int = 0,
) -> list[dict[str, Any]]:
    """pyperf's JSON -> one `ipc` and/or one `net` record in the shape of cells.jsonl."""
    import numpy as np
    import pyperf

    benches = {b.get_name(): b for b in pyperf.BenchmarkSuite.load(str(path)).get_benchmarks()}
    records = []
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
        params = {"kind": "ipc", "message_bytes": message_bytes}
        records.append(_record(params, ipc, warnings, started, path))
    net: dict[str, Any] = {}
    curve: dict[str, float] = {}
    warnings = []
    for name, bench in benches.items():
        if not name.startswith("forward_b"):
            continue
        batch = int(name.removeprefix("forward_b"))
        values = np.array(bench.get_values())
        seconds = float(np.median(values))
        net[f"forward_ms_b{batch}"] = seconds * 1e3
        net[f"evals_per_s_b{batch}"] = batch / seconds
        curve[str(batch)] = batch / seconds
        warnings += _stability(name, values)
    if curve:
        best = max(curve, key=lambda b: curve[b])
        net.update(evals_per_s_max=curve[best], evals_per_s_best_batch=int(best), evals_per_s_curve=curve)
        params = {"kind": "net", "device": device, "blocks": blocks, "channels": channels, "planes": planes}
        params["threads"] = threads  # torch intra-op threads; 0 = torch's default
        record = _record(params, net, warnings, started, path)
        record["net_source"] = net_source
        records.append(record)
    return records


def _stability(name: str, values: Any) -> list[str]:
    """pyperf's own rule of thumb, kept in the record: a spread over 10 % of the mean."""
    if len(values) < 2 or values.mean() <= 0:
        return []
    cv = float(values.std(ddof=1) / values.mean())
    if cv <= UNSTABLE_CV:
        return []
    return [f"{name}: std dev is {cv:.0%} of the mean; the machine was busy, rerun with --pyperf-args=--rigorous"]


def _record(params: dict[str, Any], metrics: dict[str, Any], warnings: list[str], started: str, path: Path) -> dict:
    return {
        "id": cell_id(SUITE, params),
        "suite": SUITE,
        "params": params,
        "repeat": 0,
        "status": "ok",
        "reason": None,
        "started": started,
        "ended": utc_now(),
        "budget": None,
        "metrics": metrics,
        "warnings": warnings,
        "traceback": None,
        "series": None,
        "log": LOG_FILE,
        "stack_dump": None,
        "pyperf": path.name,
    }


def print_limits(records: list[dict[str, Any]]) -> None:
    for record in records:
        metrics = record["metrics"]
        if record["params"]["kind"] == "ipc":
            for name in TRANSPORTS:
                if f"{name}_rtt_us_p50" in metrics:
                    print(f"{name:>6} round trip: {metrics[f'{name}_rtt_us_p50']:9.1f} us (median)")
        else:
            p = record["params"]
            print(f"net {p['blocks']} blocks x {p['channels']} channels on {p['device']}:")
            for batch, rate in metrics["evals_per_s_curve"].items():
                print(f"  batch {int(batch):>5}: {metrics[f'forward_ms_b{batch}']:9.3f} ms  {rate:12.0f} evals/s")
        for warning in record["warnings"]:
            print(f"warning: {warning}")


# ---------------------------------------------------------------------- for reports
def load_limits(run_dir: Path) -> list[dict[str, Any]]:
    """The records of a `harness limits` run (RunStore errors name a corrupt file)."""
    return [r for r in RunStore.open(run_dir).records() if r.get("suite") == SUITE]


def net_limit_record(record: dict[str, Any], limits_records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The limits `net` record measured for the same net (blocks, channels) and device."""
    params = record.get("params", {})
    device = params.get("device", "cpu")
    for lim in limits_records:
        p = lim.get("params", {})
        if p.get("kind") != "net" or lim.get("status") != "ok":
            continue
        if p.get("blocks") != params.get("blocks") or p.get("channels") != params.get("channels"):
            continue
        if device in ("auto", p.get("device")):
            return lim
    return None


def evals_limit_at(curve: dict[str, float], batch: float) -> float | None:
    """The curve's evals/s at a (fractional) batch size: linear in log2(batch) between the
    measured sizes, held flat beyond the first and last."""
    points = sorted((int(b), float(v)) for b, v in curve.items())
    if not points or not batch or batch <= 0 or math.isnan(batch):
        return None
    if batch <= points[0][0]:
        return points[0][1]
    if batch >= points[-1][0]:
        return points[-1][1]
    for (b0, v0), (b1, v1) in zip(points, points[1:], strict=False):
        if b0 <= batch <= b1:
            w = (math.log2(batch) - math.log2(b0)) / (math.log2(b1) - math.log2(b0))
            return v0 + w * (v1 - v0)
    return None


def efficiency(record: dict[str, Any], limits_records: list[dict[str, Any]]) -> float | None:
    """A self-play cell's nn_evals_per_s / the net's evals/s at the cell's batch_mean
    (1.0 = as fast as a bare forward pass at that batch size). None when the cell lacks
    those metrics or the limits run has no curve for its net and device."""
    metrics = record.get("metrics") or {}
    achieved, batch = metrics.get("nn_evals_per_s"), metrics.get("batch_mean")
    if not isinstance(achieved, int | float) or not isinstance(batch, int | float):
        return None
    lim = net_limit_record(record, limits_records)
    if lim is None:
        return None
    limit = evals_limit_at(lim["metrics"].get("evals_per_s_curve", {}), float(batch))
    return achieved / limit if limit else None


def latest_limits(results_dir: Path) -> list[dict[str, Any]]:
    """The records of the newest `harness limits` run among a results directory's runs
    (run directories sort by their UTC timestamp), or [] when there is none."""
    for run_dir in sorted(results_dir.glob("*-limits-*"), reverse=True):
        try:
            return load_limits(run_dir)
        except UserError:
            continue
    return []


def with_efficiency(records: list[dict[str, Any]], limits_records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of the records with `efficiency_pct` (achieved evals/s as % of the bare
    forward pass at the same batch size) wherever a limits curve matches; the stored
    records are left as measured."""
    if not limits_records:
        return records
    out = []
    for record in records:
        ratio = efficiency(record, limits_records)
        if ratio is not None:
            record = {**record, "metrics": {**record["metrics"], "efficiency_pct": 100.0 * ratio}}
        out.append(record)
    return out


def transport_rtt_us(limits_records: list[dict[str, Any]], transport: str = "shm") -> float | None:
    """The median round trip of one transport (the server's floor cost per request)."""
    for lim in limits_records:
        if lim.get("params", {}).get("kind") == "ipc":
            value = lim["metrics"].get(f"{transport}_rtt_us_p50")
            return float(value) if value is not None else None
    return None
