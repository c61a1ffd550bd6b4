"""Which node of a Ray cluster each cell-repeat ran on, and which nodes were lost when.

A sweep on Ray (harness.running.executors.ray) puts the node's label in each record
(`node`, beside the attempt's number) and keeps the nodes it saw in run.json's `ray_nodes`:
when each joined, when it was lost and what Ray said of it, and the cell-repeats whose attempt
was lost with it (recorded `harness-error`, then run again). This module is the one reading of
both that report.html, summary.md, the terminal and cells.csv share.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from harness.runs.record import Record

NODE = "node"  # the record's key: the label of the node it ran on
ATTEMPT = "attempt"  # the record's key: which attempt of the cell-repeat in its sweep (1 = the first)
NODES = "ray_nodes"  # run.json's key: the nodes the sweeps of the run saw


def node_label(address: str, node_id: str) -> str:
    """How a node is named everywhere: its address and the start of Ray's node id (several
    nodes can share an address: a cluster on one machine)."""
    return f"{address} ({node_id[:8]})"


def node_of(record: Record) -> str | None:
    value = record.extra.get(NODE)
    return str(value) if value else None


def cell_repeat(cell_id: str, repeat: int) -> str:
    return f"{cell_id}#{repeat}"


@dataclass
class NodeRow:
    """One node: what ran on it (the run's latest records) and what was lost with it."""

    label: str
    head: bool
    joined: str | None
    lost: str | None
    why: str | None
    recorded: int = 0  # latest records that ran there
    ok: int = 0
    cells_lost: list[str] = field(default_factory=list)  # cell-repeats whose attempt was lost with it

    @property
    def role(self) -> str:
        return "head" if self.head else "worker"

    def line(self) -> str:
        """One sentence for the terminal."""
        text = f"{self.label} ({self.role}): {self.recorded} cell-repeat(s) recorded, {self.ok} ok"
        if self.lost:
            lost = f"; {len(self.cells_lost)} cell-repeat(s) lost with it, run again" if self.cells_lost else ""
            text += f"; lost at {self.lost} ({self.why or 'no reason given'}){lost}"
        return text


def rows(records: list[Record], meta: dict[str, Any]) -> list[NodeRow]:
    """The nodes of run.json, in the order they joined, with what the records say ran on
    each; a node a record names that run.json does not is listed too. Empty for a run that
    did not run on Ray."""
    out: dict[str, NodeRow] = {}
    for entry in meta.get(NODES) or []:
        if not isinstance(entry, dict) or not entry.get("label"):
            continue
        out[str(entry["label"])] = NodeRow(
            label=str(entry["label"]), head=bool(entry.get("head")), joined=entry.get("joined"),
            lost=entry.get("lost"), why=entry.get("why"), cells_lost=list(entry.get("cells_lost") or []),
        )  # fmt: skip
    counts = Counter(node_of(r) for r in records)
    ok = Counter(node_of(r) for r in records if r.ok)
    for label, n in counts.items():
        if label is None:
            continue
        row = out.setdefault(label, NodeRow(label, False, None, None, None))
        row.recorded, row.ok = n, ok[label]
    return list(out.values())


def lost_lines(meta: dict[str, Any]) -> list[str]:
    """`node X (worker) lost at T: why; cell-repeats lost with it: ...`, one per lost node."""
    out = []
    for row in rows([], meta):
        if row.lost:
            cells = f"; cell-repeats lost with it: {', '.join(row.cells_lost)}" if row.cells_lost else ""
            out.append(f"node {row.label} ({row.role}) lost at {row.lost}: {row.why or 'no reason given'}{cells}")
    return out
