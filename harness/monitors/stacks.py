"""Sampled Python stacks of every process of a tree, within a budget of samples per second.

One `py-spy record --pid P --format chrometrace --idle --threads --nonblocking` per
process: --nonblocking never pauses the program (a stack may be torn now and then, which
a sample can afford), --idle keeps the samples of threads that sleep or wait (where the
time goes is the question), --threads ties each Python thread to the kernel's thread id.
Starting a recorder costs about 60 ms of CPU (py-spy reads the interpreter's symbols), a
sample about 0.1 ms, so recorders live as long as their process does and are not restarted
per time window; chrometrace keeps the samples' times, so one long recording still gives
a breakdown over time.

The budget (`budget_hz`, samples per second over the whole tree) is spread evenly: each
process gets budget / processes samples per second (between MIN_RATE_HZ and
MAX_RATE_HZ). A recorder whose rate is more than twice the fair share after the tree has
grown is restarted at the fair share. When even MIN_RATE_HZ per process exceeds the budget,
recorders take turns (ROTATE_S each, least-sampled process first). Starting recorders is
paced too (at most max(2, cores) a second, a burst of as many): 128 processes appearing at
once on a small machine are covered over a minute instead of costing 8 CPU-seconds in the
first one; the least-sampled go first, so a sample of the workers is seen early. Each recorder's own
CPU time is read from the kernel when it is reaped (wait4), so the record states what the
sampling cost. Recorders die with the harness (PR_SET_PDEATHSIG), and a process py-spy
cannot read (not Python, no ptrace permission) is listed with the reason.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from harness.cell.processes import ask_death_signal, tree
from harness.model.workshare import usable_cores
from harness.monitors.base import MonitorResult, SamplingMonitor
from harness.monitors.pyspy import PTRACE_HINT, missing_py_spy, py_spy

MIN_RATE_HZ = 1
MAX_RATE_HZ = 100
DEFAULT_BUDGET_HZ = 200
ROTATE_S = 5.0
PERIOD_S = 0.5
STOP_WAIT_S = 5.0
RETRIES = 2  # a process caught before its interpreter is up gets a second look ...
YOUNG_S = 2.0  # ... if it is this young; an older one without an interpreter is not Python
_SAMPLES = re.compile(r"Samples: (\d+)")


def _die_with_parent() -> None:
    """In the recorder, before exec: SIGKILL it if the harness (the forking thread) dies."""
    ask_death_signal(signal.SIGKILL)


@dataclass
class Recording:
    """One recorder run over one process."""

    pid: int
    rate: int
    started: float  # wall time the recorder was started (ts 0 of its trace, within ~0.1 s)
    output: Path
    log: Path
    proc: subprocess.Popen[bytes]
    stop_at: float | None = None  # monotonic time to end it (rotation, rebalancing)
    ended: float | None = None
    cpu_s: float = 0.0
    returncode: int | None = None


class StacksMonitor(SamplingMonitor):
    """py-spy recorders over a process tree; `recordings` and `unsampled` for harness.watch."""

    name = "stacks"

    def __init__(
        self,
        workdir: Path,
        budget_hz: int = DEFAULT_BUDGET_HZ,
        skip: Callable[[list[str], list[str] | None], bool] | None = None,
        period_s: float = PERIOD_S,
    ) -> None:
        super().__init__(period_s)
        self.workdir = workdir
        self.budget_hz = budget_hz
        self.skip = skip or (lambda cmdline, parent_cmdline: False)  # (its command line, its parent's)
        self.recordings: list[Recording] = []
        self.unsampled: dict[int, str] = {}
        self.exe = py_spy()
        self._handles: dict[int, psutil.Process] = {}
        self._running: dict[int, Recording] = {}
        self._covered: dict[int, float] = {}
        self._failures: dict[int, int] = {}
        self._retry_at: dict[int, float] = {}
        self._skipped: set[int] = set()  # not ours to sample (the harness's own cell process)
        self._gone: set[int] = set()  # ended: never sampled again
        self.reason = None if self.exe else missing_py_spy()
        self.launch_rate = float(max(2, usable_cores()))
        self._tokens = self.launch_rate
        self._last_pass = time.monotonic()

    # ------------------------------------------------------------------ lifecycle
    def begin(self, root_pid: int) -> bool:
        if self.exe is None:
            return False
        self.workdir.mkdir(parents=True, exist_ok=True)
        return True

    def sample(self) -> None:
        self._pass()

    def finish(self) -> None:
        # Recorders are stopped from the sampling thread: PR_SET_PDEATHSIG follows the thread
        # that forked them, so it must outlive them.
        self._end_all()

    def result(self) -> MonitorResult:
        return MonitorResult(metrics=self.summarise(), processes=dict(self._handles))

    # ------------------------------------------------------------------ scheduling
    def _candidates(self) -> list[psutil.Process]:
        out = []
        for proc in tree(self.root):
            pid = proc.pid
            if pid in self._skipped or pid in self.unsampled or pid in self._gone:
                continue
            try:
                if proc.status() == psutil.STATUS_ZOMBIE:
                    self._gone.add(pid)
                    continue
            except psutil.Error:
                continue
            if pid not in self._handles:
                try:
                    parent = proc.parent()
                    if self.skip(proc.cmdline(), parent.cmdline() if parent else None):
                        self._skipped.add(pid)
                        continue
                except psutil.Error:
                    continue
                self._handles[pid] = proc
            out.append(proc)
        return out

    def _pass(self) -> None:
        self._reap()
        live = self._candidates()
        now = time.monotonic()
        fair = max(MIN_RATE_HZ, min(MAX_RATE_HZ, self.budget_hz // max(len(live), 1)))
        slots = max(1, self.budget_hz // fair)
        rotating = len(live) > slots
        for rec in self._running.values():
            if rec.stop_at is None and (rec.rate > 2 * fair or rotating):
                rec.stop_at = now if rec.rate > 2 * fair else now + ROTATE_S
            if rec.stop_at is not None and now >= rec.stop_at and rec.proc.poll() is None:
                _interrupt(rec.proc)
                rec.stop_at = float("inf")  # asked once; reaped when it has written its file
        waiting = [p for p in live if p.pid not in self._running and self._retry_at.get(p.pid, 0.0) <= now]
        waiting.sort(key=lambda p: self._covered.get(p.pid, 0.0))
        self._tokens = min(self.launch_rate, self._tokens + (now - self._last_pass) * self.launch_rate)
        self._last_pass = now
        for proc in waiting[: max(0, min(slots - len(self._running), int(self._tokens)))]:
            self._tokens -= 1
            self._launch(proc.pid, fair, now + ROTATE_S if rotating else None)

    def _launch(self, pid: int, rate: int, stop_at: float | None) -> None:
        assert self.exe is not None
        n = sum(1 for r in self.recordings if r.pid == pid)
        output = self.workdir / f"stacks-{pid}-{n}.json"
        log = self.workdir / f"stacks-{pid}-{n}.log"
        command = [self.exe, "record", "--pid", str(pid), "--format", "chrometrace", "--idle", "--threads"]
        command += ["--nonblocking", "--rate", str(rate), "--output", str(output)]
        with open(log, "wb") as fh:
            try:
                proc = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
                )
            except OSError as exc:
                self.unsampled[pid] = f"py-spy could not be started: {exc}"
                return
        rec = Recording(pid, rate, time.time(), output, log, proc, stop_at)
        self._running[pid] = rec
        self.recordings.append(rec)

    def _reap(self) -> None:
        for pid, rec in list(self._running.items()):
            try:
                done, status, usage = os.wait4(rec.proc.pid, os.WNOHANG)
            except ChildProcessError:
                done, status, usage = rec.proc.pid, 0, None
            if done == 0:
                continue
            rec.proc.returncode = rec.returncode = os.waitstatus_to_exitcode(status) if usage is not None else 0
            rec.ended = time.time()
            rec.cpu_s = (usage.ru_utime + usage.ru_stime) if usage is not None else 0.0
            del self._running[pid]
            self._covered[pid] = self._covered.get(pid, 0.0) + (rec.ended - rec.started)
            if not rec.output.exists():
                self._failed(pid, rec)

    def _failed(self, pid: int, rec: Recording) -> None:
        why = _why(rec.log)
        try:
            proc = psutil.Process(pid)
            alive = proc.status() != psutil.STATUS_ZOMBIE
            age = time.time() - proc.create_time()
        except psutil.Error:
            alive, age = False, 0.0
        if not alive:
            self._gone.add(pid)  # it ended before py-spy could read it: nothing was missed
            return
        self._failures[pid] = self._failures.get(pid, 0) + 1
        settled = age >= YOUNG_S and "not a Python process" in why  # no interpreter will appear
        if settled or self._failures[pid] > RETRIES:
            self.unsampled[pid] = why
        else:
            self._retry_at[pid] = time.monotonic() + 1.0

    def _end_all(self) -> None:
        for rec in self._running.values():
            if rec.proc.poll() is None:
                _interrupt(rec.proc)
        deadline = time.monotonic() + STOP_WAIT_S
        while self._running and time.monotonic() < deadline:
            self._reap()
            if self._running:
                time.sleep(0.05)
        for rec in self._running.values():  # py-spy did not finish writing in time
            rec.proc.kill()
        while self._running:
            self._reap()
            if self._running:
                time.sleep(0.01)

    # ------------------------------------------------------------------ results
    def samples(self) -> int:
        total = 0
        for rec in self.recordings:
            try:
                found = _SAMPLES.findall(rec.log.read_text(errors="replace"))
            except OSError:
                found = []
            total += int(found[-1]) if found else 0
        return total

    def summarise(self) -> dict[str, Any]:
        ran = self.ran_s() or 0.0
        cpu_s = sum(r.cpu_s for r in self.recordings)
        metrics: dict[str, Any] = {
            "stacks_budget_hz": self.budget_hz,
            "stacks_recorders": len(self.recordings),
            "stacks_processes": len({r.pid for r in self.recordings}),
            "stacks_samples": self.samples(),
            "stacks_cpu_s": cpu_s + self.own_cpu_s,
            "stacks_rate_hz": sorted({r.rate for r in self.recordings}),
        }
        if ran > 0:
            metrics["stacks_cpu_pct"] = 100.0 * (cpu_s + self.own_cpu_s) / ran
            metrics["stacks_sample_hz"] = metrics["stacks_samples"] / ran
        if self.unsampled:
            metrics["stacks_unsampled"] = {str(pid): why for pid, why in sorted(self.unsampled.items())}
        if self.reason:
            metrics["stacks_reason"] = self.reason
        return metrics


def _interrupt(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT: py-spy stops sampling, writes its file and exits."""
    try:
        proc.send_signal(signal.SIGINT)
    except OSError:
        pass


def _why(log: Path) -> str:
    """py-spy's error, with the ptrace remedy when it is a permission problem."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return "py-spy wrote nothing"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = next(
        (line for line in lines if line.startswith("Error")), lines[0] if lines else "py-spy exited without output"
    )
    first = first.removeprefix("Error: ").strip()
    if "ermission" in text or "ptrace" in text.lower():
        return f"{first} ({PTRACE_HINT})"
    if "python version" in text.lower() or "python interpreter" in text.lower():
        return f"{first} (not a Python process?)"
    return first
