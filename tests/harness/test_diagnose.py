"""Each rule fires on records made to trigger it and stays quiet on healthy ones."""

import json

import pytest

from harness.diagnosis import diagnose
from harness.runs.store import RunStore
from tests.conftest import read_records, run_dirs
from tests.records import make_record

META = {"cpu_cores": 2}


def rec(cell_id, metrics, params=None, suite="demo", repeat=0, status="ok", work=None):
    return make_record(cell_id, metrics, params, suite=suite, repeat=repeat, status=status, work=work)


def rules(records, meta=META):
    return [f.rule for f in diagnose(records, meta)]


def only(records, rule, meta=META):
    found = [f for f in diagnose(records, meta) if f.rule == rule]
    assert len(found) == 1, found
    return found[0]


# ------------------------------------------------------------------ LOST_WORK
def test_lost_work_fires_when_work_done_falls_short():
    f = only([rec("a", {"work_requested": 100, "work_done": 0})], "LOST_WORK")
    assert f.severity == "error" and f.cells == ["a"] and f.evidence["work_done"] == 0
    assert "split_work" in f.hint


def test_lost_work_quiet_when_all_done_or_the_cell_failed():
    records = [
        rec("a", {"work_requested": 100, "work_done": 100}),
        rec("b", {"work_requested": 100, "work_done": 3}, status="timeout"),
    ]
    assert "LOST_WORK" not in rules(records)


# ------------------------------------------------------------------ DRIFT
def test_drift_fires_on_a_significant_decline():
    m = {"iterations_per_s_drift_pct_per_min": -12.0, "iterations_per_s_drift_se": 1.5, "measure_s": 180}
    f = only([rec("a", m)], "DRIFT")
    assert f.evidence["rates"]["iterations_per_s"]["slope_pct_per_min"] == -12.0
    assert f.hint.startswith("iterations_per_s falls -12 %/min")


@pytest.mark.parametrize(
    ("slope", "se", "work"),
    [(-12.0, 8.0, None), (-1.0, 0.1, None), (5.0, 0.5, None), (-12.0, 1.5, 1000)],
    ids=["noise", "small", "rising", "fixed-work-ramp-down"],
)
def test_drift_quiet_on_noise_small_slopes_rises_and_fixed_work(slope, se, work):
    m = {"iterations_per_s_drift_pct_per_min": slope, "iterations_per_s_drift_se": se, "measure_s": 60}
    assert "DRIFT" not in rules([rec("a", m, work=work)])


def test_drift_judged_by_students_t_when_its_error_rests_on_a_few_blocks():
    """A Lightning DDP rank watched 40 s, flat in phases of the host: -19.2 %/min at 2.1 of an
    error from four 10 s blocks (2 degrees of freedom, where 95 % needs 4.3 of them)."""
    m = {"log_it_per_s_drift_pct_per_min": -19.2, "log_it_per_s_drift_se": 9.16, "measure_s": 40.1}
    assert "DRIFT" not in rules([rec("a", {**m, "log_it_per_s_drift_dof": 2})])
    assert "DRIFT" in rules([rec("a", {**m, "log_it_per_s_drift_dof": 14_000})])  # thousands of points
    assert "DRIFT" in rules([rec("a", m)])  # a record from before the dof was kept
    steep = {**m, "log_it_per_s_drift_pct_per_min": -60.0, "log_it_per_s_drift_dof": 2}
    assert "DRIFT" in rules([rec("a", steep)])


def test_drift_quiet_on_windows_too_short_to_fit():
    m = {"iterations_per_s_drift_pct_per_min": -30.0, "iterations_per_s_drift_se": 2.0, "measure_s": 4}
    assert "DRIFT" not in rules([rec("a", m)])


def test_drift_quiet_when_the_fitted_rates_span_less_than_the_window_needs():
    """A program that logs its first rate 3 s into a 10 s watch leaves 7 s of points."""
    m = {"log_evals_per_s_drift_pct_per_min": -311.0, "log_evals_per_s_drift_se": 98.5, "measure_s": 10.05}
    assert "DRIFT" in rules([rec("a", {**m, "log_evals_per_s_drift_span_s": 10.2})])
    assert "DRIFT" not in rules([rec("a", {**m, "log_evals_per_s_drift_span_s": 7.1})])


