"""A causal slowdown experiment on one cell: which group of the program's processes limits
its throughput, and by how much, measured by slowing each group in turn.

The cell (a suite's, or your program after `--` as the `command` suite's) is launched as
the A/B launches one (harness.ab.slicing.Instance, here in its own process group of the
harness's session: harness.causal.stopper says why; the counters of its probe in a JSON
stream every `sample_s`), runs until its probe's warm-up says the rate has settled, and its
processes are grouped (harness.causal.groups). Then rounds: every group once, in random
order, each slowed period between two periods with nothing slowed. Slowing is the
stopper's: by default each process of the group stopped f / (1 - f) s for every s it ran
(debt), or the whole group f of every cycle (duty). Every period also stops and continues
sleeping ballast processes, so that each stops as many processes. A period's rate is the
headline counter's (the one the A/B slices by), or with `io_group` that group's read and
write calls, over the period less its first `settle_s` (the queues between the stages
refill or drain when a stop begins or ends). After every round each group's sensitivity and
interval are updated (harness.causal.sensitivity); a group whose interval is at most
+-`width` leaves the rounds (its interval is anytime-valid, so it may stop there) and its
time goes to the others; the experiment ends when every interval is that narrow, or when
the next round would not fit in the budget.

The stop length matters (docs/benchmarks.md, "Causal profile"): in duty mode a stop longer
than the work buffered between two stages starves the next stage whatever the stopped
stage's slack, and a process a partner waits on every millisecond stalls it for the whole
stop; debt mode stops a process only for what the CPU it used owes. The stopper measures
the share it held each group stopped, and the observation divides by that.
"""

from __future__ import annotations

import math
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from harness.ab.revisions import Side
from harness.ab.slicing import CellFailed, Instance, counter_of
from harness.causal.groups import GroupRule, find_groups
from harness.causal.result import CONTROL, FREE, CausalOptions, CausalResult, Period
from harness.causal.sensitivity import Sensitivity, estimate, narrow_enough, observation
from harness.causal.stopper import PhaseStats, Stopper
from harness.errors import UserError
from harness.model.vocabulary import Vocabulary
from harness.monitors.waits import WaitSamples, WaitsMonitor
from harness.running import interrupts
from harness.running.matrix import Cell
from harness.watch.waits import by_role as waits_by_role
from harness.watch.waits import edges as wait_edges

PROGRESS_EVERY_S = 10.0
IDLE_CORES = 0.01  # a group under this in every free period so far is idle (debt mode never stops it)
IDLE_PERIODS = 3
BALLAST_SPARE = 1  # sleepers beyond the largest group: a free period stops at least one process


def _io_calls(pid: int) -> int | None:
    """syscr + syscw of a process (read and write system calls so far)."""
    try:
        with open(f"/proc/{pid}/io", "rb") as fh:
            fields = dict(line.split(b":", 1) for line in fh.read().splitlines() if b":" in line)
        return int(fields[b"syscr"]) + int(fields[b"syscw"])
    except (OSError, KeyError, ValueError):
        return None


def _start_sleeper() -> subprocess.Popen[bytes]:
    """A process that only sleeps, in the harness's session like the program, and dies with
    the harness: a placebo group (--control) and the ballast that every period stops and
    continues (harness.causal.stopper says why)."""
    from harness.cell.processes import ask_death_signal

    return subprocess.Popen(
        [sys.executable, "-S", "-c", "import time; time.sleep(1e6)"], stdin=subprocess.DEVNULL, process_group=0,
        preexec_fn=lambda: ask_death_signal(signal.SIGKILL),
    )  # fmt: skip


class _Launched(Side):
    def describe(self) -> str:
        return "launched by harness causal"


def _group_cpu(groups: dict[str, list[int]], handles: dict[int, psutil.Process]) -> dict[str, float]:
    out = {}
    for name, pids in groups.items():
        total = 0.0
        for pid in pids:
            proc = handles.get(pid)
            if proc is None:
                continue
            try:
                t = proc.cpu_times()
                total += t.user + t.system
            except psutil.Error:
                pass
        out[name] = total
    return out


