"""The pieces of node loss that need no cluster: the driver's watch of nodes and head, a node's
watch of its head, the nodes in the reports, a cell's longest time, the progress of an attempt
run again. (A node really killed under a sweep: test_ray_node_loss.py, slow tier.)"""

from __future__ import annotations

import socket
import time

import pytest

from harness.errors import ClusterLost
from harness.report.html import render_run
from harness.report.markdown import render
from harness.running import deadline
from harness.running.executors import ray_cluster, ray_node
from harness.running.executors.ray_cluster import ClusterWatch
from harness.running.matrix import Overrides, Spec, apply_overrides, expand
from harness.running.progress import Progress
from harness.runs import nodes
from harness.runs.record import group_by_cell
from harness.runs.results import cells_frame, summary_frame
from harness.runs.view import build_view
from tests.records import make_record

HEAD = "aa" * 28
WORKER = "bb" * 28


def info(node_id: str, alive: bool = True, head: bool = False, cpus: float = 2) -> dict:
    return {
        "NodeID": node_id, "Alive": alive, "NodeManagerAddress": "127.0.0.2", "IsHeadNode": head,
        "Resources": {"CPU": cpus}, "DeathReasonMessage": "" if alive else "health check failed",
    }  # fmt: skip


@pytest.fixture
def gcs():
    """A listening socket standing in for the head's GCS (closed: the head is gone)."""
    server = socket.create_server(("127.0.0.1", 0))
    yield server, f"127.0.0.1:{server.getsockname()[1]}"
    server.close()


@pytest.fixture
def quick(monkeypatch):
    monkeypatch.setattr(ray_cluster, "PROBE_S", 0.05)
    monkeypatch.setattr(ray_cluster, "NODES_S", 0.05)
    monkeypatch.setattr(ray_cluster, "STUCK_S", 0.3)
    monkeypatch.setattr(ray_node, "WATCH_S", 0.05)
    monkeypatch.setattr(ray_node, "PROBE_S", 0.05)


def test_the_watch_sees_nodes_join_and_die_and_only_live_ones_hold_cells(gcs):
    _, address = gcs
    reading = [info(HEAD, head=True, cpus=0), info(WORKER, cpus=2), info("cc" * 28, alive=False)]
    watch = ClusterWatch(address, 5.0, lambda: reading)
    watch.poll_nodes()
    assert set(watch.nodes()) == {HEAD, WORKER}  # a node dead before the sweep is not its
    assert watch.changed() and not watch.changed()
    assert watch.fits(2, 0) and not watch.fits(3, 0) and watch.capacity() == 2
    assert watch.label(WORKER) == f"127.0.0.2 ({WORKER[:8]})" and watch.node(HEAD).head
    reading[1] = info(WORKER, alive=False)
    watch.poll_nodes()
    lost = watch.node(WORKER)
    assert lost.lost and lost.why == "health check failed" and watch.changed()
    assert not watch.fits(1, 0) and watch.capacity() == 0
    first = lost.lost
    watch.poll_nodes()
    watch.mark_lost(WORKER, "seen from the node")
    assert watch.node(WORKER).lost == first and watch.node(WORKER).why == "health check failed"  # noted once
    watch.note_lost_cell(WORKER, "abc#0")
    assert watch.node(WORKER).to_json()["cells_lost"] == ["abc#0"]


def test_a_silent_head_is_lost_after_the_grace_and_a_stuck_loop_gets_the_last_word(gcs, quick):
    server, address = gcs
    stuck = []
    watch = ClusterWatch(address, 0.3, lambda: [info(HEAD, head=True)], on_stuck=lambda: stuck.append(1))
    watch.start()
    try:
        time.sleep(0.4)
        assert watch.head_lost_at is None  # it answers
        server.close()
        for _ in range(100):
            watch.beat()  # the loop is alive: no last word yet
            if watch.head_lost_at is not None:
                break
            time.sleep(0.02)
        assert watch.head_lost_at is not None and watch.node(HEAD).lost == watch.head_lost_at
        assert not stuck
        time.sleep(0.8)  # the loop silent past STUCK_S
        assert stuck == [1]
    finally:
        watch.stop()


def test_a_node_ends_its_cell_when_the_head_is_silent(gcs, quick):
    server, address = gcs
    seen = []
    with ray_node.NodeWatch(address, 0.2, seen.append):
        time.sleep(0.3)
        assert not seen
        server.close()
        for _ in range(100):
            if seen:
                break
            time.sleep(0.02)
    assert seen and seen[0].what == ray_node.HEAD and "did not answer for 0.2 s" in seen[0].why


def test_a_worker_not_started_by_a_raylet_watches_the_head_only():
    assert ray_node.raylet_pid() is None  # pytest's parent is no raylet


