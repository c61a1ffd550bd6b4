"""The quick sweep's matrix, run for real (its four suites, shortened: fixed-work cells at a
tenth of their work, 1 s windows, the synthetic cells three times), exported to TensorBoard
and to MLflow and read back: the same medians as summary.csv. Then TensorBoard itself, on
loopback, in headless Chromium: the scalars and hparams dashboards show the cells.

One sweep for the module (about 30 s on 2 idle cores); the browser test skips where
chromium is absent, as report.html's does (tests/harness/test_report_browser.py)."""

from __future__ import annotations

import math
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.report.exports import matrix
from tests.harness.tensorboard_files import hparam, read_export
from tests.harness.test_report_browser import PIXEL_STATS_JS, _chromium

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SHORTER = {  # configs/quick.toml -> the same matrix, shorter
    "duration = 2.0": "duration = 1.0",
    "warmup = 0.5": "warmup = 0.2",
    "work = 300000 ": "work = 30000 ",
    "work = 10000\n": "work = 2000\n",
    'params = { kind = "spin"': 'repeats = 3\nduration = 0.5\nparams = { kind = "spin"',
}


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> Path:
    spec = (ROOT / "configs" / "quick.toml").read_text()
    for old, new in SHORTER.items():
        assert spec.count(old) == 1, f"configs/quick.toml changed: {old!r}"
        spec = spec.replace(old, new)
    folder = tmp_path_factory.mktemp("quick")
    (folder / "quick.toml").write_text(spec)
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "sweep", str(folder / "quick.toml"), "--out", str(folder / "out"), "--quiet"],
        capture_output=True, text=True, timeout=600, check=False, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = (folder / "out").iterdir()
    return run_dir


def summary_medians(run_dir: Path) -> dict[str, dict[str, float]]:
    """summary.csv: cell id -> {metric: its median column}."""
    frame = pd.read_csv(run_dir / "summary.csv")
    return {
        row["id"]: {
            c.removesuffix("_median"): row[c] for c in frame.columns if c.endswith("_median") and pd.notna(row[c])
        }
        for _, row in frame.iterrows()
    }


def test_the_quick_sweep_in_tensorboard_has_every_cells_scalars_hparams_and_medians(quick, tmp_path):
    pytest.importorskip("tensorboardX", reason="the logs extra")
    from harness.report.tensorboard import export

    out = tmp_path / "tb"
    found = matrix(quick, None)
    assert export(quick, out, None) == (len(found.runs), [])
    runs = read_export(out)
    experiment = runs.pop(".").experiment
    judged = [m.name.tag.removeprefix("summary/") for m in experiment.metric_infos]
    assert {"units_per_s", "iterations_per_s", "nash_conv", "games_per_min", "env_steps_per_s"} <= set(judged)
    assert {h.name for h in experiment.hparam_infos} >= {"suite", "workers", "backend"}
    assert len(runs) == len(found.runs) == 9  # 2 synthetic cells x 3, mccfr, selfplay, actor_learner
    medians = summary_medians(quick)
    values: dict[tuple[str, str], list[float]] = {}
    for run in found.runs:  # each cell-repeat: its hparams, every number and every series point
        read = runs.pop(f"{run.record.suite}/{run.label}/r{run.record.repeat}")
        assert read.session.group_name == run.benchmark and read.ending.status == 1  # STATUS_SUCCESS
        shown = {name: hparam(v) for name, v in read.session.hparams.items()}
        assert shown == {n: run.params[n] for n in shown} and shown["suite"] == run.record.suite
        for name, value in run.metrics.items():
            assert read.scalars[f"summary/{name}"] == [pytest.approx(value, rel=1e-6, abs=1e-30)], name
            values.setdefault((run.record.id, name), []).append(read.scalars[f"summary/{name}"][0])
        for metric in {p.metric for p in run.points}:
            assert len(read.scalars[f"series/{metric}"]) == sum(p.metric == metric for p in run.points)
    assert not runs
    for cid, cell in medians.items():  # TensorBoard's groups give summary.csv's medians
        for metric in judged:
            if metric in cell:
                assert np.median(values[(cid, metric)]) == pytest.approx(cell[metric], rel=1e-6), (cid, metric)


