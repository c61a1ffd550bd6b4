"""The GPU half on a real GPU: NVML readings, nets on cuda in every backend that claims them,
the forward-pass limit on cuda, and NET_OFF_DEVICE on a program whose workers drop the device.

Marked `cuda` and skipped where torch sees no CUDA device (CI never has one);
benchmarks/gpu/run.sh runs them on a lent GPU machine (`pytest -m cuda tests/gpu`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here"),
]

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
TINY = {"blocks": 1, "channels": 8, "simulations": 8, "leaves": 4}


def test_nvml_sees_this_process_busy_on_the_gpu():
    from harness.monitors.gpu import GpuMonitor

    monitor = GpuMonitor()
    assert monitor.open(os.getpid()), monitor.reason
    x = torch.randn(4096, 4096, device="cuda")
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        for _ in range(20):
            x = torch.tanh(x @ x)
        torch.cuda.synchronize()
        monitor.sample()
    monitor.finish()
    metrics = monitor.summarise()
    assert metrics["gpu_util_mean"] > 10, metrics
    assert os.getpid() in metrics["gpu_pids"] or metrics.get("gpu_pids_note"), metrics
    assert metrics["gpu_mem_peak_mb"] > 0


@pytest.mark.parametrize("backend", ["sequential", "threads", "processes", "server"])
def test_every_backend_runs_its_nets_on_cuda(backend):
    from harness.probe import Probe
    from suites.selfplay import SUITE

    probe = Probe(target_work=2)
    SUITE.run(SUITE.params(backend=backend, workers=2, device="cuda", **TINY), probe)
    metrics = probe.finish()
    assert metrics["games"] == 2
    assert metrics["worker_devices"] and all(d.startswith("cuda") for d in metrics["worker_devices"]), metrics
    if backend == "server":
        assert metrics["workers_with_torch"] == 0


def test_forward_limit_times_the_net_on_cuda():
    from suites.selfplay.limits import time_forward

    seconds = time_forward(10, 64, {"device": "cuda", "blocks": 2, "channels": 32})
    assert 0 < seconds < 10


def _watch(tmp_path: Path, *args: str) -> list[dict]:
    """harness watch over net_device.py, then its findings as `harness diagnose --json` gives them.
    HARNESS_GPU_CHECK_OUT (set by benchmarks/gpu/run.sh) keeps the run directory for the record."""
    import json

    out = Path(os.environ.get("HARNESS_GPU_CHECK_OUT") or tmp_path) / f"watch-{'-'.join(a.strip('-') for a in args)}"
    program = [sys.executable, str(PROGRAMS / "net_device.py"), *args]
    done = subprocess.run(
        ["harness", "watch", "--duration", "8", "--out", str(out), "--", *program],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    run_dir = next(p for p in out.iterdir() if p.is_dir())
    found = subprocess.run(["harness", "diagnose", str(run_dir), "--json"], capture_output=True, text=True, timeout=60)
    return json.loads(found.stdout)


def test_net_off_device_fires_when_workers_drop_the_device(tmp_path):
    findings = _watch(tmp_path, "--device", "cuda", "--drop-device")
    assert any(f["rule"] == "NET_OFF_DEVICE" and f["severity"] == "warning" for f in findings), findings


def test_net_off_device_stays_quiet_when_workers_use_cuda(tmp_path):
    findings = _watch(tmp_path, "--device", "cuda")
    assert not any(f["rule"] == "NET_OFF_DEVICE" for f in findings), findings
