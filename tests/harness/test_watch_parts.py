"""The watch instruments' parts on made-up input: stacks -> categories, py-spy's trace ->
timed spans, roles, the GIL split, log rates, the torch hook, the new rules. No program is
watched here (tests/harness/test_watch.py does that)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from harness.diagnosis import diagnose
from harness.errors import UserError
from harness.model.vocabulary import WATCH_SUITE
from harness.monitors.logrates import DEFAULT_PATTERN, LogRatesMonitor, compile_pattern, parse_line, rate_name
from harness.monitors.procstat import ProcInfo
from harness.monitors.torch_calls import TorchCallsMonitor, hook_env
from harness.watch import breakdown, roles
from harness.watch.chrometrace import ThreadTimeline, parse
from harness.watch.classify import Frame, classify, entry_function
from harness.watch.signals import asks_for_cuda, collect
from tests.records import make_record

STD = "/usr/lib/python3.11"


def lines(mapping):
    return lambda filename, line: mapping.get((filename, line), "")


# ------------------------------------------------------------------ classify
@pytest.mark.parametrize(
    ("frames", "source", "category"),
    [
        ([Frame("learner", "/p/a.py", 3)], {("/p/a.py", 3): "time.sleep(0.001)"}, "sleep"),
        ([Frame("f", "/p/a.py", 5)], {("/p/a.py", 5): "x += k"}, "compute"),
        ([Frame("Condition.wait", f"{STD}/threading.py", 327), Frame("Queue.get", f"{STD}/queue.py", 171)], {}, "blocked"),
        ([Frame("Connection._recv", f"{STD}/multiprocessing/connection.py", 395)], {}, "blocked"),
        ([Frame("Connection._send", f"{STD}/multiprocessing/connection.py", 384)], {}, "ipc"),
        ([Frame("ForkingPickler.dumps", f"{STD}/multiprocessing/reduction.py", 51)], {}, "ipc"),
        ([Frame("Queue.get", f"{STD}/multiprocessing/queues.py", 122)], {(f"{STD}/multiprocessing/queues.py", 122): "return _ForkingPickler.loads(res)"}, "ipc"),
        ([Frame("run", "/p/a.py", 9)], {("/p/a.py", 9): "lock.acquire()"}, "blocked"),
        ([Frame("tasks", "/p/a.py", 9)], {("/p/a.py", 9): "for t in iter(taskqueue.get, None):"}, "blocked"),
        ([Frame("forward", "/p/net.py", 4), Frame("Module._call_impl", "/site/torch/nn/modules/module.py", 1527)], {}, "torch"),
        ([Frame("synchronize", "/site/torch/cuda/__init__.py", 800), Frame("step", "/p/a.py", 2)], {}, "cuda_sync"),
        ([], {}, "native"),
    ],
    ids=["sleep", "compute", "queue", "pipe-read", "send", "pickle", "unpickle-line", "lock-line", "iter-get", "torch", "cuda-sync", "empty"],
)
def test_a_stack_gets_the_category_of_what_it_waits_on_or_runs(frames, source, category):
    assert classify(frames, line_of=lines(source)) == category


def test_the_entry_of_a_multiprocessing_child_is_its_target():
    frames = [
        Frame("actor", "/p/a.py", 6),
        Frame("BaseProcess.run", f"{STD}/multiprocessing/process.py", 108),
        Frame("BaseProcess._bootstrap", f"{STD}/multiprocessing/process.py", 314),
        Frame("<module>", "/p/a.py", 29),
    ]
    assert entry_function(frames) == "actor"
    assert entry_function(frames[3:]) == "<module>"


# ------------------------------------------------------------------ chrometrace
def event(ph, name, ts, filename="", line=0, tid=7):
    return {"ph": ph, "name": name, "ts": ts, "pid": 11, "tid": tid, "cat": "py-spy", "args": {"filename": filename, "line": line}}


def test_a_trace_replays_into_timed_spans_per_thread(tmp_path):
    src = tmp_path / "prog.py"
    src.write_text("import time\nwhile True:\n    time.sleep(0.001)\n    x = 1\n")
    events = [
        event("B", "thread (1234): MainThread", 0),
        event("B", "<module>", 0, str(src), 3),  # sleeping for 0.5 s
        event("E", "<module>", 500_000, str(src), 3),
        event("B", "<module>", 500_000, str(src), 4),  # computing for 0.25 s
        event("E", "<module>", 750_000, str(src), 4),
        event("E", "thread (1234): MainThread", 750_000),
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(events))
    (line,) = parse(path, start_wall=100.0)
    assert (line.pid, line.tid, line.name) == (11, 1234, "MainThread")
    assert line.spans == [(100.0, 100.5, "sleep"), (100.5, 100.75, "compute")]
    assert line.sites.most_common(1)[0][0][0] == "sleep" and "time.sleep(0.001)" in line.sites.most_common(1)[0][0][1]


def test_a_missing_or_torn_trace_gives_nothing(tmp_path):
    torn = tmp_path / "torn.json"
    torn.write_text('[{"ph": "B"')
    assert parse(tmp_path / "absent.json", 0.0) == [] and parse(torn, 0.0) == []


# ------------------------------------------------------------------ roles
def test_roles_come_from_the_tree_and_what_each_process_runs():
    procs = {
        1: roles.Proc(1, 0, ["python", "-m", "harness.cell", "{}", "out"], 0.0),
        2: roles.Proc(2, 1, ["python", "train.py"], 0.1),
        3: roles.Proc(3, 2, ["python", "-c", "from multiprocessing.resource_tracker import main;main(5)"], 0.2),
        **{pid: roles.Proc(pid, 2, ["python", "train.py"], 0.3) for pid in (4, 5, 6)},
        7: roles.Proc(7, 2, ["python", "train.py"], 0.3),
    }
    entries = {2: "<module>", 4: "actor", 5: "actor", 6: "actor", 7: "learner"}
    assert roles.assign(procs, entries) == {1: "harness", 2: "main", 3: "helper", 4: "workers", 5: "workers", 6: "workers", 7: "server"}


def test_a_process_forked_from_the_harness_or_a_helper_is_the_programs():
    """selfplay's server forks from the cell's interpreter, and a forkserver's workers from
    the forkserver: each keeps its parent's command line."""
    cell = ["python", "-m", "harness.cell", "{}", "out"]
    procs = {
        1: roles.Proc(1, 0, cell, 0.0),
        2: roles.Proc(2, 1, cell, 0.1),
        **{pid: roles.Proc(pid, 1, ["python", "-c", "from multiprocessing.forkserver import main; main(9)"], 0.2) for pid in (3,)},
        **{pid: roles.Proc(pid, 3, ["python", "-c", "from multiprocessing.forkserver import main; main(9)"], 0.3) for pid in (4, 5)},
    }
    assigned = roles.assign(procs, {2: "serve", 4: "play", 5: "play"})
    assert assigned[1] == "harness" and assigned[3] == "helper"
    assert assigned[2] not in roles.IGNORED and assigned[4] == assigned[5] == "workers"
    # and the stack sampler skips the cell's interpreter only, not what forked from it
    assert roles.is_harness_own(cell, ["harness", "sweep"]) and not roles.is_harness_own(cell, cell)


