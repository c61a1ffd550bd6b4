"""GPU sampler on replayed NVML-like samples, the no-GPU path, and the CPU sampler's new fields."""

import os
import subprocess
import sys
import threading
import time

import pytest

from harness.monitors.base import MonitorResult, SamplingEnded, SamplingMonitor
from harness.monitors.cpu import CpuMonitor
from harness.monitors.gpu import DeviceSample, GpuMonitor, PynvmlSource
from harness.monitors.gpu_replay import ReplaySource


@pytest.fixture
def cell_tree():
    """A stand-in cell: a session leader with one child, like `python -m harness.cell`."""
    # the child burns ~0.1 s of CPU first: a process that only starts may have 0 ticks on a
    # tick-accounted kernel, and the monitor's busiest-process figure must have something to read
    code = "import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; sum(range(3_000_000)); time.sleep(30)']); print(p.pid, flush=True); time.sleep(30)"
    root = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    child = int(root.stdout.readline())
    try:
        yield root.pid, child
    finally:
        os.killpg(root.pid, 9)
        root.wait()


def test_replayed_samples_give_utilisation_memory_and_the_cells_gpu_pids(cell_tree):
    root, child = cell_tree
    stranger = os.getpid()  # on the GPU, but not in the cell's session or tree
    samples = [
        [
            DeviceSample(0, util, 1000 + util, 80_000, {child: 500.0 + util, stranger: 100.0}),
            DeviceSample(1, 0, 0, 80_000, {}),
        ]
        for util in (10, 20, 30, 40)
    ]
    monitor = GpuMonitor(source=ReplaySource(samples))
    assert monitor.open(root)
    for _ in range(4):
        monitor.sample()
    metrics = monitor.summarise()
    assert metrics["gpu_pids"] == [child] and metrics["gpu_other_pids"] == [stranger]
    assert metrics["gpu_devices_used"] == [0]  # device 1 idle and unused: left out of the means
    assert metrics["gpu_util_mean"] == pytest.approx(25.0)
    assert metrics["gpu_util_p95"] == pytest.approx(38.5)
    assert metrics["gpu_mem_peak_mb"] == pytest.approx(540.0) and metrics["gpu_mem_source"] == "processes"
    assert metrics["gpu_device_mem_peak_mb"] == pytest.approx(1040.0)
    assert metrics["gpu_procs_peak"] == 1 and metrics["gpu_samples"] == 4
    assert metrics["gpu_driver"] == "replay"
    assert "gpu_reason" not in metrics
    assert {name for _, name, _ in monitor._result.series} == {"gpu_util", "gpu_mem_mb"}
    monitor.stop()


def test_the_sampler_thread_runs_and_reports_its_own_cost(cell_tree):
    root, child = cell_tree
    recorded = [
        {"index": 0, "util_pct": 99.0, "mem_used_mb": 10.0, "mem_total_mb": 100.0, "processes": {str(child): None}}
    ]
    monitor = GpuMonitor(source=ReplaySource([recorded]), period_s=0.01)
    monitor.start(root)
    time.sleep(0.3)
    result = monitor.stop()
    m = result.metrics
    assert m["gpu_samples"] >= 5 and m["gpu_period_s"] == 0.01
    assert m["gpu_util_mean"] == 99.0 and m["gpu_pids"] == [child]
    assert m["gpu_mem_source"] == "device" and m["gpu_mem_peak_mb"] == 10.0  # no per-process memory
    assert m["gpu_monitor_cpu_pct"] >= 0 and "gpu_monitor_cpu_s" in m
    assert child in result.processes  # so the runner can end it


def test_no_driver_leaves_only_the_reason():
    monitor = GpuMonitor(source=ReplaySource([], fail="NVML unavailable: NVML Shared Library Not Found"))
    monitor.start(os.getpid())
    assert monitor.stop().metrics == {"gpu_reason": "NVML unavailable: NVML Shared Library Not Found"}


def test_the_real_source_here_says_why_it_cannot_sample():
    monitor = GpuMonitor(source=PynvmlSource())
    monitor.start(os.getpid())
    metrics = monitor.stop().metrics
    if "gpu_util_mean" not in metrics:  # this machine has no NVIDIA driver
        assert set(metrics) == {"gpu_reason"}
        assert "NVML" in metrics["gpu_reason"] or "nvidia-ml-py" in metrics["gpu_reason"]


def test_cpu_monitor_reports_per_process_time_rss_switches_and_its_own_cost(cell_tree):
    root, child = cell_tree
    monitor = CpuMonitor(period_s=0.05)
    monitor.start(root)
    time.sleep(0.4)
    m = monitor.stop().metrics
    assert m["cpu_procs_peak"] == 2 and m["cpu_procs_seen"] == 2
    assert set(m["cpu_procs"]) == {str(root), str(child)}
    assert m["cpu_s"] >= m["cpu_proc_cpu_s_max"] > 0
    assert all(p["rss_peak_mb"] > 1 for p in m["cpu_procs"].values())  # tree memory: test_memory.py
    assert m["cpu_ctx_vol"] > 0 and m["cpu_ctx_invol"] >= 0
    assert m["cpu_monitor_samples"] >= 3 and 0 <= m["cpu_monitor_cpu_pct"] < 100


