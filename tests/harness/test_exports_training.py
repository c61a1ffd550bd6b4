"""The training dashboards' exports on a run made up here (every number known): TensorBoard
read back by the harness's own reader and TensorBoard's hparams parser; what each refuses.
The real quick sweep, MLflow and TensorBoard in Chromium: test_exports_dashboards.py."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from harness.runs.series import SERIES_ORIGIN
from harness.runs.store import RunStore
from tests.harness.tensorboard_files import hparam, read_export
from tests.records import make_record

pytest.importorskip("tensorboardX", reason="the logs extra (pip install -e '.[logs]')")
pytest.importorskip("tensorboard", reason="the logs extra (pip install -e '.[logs]')")

ORIGIN = 1_790_000_000.0  # the probe's start of every cell-repeat, Unix seconds
SPIN = {"kind": "spin", "workers": 1, "unit_size": 20000, "slowdown": 1.0, "fail": "none"}
CELLS = {  # id -> (params, units/s of repeats 0, 1, 2); the third cell's second repeat fails
    "c1": (SPIN, [100.0, 130.0, 90.0]),
    "c2": ({**SPIN, "workers": 2}, [180.0, 170.0, 175.0]),
    "c3": ({**SPIN, "unit_size": 40000}, [60.0, None, 64.0]),
}


def made_up_run(root):
    """A run whose cell-repeats each have a series (t_s -0.5 to 2.0, a known rate) and the
    probe's start kept, as the runner writes them."""
    store = RunStore.create(root, "made-up", {"git_commit": "abc", "label": "made-up"})
    for repeat in range(3):
        for cid, (params, rates) in CELLS.items():
            rate = rates[repeat]
            status = "ok" if rate is not None else "error"
            metrics = {"units_per_s": rate, "units": 2 * rate, "wall_s": 2.5} if rate else {"wall_s": 0.4}
            rec = make_record(cid, metrics, params, suite="synthetic", repeat=repeat, status=status)
            key = f"{cid}-{repeat}"
            with open(store.series_path(key), "w", newline="") as fh:
                writer = csv.writer(fh)
                writer.writerow(["t_s", "phase", "metric", "value"])
                writer.writerow(["-0.500", "", "cpu_util", "50.0"])
                for t in (0.5, 1.0, 1.5, 2.0):
                    writer.writerow([f"{t:.3f}", "measure", "units", (rate or 1) * t])
                writer.writerow(["1.000", "", "units_per_s", "nan"])  # not a number: left out
            rec.series = store.relative(store.series_path(key))
            rec.extra[SERIES_ORIGIN] = ORIGIN + 100 * repeat
            store.append(rec)
    return store.root


def test_tensorboard_export_reads_back_every_scalar_and_the_matrix(cli, tmp_path):
    run = made_up_run(tmp_path / "run")
    out = tmp_path / "tb" / "made-up"
    result = cli("export", run, "--tensorboard", out)
    assert result.exit_code == 0, result.output
    assert "tensorboard: 9 runs (one per cell-repeat) written" in result.output
    assert f"tensorboard --logdir {out}" in result.output
    runs = read_export(out)
    assert not list(out.parent.glob(".*.tmp")), "the staging folder was renamed into place"

    experiment = runs.pop(".").experiment
    assert {h.name for h in experiment.hparam_infos} == {"suite", "workers", "unit_size"}
    assert [m.name.tag for m in experiment.metric_infos] == ["summary/units_per_s"]
    assert len(runs) == 9
    by_cell: dict[str, list[float]] = {}
    for folder, got in runs.items():
        cell = got.session.group_name
        params = {name: hparam(value) for name, value in got.session.hparams.items()}
        cid = next(
            c
            for c, (p, _) in CELLS.items()
            if p["workers"] == params["workers"] and p["unit_size"] == params["unit_size"]
        )
        repeat = int(folder.rsplit("/r", 1)[1])
        rate = CELLS[cid][1][repeat]
        assert params["suite"] == "synthetic" and cell.startswith("synthetic[")
        assert folder.startswith(f"synthetic/{cell[len('synthetic[') : -1]}/")
        assert got.session.start_time_secs == ORIGIN + 100 * repeat
        assert (got.ending.status == 1) is (rate is not None)  # STATUS_SUCCESS, else STATUS_FAILURE
        if rate is None:
            assert "summary/units_per_s" not in got.scalars and got.scalars["summary/wall_s"] == [pytest.approx(0.4)]
            continue
        by_cell.setdefault(cid, []).append(got.scalars["summary/units_per_s"][0])
        assert got.scalars["summary/units"] == [pytest.approx(2 * rate)]
        assert got.scalars["series/units"] == pytest.approx([rate * t for t in (0.5, 1.0, 1.5, 2.0)])
        assert got.scalars["series/cpu_util"] == [50.0] and "series/units_per_s" not in got.scalars
    for cid, (_, rates) in CELLS.items():  # the session groups' medians are the run's
        assert np.median(by_cell[cid]) == pytest.approx(np.median([r for r in rates if r is not None]), rel=1e-6)