# ------------------------------------------------------------------ breakdown (GIL split)
def sched(run_per_s, wakeups_per_s, start=0.0, end=4.0, step=0.5):
    return [(t, run_per_s * (t - start), 0.0, int(wakeups_per_s * (t - start))) for t in np.arange(start, end + 1e-9, step)]


def busy_thread(tid):
    return ThreadTimeline(9, tid, f"T{tid}", [(0.0, 4.0, "compute")])


def test_busy_time_the_kernel_did_not_run_is_gil_wait_when_the_thread_wakes_like_a_gil_waiter():
    edges = breakdown.bin_edges(0.0, 4.0)
    threads = {(9, 1): sched(0.25, 200), (9, 2): sched(0.25, 200)}
    out = breakdown.build(edges, [busy_thread(1), busy_thread(2)], threads)
    share = breakdown.shares(out.process(9))
    assert share["gil_wait"] == pytest.approx(0.75, abs=0.05) and share["compute"] == pytest.approx(0.25, abs=0.05)


def test_busy_time_without_wakeups_is_an_unknown_blocking_call_not_the_gil():
    edges = breakdown.bin_edges(0.0, 4.0)
    threads = {(9, 1): sched(0.25, 0), (9, 2): sched(1.0, 0)}
    out = breakdown.build(edges, [busy_thread(1), busy_thread(2)], threads)
    first = breakdown.shares(out.threads[(9, 1)])
    assert first["gil_wait"] == 0.0 and first["blocked"] == pytest.approx(0.75, abs=0.05)


