"""TensorBoard event files (`events.out.tfevents.*`, written by torch.utils.tensorboard,
tensorboardX, Keras, Stable-Baselines3, CleanRL), read with TensorBoard's own loader as they
grow: every scalar is a reading named by its tag (`charts/SPS` a printed rate,
`charts/episodic_return` a value), and the events' step is the counter `global_step`.

Readings are stamped when read, so rates from event files are only as fine as the writer
flushes (SummaryWriter: every 10 events or 120 s). Needs the `tensorboard` package
(`pip install tensorboard`); without it the reader is refused with that command.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from harness.readers.files import expand, written_since
from harness.readers.protocol import Reading
from harness.readers.words import reading_kind_name

STEP_COUNTER = "global_step"


def _loader_class() -> Any:
    try:
        from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    except ImportError:
        raise ValueError(
            "reading TensorBoard event files needs the tensorboard package: pip install tensorboard"
        ) from None
    return EventFileLoader


class TensorBoardEvents:
    name = "tensorboard"

    def __init__(self, pattern: str, cwd: Path) -> None:
        self.loader_class = _loader_class()
        self.pattern = pattern
        self.cwd = cwd
        self.since = time.time()
        self._loaders: dict[Path, Any] = {}
        self.events = 0
        self.scalars = 0

    def poll(self) -> list[Reading]:
        readings: list[Reading] = []
        for path in self._event_files():
            loader = self._loaders.get(path)
            if loader is None:
                loader = self._loaders[path] = self.loader_class(str(path))
            for event in loader.Load():
                self.events += 1
                readings += self._scalars(event)
        return readings

    def _event_files(self) -> list[Path]:
        """Event files the pattern names, or that lie under a directory it names (hidden ones
        too: Sample Factory writes to `.summary/`), written since the reader was made."""
        found: set[Path] = set()
        for path in expand(self.pattern, self.cwd):
            if path.is_dir():
                found.update(f for f in path.rglob("events.out.tfevents.*") if f.is_file())
            elif "tfevents" in path.name:
                found.add(path)
        return sorted(f for f in found if f in self._loaders or written_since(f, self.since))

    def _scalars(self, event: Any) -> list[Reading]:
        if not event.HasField("summary"):
            return []
        out = []
        for value in event.summary.value:
            number = _scalar(value)
            if number is None:
                continue
            self.scalars += 1
            kind, name = reading_kind_name(value.tag)
            out.append(Reading(name, number, kind, value.tag))
        if out and event.step:
            out.append(Reading(STEP_COUNTER, float(event.step), "counter", "step"))
        return out

    def describe(self) -> str:
        if not self._loaders:
            return f"tensorboard {self.pattern}: no event file yet"
        return f"tensorboard {self.pattern}: {len(self._loaders)} event file(s), {self.events} events, {self.scalars} scalars"


def _scalar(value: Any) -> float | None:
    """A summary value's number: `simple_value` (old writers) or a scalar tensor (the form
    TensorBoard's loader migrates every scalar to)."""
    if value.HasField("tensor"):
        from tensorboard.util import tensor_util

        array = tensor_util.make_ndarray(value.tensor)
        # a text summary (CleanRL's hyperparameters table) is a tensor of strings
        return float(array.reshape(())) if array.size == 1 and array.dtype.kind in "biuf" else None
    if value.HasField("simple_value"):
        return float(value.simple_value)
    return None
