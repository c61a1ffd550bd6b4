"""One counted run: the program under callgrind, its instructions counted between two marks
of its own progress, in two halves, per process.

The program starts with instrumentation off (harness.count.callgrind) and the marking hook
on its PYTHONPATH (harness/count/hook/sitecustomize.py). Every line it writes with a digit
in it comes over a Unix socket while the writing process waits; the line is read as the
time A/B reads progress (harness.readers: a Feed into a quiet Probe, the headline counter's
total after the line; the harness's own JSON lines, a suite's probe's among them, applied
as the command suite applies them) and answered:

    warm-up     the first `warmup_lines` lines that advanced the counter go by;
    start       at the next one (or, with a plan from an earlier run, the first at or past
                its `start_at` total): instrumentation on, in the writing process from
                inside, in the program's other processes by callgrind_control;
    middle      at the first line `half` units on: a dump of every process (the first half);
    end         `half` units further: a dump again (the second half); the program is ended.

A plan without `half` chooses it in this run: the first line at least `min_half_lines`
advancing lines and `min_half_s` seconds after the start. A side's later runs, and the
other side's, reuse the first run's plan, so every run counts the same units where the
program reports at the same points.

The writing process's halves are exact (its marks are inside it). Another process's are
not: callgrind_control reaches it when it next polls for commands, and how much work it
did meanwhile depends on timing; the per-process counts say how much of a count that is.
A process that starts after the window opened runs uninstrumented and counts nothing; one
that exits inside it is counted up to its exit, in the half it exited in.

`mechanism="outside"` is the alternative the module was chosen against (docs/guide/counting.md):
no hook, the lines read from the program's pipes and every process toggled and dumped by
callgrind_control; kept for benchmarks/count_windows.py, which measures both.
"""

from __future__ import annotations

import os
import platform
import queue
import selectors
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from harness.cell.probe import Probe
from harness.cell.processes import alive, kill_tree, tree
from harness.count import callgrind, hardware
from harness.errors import UserError
from harness.monitors.gpu_use import gpu_use
from harness.monitors.gpu_use import refusal as gpu_refusal
from harness.program.launch import apply_line
from harness.readers import Feed, line_readers
from harness.readers.jsonlines import is_probe_message, parse_object
from harness.running import interrupts

HOOK_DIR = Path(__file__).resolve().parent / "hook"
ENV_SOCKET = "HARNESS_COUNT_SOCKET"
ENV_LAYOUT = "HARNESS_COUNT_LAYOUT"  # the layout a run counts in (the hook's shift_layout; 0: as it is)
HASH_SEED = "0"  # PYTHONHASHSEED of every counted run, unless the user set one
GO_ON, START, MIDDLE, END, LEAVE, DONE = b".", b"S", b"M", b"E", b"X", b"D"  # the hook's protocol
CONTROL_TIMEOUT_S = 60.0
UNMARKED_LINES = 20  # lines with a digit in the program's output, none through the hook: not markable


class CountFailed(Exception):
    """A counted run gave no count; the message says why (and whose fault)."""


@dataclass
class Plan:
    """Where a counted run's window lies, in the program's own units."""

    warmup_lines: int = 1  # lines that advanced the counter before the window may open
    start_at: float | None = None  # the counter's total at which it opens (an earlier run's)
    half: float | None = None  # units in each half; None: chosen by this run
    min_half_lines: int = 1
    min_half_s: float = 2.0
    timeout_s: float = 600.0  # the whole run, start-up included

    def to_json(self) -> dict[str, Any]:
        return {"warmup_lines": self.warmup_lines, "start_at": self.start_at, "half": self.half}


@dataclass
class ProcessCount:
    pid: int
    command: str
    halves: tuple[int, int]
    marked: bool  # it wrote the marks: its halves are exact
    how: str = "dumped at both marks"  # or: exited in the first / second half, started in the window

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "command": self.command, "halves": list(self.halves), "marked": self.marked,
                "how": self.how}  # fmt: skip


