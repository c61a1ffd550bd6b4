"""Running Cells, each in a fresh interpreter in its own process session.

The child (`python -m harness.cell`) is the leader of a new session and process group, so
the whole tree it starts can be ended with one `killpg`; processes that escaped the group
(a double fork, a `setsid`) are found through the monitors' record of every PID seen and
killed too. At the deadline (harness.running.deadline: moved by a measured window that
opened late, when the flags set it) the cell's interpreter is first asked to close its
window and report what it measured; then the group gets SIGTERM, then SIGKILL after a grace
period, and the cell is recorded as `timeout`, with what it reported, if it did, and a reason
that says it was cut short. Nothing of a cell outlives it.
"""

from __future__ import annotations

import errno
import json
import re
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import psutil

from harness.cell.main import CHANNEL_LOST_EXIT, CHANNEL_LOST_MARK, TRACEBACK_LINES
from harness.cell.messages import RESULT, ChildStream
from harness.cell.processes import (
    alive,
    child_env,
    describe_exit,
    describe_processes,
    kill_tree,
    log_tail_of,
    marked_processes,
    tree,
)
from harness.errors import StorageError, UserError, is_storage_error
from harness.model.registry import get_suite
from harness.model.suite import MEMORY_LIMIT_ENV
from harness.model.vocabulary import HEADLINE_METRIC
from harness.monitors import Monitor, MonitorResult, default_monitors
from harness.monitors.memory import LimitHit, MemoryMonitor
from harness.monitors.pyspy import dump_stacks
from harness.running.cell_log import DEFAULT_CAP_MB, CellLog
from harness.running.deadline import Deadline, ask_to_report
from harness.running.matrix import Cell
from harness.runs.record import HARNESS_ERROR, Record, number
from harness.runs.series import SERIES_ORIGIN, write_series
from harness.runs.store import RunStore, utc_now

# Called at a deadline, before anything is killed, with the cell's live processes and the
# store; returns a path (relative to the run directory) of what it saved, or None.
DeadlineHook = Callable[[list[psutil.Process], RunStore, str], "str | None"]
# Turns the child's command line into the one started (e.g. under `py-spy record`), given
# "<id>-<repeat>".
CommandWrap = Callable[[list[str], str], list[str]]
WATCH_DIR = "watch"  # the instruments' traces, per cell-repeat, for suites with Suite.watch
_CHANNEL_LOST = re.compile(re.escape(CHANNEL_LOST_MARK) + r" (?P<name>E[A-Z0-9]+): (?P<detail>[^\n]*)")


