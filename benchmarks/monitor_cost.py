"""The samplers' own cost: CPU % of one core used by each monitor thread.

A stand-in cell (a session leader with N sleeping children) is sampled by the CPU monitor
at its default 2 Hz, by the memory monitor (RSS at 4 Hz, PSS as its cost budget allows)
and by the GPU monitor at 10 Hz. Without a GPU the GPU monitor replays
NVML-like readings that list every child on the device, so what is measured is the
sampler's own work (membership checks, bookkeeping) without the NVML calls themselves.

    python benchmarks/monitor_cost.py [--children 8,64] [--seconds 10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

from harness.cell.processes import tree
from harness.monitors.cpu import CpuMonitor
from harness.monitors.gpu import DeviceSample, GpuMonitor
from harness.monitors.gpu_replay import ReplaySource
from harness.monitors.memory import MemoryMonitor, read_pss

CHILD = "import subprocess, sys, time\nkids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']) for _ in range({n})]\nprint(' '.join(str(k.pid) for k in kids), flush=True)\ntime.sleep(600)"


def measure(children: int, seconds: float) -> tuple[float, float, float, float, int]:
    root = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(n=children)], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        pids = [int(p) for p in root.stdout.readline().split()]
        reading = [DeviceSample(0, 50.0, 1000.0, 80_000.0, {pid: 100.0 for pid in pids})]
        while len(tree(root.pid)) < children + 1:
            time.sleep(0.05)
        t0 = time.process_time()
        read_pss(tree(root.pid))
        one_pss_ms = 1000 * (time.process_time() - t0)
        cpu, gpu, mem = CpuMonitor(), GpuMonitor(source=ReplaySource([reading])), MemoryMonitor()
        cpu.start(root.pid)
        gpu.start(root.pid)
        mem.start(root.pid)
        time.sleep(seconds)
        cpu_m, gpu_m, mem_m = cpu.stop().metrics, gpu.stop().metrics, mem.stop().metrics
        assert len(gpu_m["gpu_pids"]) == children
        return (
            cpu_m["cpu_monitor_cpu_pct"], gpu_m["gpu_monitor_cpu_pct"], mem_m["mem_monitor_cpu_pct"], one_pss_ms,
            mem_m["mem_pss_samples"],
        )  # fmt: skip
    finally:
        os.killpg(root.pid, signal.SIGKILL)
        root.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--children", default="8,64")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(
        "children  cpu_monitor_cpu_pct (2 Hz)  gpu_monitor_cpu_pct (10 Hz, replay)  mem_monitor_cpu_pct  "
        "one PSS reading of the tree (CPU ms)  PSS readings   median [min-max] of repeats"
    )
    for n in (int(x) for x in args.children.split(",")):
        runs = [measure(n, args.seconds) for _ in range(args.repeats)]
        cpu = [r[0] for r in runs]
        gpu = [r[1] for r in runs]
        mem = [r[2] for r in runs]
        pss_ms = [r[3] for r in runs]
        print(
            f"{n:>8}  {statistics.median(cpu):6.2f} [{min(cpu):.2f}-{max(cpu):.2f}]"
            f"            {statistics.median(gpu):6.2f} [{min(gpu):.2f}-{max(gpu):.2f}]"
            f"          {statistics.median(mem):6.2f} [{min(mem):.2f}-{max(mem):.2f}]"
            f"      {statistics.median(pss_ms):6.1f} [{min(pss_ms):.1f}-{max(pss_ms):.1f}]"
            f"      {statistics.median(r[4] for r in runs):.0f}"
        )


if __name__ == "__main__":
    main()