@dataclass
class Counted:
    """What one counted run measured."""

    label: str
    counter: str
    units: tuple[float, float]
    processes: list[ProcessCount]
    wall_s: float
    plan: Plan
    mechanism: str = "inside"
    notes: list[str] = field(default_factory=list)
    tool: str = "callgrind"  # what counted: callgrind, or "perf" (hardware counters: harness.count.hardware)
    layout: int = 0  # the memory layout it counted in (ENV_LAYOUT)

    @property
    def halves(self) -> tuple[int, int]:
        return (sum(p.halves[0] for p in self.processes), sum(p.halves[1] for p in self.processes))

    @property
    def per_unit(self) -> float:
        """Instructions per unit over the whole window, every process summed: the estimand."""
        return sum(self.halves) / sum(self.units) if sum(self.units) else 0.0

    @property
    def halves_per_unit(self) -> tuple[float, float]:
        return (self.halves[0] / max(self.units[0], 1e-9), self.halves[1] / max(self.units[1], 1e-9))

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "counter": self.counter,
            "window_units": list(self.units),
            "instructions": list(self.halves),
            "per_unit": self.per_unit,
            "halves_per_unit": list(self.halves_per_unit),
            "wall_s": self.wall_s,
            "plan": self.plan.to_json(),
            "mechanism": self.mechanism,
            "tool": self.tool,
            "layout": self.layout,
            "processes": [p.to_json() for p in self.processes],
            "notes": self.notes,
        }


class _QuietProbe(Probe):
    def warn(self, message: str) -> None:
        self._warnings.append(message)


class _Marks:
    """The window's state machine over the program's progress lines."""

    def __init__(self, plan: Plan, progress: str = "") -> None:
        self.plan = plan
        self.probe = _QuietProbe(duration_s=None)
        lines = line_readers(progress)
        self.feed = Feed(self.probe, lines, clock=self.probe.now)
        self.state = "warm-up"
        self.advancing = 0
        self.last: dict[str, float] = {}  # each counter's total at its last line
        self.counter: str | None = None
        self.totals: list[float] = []  # at the start, the middle, the end
        self.marker: int | None = None
        self.started_at = 0.0
        self.half: float | None = plan.half
        self.lines_since = 0
        self.own: str | None = None  # the counter of the harness's own JSON lines, the first they count
        self.seen = 0  # lines the hook sent

    def line(self, pid: int, text: str) -> bytes:
        """The answer to one progress line of process `pid`."""
        self.seen += 1
        if self.state == "done":
            return LEAVE
        message = parse_object(text)
        if message is not None and is_probe_message(message):  # the harness's own JSON lines (a suite's probe's)
            apply_line(self.probe, message)
            self.own = self.own or next(iter(message.get("count", {})), None)
            counter = self.own
        else:
            self.feed.line(text)
            counter = self.feed.headline or self.own
        if counter is None:
            return GO_ON
        if self.counter is not None and counter != self.counter:
            raise CountFailed(
                f"the program's headline counter changed from {self.counter} to {counter} inside the window; "
                "name the one to count with --progress NAME=REGEX"
            )
        total = self.probe.total(counter)
        advanced = total > self.last.get(counter, 0.0)  # a finer counter may take the headline in the warm-up
        self.last[counter] = max(self.last.get(counter, 0.0), total)
        if not advanced:
            return GO_ON
        now = time.monotonic()
        if self.state == "warm-up":
            self.advancing += 1
            due = self.plan.start_at is None or total >= self.plan.start_at
            if self.advancing > self.plan.warmup_lines and due:
                self.counter, self.marker, self.started_at = counter, pid, now
                self.totals, self.lines_since, self.state = [total], 0, "first half"
                return START
            return GO_ON
        self.lines_since += 1
        if self.state == "first half":
            if self.half is None:
                long_enough = now - self.started_at >= self.plan.min_half_s
                if self.lines_since < self.plan.min_half_lines or not long_enough:
                    return GO_ON
                self.half = total - self.totals[0]
            elif total - self.totals[0] < self.half:
                return GO_ON
            self.totals.append(total)
            self.state = "second half"
            return MIDDLE
        if self.state == "second half" and self.half is not None and total - self.totals[1] >= self.half:
            self.totals.append(total)
            self.state = "done"
            return END
        return GO_ON


