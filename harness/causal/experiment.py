"""A causal slowdown experiment on one cell: which group of the program's processes limits
its throughput, and by how much, measured by slowing each group in turn.

The cell (a suite's, or your program after `--` as the `command` suite's) is launched as
the A/B launches one (harness.ab.slicing.Instance, here in its own process group of the
harness's session: harness.causal.stopper says why; the counters of its probe in a JSON
stream every `sample_s`), runs until its probe's warm-up says the rate has settled and the
counter has reported often enough for its cadence to be known (harness.causal.cadence),
and its processes are grouped (harness.causal.groups). The cadence sets the period: a
period must hold 5 reports. Where the budget cannot hold the rounds that period asks for,
a group whose read/write calls tracked the counter through the warm-up counts the
throughput instead (harness.causal.proxy); where none did, the experiment is refused before
it begins, naming the budget that would do (harness.causal.plan).

Then rounds: every group once, in random order, each slowed period between two periods
with nothing slowed. Slowing is the stopper's: by default each process of the group
stopped f / (1 - f) s for every s it ran (debt), or the whole group f of every cycle
(duty). Every period also stops and continues sleeping ballast processes, so that each
stops as many processes. A period's rate is the throughput between the first and the last
report inside it, less its first `settle_s` (the queues between the stages refill or drain
when a stop begins or ends). After every round each group's sensitivity and interval are
updated (harness.causal.rounds, harness.causal.sensitivity), the next round's period is set
by Coz's rule (fewer than 5 reports in a period: twice as long; more than 10: half), a
group whose interval is at most +-`width` and in one verdict's range, or wholly between
slack's and critical's, leaves the rounds (its interval is anytime-valid, so it may stop
there) and its time goes to the others; the experiment ends when every group has left,
when the next round would not fit in the budget, or, where the caller says which readings
it acts on (`futile_for`: harness tune's), when no group left could settle into one of
them in the rounds the budget still holds were they like the rounds so far (futile:
harness.causal.sensitivity.could_settle; a tune's experiment is a slice of its search's
budget).
The verdicts are the intervals gated by the evidence (harness.causal.verdicts).

The stop length matters (docs/explain/causal.md): in duty mode a stop longer than the work
buffered between two stages starves the next stage whatever the stopped stage's slack, and
a process a partner waits on every millisecond stalls it for the whole stop; debt mode
stops a process only for what the CPU it used owes. The stopper measures the share it held
each group stopped, and the observation divides by that.
"""

from __future__ import annotations

import bisect
import math
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from harness.ab.revisions import Side
from harness.ab.slicing import CellFailed, Instance, counter_of, refuse_gpu
from harness.causal import cadence as cad
from harness.causal import proxy
from harness.causal.groups import GroupRule, find_groups
from harness.causal.periods import CONTROL, FREE, Period
from harness.causal.plan import ROUNDS_WANTED, Plan, refusal
from harness.causal.result import CausalOptions, CausalResult
from harness.causal.rounds import fewest_reports, observations
from harness.causal.sensitivity import Sensitivity, estimate, futile, rounds_alone, settled
from harness.causal.stopper import PhaseStats, Stopper, ThreadClocks
from harness.causal.verdicts import IDLE_CORES
from harness.cell.processes import tree
from harness.errors import UserError
from harness.model.vocabulary import Vocabulary
from harness.monitors.waits import WaitSamples, WaitsMonitor
from harness.running import interrupts
from harness.running.matrix import Cell
from harness.watch.waits import by_role as waits_by_role
from harness.watch.waits import edges as wait_edges

PROGRESS_EVERY_S = 10.0
IDLE_PERIODS = 3
BALLAST_SPARE = 1  # sleepers beyond the largest group: a free period stops at least one process
CADENCE_SHARE = 0.25  # of the budget, at most, spent waiting for the reports a cadence needs
MARKS_KEPT = 40  # the counter's last reports in warm-up that the proxy's choice reads calls at
TREE_EVERY_S = 1.0  # warm-up: the cell's process tree read again this often (psutil walks every process)
IO_WARMUP_S = 3.0  # with --io-counter: warm-up at least this long, the calls' cadence measured over it
REPORTS_KEPT = 20000  # the throughput's reports kept in causal.json (a 20 ms proxy: the last 400 s)


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


