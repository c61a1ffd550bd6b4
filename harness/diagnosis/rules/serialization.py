"""SERIALIZATION (warning): (un)pickling and IPC take a growing share of the time while the
messages grow: the whole state is sent every batch instead of what changed.

Reads `ipc_share` (share of the busy thread time spent pickling, unpickling and sending,
over the last third of the run, in the role where it is largest), `ipc_share_growth`
(that share over the first third's) and `write_size_growth` (bytes per write call, last
third over first third, of the process that writes most). Fires when ipc_share >=
IPC_SHARE, write_size_growth >= SIZE_GROWTH and ipc_share_growth >= SHARE_GROWTH: the
messages grow and the time spent on them does not shrink (a steady IPC cost is a design
choice; a growing one is the full-state pattern, and it only gets worse). The share alone
is too noisy to require growth of it (a share already at 80 % cannot double, and a
healthy program's varies by half from one third to the next); the bytes per write are
not.

And only in a role the program spends its time in (`watch_roles`' CPU, where harness watch
recorded it): one that used at least MIN_CORES of a core, or at least MIN_PROGRAM_SHARE of
the CPU the program's roles used. A share of almost nothing is nothing: neat-python's
driver, 0.037 of a core (15 % of the program's) and 80 % blocked on its pool, read 49 % of
its busy time pickling while the workers computed. The CPU it got, not what it wanted: the
driver's threads, waking 220 times a second, sat 0.77 cores' worth in the run queue of a
machine at load 20 while they ran 0.03.
"""

from __future__ import annotations

from typing import Any

from harness.diagnosis.findings import Finding, fmt
from harness.diagnosis.needs import STACKS, Needs
from harness.runs.record import CellGroup
from harness.runs.view import RunView
from harness.watch.roles import IGNORED

RULE = "SERIALIZATION"
NEEDS = Needs(instruments=(STACKS,))
IPC_SHARE = 0.15
# the role the time goes to: a quarter of a core, or a quarter of the program's CPU (on a
# crowded machine every process gets less, the shares stay: tests/programs/full_state.py's
# main got 0.20 cores at load 7, 72 % of the program's; neat's driver 0.03-0.04, 13-15 %)
MIN_CORES = 0.25
MIN_PROGRAM_SHARE = 0.25
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
        used = role_cpu(cell, role)
        if used is not None and used[0] < MIN_CORES and used[1] < MIN_PROGRAM_SHARE:
            continue
        who = "the main process spends" if role == "main" else f"the {role or 'program'} processes spend"
        site = cell.first("ipc_site")
        evidence: dict[str, Any] = dict(found)
        if used is not None:
            evidence |= {"role_cores": used[0], "role_program_share": used[1]}
        for extra in ("write_size_bytes", "ipc_site"):
            if cell.first(extra) is not None:
                evidence[extra] = cell.first(extra)
        out.append(
            Finding(
                RULE,
                "warning",
                [cell.id],
                f"{who} {100 * share:.0f} % of the busy time{_used(used)} (un)pickling and sending, {fmt(growth)}x the "
                f"share at the start, while each write carries {fmt(sizes)}x the bytes"
                f"{f' (at {site})' if site else ''}: {words.remedy('serialization', REMEDY)}",
                evidence,
            )
        )
    return out


def role_cpu(cell: CellGroup, role: str | None) -> tuple[float, float] | None:
    """The cores the role used and its share of what the program's roles used (harness
    watch's `watch_roles`, helpers and the harness left out); None where it was not recorded
    (a suite that reports the signals itself)."""
    table = cell.first("watch_roles")
    if not isinstance(table, dict) or not isinstance(table.get(role), dict):
        return None
    program = sum(float(row.get("cpu_cores") or 0.0) for name, row in table.items() if name not in IGNORED)
    cores = float(table[role].get("cpu_cores") or 0.0)
    return cores, (cores / program if program > 0 else 0.0)


def _used(used: tuple[float, float] | None) -> str:
    return f" ({fmt(used[0])} cores, {100 * used[1]:.0f} % of the program's CPU)" if used else ""
