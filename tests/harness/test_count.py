"""The counted A/B (harness ab/gate --measure instructions): its verdict and evidence checks,
the window's marks, callgrind's files read back, the hook in a program, the waits reading of
a slice, the flags, and a missing valgrind. Runs under valgrind are in test_count_runs.py
(slow)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import harness as harness_package
from harness.ab.slicing import SliceResult
from harness.count import callgrind
from harness.count.verdict import judge
from harness.count.window import END, GO_ON, HOOK_DIR, MIDDLE, START, Counted, Plan, ProcessCount, _Marks


def counted(label: str, halves: tuple[int, int], units: tuple[float, float] = (100, 100), pid: int = 1) -> Counted:
    return Counted(label, "iterations", units, [ProcessCount(pid, "python train.py", halves, True)], 1.0, Plan())


def test_identical_counts_are_ok_and_more_work_beyond_the_tolerance_is_a_regression():
    base = [counted("base 1", (1_000_000, 1_000_001)), counted("base 2", (1_000_000, 1_000_000))]
    same = [counted("candidate 1", (1_000_000, 1_000_000)), counted("candidate 2", (1_000_001, 1_000_000))]
    told = judge(base, same, 0.005)
    assert told.decision == "ok" and told.high <= 1.005 and "within 1.0050" in told.reason
    more = [counted(f"candidate {i}", (1_010_000, 1_010_000)) for i in (1, 2)]
    told = judge(base, more, 0.005)
    assert told.decision == "regression" and told.low == pytest.approx(1.01, rel=1e-5)


def test_a_change_the_runs_straddle_is_undecided():
    base = [counted("base 1", (1_000_000, 1_000_000)), counted("base 2", (1_000_900, 1_000_900))]
    cand = [counted(f"candidate {i}", (1_005_400, 1_005_400)) for i in (1, 2)]
    told = judge(base, cand, 0.005)
    assert told.decision == "undecided" and told.low < 1.005 < told.high


def test_halves_that_disagree_make_counts_not_decidable_with_the_reason():
    """Runs that agree within the bound, not exactly (a deterministic program's halves: test_count_blind.py)."""
    base = [counted("base 1", (1_000_000, 1_020_000)), counted("base 2", (1_000_000, 1_020_010))]
    cand = [counted(f"candidate {i}", (1_000_000, 1_000_000)) for i in (1, 2)]
    told = judge(base, cand, 0.005)
    assert told.decision == "refused"
    assert told.reason.startswith("not decidable by counts: candidate/base is 1.0000 in the window's first half")
    assert "and 0.9804 in its second (1.96 % apart, bound 0.25 %)" in told.reason and "--measure time" in told.reason


def test_units_that_cost_differently_in_the_two_halves_are_fine_when_both_sides_count_the_same_units():
    """A solver's sampled iterations: one half 0.9 % dearer than the other in every run."""
    base = [counted(f"base {i}", (1_000_000, 1_009_000)) for i in (1, 2)]
    cand = [counted(f"candidate {i}", (1_050_000, 1_059_450)) for i in (1, 2)]
    told = judge(base, cand, 0.005)
    assert told.decision == "regression" and told.ratio == pytest.approx(1.05, rel=1e-6)


def test_runs_of_a_side_that_disagree_make_counts_not_decidable():
    base = [counted("base 1", (1_000_000, 1_000_000)), counted("base 2", (1_004_000, 1_004_000))]
    cand = [counted(f"candidate {i}", (1_000_000, 1_000_000)) for i in (1, 2)]
    told = judge(base, cand, 0.005)
    assert told.decision == "refused" and "the base's runs differ by 0.40 %" in told.reason


def in_layout(run: Counted, layout: int) -> Counted:
    run.layout = layout
    return run


def test_a_ratio_the_memory_layout_moves_across_the_edge_is_undecided_with_the_reason():
    """The gate's actor-learner cell against an older base: each side's runs repeat exactly in
    one layout, candidate/base 1.0052 there, 1.0011 in another (CPython's attribute cache)."""
    base = [counted(f"base {i}", (1_000_000, 1_000_000)) for i in (1, 2)]
    base.append(in_layout(counted("base 3 (layout 1)", (1_001_500, 1_001_500)), 1))
    cand = [counted(f"candidate {i}", (1_005_200, 1_005_200)) for i in (1, 2)]
    cand.append(in_layout(counted("candidate 3 (layout 1)", (1_002_600, 1_002_600)), 1))
    told = judge(base, cand, 0.005)
    assert told.decision == "undecided"
    assert "the memory layout moves it across 1.0050 (1.0052 in layout 0, 1.0011 in layout 1)" in told.reason
    assert told.low == pytest.approx(1.0011, abs=1e-4) and told.high == pytest.approx(1.0052, abs=1e-4)
    # runs are paired within a layout only: no pairing of base layout 1 with candidate layout 0
    assert "over 5 pairings of runs in 2 memory layouts" in told.reason
    # the layouts' spread (0.15 %) is not the runs' disagreement (bound 0.125 %): runs of one layout are compared
    assert not any("differ by" in line for line in told.evidence)
    assert any(
        line.startswith("candidate/base by layout: 0: 1.00520 (regression), 1: 1.00110 (ok)") for line in told.evidence
    )


def test_a_regression_in_every_layout_is_a_regression():
    base = [counted(f"base {i}", (1_000_000, 1_000_000)) for i in (1, 2)]
    base.append(in_layout(counted("base 3 (layout 1)", (1_001_500, 1_001_500)), 1))
    cand = [counted(f"candidate {i}", (1_010_000, 1_010_000)) for i in (1, 2)]
    cand.append(in_layout(counted("candidate 3 (layout 1)", (1_012_000, 1_012_000)), 1))
    told = judge(base, cand, 0.005)
    assert told.decision == "regression" and told.low == pytest.approx(1.01, abs=1e-4)


def test_more_work_in_every_layout_but_within_a_sides_own_drift_across_layouts_is_undecided():
    """A side whose count jumps 2.4 % between layouts (a hot lookup colliding in CPython's
    attribute cache in one of them): a ratio of 1.006-1.01 is within that luck."""
    base = [counted(f"base {i}", (1_000_000, 1_000_000)) for i in (1, 2)]
    base.append(in_layout(counted("base 3 (layout 1)", (1_024_000, 1_024_000)), 1))
    cand = [counted(f"candidate {i}", (1_006_000, 1_006_000)) for i in (1, 2)]
    cand.append(in_layout(counted("candidate 3 (layout 1)", (1_034_000, 1_034_000)), 1))
    told = judge(base, cand, 0.005)
    assert told.decision == "undecided" and told.low > 1.005
    assert "each side's own count moves 2.78 % between memory layouts" in told.reason
    bigger = [counted(f"candidate {i}", (1_040_000, 1_040_000)) for i in (1, 2)]
    bigger.append(in_layout(counted("candidate 3 (layout 1)", (1_066_000, 1_066_000)), 1))
    assert judge(base, bigger, 0.005).decision == "regression"  # 4 % in both: beyond the drift


def test_the_count_a_side_runs_and_the_layout_of_each_run():
    from harness.count.experiment import CountOptions, layout_of, run_label, runs_a_side

    opts = CountOptions(runs=2, layouts=3)
    assert runs_a_side(opts) == 4 and [layout_of(i, opts) for i in range(4)] == [0, 0, 1, 2]
    assert run_label("base", 3, 2) == "base 4 (layout 2)" and run_label("candidate", 0, 0) == "candidate 1"
    assert runs_a_side(CountOptions(runs=2, layouts=1)) == 2


def test_a_layout_moves_the_programs_addresses_before_its_first_import(tmp_path):
    """The hook's shift_layout: with ASLR off (as every counted run) layout 0 repeats its
    addresses exactly, and layout 2 allocates and tags before the program starts."""
    import shutil

    setarch = shutil.which("setarch")
    if setarch is None:
        pytest.skip("setarch (util-linux) is not installed")
    program = "import sitecustomize; s = 'x' * 3000; print(id(s), id(type('T', (), {})), len(sitecustomize._KEPT))"

    def run(layout: int) -> list[int]:
        env = {**os.environ, "PYTHONPATH": str(HOOK_DIR), "HARNESS_COUNT_SOCKET": str(tmp_path / "none"),
               "HARNESS_COUNT_LAYOUT": str(layout), "PYTHONHASHSEED": "0"}  # fmt: skip
        done = subprocess.run([setarch, os.uname().machine, "-R", sys.executable, "-c", program], env=env,
                              capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
        return [int(x) for x in done.stdout.split()]

    first, again, shifted = run(0), run(0), run(2)
    assert first == again and first[2] == 0
    assert shifted[2] > 0 and shifted[:2] != first[:2]


def test_a_process_that_counted_nothing_is_named_in_the_evidence():
    run = counted("base 1", (1_000_000, 1_000_000))
    run.processes.append(ProcessCount(2, "python worker.py", (0, 0), False, "counted nothing in the window"))
    told = judge([run, counted("base 2", (1_000_000, 1_000_000))], [counted("c", (1_000_000, 1_000_000))] * 2, 0.005)
    assert any("counted nothing" in line and "worker.py" in line for line in told.evidence)


def test_the_window_opens_after_the_warm_up_line_and_its_halves_hold_the_same_units():
    marks = _Marks(Plan(warmup_lines=1, min_half_lines=2, min_half_s=0.0))
    answers = [marks.line(7, f"Iteration {n} (33.0 iter/s)") for n in range(10, 110, 10)]
    # the first line sets the counter, the second advances it (the warm-up line), the third opens
    assert answers[:3] == [GO_ON, GO_ON, START]
    assert answers[3:] == [GO_ON, MIDDLE, GO_ON, END, b"X", b"X", b"X"]
    assert marks.totals == [20, 40, 60] and marks.marker == 7 and marks.counter == "iterations"


def test_a_later_run_opens_where_the_plan_says():
    marks = _Marks(Plan(warmup_lines=1, start_at=40, half=20))
    answers = [marks.line(1, f"Iteration {n}") for n in range(10, 110, 10)]
    assert answers.index(START) == 4 and answers.index(MIDDLE) == 6 and answers.index(END) == 8


def test_a_suites_probe_lines_are_counted_as_the_command_suite_applies_them():
    marks = _Marks(Plan(warmup_lines=1, min_half_lines=1, min_half_s=0.0))
    answers = [marks.line(1, '{"count": {"iterations": 1000}}') for _ in range(5)]
    assert answers == [GO_ON, START, MIDDLE, END, b"X"] and marks.counter == "iterations"


DUMP = textwrap.dedent(
    """\
    # callgrind format
    version: 1
    pid: 4242
    cmd:  python3 train.py
    part: 1
    desc: Trigger: Client Request: middle
    positions: line
    events: Ir
    summary: 1500

    ob=/usr/lib/libpython3.11.so.1.0
    fl=???
    fn=long_mul
    0 1000
    cfn=helper
    calls=2 0
    0 400
    0 100
    fn=helper
    0 400
    """
)


def test_a_dump_is_read_for_its_trigger_total_and_each_functions_own_cost(tmp_path):
    (tmp_path / "cg.4242.1").write_text(DUMP)
    (tmp_path / "cg.4242").write_text(DUMP.replace("middle", "end").replace("part: 1", "part: 2"))
    (tmp_path / "output.log").write_text("not a dump")
    found = callgrind.dumps(tmp_path, with_costs=True)
    assert [(d.pid, d.part, d.trigger, d.instructions) for d in found] == [
        (4242, 1, "Client Request: middle", 1500),
        (4242, None, "Client Request: end", 1500),
    ]
    # the call's inclusive cost (400) is not long_mul's own
    assert found[0].costs == {"long_mul (libpython3.11.so.1.0)": 1100, "helper (libpython3.11.so.1.0)": 400}
    assert found[0].command == "python3 train.py"


def test_a_missing_valgrind_is_bad_input_naming_the_package(cli, monkeypatch, tmp_path):
    monkeypatch.setattr(callgrind.shutil, "which", lambda name: None if name == "valgrind" else f"/usr/bin/{name}")
    monkeypatch.chdir(tmp_path)
    result = cli("ab", "HEAD", "--measure", "instructions", "--out", tmp_path / "out", "--", "python", "train.py")
    assert result.exit_code == 2
    assert "valgrind" in result.output and "install the package `valgrind`" in result.output
    assert not (tmp_path / "out").exists()  # said before anything was recorded


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--measure", "cycles"], "--measure 'cycles': one of time, instructions"),
        (["--measure", "instructions", "--count-runs", "1"], "--count-runs 1"),
        (["--measure", "instructions", "--count-tolerance", "60%"], "--count-tolerance 60%"),
        (["--measure", "instructions", "--count-lines", "0"], "--count-lines 0"),
        (["--measure", "instructions", "--count-timeout", "5"], "--count-timeout 5"),
        (["--measure", "instructions", "--count-layouts", "0"], "--count-layouts 0: 1 to 5"),
        (["--measure", "instructions", "--count-layouts", "6"], "--count-layouts 6: 1 to 5"),
    ],
)
def test_bad_count_flags_are_refused(cli, tmp_path, flags, said):
    result = cli("ab", "HEAD", *flags, "--", "python", "train.py")
    assert result.exit_code == 2 and said in result.output


