"""Roles in a process tree the harness did not build: main, workers, server, children.

Nobody told the harness which process does what, so roles come from the tree's shape and
what each process runs: the program's first process is `main`; descendants are grouped by
the function they were started to run (a multiprocessing target, from their stacks) or, for
processes py-spy could not read, their command line; the largest group of two or more is
`workers`; a single other process beside them is `server` (an inference server, a learner);
anything else is `children`. multiprocessing's helper processes (resource tracker,
forkserver) and Ray's runtime (gcs_server, raylet, the dashboard and its agents, the log
monitor, the autoscaler's monitor, idle and not-yet-named workers) are `helper`, and a
harness cell's own interpreter (the root of a suite's cell) is `harness`: both are left out
of every rule. A Ray actor process carries its class in its process title
(`ray::ClassName` idle, `ray::ClassName.method` busy; a task's `ray::function`): processes
are grouped by it, since every Ray worker runs the same entry function. A process forked from one of them keeps its
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
_RAY_TITLE = "ray::"
# Ray's own processes: its daemons by program, its Python services by script, and the
# titles of the workers it runs for itself (an idle pool worker, the agents)
_RAY_PROGRAMS = ("gcs_server", "raylet", "plasma_store", "redis-server")
_RAY_SCRIPTS = (
    "/ray/dashboard/", "/ray/autoscaler/", "/ray/_private/log_monitor.py", "/ray/_private/monitor.py",
    "/ray/_private/workers/default_worker.py", "/ray/_private/runtime_env/", "/ray/util/client/server",
)  # fmt: skip
_RAY_OWN_TITLES = ("IDLE", "DashboardAgent", "RuntimeEnvAgent", "JobSupervisor", "_StatsActor", "SpillWorker",
                   "RestoreWorker")  # fmt: skip


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


def ray_title(cmdline: Sequence[str]) -> str | None:
    """The name in a Ray worker's process title (`ray::Learner.update` -> `Learner`), else None."""
    first = next(iter(cmdline), "").strip()
    if not first.startswith(_RAY_TITLE):
        return None
    name = first[len(_RAY_TITLE) :]
    for stop in (".", "(", " "):
        name = name.partition(stop)[0]
    return name or None


def is_ray_runtime(cmdline: Sequence[str]) -> bool:
    """One of Ray's own processes: a daemon, a service, its agents, a worker no actor or task holds."""
    title = ray_title(cmdline)
    if title is not None:
        return title.startswith(_RAY_OWN_TITLES)
    program = next(iter(cmdline), "").rsplit("/", 1)[-1]
    return program in _RAY_PROGRAMS or any(script in word for word in cmdline for script in _RAY_SCRIPTS)


def is_helper(cmdline: Sequence[str]) -> bool:
    text = " ".join(cmdline)
    return any(h in text for h in _HELPERS) or is_ray_runtime(cmdline)


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
            # a Ray actor by its class (its entry function is every Ray worker's)
            title = ray_title(p.cmdline)
            groups[f"{_RAY_TITLE}{title}" if title else entries.get(p.pid) or " ".join(p.cmdline)].append(p.pid)
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
