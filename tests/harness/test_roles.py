"""Roles on the process trees of real programs that skewed them (docs/records/2026-11-26-blind-
fixes-rules.md): Ray's runtime, torch.compile's compilers, a launcher above the program, a
Pool whose workers py-spy sampled only in part. The command lines are those the programs ran
(Ray 2.60 from EvoTorch's and rl_games' venvs, listed from /proc; paths shortened)."""

from __future__ import annotations

import time

from harness.watch import roles
from harness.watch.roles import Proc

CELL = ["python", "-m", "harness.cell", "{}", "out"]
VENV = "/work/venvs/rlgames"
RAY = f"{VENV}/lib/python3.11/site-packages/ray"
SESSION = "--session-dir=/tmp/ray/session_2026-11-26_16-22-58_698489_20821"
FORKSERVER = f"{VENV}/bin/python -B -c \"from multiprocessing.forkserver import main; main(25, 27, ['ray'])\""


def ray_tree() -> dict[int, Proc]:
    """An EvoTorch-like driver with two `Evaluation` actors under Ray's runtime, as listed."""
    driver = [f"{VENV}/bin/python", "rl_clipup.py", "with", "num_actors=2"]
    rows = [
        (2, 1, driver),
        (3, 2, [f"{RAY}/core/src/ray/gcs/gcs_server", "--log_dir=/tmp/ray/session/logs"]),
        (4, 2, [f"{VENV}/bin/python", "-u", f"{RAY}/autoscaler/_private/monitor.py", "--logs-dir=/tmp/ray/logs"]),
        (5, 2, [f"{VENV}/bin/python", f"{RAY}/dashboard/dashboard.py", "--host=127.0.0.1", "--port=8265"]),
        (6, 5, [f"{VENV}/bin/python", "-B", "-c", "from multiprocessing.resource_tracker import main;main(25)"]),
        (
            7,
            5,
            [f"{VENV}/bin/python", "-B", "-c", "from multiprocessing.forkserver import main; main(25, 27, ['ray'])"],
        ),
        (8, 7, [f"ray-dashboard-MetricsHead-0 ({FORKSERVER})"]),
        (9, 7, [f"ray-dashboard-EventHead-0 ({FORKSERVER})"]),
        (10, 2, [f"{VENV}/bin/python", "-u", f"{RAY}/_private/log_monitor.py", SESSION]),
        (11, 2, [f"{RAY}/core/src/ray/raylet/raylet", "--raylet_socket_name=/tmp/ray/sockets/raylet"]),
        (12, 11, ["ray::DashboardAgent"]),
        (13, 11, ["ray::RuntimeEnvAgent"]),
        (14, 11, ["ray::Evaluation.work"]),
        (15, 11, ["ray::Evaluation"]),
        (16, 11, ["ray::IDLE"]),
    ]
    return {1: Proc(1, 0, CELL, 0.0)} | {pid: Proc(pid, ppid, cmd, 0.1 * pid) for pid, ppid, cmd in rows}


def test_rays_runtime_is_a_helper_and_its_actors_are_the_workers():
    """EvoTorch's watch filed gcs_server and raylet as the program's `server` (PIPELINE_BOUND
    then read Ray's daemons as a pipeline in turns) and the log monitor and agents among the
    `workers` (IDLE_WORKERS counted them idle)."""
    assigned = roles.assign(ray_tree(), {2: "<module>", 14: "<module>", 15: "<module>", 10: "<module>"})
    assert assigned[2] == roles.MAIN
    assert {pid for pid, role in assigned.items() if role == roles.WORKERS} == {14, 15}
    assert all(assigned[pid] == roles.HELPER for pid in (3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16))
    assert roles.SERVER not in assigned.values() and roles.CHILDREN not in assigned.values()


