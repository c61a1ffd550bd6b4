"""`harness limits` (pyperf in its own workers) and the efficiency reports compute from it."""

import json

import pytest

from harness.limits import efficiency, evals_limit_at, load_limits, transport_rtt_us
from tests.conftest import read_records, run_dirs


def test_limits_writes_a_run_with_round_trips_and_an_evals_curve(cli, tmp_path):
    result = cli(
        "limits",
        "--blocks",
        "0",
        "--channels",
        "4",
        "--batches",
        "2",
        "--pyperf-args=--debug-single-value",
        "--threads",
        "1",
        "--out",
        tmp_path,
    )
    assert result.exit_code == 0, result.output
    (run_dir,) = run_dirs(tmp_path)
    ipc, net = read_records(run_dir)
    assert all(ipc["metrics"][f"{t}_rtt_us_p50"] > 0 for t in ("queue", "pipe", "shm"))
    assert net["params"] == {
        "kind": "net",
        "device": "cpu",
        "blocks": 0,
        "channels": 4,
        "planes": net["params"]["planes"],
        "threads": 1,
    }
    assert net["metrics"]["forward_ms_b2"] > 0
    assert net["metrics"]["evals_per_s_b2"] == pytest.approx(2 / (net["metrics"]["forward_ms_b2"] / 1e3))
    assert {b["metadata"]["name"] for b in json.loads((run_dir / "pyperf.json").read_text())["benchmarks"]} == {
        "queue_rtt",
        "pipe_rtt",
        "shm_rtt",
        "forward_b2",
    }
    assert len(load_limits(run_dir)) == 2 and transport_rtt_us(load_limits(run_dir), "pipe") > 0
    assert cli("report", run_dir).exit_code == 0


def test_bad_limits_options_exit_2(cli, tmp_path):
    for args, word in ((["--device", "tpu"], "allowed cpu, cuda"), (["--batches", "0,2"], "1..65536")):
        result = cli("limits", *args, "--out", tmp_path)
        assert result.exit_code == 2 and word in result.output
    assert list(tmp_path.iterdir()) == []


LIMITS = [
    {"suite": "limits", "status": "ok", "params": {"kind": "ipc"}, "metrics": {"shm_rtt_us_p50": 30.0}},
    {
        "suite": "limits",
        "status": "ok",
        "params": {"kind": "net", "device": "cpu", "blocks": 2, "channels": 32},
        "metrics": {"evals_per_s_curve": {"1": 100.0, "4": 400.0, "16": 800.0}},
    },
]


def selfplay(batch_mean, evals=200.0, **params):
    return {
        "params": {"device": "cpu", "blocks": 2, "channels": 32, **params},
        "metrics": {"nn_evals_per_s": evals, "batch_mean": batch_mean},
    }


def test_efficiency_is_achieved_over_the_limit_at_the_mean_batch():
    assert efficiency(selfplay(4), LIMITS) == pytest.approx(0.5)
    assert efficiency(selfplay(2), LIMITS) == pytest.approx(200 / 250)  # halfway in log2 from 1 to 4
    assert efficiency(selfplay(64), LIMITS) == pytest.approx(200 / 800)  # flat past the last size
    assert efficiency(selfplay(4, device="auto"), LIMITS) == pytest.approx(0.5)
    assert efficiency(selfplay(4, channels=64), LIMITS) is None  # no curve for that net
    assert efficiency(selfplay(4, device="cuda"), LIMITS) is None
    assert efficiency({"params": {}, "metrics": {"units_per_s": 5}}, LIMITS) is None
    assert evals_limit_at({}, 4) is None
    assert transport_rtt_us(LIMITS) == 30.0


def test_reports_show_efficiency_when_a_limits_run_sits_beside(tmp_path):
    from harness.limits import latest_limits, with_efficiency
    from harness.store import RunStore

    limits_run = RunStore.create(tmp_path, "limits-cpu", {})
    limits_run.append(
        {"id": "n", "suite": "limits", "repeat": 0, "status": "ok",
         "params": {"kind": "net", "blocks": 2, "channels": 32, "device": "cpu"},
         "metrics": {"evals_per_s_curve": {"8": 1000.0, "64": 4000.0}}}
    )  # fmt: skip
    cell = {"id": "c", "suite": "selfplay", "repeat": 0, "status": "ok",
            "params": {"blocks": 2, "channels": 32, "device": "cpu"},
            "metrics": {"nn_evals_per_s": 1000.0, "batch_mean": 64.0}}  # fmt: skip
    other = {"id": "s", "suite": "synthetic", "repeat": 0, "status": "ok", "params": {}, "metrics": {}}
    annotated = with_efficiency([cell, other], latest_limits(tmp_path))
    assert annotated[0]["metrics"]["efficiency_pct"] == 25.0
    assert "efficiency_pct" not in annotated[1]["metrics"] and "efficiency_pct" not in cell["metrics"]
    assert latest_limits(tmp_path / "nowhere") == []