def test_a_suite_cell_of_an_older_tree_runs_this_harness_not_the_trees_own(tmp_path):
    """The base revision of a counted A/B may hold a `harness` from before counting, whose cell
    never marks its progress: the counted run must import the running harness whatever its
    working directory (the side's tree) holds."""
    from harness.ab.revisions import Side
    from harness.count.experiment import target
    from harness.running.matrix import Cell, cell_id

    tree = tmp_path / "tree"
    (tree / "harness").mkdir(parents=True)
    (tree / "harness" / "__init__.py").write_text('raise SystemExit("the tree holds its own harness")\n')
    params = {"backend": "sequential"}
    cell = Cell("actor_learner", params, None, 0.05, None, 1, 60.0, cell_id("actor_learner", params))
    scratch = tmp_path / "count" / "base-1"
    scratch.mkdir(parents=True)
    got = target(cell, Side("base", "HEAD~1", None, tree), scratch)
    assert got.argv[1:4] == ["-P", "-m", "harness.cell"] and got.cwd == tree
    where = subprocess.run(
        [got.argv[0], "-P", "-c", "import harness; print(harness.__file__)"],
        cwd=got.cwd, env={**os.environ, **got.env}, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).resolve() == Path(harness_package.__file__).resolve()


def test_a_counted_suite_cell_does_nothing_on_a_timer_inside_its_window(tmp_path):
    """The probe's steady warm-up test and its samples run by the clock: inside a window they
    made identical runs count 0.5 % apart when one took longer (beside other work)."""
    import json

    from harness.ab.revisions import Side
    from harness.count.experiment import target
    from harness.running.matrix import Cell, cell_id

    params = {"backend": "sequential"}
    cell = Cell("actor_learner", params, None, 0.05, None, 1, 60.0, cell_id("actor_learner", params))
    scratch = tmp_path / "count" / "base-1"
    scratch.mkdir(parents=True)
    spec = json.loads(target(cell, Side("base", "HEAD", None, tmp_path), scratch).argv[4])
    assert spec["steady"] == "off" and spec["marks"] == "env_steps"
    assert spec["sample_s"] >= spec["duration"]