def test_drift_while_the_rest_of_the_machine_took_more_is_info_naming_it():
    m = {"log_evals_per_s_drift_pct_per_min": -40.0, "log_evals_per_s_drift_se": 5.0, "measure_s": 20.0}
    neighbour = only([rec("a", {**m, "cpu_others_rise_pct": 80.0, "cpu_others_rise_se": 10.0})], "DRIFT")
    assert neighbour.severity == "info" and "the rest of the machine used 80 % of a core more" in neighbour.hint
    for quiet in ({"cpu_others_rise_pct": 10.0, "cpu_others_rise_se": 2.0}, {"cpu_others_rise_pct": 80.0, "cpu_others_rise_se": 60.0}):
        own = only([rec("a", {**m, **quiet})], "DRIFT")  # a small rise, or one within its noise
        assert own.severity == "warning" and "something grows with time" in own.hint


def test_drift_needs_most_repeats_to_agree():
    m_bad = {"games_per_s_drift_pct_per_min": -20.0, "games_per_s_drift_se": 1.0}
    m_ok = {"games_per_s_drift_pct_per_min": 0.5, "games_per_s_drift_se": 1.0}
    assert "DRIFT" not in rules([rec("a", m_bad, repeat=0), rec("a", m_ok, repeat=1), rec("a", m_ok, repeat=2)])


# ------------------------------------------------------------------ GPU_IDLE
CUDA = {"device": "cuda", "workers": 2}


def test_gpu_idle_fires_on_low_utilisation():
    f = only([rec("a", {"gpu_util_mean": 1.2, "gpu_pids": [10], "gpu_other_pids": []}, CUDA)], "GPU_IDLE")
    assert "GPU 1.2 % busy" in f.hint


def test_gpu_idle_fires_when_workers_report_the_cpu():
    m = {"gpu_util_mean": 40.0, "gpu_pids": [10], "worker_devices": ["cpu", "cuda:0"]}
    assert "workers on cpu" in only([rec("a", m, CUDA)], "GPU_IDLE").hint


def test_gpu_idle_fires_when_worker_pids_are_missing_from_the_gpu():
    m = {"gpu_util_mean": 40.0, "gpu_pids": [10], "worker_devices": {"10": "cuda:0", "11": "cuda:0", "12": "cuda:0"}}
    f = only([rec("a", m, CUDA)], "GPU_IDLE")
    assert f.evidence["missing_pids"] == [11, 12] and "2 worker PIDs missing" in f.hint


def test_gpu_idle_fires_when_no_process_of_the_cell_holds_a_context():
    m = {"gpu_util_mean": 30.0, "gpu_pids": [], "gpu_other_pids": []}
    assert "no process of the cell" in only([rec("a", m, CUDA)], "GPU_IDLE").hint


def test_gpu_idle_quiet_on_a_busy_gpu_with_every_worker_on_it_and_on_cpu_cells():
    m = {"gpu_util_mean": 70.0, "gpu_pids": [10, 11], "worker_devices": {"10": "cuda:0", "11": "cuda:0"}}
    cpu_cell = rec("b", {"gpu_reason": "NVML unavailable"}, {"device": "cpu", "workers": 2})
    assert "GPU_IDLE" not in rules([rec("a", m, CUDA), cpu_cell])


def test_gpu_idle_does_not_blame_pids_it_cannot_map():
    # in a container NVML may list host PIDs: they are "other", and the GPU is busy
    m = {"gpu_util_mean": 70.0, "gpu_pids": [], "gpu_other_pids": [98765]}
    assert "GPU_IDLE" not in rules([rec("a", m, CUDA)])


# ------------------------------------------------------------------ GPU_THRASH
def thrash_records(rate_at_32):
    return [
        rec("w4", {"games_per_s": 100.0, "gpu_util_mean": 55.0}, {"workers": 4, "device": "cuda"}),
        rec(
            "w32",
            {"games_per_s": rate_at_32, "gpu_util_mean": 99.0, "gpu_procs_peak": 32},
            {"workers": 32, "device": "cuda"},
        ),
    ]


