"""LOST_WORK (error): a cell that finished ok did less work than it was asked for.

Reads `work_requested` and `work_done` (probe.work) of every ok repeat. The classic cause
is `total // workers` per worker: 100 iterations over 128 workers run none.
"""

from __future__ import annotations

from harness.diagnosis.findings import Finding
from harness.diagnosis.needs import Needs
from harness.runs.view import RunView

RULE = "LOST_WORK"
NEEDS = Needs(window=False)  # counts of work done and asked for over the whole run, not a rate


def check(view: RunView) -> list[Finding]:
    out = []
    for cell in view.cells:
        for rec in cell.ok:
            requested, done = rec.number("work_requested"), rec.number("work_done")
            if requested is None or done is None or done >= requested:
                continue
            out.append(
                Finding(
                    RULE,
                    "error",
                    [cell.id],
                    f"{done:.0f} of {requested:.0f} work units done ({requested - done:.0f} lost, repeat "
                    f"{rec.repeat}): split work with split_work(total, workers) so the first total % "
                    "workers get one more, and check that no worker exits before its share is done",
                    {"work_requested": requested, "work_done": done, "repeat": rec.repeat},
                )
            )
    return out