def counted_run(
    argv: list[str],
    cwd: Path,
    out_dir: Path,
    plan: Plan,
    label: str,
    env_extra: dict[str, str] | None = None,
    progress: str = "",
    mechanism: str = "inside",
    found: dict[str, str] | None = None,
    tool: str = "callgrind",
    event: tuple[int, int] | None = None,
    layout: int = 0,
) -> Counted:
    """Run `argv` in `cwd` until its window closes; its counts, in memory layout `layout`
    (0: the program's own; k: the hook's shift_layout(k) before its first import). `out_dir` receives the dumps
    and the program's output (output.log). `tool`: "callgrind" (the program under
    valgrind), "perf" (natively, hardware counters opened on its processes at the marks:
    harness.count.hardware; `event` another event to count, for tests), "warm" (under
    valgrind, nothing counted: a pilot that finds where the window lies, its plan, and leaves
    the caches a counted run reads as the counted runs will find them) or "none" (natively,
    nothing counted)."""
    if tool in ("perf", "none"):
        found = found or {"setarch": shutil.which("setarch") or ""}
    else:
        found = found or callgrind.tools()
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("cg.*"):
        old.unlink()
    marks = _Marks(plan, progress)
    scratch = Path(tempfile.mkdtemp(prefix="hcount-"))  # short: a socket's path holds 107 bytes
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env_extra or {})}
    env.setdefault("PYTHONHASHSEED", HASH_SEED)
    listener = None
    if mechanism == "inside":
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(scratch / "s"))
        listener.listen(64)
        env[ENV_SOCKET] = str(scratch / "s")
        env[ENV_LAYOUT] = str(layout)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HOOK_DIR), env.get("PYTHONPATH")) if p)
    log = (out_dir / "output.log").open("w", encoding="utf-8", errors="replace")
    started = time.monotonic()
    valgrind = tool in ("callgrind", "warm")
    command = callgrind.command(argv, out_dir, found) if valgrind else native_command(argv, found)
    try:
        proc = subprocess.Popen(
            command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        log.close()
        if listener is not None:
            listener.close()
        shutil.rmtree(scratch, ignore_errors=True)
        raise CountFailed(f"cannot start {argv[0]!r} to count it: {exc.strerror or exc}") from None
    lines: queue.Queue = queue.Queue()
    numbered = [0]
    pump = threading.Thread(target=_pump, args=(proc.stdout, log, lines, mechanism == "outside", numbered), daemon=True)
    pump.start()
    known: dict[int, psutil.Process] = {}
    counters = hardware.Counters(event or hardware.INSTRUCTIONS) if tool == "perf" else None

    def act(answer: bytes, marker: int | None) -> None:
        """A mark in the processes the hook does not count: all of them with hardware counters."""
        known.update({p.pid: p for p in tree(proc.pid)})
        if answer == START:  # a GPU's work is not counted: refused (harness.monitors.gpu_use)
            use, _ = gpu_use(p.pid for p in alive(known))
            if use is not None:
                raise UserError(gpu_refusal(use, "its work on the device is invisible to an instruction counter"))
        if tool in ("none", "warm"):
            return
        if counters is None:
            _control(found, answer, _counted_pids(known, marker))
        elif answer == START:
            counters.start([p.pid for p in alive(known)])
        else:
            counters.read()

    try:
        _serve(proc, listener, lines, marks, plan, act, started, numbered)
    finally:
        known.update({p.pid: p for p in tree(proc.pid)})
        kill_tree(proc.pid, known, grace_s=2.0)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        pump.join(timeout=10)  # the pipe's end: the pump closes the log (a child still holding it: not waited for)
        if listener is not None:
            listener.close()
        shutil.rmtree(scratch, ignore_errors=True)
        if counters is not None:
            counters.close()
    wall = time.monotonic() - started
    marker = marks.marker if mechanism == "inside" else None
    if counters is not None:
        counts = _hardware_counts(counters, known, marker)
    else:
        counts = _counts(out_dir, marker) if tool == "callgrind" else []
    units = (marks.totals[1] - marks.totals[0], marks.totals[2] - marks.totals[1])
    result = Counted(label, marks.counter or "", units, counts, wall, _plan_of(plan, marks), mechanism)
    result.tool, result.layout = tool, layout
    if not any(p.marked for p in counts) and mechanism == "inside":
        result.notes.append("the process that wrote the marks left no count of the window")
    return result


def native_command(argv: list[str], found: dict[str, str]) -> list[str]:
    """The program run natively, ASLR off where setarch is there (as under callgrind)."""
    return [found["setarch"], platform.machine(), "-R", *argv] if found.get("setarch") else list(argv)


def _hardware_counts(
    counters: hardware.Counters, known: dict[int, psutil.Process], marker: int | None
) -> list[ProcessCount]:
    out = []
    for pid in sorted(counters.readings):
        try:
            command = " ".join(known[pid].cmdline()) if pid in known else str(pid)
        except psutil.Error:
            command = str(pid)
        out.append(ProcessCount(pid, command, counters.halves(pid), pid == marker, "counted at both marks"))
    for pid, why in sorted(counters.failed.items()):
        out.append(ProcessCount(pid, str(pid), (0, 0), pid == marker, f"counted nothing: {why}"))
    return out


def _plan_of(plan: Plan, marks: _Marks) -> Plan:
    """The plan as this run carried it out: what a later run reuses."""
    return Plan(plan.warmup_lines, marks.totals[0], marks.half, plan.min_half_lines, plan.min_half_s, plan.timeout_s)


def _pump(stream, log, lines: queue.Queue, forward: bool, numbered: list[int]) -> None:
    """The program's output into its log (and, read from outside, to the marks);
    `numbered[0]` counts its lines with a digit (the lines the hook should have sent)."""
    with log:
        for line in iter(stream.readline, ""):
            log.write(line)
            if any(c.isdigit() for c in line):
                numbered[0] += 1
            if forward:
                lines.put(line.rstrip("\n"))
    lines.put(None)


def _serve(
    proc: subprocess.Popen,
    listener: socket.socket | None,
    lines: queue.Queue,
    marks: _Marks,
    plan: Plan,
    act: Callable[[bytes, int | None], None],
    started: float,
    numbered: list[int],
) -> None:
    """Answer the program's lines until the window closes; CountFailed when it cannot."""
    sel = selectors.DefaultSelector()
    if listener is not None:
        sel.register(listener, selectors.EVENT_READ, None)
    pending: dict[socket.socket, bytes] = {}
    try:
        while marks.state != "done":
            interrupts.check()  # Ctrl-C and SIGTERM act between lines (harness.running.interrupts)
            if time.monotonic() - started > plan.timeout_s:
                raise CountFailed(_short(marks, plan, f"did not close its window within {plan.timeout_s:g} s"))
            if listener is None:  # outside: the lines from the pipe
                try:
                    line = lines.get(timeout=0.05)
                except queue.Empty:
                    line = ""
                if line is None:
                    raise CountFailed(_short(marks, plan, f"exited (code {proc.wait()}) before its window closed"))
                if line:
                    answer = marks.line(proc.pid, line)
                    if answer in (START, MIDDLE, END):
                        act(answer, None)
                continue
            for key, _ in sel.select(timeout=0.05):
                if key.data is None:
                    conn, _ = listener.accept()
                    sel.register(conn, selectors.EVENT_READ, b"")
                    continue
                conn = key.fileobj
                data = conn.recv(65536)
                if not data:
                    sel.unregister(conn)
                    conn.close()
                    continue
                buffer = pending.get(conn, b"") + data
                *complete, pending[conn] = buffer.split(b"\n")
                for raw in complete:
                    pid_text, _, text = raw.decode("utf-8", "replace").partition(" ")
                    pid = int(pid_text) if pid_text.isdigit() else 0
                    answer = marks.line(pid, text)
                    if answer in (START, MIDDLE, END):  # the others while the marking process waits
                        act(answer, pid)
                    conn.sendall(answer)
                    if answer in (START, MIDDLE, END):
                        _carried_out(conn, answer)
            if proc.poll() is not None and marks.state != "done":
                raise CountFailed(_short(marks, plan, f"exited (code {proc.returncode}) before its window closed"))
            if numbered[0] >= UNMARKED_LINES and marks.seen == 0:
                raise CountFailed(
                    f"the program wrote {numbered[0]} lines with numbers, none of them through Python's sys.stdout or "
                    "sys.stderr, where the counted run marks its progress (a program not in Python, or one that "
                    "writes to its file descriptors itself): counts can be windowed in a Python program's "
                    "progress only; measure time (--measure time)"
                )
    finally:
        for key in list(sel.get_map().values()):
            if key.data is not None:
                key.fileobj.close()
        sel.close()


def _carried_out(conn: socket.socket, answer: bytes) -> None:
    """Wait for the hook to say it did what `answer` asked (a dump takes a moment): the
    program is ended only after its last dump."""
    conn.settimeout(CONTROL_TIMEOUT_S)
    try:
        if conn.recv(1) != DONE:
            raise CountFailed(f"the marking process did not confirm its {answer.decode()} request")
    except (TimeoutError, OSError) as exc:
        raise CountFailed(f"the marking process did not confirm its {answer.decode()} request: {exc}") from None
    finally:
        conn.settimeout(None)


def _short(marks: _Marks, plan: Plan, what: str) -> str:
    where = {
        "warm-up": f"{marks.advancing} progress line(s) of the {plan.warmup_lines + 1} before the window seen",
        "first half": "in the window's first half",
        "second half": "in the window's second half",
    }.get(marks.state, marks.state)
    if marks.feed.headline is None and marks.own is None:
        named = "name the counter its lines show with --progress 'NAME=REGEX', e.g. 'trials=Trial (\\d+) finished'"
        grew = marks.feed.growing.advice()
        where = f"no progress counter read from the {marks.seen} line(s) with a digit it wrote yet; {grew or named}"
    return f"the program {what} ({where})"


def _counted_pids(known: dict[int, psutil.Process], marker: int | None) -> list[int]:
    """The program's processes running under callgrind, less the one that marks from inside."""
    pids = []
    for proc in alive(known):
        try:
            if os.path.basename(proc.exe()).startswith("callgrind-") and proc.pid != marker:
                pids.append(proc.pid)
        except psutil.Error:
            continue
    return pids


def _control(found: dict[str, str], answer: bytes, pids: list[int]) -> None:
    """What the answer does in the processes the hook cannot reach, by callgrind_control."""
    if not pids:
        return
    what = {START: ["-i", "on"], MIDDLE: ["--dump=middle"], END: ["--dump=end"]}[answer]
    try:
        subprocess.run(
            [found["callgrind_control"], *what, *map(str, pids)],
            capture_output=True, timeout=CONTROL_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        pass


def _counts(out_dir: Path, marker: int | None) -> list[ProcessCount]:
    """Each process's instructions in the two halves, from its dumps."""
    by_pid: dict[int, list[callgrind.Dump]] = {}
    for dump in callgrind.dumps(out_dir):
        by_pid.setdefault(dump.pid, []).append(dump)
    out = []
    for pid, found in sorted(by_pid.items()):
        middle = next((d for d in found if d.trigger.endswith("middle")), None)
        end = next((d for d in found if d.trigger.endswith("end")), None)
        final = next((d for d in found if d.part is None or "termination" in d.trigger.lower()), None)
        command = found[0].command
        if middle is not None and end is not None:
            out.append(ProcessCount(pid, command, (middle.instructions, end.instructions), pid == marker))
        elif middle is not None:
            tail = final.instructions if final is not None and final is not middle else 0
            out.append(
                ProcessCount(pid, command, (middle.instructions, tail), pid == marker, "exited in the second half")
            )
        elif final is not None and final.instructions:
            out.append(ProcessCount(pid, command, (final.instructions, 0), pid == marker, "exited in the first half"))
        else:
            out.append(ProcessCount(pid, command, (0, 0), pid == marker, "counted nothing in the window"))
    return out
