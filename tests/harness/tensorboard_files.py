"""What a TensorBoard export holds, read back two ways: the scalars through the harness's own
reader (harness.readers.tensorboard, TensorBoard's loader), the hparams plugin's data through
TensorBoard's loader and the plugin's own parser."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.readers.tensorboard import TensorBoardEvents


@dataclass
class ReadRun:
    """One TensorBoard run (a folder with event files) as read back."""

    scalars: dict[str, list[float]] = field(default_factory=dict)  # tag -> values in order
    session: Any = None  # the hparams plugin's SessionStartInfo
    ending: Any = None  # its SessionEndInfo
    experiment: Any = None  # the Experiment, in the folder that holds it


def read_export(root: Path) -> dict[str, ReadRun]:
    """Every run under `root` (its path relative to root; "." for root itself)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.plugins.hparams import metadata

    runs: dict[str, ReadRun] = {}
    for events in sorted(root.rglob("events.out.tfevents.*")):
        folder = events.parent
        run = runs.setdefault(str(folder.relative_to(root)), ReadRun())
        reader = TensorBoardEvents(str(events), folder)  # this file alone, not the folders below
        reader.since = 0.0  # the files were written before the reader was made
        for reading in reader.poll():
            if reading.key != "step":
                run.scalars.setdefault(reading.key, []).append(reading.value)
        for event in EventFileLoader(str(events)).Load():
            for value in event.summary.value if event.HasField("summary") else ():
                if value.metadata.plugin_data.plugin_name != "hparams":
                    continue
                content = value.metadata.plugin_data.content
                if value.tag.endswith("experiment"):
                    run.experiment = metadata.parse_experiment_plugin_data(content)
                elif value.tag.endswith("session_start_info"):
                    run.session = metadata.parse_session_start_info_plugin_data(content)
                elif value.tag.endswith("session_end_info"):
                    run.ending = metadata.parse_session_end_info_plugin_data(content)
    return runs


def hparam(value: Any) -> Any:
    """A google.protobuf Value as Python: its string, number or bool."""
    return getattr(value, value.WhichOneof("kind"))