def test_a_compiler_torch_compile_starts_is_a_helper_not_the_server():
    """rl_games under torch.compile: g++ and its cc1plus, and inductor's compile worker with
    its forked pool, beside two Ray actors: they were `server` and `workers`."""
    tree = ray_tree()
    driver = tree[2].cmdline
    worker = [f"{VENV}/bin/python", f"{VENV}/lib/python3.11/site-packages/torch/_inductor/compile_worker/__main__.py",
              "--pickler=torch._inductor.compile_worker.subproc_pool.SubprocPickler", "--kind=fork", "--workers=2"]  # fmt: skip
    tree |= {
        20: Proc(
            20, 2, ["g++", "/tmp/torchinductor_root/ab/cabc.cpp", "-shared", "-fPIC", "-O3", "-o", "cabc.so"], 5.0
        ),
        21: Proc(
            21, 20, ["/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", "-quiet", "-imultiarch", "x86_64-linux-gnu"], 5.1
        ),
        22: Proc(22, 20, ["as", "--64", "-o", "/tmp/ccXyz.o", "/tmp/ccXyz.s"], 5.2),
        23: Proc(23, 2, worker, 4.0),
        24: Proc(24, 23, worker, 4.1),  # its forked pool: the same command line
        25: Proc(25, 23, worker, 4.2),
    }
    assigned = roles.assign(tree, {2: "<module>", 24: "_worker_compile", 25: "_worker_compile"})
    assert all(assigned[pid] == roles.HELPER for pid in (20, 21, 22, 23, 24, 25))
    assert assigned[2] == roles.MAIN and {p for p, r in assigned.items() if r == roles.WORKERS} == {14, 15}
    assert tree[2].cmdline == driver
    assert roles.is_toolchain(["x86_64-linux-gnu-g++-12", "a.cpp"]) and roles.is_toolchain(["/usr/bin/ld.gold"])
    assert not roles.is_toolchain(["python", "assemble.py"]) and not roles.is_toolchain(["/usr/bin/asd"])


def test_the_program_the_user_ran_is_never_a_toolchain():
    """`harness watch -- make train`: make is what ran, and what it started is the program."""
    procs = {
        1: Proc(1, 0, ["make", "train"], 0.0),
        2: Proc(2, 1, ["python", "train.py"], 0.1),
        **{pid: Proc(pid, 2, ["python", "train.py"], 0.2) for pid in (3, 4)},
    }
    assigned = roles.assign(procs, {2: "<module>", 3: "work", 4: "work"})
    assert roles.HELPER not in (assigned[2], assigned[3], assigned[4])


def pool_under(top: list[str], program: list[str]) -> dict[int, Proc]:
    """DEAP's onemax_mp.py (a Pool of 4, forked) under `top`, run by a harness cell."""
    return {
        1: Proc(1, 0, CELL, 0.0),
        2: Proc(2, 1, top, 0.1),
        3: Proc(3, 2, program, 0.2),
        4: Proc(4, 3, ["python", "-c", "from multiprocessing.resource_tracker import main;main(5)"], 0.3),
        **{pid: Proc(pid, 3, program, 0.4) for pid in (5, 6, 7, 8)},
    }


def test_a_launcher_above_the_program_is_a_helper_and_its_child_is_main():
    """The capture tool (and `timeout`, `sh -c`) was `main` and pushed DEAP's driver into
    `server`, where PIPELINE_BOUND and SERIALIZATION then read it."""
    program = ["/work/venvs/deap/bin/python", "/work/blind/prog/deap/onemax_mp.py"]
    capture = ["python", "benchmarks/capture_output.py", "/work/blind/cap/deap.jsonl", "--tee", "--", *program]
    tops = {
        "capture": capture,
        "timeout": ["timeout", "100", *program],
        "shell": ["/bin/sh", "-c", " ".join(program)],
        "shell, cd first": ["bash", "-c", f"cd /work/blind && {' '.join(program)}"],
        "found on PATH": ["nice", "-n", "5", "python", program[1]],
    }
    entries = {3: "<module>", 5: "mapstar", 6: "mapstar", 7: "mapstar", 8: "mapstar"}
    for name, top in tops.items():
        assigned = roles.assign(pool_under(top, program), entries)
        assert (assigned[2], assigned[3]) == (roles.HELPER, roles.MAIN), name
        assert [assigned[p] for p in (5, 6, 7, 8)] == [roles.WORKERS] * 4, name
        assert roles.SERVER not in assigned.values(), name


