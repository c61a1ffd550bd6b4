"""The causal slowdown experiment (harness causal): the stopper holds what it is told and
lets everything go on every way out; the known pipeline's bottleneck is found and follows
the work when it moves; a busy poller's sensitivity is below zero."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from harness.causal.groups import parse_rules
from harness.causal.sensitivity import estimate, observation
from harness.causal.stopper import Stopper
from harness.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "programs"
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGSTOP duty cycles and /proc are Linux's")


def state(pid: int) -> str | None:
    try:
        return psutil.Process(pid).status()
    except psutil.Error:
        return None


def test_an_observation_is_the_relative_loss_per_unit_of_slowdown():
    assert observation(100.0, 50.0, 0.5) == pytest.approx(1.0)
    assert observation(100.0, 100.0, 0.5) == pytest.approx(0.0)
    assert observation(100.0, 120.0, 0.5) == pytest.approx(-0.4)
    assert observation(0.0, 10.0, 0.5) is None and observation(100.0, 50.0, 0.0) is None
    critical = estimate("g", [0.9, 1.0, 0.95, 1.05, 0.92, 0.98, 1.01, 0.97, 0.99, 1.0])
    assert critical.reading == "critical" and critical.median.low >= 0.7
    assert estimate("g", [0.1, 0.2]).reading == "unknown"  # too few rounds for an interval
    assert estimate("g", [-0.5, -0.4, -0.6, -0.45, -0.55, -0.5, -0.42, -0.58, -0.5, -0.47]).reading == "competes"


def test_group_rules_name_pids_or_a_pattern_and_refuse_bad_ones():
    pids, pattern = parse_rules(["learner=12,13", "envs=env_worker"])
    assert pids.takes(12, "x") and not pids.takes(14, "x")
    assert pattern.takes(99, "python -m env_worker") and not pattern.takes(99, "python train.py")
    for bad in (["learner"], ["=12"], ["a=("], ["a=1", "a=2"]):
        with pytest.raises(UserError):
            parse_rules(bad)


@linux
def test_the_stopper_holds_the_share_it_says_and_costs_little():
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with Stopper() as stopper:
            stopper.switch([spin.pid], 0.5, 0.02)
            time.sleep(1.0)
            held = stopper.switch([])
        assert held.cycles >= 20
        assert 0.35 <= held.fraction <= 0.75  # measured, not assumed: a busy machine stretches stops
        assert stopper.cpu_s < 0.2
        assert state(spin.pid) != psutil.STATUS_STOPPED
    finally:
        spin.kill()
        spin.wait()


@linux
def test_in_debt_mode_a_busy_process_pays_for_its_cpu_and_a_sleeping_one_is_never_stopped():
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with Stopper() as stopper:
            stopper.switch([spin.pid], 0.5, 0.02, mode="debt")
            time.sleep(1.0)
            busy = stopper.switch([sleeper.pid], 0.5, 0.02, mode="debt")
            time.sleep(0.5)
            idle = stopper.switch([])
        # stopped about as long as it ran, longer on a crowded machine: as long as running that much would take
        assert busy.cpu_s > 0.1 and 0.35 <= busy.fraction <= 0.9  # 5x the running at most (Debts.MIN_SHARE)
        assert idle.stopped_s == 0.0 and idle.cycles >= 10
    finally:
        for proc in (spin, sleeper):
            proc.kill()
            proc.wait()


OWNER = textwrap.dedent(
    """
    import sys, time
    from harness.causal.stopper import Stopper
    stopper = Stopper()
    stopper.start()
    stopper.switch([int(sys.argv[1])], 0.9, 0.2)  # stopped 180 ms of every 200
    print("slowing", flush=True)
    time.sleep(60)
    """
)


@linux
def test_a_sigkilled_harness_leaves_no_process_stopped():
    """The stopper is the watchdog: its owner killed outright (nothing left to clean up),
    it continues what it held and exits; the process runs on."""
    target = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(target.pid)], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert owner.stdout.readline().strip() == "slowing"
        deadline = time.monotonic() + 5
        while state(target.pid) != psutil.STATUS_STOPPED and time.monotonic() < deadline:
            time.sleep(0.01)
        assert state(target.pid) == psutil.STATUS_STOPPED, "the stopper never stopped its target"
        owner.kill()
        owner.wait()
        time.sleep(1.0)
        stopped = sum(state(target.pid) == psutil.STATUS_STOPPED for _ in range(20) if not time.sleep(0.02))
        assert stopped == 0, "the target is still being stopped after its harness died"
        assert state(target.pid) in (psutil.STATUS_RUNNING, psutil.STATUS_SLEEPING)
    finally:
        owner.kill()
        os.kill(target.pid, signal.SIGCONT)
        target.kill()
        target.wait()


def causal(tmp_path: Path, program: list[str], budget: float, *extra: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "causal", "--budget", str(budget), "--out", str(tmp_path), "--quiet",
         "--seed", "1", *extra, "--", *program],
        capture_output=True, text=True, timeout=budget + 120, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = tmp_path.glob("*causal*/causal.json")
    return {s["group"]: s for s in json.loads(path.read_text())["sensitivity"]}


@linux
@pytest.mark.slow
@pytest.mark.parametrize("limit", ["consumer", "producer"])
def test_the_known_pipelines_bottleneck_is_found_and_follows_the_work(tmp_path, limit):
    """producer -> queue of 32 -> consumer; the limiting stage's work per item is 3x the other's."""
    found = causal(tmp_path, [sys.executable, str(PROGRAMS / "pipeline.py"), limit], 60, "--width", "0.25")
    slack = "producer" if limit == "consumer" else "consumer"
    assert found[limit]["estimate"] >= 0.7, found
    assert found[slack]["estimate"] <= 0.2, found
    assert found[limit]["low"] > found[slack]["high"], found  # the intervals tell them apart
    assert found[limit]["verdict"] in ("critical", "unknown") and found[slack]["verdict"] in ("slack", "unknown")


@linux
@pytest.mark.slow
def test_a_busy_poller_beside_cpu_bound_workers_is_never_what_limits_them(tmp_path):
    """On 2 cores the poller takes a core the workers could use. The rates are compared at
    equal crowding (harness.causal.rounds), which hides the core its stops free: it reads
    near 0 (slack: its own code's speed buys nothing), competes, or unknown with the reason
    (its stops changed the CPU the workers got; 1.15x crowding read slack -0.08 at load 6).
    Never critical; the workers never slack nor competes."""
    found = causal(tmp_path, [sys.executable, str(PROGRAMS / "spin_poll.py"), "2"], 45, "--width", "0.25")
    poller = found["main"]
    assert poller["verdict"] in ("competes", "slack", "unknown"), found
    assert poller["verdict"] != "unknown" or poller["reason"], found  # an unknown says why
    assert found["workers"]["verdict"] in ("critical", "unknown"), found


@linux
@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_no_process_of_the_program_is_left_stopped_when_the_harness_ends_mid_experiment(tmp_path, how):
    token = f"{time.time_ns() % 10**9}"  # an argument no other process has: the program's queue size
    harness = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "causal", "--budget", "120", "--out", str(tmp_path), "--mode", "duty", "--cycle-ms", "200",
         "--fraction", "0.9", "--", sys.executable, str(PROGRAMS / "pipeline.py"), "consumer", "1", token],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip

    def program() -> list[psutil.Process]:
        return [
            p for p in psutil.process_iter(["cmdline"]) if token in (p.info["cmdline"] or []) and p.pid != harness.pid
        ]

    try:
        line = harness.stdout.readline()
        while line and not line.startswith("groups:"):
            line = harness.stdout.readline()
        assert line.startswith("groups:"), "the experiment never began"
        deadline = time.monotonic() + 20
        while not any(state(p.pid) == psutil.STATUS_STOPPED for p in program()) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert any(state(p.pid) == psutil.STATUS_STOPPED for p in program()), "no group was ever stopped"
        harness.send_signal(how)
        code = harness.wait(timeout=30)
        assert code == (130 if how == signal.SIGINT else -signal.SIGKILL)
        deadline = time.monotonic() + 10
        while program() and time.monotonic() < deadline:
            assert not any(state(p.pid) == psutil.STATUS_STOPPED for p in program() if not time.sleep(0.05))
        assert not program(), "the program outlived the harness that launched it"
    finally:
        harness.kill()
        for proc in program():
            proc.resume()
            proc.kill()


def test_the_conclusion_names_the_bottleneck_the_edges_into_it_and_the_suites_remedy():
    from harness.report.causal import conclusion

    def sens(group, est, low, high, verdict):
        return {"group": group, "estimate": est, "low": low, "high": high, "verdict": verdict, "n": 20}

    edge = {"waiter": "workers", "waiters": 8, "of": 8, "on": "server", "via": "shm", "peers": [9],
            "blocked": {"count": 8, "min": 0.8, "median": 0.9, "max": 0.95}}  # fmt: skip
    result = {
        "sensitivity": [sens("server", 0.95, 0.85, 1.05, "critical"), sens("main", -0.5, -0.8, -0.2, "competes"),
                        sens("workers", 0.1, -0.05, 0.18, "slack")],
        "waits": [edge],
    }  # fmt: skip
    told = []
    lines = conclusion(result, lambda symptom, default: told.append(symptom) or "more server_threads")
    assert lines[0].startswith("bottleneck: server, sensitivity +0.95 [+0.85, +1.05]; 8 of 8 workers -> server (pid 9)")
    assert lines[0].endswith("more server_threads") and told == ["pipeline.server_bound"]
    assert lines[1].startswith("competes: main") and len(lines) == 2


@linux
@pytest.mark.slow
def test_a_budget_too_small_for_the_programs_cadence_is_refused_up_front(tmp_path):
    """A pipeline that reports every 2 s needs 12 s periods: 40 s of budget cannot hold
    10 rounds of two groups, and the harness says so after the warm-up (exit 2, the budget
    that would do named) instead of spending it; the program is ended, nothing stopped."""
    token = f"{time.time_ns() % 10**9}"  # an argument no other process has: the program's queue size
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "causal", "--budget", "40", "--out", str(tmp_path), "--quiet", "--",
         sys.executable, str(PROGRAMS / "causal" / "stages.py"), "1,3", "--every", "2", "--queue", token],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--budget 40: the program reports iterations" in done.stderr, done.stderr
    assert "Give --budget" in done.stderr and "--io-counter GROUP" in done.stderr
    (meta,) = tmp_path.glob("*causal*/run.json")
    assert json.loads(meta.read_text())["state"] == "refused"
    left = [p for p in psutil.process_iter(["cmdline"]) if token in (p.info["cmdline"] or [])]
    assert not left, left


@linux
@pytest.mark.slow
def test_a_program_that_ends_during_the_warm_up_is_said_to_have_ended(tmp_path):
    """DEAP's onemax (2.7 s) ended while causal warmed up: the refusal said "the program has
    no process to slow (only the harness's own and multiprocessing's helpers)". It says the
    program exited, with its log, which tells why (it ended during the warm-up)."""
    short = "import time\nfor i in range(1, 41):\n    print('step', i, flush=True)\n    time.sleep(0.05)\n"
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "causal", "--budget", "30", "--out", str(tmp_path), "--quiet", "--",
         sys.executable, "-c", short],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no process to slow" not in done.stderr, done.stderr
    assert "exited with code 0" in done.stderr and "ended during warm-up" in done.stderr, done.stderr


@linux
@pytest.mark.slow
def test_rays_runtime_is_no_group_and_its_actors_are_grouped_by_class():
    """A live Ray program: gcs_server, raylet, the dashboard and the agents are Ray's, not
    the program's; the two Player actors are one group and the Learner another."""
    from harness.causal.groups import find_groups
    from harness.cell.processes import tree

    program = subprocess.Popen(
        [sys.executable, str(PROGRAMS / "causal" / "ray_actors.py"), "learner"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        line = program.stdout.readline()
        while line.startswith("trained 0 "):  # the learner has trained nothing: it may not be an actor yet
            line = program.stdout.readline()
        assert line.startswith("trained"), "the Ray program never reported"
        deadline = time.monotonic() + 30
        while set(groups := find_groups(program.pid, suite_cell=False)) != {"main", "Player", "Learner"}:
            assert time.monotonic() < deadline, groups  # a worker is titled by its class once its actor runs
            time.sleep(1)
        assert len(groups["Player"]) == 2 and len(groups["Learner"]) == 1
        assert len(tree(program.pid)) > 6  # Ray's daemons are there, left out
    finally:
        procs = tree(program.pid)
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        program.wait()
        psutil.wait_procs(procs, timeout=10)


THREADS_THAT_COME_AND_GO = """
import sys, threading, time
def burn():
    end = time.thread_time() + 0.3
    while time.thread_time() < end:
        pass
for _ in range(3):  # one after another, each gone before the next starts
    t = threading.Thread(target=burn); t.start(); t.join()
print("done", flush=True)
sys.stdin.read()  # stay alive, idle, until the test is done
"""


@linux
def test_a_process_cpu_counts_its_threads_that_have_exited():
    """gensim's word2vec starts its worker threads again every epoch: summed over its live
    threads, its process read 0.01 cores where it used 0.875. Threads seen and then gone keep
    their reading; threads born and gone between two readings come from the process's total."""
    from harness.causal.stopper import ThreadClocks

    proc = subprocess.Popen([sys.executable, "-c", THREADS_THAT_COME_AND_GO], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        watched, unwatched = ThreadClocks(), ThreadClocks()
        first = unwatched.read(proc.pid)
        while proc.poll() is None and not _ready(proc):
            watched.read(proc.pid)  # sees each thread live, then gone
        ran_watched, _ = watched.read(proc.pid)
        ran_unwatched, _ = unwatched.read(proc.pid)  # saw none of the three threads
        assert first is not None
        assert ran_watched / 1e9 >= 0.85 and ran_unwatched / 1e9 >= 0.85, (ran_watched, ran_unwatched)
    finally:
        proc.kill()
        proc.wait()


def _ready(proc: subprocess.Popen) -> bool:
    import select

    return bool(select.select([proc.stdout], [], [], 0.005)[0]) and proc.stdout.readline().startswith("done")


@pytest.mark.parametrize(
    ("cmdline", "name"),
    [
        # rl_zoo3's SubprocVecEnv workers, py-spy's dump not yet read: the group was `site-packages']})`
        (["python", "-c", "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5, pipe_handle=7)",
          "--multiprocessing-fork"], "spawn"),
        (["python", "-c", "from multiprocessing.forkserver import main; main(3, 4, ['__main__'], "
          "**{'sys_path': ['/venv/lib/python3.11/site-packages']})"], "forkserver"),
        (["python", "-u", "-m", "pkg.selfplay_worker", "--id", "3"], "selfplay_worker"),
        (["python", "/src/actor.py", "--seed", "1"], "actor.py"),
        (["python"], "children"),
    ],
)
def test_a_children_group_without_its_entry_is_named_by_what_its_interpreter_runs(cmdline, name):
    from harness.causal.groups import _job_name

    assert _job_name(None, cmdline) == name