def test_a_lone_thread_is_never_waiting_for_the_gil():
    out = breakdown.build(breakdown.bin_edges(0.0, 4.0), [busy_thread(1)], {(9, 1): sched(0.1, 200)})
    assert breakdown.shares(out.process(9))["gil_wait"] == 0.0


def proc_info(pid, cores):
    return ProcInfo(pid, 1, "python", ["python", "train.py"], None, 0.0, 4.0, [(t, cores * t, 0, 0, 0, 0, 0) for t in (0.0, 4.0)])


def test_a_feeder_thread_waiting_for_the_gil_beside_one_busy_thread_is_no_spread_compute():
    """test_watch.py's healthy control (busy_poll.py block) drew GIL_BOUND once in a full run:
    each actor's main thread spins and its multiprocessing.Queue feeder, running a little per
    item, waits a switch interval for the GIL ~100 times a second (1.61 threads, 39 % GIL
    waits). Its compute cannot spread, where four CPU-bound threads' can: the signals pick
    the latter and say by how much (gil_compute_spread)."""
    edges = breakdown.bin_edges(0.0, 4.0)
    feeder = ThreadTimeline(7, 2, "feeder", [(0.0, 4.0, "compute")])
    lines_ = [ThreadTimeline(7, 1, "MainThread", [(0.0, 4.0, "compute")]), feeder]
    lines_ += [ThreadTimeline(8, tid, f"T{tid}", [(0.0, 4.0, "compute")]) for tid in (1, 2, 3, 4)]
    threads = {(7, 1): sched(0.85, 5), (7, 2): sched(0.02, 100)}  # the feeder: 20 ms a second, 100 wake-ups
    threads |= {(8, tid): sched(0.2, 150) for tid in (1, 2, 3, 4)}  # 4 threads share 0.8 of a core
    out = breakdown.build(edges, lines_, threads)
    procs = {7: proc_info(7, 0.87), 8: proc_info(8, 0.8)}
    only_actor, _ = collect(out, {7: procs[7]}, {7: "workers"}, lines_[:2], {}, threads)
    assert only_actor["gil_wait_share"] > 0.3 and only_actor["gil_compute_spread"] < 1.1
    assert rules_of({k: v for k, v in only_actor.items() if k.startswith("gil_")}) == []
    both, _ = collect(out, procs, {7: "workers", 8: "workers"}, lines_, {}, threads)
    assert both["gil_process"] == "pid 8 (workers)" and both["gil_compute_spread"] == pytest.approx(4.0, abs=0.1)
    assert rules_of({k: v for k, v in both.items() if k.startswith("gil_")}) == [("GIL_BOUND", "warning")]


