"""What an A/B slice's rate is read as: the wall clock, per CPU second of the cell, or with its
threads' run-queue wait taken out (harness.ab.slicing), from the kernel's per-thread counters;
and which of them the decision reads (harness.ab.experiment.decision_estimands)."""

from __future__ import annotations

import math
import os

import pytest

from harness.ab.experiment import decision_estimands
from harness.ab.slicing import Block, Pair, SliceResult, slice_sched
from harness.monitors.procstat import thread_sched


def test_a_slice_read_three_ways():
    # a 1 s slice, 0.25 s on a CPU, 0.75 s in the run queue: a neighbour had the rest
    starved = SliceResult("base", 0.0, 1.0, 1.0, 50.0, cpu_share=0.25, runq_s=0.75)
    alone = SliceResult("candidate", 0.0, 1.0, 1.0, 200.0, cpu_share=1.0, runq_s=0.0)
    pair = Pair(0, 0, False, "base", starved, alone)
    assert pair.log_ratio == pytest.approx(math.log(4))  # the wall clock sees the neighbour
    assert pair.log_ratio_of("cpu") == pytest.approx(0.0)  # 200 units per CPU second each
    assert pair.log_ratio_of("runq") == pytest.approx(0.0)
    # a side that sleeps half its slice (a lock, I/O): as fast per CPU second, slower otherwise
    sleeper = SliceResult("candidate", 0.0, 1.0, 1.0, 100.0, cpu_share=0.5, runq_s=0.0)
    waits = Pair(0, 1, False, "base", alone, sleeper)
    assert waits.log_ratio_of("cpu") == pytest.approx(0.0)
    assert waits.log_ratio_of("runq") == pytest.approx(math.log(0.5))
    assert SliceResult("base", 0.0, 1.0, 1.0, 100.0, runq_s=None).adjusted_rate("runq") is None
    # a slice a neighbour starved: dropped from the wall clock, counted per CPU second
    marked = SliceResult("base", 0.0, 1.0, 1.0, 50.0, cpu_share=0.25, starved=True, runq_s=0.75)
    assert marked.adjusted_rate("wall") is None and marked.adjusted_rate("cpu") == pytest.approx(200.0)
    starved = SliceResult("base", 0.0, 1.0, 1.0, 5.0, cpu_share=0.02, starved=True, runq_s=0.9)
    assert starved.adjusted_rate("cpu") is None  # 20 ms of CPU: too little to count
    sleeper = SliceResult("base", 0.0, 1.0, 1.0, 50.0, cpu_share=0.02, runq_s=0.0)  # sleeps by design
    assert sleeper.adjusted_rate("cpu") == pytest.approx(2500.0) and sleeper.adjusted_rate("runq") == 50.0


def test_the_slices_cpu_and_run_queue_time_weighted_by_what_each_thread_ran():
    before = {(1, 1): (10.0, 5.0), (1, 2): (0.0, 0.0)}
    after = {(1, 1): (10.6, 5.3), (1, 2): (0.0, 0.1), (2, 2): (0.2, 0.1)}  # a thread started in the slice
    cpu, runq = slice_sched(before, after)
    assert cpu == pytest.approx(0.8)
    assert runq == pytest.approx((0.6 * 0.3 + 0.2 * 0.1) / 0.8)  # the idle thread's wait counts for nothing
    assert slice_sched({}, {(1, 1): (1.0, math.nan)})[1] is None  # psutil's CPU time alone: no run-queue time


@pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/task"), reason="Linux /proc")
def test_this_process_threads_counters_are_read():
    times = thread_sched(os.getpid())
    assert os.getpid() in times and all(run >= 0 and wait >= 0 for run, wait in times.values())


def test_the_decision_reads_cpu_and_run_queue_where_the_kernel_tells_else_the_wall_clock():
    def block(runq):
        a = SliceResult("base", 0.0, 1.0, 1.0, 100.0, cpu_share=1.0, runq_s=runq)
        b = SliceResult("candidate", 0.0, 1.0, 1.0, 100.0, cpu_share=1.0, runq_s=runq)
        return Block(0, [Pair(0, 0, False, "base", a, b)])

    assert decision_estimands(block(0.0)) == ("cpu", "runq")
    assert decision_estimands(block(None)) == ("wall",)


@pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/task"), reason="Linux /proc")
def test_a_stopped_process_is_seen_stopped_only_once_its_threads_acted_on_the_signal():
    import signal
    import subprocess
    import sys
    import time

    from harness.ab.slicing import _stopped

    code = "import threading\nthreading.Thread(target=lambda: [0 for _ in iter(int, 1)], daemon=True).start()\nwhile True: pass"
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(0.3)
        assert not _stopped(proc.pid)  # two spinning threads
        os.kill(proc.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while not _stopped(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.001)
        assert _stopped(proc.pid)
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.kill()
        proc.wait()
    assert _stopped(proc.pid)  # gone counts as stopped
