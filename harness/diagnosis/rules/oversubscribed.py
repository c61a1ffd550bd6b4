"""OVERSUBSCRIBED (info): cells that ask for more CPUs than the machine has.

Reads the suite's `resources_for(params).cpus` (its workers plus any extra processes)
against run.json's `cpu_cores`; a suite not installed here counts its worker param.
"""

from __future__ import annotations

from harness.diagnosis.findings import Finding
from harness.diagnosis.needs import Needs
from harness.errors import UserError
from harness.model.registry import get_suite
from harness.runs.view import RunView

RULE = "OVERSUBSCRIBED"
NEEDS = Needs(window=False)  # what the cells asked for, not what they measured


def check(view: RunView) -> list[Finding]:
    asks: dict[str, int] = {}
    for cell in view.cells:
        cpus = None
        try:
            suite = get_suite(cell.suite)
            cpus = suite.resources_for(suite.params.model_validate(cell.params)).cpus
        except (UserError, ValueError, TypeError):
            cpus = cell.workers(view.cores)  # the suite cannot be loaded here: its worker count
        if cpus is not None and cpus > view.cores:
            asks[cell.id] = cpus
    if not asks:
        return []
    most = max(asks.values())
    return [
        Finding(
            RULE,
            "info",
            sorted(asks),
            f"{len(asks)} {'cells ask' if len(asks) > 1 else 'cell asks'} for up to {most} CPUs on {view.cores} "
            "cores: their rates measure contention "
            f"as well as the workload; compare scaling up to {view.cores} workers",
            {"cpus": asks, "cpu_cores": view.cores},
        )
    ]