def test_a_thread_with_no_python_frame_is_native_work_not_a_gil_contender():
    """A DDP rank of Lightning: its main thread works in Python (runs 0.4 s a second, the
    rest blocked in a collective py-spy shows as a Python call), and torch's autograd and
    gloo threads, sampled with empty stacks the whole window, barely run and wake often: they
    are no threads that want the GIL (read as 1.93 threads waiting 65 % for the GIL before)."""
    edges = breakdown.bin_edges(0.0, 4.0)
    native = [ThreadTimeline(9, tid, f"T{tid}", [(0.0, 4.0, "native")]) for tid in (2, 3)]
    threads = {(9, 1): sched(0.4, 1000), (9, 2): sched(0.02, 1000), (9, 3): sched(0.0, 1000)}
    out = breakdown.build(edges, [busy_thread(1), *native], threads)
    assert breakdown.shares(out.process(9))["gil_wait"] == 0.0
    gloo = breakdown.shares(out.threads[(9, 2)])
    assert gloo["native"] == pytest.approx(0.02, abs=0.01) and gloo["blocked"] == pytest.approx(0.98, abs=0.01)
    assert gloo["compute"] == 0.0


def test_bins_cover_the_window_and_stay_few():
    assert len(breakdown.bin_edges(0.0, 4.2)) - 1 == 5
    assert len(breakdown.bin_edges(0.0, 3600.0)) - 1 == breakdown.MAX_BINS


# ------------------------------------------------------------------ log rates
@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("Iteration 4500 (33.4 iter/s)", [("log_iter_per_s", 33.4)]),
        ("12 games, 68.3 games/min", [("log_games_per_min", 68.3)]),
        ("100%|####| 50/50 [00:01<00:00, 33.40it/s]", [("log_it_per_s", 33.4)]),
        ("3600 frames/hour", [("log_frames_per_min", 60.0)]),
        ("loss 0.31 lr 1e-3 took 12 ms/step", []),
    ],
)
def test_the_default_pattern_reads_the_rates_programs_print(line, found):
    import re

    assert parse_line(line, [re.compile(DEFAULT_PATTERN)]) == found


def test_a_user_pattern_needs_its_value_group_and_names_the_rate():
    pattern = compile_pattern(r"speed=(?P<value>[\d.]+) (?P<unit>\w+)/(?P<per>s)")
    assert parse_line("speed=12.5 samples/s", [pattern]) == [("log_samples_per_s", 12.5)]
    assert parse_line("x=3", [compile_pattern(r"x=(\d+)")]) == [("log_rate", 3.0)]
    for bad in ("(unclosed", r"(a)(b)"):
        with pytest.raises(UserError, match="--rate-regex"):
            compile_pattern(bad)
    assert rate_name(None, None) == ("log_rate", 1.0)


def test_rates_followed_in_a_growing_log_give_a_median_and_a_drift(tmp_path):
    log = tmp_path / "out.log"
    log.write_text("".join(f"Iteration {i} ({100 - 4 * i:.1f} iter/s)\n" for i in range(12)) + "Iteration 12 (52")
    monitor = LogRatesMonitor([log])
    monitor.read_once()
    assert monitor.rate_lines == 12  # the unfinished last line waits for its end
    times = iter(range(100))
    monitor.points = [(float(next(times)), name, value) for _, name, value in monitor.points]
    result = monitor.stop()
    assert result.metrics["log_iter_per_s"] == pytest.approx(78.0)
    assert result.metrics["log_iter_per_s_drift_pct_per_min"] < -100
    assert result.metrics["log_iter_per_s_drift_span_s"] == 12.0  # the 12 lines, one a second



def test_rates_handed_over_as_output_arrives_are_read_across_cut_lines_and_characters():
    monitor = LogRatesMonitor([], re.compile(r"Épisode (?P<value>\d+) "), fed=True)
    text = "\r".join(f"Épisode {i} ({40 + i} iter/s)" for i in range(10)).encode()
    for start in range(0, len(text), 7):  # chunks that cut lines and the two bytes of É
        monitor.take(text[start : start + 7])
    assert monitor.rate_lines == 9  # the last waits for its end
    monitor.finish()  # ... or for the window's end
    monitor.take("Épisode 99 (1000 iter/s)\n".encode())  # after the window: not the window's
    result = monitor.result()
    assert result.metrics["log_rate_lines"] == 10 and result.metrics["log_rate"] == 4.5


