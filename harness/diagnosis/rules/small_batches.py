"""SMALL_BATCHES (warning): inference batches far below the size they may reach.

Reads the `batch` signal's mean (`<batch>_mean`, from probe.observe) against the
`batch_limit` signal the suite reports (a server's max batch); fires when the mean is below
SHARE of the limit. The remedy is the suite's (its knobs), else a generic one.
"""

from __future__ import annotations

from harness.diagnosis.findings import Finding, fmt
from harness.diagnosis.needs import Needs
from harness.runs.view import RunView

RULE = "SMALL_BATCHES"
NEEDS = Needs()
SHARE = 0.25
REMEDY = "more requests in flight per batch (more workers, more items per request) or a longer gather deadline"


def check(view: RunView) -> list[Finding]:
    out = []
    for cell in view.cells:
        words = cell.vocabulary
        batch = words.signal("batch")
        mean_name = f"{batch}_mean"
        found = cell.signals(mean_name, "batch_limit")
        mean, limit = found.values()
        if mean is None or not limit or limit <= 1 or mean >= SHARE * limit:
            continue
        out.append(
            Finding(
                RULE,
                "warning",
                [cell.id],
                f"batch mean {fmt(mean)} of max {limit:.0f}: {words.remedy('small_batches', REMEDY)}",
                {
                    **found,
                    f"{batch}_p95": cell.median(f"{batch}_p95"),
                    **({words.workers: cell.params[words.workers]} if words.workers in cell.params else {}),
                },
            )
        )
    return out
