"""The duty-cycle stopper: a small process of its own that holds a group of the program's
processes stopped for a fraction f of every short cycle (SIGSTOP ... SIGCONT), and the
harness's handle on it.

Why a process of its own: the harness's process reads the program's sample stream and does
the statistics; a GIL hiccup there would stretch a stop. Here the loop does nothing but
signal and sleep, and it measures what it did: the seconds each group was held stopped
(SIGSTOP sent to SIGCONT sent) and the seconds it spent slowed, so the experiment divides
by the fraction it achieved, not the one it asked for.

Why it is also the watchdog: nothing the program runs may be left stopped, whatever happens
to the harness. The stopper continues every process it ever stopped on each way out: a
"release" command, end of its stdin (the harness exited, even by SIGKILL: the kernel closes
the pipe), SIGTERM/SIGINT/SIGHUP, the death of the harness's thread that started it
(PR_SET_PDEATHSIG, sent as SIGTERM), and any error of its own. It runs in its own process
group, so a Ctrl-C typed at the terminal reaches the harness (which releases the group and
closes the pipe) rather than racing it. Processes are signalled through pidfds where the kernel has
them, so a pid reused by an unrelated process is never stopped.

Why it stays in the harness's session: on a kernel with autogroups
(sched_autogroup_enabled, the default of desktop and many server kernels) a session's
processes share one scheduling entity, and waking a process of the session 100 times a
second (stopping and continuing it, even one that only sleeps) raised the CPU the rest of
the session got by 20-40 % on this busy 2-core VM: an idle parent, "slowed", sped its
pipeline's consumer up. So the program runs in its own process group of the harness's
session, the stopper too, and harness.causal.experiment stops and continues as many
processes in every period: the slowed group's topped up with sleeping processes of its
own, and only sleepers in a free period. Every period then carries the same wake-ups, and
the comparison cancels them.

Two ways to slow a group. `duty`: the whole group held stopped f of every cycle. `debt`
(the default of harness causal): each process held stopped f / (1 - f) seconds for every
second it ran on a CPU (class Debts says why).

Protocol: one JSON object per line on stdin, one per line on stdout.
  {"slow": [pids], "ballast": [pids], "f": 0.5, "cycle_s": 0.02, "mode": "debt"}
                                                  slow these pids from now on, and stop the
                                                  ballast f of every cycle
  {"slow": []}                                   slow nothing, sleep
  {"quit": true}                                  continue everything and exit
After each command the stopper answers with what the phase that just ended achieved:
  {"ack": n, "stopped_s": s, "slowed_s": s, "cycles": n, "late_s": s, "cpu_s": s, "mode": m,
   "own_cpu_s": s}
(`late_s`: how much later than asked the last SIGCONT of a cycle went out, summed; `cpu_s`:
the group's CPU in debt mode; `own_cpu_s`: the stopper's own CPU since it started).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

_PR_SET_PDEATHSIG = 1


@dataclass
class PhaseStats:
    """What one slowing phase achieved (all zero for a phase that slowed nothing).

    duty: `stopped_s` is the wall time the group was held stopped, `slowed_s` the phase's
    length. debt: `stopped_s` and `cpu_s` are summed over the group's processes (the time
    each was held stopped, the CPU each used), so the share of its busy time the group spent
    stopped is stopped / (stopped + cpu): f on an idle machine, more on a crowded one, where
    each stop stands for the running it would take (Debts)."""

    stopped_s: float = 0.0
    slowed_s: float = 0.0
    cycles: int = 0
    late_s: float = 0.0
    cpu_s: float = 0.0
    mode: str = "duty"

    @property
    def fraction(self) -> float | None:
        """The share of the group's time (duty) or busy time (debt) it was held stopped."""
        if self.mode == "debt":
            busy = self.stopped_s + self.cpu_s
            return self.stopped_s / busy if busy > 0 else None
        return self.stopped_s / self.slowed_s if self.slowed_s > 0 else None