def test_a_cells_longest_time_covers_its_followed_deadline_and_its_ending():
    (fixed,) = expand(apply_overrides(Spec(), Overrides(suite="synthetic", timeout=10.0)))
    (follows,) = expand(apply_overrides(Spec(), Overrides(suite="synthetic", duration=5.0, steady="off")))
    ending = deadline.ACK_S + deadline.CUT_SHORT_GRACE_S + deadline.END_S
    assert deadline.longest_s(fixed) == pytest.approx(10.0 + ending)
    assert follows.deadline_follows_window
    assert deadline.longest_s(follows) == pytest.approx(follows.timeout * deadline.FOLLOW_MAX + ending)


def test_an_attempt_run_again_is_said_but_not_counted_done(capsys):
    progress = Progress(quiet=False)
    progress._total = 1
    lost = make_record("a", status="harness-error", reason="node x was lost")
    progress.cell_finished(lost, again=True)
    progress.cell_finished(make_record("a"))
    err = capsys.readouterr().err
    assert "[0/1] demo" in err and "node x was lost" in err and "[1/1] demo" in err


META = {
    "state": "interrupted",
    "cluster_lost": "the Ray cluster's head at 127.0.0.2:6379 was lost at 2026-01-01T00:01:00Z",
    "cpu_cores": 2,
    nodes.NODES: [
        {"id": HEAD, "label": f"127.0.0.2 ({HEAD[:8]})", "head": True, "joined": "2026-01-01T00:00:00Z",
         "lost": "2026-01-01T00:01:00Z", "why": "its GCS did not answer for 30 s", "cells_lost": ["b#0"]},
        {"id": WORKER, "label": f"127.0.0.2 ({WORKER[:8]})", "head": False, "joined": "2026-01-01T00:00:00Z",
         "lost": "2026-01-01T00:00:30Z", "why": "health check failed", "cells_lost": ["a#0"]},
    ],
}  # fmt: skip


def records():
    on_head, on_worker = META[nodes.NODES][0]["label"], META[nodes.NODES][1]["label"]
    out = [
        make_record("a", {"units_per_s": 5.0}, {"workers": 1}, suite="synthetic"),
        make_record("a", {"units_per_s": 5.5}, {"workers": 1}, suite="synthetic", repeat=1),
        make_record("b", {}, {"workers": 2}, suite="synthetic", status="harness-error"),
    ]
    for record, node in zip(out, (on_head, on_worker, on_worker), strict=True):
        record.extra[nodes.NODE] = node
    return out


def test_the_nodes_rows_say_what_ran_where_and_what_was_lost_when():
    found = nodes.rows(records(), META)
    assert [(r.label[-9:-1], r.role, r.recorded, r.ok, r.cells_lost) for r in found] == [
        (HEAD[:8], "head", 1, 1, ["b#0"]),
        (WORKER[:8], "worker", 2, 1, ["a#0"]),
    ]
    assert "lost at 2026-01-01T00:00:30Z (health check failed); 1 cell-repeat(s) lost with it" in found[1].line()
    assert nodes.rows([make_record("x")], {}) == []  # not a sweep on Ray
    assert len(nodes.lost_lines(META)) == 2


def test_the_reports_name_each_repeats_node_and_the_nodes_lost(tmp_path):
    recs = records()
    view = build_view(recs, META)
    text = render(view)
    assert "## Ray nodes" in text and "health check failed" in text and "a#0" in text
    assert "stopped: the Ray cluster's head at 127.0.0.2:6379 was lost" in text
    assert f"127.0.0.2 ({HEAD[:8]}), 127.0.0.2 ({WORKER[:8]})" in text  # cell a's repeats ran on both
    html = render_run(tmp_path, view)
    assert 'id="ray-nodes"' in html and "Ray node" in html
    assert cells_frame(recs)["ray_node"].tolist() == [r.extra["node"] for r in recs]
    assert "ray_nodes" in summary_frame(group_by_cell(recs), recs)
    plain = [make_record("x")]
    assert "ray_node" not in cells_frame(plain) and "Ray nodes" not in render(build_view(plain, {}))


def test_a_lost_head_is_said_with_how_to_resume(tmp_path):
    exc = ClusterLost("127.0.0.2:6379", "2026-01-01T00:01:00Z", 30.0, 2)
    exc.run_dir = tmp_path
    text = str(exc)
    assert "was lost at 2026-01-01T00:01:00Z (no answer for 30 s)" in text
    assert "the 2 cell-repeat(s) running on it are recorded `harness-error`" in text
    assert f"harness sweep --resume {tmp_path} --executor ray --address NEW_HEAD:PORT" in text
