"""Rules over a run's records -> findings: the classic failures of parallel training, named.

Rules read the harness's generic metric names and each suite's vocabulary (its worker,
backend and device params, its headline rate, the signals it maps, the remedies naming its
knobs), never one suite's internals. Every finding carries its severity, the cells, the
evidence numbers and one line naming the remedy. The rules live in `rules/`, one each.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.diagnosis.findings import SEVERITY_ORDER, Finding, severity_rank
from harness.diagnosis.rules import RULES
from harness.diagnosis.view import RunView
from harness.model.workshare import usable_cores
from harness.runs.record import Record, group_by_cell

__all__ = ["Finding", "RULES", "RunView", "SEVERITY_ORDER", "diagnose"]


def diagnose(records: Iterable[Record], meta: dict | None = None) -> list[Finding]:
    """Every rule over a run's records (run.json's `meta` gives the core count)."""
    cores = int((meta or {}).get("cpu_cores") or usable_cores())
    view = RunView(group_by_cell(records), cores)
    findings = [f for rule in RULES for f in rule(view)]
    return sorted(findings, key=lambda f: severity_rank(f.severity))