def test_gate_counts_only_an_a_b(cli, tmp_path):
    result = cli("gate", tmp_path, "--baseline", "quick", "--measure", "instructions")
    assert result.exit_code == 2 and "give --against REV" in result.output


def test_the_waits_reading_of_a_slice_falls_by_what_its_waits_add():
    busy = SliceResult("base", 0.0, 1.0, 0.9, 100.0, cpu_share=0.5, runq_s=0.5)
    sleeps = SliceResult("candidate", 0.0, 1.0, 0.9, 90.0, cpu_share=0.45, runq_s=0.5)
    assert busy.adjusted_rate("waits") == pytest.approx(1.0)
    assert sleeps.adjusted_rate("waits") == pytest.approx(0.9)
    assert SliceResult("base", 0.0, 1.0, 0.9, 100.0, cpu_share=0.5, runq_s=None).adjusted_rate("waits") is None


HOOKED = textwrap.dedent(
    """
    import sys
    print("starting")
    for n in range(1, 4):
        print(f"Iteration {n}", flush=True)
    sys.stderr.write("Iteration 4 (on stderr)\\n")
    print("done 5")
    """
)


def test_the_hook_sends_each_line_with_a_digit_and_waits_for_the_answer(tmp_path):
    """Natively: the client requests do nothing, the program's output is unchanged."""
    path = str(tmp_path / "s")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    got: list[str] = []
    answers = iter([GO_ON, START, MIDDLE, END, GO_ON])

    def serve() -> None:
        conn, _ = listener.accept()
        buffer = b""
        while data := conn.recv(4096):
            buffer += data.lstrip(b"D")  # the hook's "done" after S, M, E
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                got.append(line.decode())
                conn.sendall(next(answers, GO_ON))

    threading.Thread(target=serve, daemon=True).start()
    (tmp_path / "prog.py").write_text(HOOKED)
    env = {**os.environ, "HARNESS_COUNT_SOCKET": path, "PYTHONPATH": str(HOOK_DIR)}
    done = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=30, check=True)  # fmt: skip
    listener.close()
    assert done.stdout == "starting\nIteration 1\nIteration 2\nIteration 3\ndone 5\n"
    assert done.stderr == "Iteration 4 (on stderr)\n"
    pids = {line.split(" ", 1)[0] for line in got}
    assert len(pids) == 1 and [line.split(" ", 1)[1] for line in got] == [
        "Iteration 1", "Iteration 2", "Iteration 3", "Iteration 4 (on stderr)", "done 5",
    ]  # fmt: skip