def test_the_quick_sweep_in_mlflow_has_a_run_per_cell_repeat_with_summary_csvs_medians(quick, tmp_path, cli):
    pytest.importorskip("mlflow", reason="the mlflow extra (pip install -e '.[mlflow]')")
    from mlflow.tracking import MlflowClient

    store = tmp_path / "mlruns"
    result = cli("export", quick, "--mlflow", store)
    assert result.exit_code == 0, result.output
    assert f"mlflow ui --backend-store-uri sqlite:///{store}/mlflow.db" in result.output
    client = MlflowClient(tracking_uri=f"sqlite:///{store}/mlflow.db")
    experiment = client.get_experiment_by_name("harness: quick")
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    (parent,) = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert parent.info.run_name == quick.name and parent.data.tags["harness.run"] == quick.name
    assert {a.path for a in client.list_artifacts(parent.info.run_id)} >= {"report.html", "summary.csv", "run.json"}
    found = matrix(quick, None)
    assert len(children) == len(runs) - 1 == len(found.runs) == 9
    by_cell: dict[str, list] = {}
    for child in children:
        by_cell.setdefault(child.data.tags["harness.cell"], []).append(child)
        assert child.info.status == "FINISHED"
    medians = summary_medians(quick)
    for cid, cell in medians.items():
        for metric, median in cell.items():
            logged = [c.data.metrics[metric] for c in by_cell[cid] if metric in c.data.metrics]
            assert logged and np.median(logged) == pytest.approx(median, rel=1e-12), (cid, metric)
    for run in found.runs:  # params and the series as metric histories, cell-repeat by cell-repeat
        (child,) = [c for c in by_cell[run.record.id] if c.data.tags["harness.repeat"] == str(run.record.repeat)]
        assert child.data.params == {k: str(v) for k, v in run.params.items()}
        metric = run.points[-1].metric
        history = client.get_metric_history(child.info.run_id, f"series/{metric}")
        wanted = [p for p in run.points if p.metric == metric]
        assert sorted((h.step, h.value) for h in history) == sorted((p.step, p.value) for p in wanted)
        assert {a.path for a in client.list_artifacts(child.info.run_id)} == {Path(run.record.log).name}
    again = cli("export", quick, "--mlflow", store)
    assert again.exit_code == 2 and "already there" in again.output and parent.info.run_id in again.output


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def tensorboard_of(tmp_path):
    """Start `tensorboard --logdir DIR` on loopback; yields its URL once it answers."""
    started: list[subprocess.Popen] = []

    def start(logdir: Path) -> str:
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--host", "127.0.0.1", "--port", str(port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        started.append(proc)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                urllib.request.urlopen(f"{url}/data/runs", timeout=2).read()
                return url
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"tensorboard did not answer on {url} (exit {proc.poll()})")

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=20)


def test_tensorboard_in_chromium_shows_the_cells_scalars_and_the_matrix(quick, tmp_path, tensorboard_of):
    executable = _chromium()
    if executable is None:
        pytest.skip("chromium not found at /usr/bin/chromium (apt-get install chromium, or set HARNESS_CHROMIUM)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install -e '.[dev]')")
    pytest.importorskip("tensorboardX", reason="the logs extra")
    from harness.report.tensorboard import export

    export(quick, tmp_path / "tb", None)
    url = tensorboard_of(tmp_path / "tb")
    found = matrix(quick, None)
    folders = sorted({f"{r.record.suite}/{r.label}/r{r.record.repeat}" for r in found.runs})
    cells = sorted({r.benchmark for r in found.runs})
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{url}/#scalars", wait_until="load")
        for folder in folders:  # every cell-repeat is a run in the scalars dashboard
            page.get_by_text(folder, exact=True).first.wait_for(timeout=90_000)
        # a chart every cell-repeat draws, on the series group's first page (tags a page at a time)
        page.get_by_text("series/cpu_util", exact=True).first.wait_for(timeout=30_000)
        scalars = page.screenshot(path=str(tmp_path / "scalars.png"))
        page.goto(f"{url}/#hparams", wait_until="load")
        for cell in cells:  # and every cell a session group (a row) of the matrix
            page.get_by_text(cell, exact=True).first.wait_for(timeout=90_000)
        page.get_by_text("iterations_per_s", exact=True).first.wait_for(timeout=30_000)
        matrix_shot = page.screenshot(path=str(tmp_path / "hparams.png"))
        stats = [page.evaluate(PIXEL_STATS_JS, _b64(shot)) for shot in (scalars, matrix_shot)]
        browser.close()
    assert errors == []
    assert all(s["std"] > 10 and s["inked"] > 0.01 for s in stats), stats


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


def test_the_exports_keep_the_runs_clock(quick):
    """The runner keeps the probe's start: the series sit on the wall clock to the sample."""
    for run in matrix(quick, None).runs:
        assert run.clock_exact and run.start is not None and run.end is not None
        assert math.isclose(run.points[0].wall - run.start, run.points[0].step / 1000, abs_tol=1e-3)
        assert run.start <= run.end + 1 and run.end - run.start < 120  # the cell's start, in whole seconds, to its end