class _Targets:
    """The processes of the group being slowed, as pidfds where possible."""

    def __init__(self) -> None:
        self.handles: dict[int, int | None] = {}  # pid -> pidfd (None: plain kill)
        self.ever: dict[int, int | None] = {}  # every process ever stopped, for the way out

    def open(self, pids: list[int]) -> dict[int, int | None]:
        out: dict[int, int | None] = {}
        for pid in pids:
            if pid in self.ever:
                out[pid] = self.ever[pid]
                continue
            try:
                fd: int | None = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
            except OSError:
                continue  # already gone
            out[pid] = self.ever[pid] = fd
        return out

    def set(self, pids: list[int]) -> None:
        self.handles = self.open(pids)

    def send(self, sig: int, pids: dict[int, int | None] | None = None) -> None:
        for pid, fd in (self.handles if pids is None else pids).items():
            with contextlib.suppress(OSError):
                if fd is not None:
                    signal.pidfd_send_signal(fd, sig)
                else:
                    os.kill(pid, sig)

    def release_all(self) -> None:
        self.send(signal.SIGCONT, self.ever)


_TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")
UNSEEN_NS = 50_000_000  # the process's own CPU total ahead of its threads' by more: threads came and went unseen


class ThreadClocks:
    """Each process's (nanoseconds on a CPU, nanoseconds runnable but waiting for one) over
    all its threads, those that have exited included (/proc/PID/task/TID/schedstat). A stopped
    thread is not runnable: its stop is in neither.

    Summing the live threads alone loses every thread that has exited: gensim's word2vec
    starts its worker threads again every epoch, and its one process read 0.01 cores where
    it used 0.875, which set both its stops' length and its CPU kept (-0.58). So a thread
    that is gone keeps its last reading, threads started since are counted (the thread list
    is read on every call), and a thread born and gone between two calls is caught by the
    process's own total (utime + stime in /proc/PID/stat, exited threads included, at the
    clock tick's resolution): where it runs ahead of the threads' sum, the difference is
    what unseen threads ran (their run-queue waits are not known)."""

    def __init__(self) -> None:
        self._threads: dict[int, dict[str, tuple[int, int]]] = {}  # pid -> tid -> last reading
        self._gone: dict[int, tuple[int, int]] = {}  # pid -> what its exited threads had

    def read(self, pid: int) -> tuple[int, int] | None:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return None
        now: dict[str, tuple[int, int]] = {}
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as fh:
                    fields = fh.read().split()
                now[tid] = (int(fields[0]), int(fields[1]))
            except (OSError, ValueError, IndexError):
                continue  # exited meanwhile: its last reading, if any, counts below
        gone_ran, gone_waited = self._gone.get(pid, (0, 0))
        for tid, (ran, waited) in self._threads.get(pid, {}).items():
            if tid not in now:
                gone_ran, gone_waited = gone_ran + ran, gone_waited + waited
        ran = gone_ran + sum(r for r, _ in now.values())
        waited = gone_waited + sum(w for _, w in now.values())
        total = process_cpu_ns(pid)
        if total is not None and total > ran + UNSEEN_NS:
            gone_ran += total - ran
            ran = total
        self._threads[pid], self._gone[pid] = now, (gone_ran, gone_waited)
        return ran, waited