# ------------------------------------------------------------------ torch hook
@pytest.mark.slow
def test_the_hook_records_top_level_calls_only_where_the_program_imports_torch(tmp_path):
    pytest.importorskip("torch")
    program = tmp_path / "prog.py"
    program.write_text(
        "import sys, threading\n"
        "assert 'torch' not in sys.modules\n"
        "import torch\n"
        "net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))\n"
        "gate = threading.Barrier(3)  # alive together: a finished thread's id may be reused\n"
        "def f():\n"
        "    gate.wait()\n"
        "    for _ in range(50): net(torch.zeros(1, 4))\n"
        "ts = [threading.Thread(target=f) for _ in range(3)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "net(torch.zeros(6, 4))\n"
    )
    plain = tmp_path / "plain.py"
    plain.write_text("import sys\nassert 'torch' not in sys.modules\nprint('ok')\n")
    monitor = TorchCallsMonitor(tmp_path / "side")
    env = monitor.environ({"PATH": "/usr/bin:/bin"})
    for script in (program, plain):
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    metrics = monitor.stop().metrics
    assert metrics["torch_calls"] == 151 and metrics["torch_modules"] == {"Sequential": 151}
    assert metrics["batch_hist"] == {"1": 150.0, "6": 1.0}
    assert metrics["batch_limit"] == 4 * 6  # three threads and the main one called the net; its largest batch was 6
    assert list(metrics["worker_devices"].values()) == ["cpu"]
    assert metrics["torch_hook_us_per_call"] > 0


