"""A cell's processes: the environment that marks them, finding them, ending them.

The child of every cell (`python -m harness.cell`) leads its own session and process
group, so the whole tree it starts can be ended with one `killpg`; processes that escaped
the group (a double fork, a `setsid`) still carry the markers HARNESS_CELL and HARNESS_RUN
in their environment and are found by `marked_processes`. Nothing here knows what a cell
runs; the runner, the sweep and `harness watch`-style tools build on it.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil

KILL_GRACE_S = 3.0
ENV_CELL = "HARNESS_CELL"
ENV_RUN = "HARNESS_RUN"
_PR_SET_PDEATHSIG = 1
LOG_TAIL_LINES = 5
# the directory holding the `harness` package (harness/cell/processes.py: three levels up), put
# on a child's PYTHONPATH so that it runs this harness whatever its working directory holds
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def child_env(cell_key: str | None = None, run_root: Path | None = None) -> dict[str, str]:
    """The child imports the same harness and suites as this process, wherever it runs.

    Every process of the cell inherits the markers HARNESS_CELL=<id>-<repeat> and
    HARNESS_RUN=<run directory>, so one that left the cell's process group and tree (a
    double fork with setsid) is still found and killed (`marked_processes`)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    if cell_key is not None:
        env[ENV_CELL] = cell_key
    if run_root is not None:
        env[ENV_RUN] = str(run_root.resolve())
    return env


def ask_death_signal(sig: int) -> bool:
    """Ask the kernel to send this process `sig` when the thread that forked it exits
    (PR_SET_PDEATHSIG, Linux); False where it cannot."""
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, sig) == 0
    except (OSError, AttributeError):
        return False


def die_with_owner() -> None:
    """Called first in a cell's child: when the process that launched it dies, even by
    SIGKILL (which leaves nothing to clean up), the cell's whole process group goes too.

    The kernel sends the child SIGCONT when its parent dies (PR_SET_PDEATHSIG): SIGCONT
    because an A/B leaves one side's group stopped between slices, and a stopped process
    runs no handler; a SIGKILL death signal would take the leader but leave its workers.
    The handler kills the group once the parent it started with is gone (the harness, or the
    py-spy that `harness profile` puts between them), and ignores the SIGCONTs an A/B sends
    every slice. Linux only; outside a harness cell (no HARNESS_CELL) it does nothing."""
    if ENV_CELL not in os.environ or not hasattr(signal, "SIGCONT") or not Path("/proc/self").exists():
        return
    leader, owner = os.getpid(), os.getppid()

    def owner_gone(*_: object) -> None:
        # a forked worker inherits the handler; its parent is the leader, not the owner
        if os.getpid() == leader and os.getppid() != owner:
            os.killpg(os.getpgrp(), signal.SIGKILL)

    signal.signal(signal.SIGCONT, owner_gone)
    if not ask_death_signal(signal.SIGCONT):
        return
    if owner == 1:  # orphaned before it could ask: the launcher is already gone
        os.killpg(os.getpgrp(), signal.SIGKILL)


def marked_processes(run_root: Path, cell_key: str | None = None) -> dict[int, psutil.Process]:
    """Live processes carrying this run's marker (and this cell's, if given), wherever
    they are in the process tree. Processes whose environment cannot be read (other
    users') are not ours."""
    run = str(run_root.resolve())
    found: dict[int, psutil.Process] = {}
    me = os.getpid()
    for proc in psutil.process_iter():
        try:
            if proc.pid == me:
                continue
            env = proc.environ()
            if env.get(ENV_RUN) != run or (cell_key is not None and env.get(ENV_CELL) != cell_key):
                continue
            if proc.status() != psutil.STATUS_ZOMBIE:
                found[proc.pid] = proc
        except psutil.Error:
            pass
    return found


def tree(root_pid: int) -> list[psutil.Process]:
    """The root and every live descendant (empty when the root is gone)."""
    try:
        root = psutil.Process(root_pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def describe_processes(procs: list[psutil.Process]) -> str:
    parts = []
    for proc in procs:
        try:
            name = proc.name()
        except psutil.Error:
            name = "?"
        parts.append(f"pid {proc.pid} ({name})")
    return ", ".join(parts)


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        hint = " (out of memory?)" if name == "SIGKILL" else ""
        return f"killed by {name}{hint}"
    return f"exited with code {returncode}"


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The log's last lines; after a crash in native code, faulthandler's report instead
    (its first lines hold the innermost frames, where the crash happened)."""
    try:
        return log_tail_of(path.read_text(errors="replace"), lines)
    except OSError:
        return ""


def log_tail_of(output: str, lines: int = LOG_TAIL_LINES) -> str:
    """log_tail of text already read (a cell's output held in memory)."""
    text = output.rstrip().splitlines()
    fatal = next((i for i, line in enumerate(text) if line.startswith("Fatal Python error")), None)
    if fatal is not None:
        frames = [line.strip() for line in text[fatal + 1 :] if line.strip().startswith("File ")]
        return " | ".join([text[fatal], *frames[: lines - 1]])
    return " | ".join(text[-lines:])


def kill_tree(pgid: int | None, known: dict[int, psutil.Process], grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM the process group and every known descendant, then SIGKILL what is left.

    Known processes are psutil handles taken while they were the cell's, so a PID reused
    by an unrelated process since then is never signalled (psutil checks creation time).
    """
    procs = alive(known)
    _signal_group(pgid, signal.SIGTERM)
    for proc in procs:
        _signal(proc, signal.SIGTERM)
    still = wait_dead(procs, grace_s)
    _signal_group(pgid, signal.SIGKILL)
    for proc in still + alive(known):
        _signal(proc, signal.SIGKILL)
    wait_dead(alive(known), grace_s)


def wait_dead(procs: list[psutil.Process], timeout_s: float, poll_s: float = 0.01) -> list[psutil.Process]:
    """Wait until none of `procs` is alive (zombies count as dead); returns the survivors.

    Not psutil.wait_procs: it waits for a zombie to be reaped, and a worker orphaned by
    its dead parent is reaped by init whenever init gets to it, which cost every kill the
    whole grace period."""
    deadline = time.monotonic() + timeout_s
    still = alive({p.pid: p for p in procs})
    while still and time.monotonic() < deadline:
        time.sleep(poll_s)
        still = alive({p.pid: p for p in still})
    return still


def alive(known: dict[int, psutil.Process]) -> list[psutil.Process]:
    out = []
    for proc in known.values():
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except psutil.Error:
            pass
    return out


def _signal_group(pgid: int | None, sig: int) -> None:
    if pgid is None:
        return
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _signal(proc: psutil.Process, sig: int) -> None:
    try:
        proc.send_signal(sig)
    except psutil.Error:
        pass
