"""Facts about the machine and the code, collected once per run for run.json.

Nothing here imports torch: versions come from package metadata, so a sweep's parent
stays small. Absent hardware is a recorded fact: no NVIDIA driver -> `gpu` is empty and
`gpu_reason` says why.
"""

from __future__ import annotations

import hashlib
import os
import platform
import socket
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import psutil

import harness
from harness.model.workshare import usable_cores


def _pkg_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_info(cwd: Path | None = None) -> dict[str, Any]:
    """The commit, whether tracked files differ from it, and a hash of that difference
    (`git diff HEAD`), so `--resume` can tell the same uncommitted code from other code."""
    root = Path(cwd or Path(harness.__file__).resolve().parent.parent)

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=True
        ).stdout

    try:
        commit = git("rev-parse", "HEAD").strip()
        dirty = bool(git("status", "--porcelain", "--untracked-files=no").strip())
        diff = hashlib.sha1(git("diff", "HEAD").encode()).hexdigest()[:12] if dirty else None
        return {"git_commit": commit, "git_dirty": dirty, "git_diff_sha1": diff}
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": None, "git_dirty": None, "git_diff_sha1": None}


def gpu_info() -> dict[str, Any]:
    try:
        import pynvml
    except ImportError as exc:
        return {"gpus": [], "gpu_reason": f"nvidia-ml-py not importable: {exc}"}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return {"gpus": [], "gpu_reason": f"NVML unavailable: {exc}"}
    try:
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(handle)
            mem = pynvml.nvmlDeviceGetMemoryInfo(handle)
            gpus.append(
                {
                    "index": i,
                    "name": name if isinstance(name, str) else name.decode(),
                    "memory_total_mb": mem.total / 2**20,
                }
            )
        driver = pynvml.nvmlSystemGetDriverVersion()
        return {
            "gpus": gpus,
            "gpu_driver": driver if isinstance(driver, str) else driver.decode(),
            "gpu_reason": None if gpus else "NVML found no devices",
        }
    except pynvml.NVMLError as exc:
        return {"gpus": [], "gpu_reason": f"NVML query failed: {exc}"}
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def collect(argv: list[str] | None = None) -> dict[str, Any]:
    return {
        "command": " ".join(argv if argv is not None else sys.argv),
        "harness_version": harness.__version__,
        **git_info(),
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "cpu_model": _cpu_model(),
        "cpu_cores": usable_cores(),
        "cpu_count_logical": os.cpu_count(),
        "memory_total_mb": psutil.virtual_memory().total / 2**20,
        "python": platform.python_version(),
        "versions": {name: _pkg_version(name) for name in ("torch", "numpy", "pandas", "numba", "ray")},
        **gpu_info(),
    }
