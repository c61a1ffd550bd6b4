"""SERIALIZATION (warning): (un)pickling and IPC take a growing share of the time while the
messages grow: the whole state is sent every batch instead of what changed.

Reads `ipc_share` (share of the busy thread time spent pickling, unpickling and sending,
over the last third of the run, in the role where it is largest), `ipc_share_growth`
(that share over the first third's), `ipc_cores` (the cores that role wanted: the busy
time the share is a share of) and `write_size_growth` (bytes per write call, last third
over first third, of the process that writes most). Fires when ipc_share >= IPC_SHARE,
write_size_growth >= SIZE_GROWTH and ipc_share_growth >= SHARE_GROWTH: the messages grow
and the time spent on them does not shrink (a steady IPC cost is a design choice; a growing
one is the full-state pattern, and it only gets worse), in a role busy at least MIN_CORES
(a share of almost nothing is nothing: neat-python's driver, 0.037 of a core and 80 %
blocked on its pool, read 49 % of its busy time pickling while the workers computed). The
share alone is too noisy to require growth of it (a share already at 80 % cannot double,
and a healthy program's varies by half from one third to the next); the bytes per write
are not. Records from before `ipc_cores` give the role's CPU from `watch_roles`.
"""

from __future__ import annotations

from typing import Any

from harness.diagnosis.findings import Finding, fmt
from harness.diagnosis.needs import STACKS, Needs
from harness.runs.record import CellGroup
from harness.runs.view import RunView

RULE = "SERIALIZATION"
NEEDS = Needs(instruments=(STACKS,))
IPC_SHARE = 0.15
# a quarter of a core: below it, even all of its busy time spent pickling is a small part of a
# program's; a crowded machine's readers give what a process wanted, not the tenth it got
# (tests/programs/full_state.py's main wanted 0.93 cores, got 0.20, at load 7)
MIN_CORES = 0.25
SIZE_GROWTH = 1.5
SHARE_GROWTH = 1.0
REMEDY = (
    "send only what changed since the last message (deltas, row ids and values) or keep the shared state in "
    "shared memory, so a message's size and its pickling time stay flat as the state grows"
)


def check(view: RunView) -> list[Finding]:
    out = []
    for cell in view.cells:
        words = cell.vocabulary
        found = cell.signals("ipc_share", "ipc_share_growth", "write_size_growth")
        share, growth, sizes = found.values()
        if share is None or growth is None or sizes is None:
            continue
        if share < IPC_SHARE or sizes < SIZE_GROWTH or growth < SHARE_GROWTH:
            continue
        role = cell.first("ipc_role")
        cores = busy_cores(cell, role)
        if cores is not None and cores < MIN_CORES:
            continue
        who = "the main process spends" if role == "main" else f"the {role or 'program'} processes spend"
        site = cell.first("ipc_site")
        evidence: dict[str, Any] = dict(found) | {"ipc_cores": cores}
        for extra in ("write_size_bytes", "ipc_site"):
            if cell.first(extra) is not None:
                evidence[extra] = cell.first(extra)
        out.append(
            Finding(
                RULE,
                "warning",
                [cell.id],
                f"{who} {100 * share:.0f} % of the busy time{f' ({fmt(cores)} cores)' if cores is not None else ''} "
                f"(un)pickling and sending, {fmt(growth)}x the "
                f"share at the start, while each write carries {fmt(sizes)}x the bytes"
                f"{f' (at {site})' if site else ''}: {words.remedy('serialization', REMEDY)}",
                evidence,
            )
        )
    return out


def busy_cores(cell: CellGroup, role: str | None) -> float | None:
    """The cores the blamed role wanted (`ipc_cores`), or, in a record from before it, the
    CPU its row of `watch_roles` used; None when neither was recorded."""
    cores = cell.signals("ipc_cores")["ipc_cores"]
    if cores is not None:
        return cores
    row = (cell.first("watch_roles") or {}).get(role) if role else None
    return row.get("cpu_cores") if isinstance(row, dict) else None
