"""Memory as the process tree really uses it: PSS summed counts shared pages once, and the
--memory-limit watchdog ends a tree whose PSS passes the limit (no RLIMIT_AS)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil

from harness.cell.processes import tree
from harness.monitors.memory import MemoryMonitor

# 64 MB touched by the parent, then 32 forked workers that only read it: shared pages.
FORKED_POOL = """
import os, sys, time
data = bytearray(64 * 2**20)
data[::4096] = b"\\x01" * (len(data) // 4096)
kids = []
for _ in range(32):
    pid = os.fork()
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
print("ready", flush=True)
time.sleep(60)
"""

HOG = """
import time
hoard = []
for _ in range(40):
    chunk = bytearray(16 * 2**20)
    chunk[::4096] = b"\\x01" * (len(chunk) // 4096)
    hoard.append(chunk)
    time.sleep(0.05)
time.sleep(60)
"""


def start(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)


def end(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def test_32_forked_workers_tree_memory_is_far_below_their_summed_rss():
    pool = start(FORKED_POOL)
    try:
        assert pool.stdout.readline().strip() == "ready"
        monitor = MemoryMonitor()
        monitor.start(pool.pid)
        time.sleep(1.0)
        rss_sum = sum(p.memory_info().rss for p in tree(pool.pid)) / 2**20
        m = monitor.stop().metrics
    finally:
        end(pool)
    # every worker maps the parent's 64 MB: summed RSS counts it 33 times, PSS once
    assert rss_sum > 33 * 64
    assert 64 < m["mem_pss_peak_mb"] < rss_sum / 8, (m, rss_sum)
    assert m["mem_pss_proc_peak_mb"] < m["mem_pss_peak_mb"] and m["rss_proc_peak_mb"] > 64
    assert m["mem_pss_samples"] >= 1 and "mem_note" not in m
    assert m["mem_monitor_cpu_pct"] < 50


def test_the_watchdog_ends_a_tree_past_its_limit_and_says_so():
    hog = start(HOG)
    hits = []
    try:
        monitor = MemoryMonitor()
        monitor.enforce(200, lambda hit: (hits.append(hit), os.killpg(hog.pid, signal.SIGKILL)))
        monitor.start(hog.pid)
        hog.wait(timeout=30)
        m = monitor.stop().metrics
    finally:
        end(hog)
    (hit,) = hits
    assert 200 < hit.reached_mb < 640 and hog.returncode == -signal.SIGKILL
    assert m["mem_limit_mb"] == 200 and m["mem_limit_by"].startswith("harness's memory watchdog")
    assert "past its --memory-limit of 200 MB" in hit.reason()
    assert not psutil.pid_exists(hog.pid) or psutil.Process(hog.pid).status() == psutil.STATUS_ZOMBIE
