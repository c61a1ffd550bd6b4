"""Roles in a process tree the harness did not build: main, workers, server, children.

Nobody told the harness which process does what, so roles come from the tree's shape and
what each process runs: the program's first process is `main`; descendants are grouped by
the function they were started to run (a multiprocessing target, from their stacks) or, for
processes py-spy could not read, their command line; the largest group of two or more is
`workers`; a single other process beside them is `server` (an inference server, a learner);
anything else is `children`. multiprocessing's helper processes (resource tracker,
forkserver) are `helper`, and a harness cell's own interpreter (the root of a suite's cell)
is `harness`: both are left out of every rule. A process forked from one of them keeps its
command line but runs the program's code (a forkserver's children are the program's
workers; a suite's inference server may fork from the cell's interpreter), so a
process whose parent has the same command line is the program's, like any other child.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAIN, WORKERS, SERVER, CHILDREN, HELPER, HARNESS = "main", "workers", "server", "children", "helper", "harness"
ROLES = (MAIN, WORKERS, SERVER, CHILDREN, HELPER, HARNESS)
IGNORED = (HELPER, HARNESS)
_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver", "multiprocessing.semaphore_tracker")
_HARNESS_CELL = "harness.cell"


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    cmdline: Sequence[str]
    first_seen: float


def is_harness(cmdline: Sequence[str]) -> bool:
    """A harness cell's interpreter (`python -m harness.cell SPEC OUT`)."""
    return _HARNESS_CELL in cmdline


def is_forked(cmdline: Sequence[str], parent_cmdline: Sequence[str] | None) -> bool:
    """Forked from its parent, not started: same command line, the program's code."""
    return parent_cmdline is not None and list(parent_cmdline) == list(cmdline)


def is_harness_own(cmdline: Sequence[str], parent_cmdline: Sequence[str] | None) -> bool:
    """The harness's cell interpreter itself, not a process the suite forked from it."""
    return is_harness(cmdline) and not is_forked(cmdline, parent_cmdline)


def is_helper(cmdline: Sequence[str]) -> bool:
    text = " ".join(cmdline)
    return any(h in text for h in _HELPERS)


def assign(procs: Mapping[int, Proc], entries: Mapping[int, str | None]) -> dict[int, str]:
    """pid -> role, for every process seen."""
    roles: dict[int, str] = {}
    for pid, proc in procs.items():
        parent = procs.get(proc.ppid)
        if is_forked(proc.cmdline, parent.cmdline if parent else None):
            continue  # the program's code under its parent's command line
        if is_harness(proc.cmdline):
            roles[pid] = HARNESS
        elif is_helper(proc.cmdline):
            roles[pid] = HELPER
    program = [p for pid, p in procs.items() if pid not in roles]
    if not program:
        return roles
    tops = [p for p in program if p.ppid not in procs or roles.get(p.ppid) == HARNESS]
    main = min(tops or program, key=lambda p: (p.first_seen, p.pid))
    roles[main.pid] = MAIN
    groups: dict[str, list[int]] = defaultdict(list)
    for p in program:
        if p.pid != main.pid:
            groups[entries.get(p.pid) or " ".join(p.cmdline)].append(p.pid)
    ranked = sorted(groups.values(), key=lambda pids: (-len(pids), min(pids)))
    workers = ranked[0] if ranked and len(ranked[0]) >= 2 else []
    for pid in workers:
        roles[pid] = WORKERS
    for pids in ranked:
        if pids is workers:
            continue
        for pid in pids:
            roles[pid] = SERVER if workers and len(pids) == 1 else CHILDREN
    return roles
