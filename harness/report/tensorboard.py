"""A run as TensorBoard runs, beside the training runs it explains: `harness export RUN
--tensorboard DIR`, then `tensorboard --logdir DIR` (or DIR inside the logdir you already use).

One TensorBoard run per cell-repeat, `DIR/<suite>/<cell label>/r<repeat>`:

- its series (series/<id>-<repeat>.csv) as scalars `series/<metric>`, each at the wall-clock
  time it was sampled (TensorBoard's "Wall" and "Relative" axes), its step the milliseconds
  since the cell's probe started (samples taken before that have negative steps);
- every number it measured as a summary scalar `summary/<metric>` at step 0;
- a text `cell` with its cell, status, reason and warnings;
- a session of TensorBoard's hparams plugin: its params as hparams, grouped by cell (the
  repeats of a cell form one session group, which the dashboard aggregates), its status as
  the session's (a failed cell-repeat is a failed session).

At DIR's top, the experiment: every param that names a cell (plus `suite`) as an hparam, and
the metrics the matrix is judged by (each suite's headline rate, its other rates and its
quality metrics; harness.report.exports.matrix) as its metrics, so the hparams dashboard's
table and parallel-coordinates view show the sweep's matrix. TensorBoard takes the first
experiment it finds, so DIR must hold this run alone: an existing, non-empty DIR is refused.

Written with tensorboardX's event writer and protos (no TensorFlow or torch), synchronously:
a full disk stops the export with a StorageError and leaves no DIR behind, as the whole
export is written to a temporary folder beside DIR and renamed into place at the end.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from typing import Any

from harness.errors import StorageError, UserError
from harness.report.exports import SERIES, CellRepeat, Matrix, Param, matrix

SUMMARY = "summary/"
INSTALL = "pip install 'selfplay-harness[logs]'  (tensorboardX, and tensorboard to view it)"


def export(run_dir: Path, out: Path, metrics: list[str] | None = None) -> tuple[int, list[str]]:
    """Write the run's TensorBoard runs and experiment into `out`; (runs written, skipped)."""
    protos = _tensorboardx()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(
            f"--tensorboard {out}: exists and is not an empty directory; TensorBoard reads the first hparams "
            "experiment it finds, so give each run a directory of its own (e.g. runs/<run name>)"
        )
    found = matrix(run_dir, metrics)
    staging = out.parent / f".{out.name}.tmp"
    try:
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        hparams = hparam_values(found)
        _write(protos, staging, [experiment(protos, hparams, found.judged_by)], [0], [time.time()])
        taken: dict[str, str] = {}
        for run in found.runs:
            _write_run(protos, staging / run_path(run, taken), run, hparams[run.record.id])
        if out.exists():
            out.rmdir()  # empty, checked above
        staging.rename(out)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise StorageError.from_os(exc, exc.filename or out, "the TensorBoard export") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return len(found.runs), []


def view(out: Path) -> str:
    return f"tensorboard --logdir {out}"


def run_path(run: CellRepeat, taken: dict[str, str]) -> str:
    """`<suite>/<cell label>/r<repeat>`: the label as a folder name (no `/`, at most 100
    characters); a cut label, or one two cells would share, ends with its cell id."""
    rec = run.record
    label = re.sub(r"[/\\\x00]", "_", run.label).lstrip(".") or "defaults"
    if len(label) > 100:
        label = f"{label[:90]}~{rec.id}"
    folder = f"{rec.suite}/{label}"
    if taken.setdefault(folder, rec.id) != rec.id:
        folder = f"{folder}~{rec.id}"
    return f"{folder}/r{rec.repeat}"


def hparam_values(found: Matrix) -> dict[str, dict[str, Param]]:
    """Cell id -> its hparams: `suite` and the params that name a cell in any of the
    run's cells. A param whose values are of two kinds (a number in one cell, text in
    another) is text in all of them, so the dashboard sorts and filters it one way."""
    names = ["suite", *dict.fromkeys(name for run in found.runs for name in run.explicit)]
    values = {run.record.id: {n: run.params[n] for n in names if n in run.params} for run in found.runs}
    for name in names:
        kinds = {_kind(v[name]) for v in values.values() if name in v}
        if len(kinds) > 1:
            for v in values.values():
                if name in v:
                    v[name] = str(v[name])
    return values


def _kind(value: Param) -> str:
    return "bool" if isinstance(value, bool) else "text" if isinstance(value, str) else "number"


