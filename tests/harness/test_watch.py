"""`harness watch` over the small programs of tests/programs: it names each classic failure
and raises no finding on its healthy control; a suite's cells get the same instruments; an
attached process is left exactly as it was; bad input exits 2 naming what is allowed.

Each failure and its control are watched at the same time (two `harness watch` processes),
so a pair costs the time of one; the rules read signals that hold on a busy machine
(stacks and the kernel's own counters, not raw CPU shares).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.cell.processes import child_env, marked_processes
from harness.diagnosis import diagnose
from harness.runs.store import RunStore
from tests.conftest import run_dirs

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"
TORCH_S = 10.0  # importing torch takes 1.5 s of CPU, several seconds of wall time on a busy machine


def watch_pair(tmp_path: Path, program: str, bad: list[str], good: list[str], duration: float, prefix: str = ""):
    """Watch the failure and its control at once; returns {args[0]: (exit code, stdout, run dir)}."""
    jobs = {}
    for args in (bad, good):
        out = tmp_path / args[0]
        command = [sys.executable, "-m", "harness.cli", "watch", "--quiet", "--duration", str(duration)]
        command += ["--out", str(out), "--", sys.executable, str(PROGRAMS / program), *([prefix] if prefix else []), *args]
        jobs[args[0]] = (subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=child_env()), out)
    done = {}
    for name, (proc, out) in jobs.items():
        stdout, _ = proc.communicate(timeout=duration + 120)
        (run,) = run_dirs(out)
        assert not marked_processes(run), f"{name}: processes of the watched program outlived the watch"
        done[name] = (proc.returncode, stdout, run)
    return done


def findings(run: Path) -> list:
    store = RunStore.open(run)
    return diagnose(store.records(), store.meta())


def assert_named(result, rule: str) -> None:
    code, stdout, run = result
    assert code == 0, stdout
    assert rule in [f.rule for f in findings(run)], stdout
    assert f" {rule} " in stdout  # printed, as a sweep prints its findings


def assert_quiet(result, allow: tuple[str, ...] = ()) -> None:
    code, stdout, run = result
    assert code == 0, stdout
    found = [f for f in findings(run) if f.rule not in allow]
    assert not found, [(f.rule, f.hint) for f in found]


@pytest.mark.slow
def test_a_sleep_poll_loop_is_busy_waiting_and_a_blocking_get_is_not(tmp_path):
    runs = watch_pair(tmp_path, "busy_poll.py", ["poll"], ["block"], 4)
    assert_named(runs["poll"], "BUSY_WAIT")
    assert_quiet(runs["block"])
    run = runs["poll"][2]
    record = json.loads((run / "cells.jsonl").read_text())
    assert "time.sleep(0.001)" in record["metrics"]["sleep_site"]
    assert record["metrics"]["watch_roles"]["main"]["pct"]["sleep"] > 20
    assert record["metrics"]["watch_cpu_pct"] > 0 and record["metrics"]["stacks_samples"] > 0  # its cost, measured
    page = (run / "report.html").read_text()
    assert "Where the time went" in page and 'data-chart="where"' in page
    series = (run / record["series"]).read_text()
    assert "where_main_sleep" in series and "log_steps_per_s" in series


@pytest.mark.slow
def test_sending_the_whole_growing_table_is_serialization_and_deltas_are_not(tmp_path):
    runs = watch_pair(tmp_path, "full_state.py", ["full"], ["delta"], 5)
    assert_named(runs["full"], "SERIALIZATION")
    assert_quiet(runs["delta"])


@pytest.mark.slow
def test_threads_sharing_a_net_at_batch_one_are_small_batches_and_one_batched_call_is_not(tmp_path):
    pytest.importorskip("torch")
    runs = watch_pair(tmp_path, "shared_net.py", ["threads"], ["batched"], TORCH_S)
    assert_named(runs["threads"], "SMALL_BATCHES")
    assert_quiet(runs["batched"])
    metrics = json.loads((runs["threads"][2] / "cells.jsonl").read_text())["metrics"]
    assert metrics["batch_mean"] == 1.0 and metrics["batch_limit"] == 16


@pytest.mark.slow
def test_floor_division_over_too_many_workers_leaves_them_idle_and_split_work_does_not(tmp_path):
    runs = watch_pair(tmp_path, "lost_work.py", ["floor"], ["split"], 5)
    assert_named(runs["floor"], "IDLE_WORKERS")
    assert_quiet(runs["split"])


@pytest.mark.slow
def test_cpu_bound_threads_are_gil_bound_and_processes_are_not(tmp_path):
    runs = watch_pair(tmp_path, "gil_threads.py", ["threads"], ["processes"], 4)
    assert_named(runs["threads"], "GIL_BOUND")
    assert_quiet(runs["processes"])


@pytest.mark.slow
def test_a_decaying_logged_rate_drifts_and_a_flat_one_does_not(tmp_path):
    # 12 s: the rate lines must cover DRIFT's 10 s after the program's start-up (10.9 s at 11)
    runs = watch_pair(tmp_path, "decaying_rate.py", ["decay"], ["flat"], 12)
    assert_named(runs["decay"], "DRIFT")
    assert_quiet(runs["flat"])
    _, stdout, _ = runs["decay"]
    assert "log_iter_per_s falls" in stdout


@pytest.mark.slow
def test_workers_on_the_cpu_when_cuda_was_asked_for_are_off_device(tmp_path):
    pytest.importorskip("torch")
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the program's nets really run on the GPU there")
    runs = watch_pair(tmp_path, "net_device.py", ["cuda"], ["cpu"], TORCH_S, prefix="--device")
    assert_named(runs["cuda"], "NET_OFF_DEVICE")
    assert_quiet(runs["cpu"])
    for name in ("cuda", "cpu"):
        devices = json.loads((runs[name][2] / "cells.jsonl").read_text())["metrics"]["worker_devices"]
        assert sorted(devices.values()) == ["cpu", "cpu"]  # two workers, each ran its net on the cpu


@pytest.mark.slow
def test_an_attached_process_is_only_read_and_keeps_running(tmp_path):
    log = tmp_path / "program.log"
    with open(log, "w") as out:
        program = subprocess.Popen(
            [sys.executable, str(PROGRAMS / "busy_poll.py"), "poll"], stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        time.sleep(1.0)
        children = {p.pid for p in psutil.Process(program.pid).children(recursive=True)}
        # 6 s: py-spy recorders start paced (two a second) over the program's four processes, and
        # the learner's sleep share needs a few seconds of its samples (3 s missed it once in CI)
        command = [sys.executable, "-m", "harness.cli", "watch", "--quiet", "--pid", str(program.pid), "--duration", "6"]
        done = subprocess.run(command + ["--out", str(tmp_path / "runs")], capture_output=True, text=True, env=child_env(), timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert program.poll() is None, "the attached program was ended"
        assert {p.pid for p in psutil.Process(program.pid).children(recursive=True)} == children
        spies = [p for p in psutil.process_iter(["cmdline"]) if str(program.pid) in (p.info["cmdline"] or []) and "py-spy" in " ".join(p.info["cmdline"] or [])]
        assert not spies, "a py-spy recorder is still attached"
        (run,) = run_dirs(tmp_path / "runs")
        record = json.loads((run / "cells.jsonl").read_text())
        assert record["params"]["pid"] == program.pid and record["metrics"]["torch_reason"].startswith("attached")
        assert record["metrics"]["log_rate_lines"] > 0  # its stdout is a file, followed from where it was
        seen = {k: v for k, v in record["metrics"].items() if k.startswith(("sleep", "wakeups", "stacks_", "py_spy"))}
        assert "BUSY_WAIT" in [f.rule for f in findings(run)], seen
    finally:
        os.killpg(program.pid, signal.SIGKILL)
        program.wait()


@pytest.mark.slow
def test_every_cell_of_the_command_suite_is_watched(tmp_path):
    argv = f"{sys.executable} {PROGRAMS / 'busy_poll.py'} poll"
    command = [sys.executable, "-m", "harness.cli", "run", "command", "--set", f"argv={argv}", "--duration", "4"]
    done = subprocess.run(command + ["--out", str(tmp_path)], capture_output=True, text=True, env=child_env(), timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    (run,) = run_dirs(tmp_path)
    (record,) = RunStore.open(run).records()
    roles = record.metrics["watch_roles"]
    assert roles["harness"]["processes"] == 1 and roles["main"]["processes"] == 1  # the cell itself is not the program
    assert "BUSY_WAIT" in [f.rule for f in findings(run)]
    assert not marked_processes(run)


@pytest.mark.slow
def test_sigterm_ends_the_program_and_still_writes_the_run(tmp_path):
    command = [sys.executable, "-m", "harness.cli", "watch", "--quiet", "--out", str(tmp_path), "--"]
    watcher = subprocess.Popen(
        command + [sys.executable, str(PROGRAMS / "busy_poll.py"), "block"], stdout=subprocess.PIPE, text=True, env=child_env()
    )
    # signalled once the program runs under it (a fixed 3 s came before the watcher's handler
    # on a machine at load 6: it died of the signal before it had started anything)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(
        "busy_poll.py" in " ".join(child.cmdline()) for child in psutil.Process(watcher.pid).children(recursive=True)
    ):
        time.sleep(0.2)
    time.sleep(1.0)
    watcher.send_signal(signal.SIGTERM)
    stdout, _ = watcher.communicate(timeout=60)
    assert watcher.returncode == 0, stdout
    (run,) = run_dirs(tmp_path)
    (record,) = RunStore.open(run).records()
    assert "stopped early by Ctrl-C or SIGTERM" in record.warnings
    assert RunStore.open(run).meta()["state"] == "interrupted"
    assert not marked_processes(run), "the program outlived harness watch"


def test_a_program_that_fails_by_itself_makes_watch_exit_1_with_its_log(cli, tmp_path):
    result = cli("watch", "--quiet", "--out", tmp_path, "--", sys.executable, "-c", "import sys; print('boom'); sys.exit(3)")
    assert result.exit_code == 1
    assert "exited with code 3" in result.output and "boom" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "nothing to watch"),
        (["--pid", "1", "--", "python", "x.py"], "not both"),
        (["--rate", "0", "--", "python", "x.py"], "--rate 0: allowed 1..10000"),
        (["--rate-regex", "(", "--", "python", "x.py"], "--rate-regex '(': not a valid regular expression"),
        (["--rate-regex", "(a)(b)", "--", "python", "x.py"], "(?P<value>"),
        (["--duration", "0", "--", "python", "x.py"], "--duration 0: must be a positive"),
        (["--batch-limit", "0", "--", "python", "x.py"], "--batch-limit 0"),
        (["--", "no-such-program-for-harness"], "cannot start 'no-such-program-for-harness': no such program on PATH"),
        (["--pid", "999999999"], "--pid 999999999: no such process"),
    ],
    ids=["nothing", "both", "rate", "regex", "regex-groups", "duration", "batch-limit", "program", "pid"],
)
def test_bad_input_exits_2_naming_what_is_allowed_and_starts_nothing(cli, tmp_path, args, message):
    result = cli("watch", "--out", tmp_path / "runs", *args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_a_process_py_spy_cannot_read_is_listed_with_the_reason(cli, tmp_path):
    result = cli("watch", "--quiet", "--duration", "4", "--out", tmp_path, "--", "sh", "-c", "sleep 3.8")
    assert result.exit_code == 0, result.output
    (run,) = run_dirs(tmp_path)
    (record,) = RunStore.open(run).records()
    reasons = record.metrics["stacks_unsampled"]
    assert reasons and all("not a Python process" in why for why in reasons.values())
    assert not marked_processes(run)


STARTS_ONE_MORE_WHEN_TERMINATED = """
import signal, subprocess, sys, time
def on_term(*_):  # as raylet forks a worker while the tree is being killed: a new session, unknown to the watch
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
while True:
    time.sleep(0.1)
"""


@pytest.mark.slow
def test_a_process_started_while_the_tree_is_killed_does_not_outlive_the_watch(tmp_path):
    """alphatriangle's Ray worker, started about 3 s before its watch ended, outlived it: the
    watch sweeps again for the processes carrying its run's mark after the tree is gone."""
    command = [sys.executable, "-m", "harness.cli", "watch", "--quiet", "--duration", "2", "--out", str(tmp_path)]
    done = subprocess.run(command + ["--", sys.executable, "-c", STARTS_ONE_MORE_WHEN_TERMINATED],
                          capture_output=True, text=True, timeout=120, env=child_env())  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (run,) = run_dirs(tmp_path)
    left = marked_processes(run)
    for proc in left.values():
        proc.kill()
    assert not left, "a process the program started as it was killed outlived harness watch"