def test_gpu_thrash_fires_when_a_saturated_gpu_gives_less_per_worker():
    f = only(thrash_records(rate_at_32=80.0), "GPU_THRASH")
    assert f.cells == ["w4", "w32"] and f.evidence["per_worker_ratio"] == pytest.approx(0.1)
    assert "32 processes on the GPU" in f.hint


def test_gpu_thrash_quiet_when_per_worker_throughput_holds():
    assert "GPU_THRASH" not in rules(thrash_records(rate_at_32=700.0))


# ------------------------------------------------------------------ SMALL_BATCHES
SERVER = {"backend": "server", "workers": 2, "leaves": 1, "max_batch": 256, "timeout_ms": 5.0}


def test_small_batches_fires_and_names_the_suites_knobs():
    m = {"batch_mean": 3.1, "batch_p95": 4.0, "batch_limit": 256}
    f = only([rec("a", m, SERVER, suite="selfplay")], "SMALL_BATCHES")
    assert f.hint == "batch mean 3.1 of max 256: more workers, more leaves per search or a longer timeout_ms"
    generic = only([rec("a", m, SERVER)], "SMALL_BATCHES")  # a suite that names no remedy
    assert generic.hint.startswith("batch mean 3.1 of max 256: more requests in flight")


def test_small_batches_quiet_on_full_batches_and_without_a_batch_limit():
    records = [
        rec("a", {"batch_mean": 200.0, "batch_limit": 256}, SERVER),
        rec("b", {"batch_mean": 3.0, "batch_limit": 4}, SERVER),
        rec("c", {"batch_mean": 3.0}, {**SERVER, "backend": "processes"}),  # no server, no limit reported
    ]
    assert "SMALL_BATCHES" not in rules(records)


# ------------------------------------------------------------------ NEGATIVE_SCALING
def scaling(rates_by_workers, backend="threads"):
    out = []
    for workers, rates in rates_by_workers.items():
        for r, value in enumerate(rates):
            params = {"backend": backend, "workers": workers, "game": "leduc"}
            out.append(rec(f"w{workers}", {"iterations_per_s": value}, params, repeat=r))
    return out


def test_negative_scaling_fires_with_repeats_beyond_noise():
    f = only(scaling({4: [100, 102, 98], 8: [99, 101, 97], 16: [60, 62, 61]}), "NEGATIVE_SCALING")
    assert f.cells == ["w16", "w4"]
    assert "at 4 workers to 61 at 16 with backend=threads" in f.hint


def test_negative_scaling_fires_on_single_repeats_by_a_margin():
    assert "NEGATIVE_SCALING" in rules(scaling({4: [100], 16: [70]}))


def test_negative_scaling_quiet_within_noise_and_across_other_params():
    assert "NEGATIVE_SCALING" not in rules(scaling({4: [100], 16: [95]}))
    assert "NEGATIVE_SCALING" not in rules(scaling({4: [100, 80, 120], 16: [95, 110, 85]}))
    mixed = scaling({4: [100]}, backend="threads") + scaling({16: [50]}, backend="processes")
    assert "NEGATIVE_SCALING" not in rules(mixed)


# ------------------------------------------------------------------ BUSY_WAIT
def test_busy_wait_fires_on_cpu_burned_while_waiting():
    m = {"wait_s": 10.0, "learner_wait_cpu_s": 6.0, "cpu_ctx_vol": 9000}
    f = only([rec("a", m, suite="actor_learner")], "BUSY_WAIT")
    assert f.hint.startswith("learners burned 6 CPU s in 10 s of waiting (60 % of a core)")
    assert "wait=event" in f.hint  # the suite's remedy names its knob
    assert "block on an event" in only([rec("a", m)], "BUSY_WAIT").hint  # the generic one


def test_busy_wait_fires_on_a_wait_share_with_busy_cores_and_on_heavy_publishing():
    assert "BUSY_WAIT" in rules([rec("a", {"wait_share": 0.8, "cpu_util_mean": 190.0, "cpu_procs_peak": 3})])
    assert "publish less often" in only([rec("a", {"publish_share": 0.4})], "BUSY_WAIT").hint