def experiment(protos: Any, hparams: dict[str, dict[str, Param]], metrics: list[str]) -> Any:
    """The hparams plugin's experiment: every hparam with its type (and its values, for text
    and booleans, so the dashboard offers them as checkboxes), the metrics to compare by."""
    from google.protobuf.struct_pb2 import ListValue

    api = protos.api_pb2
    infos = []
    for name in dict.fromkeys(n for v in hparams.values() for n in v):
        seen = [v[name] for v in hparams.values() if name in v]
        kind = _kind(seen[0])
        info = api.HParamInfo(name=name, type=api.DataType.Value(_DATA_TYPE[kind]))
        if kind != "number":
            info.domain_discrete.CopyFrom(ListValue(values=[_value(v) for v in dict.fromkeys(seen)]))
        infos.append(info)
    metric_infos = [api.MetricInfo(name=api.MetricName(tag=SUMMARY + m), display_name=m) for m in metrics]
    return _plugin_summary(protos, "experiment", protos.plugin_hparams_pb2.HParamsPluginData(
        experiment=api.Experiment(hparam_infos=infos, metric_infos=metric_infos), version=0))  # fmt: skip


_DATA_TYPE = {"text": "DATA_TYPE_STRING", "bool": "DATA_TYPE_BOOL", "number": "DATA_TYPE_FLOAT64"}


def _value(value: Param) -> Any:
    from google.protobuf.struct_pb2 import Value

    if isinstance(value, bool):
        return Value(bool_value=value)
    if isinstance(value, str):
        return Value(string_value=value)
    return Value(number_value=float(value))


def _plugin_summary(protos: Any, what: str, data: Any) -> Any:
    """A Summary holding hparams plugin data under the tag the plugin looks for."""
    summary_pb2 = protos.summary_pb2
    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="hparams", content=data.SerializeToString())
    )
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=f"_hparams_/{what}", metadata=metadata)])


def _write_run(protos: Any, folder: Path, run: CellRepeat, hparams: dict[str, Param]) -> None:
    """One cell-repeat's event file: its session, summaries, text and series."""
    hp = protos.plugin_hparams_pb2
    rec = run.record
    start = run.start if run.start is not None else run.end or 0.0
    end = run.end if run.end is not None else start
    session = hp.SessionStartInfo(group_name=run.benchmark, start_time_secs=start)
    for name, value in hparams.items():
        session.hparams[name].CopyFrom(_value(value))
    status = "STATUS_SUCCESS" if rec.ok else "STATUS_FAILURE"
    ending = hp.SessionEndInfo(status=protos.api_pb2.Status.Value(status), end_time_secs=end)
    events = [
        (_plugin_summary(protos, "session_start_info", hp.HParamsPluginData(session_start_info=session, version=0)),
         0, start),
        *((protos.summary.scalar(SUMMARY + name, value), 0, end) for name, value in run.metrics.items()),
        (protos.summary.text("cell", describe(run)), 0, end),
        *((protos.summary.scalar(SERIES + p.metric, p.value), p.step, p.wall) for p in run.points),
        (_plugin_summary(protos, "session_end_info", hp.HParamsPluginData(session_end_info=ending, version=0)), 0, end),
    ]  # fmt: skip
    folder.mkdir(parents=True)
    _write(protos, folder, *zip(*events, strict=True))


def _write(protos: Any, folder: Path, summaries: Any, steps: Any, walls: Any) -> None:
    """Summaries (with their steps and wall times) as one event file in `folder`, each
    written as it comes, in this thread: a failed write raises here."""
    writer = protos.EventsWriter(str(folder / "events"))
    try:
        for summary, step, wall in zip(summaries, steps, walls, strict=True):
            writer.write_event(protos.event_pb2.Event(summary=summary, step=step, wall_time=wall))
    finally:
        writer.close()


def describe(run: CellRepeat) -> str:
    """The text shown for a cell-repeat (markdown): what ran, how it ended, what to doubt."""
    rec = run.record
    lines = [f"**{run.benchmark}**, repeat {rec.repeat}: {rec.status}" + (f" ({rec.reason})" if rec.reason else "")]
    lines += [f"- warning: {w}" for w in rec.warnings]
    if not run.clock_exact and run.points:
        lines.append("- wall clock: the cell's start in whole seconds (recorded before its probe's start was kept)")
    lines.append(f"- cell id {rec.id}")
    return "\n".join(lines)


def _tensorboardx() -> Any:
    """tensorboardX's writer and protos, or a UserError naming the extra."""
    try:
        from types import SimpleNamespace

        from tensorboardX import summary
        from tensorboardX.event_file_writer import EventsWriter
        from tensorboardX.proto import api_pb2, event_pb2, plugin_hparams_pb2, summary_pb2
    except ImportError:
        raise UserError(f"--tensorboard needs tensorboardX: {INSTALL}") from None
    return SimpleNamespace(
        summary=summary, EventsWriter=EventsWriter, api_pb2=api_pb2, event_pb2=event_pb2,
        plugin_hparams_pb2=plugin_hparams_pb2, summary_pb2=summary_pb2,
    )  # fmt: skip
