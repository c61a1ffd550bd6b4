"""py-spy, two ways: stack dumps of a hung cell's processes, and a sampled profile of one cell;
and the one function that finds py-spy (`py_spy`), which every caller uses.

Both use py-spy's own CLI (`py-spy dump`, `py-spy record`); nothing here samples stacks
itself. py-spy is looked for on PATH, then beside the running interpreter and beside the
harness's own executable: a user who runs `VENV/bin/harness` without activating the venv
has the py-spy that pip put in the same bin/, and PATH alone missed it (every cell had 0
stack samples, and the terminal said only "0 samples"). py-spy reads another process's memory, so it needs ptrace permission: as root,
or with `kernel.yama.ptrace_scope` 0 for processes of the same user, or a container run
with `--cap-add SYS_PTRACE`. Where it cannot attach, the dump file says why and the cell
is killed all the same.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

from harness.runs.files import write_atomic
from harness.runs.store import RunStore

STACKS_DIR = "stacks"
PROFILES_DIR = "profiles"
DUMP_TIMEOUT_S = 10.0
DUMP_PARALLEL = 4  # py-spy pauses each target briefly; a few at a time keeps 128 workers fast
PTRACE_HINT = (
    "py-spy needs ptrace permission: run as root, set kernel.yama.ptrace_scope=0, "
    "or give the container SYS_PTRACE (docker run --cap-add SYS_PTRACE)"
)


def py_spy_places() -> list[str]:
    """Where py-spy is looked for after PATH: the running interpreter's folder (a venv's bin/,
    not resolved: its python is a link to the base interpreter), the folder that link points
    to, and the folder of the harness's own executable (sys.argv[0]: `VENV/bin/harness`)."""
    places = [os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable))]
    if sys.argv and sys.argv[0] and os.sep in sys.argv[0]:
        places.append(os.path.dirname(os.path.abspath(sys.argv[0])))
    return [p for p in dict.fromkeys(places) if p]


def py_spy() -> str | None:
    """py-spy's path: on PATH, else beside the interpreter or the harness (py_spy_places);
    None when it is nowhere (`missing_py_spy()` says where it was looked for)."""
    found = shutil.which("py-spy")
    for place in py_spy_places():
        found = found or shutil.which("py-spy", path=place)
    return found


def missing_py_spy() -> str:
    """Why py-spy is missing and the fix, naming where it was looked for."""
    where = ", ".join(py_spy_places())
    return (
        f"py-spy was not found on PATH nor beside the interpreter or the harness ({where}): install it into "
        f"the environment the harness runs from ({sys.executable} -m pip install py-spy) or put it on PATH"
    )


def dump_stacks(procs: list[psutil.Process], store: RunStore, key: str) -> str | None:
    """`py-spy dump` every process into stacks/<key>.txt; returns its path in the run dir.

    This is the runner's default deadline hook: it runs before the kill, while the
    hung processes still sit where they hang.
    """
    path = store.root / STACKS_DIR / f"{key}.txt"
    path.parent.mkdir(exist_ok=True)
    exe = py_spy()
    if exe is None:
        sections = [f"no stacks were dumped: {missing_py_spy()}"]
    elif not procs:
        sections = ["no live process of the cell was found at the deadline"]
    else:
        with ThreadPoolExecutor(max_workers=DUMP_PARALLEL) as pool:
            sections = list(pool.map(lambda proc: _dump_one(exe, proc), procs))
    head = f"stack dump of cell {key} at its deadline ({len(procs)} processes)\n\n"
    write_atomic(path, head + "\n\n".join(sections), "the stack dump")
    return store.relative(path)


def _command_line(proc: psutil.Process) -> str:
    """The process's command line, or its name while the kernel still shows an empty one.

    A process caught mid-exec (just spawned) reads an empty /proc/<pid>/cmdline for a moment;
    its name is then the best label there is.
    """
    try:
        return " ".join(proc.cmdline())[:200] or proc.name()
    except psutil.Error:
        return "?"


def _dump_one(exe: str, proc: psutil.Process) -> str:
    try:
        done = subprocess.run(
            [exe, "dump", "--pid", str(proc.pid)],
            capture_output=True,
            text=True,
            timeout=DUMP_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return _failed(proc, f"py-spy dump did not answer within {DUMP_TIMEOUT_S:g} s")
    except OSError as exc:
        return _failed(proc, f"py-spy could not be started: {exc}")
    if done.returncode == 0:
        return f"=== pid {proc.pid}\n{done.stdout.rstrip()}"  # py-spy prints the command line itself
    return _failed(proc, f"py-spy could not dump this process: {_why(done.stderr)}")


def _failed(proc: psutil.Process, why: str) -> str:
    """A section for a process py-spy could not dump; its command line is read now, after the try."""
    return f"=== pid {proc.pid}: {_command_line(proc)}\n{why}"


def _why(stderr: str) -> str:
    """py-spy's first error line, with the remedy when it is a permission problem."""
    lines = [line for line in stderr.splitlines() if line.strip() and not line.lstrip()[:1].isdigit()]
    first = next((line for line in lines if line.startswith("Error")), lines[0] if lines else "no message")
    text = first.removeprefix("Error: ").strip()
    if "ermission" in stderr or "ptrace" in stderr.lower():
        return f"{text} ({PTRACE_HINT})"
    return text


def profile_paths(store: RunStore, key: str) -> dict[str, Path]:
    folder = store.root / PROFILES_DIR
    folder.mkdir(exist_ok=True)
    return {"speedscope": folder / f"{key}.speedscope.json", "flamegraph": folder / f"{key}.svg"}


def record_command(exe: str, fmt: str, output: Path, rate: int, native: bool) -> list[str]:
    """`py-spy record` of a command and every process it starts (the cell's workers)."""
    command = [exe, "record", "--subprocesses", "--format", fmt, "--output", str(output), "--rate", str(rate)]
    return command + (["--native"] if native else []) + ["--"]