def test_busy_wait_fires_on_learners_spinning_on_stale_data():
    # the naive actor-learner config as measured (docs/benchmarks.md, Actor-learner, run B)
    naive = {"replay_ratio": 4.76, "learner_cpu_s": 37.7, "main_cpu_s": 7.4, "learner_wait_cpu_s": 0.01, "wait_s": 0.1}
    f = only([rec("a", naive, suite="actor_learner")], "BUSY_WAIT")
    assert "throttle=true" in f.hint and f.evidence["replay_ratio"] == 4.76
    assert "BUSY_WAIT" not in rules([rec("a", naive)])  # no suite maps its metrics onto the signals


def test_busy_wait_quiet_when_waits_block():
    records = [
        rec("t", {"replay_ratio": 1.0, "learner_cpu_s": 10.8, "main_cpu_s": 7.9}, suite="actor_learner"),  # tuned
        rec("a", {"wait_s": 12.0, "learner_wait_cpu_s": 0.06}),  # event waits measured here: 0.5 % of a core
        rec("b", {"wait_share": 0.8, "cpu_util_mean": 30.0, "cpu_procs_peak": 3}),
        rec("c", {"wait_s": 0.1, "learner_wait_cpu_s": 0.1}),  # too little waiting to judge
        rec("d", {"publish_share": 0.01}),
    ]
    assert "BUSY_WAIT" not in rules(records)


# ------------------------------------------------------------------ OVERSUBSCRIBED
def test_oversubscribed_uses_the_suites_resources_and_the_run_cores():
    records = [rec(f"w{w}", {}, {"kind": "spin", "workers": w}, suite="synthetic") for w in (1, 2, 8, 32)]
    f = only(records, "OVERSUBSCRIBED", meta={"cpu_cores": 2})
    assert f.severity == "info" and f.evidence["cpus"] == {"w8": 8, "w32": 32}
    assert "up to 32 CPUs on 2 cores" in f.hint


def test_oversubscribed_quiet_within_the_cores_and_for_unknown_suites_within_them():
    records = [rec("a", {}, {"kind": "spin", "workers": 2}, suite="synthetic"), rec("b", {}, {"workers": 1})]
    assert "OVERSUBSCRIBED" not in rules(records, meta={"cpu_cores": 2})


def test_healthy_run_has_no_findings():
    m = {
        "iterations_per_s": 100.0,
        "iterations_per_s_drift_pct_per_min": -0.5,
        "iterations_per_s_drift_se": 0.4,
        "work_requested": 10,
        "work_done": 10,
        "batch_mean": 60.0,
        "wait_s": 5.0,
        "learner_wait_cpu_s": 0.01,
        "gpu_util_mean": 80.0,
        "gpu_pids": [1234],
    }
    params = {"workers": 2, "device": "cuda", "backend": "server", "max_batch": 64}
    assert diagnose([rec("a", m, params)], META) == []