def test_the_client_request_is_a_no_op_outside_valgrind():
    import importlib.util

    spec = importlib.util.spec_from_file_location("count_hook", HOOK_DIR / "sitecustomize.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    request = hook.client_request()
    if request is None:
        pytest.skip("not an x86-64 Linux machine")
    assert request(hook.RUNNING_ON_VALGRIND) == 0


def test_the_hook_is_inert_without_its_socket(tmp_path):
    (tmp_path / "prog.py").write_text("import sys; print(type(sys.stdout).__name__)")
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_COUNT_SOCKET"} | {"PYTHONPATH": str(HOOK_DIR)}
    done = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=30, check=True)  # fmt: skip
    assert done.stdout.strip() == "TextIOWrapper"


def test_the_hook_directory_holds_only_the_hook():
    assert sorted(p.name for p in Path(HOOK_DIR).iterdir() if p.name != "__pycache__") == ["sitecustomize.py"]


def test_a_program_whose_lines_do_not_pass_through_python_is_not_markable(tmp_path, monkeypatch):
    """A shell loop's lines reach its output, none the hook: said, not waited for until the timeout."""
    from harness.count import window

    monkeypatch.setattr(callgrind, "command", lambda argv, out, found: argv)  # natively: the plumbing only
    script = 'for i in $(seq 1 40); do echo "Iteration $i"; done; sleep 20'
    with pytest.raises(window.CountFailed, match="none of them through Python's sys.stdout"):
        window.counted_run(["bash", "-c", script], tmp_path, tmp_path / "out", Plan(timeout_s=15), "base 1",
                           found={"callgrind_control": "true"})  # fmt: skip


