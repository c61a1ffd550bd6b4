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

Protocol: one JSON object per line on stdin, one per line on stdout.
  {"slow": [pids], "f": 0.5, "cycle_s": 0.004}   slow these pids from now on
  {"slow": [], "f": 0.5, "cycle_s": 0.004}        keep the cycle's wake-ups, stop nothing
  {"slow": []}                                   slow nothing, sleep
  {"quit": true}                                  continue everything and exit
After each command the stopper answers with what the phase that just ended achieved:
  {"ack": n, "stopped_s": s, "slowed_s": s, "cycles": n, "late_s": s, "cpu_s": s}
(`late_s`: how much later than asked the SIGCONTs went out, summed; `cpu_s`: its own CPU
since it started).
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
    """What one slowing phase achieved (all zero for a phase that slowed nothing)."""

    stopped_s: float = 0.0
    slowed_s: float = 0.0
    cycles: int = 0
    late_s: float = 0.0

    @property
    def fraction(self) -> float | None:
        """The share of the phase the group was held stopped."""
        return self.stopped_s / self.slowed_s if self.slowed_s > 0 else None


class _Targets:
    """The processes of the group being slowed, as pidfds where possible."""

    def __init__(self) -> None:
        self.handles: dict[int, int | None] = {}  # pid -> pidfd (None: plain kill)
        self.ever: dict[int, int | None] = {}  # every process ever stopped, for the way out

    def set(self, pids: list[int]) -> None:
        self.handles = {}
        for pid in pids:
            if pid in self.ever:
                self.handles[pid] = self.ever[pid]
                continue
            try:
                fd: int | None = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
            except OSError:
                continue  # already gone
            self.handles[pid] = self.ever[pid] = fd

    def send(self, sig: int, pids: dict[int, int | None] | None = None) -> None:
        for pid, fd in (self.handles if pids is None else pids).items():
            with contextlib.suppress(OSError):
                if fd is not None:
                    signal.pidfd_send_signal(fd, sig)
                else:
                    os.kill(pid, sig)

    def release_all(self) -> None:
        self.send(signal.SIGCONT, self.ever)


def _exit_on_signal(*_: object) -> None:
    raise SystemExit(0)


def serve(commands: TextIO, replies: TextIO) -> None:
    """The stopper's loop (the child's main): commands in, duty cycles out."""
    targets = _Targets()
    fraction, cycle_s = 0.0, 0.0
    stats = PhaseStats()
    cpu0 = time.process_time()
    acks = 0
    fd = commands.fileno()
    buffer = b""
    try:
        while True:
            slowing = fraction > 0 and cycle_s > 0  # with no pids: the same wake-ups, nothing stopped
            timeout = None
            if slowing:
                start = time.monotonic()
                targets.send(signal.SIGSTOP)
                wanted = start + fraction * cycle_s
                while (now := time.monotonic()) < wanted:
                    time.sleep(wanted - now)
                targets.send(signal.SIGCONT)
                sent = time.monotonic()
                stats.stopped_s += sent - start
                stats.late_s += sent - wanted
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
                targets.send(signal.SIGCONT)  # the old group runs free from here
                acks += 1
                reply = {"ack": acks, **stats.__dict__, "cpu_s": time.process_time() - cpu0}
                replies.write(json.dumps(reply) + "\n")
                replies.flush()
                stats = PhaseStats()
                targets.set([int(p) for p in command.get("slow") or []])
                fraction = float(command.get("f") or 0.0)
                cycle_s = float(command.get("cycle_s") or 0.0)
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

    def switch(self, pids: list[int], fraction: float = 0.0, cycle_s: float = 0.0) -> PhaseStats:
        """Slow `pids` from now on (none: run free); returns what the phase before achieved."""
        self.every_pid.update(pids)
        reply = self._ask({"slow": list(pids), "f": fraction, "cycle_s": cycle_s})
        self.cpu_s = float(reply.get("cpu_s", self.cpu_s))
        return PhaseStats(reply["stopped_s"], reply["slowed_s"], reply["cycles"], reply["late_s"])

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