class CellRunner:
    """Runs one cell-repeat and returns its Record (the line cells.jsonl gets)."""

    def __init__(
        self,
        store: RunStore,
        monitors: Callable[[], list[Monitor]] = default_monitors,
        on_deadline: DeadlineHook | None = dump_stacks,
        wrap: CommandWrap | None = None,
        mark: Path | None = None,
    ) -> None:
        self.store = store
        self.monitors = monitors
        self.on_deadline = on_deadline
        self.wrap = wrap
        # the run directory the cell's processes are marked with (HARNESS_RUN): the store's, or,
        # for a cell run on a Ray node into a scratch store, the sweep's own run directory
        self.mark = mark if mark is not None else store.root
        self._current: subprocess.Popen[bytes] | None = None
        self._known: dict[int, psutil.Process] = {}

    def run(self, cell: Cell, repeat: int, key: str | None = None) -> Record:
        """The cell-repeat's record, whatever happens in it. A failure of the harness's own
        (a file of the cell it could not write, its machinery raising) ends the cell with
        status `harness-error`, never blamed on the program; `--resume` runs it again. `key`
        names its files (the store's next attempt_key unless given: a Ray node's scratch
        store takes the sweep's)."""
        key = key or self.store.attempt_key(cell.id, repeat)
        record = Record(
            id=cell.id, suite=cell.suite, params=cell.params, repeat=repeat, status="ok", started=utc_now(),
            budget=cell.budget(), log=self.store.relative(self.store.log_path(key)),
        )  # fmt: skip
        try:
            self._run(cell, record, key)
        except StorageError as exc:
            harness_failed(
                record, f"the harness could not write {exc.what or 'a file of the cell'}", exc, self.store.root
            )
        except Exception as exc:  # noqa: BLE001 - the harness's own failure, recorded as such
            harness_failed(record, f"the harness failed running the cell ({type(exc).__name__}: {exc})")
            record.traceback = "\n".join(traceback.format_exc().rstrip().splitlines()[-TRACEBACK_LINES:])
        record.ended = utc_now()
        if not self.store.log_path(key).exists():
            record.log = None  # the harness failed before the cell started
        return record

    def _run(self, cell: Cell, record: Record, key: str) -> None:
        repeat = record.repeat
        scratch = self.store.root / "series" / f".{cell.id}-{repeat}.jsonl"  # the child's stream
        scratch.unlink(missing_ok=True)
        log_path = self.store.log_path(key)
        spec = json.dumps(
            {
                "suite": cell.suite,
                "params": cell.params,
                "duration": cell.duration,
                "warmup": cell.warmup,
                "work": cell.work,
                "memory_limit_mb": cell.memory_limit_mb,
                "steady": cell.steady,
                "steady_max": cell.steady_max,
                "target": cell.target,
                "target_every": cell.target_every,
            }
        )
        monitors = self.monitors()
        env = child_env(key, self.mark)
        instruments = self._instruments(cell, key)
        if instruments is not None:
            env = instruments.environ(env)  # the torch hook, in the program's interpreter too
            monitors.append(instruments)
        command = [sys.executable, "-m", "harness.cell", spec, str(scratch)]
        if self.wrap is not None:
            command = self.wrap(command, key)
        if cell.memory_limit_mb:
            env[MEMORY_LIMIT_ENV] = f"{cell.memory_limit_mb:g}"  # harness.probe.memory_limit_mb()
        log = CellLog(log_path, int((cell.log_cap_mb or DEFAULT_CAP_MB) * 1e6))
        try:
            proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log.write_fd,
                stderr=log.write_fd,
                start_new_session=True,
                env=env,
            )
        except BaseException as exc:
            log.close()
            if is_storage_error(exc):
                raise StorageError.from_os(exc, what="the cell's interpreter") from None
            raise
        log.started()
        self._current, self._known = proc, {}
        status, reason, dump = "ok", None, None
        escaped = ""
        broken: list[str] = []  # monitors of the harness's that failed
        watchdog = None
        deadline = Deadline(cell, scratch)  # started again once the monitors are (below)
        try:
            watchdog = self._watchdog(monitors, cell, proc.pid)
            self._tree(proc.pid)
            for monitor in monitors:
                monitor.start(proc.pid)
            deadline = Deadline(cell, scratch)  # the cell's time runs from here, as it always has
            try:
                deadline.wait(proc)
            except subprocess.TimeoutExpired:
                status = "timeout"
                reason = f"no result within the {deadline.said()} deadline; the cell's processes were killed"
                if self.on_deadline is not None:
                    live = alive({**self._tree(proc.pid), **marked_processes(self.mark, key)})
                    try:
                        dump = self.on_deadline(live, self.store, key)
                    except Exception as exc:  # noqa: BLE001 - a failed dump must not stop the kill
                        reason += f" (stack dump failed: {type(exc).__name__}: {exc})"
                if self.wrap is None:  # the cell's interpreter itself, not a profiler over it
                    ask_to_report(proc, scratch)  # what it measured reaches its channel; killed below either way
        finally:
            try:
                # Ends the tree on every path: deadline, Ctrl-C, a monitor that failed, and a
                # child that exited but left workers behind.
                kill_tree(proc.pid, self._tree(proc.pid))
                proc.wait()
                results = _stop_all(monitors, broken)
                for result in results:
                    for pid, handle in result.processes.items():
                        self._known.setdefault(pid, handle)
                kill_tree(proc.pid, self._known, grace_s=0.5)
                # Whatever is left escaped both the group and the tree the monitors saw.
                marked = {pid: p for pid, p in marked_processes(self.mark, key).items() if pid != proc.pid}
                if marked:
                    psutil.wait_procs(list(marked.values()), timeout=0.3)  # group members still dying
                    survivors = alive(marked)
                    if survivors:
                        escaped = describe_processes(survivors)
                        self._known.update(marked)
                        kill_tree(proc.pid, {p.pid: p for p in survivors}, grace_s=0.5)
            finally:
                self._current = None
                written = log.close()
        stream = ChildStream.read(scratch)
        record.status, record.reason, record.stack_dump = status, reason, dump
        final = stream.final
        if final is not None and final["type"] == RESULT:
            record.metrics = final["metrics"]
            record.warnings = list(final.get("warnings", []))
            if status == "timeout":
                record.reason = cut_short(deadline.said(), record.metrics, cell.duration)
        elif final is not None and status == "ok":
            record.status = "error"
            record.reason = final["reason"]
            record.traceback = final.get("traceback")
            record.warnings = list(final.get("warnings", []))
            record.user_error = bool(final.get("user_error"))
        elif status == "ok":
            self._no_result(record, proc.returncode, stream, scratch, log)
        if escaped:
            record.warnings.append(f"processes outlived the cell outside its process group and were killed: {escaped}")
        if watchdog is not None and watchdog.hit is not None:  # whatever the child said as it died
            record.status, record.reason = "killed", watchdog.hit.reason()
            record.traceback = None
        for result in results:
            record.metrics.update(result.metrics)
            record.warnings += result.warnings  # an instrument that saw nothing (harness.monitors.blind)
        if broken:
            harness_failed(record, f"the harness's monitors failed ({'; '.join(broken)})")
        note = written.warning()
        if note:
            record.warnings.append(note)
        if written.note():
            record.extra["log_capped"] = written.note()
        series_path = self.store.series_path(key)
        if write_series(series_path, stream, results):
            record.series = self.store.relative(series_path)
            record.extra[SERIES_ORIGIN] = stream.start_wall
        scratch.unlink(missing_ok=True)

    def _no_result(self, record: Record, code: int, stream: ChildStream, scratch: Path, log: CellLog) -> None:
        """The child ended without a result or error line: the harness's failure when it
        could not write the stream, or died before the suite started; the program's else."""
        text = log.recent_text()
        lost = _CHANNEL_LOST.search(text)
        if code == CHANNEL_LOST_EXIT and lost:
            exc = StorageError(
                scratch, getattr(errno, lost["name"], None), lost["detail"].strip(), "the cell's result stream"
            )
            harness_failed(record, "the cell could not write its result stream", exc, self.store.root)
        elif code > 0 and stream.start_wall is None:
            tail = log_tail_of(text)
            harness_failed(
                record,
                f"the cell's interpreter {describe_exit(code)} before the harness started its suite"
                + (f"; log: {tail}" if tail else ""),
            )
        else:
            record.status = "killed" if code < 0 else "error"
            tail = log_tail_of(text)
            record.reason = f"{describe_exit(code)} before reporting" + (f"; log: {tail}" if tail else "")

    @staticmethod
    def _watchdog(monitors: list[Monitor], cell: Cell, root: int) -> MemoryMonitor | None:
        """With --memory-limit: the memory monitor ends the tree when its PSS passes the
        limit (the cell's own monitor, or one added for it). A watchdog in the parent, not
        RLIMIT_AS: an address-space cap fails CUDA processes, which reserve far more address
        space than they use, and says nothing about pages shared between workers."""
        if not cell.memory_limit_mb:
            return None
        watchdog = next((m for m in monitors if isinstance(m, MemoryMonitor)), None)
        if watchdog is None:
            watchdog = MemoryMonitor()
            monitors.append(watchdog)

        def end_tree(hit: LimitHit) -> None:
            kill_tree(root, {p.pid: p for p in tree(root)}, grace_s=1.0)

        watchdog.enforce(cell.memory_limit_mb, end_tree)
        return watchdog

    def _instruments(self, cell: Cell, key: str) -> Monitor | None:
        """harness watch's instruments, for the cells of a suite that asks for them
        (`Suite.watch`): the suite runs a program it cannot report from inside. The log's
        rates are left out: such a suite reads the program's output itself, through the
        probe (harness.readers), which gives windowed rates from its counters."""
        try:
            wanted = get_suite(cell.suite).watch
        except UserError:
            return None  # the child reports the unknown or broken suite
        if not wanted:
            return None
        from harness.watch.instruments import Instruments

        return Instruments(self.store.root / WATCH_DIR / key, [])

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