def test_the_hook_runs_the_sitecustomize_it_shadows(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import builtins\nbuiltins.CHAINED = True\n")
    env = hook_env({"PATH": "/usr/bin:/bin", "PYTHONPATH": str(other)}, tmp_path / "side")
    done = subprocess.run([sys.executable, "-c", "import builtins; print(builtins.CHAINED)"], env=env, capture_output=True, text=True)
    assert done.stdout.strip() == "True", done.stderr


def test_without_the_hook_the_record_says_why(tmp_path):
    metrics = TorchCallsMonitor(tmp_path, enabled=False, reason="off (--no-torch-hook)").stop().metrics
    assert metrics == {"torch_reason": "off (--no-torch-hook)"}


# ------------------------------------------------------------------ the rules on made-up records
def watch_record(metrics):
    return make_record("w", {"measure_s": 5.0, **metrics}, {"command": "python prog.py"}, suite=WATCH_SUITE)


def findings_of(metrics):
    return diagnose([watch_record(metrics)], {"cpu_cores": 2})


def rules_of(metrics):
    return [(f.rule, f.severity) for f in findings_of(metrics)]


@pytest.mark.parametrize(
    ("metrics", "expected"),
    [
        ({"sleep_share": 0.9, "wakeups_hz": 800.0, "sleep_site": "a.py:3 f: time.sleep(0.001)"}, ("BUSY_WAIT", "warning")),
        ({"ipc_share": 0.6, "ipc_share_growth": 1.1, "write_size_growth": 3.0}, ("SERIALIZATION", "warning")),
        ({"gil_wait_share": 0.6, "gil_threads": 4.0, "gil_cpu_cores": 1.0, "gil_compute_spread": 4.0}, ("GIL_BOUND", "warning")),
        ({"gil_wait_share": 0.6, "gil_threads": 4.0, "gil_cpu_cores": 1.0}, ("GIL_BOUND", "warning")),  # a record before the spread
        ({"batch_mean": 1.0, "batch_limit": 16}, ("SMALL_BATCHES", "warning")),
        ({"worker_devices": {"11": "cpu", "12": "cpu"}, "gpu_asked": 1.0}, ("NET_OFF_DEVICE", "warning")),
        ({"worker_devices": {"11": "cpu", "12": "cuda:0"}, "gpu_asked": 0.0}, ("NET_OFF_DEVICE", "warning")),
        ({"worker_devices": {"11": "cpu"}, "gpu_asked": 0.0, "gpu_util_mean": 0.0}, ("NET_OFF_DEVICE", "info")),
        ({"worker_wait_pct": {"1": 99.0, "2": 98.0, "3": 97.0}, "worker_cpu_pct": {"1": 1.0, "2": 1.0, "3": 1.0}, "log_iter_per_s": 50.0}, ("IDLE_WORKERS", "warning")),
    ],
    ids=["busy-wait", "serialization", "gil", "gil-spread-unknown", "small-batches", "net-asked", "net-mixed", "net-present", "idle-workers"],
)
def test_each_watch_rule_fires_on_its_signals(metrics, expected):
    assert rules_of(metrics) == [expected]


@pytest.mark.parametrize(
    ("command", "asked"),
    [
        # CleanRL 0.4.8 on the CPU was told its net ran off a GPU it had asked for (issue 44's C1, C4)
        ("python -m cleanrl.ppo --gym-id CartPole-v1 --cuda False --seed 1", False),
        ("python train.py --cuda=false", False),
        ("python train.py --no-cuda", False),
        ("python train.py --use-cuda 0", False),
        ("python train.py --device cpu", False),
        ("python train.py --cuda", True),
        ("python train.py --cuda --seed 1", True),
        ("python train.py --cuda True", True),
        ("python train.py --device cuda", True),
        ("python train.py --device=cuda:1", True),
        ("python train.py trainer.device=cuda", True),
        ("python train.py --cuda-device 0", True),
    ],
)
def test_a_command_line_asks_for_cuda_only_when_its_cuda_flag_is_on(command, asked):
    assert asks_for_cuda(command.split()) is asked


def test_idle_workers_beside_a_busy_server_name_the_server_first():
    idle = {"worker_wait_pct": {"1": 98.0, "2": 98.0}, "worker_cpu_pct": {"1": 2.7, "2": 2.8}, "main_cpu_pct": 141.0}
    (served,) = findings_of({**idle, "waited_on": {"pid": 27334, "role": "server", "cpu_pct": 133.0}})
    assert served.rule == "IDLE_WORKERS" and "they wait on the server, pid 27334 on 133 % of a core" in served.hint
    (split,) = findings_of({**idle, "waited_on": {"pid": 7, "role": "main", "cpu_pct": 141.0}})
    assert "wait on the server" not in split.hint and "total // workers" in split.hint


@pytest.mark.parametrize(
    "metrics",
    [
        {"sleep_share": 0.9, "wakeups_hz": 2.0},  # a thread that sleeps 0.5 s between progress lines
        {"sleep_share": 0.05, "wakeups_hz": 5000.0},  # wakes a lot, but on data, not from sleep
        {"ipc_share": 0.6, "ipc_share_growth": 1.6, "write_size_growth": 1.0},  # busy IPC of steady messages
        {"gil_wait_share": 0.6, "gil_threads": 4.0, "gil_cpu_cores": 3.5},  # threads that release the GIL
        {"gil_wait_share": 0.1, "gil_threads": 4.0, "gil_cpu_cores": 1.0},
        {"gil_wait_share": 0.39, "gil_threads": 1.61, "gil_cpu_cores": 0.858, "gil_compute_spread": 1.03},  # a feeder beside one busy thread
        {"batch_mean": 16.0, "batch_limit": 16},
        {"worker_devices": {"11": "cpu"}, "gpu_asked": 0.0},  # no GPU asked or present
        {"worker_wait_pct": {"1": 99.0, "2": 20.0, "3": 10.0}, "worker_cpu_pct": {"1": 1.0, "2": 80.0, "3": 90.0}, "log_iter_per_s": 50.0},
        {"worker_wait_pct": {"1": 99.0, "2": 99.0}, "worker_cpu_pct": {"1": 0.0, "2": 0.0}},  # no progress either
    ],
    ids=["slow-sleeper", "data-wakeups", "steady-ipc", "gil-released", "little-gil", "gil-one-thread-computes", "full-batches", "no-gpu", "busy-workers", "stalled"],
)
def test_the_watch_rules_stay_quiet_on_healthy_signals(metrics):
    assert rules_of(metrics) == []


def test_a_worker_whose_stacks_wait_while_the_kernel_runs_it_is_not_idle():
    """Stacks that read a wait (a C call on a line the classifier takes for one) against a
    worker that wanted a whole core: the kernel has the last word."""
    stacks = {"worker_wait_pct": {"1": 99.0, "2": 98.0}, "worker_cpu_pct": {"1": 12.0, "2": 13.0}, "log_iter_per_s": 50.0}
    assert ("IDLE_WORKERS", "warning") in rules_of(stacks)  # what they got is no answer on a crowded machine
    assert "IDLE_WORKERS" not in [r for r, _ in rules_of({**stacks, "worker_runnable_pct": {"1": 99.9, "2": 100.0}})]
    unsampled = {"worker_cpu_pct": {"1": 3.0, "2": 4.0}, "log_iter_per_s": 50.0}  # no stacks: what they wanted
    assert ("IDLE_WORKERS", "warning") in rules_of(unsampled)
    assert "IDLE_WORKERS" not in [r for r, _ in rules_of({**unsampled, "worker_runnable_pct": {"1": 95.0, "2": 97.0}})]


def test_workers_without_stacks_that_wake_to_find_nothing_are_idle_and_busy_ones_are_not():
    """128 pool workers handed 100 // 128 units on 2 cores: py-spy sampled 21, the other 107
    each sat runnable 7-10 % of a core (the run queue after every wake-up) while they ran 0.5 %,
    waking 130 times a second: the 5 % line on what they wanted missed them all."""
    pids = [str(p) for p in range(1, 11)]
    woken = {
        "worker_cpu_pct": dict.fromkeys(pids, 0.52),
        "worker_runnable_pct": dict.fromkeys(pids, 9.9),
        "worker_wakeups_hz": dict.fromkeys(pids, 131.0),
        "log_iter_per_s": 100.0,
    }
    (finding,) = findings_of(woken)
    assert finding.rule == "IDLE_WORKERS" and finding.evidence["idle_by"] == {"cpu": 10}
    assert "by CPU, wake-ups and run queue for 10" in finding.hint
    # the same CPU in few long runs a second: work that a crowded machine starves, not a wait
    assert rules_of({**woken, "worker_wakeups_hz": dict.fromkeys(pids, 4.0)}) == []
    # milliseconds of CPU a wake-up: each wake-up does work
    assert rules_of({**woken, "worker_cpu_pct": dict.fromkeys(pids, 4.0), "worker_wakeups_hz": dict.fromkeys(pids, 30.0)}) == []
    # wanting most of a core: busy, whatever the rest says
    assert rules_of({**woken, "worker_runnable_pct": dict.fromkeys(pids, 80.0)}) == []


def test_workers_the_proc_wait_edges_show_blocked_on_another_process_are_idle():
    """Most workers blocked on one process most of the time is idleness measured: each
    unsampled worker is judged by its own edges, and the finding says what judged how many."""
    pids = [str(p) for p in range(1, 11)]
    blocked = {
        "worker_cpu_pct": dict.fromkeys(pids, 2.0),
        "worker_runnable_pct": dict.fromkeys(pids, 5.5),  # few wake-ups, so the CPU alone would not say
        "worker_wakeups_hz": dict.fromkeys(pids, 5.0),
        "worker_blocked_pct": {**dict.fromkeys(pids[:7], 100.0), **dict.fromkeys(pids[7:], 40.0)},
        "worker_wait_pct": {"1": 99.0, "2": 98.0},
        "waits_passes": 30,
        "log_iter_per_s": 100.0,
    }
    (finding,) = findings_of(blocked)
    assert finding.evidence["idle_by"] == {"stacks": 2, "waits": 5}
    assert "by their stacks for 2, /proc wait edges for 5" in finding.hint
    assert rules_of({**blocked, "worker_blocked_pct": dict.fromkeys(pids, 40.0)}) == []  # 2 of 10
    # the kernel's word stands over the edges: a worker that wanted most of a core is not idle
    assert rules_of({**blocked, "worker_runnable_pct": dict.fromkeys(pids, 90.0)}) == []
    # an instrument that saw nothing gives no evidence: the wait reader blind, the edges unread
    assert rules_of({**blocked, "waits_asleep": 900, "waits_unreadable": 900}) == []
    # three passes give each worker 0, 33, 67 or 100 %: not its own evidence, only the pool's
    assert rules_of({**blocked, "waits_passes": 3}) == []  # pooled 82 %
    most = {**blocked, "waits_passes": 3, "worker_blocked_pct": {**dict.fromkeys(pids, 100.0), "10": 40.0}}
    (finding,) = findings_of(most)  # pooled 94 %: the eight unsampled workers judged by it
    assert finding.evidence["idle_by"] == {"stacks": 2, "waits": 8}


def test_workers_starved_of_a_cpu_are_not_idle_whatever_the_samplers_saw():
    """The split control at the seeds' scale: 100 pool workers with a game each on 2 cores.
    Each ran 1.7 % of a core, 3.6 ms a wake-up, and sat 31 % in the run queue; the samplers,
    which wait for a core too, saw them asleep: stacks 92 % waiting, blocked at every pass."""
    pids = [str(p) for p in range(1, 11)]
    starved = {
        "worker_cpu_pct": dict.fromkeys(pids, 1.7),
        "worker_runnable_pct": dict.fromkeys(pids, 33.0),
        "worker_wakeups_hz": dict.fromkeys(pids, 4.7),
        "worker_wait_pct": dict.fromkeys(pids[:3], 92.0),
        "worker_blocked_pct": dict.fromkeys(pids, 100.0),
        "waits_passes": 2,
        "log_iter_per_s": 2.7,
    }
    assert rules_of(starved) == []
    # the same samples, the run queue short: they had nothing to do, and the finding stands
    assert ("IDLE_WORKERS", "warning") in rules_of({**starved, "worker_runnable_pct": dict.fromkeys(pids, 4.0)})
    # the same run queue, each wake-up bringing nothing: the lost-work failure
    woken = {**starved, "worker_cpu_pct": dict.fromkeys(pids, 0.1), "worker_wakeups_hz": dict.fromkeys(pids, 36.0)}
    assert ("IDLE_WORKERS", "warning") in rules_of(woken)


def test_what_a_process_wanted_is_what_its_threads_ran_and_queued():
    from harness.monitors.procstat import ProcInfo
    from harness.watch.signals import _runnable_cores

    info = ProcInfo(7, 1, "p", [], None, 0.0, 10.0, samples=[(0.0, 0.0, 0, 0, 0, 0, 0), (10.0, 1.0, 0, 0, 0, 0, 0)])
    threads = {(7, 70): [(0.0, 0.0, 0.0, 0), (10.0, 1.0, 9.0, 0)], (7, 71): [(0.0, 0.0, 0.0, 0), (10.0, 0.0, 0.0, 0)]}
    assert _runnable_cores(info, threads) == 1.0  # ran 1 s, queued 9 s, of 10
    info.threads_read = False  # over PER_THREAD_MAX threads: not read
    assert _runnable_cores(info, threads) is None