STEADY = textwrap.dedent(
    """
    n = 0
    while True:
        x = 0
        for i in range(20000):
            x += i * i
        n += 1
        if n % 5 == 0:
            print(f"Iteration {n}", flush=True)
    """
)


def test_hardware_counters_are_opened_on_the_programs_processes_at_the_marks(tmp_path):
    """The fast path's plumbing, with the software task clock standing in for the hardware
    instructions event, which no machine of this project has (harness.count.hardware)."""
    from harness.count import hardware, window

    (tmp_path / "prog.py").write_text(STEADY)
    stand_in = (hardware.PERF_TYPE_SOFTWARE, hardware.PERF_COUNT_SW_TASK_CLOCK)
    if not hardware.available(stand_in).usable:
        pytest.skip("perf_event_open is not allowed here")
    run = window.counted_run([sys.executable, "prog.py"], tmp_path, tmp_path / "out", Plan(min_half_s=0.0), "base 1",
                             tool="perf", event=stand_in)  # fmt: skip
    assert run.tool == "perf" and run.units == (5, 5)
    (marked,) = [p for p in run.processes if p.marked]
    assert marked.halves[0] > 0 and marked.halves[1] > 0  # nanoseconds of its task clock in each half


def test_doctor_says_whether_this_machine_counts_instructions_in_hardware():
    from harness.count import hardware

    told = hardware.available()
    assert told.said.startswith("none: perf_event_open(instructions) failed") or told.usable


def test_the_fast_path_is_refused_where_there_are_no_hardware_counters(cli, monkeypatch, tmp_path):
    from harness.count import hardware

    monkeypatch.setattr(hardware, "available", lambda: hardware.Availability(False, "none: a VM"))
    result = cli("ab", "HEAD", "--measure", "instructions", "--count-with", "perf", "--", "python", "train.py")
    assert result.exit_code == 2 and "no hardware instruction counters (none: a VM)" in result.output