def _stop_all(monitors: list[Monitor], broken: list[str]) -> list[MonitorResult]:
    """Every monitor stopped, one failing not keeping the others (or the kill) from it."""
    results = []
    for monitor in monitors:
        try:
            results.append(monitor.stop())
        except Exception as exc:  # noqa: BLE001 - noted as the harness's failure of the cell
            broken.append(f"{getattr(monitor, 'name', type(monitor).__name__)}: {type(exc).__name__}: {exc}")
    return results


def cut_short(deadline: str, metrics: dict, duration: float | None) -> str:
    """The reason of a cell that reported at its deadline: what it kept, over how much of its
    window (its numbers are in the record; a timeout's are in no table, rule or gate)."""
    window = number(metrics.get("measure_s"))
    if not window:
        return f"cut short by the {deadline} deadline before its measured window opened: nothing was measured"
    headline = metrics.get(HEADLINE_METRIC)
    value = number(metrics.get(headline)) if isinstance(headline, str) else None
    over = f"over {window:.0f} s of the {duration:g} s window asked" if duration else f"over {window:.0f} s"
    return (
        f"cut short by the {deadline} deadline: it closed its window and kept what it had measured "
        f"({f'{headline} {value:.4g} ' if value is not None else ''}{over}), which no table, rule or gate uses; "
        "the cell's processes were killed"
    )


def harness_failed(record: Record, reason: str, storage: StorageError | None = None, root: Path | None = None) -> None:
    """Mark the record as the harness's failure (status `harness-error`): `--resume` runs it
    again. A storage failure is kept in `storage_error`, so the sweep stops on it."""
    record.status = HARNESS_ERROR
    record.traceback = None
    if storage is not None:
        where = storage.path.relative_to(root) if root and storage.path.is_relative_to(root) else storage.path
        code = f" ({storage.errno_name})" if storage.errno_name else ""
        reason += f" ({where}: {storage.detail}{code})"
        record.extra["storage_error"] = {
            "path": str(storage.path), "errno": storage.errno_name, "detail": storage.detail, "what": storage.what
        }  # fmt: skip
    record.reason = f"{reason}; the harness's failure, not the program's: `harness sweep --resume` runs it again"


def storage_error_of(record: Record) -> StorageError | None:
    """The storage failure a record of the harness's failure carries, or None."""
    fault = record.extra.get("storage_error") if record.harness_failed else None
    if not isinstance(fault, dict):
        return None
    code = getattr(errno, str(fault.get("errno")), None)
    return StorageError(str(fault.get("path")), code, str(fault.get("detail")), fault.get("what"))
