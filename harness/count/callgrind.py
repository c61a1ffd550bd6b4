"""Valgrind's callgrind as the counter: where it is, how a program is run under it, and
what its output files say.

A counted program runs as `setarch ARCH -R valgrind --tool=callgrind ... PROGRAM`: ASLR off
(setarch -R: the same addresses every run, so hash tables and allocators take the same
paths), instrumentation off at start (`--instr-atstart=no`: the interpreter's start-up runs
about 4x slower instead of 50-100x, and is not counted), every process of the program
traced (`--trace-children=yes`: `python3` on a PATH may be a shell shim that execs the
interpreter, and workers started by exec are processes of the program), no cache or branch
simulation (instructions only), one output file per process and dump
(`--callgrind-out-file=DIR/cg.%p`: `cg.PID.N` for the N-th dump, `cg.PID` at its exit).

A dump file holds the costs since the last dump: its `summary:` line (or `totals:`) is the
process's instructions in that stretch, its `desc: Trigger:` line what asked for it
(`Client Request: middle`), and its `fn=` blocks each function's own cost (named with the
shared object it is in), which the per-function diff of two sides reads.
"""

from __future__ import annotations

import platform
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import UserError

PACKAGE = "valgrind"  # Debian's and Ubuntu's package, also Fedora's and Homebrew's (Linux)
_DUMP_NAME = re.compile(r"^cg\.(?P<pid>\d+)(?:\.(?P<part>\d+))?$")


def tools() -> dict[str, str]:
    """{valgrind, callgrind_control, setarch}: their paths, or a UserError naming the package."""
    found = {name: shutil.which(name) for name in ("valgrind", "callgrind_control", "setarch")}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        package = "util-linux" if missing == ["setarch"] else PACKAGE
        raise UserError(
            f"counting instructions needs {', '.join(missing)}, not found on PATH: install the package "
            f"`{package}` (Debian/Ubuntu: sudo apt-get install {package}), or measure time (--measure time)"
        )
    if platform.machine().lower() not in ("x86_64", "amd64"):
        raise UserError(
            f"counting instructions marks the program's progress with valgrind's x86-64 client request; "
            f"this machine is {platform.machine()}: measure time (--measure time)"
        )
    return {name: path for name, path in found.items() if path is not None}


def command(argv: list[str], out_dir: Path, found: dict[str, str]) -> list[str]:
    """The program's command line under callgrind (the module's docstring says why each flag)."""
    return [
        found["setarch"], platform.machine(), "-R",
        found["valgrind"], "--tool=callgrind", "--instr-atstart=no", "--trace-children=yes",
        "--cache-sim=no", "--branch-sim=no", "--dump-instr=no", "--dump-line=no", "--compress-strings=no",
        f"--callgrind-out-file={out_dir / 'cg.%p'}", "--log-file=" + str(out_dir / "valgrind.%p.log"),
        *argv,
    ]  # fmt: skip


@dataclass
class Dump:
    """One callgrind output file: a process's costs over one stretch."""

    path: Path
    pid: int
    part: int | None  # the dump's number; None: the file written at the process's exit
    trigger: str  # what asked for it: "Client Request: middle", "Program termination", ...
    instructions: int
    command: str = ""
    costs: dict[str, int] = field(default_factory=dict)  # "function (object)" -> its own instructions


def dumps(out_dir: Path, with_costs: bool = False) -> list[Dump]:
    """Every dump in `out_dir`, ordered by process and dump number."""
    found = []
    for path in out_dir.iterdir():
        m = _DUMP_NAME.match(path.name)
        if m is None:
            continue
        found.append(read_dump(path, int(m["pid"]), int(m["part"]) if m["part"] else None, with_costs))
    return sorted(found, key=lambda d: (d.pid, d.part if d.part is not None else 1 << 30))


def read_dump(path: Path, pid: int, part: int | None, with_costs: bool = False) -> Dump:
    """A dump's header (its trigger, its total) and, `with_costs`, each function's own cost."""
    trigger, command_line, total = "", "", None
    costs: dict[str, int] = {}
    names: dict[str, str] = {}  # compressed names: "(12)" -> its name
    fn = ob = None
    skip_next = False  # the line after `calls=` is the call's inclusive cost, not the caller's own
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("desc: Trigger:"):
                trigger = line.split(":", 2)[2].strip()
            elif line.startswith("cmd:"):
                command_line = line[4:].strip()
            elif line.startswith(("summary:", "totals:")):
                total = int(line.split()[1]) if total is None or line.startswith("summary:") else total
            elif not with_costs:
                continue
            elif line.startswith("fn="):
                fn = _name(line[3:].strip(), names)
                fn = f"{fn} ({Path(ob).name})" if ob else fn
            elif line.startswith("ob="):
                ob = _name(line[3:].strip(), names)
            elif line.startswith(("cfn=", "cfi=", "cfl=", "cob=", "fl=", "fi=", "fe=")):
                _name(line.split("=", 1)[1].strip(), names)  # a compressed name is defined where first used
            elif line.startswith("calls="):
                skip_next = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                if skip_next:
                    skip_next = False
                elif fn is not None:
                    parts = line.split()
                    if len(parts) >= 2:
                        costs[fn] = costs.get(fn, 0) + int(parts[1])
    return Dump(path, pid, part, trigger, total or 0, command_line, costs)


def _name(text: str, names: dict[str, str]) -> str:
    """A name as written, `(id) name` defining a compressed one and `(id)` using it."""
    if text.startswith("("):
        ident, _, rest = text.partition(")")
        key = ident + ")"
        if rest.strip():
            names[key] = rest.strip()
        return names.get(key, text)
    return text