def _group_cpu(groups: dict[str, list[int]], clocks: ThreadClocks) -> dict[str, tuple[float, float]]:
    """Each group's (CPU seconds, seconds runnable but waiting for a CPU) so far, summed over
    its processes' threads (the kernel's schedstat): the second is how crowded the machine
    was for the group, which its stops do not add to."""
    out = {}
    for name, pids in groups.items():
        ran = waited = 0
        for pid in pids:
            found = clocks.read(pid)
            if found is not None:
                ran, waited = ran + found[0], waited + found[1]
        out[name] = (ran / 1e9, waited / 1e9)
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
        self.period_s = opts.period_s  # this round's period (harness.causal.cadence sets it)
        self.io_group = opts.io_group  # the group whose calls count the throughput, if any
        self.proxy: dict[str, Any] | None = None
        self.cadence: dict[str, Any] = {}
        self._handles: dict[int, psutil.Process] = {}
        self._entries: dict[int, str | None] = {}
        self._cpu_mark: dict[str, tuple[float, float]] = {}
        self._clocks = ThreadClocks()
        self._narrow: set[str] = set()
        self._idle: set[str] = set()
        self._ballast: list[int] = []
        self._lost: dict[str, tuple[int, int]] = {}
        self._values: dict[str, list[float | None]] = {}  # each group's observations so far
        # the counter's reports (child clock), each process's calls at the last MARKS_KEPT of them
        self._counter_reports: list[cad.Report] = []
        self._samples_read = 0
        self._last_count: float | None = None
        self._warm_io: list[tuple[float, dict[int, int]]] = []  # warm-up: (child time, each process's calls)
        # with a proxy: every tracking group's calls so far (child clock), the first one's the headline;
        # a group slowed is measured through another's (its own calls pause with its stops)
        self.io_groups: list[str] = [opts.io_group] if opts.io_group else []
        self._io: dict[str, list[tuple[float, float]]] = {}
        self._io_reports: dict[str, list[cad.Report]] = {}
        self._io_last: dict[str, dict[int, int]] = {}
        self._tree: list[int] = []
        self._tree_read_at = -math.inf

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
            warmup_s = self._warm_up(inst, t0)
            refuse_gpu(inst, "stopping its processes does not stop the work queued on the device")
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
                try:  # a program that ended during the warm-up (DEAP's onemax, 2.7 s): its cell exits after it
                    inst.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
                self._check(inst)  # ... and says so, its exit code and its log, not "no process"
                raise CellFailed(
                    "the program has no process to slow (only the harness's own and multiprocessing's helpers)"
                )
            if opts.io_group is not None and not self.groups.get(opts.io_group):
                raise UserError(
                    f"--io-counter {opts.io_group}: no such group; this program's groups are "
                    f"{', '.join(self.groups)} (or name one with --group NAME=PATTERN)"
                )
            self._choose_throughput(inst, time.monotonic() - t0)
            # every period stops and continues as many processes: the group's, topped up with sleepers
            ballast += [_start_sleeper() for _ in range(max(len(p) for p in self.groups.values()) + BALLAST_SPARE)]
            self._ballast = [b.pid for b in ballast]
            names = ", ".join(f"{g} ({len(p)})" for g, p in self.groups.items())
            self.announce(f"groups: {names}; {self._throughput_words()}; {self.period_s:.2g} s periods, {opts.mode} "
                          f"f {opts.fraction:g} of every {1000 * opts.cycle_s:g} ms")  # fmt: skip
            stopper.start()
            waits.start(inst.proc.pid)
            said = time.monotonic()
            while True:
                left = [g for g, pids in self.groups.items() if pids and g not in self._narrow | self._idle]
                round_s = self.period_s * 2 * len(left) + (0 if self.periods else self.period_s)
                if not left or time.monotonic() - t0 + round_s > opts.budget_s:
                    break
                self.cadence.setdefault("periods_s", []).append(round(self.period_s, 3))
                self._round(inst, stopper, rounds)
                found = self._estimate(inst)
                self._adapt(rounds)
                rounds += 1
                # a group whose interval is narrow enough is measured no more: its rounds go to the others
                # (a narrow one in no verdict's range, +0.69 [..] a hair below critical, is measured on)
                self._narrow = {s.group for s in found if settled(s, opts.width)}
                self._idle |= self._idle_groups()
                found = [s for s in found if s.group not in self._idle]
                if time.monotonic() - said >= PROGRESS_EVERY_S:
                    said = time.monotonic()
                    self.announce(self._progress(rounds, found, said - t0))
                if found and all(settled(s, opts.width) for s in found):
                    reason = "narrow"
                    break
                if found and self._futile(found, opts.budget_s - (time.monotonic() - t0)):
                    reason = "futile"
                    break
                if rounds % 4 == 0:
                    self._regroup(inst)
            self._finish(stopper, inst)
            found = [s for s in self._estimate(inst) if s.group not in self._idle]
            self._check_proxy(inst)
        finally:
            stopper.close()
            waits.stop()
            inst.kill()
            for sleeper in [*ballast, *([control] if control is not None else [])]:
                sleeper.kill()
                sleeper.wait()
        series = self._io_reports.get(self.io_group, []) if self.io_group else self._counter_reports
        return CausalResult(
            self.counter, self.groups, self.commands, self.periods, found, rounds, reason,
            time.monotonic() - t0, launch_s, warmup_s, stopper.cpu_s, time.process_time() - cpu0, opts,
            self._wait_edges(waits), self.proxy, sorted(self._idle), dict(self._lost), self.cadence,
            [(r.t, r.count) for r in series[-REPORTS_KEPT:]],
        )  # fmt: skip

    def _throughput_words(self) -> str:
        every = self.cadence.get("cadence_s")
        how = f", reported every {every:.2g} s" if every else ""
        if self.io_group:
            chosen = "" if self.opts.io_group else f" (chosen: {self.counter} is too sparse for the budget)"
            return f"throughput: read+write calls of {self.io_group}{chosen}{how}"
        return f"throughput: {self.counter}{how}"

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

    # ------------------------------------------------------------------ warm-up and cadence
    def _warm_up(self, inst: Instance, t0: float) -> float:
        """At least --warmup seconds, then until the cell's probe says its rate has settled
        (its phase turns to measure) after its counter has moved twice (a program that starts
        its processes slowly has not started them while it counts nothing), and until the
        counter has reported often enough for its cadence to be known, or CADENCE_SHARE of
        the budget is gone. Every process's calls are read at each report, for the proxy."""
        started = time.monotonic()
        cap = min(
            max(self.opts.warmup_max_s, self.opts.warmup_s), max(self.opts.warmup_s, CADENCE_SHARE * self.opts.budget_s)
        )
        while time.monotonic() - started < cap:
            self._read(inst, warm=True)
            elapsed = time.monotonic() - started
            settled = (
                elapsed >= self.opts.warmup_s
                and len(self._counter_reports) >= 2
                and any(s.phase == "measure" for s in inst.samples)
            )
            if settled and len(self._counter_reports) > cad.CADENCE_REPORTS:
                break
            if (
                self.opts.io_group is not None
                and elapsed >= max(self.opts.warmup_s, IO_WARMUP_S)
                and (settled or self.counter is None)
            ):
                break  # the user's proxy counts the throughput: the counter's cadence is not needed
            self._check(inst)
            time.sleep(0.05)
        self._read(inst, warm=True)
        return time.monotonic() - started

    def _read(self, inst: Instance, warm: bool = False) -> None:
        """New samples of the cell: the counter agreed on, its reports kept; in warm-up
        every process's calls, every tick (the proxy's choice and its own cadence)."""
        inst.read()
        self._agree(inst)
        new = inst.samples[self._samples_read :]
        self._samples_read = len(inst.samples)
        for sample in new:
            count = sample.counters.get(self.counter or "")
            if count is None:
                continue
            if self._last_count is not None and count != self._last_count:
                # when the count was made, not when it was sampled (a report's own time)
                self._counter_reports.append(cad.Report(sample.as_of(self.counter or ""), count))
            self._last_count = count
        if warm:
            if time.monotonic() >= self._tree_read_at + TREE_EVERY_S:
                self._tree, self._tree_read_at = [p.pid for p in tree(inst.proc.pid)], time.monotonic()
            calls = {pid: c for pid in self._tree if (c := proxy.io_calls(pid)) is not None}
            self._warm_io.append((inst.child_time(time.monotonic()), calls))

    def _choose_throughput(self, inst: Instance, elapsed_s: float) -> None:
        """The period the cadence asks for, and the throughput it is read from: the counter
        where the budget holds ROUNDS_WANTED rounds at its period; else a group's calls that
        tracked it through the warm-up (or the user's --io-counter), where they give more
        rounds; else the counter where the budget holds ROUNDS_PLANNED; else a refusal
        naming the budget that would do."""
        opts = self.opts
        measured = [g for g, pids in self.groups.items() if pids]
        reports = self._counter_reports[1:]  # the first report closes the program's start-up, not a gap
        every = cad.cadence(reports)
        lower = every is None
        if lower:
            every = cad.cadence_at_least(self._counter_reports, inst.child_time(time.monotonic()))
        plan = Plan(cad.period_for(every, opts.settle_s, opts.period_s), len(measured), elapsed_s, opts.budget_s)
        self.cadence = {
            "counter_cadence_s": every,
            "lower_bound": lower,
            "reports_in_warmup": len(self._counter_reports),
        }
        usable = opts.io_group is None and self.counter is not None and plan.enough and not lower
        if usable and plan.rounds_fit >= ROUNDS_WANTED:
            self._use("counter", every, plan)
            return
        recent = [(r.t, r.count) for r in self._counter_reports[-MARKS_KEPT:]]
        since = recent[0][0] - 1.0 if recent else math.inf  # the processes alive since the first report read
        marks = proxy.marks_at(recent, [(t, c) for t, c in self._warm_io if t >= since])
        found = proxy.tracking(marks, {g: self.groups[g] for g in measured if g != CONTROL})
        chosen = opts.io_group or (best.group if (best := proxy.choose(found)) else None)
        io_plan: Plan | None = None
        io_every = opts.sample_s
        if chosen is not None:
            series = [(t, float(sum(c.get(p, 0) for p in self.groups[chosen]))) for t, c in self._warm_io]
            io_every = cad.cadence(cad.reports_of(series)) or opts.sample_s
            io_plan = Plan(
                cad.period_for(io_every, opts.settle_s, opts.period_s), len(measured), elapsed_s, opts.budget_s
            )
            if io_plan.enough and (opts.io_group or not usable or io_plan.rounds_fit > plan.rounds_fit):
                self.io_group = chosen
                others = sorted((t for t in found if t.tracks and t.group != chosen), key=lambda t: t.spread)
                self.io_groups = [chosen, *(t.group for t in others)] if not opts.io_group else [chosen]
                self.proxy = {"group": chosen, "chosen": "user" if opts.io_group else "auto", "groups": self.io_groups,
                              "tracking": [{"group": t.group, "halves": list(t.halves),
                                            "calls_per_unit": list(t.calls_per_unit)} for t in found]}  # fmt: skip
                self._use("io", io_every, io_plan)
                return
        if usable:
            self._use("counter", every, plan)
            return
        if opts.io_group and io_plan is not None:
            plan, every, lower = io_plan, io_every, False
        tried = "; ".join(t.describe() for t in found) or "none made enough calls between two reports"
        note = (
            f" (each group's calls per unit over the two halves of the warm-up's reports, which must agree "
            f"within {proxy.DRIFT:.0%}: {tried})"
            if opts.io_group is None
            else ""
        )
        what = f"read+write calls of {opts.io_group}" if opts.io_group else (self.counter or "its progress")
        raise UserError(refusal(plan, what, every, lower, note))

    def _use(self, source: str, every: float, plan: Plan) -> None:
        self.period_s = plan.period_s
        self.cadence.update(source=source, cadence_s=every, period_s=plan.period_s, rounds_fit=plan.rounds_fit,
                            budget_needed_s=plan.budget_needed_s)  # fmt: skip

    def _adapt(self, index: int) -> None:
        """Coz's rule for the next round's period (harness.causal.cadence.next_period)."""
        fewest = fewest_reports(self.periods, index)
        if fewest is None:
            return
        reports = self._io_reports.get(self.io_group, []) if self.io_group else self._counter_reports
        self.period_s = cad.next_period(
            self.period_s, fewest, self.opts.period_s, cad.cadence(reports[1:]), self.opts.settle_s
        )

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

    # ------------------------------------------------------------------ rounds and periods
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
        cpu = _group_cpu(self.groups, self._clocks)
        if self.periods:
            self._close(self.periods[-1], now, stats, self._cpu_mark, cpu)
        self._cpu_mark = cpu
        self.periods.append(Period(index, name, len(pids), now, time.time()))
        end = now + self.period_s
        while (left := end - time.monotonic()) > 0:
            self._read(inst)
            self._io_tick(inst)
            self._check(inst)
            time.sleep(min(0.02, left))

    def _finish(self, stopper: Stopper, inst: Instance) -> None:
        """Close the last period (the stopper is asked for what it achieved), and read the
        samples that cover its end."""
        if self.periods and not self.periods[-1].ended:
            stats = stopper.switch([])
            self._close(self.periods[-1], time.monotonic(), stats, self._cpu_mark, _group_cpu(self.groups, self._clocks))
        time.sleep(2 * self.opts.sample_s)
        self._read(inst)
        self._io_tick(inst)

    def _close(
        self,
        period: Period,
        now: float,
        stats: PhaseStats,
        before: dict[str, tuple[float, float]],
        after: dict[str, tuple[float, float]],
    ) -> None:
        period.ended, period.ended_wall = now, time.time()
        period.stopped_s, period.slowed_s, period.cycles = stats.stopped_s, stats.slowed_s, stats.cycles
        period.fraction = stats.fraction
        length = max(now - period.started, 1e-9)
        zero = (0.0, 0.0)
        period.cpu_cores = {g: (after[g][0] - before.get(g, zero)[0]) / length for g in after}
        period.queued_cores = {g: (after[g][1] - before.get(g, zero)[1]) / length for g in after}
        period.dose = stats.fraction
        if self.opts.mode == "debt" and period.group in after and stats.stopped_s > 0:
            # a stop of s seconds costs a group that runs a share a of its runnable time a * s of running
            ran, queued = period.cpu_cores[period.group] * length, period.queued_cores[period.group] * length
            share = ran / (ran + queued) if ran + queued > 0 else 1.0
            lost = share * stats.stopped_s
            period.dose = lost / (lost + ran) if lost + ran > 0 else None

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

    # ------------------------------------------------------------------ the I/O proxy
    def _io_tick(self, inst: Instance) -> None:
        """With a proxy: each tracking group's read and write calls so far, on the child's
        clock (a process that ends keeps what it counted)."""
        if self.io_group is None:
            return
        t = inst.child_time(time.monotonic())
        for group in self.io_groups:
            last = self._io_last.setdefault(group, {})
            for pid in self.groups.get(group, []):
                calls = proxy.io_calls(pid)
                if calls is not None:
                    last[pid] = calls
            total = float(sum(last.values()))
            series = self._io.setdefault(group, [])
            if series and total != series[-1][1]:
                self._io_reports.setdefault(group, []).append(cad.Report(t, total))
            series.append((t, total))

    def _check_proxy(self, inst: Instance) -> None:
        """The proxy's calls per unit of the program's counter, over each half."""
        if self.proxy is None:
            return
        counter = [(r.t, r.count) for r in self._counter_reports]
        per_half = proxy.halves(self._io.get(self.io_group or "", []), counter)
        self.proxy.update(halves=per_half, drifted=proxy.drifted(per_half), counter=self.counter)

    # ------------------------------------------------------------------ rates and estimates
    def _estimate(self, inst: Instance) -> list[Sensitivity]:
        """Each closed period's rate from the reports inside it (with a proxy, one per
        tracking group), then each group's observations (harness.causal.rounds) and interval."""
        self._read(inst)
        if self.io_group:
            sources = {g: self._io_reports.get(g, []) for g in self.io_groups}
            last_seen = min((self._io[g][-1][0] for g in self.io_groups if self._io.get(g)), default=-math.inf)
        else:
            sources = {"": self._counter_reports}
            last_seen = inst.samples[-1].t if inst.samples else -math.inf
        times = {name: [r.t for r in reports] for name, reports in sources.items()}
        for period in self.periods:
            if not period.ended or period.child_ended:
                continue
            since = inst.child_time(period.started) + self.opts.settle_s
            until = inst.child_time(period.ended)
            if last_seen < until:
                continue  # the samples that cover its end have not arrived
            period.child_started, period.child_ended = since - self.opts.settle_s, until
            for name, reports in sources.items():
                lo, hi = bisect.bisect_left(times[name], since), bisect.bisect_right(times[name], until)
                rate, count = cad.window_rate(reports[lo:hi], since, until)
                if name:
                    period.rates[name], period.counts[name] = rate, count
                if not name or name == self.io_group:
                    period.rate, period.reports = rate, count
        values, self._lost = observations(self.periods, self.opts.fraction)
        self._values = values
        # a group whose every round was lost is listed too (with no interval: its verdict says why)
        return [estimate(name, values.get(name, [])) for name in dict.fromkeys([*values, *self._lost])]

    def _futile(self, found: list[Sensitivity], left_s: float) -> bool:
        """With `futile_for` (the readings the caller acts on): no group still measured
        could settle into one in the rounds the budget holds, even with every one of them to
        itself, so the rest of the budget would buy nothing the caller uses. A tune's
        experiment is a slice of the search's budget and acts on no `between`."""
        return futile(found, self._values, rounds_alone(left_s, self.period_s), self.opts.width, self.opts.futile_for)

    @staticmethod
    def _progress(rounds: int, found: list[Sensitivity], elapsed: float) -> str:
        parts = []
        for s in found:
            m = s.median
            span = f"[{m.low:.2f}, {m.high:.2f}]" if math.isfinite(m.low) and math.isfinite(m.high) else "[-inf, inf]"
            parts.append(f"{s.group} {m.estimate:.2f} {span}")
        return f"round {rounds} ({elapsed:.0f} s): " + "; ".join(parts)
