"""A Ray node lost under a sweep: the cell that ran there is recorded `harness-error` with the
node named, runs again on a surviving node, and nothing is lost, duplicated or left behind.

A cluster on this machine (tests/local_ray_cluster.py: a head without CPUs and two worker
nodes of one CPU, Ray's health checks made quick); one worker's raylet is SIGKILLed while a
cell runs on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter

import pytest

from harness.cell.processes import marked_processes
from tests.conftest import run_dirs

pytest.importorskip("ray", reason="ray is an optional extra: pip install -e '.[ray]'")

from tests.local_ray_cluster import ROOT, LocalCluster, cells_below, wait_for  # noqa: E402


@pytest.mark.slow
def test_a_node_lost_under_a_cell_is_the_harness_failure_and_the_cell_runs_again(tmp_path):
    with LocalCluster(workers=2, cpus=1, head_cpus=0, fast_health=True) as cluster:
        doomed = cluster.workers[0]
        raylet = cluster.raylet(doomed)
        out = tmp_path / "out"
        sweep = subprocess.Popen(
            [
                sys.executable, "-m", "harness.cli", "sweep", "--suite", "synthetic", "--set",
                "unit_size=20000,20001,20002", "--duration", "1.5", "--steady", "off", "--quiet", "--out", str(out),
                "--executor", "ray", "--address", cluster.address, "--node-grace", "10",
            ],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            assert wait_for(lambda: cells_below(raylet), 120), "no cell started on the node to be killed"
            time.sleep(0.5)
            cluster.kill_worker(doomed)
            output, _ = sweep.communicate(timeout=180)
        finally:
            if sweep.poll() is None:
                sweep.kill()
        text = output.decode(errors="replace")
        assert sweep.returncode == 0, text
        (run_dir,) = run_dirs(out)
        assert wait_for(lambda: not marked_processes(run_dir), 15), "a process of the run outlived the sweep"
        lines = (run_dir / "cells.jsonl").read_bytes()
        assert lines.endswith(b"\n") and not (run_dir / "cells.jsonl.torn").exists()
        records = [json.loads(line) for line in lines.splitlines()]
        meta = json.loads((run_dir / "run.json").read_text())

    lost_node = next(n for n in meta["ray_nodes"] if n["id"] == doomed.node_id)
    assert lost_node["lost"] and lost_node["label"].startswith("127.0.0.2 (")
    failed = [r for r in records if r["status"] == "harness-error"]
    assert len(failed) == 1, records
    (lost,) = failed
    assert lost["node"] == lost_node["label"] and f"node {lost_node['label']} was lost" in lost["reason"]
    assert "run again on a surviving node (attempt 2 of 3)" in lost["reason"]
    assert lost_node["cells_lost"] == [f"{lost['id']}#{lost['repeat']}"]
    # every cell-repeat ok exactly once; the lost one's ok record after its harness-error, on the other node
    ok = Counter((r["id"], r["repeat"]) for r in records if r["status"] == "ok")
    assert len(ok) == 3 and set(ok.values()) == {1}
    again = next(r for r in records if (r["id"], r["repeat"]) == (lost["id"], lost["repeat"]) and r["status"] == "ok")
    assert records.index(again) > records.index(lost) and again["node"] != lost_node["label"] and again["attempt"] == 2
    assert all((run_dir / r["log"]).is_file() for r in records if r["status"] == "ok")
    summary = (run_dir / "summary.md").read_text() if (run_dir / "summary.md").exists() else ""
    assert f"Ray node {lost_node['label']} (worker)" in text and "lost at" in text
    assert summary == "" or "Ray nodes" in summary
    assert "Ray nodes" in (run_dir / "report.html").read_text()
