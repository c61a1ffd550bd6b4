"""Torch module calls of every process, from the start-up hook harness/watch/hook injects.

The hook (a sitecustomize first on the program's PYTHONPATH, active only where the
program itself imports torch) appends counts of top-level module calls per (module
class, device, batch size) to one JSON-lines file per process in this monitor's
directory. This monitor sets that up for the child's environment and reads the files
back; it runs no thread of its own.

Metrics: the generic `batch` signal's summary over every top-level call (batch_count,
batch_mean, batch_p50, batch_p95, batch_max, batch_hist), `batch_limit` (the most one call
could have held: the threads that called one module instance times the largest batch it
saw, where two or more threads shared it; or the limit the user gave), `worker_devices`
({pid: the device most of its calls ran on}), torch_calls, torch_processes, torch_modules
({class: calls}), torch_shared_threads_max, and the hook's own cost: torch_hook_s (time
spent in the wrapper, all processes) and torch_hook_us_per_call. Series: torch_calls and
torch_batch_mean per second. Calls made in the last FLUSH_WAIT_S before the program is ended
may be missing (the hook writes at most every half second).
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from harness.model.stats import weighted_summary
from harness.monitors.base import MonitorResult

HOOK_DIR = str(Path(__file__).resolve().parent.parent / "watch" / "hook")
ENV_DIR = "HARNESS_WATCH_TORCH_DIR"
# The hook flushes at most every 0.5 s (sitecustomize.FLUSH_S) and only when called; the
# program is ended after the monitors stop (SIGTERM runs no atexit), so the monitor waits
# one flush before reading.
FLUSH_WAIT_S = 0.6


def hook_env(env: dict[str, str], side_dir: Path) -> dict[str, str]:
    """`env` with the hook first on PYTHONPATH and its side-file directory set."""
    out = dict(env)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (HOOK_DIR, env.get("PYTHONPATH")) if p)
    out[ENV_DIR] = str(side_dir)
    return out


class TorchCallsMonitor:
    """Reads the hook's side files when stopped. `enabled=False` (--no-torch-hook, or a
    process the harness attached to and did not start) records why there is nothing."""

    name = "torch"

    def __init__(
        self, side_dir: Path, enabled: bool = True, reason: str | None = None, batch_limit: int | None = None
    ) -> None:
        self.side_dir = side_dir
        self.enabled = enabled
        self.reason = reason
        self.batch_limit = batch_limit
        self.devices: dict[int, dict[str, float]] = {}

    def environ(self, env: dict[str, str]) -> dict[str, str]:
        if not self.enabled:
            return env
        self.side_dir.mkdir(parents=True, exist_ok=True)
        return hook_env(env, self.side_dir)

    def start(self, root_pid: int) -> None:
        pass

    def stop(self) -> MonitorResult:
        metrics: dict[str, Any] = {}
        if not self.enabled:
            metrics["torch_reason"] = self.reason or "the torch hook was off"
            return MonitorResult(metrics=metrics)
        if any(self.side_dir.glob("torch-*.jsonl")):
            time.sleep(FLUSH_WAIT_S)  # every calling process flushes what it counted up to now
        lines = []
        for path in sorted(self.side_dir.glob("torch-*.jsonl")):
            for text in path.read_text(errors="replace").splitlines():
                try:
                    lines.append(json.loads(text))
                except json.JSONDecodeError:
                    continue  # a line cut by a kill
        if not lines:
            metrics["torch_reason"] = "no process called a torch module (or none imported torch)"
            if self.batch_limit:
                metrics["batch_limit"] = self.batch_limit
            return MonitorResult(metrics=metrics)
        by_batch: dict[float, float] = defaultdict(float)
        modules: dict[str, float] = defaultdict(float)
        devices: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        shared_limit, shared_max = 0, 1
        hook_s, calls = 0.0, 0.0
        per_second: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for line in lines:
            pid = int(line.get("pid", 0))
            hook_s += float(line.get("hook_s", 0.0))
            for module, device, batch, n in line.get("calls", []):
                by_batch[float(batch)] += n
                modules[str(module)] += n
                devices[pid][str(device)] += n
                calls += n
                bucket = per_second[int(float(line.get("t", 0.0)))]
                bucket[0] += n
                bucket[1] += n * float(batch)
            for _module, threads, biggest in line.get("shared", []):
                shared_max = max(shared_max, int(threads))
                if int(threads) >= 2:
                    shared_limit = max(shared_limit, int(threads) * int(biggest))
        self.devices = {pid: dict(d) for pid, d in devices.items()}
        metrics.update(weighted_summary("batch", list(by_batch), list(by_batch.values())))
        limit = self.batch_limit or shared_limit
        if limit:
            metrics["batch_limit"] = limit
        metrics["worker_devices"] = {str(pid): max(d, key=d.__getitem__) for pid, d in sorted(self.devices.items())}
        metrics["torch_calls"] = calls
        metrics["torch_processes"] = len(devices)
        metrics["torch_modules"] = dict(sorted(modules.items(), key=lambda kv: -kv[1]))
        metrics["torch_shared_threads_max"] = shared_max
        metrics["torch_hook_s"] = hook_s
        metrics["torch_hook_us_per_call"] = 1e6 * hook_s / calls if calls else None
        series = []
        for second, (n, batch_sum) in sorted(per_second.items()):
            series += [
                (second + 0.5, "torch_calls", n),
                (second + 0.5, "torch_batch_mean", batch_sum / n if n else 0.0),
            ]
        return MonitorResult(metrics=metrics, series=series)
