"""Running Cells, each in a fresh interpreter in its own process session.

The child (`python -m harness.cell`) is the leader of a new session and process group, so
the whole tree it starts can be ended with one `killpg`; processes that escaped the group
(a double fork, a `setsid`) are found through the monitors' record of every PID seen and
killed too. At the deadline the group gets SIGTERM, then SIGKILL after a grace period,
and the cell is recorded as `timeout`. Nothing of a cell outlives it.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from harness.matrix import Cell
from harness.monitors import Monitor, MonitorResult, default_monitors
from harness.profile import dump_stacks
from harness.store import RunStore, utc_now

KILL_GRACE_S = 3.0
ENV_CELL = "HARNESS_CELL"
ENV_RUN = "HARNESS_RUN"
LOG_TAIL_LINES = 5
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)

# Called at a deadline, before anything is killed, with the cell's live processes and the
# store; returns a path (relative to the run directory) of what it saved, or None.
DeadlineHook = Callable[[list[psutil.Process], RunStore, str], "str | None"]
# Turns the child's command line into the one started (e.g. under `py-spy record`), given
# "<id>-<repeat>".
CommandWrap = Callable[[list[str], str], list[str]]


@dataclass
class ChildStream:
    """What the child wrote to its JSON-lines channel."""

    start_wall: float | None = None
    samples: list[dict[str, Any]] = field(default_factory=list)
    points: list[dict[str, Any]] = field(default_factory=list)
    final: dict[str, Any] | None = None

    @classmethod
    def read(cls, path: Path) -> ChildStream:
        stream = cls()
        if not path.exists():
            return stream
        for line in path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a kill
            kind = rec.get("type")
            if kind == "start":
                stream.start_wall = rec["wall"]
            elif kind == "sample":
                stream.samples.append(rec)
            elif kind == "point":
                stream.points.append(rec)
            elif kind in ("result", "error"):
                stream.final = rec
        return stream


def child_env(cell_key: str | None = None, run_root: Path | None = None) -> dict[str, str]:
    """The child imports the same harness and suites as this process, wherever it runs.

    Every process of the cell inherits the markers HARNESS_CELL=<id>-<repeat> and
    HARNESS_RUN=<run directory>, so one that left the cell's process group and tree (a
    double fork with setsid) is still found and killed (`marked_processes`)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    if cell_key is not None:
        env[ENV_CELL] = cell_key
    if run_root is not None:
        env[ENV_RUN] = str(run_root.resolve())
    return env


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
        text = path.read_text(errors="replace").rstrip().splitlines()
    except OSError:
        return ""
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
    procs = _alive(known)
    _signal_group(pgid, signal.SIGTERM)
    for proc in procs:
        _signal(proc, signal.SIGTERM)
    _, still = psutil.wait_procs(procs, timeout=grace_s)
    _signal_group(pgid, signal.SIGKILL)
    for proc in still + _alive(known):
        _signal(proc, signal.SIGKILL)
    psutil.wait_procs(_alive(known), timeout=grace_s)


def _alive(known: dict[int, psutil.Process]) -> list[psutil.Process]:
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