def test_a_parent_with_its_own_work_or_another_command_is_no_launcher():
    program = ["python", "train.py", "--workers", "2"]
    other = ["python", "worker.py", "--workers", "2"]  # a different script with the same flags
    procs = pool_under(program, other)
    assert roles.assign(procs, {})[2] == roles.MAIN
    two_children = pool_under(["timeout", "100", *program], program)
    two_children[9] = Proc(9, 2, ["python", "monitor.py"], 0.5)
    assert roles.assign(two_children, {})[2] == roles.MAIN


def test_unsampled_pool_workers_take_their_siblings_entry():
    """DEAP's watch: py-spy's budget reached 2 of the Pool's 4 workers; the other 2, keyed by
    their command line, became `children`."""
    program = ["/work/venvs/deap/bin/python", "onemax_mp.py"]
    procs = {pid: p for pid, p in pool_under(program, program).items() if pid != 2}
    procs[3] = Proc(3, 1, program, 0.2)
    assigned = roles.assign(procs, {3: "<module>", 5: "worker", 6: "worker"})
    assert [assigned[p] for p in (5, 6, 7, 8)] == [roles.WORKERS] * 4
    assert roles.CHILDREN not in assigned.values()


def test_a_process_that_retitles_itself_is_read_again():
    """A Ray worker starts as default_worker.py (a helper's script) and takes its actor's title
    later: EvoTorch's two EvaluationActors, read once at first sight, were filed as helpers."""
    import subprocess

    import psutil

    from harness.monitors.procstat import ProcStatMonitor

    worker = f"{RAY}/_private/workers/default_worker.py"  # in the shell's command line until it execs
    script = f": {worker}; sleep 1.5; exec -a 'ray::EvaluationActor.evaluate' sleep 5"
    proc = subprocess.Popen(["bash", "-c", script])  # the same pid, retitled
    try:
        for _ in range(400):  # between fork and exec its command line is empty (read so in a loaded full run)
            if worker in " ".join(psutil.Process(proc.pid).cmdline()):
                break
            time.sleep(0.005)
        monitor = ProcStatMonitor()
        monitor._sample_process(psutil.Process(proc.pid))
        assert roles.is_helper(monitor.procs[proc.pid].cmdline)  # not yet an actor: Ray's own
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and roles.ray_title(monitor.procs[proc.pid].cmdline) != "EvaluationActor":
            time.sleep(0.1)
            monitor._sample_process(psutil.Process(proc.pid))
        assert monitor.procs[proc.pid].cmdline == ["ray::EvaluationActor.evaluate", "5"]
        assert not roles.is_helper(monitor.procs[proc.pid].cmdline)
    finally:
        proc.kill()
        proc.wait()


def test_the_workers_are_the_group_that_lived_not_the_most_numerous():
    """rl_games' two RayWorker actors (alive the whole watch) became `children` beside three
    processes that lived under a second each and outnumbered them."""
    tree = ray_tree()
    tree = {pid: Proc(p.pid, p.ppid, p.cmdline, p.first_seen, 200.0) for pid, p in tree.items()}
    for pid in (14, 15):
        tree[pid] = Proc(pid, 11, ["ray::RayWorker.step"], 20.0, 200.0)
    for pid in (30, 31, 32):  # seen once, at 150 s
        tree[pid] = Proc(pid, 2, ["/work/venvs/rlgames/bin/python", "-c", "probe"], 150.0, 150.0)
    assigned = roles.assign(tree, {2: "<module>"})
    assert (assigned[14], assigned[15]) == (roles.WORKERS, roles.WORKERS)
    assert {assigned[p] for p in (30, 31, 32)} == {roles.CHILDREN}
    unknown = {pid: Proc(p.pid, p.ppid, p.cmdline, p.first_seen) for pid, p in tree.items()}  # causal's listing
    assert {assigned for pid, assigned in roles.assign(unknown, {2: "<module>"}).items() if pid in (30, 31, 32)} == {
        roles.WORKERS
    }  # by count, as before, where lifetimes are not known
