"""Wait edges read from /proc: a process blocked on a pipe, a socket, a multiprocessing
Queue or an Event waits on the process holding the other end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.monitors.waits import WaitsMonitor
from harness.watch.waits import by_role, describe, edges

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "waiters.py"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
@pytest.mark.parametrize("kind,via", [("pipe", "pipe"), ("socket", "socket"), ("queue", "pipe"), ("event", "shm")])
def test_a_blocked_process_waits_on_the_holder_of_the_other_end(kind, via):
    proc = subprocess.Popen(
        [sys.executable, str(PROGRAM), kind], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        waiter, busy = map(int, proc.stdout.readline().split())
        monitor = WaitsMonitor(period_s=0.05)
        monitor.start(proc.pid)
        time.sleep(1.0)
        result = monitor.stop()
        found = [e for e in edges(monitor.samples) if e.waiter == waiter]
        assert found and found[0].peers == (busy,) and found[0].via == via, found
        assert found[0].share >= 0.8
        assert result.metrics["waits_cpu_pct"] < 10
        roles = {waiter: "workers", busy: "main"}
        (edge,) = [e for e in by_role(found, roles, {"workers": [waiter]}) if e["waiter"] == "workers"]
        assert describe(edge).startswith(f"workers -> main (pid {busy})")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_idle_workers_name_the_process_at_the_other_end_and_hedge_no_more():
    from tests.harness.test_watch_parts import findings_of

    edge = {"role": "server", "pids": [812], "blocked": 0.94, "via": "shm", "idle_by_design": False,
            "text": "8 of 8 workers -> server (pid 812): 94 % of the time (median; 90-97 %)"}  # fmt: skip
    cpu = {str(p): 3.0 for p in range(10)}
    idle = {"worker_wait_pct": {p: 97.0 for p in cpu}, "worker_cpu_pct": cpu, "main_cpu_pct": 90.0}
    (found,) = findings_of({**idle, "waits_on": edge, "worker_dormant": [0, 1]})
    assert "they wait on 8 of 8 workers -> server (pid 812)" in found.hint
    assert "Otherwise" not in found.hint and "total // workers" not in found.hint
    assert "2 of them woke less than once a second" in found.hint
    assert found.evidence["worker_cpu_pct"] == {"count": 10, "min": 3.0, "p25": 3.0, "median": 3.0, "p75": 3.0,
                                                "max": 3.0}  # fmt: skip


def test_a_pipelines_shares_come_from_its_edges():
    from harness.monitors.waits import Wait, WaitSamples
    from harness.watch.waits import metrics

    worker, server = 11, 12
    on_server, on_workers = Wait("futex", ("shm:0:5",)), Wait("read", ("pipe:7",))
    samples = WaitSamples(
        passes=[(t, {worker: (False, [on_server]), server: (t % 4 == 0, [on_workers])}) for t in range(20)],
        holders={"shm:0:5": {worker: "m", server: "m"}, "pipe:7": {worker: "w", server: "r"}},
        cpu={worker: (0.0, 0.0, 10.0, 1.0), server: (0.0, 0.0, 10.0, 8.0)},
    )
    found = metrics(samples, {worker: "workers", server: "server"}, {worker: 50.0})
    assert found["client_wait_share"] == 1.0 and found["server_idle_share"] == 0.75
    assert found["waits_on"]["role"] == "server" and found["waits_on"]["pids"] == [server]
    assert "worker_dormant" not in found


def test_a_real_vector_envs_workers_wait_on_the_learner_through_their_sockets():
    """Captured from sheeprl's PPO (PyPI, unchanged) with 4 AsyncVectorEnv workers, on CPU:
    what the sampler read in 3 s (tests/harness/data/waits_sheeprl.json)."""
    import json

    from harness.monitors.waits import Wait, WaitSamples

    doc = json.loads((Path(__file__).parent / "data" / "waits_sheeprl.json").read_text())
    passes = [
        (t, {int(p): (running, [Wait(w["kind"], tuple(w["objects"]), w["write"]) for w in ws])
             for p, (running, ws) in seen.items()})
        for t, seen in doc["passes"]
    ]  # fmt: skip
    holders = {k: {int(p): m for p, m in v.items()} for k, v in doc["holders"].items()}
    samples = WaitSamples(passes, holders, doc["peers"], {int(k): tuple(v) for k, v in doc["cpu"].items()})
    found = edges(samples)
    learner = doc["root"]
    assert len(found) == 4 and all(e.peers == (learner,) and e.via == "socket" and e.share >= 0.8 for e in found)


def test_a_worker_is_dormant_only_while_it_neither_wakes_nor_wants_a_cpu():
    """Workers computing without pause make no voluntary switch: 0 wake-ups a second, all
    their time runnable; harness watch called two such hogwild trainers dormant."""
    from harness.monitors.waits import WaitSamples
    from harness.watch.waits import metrics

    computing, asleep, unknown = 11, 12, 13
    samples = WaitSamples(passes=[(t, {p: (p == computing, []) for p in (computing, asleep, unknown)}) for t in range(5)])
    roles = {computing: "workers", asleep: "workers", unknown: "workers"}
    wakeups = {computing: 0.0, asleep: 0.0, unknown: 0.0}
    found = metrics(samples, roles, wakeups, {computing: 0.998, asleep: 0.0})
    assert found["worker_dormant"] == [asleep]  # its demand unread (too many threads): no claim
    assert "worker_dormant" not in metrics(samples, roles, wakeups)  # nothing read of what they wanted


@pytest.mark.slow
def test_hogwild_workers_computing_without_pause_are_not_dormant_and_waiting_ones_are(tmp_path):
    from tests.harness.test_watch import assert_named, assert_quiet, watch_pair

    runs = watch_pair(tmp_path, "hogwild.py", ["dormant"], ["compute"], 5)
    assert_named(runs["dormant"], "IDLE_WORKERS")
    assert "2 of them woke less than once a second" in runs["dormant"][1]
    assert_quiet(runs["compute"])
    import json

    metrics = json.loads((runs["compute"][2] / "cells.jsonl").read_text())["metrics"]
    assert "worker_dormant" not in metrics and min(metrics["worker_runnable_pct"].values()) > 50