class CellRunner:
    """Runs one cell-repeat and returns its record (the line cells.jsonl gets)."""

    def __init__(
        self,
        store: RunStore,
        monitors: Callable[[], list[Monitor]] = default_monitors,
        on_deadline: DeadlineHook | None = dump_stacks,
        wrap: CommandWrap | None = None,
    ) -> None:
        self.store = store
        self.monitors = monitors
        self.on_deadline = on_deadline
        self.wrap = wrap
        self._current: subprocess.Popen[bytes] | None = None
        self._known: dict[int, psutil.Process] = {}

    def run(self, cell: Cell, repeat: int) -> dict[str, Any]:
        started = utc_now()
        scratch = self.store.root / "series" / f".{cell.id}-{repeat}.jsonl"
        scratch.unlink(missing_ok=True)
        log_path = self.store.log_path(cell.id, repeat)
        spec = json.dumps(
            {
                "suite": cell.suite,
                "params": cell.params,
                "duration": cell.duration,
                "warmup": cell.warmup,
                "work": cell.work,
                "memory_limit_mb": cell.memory_limit_mb,
            }
        )
        key = f"{cell.id}-{repeat}"
        monitors = self.monitors()
        command = [sys.executable, "-m", "harness.cell", spec, str(scratch)]
        if self.wrap is not None:
            command = self.wrap(command, key)
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=child_env(key, self.store.root),
            )
        self._current, self._known = proc, {}
        self._tree(proc.pid)
        for monitor in monitors:
            monitor.start(proc.pid)
        status, reason, dump = "ok", None, None
        escaped = ""
        try:
            try:
                proc.wait(timeout=cell.timeout)
            except subprocess.TimeoutExpired:
                status = "timeout"
                reason = f"no result within the {cell.timeout:g} s deadline; the cell's processes were killed"
                if self.on_deadline is not None:
                    live = _alive({**self._tree(proc.pid), **marked_processes(self.store.root, key)})
                    try:
                        dump = self.on_deadline(live, self.store, key)
                    except Exception as exc:  # noqa: BLE001 - a failed dump must not stop the kill
                        reason += f" (stack dump failed: {type(exc).__name__}: {exc})"
        finally:
            # Ends the tree on every path: deadline, Ctrl-C, and a child that exited but
            # left workers behind.
            kill_tree(proc.pid, self._tree(proc.pid))
            proc.wait()
            results = [m.stop() for m in monitors]
            for result in results:
                for pid, handle in result.processes.items():
                    self._known.setdefault(pid, handle)
            kill_tree(proc.pid, self._known, grace_s=0.5)
            # Whatever is left escaped both the group and the tree the monitors saw.
            marked = {pid: p for pid, p in marked_processes(self.store.root, key).items() if pid != proc.pid}
            if marked:
                psutil.wait_procs(list(marked.values()), timeout=0.3)  # group members still dying
                survivors = _alive(marked)
                if survivors:
                    escaped = describe_processes(survivors)
                    self._known.update(marked)
                    kill_tree(proc.pid, {p.pid: p for p in survivors}, grace_s=0.5)
            self._current = None
        stream = ChildStream.read(scratch)
        record: dict[str, Any] = {
            "id": cell.id,
            "suite": cell.suite,
            "params": cell.params,
            "repeat": repeat,
            "status": status,
            "reason": reason,
            "started": started,
            "ended": utc_now(),
            "budget": {"duration": cell.duration, "warmup": cell.warmup, "work": cell.work, "timeout": cell.timeout},
            "metrics": {},
            "warnings": [],
            "traceback": None,
            "series": None,
            "log": self.store.relative(log_path),
            "stack_dump": dump,
        }
        final = stream.final
        if final is not None and final["type"] == "result":
            record["metrics"] = final["metrics"]
            record["warnings"] = final.get("warnings", [])
        elif final is not None and status == "ok":
            record.update(
                status="error",
                reason=final["reason"],
                traceback=final.get("traceback"),
                warnings=final.get("warnings", []),
                user_error=bool(final.get("user_error")),
            )
        elif status == "ok":
            status = "killed" if proc.returncode < 0 else "error"
            tail = log_tail(log_path)
            record.update(
                status=status,
                reason=f"{describe_exit(proc.returncode)} before reporting" + (f"; log: {tail}" if tail else ""),
            )
        if escaped:
            record["warnings"] = [
                *record["warnings"],
                f"processes outlived the cell outside its process group and were killed: {escaped}",
            ]
        if cell.memory_limit_mb and record["status"] == "error" and "MemoryError" in (record["reason"] or ""):
            record["reason"] += f" (the cell's --memory-limit of {cell.memory_limit_mb:g} MB was reached)"
        for result in results:
            record["metrics"].update(result.metrics)
        series_path = self.store.series_path(cell.id, repeat)
        if write_series(series_path, stream, results):
            record["series"] = self.store.relative(series_path)
        scratch.unlink(missing_ok=True)
        return record

    def _tree(self, root: int) -> dict[int, psutil.Process]:
        """Every process of the cell seen so far, the live tree under its root included."""
        try:
            parent = psutil.Process(root)
            for proc in [parent, *parent.children(recursive=True)]:
                self._known.setdefault(proc.pid, proc)
        except psutil.Error:
            pass
        return self._known

    def abort_current(self) -> None:
        """Ctrl-C: end the running cell's whole tree now."""
        proc = self._current
        if proc is not None:
            kill_tree(proc.pid, self._tree(proc.pid), grace_s=1.0)


def write_series(path: Path, stream: ChildStream, monitors: list[MonitorResult]) -> bool:
    """Tidy time series (t_s, phase, metric, value): counters, their 1 s rates, points the
    suite set, and monitor samples aligned to the cell's clock."""
    rows: list[tuple[float, str, str, float]] = []
    previous: dict[str, Any] | None = None
    for sample in stream.samples:
        t, phase, counters = sample["t"], sample["phase"], sample["counters"]
        for name, value in counters.items():
            rows.append((t, phase, name, value))
        if previous is not None and t - previous["t"] >= 0.5:
            dt = t - previous["t"]
            for name, value in counters.items():
                rate = (value - previous["counters"].get(name, 0)) / dt
                rows.append(((t + previous["t"]) / 2, phase, f"{name}_per_s", rate))
        if previous is None or t - previous["t"] >= 0.5:
            previous = sample
    for point in stream.points:
        rows.append((point["t"], "", point["name"], point["value"]))
    origin = stream.start_wall
    for result in monitors:
        for wall, name, value in result.series:
            if origin is not None:
                rows.append((wall - origin, "", name, value))
    if not rows:
        return False
    rows.sort(key=lambda row: row[0])
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["t_s", "phase", "metric", "value"])
        writer.writerows((f"{t:.3f}", phase, name, value) for t, phase, name, value in rows)
    return True