def process_cpu_ns(pid: int) -> int | None:
    """The process's CPU time, its exited threads included (utime + stime of /proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return int((int(fields[11]) + int(fields[12])) * _TICK_NS)
    except (OSError, ValueError, IndexError):
        return None


class Debts:
    """Debt mode: each process of the group owes f / (1 - f) seconds of running for every
    second it spent on a CPU, and is held stopped for what it owes at the next cycle (at
    least MIN_STOP_S, at most MAX_STOP_CYCLES cycles at once): its code runs 1 / (1 - f)
    times as long, whatever the scheduler does, and a process that sleeps is not stopped at
    all (a stop of a process that answers every millisecond would stall its partner far
    beyond what slower code would).

    Owed running, not owed wall time: on a machine that gives the process a share a of a CPU
    while it is runnable (run time over run time plus run-queue wait, from schedstat,
    smoothed over about SHARE_MEMORY cycles), slower code would take 1 / a seconds of wall
    time per second of extra running, so the stop is that long. A stop of the bare debt
    cost a stage at a = 0.49 only a third of its CPU, not a half (harness.causal.rounds
    measures what each period's stops took: the dose)."""

    MIN_STOP_S = 0.0005
    MAX_STOP_CYCLES = 4
    SHARE_MEMORY = 0.9  # each cycle keeps this much of the run and wait seen before it
    MIN_SHARE = 0.2  # a stop is at most 1 / MIN_SHARE times the running it stands for

    def __init__(self) -> None:
        self.owed: dict[int, float] = {}
        self.last: dict[int, tuple[int, int]] = {}
        self.seen: dict[int, tuple[float, float]] = {}  # decayed (run, wait) seconds
        self.clocks = ThreadClocks()

    def reset(self, pids: list[int]) -> None:
        self.owed = {pid: 0.0 for pid in pids}
        self.last = {pid: found for pid in pids if (found := self.clocks.read(pid)) is not None}
        self.seen = {}

    def share(self, pid: int) -> float:
        ran, waited = self.seen.get(pid, (0.0, 0.0))
        return max(self.MIN_SHARE, ran / (ran + waited)) if ran + waited > 0 else 1.0

    def charge(self, fraction: float) -> float:
        """Add what the CPU used since the last call owes; returns that CPU (seconds)."""
        used = 0.0
        for pid in self.owed:
            found = self.clocks.read(pid)
            if found is None or pid not in self.last:
                continue
            ran = max(0, found[0] - self.last[pid][0]) / 1e9
            waited = max(0, found[1] - self.last[pid][1]) / 1e9
            self.last[pid] = found
            before = self.seen.get(pid, (0.0, 0.0))
            self.seen[pid] = (before[0] * self.SHARE_MEMORY + ran, before[1] * self.SHARE_MEMORY + waited)
            used += ran
            self.owed[pid] += ran * fraction / (1 - fraction) / self.share(pid)
        return used

    def due(self, cycle_s: float) -> dict[int, float]:
        return {pid: min(d, self.MAX_STOP_CYCLES * cycle_s) for pid, d in self.owed.items() if d >= self.MIN_STOP_S}


def _hold(targets: _Targets, stops: dict[int, float], start: float) -> dict[int, float]:
    """Stop every pid of `stops`, continue each after its own time; returns how long each was held."""
    handles = targets.open(list(stops))
    targets.send(signal.SIGSTOP, handles)
    held = {}
    for pid, length in sorted(stops.items(), key=lambda kv: kv[1]):
        wanted = start + length
        while (now := time.monotonic()) < wanted:
            time.sleep(wanted - now)
        if pid in handles:
            targets.send(signal.SIGCONT, {pid: handles[pid]})
        held[pid] = time.monotonic() - start
    return held


def _exit_on_signal(*_: object) -> None:
    raise SystemExit(0)


def serve(commands: TextIO, replies: TextIO) -> None:
    """The stopper's loop (the child's main): commands in, stops out. Each cycle stops the
    group (duty: all of it for f of the cycle; debt: each process for what it owes) and the
    ballast (for f of the cycle, whatever the mode), then waits for a command until the
    cycle ends."""
    targets = _Targets()
    fraction, cycle_s, mode = 0.0, 0.0, "duty"
    group: list[int] = []
    ballast: list[int] = []
    debts = Debts()
    stats = PhaseStats()
    cpu0 = time.process_time()
    acks = 0
    fd = commands.fileno()
    buffer = b""
    try:
        while True:
            slowing = 0 < fraction < 1 and cycle_s > 0  # with no group: the ballast's wake-ups only
            timeout = None
            if slowing:
                start = time.monotonic()
                stops = dict.fromkeys(ballast, fraction * cycle_s)
                if mode == "duty":
                    stops.update(dict.fromkeys(group, fraction * cycle_s))
                else:
                    stats.cpu_s += debts.charge(fraction)
                    stops.update(debts.due(cycle_s))
                held = _hold(targets, stops, start)
                for pid in group:
                    if mode == "debt" and pid in held:
                        debts.owed[pid] = max(0.0, debts.owed[pid] - held[pid])
                        stats.stopped_s += held[pid]
                if mode == "duty" and group:
                    stats.stopped_s += max((held.get(p, 0.0) for p in group), default=0.0)
                stats.late_s += max(0.0, max(held.values(), default=0.0) - max(stops.values(), default=0.0))
                stats.cycles += 1
                timeout = max(0.0, start + cycle_s - time.monotonic())
            ready, _, _ = select.select([fd], [], [], timeout)
            if slowing:
                stats.slowed_s += time.monotonic() - start
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return  # the harness is gone
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if not line.strip():
                    continue
                command = json.loads(line)
                if command.get("quit"):
                    return
                acks += 1
                reply = {"ack": acks, **stats.__dict__, "own_cpu_s": time.process_time() - cpu0}
                replies.write(json.dumps(reply) + "\n")
                replies.flush()
                group = [int(p) for p in command.get("slow") or []]
                ballast = [int(p) for p in command.get("ballast") or []]
                fraction = float(command.get("f") or 0.0)
                cycle_s = float(command.get("cycle_s") or 0.0)
                mode = str(command.get("mode") or "duty")
                stats = PhaseStats(mode=mode)
                if mode == "debt":
                    debts.reset(group)
    finally:
        targets.release_all()


def main() -> int:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    from harness.cell.processes import ask_death_signal

    ask_death_signal(signal.SIGTERM)
    if os.getppid() == 1:  # the harness died before the death signal was asked for
        return 0
    with contextlib.suppress(SystemExit, BrokenPipeError, KeyboardInterrupt):
        serve(sys.stdin, sys.stdout)
    return 0


class StopperDied(RuntimeError):
    """The stopper process ended while the experiment still needed it."""


@dataclass
class Stopper:
    """The harness's side: start the stopper, switch which group it slows, read what each
    phase achieved, and make sure on every way out that nothing stays stopped."""

    proc: subprocess.Popen[str] | None = None
    every_pid: set[int] = field(default_factory=set)
    cpu_s: float = 0.0

    def start(self) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in (_package_root(), os.environ.get("PYTHONPATH")) if p),
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness.causal.stopper"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
            process_group=0, env=env,
        )  # fmt: skip

    def switch(
        self,
        pids: list[int],
        fraction: float = 0.0,
        cycle_s: float = 0.0,
        ballast: list[int] | None = None,
        mode: str = "duty",
    ) -> PhaseStats:
        """Slow `pids` from now on (none: run free) and stop the ballast each cycle; returns
        what the phase before achieved."""
        self.every_pid.update(pids)
        self.every_pid.update(ballast or [])
        command = {"slow": list(pids), "ballast": list(ballast or []), "f": fraction, "cycle_s": cycle_s, "mode": mode}
        reply = self._ask(command)
        self.cpu_s = float(reply.get("own_cpu_s", self.cpu_s))
        fields = ("stopped_s", "slowed_s", "cycles", "late_s", "cpu_s", "mode")
        return PhaseStats(**{k: reply[k] for k in fields if k in reply})

    def close(self) -> None:
        """Continue everything and end the stopper (safe to call more than once)."""
        proc, self.proc = self.proc, None
        if proc is not None:
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.write(json.dumps({"quit": True}) + "\n")  # type: ignore[union-attr]
                proc.stdin.close()  # type: ignore[union-attr]
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=2)
                proc.kill()
        for pid in self.every_pid:  # the stopper continued them; this covers a stopper killed outright
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGCONT)

    def _ask(self, command: dict[str, Any]) -> dict[str, Any]:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            self.close()
            raise StopperDied("the stopper process ended; every process it had stopped was continued")
        try:
            proc.stdin.write(json.dumps(command) + "\n")  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
            line = proc.stdout.readline()  # type: ignore[union-attr]
        except (OSError, ValueError):
            line = ""
        if not line:
            self.close()
            raise StopperDied("the stopper process ended; every process it had stopped was continued")
        return json.loads(line)

    def __enter__(self) -> Stopper:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _package_root() -> str:
    from harness.cell.processes import PACKAGE_ROOT

    return PACKAGE_ROOT


if __name__ == "__main__":
    sys.exit(main())
