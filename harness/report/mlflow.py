"""A run as MLflow runs, beside the training runs it explains: `harness export RUN --mlflow
DIR|URI`.

DIR (a folder) holds a local tracking store, DIR/mlflow.db (SQLite; MLflow's file store is in
maintenance mode), with the artifacts under DIR/artifacts; a URI (`http://host:5000`,
`sqlite:///path.db`, `databricks`, ...) names a tracking store or server as MLflow takes it.

In the experiment `harness: <the spec's label>` (so every export of one spec, one commit
after another, sits in one experiment), a parent run named after the run directory holds
report.html, summary.csv, summary.md and run.json as artifacts and the run's facts as tags;
under it, one run per cell-repeat (tag `mlflow.parentRunId`): every param (and `suite`) as
params, every number it measured as metrics, its series as metric histories `series/<metric>`
(each sample at its wall-clock time, its step the milliseconds since the cell's probe
started), its log as an artifact, and FINISHED or FAILED as it ended. A run directory is
exported to a store once: a second export of it is refused, naming the parent run.

Written with the MLflow client (the `mlflow` extra: mlflow-skinny with SQLAlchemy and
Alembic for the SQLite store), imported only here, when the export runs.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.report.exports import SERIES, CellRepeat, Matrix, matrix
from harness.runs.files import make_dirs
from harness.runs.store import unix_seconds

INSTALL = "pip install 'selfplay-harness[mlflow]'"
ARTIFACTS = ("report.html", "summary.csv", "summary.md", "run.json")
MAX_PARAM = 6000  # characters MLflow keeps of a param's value
STORE_FILE = "mlflow.db"


def tracking_uri(out: str | Path) -> tuple[str, Path | None]:
    """(the tracking URI, the local folder holding the store, or None for a URI given)."""
    text = str(out)
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]+:", text) or text in ("databricks", "databricks-uc"):
        return text, None
    folder = Path(text).expanduser().resolve()
    return f"sqlite:///{folder / STORE_FILE}", folder


def view(out: str | Path) -> str:
    return f"mlflow ui --backend-store-uri {tracking_uri(out)[0]}  (the UI needs the full mlflow package)"


def export(run_dir: Path, out: str | Path, metrics: list[str] | None = None) -> tuple[int, list[str]]:
    """Write the run's parent run and one run per cell-repeat; (runs written, skipped)."""
    client_module, entities = _mlflow()
    found = matrix(run_dir, metrics)
    uri, folder = tracking_uri(out)
    if folder is not None:
        make_dirs(folder, "the MLflow store's folder")
    for name in ("mlflow", "alembic"):  # the store's INFO lines about creating its tables
        logging.getLogger(name).setLevel(logging.WARNING)
    client = client_module.MlflowClient(tracking_uri=uri)
    experiment = _experiment(client, found, folder)
    earlier = client.search_runs([experiment], filter_string=f"tags.`harness.run` = '{found.name}'", max_results=1)
    if earlier:
        raise UserError(
            f"--mlflow {out}: run {found.name} is already there (run id {earlier[0].info.run_id}); "
            "delete it in MLflow or export to another store"
        )
    skipped: list[str] = []
    parent = _parent(client, experiment, found, Path(run_dir))
    try:
        for run in found.runs:
            _child(client, entities, experiment, parent, run, Path(run_dir), skipped)
    except BaseException:  # a half export says so: FAILED, and a second export names it to delete
        client.set_tag(parent, "mlflow.note.content", "the export stopped part way: delete this run and export again")
        client.set_terminated(parent, "FAILED")
        raise
    client.set_terminated(parent, "FINISHED", end_time=_ms(unix_seconds(found.meta.get("ended"))))
    return len(found.runs), sorted(set(skipped))


