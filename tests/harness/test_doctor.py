"""harness doctor: machine facts and a noise reading with what it means; sweeps into the same
results directory record the reading in run.json while it is fresh."""

from __future__ import annotations

import json

import pytest

from harness.monitors import machine
from harness.running import noise
from tests.conftest import run_dirs


@pytest.mark.slow
def test_doctor_reads_the_machine_keeps_the_reading_and_sweeps_record_it(cli, tmp_path):
    result = cli("doctor", "--seconds", "3", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    for words in ("load average", "CPU governor", "steal time", "SMT", "isolated CPUs", "GPUs (NVML)"):
        assert words in result.output
    assert "between fresh processes" in result.output and "differences worth trusting here" in result.output
    reading = json.loads((tmp_path / noise.DOCTOR_FILE).read_text())
    assert reading["between_processes"]["processes"] >= 3 and reading["within_process"]["slices"] > 10
    assert set(reading["trust_pct_by_repeats"]) == {"1", "3", "5"}

    assert cli("run", "synthetic", "--duration", "0.2", "--out", tmp_path).exit_code == 0
    (run_dir,) = run_dirs(tmp_path)
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["machine_noise"]["measured_at"] == reading["measured_at"]
    assert meta["machine_state"]["usable_cores"] >= 1


@pytest.mark.slow
def test_without_a_reading_run_json_says_how_to_get_one(cli, tmp_path):
    assert cli("run", "synthetic", "--duration", "0.2", "--out", tmp_path).exit_code == 0
    (run_dir,) = run_dirs(tmp_path)
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["machine_noise"] is None and "run harness doctor" in meta["machine_noise_note"]


def test_doctor_refuses_a_reading_too_short_to_mean_anything(cli, tmp_path):
    result = cli("doctor", "--seconds", "0.5", "--out", tmp_path)
    assert result.exit_code == 2 and "allowed 2 to 600" in result.output


def test_trust_is_zero_for_a_silent_machine_and_narrows_with_repeats():
    assert noise.trust([100.0] * 8) == {"1": 0.0, "3": 0.0, "5": 0.0}
    rates = [100, 90, 110, 95, 105, 80, 120, 100, 98, 102]
    trust = noise.trust(rates)
    assert trust["1"] > trust["3"] > trust["5"] > 0


def test_steal_is_the_share_of_the_steal_column():
    before = [100, 0, 100, 700, 0, 0, 0, 100, 0, 0]
    after = [200, 0, 200, 1400, 0, 0, 0, 200, 0, 0]
    assert machine.steal_pct(before, after) == 10.0
    assert machine.steal_pct(None, after) is None