def test_tensorboard_series_sit_on_the_wall_clock_with_millisecond_steps(tmp_path):
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    from harness.report.tensorboard import export

    run = made_up_run(tmp_path / "run")
    count, skipped = export(run, tmp_path / "tb", ["units"])
    assert count == 9 and skipped == []
    (events,) = (tmp_path / "tb" / "synthetic" / "workers=2" / "r1").glob("events.out.tfevents.*")
    seen = [(e.step, e.wall_time, v.tag) for e in EventFileLoader(str(events)).Load() for v in e.summary.value]
    series = [(step, wall) for step, wall, tag in seen if tag == "series/units"]
    assert series == [(500, ORIGIN + 100.5), (1000, ORIGIN + 101.0), (1500, ORIGIN + 101.5), (2000, ORIGIN + 102.0)]
    assert not any(tag.startswith("series/cpu_util") for _, _, tag in seen)  # --metric units: units alone


def test_tensorboard_export_refuses_a_directory_in_use_and_keeps_it(cli, tmp_path):
    run = made_up_run(tmp_path / "run")
    used = tmp_path / "logdir"
    used.mkdir()
    (used / "events.out.tfevents.1.host").write_bytes(b"someone else's")
    result = cli("export", run, "--tensorboard", used)
    assert result.exit_code == 2 and "not an empty directory" in result.output
    assert [p.name for p in used.iterdir()] == ["events.out.tfevents.1.host"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli("export", run, "--tensorboard", empty).exit_code == 0 and (empty / "synthetic").is_dir()


def test_tensorboard_export_on_a_full_disk_leaves_no_directory(cli, tmp_path, monkeypatch):
    import errno

    from tensorboardX import event_file_writer

    run = made_up_run(tmp_path / "run")
    written = []
    real = event_file_writer.EventsWriter.write_event

    def filling(self, event):
        if len(written) > 40:
            raise OSError(errno.ENOSPC, "No space left on device", "events")
        written.append(event)
        return real(self, event)

    monkeypatch.setattr(event_file_writer.EventsWriter, "write_event", filling)
    result = cli("export", run, "--tensorboard", tmp_path / "tb")
    assert result.exit_code == 74 and "No space left on device" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "tb").exists() and not list(tmp_path.glob(".tb*"))


def test_training_exports_name_their_extra_when_it_is_missing(cli, tmp_path, monkeypatch):
    import builtins

    run = made_up_run(tmp_path / "run")
    real = builtins.__import__

    def without(name, *args, **kwargs):
        if name.split(".")[0] in ("tensorboardX", "mlflow"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without)
    tb = cli("export", run, "--tensorboard", tmp_path / "tb")
    assert tb.exit_code == 2 and "selfplay-harness[logs]" in tb.output
    ml = cli("export", run, "--mlflow", tmp_path / "ml")
    assert ml.exit_code == 2 and "selfplay-harness[mlflow]" in ml.output
    assert not (tmp_path / "tb").exists() and not (tmp_path / "ml").exists()


def test_matrix_names_each_cell_repeat_and_its_clock(tmp_path):
    from harness.report.exports import matrix

    run = made_up_run(tmp_path / "run")
    found = matrix(run, None)
    assert [r.name for r in found.runs[:3]] == [
        "synthetic[defaults] r0",
        "synthetic[workers=2] r0",
        "synthetic[unit_size=40000] r0",
    ]
    assert all(r.clock_exact for r in found.runs) and found.judged_by == ["units_per_s"]
    first = found.runs[0]
    assert first.params["suite"] == "synthetic" and first.params["workers"] == 1 and first.explicit == []
    assert [p.step for p in first.points] == [-500, 500, 1000, 1500, 2000]
    assert all(math.isfinite(p.value) for r in found.runs for p in r.points)
