"""Programs that only print (or write) their progress the way real trainers do get a
throughput: tests/programs/progress_formats.py in each shape, through the `command` suite,
and a sweep of a program whose printed fps is a running average while its rate halves."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.probe import Probe
from harness.program import Params, run

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"
FORMATS = {  # format -> (the counter it must be judged by, --progress-file, words of the recognised summary)
    "table": ("total_timesteps", "", "table: counter total_timesteps"),
    "tqdm": ("iterations", "", "progress_bar: counter iterations"),
    "iteration": ("iterations", "", "sentences: counter iterations"),
    "frames": ("frames", "", "sentences: counter frames"),
    "pairs": ("global_step", "", "counter global_step"),
    "json": ("global_step", "", "json: counter global_step"),
    "csv": ("total_timesteps", "progress.csv", "csv progress.csv: 1 file(s)"),
    "tensorboard": ("global_step", "runs", "tensorboard runs: 1 event file(s)"),
}


@pytest.mark.slow
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_each_format_gives_a_counted_rate(fmt, tmp_path, monkeypatch):
    if fmt == "tensorboard":
        pytest.importorskip("tensorboard")
    if fmt == "tqdm":
        pytest.importorskip("tqdm")
    counter, files, recognised = FORMATS[fmt]
    monkeypatch.chdir(tmp_path)
    # imports torch before its first step: over 4 s beside a full test run
    slow_start = fmt in ("tensorboard",)
    probe = Probe(duration_s=1.5, warmup_s=8.0 if slow_start else 0.5)
    run(Params(argv=f"{sys.executable} {PROGRAMS / 'progress_formats.py'} {fmt}", progress_files=files), probe)
    m = probe.finish()
    assert m["headline_rate"] == f"{counter}_per_s", m["progress_recognised"]
    assert m[f"{counter}_per_s"] > 20  # ~5 ms of CPU a step, on a loaded 2-core machine
    assert recognised in m["progress_recognised"]
    assert not [w for w in probe.warnings if "no progress counter" in w]


@pytest.mark.slow
def test_a_sweep_of_a_running_average_program_finds_the_drift_and_the_disagreement(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "sweep", "--duration", "12", "--warmup", "1", "--steady", "off",
         "--out", str(tmp_path), "--quiet", "--", sys.executable, str(PROGRAMS / "running_average.py"), "6"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = tmp_path.iterdir()
    record = json.loads((run_dir / "cells.jsonl").read_text().splitlines()[-1])
    metrics = record["metrics"]
    assert metrics["headline_rate"] == "total_timesteps_per_s"
    assert metrics["total_timesteps_per_s_drift_pct_per_min"] < -50
    assert metrics["printed_fps_vs_counted"] > 1.1  # the average since the start lags the halving
    assert any("average since the start" in w for w in record["warnings"])
    assert "DRIFT" in done.stdout and "total_timesteps_per_s falls" in done.stdout


def test_a_logged_value_is_a_quality_target(tmp_path, monkeypatch):
    """`--target loss<=0.01` on a program that logs its loss: the cell stops once it is met,
    and the record has the time to target. The command suite accepts a target on any key."""
    from harness.cell.targets import Target
    from harness.running.matrix import Overrides, Spec, apply_overrides, expand

    spec = apply_overrides(Spec(), Overrides(suite="command", axes={"argv": ["python p.py"]}, target="loss<=0.01"))
    assert expand(spec)[0].target == "loss<=0.01"
    monkeypatch.chdir(tmp_path)
    probe = Probe(duration_s=60.0, target=Target.parse("loss<=0.01"), target_every_s=0.0)
    run(Params(argv=f"{sys.executable} {PROGRAMS / 'progress_formats.py'} json"), probe)
    m = probe.finish()
    assert m["target_reached"] == 1 and 0 < m["time_to_target_s"] < 30
    assert m["loss"] <= 0.01


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--progress", r"After \d+", "--", "python", "x.py"], "no named group"),
        (["--progress-file", "runs"], "give it after --"),
        (["--suite", "synthetic", "--", "python", "x.py"], "exclude each other"),
        (["--"], "nothing after --"),
    ],
)
def test_a_program_on_the_command_line_is_checked_before_anything_runs(args, says, tmp_path):
    from typer.testing import CliRunner

    from harness.cli import app

    result = CliRunner().invoke(app, ["sweep", "--out", str(tmp_path), *args])
    assert result.exit_code == 2 and says in result.output, result.output
    assert not list(tmp_path.iterdir())  # nothing recorded, nothing run
