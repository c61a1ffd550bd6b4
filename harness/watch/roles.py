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

Three more kinds of process would skew the shape, each seen on a real program (docs/records/
2026-11-26-blind-fixes-rules.md): a toolchain (a compiler torch.compile starts, g++ and
cc1plus, or its compile workers and whatever they start) is a `helper`: it builds the
program, it is not the program's server nor its workers; a launcher (a wrapper such as
`timeout`, `sh -c`, a capture tool, whose one child runs the command line its own ends
with) is a `helper` too, and its child is `main`, where it had been pushed into `server`;
and a process py-spy did not sample takes the entry of its siblings with the same command
line and parent (a Pool of 4 with two unsampled was filed as 2 workers and 2 children).
The workers are the group of two or more that lived the most process-seconds (by count
where lifetimes are not known), so short-lived processes outnumbering the workers do not
take their place.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
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
    last_seen: float | None = None  # None: not known (a listing taken once)


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
    entries = sibling_entries(procs, entries)
    roles: dict[int, str] = {}
    for pid, proc in procs.items():
        if in_toolchain(procs, pid):
            roles[pid] = HELPER
            continue
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
    while (launched := launched_by(main, program)) is not None:
        roles[main.pid] = HELPER  # a wrapper: the program is its one child
        main = launched
    program = [p for p in program if p.pid not in roles]
    roles[main.pid] = MAIN
    groups: dict[str, list[int]] = defaultdict(list)
    for p in program:
        if p.pid != main.pid:
            # a Ray actor by its class (its entry function is every Ray worker's)
            title = ray_title(p.cmdline)
            groups[f"{_RAY_TITLE}{title}" if title else entries.get(p.pid) or " ".join(p.cmdline)].append(p.pid)
    ranked = sorted(groups.values(), key=lambda pids: (-len(pids), min(pids)))

    ranked.sort(key=lambda pids: -sum(lived(procs[pid]) for pid in pids))  # then by process-seconds lived
    workers = ranked[0] if ranked and len(ranked[0]) >= 2 else []
    for pid in workers:
        roles[pid] = WORKERS
    for pids in ranked:
        if pids is workers:
            continue
        for pid in pids:
            roles[pid] = SERVER if workers and len(pids) == 1 else CHILDREN
    return roles


# A toolchain's programs, by executable name (a cross compiler's prefix and a version
# suffix allowed: x86_64-linux-gnu-g++-12), and the compile workers torch.compile starts.
_TOOLCHAIN = re.compile(
    r"^(?:[\w.]+-)*(?:cc|c\+\+|gcc|g\+\+|clang|clang\+\+|cc1|cc1plus|cc1obj|as|ld|ld\.\w+|collect2|lto1"
    r"|lto-wrapper|nvcc|ptxas|cicc|fatbinary|nvlink|ninja|make|cmake)(?:-[\d.]+)?$"
)
_TOOLCHAIN_SCRIPTS = ("/torch/_inductor/compile_worker/",)


def is_toolchain(cmdline: Sequence[str]) -> bool:
    """A compiler, linker or build tool, or torch.compile's compile worker."""
    program = next(iter(cmdline), "").rsplit("/", 1)[-1]
    return bool(_TOOLCHAIN.match(program)) or any(s in word for word in cmdline[:2] for s in _TOOLCHAIN_SCRIPTS)


def in_toolchain(procs: Mapping[int, Proc], pid: int) -> bool:
    """The process or one of its ancestors below the program's top is a toolchain's: what a
    compiler starts (cc1plus under g++, a compile worker's forked pool) compiles too. The
    top itself is what the user ran (`harness watch -- make train` runs the program)."""
    seen: set[int] = set()
    while pid in procs and pid not in seen:
        seen.add(pid)
        proc = procs[pid]
        parent = procs.get(proc.ppid)
        grandparent = procs.get(parent.ppid) if parent else None
        if parent is None or is_harness_own(parent.cmdline, grandparent.cmdline if grandparent else None):
            return False
        if is_toolchain(proc.cmdline):
            return True
        pid = proc.ppid
    return False


def launched_by(parent: Proc, program: Sequence[Proc]) -> Proc | None:
    """The one child a launcher runs (`timeout 60 python x.py`, `sh -c 'python x.py'`, a
    capture tool's `... -- python x.py`): the parent's only child whose command line is the
    tail of the parent's own (its program named by file name, as a shell finds it on PATH).
    None when the parent has another child or none, or the child runs something else."""
    children = [p for p in program if p.ppid == parent.pid]
    if len(children) != 1:
        return None
    (child,) = children
    words, tail = list(child.cmdline), list(parent.cmdline)[-len(child.cmdline) :] if child.cmdline else []
    if not words or list(parent.cmdline) == words:
        return None
    if len(tail) == len(words) and tail[1:] == words[1:] and _name(tail[0]) == _name(words[0]):
        return child
    last = next(reversed(parent.cmdline), "")
    return child if len(parent.cmdline) > 1 and last.endswith(" ".join(words)) and " " in last else None


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def sibling_entries(procs: Mapping[int, Proc], entries: Mapping[int, str | None]) -> dict[int, str | None]:
    """`entries` with each process py-spy did not sample given the entry most of its siblings
    (same parent, same command line) were seen to run: a Pool's workers are one group whether
    or not the sampler's budget reached each of them."""
    seen: dict[tuple[int, tuple[str, ...]], Counter[str]] = defaultdict(Counter)
    for pid, proc in procs.items():
        if entries.get(pid):
            seen[(proc.ppid, tuple(proc.cmdline))][entries[pid]] += 1  # type: ignore[index]
    out = dict(entries)
    for pid, proc in procs.items():
        found = seen.get((proc.ppid, tuple(proc.cmdline)))
        if not out.get(pid) and found:
            out[pid] = found.most_common(1)[0][0]
    return out


def lived(proc: Proc) -> float:
    """Seconds the process was seen alive (1 where that is not known): the workers are the
    group the program spent its time in, not three processes a compiler probe started and
    ended in a second (rl_games beside its two Ray actors)."""
    return max(proc.last_seen - proc.first_seen, 0.0) if proc.last_seen is not None else 1.0