def fake_pynvml(procs_error=None, init_error=None):
    """A stand-in for the few pynvml calls PynvmlSource makes (no GPU here to call the real ones)."""
    import types

    class NVMLError(Exception):
        pass

    class NVMLError_NotSupported(NVMLError):  # noqa: N801 (pynvml's spelling)
        pass

    def init():
        if init_error:
            raise NVMLError(init_error)

    def procs(handle):
        if procs_error:
            raise procs_error(NVMLError_NotSupported)
        return [
            types.SimpleNamespace(pid=4242, usedGpuMemory=512 * 2**20),
            types.SimpleNamespace(pid=7, usedGpuMemory=None),
        ]

    return types.SimpleNamespace(
        NVMLError=NVMLError,
        NVMLError_NotSupported=NVMLError_NotSupported,
        nvmlInit=init,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: f"h{i}",
        nvmlDeviceGetName=lambda h: b"Fake H100",
        nvmlSystemGetDriverVersion=lambda: "550.54",
        nvmlSystemGetNVMLVersion=lambda: b"12.550.54",
        nvmlDeviceGetUtilizationRates=lambda h: types.SimpleNamespace(gpu=87, memory=30),
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(used=2 * 2**30, total=80 * 2**30, free=78 * 2**30),
        nvmlDeviceGetComputeRunningProcesses=procs,
    )


def test_pynvml_source_translates_the_calls(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    source = PynvmlSource()
    facts = source.open()
    assert facts == {"gpu_driver": "550.54", "gpu_nvml_version": "12.550.54", "gpu_names": ["Fake H100"]}
    (device,) = source.sample()
    assert (device.util_pct, device.mem_used_mb, device.mem_total_mb) == (87.0, 2048.0, 81920.0)
    assert device.processes == {4242: 512.0, 7: None}
    source.close()


def test_pynvml_source_without_a_process_list_or_a_driver(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(procs_error=lambda cls: cls("not supported")))
    source = PynvmlSource()
    source.open()
    assert source.sample()[0].processes is None
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(init_error="Driver Not Loaded"))
    monitor = GpuMonitor(source=PynvmlSource())
    monitor.start(os.getpid())
    assert monitor.stop().metrics == {"gpu_reason": "NVML unavailable: Driver Not Loaded"}


def test_an_attached_process_counts_from_the_attach_not_its_past():
    """`harness watch --pid` on a process that burned CPU before: that CPU is not the window's."""
    code = "import time; t = time.process_time(); sum(range(30_000_000)); print(time.process_time() - t, flush=True); time.sleep(30)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        burned = float(proc.stdout.readline())  # its past: about a second of one core
        monitor = CpuMonitor(period_s=0.05)
        monitor.start(proc.pid)
        time.sleep(0.4)
        m = monitor.stop().metrics
    finally:
        proc.kill()
        proc.wait()
    assert burned > 0.2
    assert m["cpu_s"] < 0.1 and m["cpu_util_mean"] < 20  # asleep while watched


@pytest.mark.slow
def test_a_neighbour_that_starts_mid_window_is_the_rest_of_the_machines_rise_not_the_trees():
    """A busy tree counts as the tree's; a process nobody here started, burning a core from
    the middle of the window on, as the rest of the machine's rise (what DRIFT then names)."""
    tree = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 30\nwhile time.time() < end: pass"])
    monitor = CpuMonitor(period_s=0.25)
    neighbour = None
    try:
        monitor.start(tree.pid)
        time.sleep(1.5)
        spawn = f"{sys.executable} -c 'while True: pass' >/dev/null 2>&1 & echo $!"  # not our child: sh exits
        neighbour = int(subprocess.run(["sh", "-c", spawn], capture_output=True, text=True).stdout)
        time.sleep(2.0)
        m = monitor.stop().metrics
    finally:
        tree.kill()
        tree.wait()
        if neighbour:
            os.kill(neighbour, 9)
    assert m["cpu_util_mean"] > 40  # the tree's own spinning is not the others'
    assert m["cpu_others_rise_pct"] > 40 and m["cpu_others_rise_pct"] > 2 * m["cpu_others_rise_se"]


class Counting(SamplingMonitor):
    """A monitor that counts its samples and ends itself after `last` of them."""

    name = "counting"

    def __init__(self, period_s: float, last: int | None = None) -> None:
        super().__init__(period_s)
        self.last, self.samples, self.finished_in = last, 0, None

    def sample(self) -> None:
        self.samples += 1
        if self.samples == self.last:
            raise SamplingEnded("the source went away")

    def finish(self) -> None:
        self.finished_in = threading.current_thread().name

    def result(self) -> MonitorResult:
        return MonitorResult(metrics={"samples": self.samples, **self.own_cost("own_s", "own_pct")})


def test_the_sampling_base_samples_until_stopped_and_ends_in_its_own_thread():
    monitor = Counting(period_s=0.01)
    monitor.start(os.getpid())
    time.sleep(0.2)
    m = monitor.stop().metrics
    assert m["samples"] >= 3 and m["own_s"] >= 0 and 0 <= m["own_pct"] < 100
    assert monitor.finished_in == "counting-monitor" and monitor.reason is None
    assert monitor.stop().metrics["samples"] == m["samples"]  # stopped is stopped


def test_a_sample_that_ends_the_sampling_keeps_its_reason_and_what_came_before():
    monitor = Counting(period_s=0.001, last=3)
    monitor.start(os.getpid())
    deadline = time.monotonic() + 5
    while monitor.stopped == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert monitor.stop().metrics["samples"] == 3
    assert monitor.reason == "the source went away" and monitor.finished_in == "counting-monitor"


def test_a_delta_sampler_waits_one_period_before_its_first_sample():
    monitor = Counting(period_s=30)
    monitor.WAIT_FIRST = True
    monitor.start(os.getpid())
    assert monitor.stop().metrics["samples"] == 0  # stopped before a period passed: nothing to difference
