"""The diagnosis rules, one module each: `RULE` (its name), `NEEDS` (the evidence its findings
rest on: harness.diagnosis.needs), named thresholds, `check(view)`.

A rule module's docstring says what it reads and when it fires; adding a rule is one new
module here and one line in `RULES` (docs/architecture.md, "How to add a diagnosis rule").
"""

from __future__ import annotations

from collections.abc import Callable

from harness.diagnosis.findings import Finding
from harness.diagnosis.rules import (
    busy_wait,
    drift,
    gil_bound,
    gpu_idle,
    gpu_thrash,
    idle_workers,
    lost_work,
    negative_scaling,
    net_off_device,
    oversubscribed,
    pipeline_bound,
    serialization,
    small_batches,
)
from harness.runs.view import RunView

Rule = Callable[[RunView], list[Finding]]

RULES: list[Rule] = [
    lost_work.check,
    drift.check,
    gpu_idle.check,
    gpu_thrash.check,
    small_batches.check,
    negative_scaling.check,
    busy_wait.check,
    serialization.check,
    gil_bound.check,
    idle_workers.check,
    net_off_device.check,
    oversubscribed.check,
    pipeline_bound.check,
]
