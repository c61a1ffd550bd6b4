"""The suite's contract: params, duration mode, metrics, series, clean shutdown."""

import multiprocessing as mp
import sys

import pytest
from pydantic import ValidationError

from harness.probe import Probe
from suites.mccfr import SUITE, Params


def test_params_coerce_strings_and_forbid_unknown_keys():
    p = Params.model_validate({"workers": "2", "batch_size": "7", "game": "kuhn", "sync": "full"})
    assert (p.workers, p.batch_size) == (2, 7)
    with pytest.raises(ValidationError):
        Params.model_validate({"bogus": 1})
    with pytest.raises(ValidationError):
        Params.model_validate({"backend": "mpi"})
    assert SUITE.resources_for(Params(backend="processes", workers=8, batch_size=3, start_method="fork")).cpus == 3


def test_import_is_light():
    import subprocess

    code = "import suites.mccfr, sys; print('numba' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("staleness", [0, 2])
def test_duration_mode_processes_reports_sync_metrics(staleness):
    points = []
    probe = Probe(duration_s=0.4, sink=lambda r: points.append(r) if r.get("type") == "point" else None)
    params = Params(
        game="leduc",
        backend="processes",
        workers=2,
        batch_size=200,
        exploitability_every=2000,
        start_method="fork",
        staleness=staleness,
    )
    SUITE.run(params, probe)
    m = probe.finish()
    assert m["iterations"] > 0 and m["iterations_per_s"] > 0
    assert m["nodes"] > m["iterations"]
    # batches still in flight when the window ends are collected and counted
    assert m["work_done"] == m["work_requested"] == m["iterations"]
    assert m["sync_bytes_mean"] > 0 and m["merge_ms_count"] > 0
    assert 0.0 <= m["sync_share"] <= 1.0
    assert m["infosets"] == 936 and m["infosets_seen"] <= 936
    assert m["nash_conv"] == pytest.approx(2 * m["exploitability"])
    assert any(p["name"] == "exploitability" for p in points)
    assert mp.active_children() == []


@pytest.mark.slow
def test_spawned_workers_do_not_import_torch():
    probe = Probe(target_work=200)
    SUITE.run(Params(game="kuhn", backend="processes", workers=1, start_method="spawn"), probe)
    m = probe.finish()
    assert m["work_done"] == 200
    assert m["start_method"] == "spawn"
    assert not any("torch" in w for w in probe.warnings)


def test_shared_sync_moves_no_bytes():
    probe = Probe(target_work=2_000)
    SUITE.run(Params(game="leduc", backend="processes", workers=2, sync="shared", start_method="fork"), probe)
    m = probe.finish()
    assert m["sync_bytes_max"] == 0
    assert m["work_done"] == 2_000


def test_sequential_warns_about_ignored_workers():
    probe = Probe(target_work=10)
    SUITE.run(Params(game="kuhn", workers=4), probe)
    assert any("ignored" in w for w in probe.warnings)


@pytest.mark.slow
@pytest.mark.parametrize(("backend", "workers", "staleness"), [("sequential", 1, 1), ("processes", 2, 2)])
def test_a_nashconv_target_is_met_and_timed_on_merged_tables(backend, workers, staleness):
    from harness.cell.targets import Target

    probe = Probe(duration_s=60, target=Target.parse("nash_conv<=0.2"), target_every_s=0.05, rates=SUITE.words.rates)
    SUITE.run(
        Params(game="kuhn", backend=backend, workers=workers, staleness=staleness, batch_size=200, sync="delta"), probe
    )
    m = probe.finish()
    assert m["target_reached"] == 1 and m["quality_checks"] >= 2
    assert 0 <= m["time_to_target_low_s"] < m["time_to_target_s"] == pytest.approx(m["measure_s"])
    assert m["work_to_target"] > 0 and m["work_to_target"] % 200 == 0  # whole batches, all merged
    assert m["quality_eval_s"] > 0
    assert mp.active_children() == []