# ------------------------------------------------------------------ CLI
def test_diagnose_cli_prints_findings_and_json(cli, tmp_path):
    store = RunStore.create(tmp_path, "made", META)
    store.append(rec("a", {"work_requested": 10, "work_done": 7}))
    store.append(rec("b", {"batch_mean": 2.0, "batch_limit": 256}, SERVER))
    result = cli("diagnose", store.root, "--json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert [f["rule"] for f in found] == ["LOST_WORK", "SMALL_BATCHES"]
    assert set(found[0]) == {"rule", "severity", "cells", "hint", "evidence"}
    table = cli("diagnose", store.root)
    assert table.exit_code == 0 and "LOST_WORK" in table.output and "SMALL_BATCHES" in table.output


@pytest.mark.slow
def test_a_sweep_here_records_gpu_absence_and_prints_its_findings(cli, tmp_path):
    result = cli("sweep", "--suite", "synthetic", "--workers", "1,4", "--duration", "0.3", "--out", tmp_path, "--quiet")
    assert result.exit_code == 0, result.output
    (run_dir,) = run_dirs(tmp_path)
    records = read_records(run_dir)
    run_meta = json.loads((run_dir / "run.json").read_text())
    for record in records:
        m = record["metrics"]
        assert "cpu_util_mean" in m and "cpu_monitor_cpu_pct" in m
        if run_meta["gpus"] == []:  # no NVIDIA driver here: the reason, and no GPU numbers
            assert m["gpu_reason"] and not any(k.startswith("gpu_") and k != "gpu_reason" for k in m)
    if run_meta["cpu_cores"] < 4:
        assert "OVERSUBSCRIBED" in result.output


def test_drift_fires_on_what_the_probe_measures_from_a_decaying_rate():
    from harness.probe import Probe

    clock = type("Clock", (), {"t": 0.0, "__call__": lambda self: self.t})()
    probe = Probe(duration_s=30, clock=clock, series_period_s=1)
    rate = 38.0
    while not probe.should_stop():  # a growing state: 38 -> 28 iterations/s over half a minute
        clock.t += 1
        probe.count("iterations", rate)
        rate -= 10 / 30
    f = only([rec("a", probe.finish())], "DRIFT")
    assert f.evidence["rates"]["iterations_per_s"]["slope_pct_per_min"] < -50


def test_negative_scaling_compares_a_rate_that_is_valid_at_every_worker_count():
    # games_per_s "falls" 10.4 -> 3.99 only because the 128-worker window held almost no
    # finished game (the probe marked it invalid); moves/s, valid everywhere, is flat
    def cell(workers, games, moves, valid):
        m = {"games_per_s": games, "games_per_min": 60 * games, "moves_per_s": moves, "games_per_s_valid": valid}
        return rec(f"w{workers}", m, {"backend": "server", "workers": workers}, suite="selfplay")

    assert "NEGATIVE_SCALING" not in rules([cell(4, 10.4, 194.0, 1), cell(128, 3.99, 183.0, 0)])
    f = only([cell(4, 10.4, 194.0, 1), cell(128, 3.99, 75.0, 0)], "NEGATIVE_SCALING")
    assert f.evidence["rate"] == "moves_per_s"  # a real drop, in the rate valid at both counts
    assert "NEGATIVE_SCALING" in rules([cell(4, 10.4, 194.0, 1), cell(128, 3.99, 183.0, 1)])


def test_a_long_unit_measured_two_ways_is_compared_by_its_finer_rate():
    # the headline sweep of 2026-11-23 16:35: at 4 workers games/s is estimated from moves/s
    # (every worker finished dozens of games), at 128 it is counted (two games a worker: their
    # mean length is not trusted); two estimators with two biases, so moves/s decides
    def cell(workers, games, moves, counted=None):
        m = {"games_per_s": games, "games_per_min": 60 * games, "moves_per_s": moves, "games_per_s_valid": 1}
        if counted is not None:
            m["games_per_s_counted"] = counted
        return rec(f"w{workers}", m, {"backend": "processes", "workers": workers}, suite="selfplay")

    assert "NEGATIVE_SCALING" not in rules([cell(4, 37.73, 700.0, 36.13), cell(128, 28.0, 690.0)])
    f = only([cell(4, 44.92, 833.0, 43.5), cell(128, 31.28, 586.0)], "NEGATIVE_SCALING")
    assert f.evidence["rate"] == "moves_per_s" and "falls from 833 at 4 workers to 586 at 128" in f.hint
    both = [cell(4, 44.92, 833.0, 43.5), cell(128, 31.28, 586.0, 30.0)]  # one estimator: games/min decides
    assert only(both, "NEGATIVE_SCALING").evidence["rate"] == "games_per_min"


def test_negative_scaling_ignores_a_dip_that_more_workers_climb_out_of():
    # the headline sweep of 2026-11-23, server backend, one repeat a cell: 8 workers dipped
    dip = scaling({4: [1913], 8: [1542], 32: [2095], 128: [2457]}, backend="server")
    assert "NEGATIVE_SCALING" not in rules(dip)
    lasting = scaling({4: [1350], 8: [1325], 32: [990], 128: [700]}, backend="processes")
    f = only(lasting, "NEGATIVE_SCALING")
    assert f.cells == ["w128", "w32", "w4"]


# ------------------------------------------------------------------ PIPELINE_BOUND
PIPE = {"backend": "server", "workers": 8, "leaves": 8, "games_per_worker": 1}


@pytest.mark.parametrize(
    ("idle", "wait", "symptom", "severity", "knob"),
    [
        (0.6, 0.7, "serial", "warning", "games_per_worker"),
        (0.7, 0.05, "worker_bound", "warning", "games_per_worker"),
        (0.05, 0.8, "server_bound", "info", "server_threads"),
    ],
)
def test_pipeline_bound_names_the_side_that_waits_and_the_suites_knob(idle, wait, symptom, severity, knob):
    m = {"server_idle_share": idle, "client_wait_share": wait}
    f = only([rec("a", m, PIPE, suite="selfplay")], "PIPELINE_BOUND")
    assert f.severity == severity and f.evidence["symptom"] == symptom
    assert knob in f.hint and f"{100 * idle:.0f} %" in f.hint
    generic = only([rec("a", m, PIPE)], "PIPELINE_BOUND")  # a suite that names no remedy
    assert knob not in generic.hint and generic.evidence["symptom"] == symptom


def test_pipeline_bound_names_a_server_that_computes_one_batch_where_it_could_compute_two():
    busy = {"server_idle_share": 0.09, "client_wait_share": 0.97, "server_batch_slots": 2}
    one = only([rec("a", {**busy, "server_batches_computing": 0.92}, PIPE, suite="selfplay")], "PIPELINE_BOUND")
    assert one.severity == "warning" and one.evidence["symptom"] == "one_batch"
    assert "gather=share" in one.hint and "0.92 of 2" in one.hint
    for most in (1.49, 1.9):  # two batches at once most of the time: what is left is the workers' search
        both = only([rec("a", {**busy, "server_batches_computing": most}, PIPE, suite="selfplay")], "PIPELINE_BOUND")
        assert both.evidence["symptom"] == "server_bound"
    single = {**busy, "server_batch_slots": 1, "server_batches_computing": 0.92}  # nothing else to fill
    assert only([rec("a", single, PIPE, suite="selfplay")], "PIPELINE_BOUND").evidence["symptom"] == "server_bound"


def test_a_remedy_does_not_ask_a_cell_for_the_knob_values_it_already_has():
    """A server cell already on gather=share computing one batch at a time is told the
    other way out, with its own games_per_worker in the sentence."""
    busy = {"server_idle_share": 0.18, "client_wait_share": 0.89, "server_batch_slots": 2, "server_batches_computing": 0.94}
    shared = {**PIPE, "gather": "share", "games_per_worker": 4, "inflight": 2}
    hint = only([rec("a", busy, shared, suite="selfplay")], "PIPELINE_BOUND").hint
    assert "gather=share" not in hint and "more games_per_worker than 4 (enough requests for 2 batches at once)" in hint
    hint = only([rec("a", busy, {**shared, "gather": "deadline"}, suite="selfplay")], "PIPELINE_BOUND").hint
    assert "gather=share (the clients take turns in inflight groups) or more games_per_worker than 4" in hint


def test_pipeline_bound_quiet_on_an_overlapped_pipeline_and_without_its_signals():
    records = [
        rec("a", {"server_idle_share": 0.1, "client_wait_share": 0.15}, PIPE, suite="selfplay"),  # both busy
        rec("b", {"server_idle_share": 0.35, "client_wait_share": 0.4}, PIPE, suite="selfplay"),  # neither decisive
        rec("c", {"batch_mean": 7.4}, {**PIPE, "backend": "processes"}, suite="selfplay"),  # no server
    ]
    assert "PIPELINE_BOUND" not in rules(records)


def test_negative_scaling_of_a_distributed_jobs_rate_says_it_is_one_ranks_with_the_totals():
    records = scaling({1: [300.0], 4: [48.0]})
    records[1].metrics["program_world_size"] = 4
    hint = only(records, "NEGATIVE_SCALING").hint
    assert "likely one rank's of a torch.distributed job (1 and 4 ranks)" in hint
    assert "totals would be about 300 and 192 (0.64x)" in hint
    assert "torch.distributed" not in only(scaling({1: [300.0], 4: [48.0]}), "NEGATIVE_SCALING").hint