class Experiment:
    """One causal experiment: launch, warm up, rounds until narrow or out of budget."""

    def __init__(
        self,
        cell: Cell,
        words: Vocabulary,
        run_root: Path,
        opts: CausalOptions,
        rules: list[GroupRule] | None = None,
        suite_cell: bool = True,
        announce: Callable[[str], None] = print,
    ) -> None:
        self.cell, self.words, self.run_root, self.opts = cell, words, run_root, opts
        self.rules = rules or []
        self.suite_cell = suite_cell
        self.announce = announce
        self.rng = random.Random(opts.seed)
        self.counter: str | None = None
        self.periods: list[Period] = []
        self.groups: dict[str, list[int]] = {}
        self.commands: dict[str, str] = {}
        self._handles: dict[int, psutil.Process] = {}
        self._entries: dict[int, str | None] = {}
        self._cpu_mark: dict[str, float] = {}
        self._narrow: set[str] = set()
        self._idle: set[str] = set()
        self._ballast: list[int] = []
        self._io: list[tuple[float, float]] = []  # (monotonic, the io group's calls so far)
        self._io_last: dict[int, int] = {}
        self.io_check: dict[str, Any] | None = None

    # ------------------------------------------------------------------ the run
    def run(self) -> CausalResult:
        opts = self.opts
        t0 = time.monotonic()
        cpu0 = time.process_time()
        side = _Launched("program", "program", None, Path.cwd())
        inst = Instance(
            side, self.cell, f"{self.cell.id}-causal", self.run_root, {"sample_s": opts.sample_s}, own_session=False
        )
        control = _start_sleeper() if opts.control else None
        ballast: list[subprocess.Popen[bytes]] = []
        stopper = Stopper()
        waits = WaitsMonitor()
        found: list[Sensitivity] = []
        rounds = 0
        reason = "budget"
        launch_s = warmup_s = 0.0
        try:
            launch_s = inst.wait_started(opts.start_timeout_s, 0.02)
            warmup_s = self._warm_up(inst)
            if self.counter is None and opts.io_group is None:
                raise CellFailed(
                    f"the program counted no progress in {warmup_s:.0f} s, so no period can have a rate: say where "
                    "its progress is (--progress REGEX, --progress-file, JSON count lines) or count a group's "
                    "system calls (--io-counter GROUP)"
                )
            self._regroup(inst)
            if control is not None:
                self.groups[CONTROL] = [control.pid]
                self.commands[CONTROL] = "a sleeping process of the harness's own (placebo)"
            if not self.groups:
                raise CellFailed(
                    "the program has no process to slow (only the harness's own and multiprocessing's helpers)"
                )
            if opts.io_group is not None and not self.groups.get(opts.io_group):
                raise UserError(
                    f"--io-counter {opts.io_group}: no such group; this program's groups are "
                    f"{', '.join(self.groups)} (or name one with --group NAME=PATTERN)"
                )
            # every period stops and continues as many processes: the group's, topped up with sleepers
            ballast += [_start_sleeper() for _ in range(max(len(p) for p in self.groups.values()) + BALLAST_SPARE)]
            self._ballast = [b.pid for b in ballast]
            names = ", ".join(f"{g} ({len(p)})" for g, p in self.groups.items())
            self.announce(f"groups: {names}; counter {self.counter}; {opts.period_s:g} s periods, {opts.mode} f {opts.fraction:g} "
                          f"of every {1000 * opts.cycle_s:g} ms")  # fmt: skip
            stopper.start()
            waits.start(inst.proc.pid)
            said = time.monotonic()
            while True:
                left = [g for g, pids in self.groups.items() if pids and g not in self._narrow | self._idle]
                round_s = opts.period_s * 2 * len(left)
                if not left or time.monotonic() - t0 + round_s > opts.budget_s:
                    break
                self._round(inst, stopper, rounds)
                rounds += 1
                found = self._estimate(inst)
                # a group whose interval is narrow enough is measured no more: its rounds go to the others
                self._narrow = {s.group for s in found if narrow_enough([s], opts.width)}
                self._idle |= self._idle_groups()
                found = [s for s in found if s.group not in self._idle]
                if time.monotonic() - said >= PROGRESS_EVERY_S:
                    said = time.monotonic()
                    self.announce(self._progress(rounds, found, said - t0))
                if narrow_enough(found, opts.width):
                    reason = "narrow"
                    break
                if rounds % 4 == 0:
                    self._regroup(inst)
            self._finish(stopper)
            found = [s for s in self._estimate(inst) if s.group not in self._idle]
            self.io_check = self._io_against_log(inst)
        finally:
            stopper.close()
            waits.stop()
            inst.kill()
            for sleeper in [*ballast, *([control] if control is not None else [])]:
                sleeper.kill()
                sleeper.wait()
        return CausalResult(
            self.counter, self.groups, self.commands, self.periods, found, rounds, reason,
            time.monotonic() - t0, launch_s, warmup_s, stopper.cpu_s, time.process_time() - cpu0, opts,
            self._wait_edges(waits), self.io_check, sorted(self._idle),
        )  # fmt: skip

    def _wait_edges(self, waits: WaitsMonitor) -> list[dict[str, Any]]:
        """Who waits on whom while nothing was slowed (a stopped process neither runs nor waits)."""
        free = [(p.started_wall, p.ended_wall) for p in self.periods if p.group == FREE and p.ended_wall]
        samples = waits.samples
        kept = [(t, seen) for t, seen in samples.passes if any(a <= t <= b for a, b in free)]
        if not kept:
            return []
        filtered = WaitSamples(kept, samples.holders, samples.peers, samples.cpu, samples.names)
        roles = {pid: name for name, pids in self.groups.items() for pid in pids if name != CONTROL}
        program = list(roles)
        return waits_by_role(
            wait_edges(filtered, program), roles, {g: p for g, p in self.groups.items() if g != CONTROL}
        )

    def _warm_up(self, inst: Instance) -> float:
        """At least --warmup seconds, then until the cell's probe says its rate has settled
        (its phase turns to measure) after its counter has moved twice: a program that
        starts its processes slowly has not started them while it counts nothing."""
        started = time.monotonic()
        while time.monotonic() - started < max(self.opts.warmup_max_s, self.opts.warmup_s):
            inst.read()
            self._agree(inst)
            moved = len({s.counters.get(self.counter or "", 0.0) for s in inst.samples} - {0.0}) >= 2
            if (
                time.monotonic() - started >= self.opts.warmup_s
                and moved
                and any(s.phase == "measure" for s in inst.samples)
            ):
                break
            self._check(inst)
            time.sleep(0.05)
        self._agree(inst)
        return time.monotonic() - started

    def _agree(self, inst: Instance) -> None:
        if self.counter is None:
            counters = {k: v for s in inst.samples for k, v in s.counters.items() if v > 0}
            self.counter = counter_of(self.words, counters, inst.stream.declared)

    def _regroup(self, inst: Instance) -> None:
        """The groups as they are now (a program may start processes late); names stay."""
        found = find_groups(inst.proc.pid, self.suite_cell, self.rules, self._entries)
        for name, pids in found.items():
            self.groups[name] = pids
            for pid in pids:
                if pid not in self._handles:
                    try:
                        self._handles[pid] = psutil.Process(pid)
                        self.commands.setdefault(name, " ".join(self._handles[pid].cmdline())[:200])
                    except psutil.Error:
                        pass
        for name in list(self.groups):
            if name not in found and name != CONTROL:
                self.groups[name] = []

    def _check(self, inst: Instance) -> None:
        interrupts.check()
        why = inst.failure()
        if why is not None:
            raise CellFailed(why)

    def _round(self, inst: Instance, stopper: Stopper, index: int) -> None:
        """Every group once, in random order, each between two free periods (the free
        period that ends one round opens the next)."""
        order = [g for g, pids in self.groups.items() if pids and g not in self._narrow | self._idle]
        self.rng.shuffle(order)
        if not self.periods:
            self._period(inst, stopper, index, FREE)
        for name in order:
            self._period(inst, stopper, index, name)
            self._period(inst, stopper, index, FREE)

    def _period(self, inst: Instance, stopper: Stopper, index: int, name: str) -> None:
        pids = self.groups.get(name, []) if name != FREE else []
        # the same number of processes stopped and continued in every period, free ones too
        ballast = self._ballast[: max(0, len(self._ballast) - len(pids))]
        stats = stopper.switch(pids, self.opts.fraction, self.opts.cycle_s, ballast, self.opts.mode)
        now = time.monotonic()
        cpu = _group_cpu(self.groups, self._handles)
        if self.periods:
            self._close(self.periods[-1], now, stats, self._cpu_mark, cpu)
        self._cpu_mark = cpu
        self.periods.append(Period(index, name, len(pids), now, time.time()))
        end = now + self.opts.period_s
        while (left := end - time.monotonic()) > 0:
            inst.read()
            self._io_tick()
            self._check(inst)
            time.sleep(min(0.02, left))

    def _finish(self, stopper: Stopper) -> None:
        """Close the last period (the stopper is asked for what it achieved)."""
        if self.periods and not self.periods[-1].ended:
            stats = stopper.switch([])
            self._close(
                self.periods[-1], time.monotonic(), stats, self._cpu_mark, _group_cpu(self.groups, self._handles)
            )

    @staticmethod
    def _close(
        period: Period, now: float, stats: PhaseStats, before: dict[str, float], after: dict[str, float]
    ) -> None:
        period.ended, period.ended_wall = now, time.time()
        period.stopped_s, period.slowed_s, period.cycles = stats.stopped_s, stats.slowed_s, stats.cycles
        period.fraction = stats.fraction
        length = max(now - period.started, 1e-9)
        period.cpu_cores = {g: (after.get(g, 0.0) - before.get(g, 0.0)) / length for g in after}

    def _idle_groups(self) -> set[str]:
        """In debt mode, the groups that used almost no CPU with nothing slowed: a debt is
        charged on the CPU used, so they are never stopped, and slower code of theirs
        cannot cost anything; measuring them would only spend rounds."""
        if self.opts.mode != "debt":
            return set()
        out = set()
        for name in self.groups:
            if name == CONTROL:
                continue
            used = [p.cpu_cores.get(name) for p in self.periods if p.group == FREE and p.ended]
            used = [u for u in used if u is not None]
            if len(used) >= IDLE_PERIODS and max(used) < IDLE_CORES:
                out.add(name)
        return out

    def _io_against_log(self, inst: Instance) -> dict[str, Any] | None:
        """With --io-counter: the group's calls per unit of the program's own counter over
        each half of the experiment (a proxy is trusted when the two halves agree)."""
        if self.opts.io_group is None or self.counter is None or len(self._io) < 4:
            return None
        samples = [s for s in inst.samples if s.read_at >= self._io[0][0]]
        if len(samples) < 3:
            return None
        times, calls = [t for t, _ in self._io], [c for _, c in self._io]
        halves = []
        for part in (samples[: len(samples) // 2 + 1], samples[len(samples) // 2 :]):
            logged = part[-1].counters.get(self.counter, 0.0) - part[0].counters.get(self.counter, 0.0)
            io = float(np.interp(part[-1].read_at, times, calls) - np.interp(part[0].read_at, times, calls))
            halves.append(io / logged if logged > 0 else None)
        return {"counter": self.counter, "calls_per_unit": halves}

    def _io_tick(self) -> None:
        """With --io-counter: the group's read and write calls so far (a process that ends
        keeps what it counted)."""
        if self.opts.io_group is None:
            return
        for pid in self.groups.get(self.opts.io_group, []):
            calls = _io_calls(pid)
            if calls is not None:
                self._io_last[pid] = calls
        self._io.append((time.monotonic(), float(sum(self._io_last.values()))))

    def _rate(self, inst: Instance, period: Period) -> float | None:
        """The counter's rate over the period less its settling part (child's clock; the
        cumulative count interpolated between samples at both ends); with --io-counter the
        group's system calls, on the harness's clock."""
        if self.opts.io_group is not None:
            since, until = period.started + self.opts.settle_s, period.ended
            times, counts = [t for t, _ in self._io], [c for _, c in self._io]
            if until <= since or len(times) < 2 or times[0] > since or times[-1] < until:
                return None
            return (float(np.interp(until, times, counts)) - float(np.interp(since, times, counts))) / (until - since)
        if self.counter is None:
            return None
        since = inst.child_time(period.started) + self.opts.settle_s
        until = inst.child_time(period.ended)
        times = [s.t for s in inst.samples]
        counts = [s.counters.get(self.counter, 0.0) for s in inst.samples]
        if until <= since or not times or times[0] > since or times[-1] < until:
            return None
        return (float(np.interp(until, times, counts)) - float(np.interp(since, times, counts))) / (until - since)

    def _estimate(self, inst: Instance) -> list[Sensitivity]:
        """Each slowed period against the mean rate of the free periods either side."""
        inst.read()
        self._agree(inst)
        for period in self.periods:
            if period.ended and period.rate is None:
                period.rate = self._rate(inst, period)
        values: dict[str, list[float | None]] = {g: [] for g in self.groups}
        for before, period, after in zip(self.periods, self.periods[1:], self.periods[2:], strict=False):
            if period.group == FREE or before.group != FREE or after.group != FREE:
                continue
            if before.rate is None or after.rate is None or not after.ended:
                continue
            free = (before.rate + after.rate) / 2
            # a group that used no CPU in debt mode was never stopped: its slowdown is the nominal one, costing nothing
            held = period.fraction if period.fraction is not None else self.opts.fraction
            values.setdefault(period.group, []).append(observation(free, period.rate, held))
        return [estimate(name, vals) for name, vals in values.items() if vals]

    @staticmethod
    def _progress(rounds: int, found: list[Sensitivity], elapsed: float) -> str:
        parts = []
        for s in found:
            m = s.median
            span = f"[{m.low:.2f}, {m.high:.2f}]" if math.isfinite(m.low) and math.isfinite(m.high) else "[-inf, inf]"
            parts.append(f"{s.group} {m.estimate:.2f} {span}")
        return f"round {rounds} ({elapsed:.0f} s): " + "; ".join(parts)
