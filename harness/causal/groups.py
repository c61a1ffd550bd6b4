"""The groups a causal experiment slows one at a time: the program's processes by the role
harness watch gives them (main, workers, server; other children one group per function they
were started to run, named after it), or as the user names them.

A suite's cell runs the suite's own code in the cell's interpreter (its driver, and any
process it forks keeps that command line), so there the interpreter is the program's main;
a `-- CMD` cell's interpreter only reads the program's output, and slowing it would slow
the measurement, not the program: it is left out. multiprocessing's helpers (resource
tracker, forkserver) and Ray's runtime (gcs_server, raylet, the dashboard, the log monitor,
the agents: harness.watch.roles.is_ray_runtime) are never slowed unless a user's group
takes them; Ray actors are one group per actor class, named after it (their process title
`ray::ClassName...`), whatever role their number gives them.

A user's group is `NAME=PIDS` (a comma list of pids) or `NAME=REGEX` (matched against each
process's command line); the processes no user group takes keep their roles.
"""

from __future__ import annotations

import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import psutil

from harness.cell.processes import tree
from harness.errors import UserError
from harness.monitors.pyspy import py_spy
from harness.watch import roles
from harness.watch.chrometrace import Frame
from harness.watch.classify import entry_function

DUMP_TIMEOUT_S = 5.0

_CELL_TOKEN = "harness.cell"
_PIDS = re.compile(r"^\d+(,\d+)*$")
_NAME = re.compile(r"^[A-Za-z_][\w.-]*$")


@dataclass(frozen=True)
class GroupRule:
    """A user's group: its name and the pids or the command-line pattern that pick it."""

    name: str
    pids: frozenset[int] = frozenset()
    pattern: re.Pattern[str] | None = None

    def takes(self, pid: int, cmdline: str) -> bool:
        if self.pattern is not None:
            return bool(self.pattern.search(cmdline))
        return pid in self.pids


def parse_rules(specs: list[str] | None) -> list[GroupRule]:
    """`NAME=1234,1240` or `NAME=REGEX`; bad input as a UserError naming the form."""
    out: list[GroupRule] = []
    for spec in specs or []:
        name, sep, what = spec.partition("=")
        name, what = name.strip(), what.strip()
        if not sep or not what or not _NAME.match(name):
            raise UserError(
                f"--group {spec!r}: give NAME=PIDS (a comma list, e.g. learner=4121) or NAME=REGEX over the command "
                "line (e.g. envs='env_worker'); NAME is letters, digits, _ . -"
            )
        if any(rule.name == name for rule in out):
            raise UserError(f"--group {name}: named twice")
        if _PIDS.match(what):
            out.append(GroupRule(name, frozenset(int(p) for p in what.split(","))))
            continue
        try:
            out.append(GroupRule(name, pattern=re.compile(what)))
        except re.error as exc:
            raise UserError(f"--group {spec!r}: {what!r} is not a regular expression ({exc})") from None
    return out


def _cmdline(proc: psutil.Process, suite_cell: bool) -> list[str]:
    words = proc.cmdline()
    # the suite's code runs under the cell's command line: not the harness's own
    return [f"{w}[suite]" if suite_cell and w == _CELL_TOKEN else w for w in words]


def entry_of(pid: int, exe: str | None = None) -> str | None:
    """The function the process's main thread was started to run (harness.watch.classify's
    entry_function), from one `py-spy dump`: processes forked from one parent share a
    command line, and only this tells a producer from its consumer. None without py-spy."""
    exe = exe or py_spy()
    if exe is None:
        return None
    try:
        done = subprocess.run([exe, "dump", "--json", "--pid", str(pid)], capture_output=True, text=True,
                              timeout=DUMP_TIMEOUT_S, check=False)  # fmt: skip
        threads = json.loads(done.stdout) if done.returncode == 0 else []
    except (subprocess.TimeoutExpired, OSError, json.JSONDecodeError):
        return None
    main = next((t for t in threads if t.get("os_thread_id") == pid), threads[0] if threads else None)
    if not main:
        return None
    frames = [
        Frame(str(f.get("name", "")), str(f.get("filename", "")), int(f.get("line") or 0)) for f in main["frames"]
    ]
    return entry_function(frames)


def find_groups(
    root: int, suite_cell: bool, rules: list[GroupRule] | None = None, entries: dict[int, str | None] | None = None
) -> dict[str, list[int]]:
    """Group name -> pids (sorted), for the live processes under `root`; empty groups left out.
    `entries` (pid -> entry function) is a cache: new processes are dumped once and added."""
    entries = {} if entries is None else entries
    procs: dict[int, roles.Proc] = {}
    for proc in tree(root):
        try:
            procs[proc.pid] = roles.Proc(proc.pid, proc.ppid(), _cmdline(proc, suite_cell), proc.create_time())
        except psutil.Error:
            continue
    # one py-spy dump per new process, not for those whose command line says what they are
    new = [
        pid for pid, p in procs.items()
        if pid not in entries and not roles.is_helper(p.cmdline) and roles.ray_title(p.cmdline) is None
    ]  # fmt: skip
    if new:
        exe = py_spy()
        with ThreadPoolExecutor(max_workers=4) as pool:
            entries.update(zip(new, pool.map(lambda pid: entry_of(pid, exe), new), strict=True))
    assigned = roles.assign(procs, entries)
    groups: dict[str, list[int]] = {}
    for pid, proc in sorted(procs.items()):
        line = " ".join(proc.cmdline).replace(f"{_CELL_TOKEN}[suite]", _CELL_TOKEN)
        rule = next((r for r in rules or [] if r.takes(pid, line)), None)
        if rule is not None:
            groups.setdefault(rule.name, []).append(pid)
            continue
        role = assigned.get(pid)
        if role is None or role in roles.IGNORED:
            continue
        title = roles.ray_title(proc.cmdline)
        if title is not None:  # a Ray actor (or task): its class names its group
            role = title if title not in roles.ROLES else f"ray:{title}"
        elif role == roles.CHILDREN:  # processes started for different jobs: one group per job
            role = _job_name(entries.get(pid), proc.cmdline)
        groups.setdefault(role, []).append(pid)
    return groups


def _job_name(entry: str | None, cmdline: list[str]) -> str:
    """A children group's name: the function its processes run, else their program's name."""
    name = (entry or "").rpartition(".")[2].strip("<>") or _program_name(cmdline[1:])
    if not name:
        return roles.CHILDREN
    return name if name not in roles.ROLES else f"{roles.CHILDREN}:{name}"


_IMPORTED = re.compile(r"\bfrom\s+([\w.]+)\s+import\b|\bimport\s+([\w.]+)")


def _program_name(words: list[str]) -> str | None:
    """What an interpreter's arguments run: `-m MODULE`'s last part, the module that `-c CODE`
    imports first (a multiprocessing child, `-c 'from multiprocessing.spawn import
    spawn_main; ...'`, is `spawn`: rl_zoo3's env workers were named `site-packages']})`, a
    fragment of that code), else the first word that is not an option, by its file name."""
    for i, word in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else ""
        if word == "-m" and following:
            return following.rpartition(".")[2]
        if word == "-c":
            found = _IMPORTED.search(following)
            return (found.group(1) or found.group(2)).rpartition(".")[2] if found else None
        if not word.startswith("-"):
            return word.rstrip("/").rsplit("/", 1)[-1] or None
    return None
