"""`harness limits` (pyperf in its own workers) and the efficiency reports compute from it."""

import json

import pytest

from harness.roofline.efficiency import efficiency, latest_limits, load_limits, rate_at, with_efficiency
from harness.runs.store import RunStore
from tests.conftest import read_records, run_dirs
from tests.records import make_record


@pytest.mark.slow
def test_limits_writes_a_run_with_round_trips_and_a_suites_curve(cli, tmp_path):
    result = cli(
        "limits",
        "--parts",
        "ipc,selfplay.forward",
        "--set",
        "blocks=0",
        "--set",
        "channels=4",
        "--set",
        "threads=1",
        "--sizes",
        "2",
        "--pyperf-args=--debug-single-value",
        "--out",
        tmp_path,
    )
    assert result.exit_code == 0, result.output
    (run_dir,) = run_dirs(tmp_path)
    ipc, net = read_records(run_dir)
    assert all(ipc["metrics"][f"{t}_rtt_us_p50"] > 0 for t in ("queue", "pipe", "shm"))
    # the suite's options, validated, with their defaults filled in
    assert net["params"] == {"part": "selfplay.forward", "device": "cpu", "blocks": 0, "channels": 4, "threads": 1}
    assert net["metrics"]["forward_ms_b2"] > 0
    assert net["metrics"]["evals_per_s_b2"] == pytest.approx(2 / (net["metrics"]["forward_ms_b2"] / 1e3))
    assert net["metrics"]["evals_per_s_curve"] == {"2": net["metrics"]["evals_per_s_b2"]}
    assert {b["metadata"]["name"] for b in json.loads((run_dir / "pyperf.json").read_text())["benchmarks"]} == {
        "queue_rtt",
        "pipe_rtt",
        "shm_rtt",
        "selfplay.forward:forward_b2",
    }
    assert [r.params["part"] for r in load_limits(run_dir)] == ["ipc", "selfplay.forward"]
    assert cli("report", run_dir).exit_code == 0


def test_bad_limits_options_exit_2(cli, tmp_path):
    cases = (
        (["--device", "tpu"], "device"),
        (["--sizes", "0,2"], "1..65536"),
        (["--parts", "nosuch"], "allowed: ipc"),
        (["--parts", "ipc", "--set", "blocks=2"], "no part takes it"),
        (["--set", "blocks=many"], "blocks"),
    )
    for args, word in cases:
        result = cli("limits", *args, "--out", tmp_path)
        assert result.exit_code == 2 and word in result.output, (args, result.output)
    assert list(tmp_path.iterdir()) == []


LIMITS = [
    make_record("i", {"shm_rtt_us_p50": 30.0}, {"part": "ipc"}, suite="limits"),
    make_record(
        "n",
        {"evals_per_s_curve": {"1": 100.0, "4": 400.0, "16": 800.0}},
        {"part": "selfplay.forward", "device": "cpu", "blocks": 2, "channels": 32},
        suite="limits",
    ),
]


def selfplay(batch_mean, evals=200.0, **params):
    params = {"device": "cpu", "blocks": 2, "channels": 32, **params}
    return make_record("s", {"nn_evals_per_s": evals, "batch_mean": batch_mean}, params, suite="selfplay")


def test_efficiency_is_achieved_over_the_limit_at_the_mean_batch():
    assert efficiency(selfplay(4), LIMITS) == pytest.approx(0.5)
    assert efficiency(selfplay(2), LIMITS) == pytest.approx(200 / 250)  # halfway in log2 from 1 to 4
    assert efficiency(selfplay(64), LIMITS) == pytest.approx(200 / 800)  # flat past the last size
    assert efficiency(selfplay(0.5), LIMITS) == pytest.approx(200 / 100)  # flat before the first
    assert efficiency(selfplay(4, device="auto"), LIMITS) == pytest.approx(0.5)
    assert efficiency(selfplay(4, channels=64), LIMITS) is None  # no curve for that net
    assert efficiency(selfplay(4, device="cuda"), LIMITS) is None
    assert efficiency(make_record("x", {"units_per_s": 5}, suite="synthetic"), LIMITS) is None  # no limit declared
    assert rate_at({}, 4) is None


def test_reports_show_efficiency_when_a_limits_run_sits_beside(tmp_path):
    limits_run = RunStore.create(tmp_path, "limits-cpu", {})
    limits_run.append(
        make_record(
            "n",
            {"evals_per_s_curve": {"8": 1000.0, "64": 4000.0}},
            {"part": "selfplay.forward", "blocks": 2, "channels": 32, "device": "cpu"},
            suite="limits",
        )
    )
    cell = selfplay(64.0, evals=1000.0)
    other = make_record("o", {}, suite="synthetic")
    annotated = with_efficiency([cell, other], latest_limits(tmp_path))
    assert annotated[0].metrics["efficiency_pct"] == 25.0
    assert "efficiency_pct" not in annotated[1].metrics and "efficiency_pct" not in cell.metrics
    assert latest_limits(tmp_path / "nowhere") == []
