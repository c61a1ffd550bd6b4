import sys
import textwrap
import time

import pytest

from harness.probe import Probe, SuiteError
from harness.program import Params, run

PROGRAM = textwrap.dedent(
    """
    import json, sys
    workers = int(sys.argv[1])
    print("not json, kept in the log")
    for _ in range(5):
        print(json.dumps({"count": {"games": workers}, "observe": {"batch": [4, 8]}}), flush=True)
    print(json.dumps({"work": {"requested": 5 * workers, "done": 5 * workers}, "set": {"loss": 0.25}}))
    """
)


def test_json_lines_become_probe_calls(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    probe = Probe(target_work=1)
    run(Params(argv=f"{sys.executable} {script} {{workers}}", workers=3), probe)
    m = probe.finish()
    assert m["games"] == 15 and m["work_done"] == m["work_requested"] == 15
    assert m["batch_mean"] == 6 and m["loss"] == 0.25


def test_duration_mode_stops_a_program_that_never_ends(tmp_path):
    script = tmp_path / "forever.py"
    script.write_text(
        "import json, time\nwhile True:\n    print(json.dumps({'count': {'steps': 1}}), flush=True)\n"
        "    time.sleep(0.01)\n"
    )
    probe = Probe(duration_s=0.5)
    run(Params(argv=f"{sys.executable} {script}"), probe)
    assert probe.finish()["steps"] > 5


def test_missing_placeholder_and_failing_program_are_clear_errors(tmp_path):
    with pytest.raises(SuiteError, match="--set seed="):
        run(Params(argv="echo {seed}"), Probe(target_work=1))
    with pytest.raises(SuiteError, match="exited with code 4"):
        run(Params(argv=f"{sys.executable} -c 'raise SystemExit(4)'"), Probe(target_work=1))
    with pytest.raises(SuiteError, match="cannot start"):
        run(Params(argv="/no/such/program"), Probe(target_work=1))


def test_the_programs_workers_are_stopped_with_it(tmp_path):
    """A trainer whose worker outlives a SIGTERM to the main process (as Sample Factory's
    do) and keeps writing to the shared output: the cell still ends, the worker with it."""
    import psutil

    script = tmp_path / "trainer.py"
    script.write_text(
        textwrap.dedent(
            """
            import subprocess, sys, time
            worker = subprocess.Popen([sys.executable, "-c",
                "import time\\nn = 0\\nwhile True:\\n    n += 1\\n    print(f'step {n}', flush=True)\\n    time.sleep(0.01)"])
            print(f"worker pid {worker.pid}", flush=True)
            while True:
                time.sleep(1)
            """
        )
    )
    probe = Probe(duration_s=1.0)
    started = time.monotonic()
    run(Params(argv=f"{sys.executable} {script}"), probe)
    assert time.monotonic() - started < 8  # the worker's lines did not hold the cell open
    m = probe.finish()
    assert m["steps_per_s"] > 10
    survivors = [p for p in psutil.process_iter(["cmdline"]) if "print(f'step" in " ".join(p.info["cmdline"] or [])]
    assert not survivors, survivors
