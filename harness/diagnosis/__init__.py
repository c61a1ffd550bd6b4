"""Rules over a run's records -> findings: the classic failures of parallel training, named.

Rules read the harness's generic metric names and each suite's vocabulary (its worker,
backend and device params, its headline rate, the signals it maps, the remedies naming its
knobs), never one suite's internals. Every finding carries its severity, the cells, the
evidence numbers and one line naming the remedy. The rules live in `rules/`, one each, each
declaring the evidence its findings rest on (`NEEDS`); `needs.py` refuses a finding whose
evidence does not hold, or marks it doubted.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.diagnosis.findings import SEVERITY_ORDER, Finding, severity_rank
from harness.diagnosis.needs import sift
from harness.diagnosis.rules import RULES
from harness.runs.record import Record
from harness.runs.view import RunView, build_view

__all__ = ["Finding", "RULES", "RunView", "SEVERITY_ORDER", "diagnose"]


def diagnose(run: RunView | Iterable[Record], meta: dict | None = None) -> list[Finding]:
    """Every rule over a run (its view, or its records with run.json's `meta`, which gives
    the core count), each finding held to the evidence its rule needs (harness.diagnosis.needs:
    refused, or marked doubted in its first line), most severe first. Given a view, the
    refused ones are kept on it (`view.refused`: the rules that could not judge, and why)."""
    view = run if isinstance(run, RunView) else build_view(run, meta)
    findings, refused = [], []
    for rule in RULES:
        kept, turned_down = sift(rule, view)
        findings += kept
        refused += turned_down
    view.refused = refused
    return sorted(findings, key=lambda f: severity_rank(f.severity))