def _experiment(client: Any, found: Matrix, folder: Path | None) -> str:
    name = f"harness: {found.meta.get('label') or 'run'}"
    existing = client.get_experiment_by_name(name)
    if existing is not None:
        return existing.experiment_id
    artifacts = (folder / "artifacts").as_uri() if folder is not None else None
    return client.create_experiment(name, artifact_location=artifacts, tags={"harness": "selfplay-harness"})


def _parent(client: Any, experiment: str, found: Matrix, run_dir: Path) -> str:
    """The run directory as the parent run: its facts as tags, its reports as artifacts."""
    meta = found.meta
    tags = {
        "harness.run": found.name,
        "harness.run_dir": str(run_dir.resolve()),
        "mlflow.source.git.commit": str(meta.get("git_commit") or ""),
        "mlflow.note.content": f"`{meta.get('command')}`: {len(found.runs)} cell-repeats, state {meta.get('state')}",
        **{f"harness.{k}": str(meta[k]) for k in ("hostname", "cpu_model", "cpu_cores", "harness_version", "python",
                                                   "git_dirty", "state") if meta.get(k) is not None},
    }  # fmt: skip
    run = client.create_run(experiment, start_time=_ms(unix_seconds(meta.get("started"))), tags=tags,
                            run_name=found.name)  # fmt: skip
    for name in ARTIFACTS:
        if (run_dir / name).is_file():
            client.log_artifact(run.info.run_id, str(run_dir / name))
    return run.info.run_id


def _child(
    client: Any, entities: Any, experiment: str, parent: str, run: CellRepeat, run_dir: Path, skipped: list[str]
) -> None:
    """One cell-repeat as a run: params, metrics, series as histories, its log, its status."""
    rec = run.record
    tags = {
        "mlflow.parentRunId": parent,
        "harness.cell": rec.id,
        "harness.benchmark": run.benchmark,
        "harness.repeat": str(rec.repeat),
        "harness.status": rec.status,
        "harness.explicit_params": ",".join(run.explicit),
    }
    if rec.reason:
        tags["mlflow.note.content"] = rec.reason
    created = client.create_run(experiment, start_time=_ms(run.start), tags=tags, run_name=run.name)
    run_id = created.info.run_id
    params = []
    for name, value in run.params.items():
        text = str(value)
        if len(text) > MAX_PARAM:
            skipped.append(f"param {name} of {run.benchmark}: cut to its first {MAX_PARAM} characters")
            text = text[: MAX_PARAM - 1] + "…"
        if _valid(name):
            params.append(entities.Param(name, text))
        else:
            skipped.append(f"param {name!r}: a name MLflow does not take")
    end = _ms(run.end) or _ms(run.start) or 0
    values = [entities.Metric(k, v, end, 0) for k, v in run.metrics.items() if _valid(k)]
    values += [entities.Metric(SERIES + p.metric, p.value, _ms(p.wall), p.step) for p in run.points if _valid(p.metric)]
    skipped += [f"metric {k!r}: a name MLflow does not take" for k in run.metrics if not _valid(k)]
    client.log_batch(run_id, metrics=values, params=params)
    for rel in (rec.log, rec.stack_dump):
        if rel and (run_dir / rel).is_file():
            client.log_artifact(run_id, str(run_dir / rel))
    client.set_terminated(run_id, "FINISHED" if rec.ok else "FAILED", end_time=_ms(run.end))


def _valid(name: str) -> bool:
    """A param or metric name MLflow takes (its own rule: these characters, no path tricks)."""
    return bool(re.fullmatch(r"[\w./\- :]+", name)) and not re.search(r"(^|/)\.\.?(/|$)|^/|//", name)


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else int(round(seconds * 1000))


def _mlflow() -> tuple[Any, Any]:
    """The MLflow client and its entities, or a UserError naming the extra."""
    try:
        import mlflow.entities
        import mlflow.tracking
    except ImportError:
        raise UserError(f"--mlflow needs the MLflow client: {INSTALL}") from None
    return mlflow.tracking, mlflow.entities
