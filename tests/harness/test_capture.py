"""A capture reads back into the lines the harness's own pipes give, at the times they came."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.program import capture
from harness.program.launch import child_env

PROGRAM = r"""
import sys, time
sys.stderr.write("\r 10%|#   | 1/10 [00:00<00:01, 9.0it/s]")
sys.stderr.flush(); time.sleep(0.2)
sys.stderr.write("\r 20%|##  | 2/10 [00:00<00:01, 9.5it/s]\x1b[A")
sys.stderr.flush(); time.sleep(0.2)
print("Iteration 1", flush=True); time.sleep(0.2)
print("half a li", end="", flush=True); time.sleep(0.2)
print("ne\r\nlast", end="", flush=True)
"""


def test_a_capture_reads_back_as_the_harness_reads_the_program(tmp_path):
    path = tmp_path / "out.jsonl.gz"
    assert capture.record([sys.executable, "-c", PROGRAM], path, seconds=20) == 0
    replayed = [(s, line) for _, s, line in capture.lines(path)]
    live = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, env=child_env(), errors="replace"
    )  # text mode: universal newlines, as harness.program.launch reads
    assert [line for s, line in replayed if s == "out"] == live.stdout.splitlines(keepends=True)
    assert [line for s, line in replayed if s == "err"] == live.stderr.splitlines(keepends=True)
    times = {line: t for t, _, line in capture.lines(path)}
    assert times["half a line\n"] > times["Iteration 1\n"] + 0.1  # a line is stamped when it ends


def test_a_replay_reads_a_capture_as_a_cell_would(tmp_path):
    path = tmp_path / "out.jsonl"
    lines = [{"capture": 1, "argv": ["prog"]}]
    lines += [{"t": 1.0 + i * 0.5, "s": "out", "d": f"global_step={100 * i}\n"} for i in range(80)]
    path.write_text("\n".join(__import__("json").dumps(o) for o in lines) + "\n")
    metrics, warnings = capture.replay_cell(Path(path), duration_s=20)
    assert metrics["headline_rate"] == "global_step_per_s" and abs(metrics["global_step_per_s"] - 200) < 1
    assert 19.9 < metrics["measure_s"] < 20.6 and not warnings
