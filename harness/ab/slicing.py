"""Time-slicing two warm cells, one per side, so that they never run at the same time.

Each side's cell is a fresh `python -m harness.cell` of that side's tree, leading its own
session and process group and running for a duration far longer than it will live. The
slicer alternates the two groups: SIGCONT one (the whole group: a multi-process cell's
workers stop and resume together), let it run one slice, SIGSTOP it, continue the other.
The machine's slow phases last seconds, so two slices a second apart see the same phase,
and the pair's log-ratio cancels it; processes started seconds apart do not. A neighbour's
burst that takes the CPU away from one slice is not a phase both share: each slice's CPU
share (CPU seconds of the group per second, read while it is stopped), relative to its
side's median, is compared with its partner's, and a pair with a starved slice is
discarded from the wall-clock reading (STARVED). Read per CPU second of the cell's threads (from
its window's first sample, read as it arrived, to the stop), or with their run-queue wait
taken out (/proc/PID/task/TID/schedstat, read while the group is stopped), a slice keeps its
pair however starved: the neighbour's share is what those readings take out
(SliceResult.adjusted_rate).

A slice's rate comes from the child's own sample stream (harness.probe writes the counters
every second as JSON lines): the counter of the suite's headline rate (its vocabulary's
first Rate, or the finer counter that rate is `made_of`, since a unit that takes seconds
cannot be counted in one) over the interval between the first sample taken at least
`settle_s` after SIGCONT and the last sample before SIGSTOP, timed by the child's clock.
A slice lasts until it holds such an interval of at least `window_s` (about one sample
period: a cell's probe may write two samples milliseconds apart when its warm-up ends) and
`slice_s` has passed; one that has none after `max_slice_s` is discarded. Both children
use CLOCK_MONOTONIC (time.perf_counter), which keeps running while they are stopped, so an
interval inside one slice never spans a stop.

A block is one launch of each side (started one at a time, each alone on the machine until
it counts work), `warmup_pairs` discarded pairs, then `pairs` measured pairs whose order
(which side runs first) is drawn at random. Nothing of a block outlives it: both groups
are continued before they are killed (a stopped process would not act on SIGTERM), and
processes carrying the block's marker outside the group are killed too. A cell whose
processes leave their process group cannot be sliced (its escapees would run through the
other side's slices) and fails with that reason.
"""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from harness.ab.revisions import Side
from harness.cell.messages import ChildStream, Reader
from harness.cell.processes import alive, child_env, describe_processes, kill_tree, log_tail, marked_processes, tree
from harness.errors import UserError
from harness.model.vocabulary import Vocabulary
from harness.monitors.gpu_use import gpu_use
from harness.monitors.gpu_use import refusal as gpu_refusal
from harness.monitors.procstat import thread_sched
from harness.running import interrupts
from harness.running.cell_log import DEFAULT_CAP_MB, CellLog
from harness.running.matrix import Cell
from harness.runs.record import explicit_params

# The child runs for a duration, not a fixed amount of work, however the cell was budgeted;
# long enough that it never stops by itself before the slicer kills it. Its probe's short
# warm-up makes it write a sample as soon as its workload starts (the probe samples at the
# end of warm-up, then every second), which is when its launch is over.
CHILD_DURATION_S = 24 * 3600.0
CHILD_WARMUP_S = 0.05
STOP_TIMEOUT_S = 2.0  # the longest the slicer waits for a stopped cell's threads to act on it
NO_PROGRESS_SLICES = 5  # consecutive slices without a rate: the cell is not making progress
# A slice whose cell got less than this share of the CPU it usually gets, relative to what
# the other slice of its pair got, was starved by a neighbour's burst, not slowed by its
# code: the pair is discarded. Each share is taken relative to its side's median (a
# candidate that waits more than the base is not discarded for it) and the two slices of a
# pair are compared with each other (a load that lasts hits both and is the pairing's job).
STARVED = 0.7
STARVED_HISTORY = 4  # slices of a side before its median share is trusted
# Read per CPU second or without run-queue waits, a starved slice whose cell ran less than
# this (CPU seconds) is left out: its counter moved by a step or two (otherwise it counts)
MIN_SLICE_CPU_S = 0.05
# Below this typical share (cores) a cell mostly waits, and the kernel's 10 ms CPU clock is
# too coarse for a 1 s slice: such cells are not judged.
STARVED_MIN_SHARE = 0.2


@dataclass
class SliceOptions:
    """How slices and blocks are laid out (docs/benchmarks.md, "A/B gate", measured them)."""

    slice_s: float = 1.0  # minimum slice length; a slice also waits for its measured window
    window_s: float = 0.9  # the measured interval inside a slice spans at least this (a sample period)
    max_slice_s: float = 5.0  # a slice with no usable interval by then is discarded
    settle_s: float = 0.0  # samples this soon after SIGCONT do not open a slice's interval
    # measured pairs per block (per launch); None: chosen before each block from the blocks so
    # far (harness.ab.experiment.next_pairs): one where fresh processes, not pairs, carry the
    # noise (an idle machine), more where the slices do (neighbours taking the CPU)
    pairs: int | None = None
    warmup_pairs: int = 1  # pairs discarded after each launch
    start_timeout_s: float = 180.0  # launch to first counted work (a cold numba cache compiles)
    poll_s: float = 0.005
    # "own": each side's cell leads a session of its own; "shared": a process group of its own
    # in the harness's session (kernel autogroups: harness.causal.stopper)
    session: str = "own"
    pin_cpus: int = 0  # > 0: both sides' processes on the same this many CPUs, drawn per block
    shared_hash_seed: bool = False  # one PYTHONHASHSEED per block for both sides (unless the user set one)


class CellFailed(Exception):
    """A side's cell could not be run or sliced; the message says which side and why.
    `side` is "base" or "candidate" when one side is to blame, None when it is the pairing."""

    def __init__(self, message: str, side: str | None = None) -> None:
        super().__init__(message)
        self.side = side


@dataclass
class Sample:
    t: float  # the child's clock, seconds since its probe started
    counters: dict[str, float]
    read_at: float  # the parent's time.monotonic() when it read the line
    phase: str = "measure"  # the child probe's phase (warmup until its rate settled)
    counted: dict[str, float] = field(default_factory=dict)  # when a counter that lags `t` last moved

    def as_of(self, counter: str) -> float:
        """The child's time at which `counter` last moved: its value is the work done by then."""
        return self.counted.get(counter, self.t)


@dataclass
class SliceResult:
    side: str
    started: float  # parent's monotonic time of SIGCONT
    length_s: float  # SIGCONT to SIGSTOP
    window_s: float | None  # the measured interval inside it, between its first and last samples
    rate: float | None  # counter per second over the window; None: discarded
    cpu_share: float | None = None  # CPU seconds of the cell's processes per second of the slice
    starved: bool = False  # its CPU share fell below STARVED x its partner's (both by their side's median)
    # the cell's threads' run-queue wait in the slice, CPU-weighted mean over its threads (s):
    # runnable, not run, because the CPU was busy (None where schedstat cannot be read)
    runq_s: float | None = None
    stopping_s: float = 0.0  # SIGSTOP sent to every thread stopped (part of length_s)
    # the cell's CPU seconds from its window's first sample (as read when it arrived) to the
    # stop: the slice's, less what ran before the window opened; None where no window opened
    window_cpu_s: float | None = None
    window_wall_s: float | None = None  # the seconds those CPU seconds were taken over (the parent's clock)
    # the program's running seconds between the counts the window's first and last samples hold
    # (their as-of times, stops left out): what `rate` is over (Slicer._measure)
    timed_s: float | None = None

    def adjusted_rate(self, estimand: str) -> float | None:
        """The slice's rate as an estimand reads it: "wall" as measured; "cpu" per second of
        the cell's CPU time (what contention for the CPU cannot change, nor waits);
        "runq" with the run-queue wait taken out of the slice's time (waits stay in);
        "waits" not a rate but the share of the slice's time without run-queue waits that
        its cell was on a CPU (harness ab --measure instructions decides its waits on it)."""
        if not self.rate:
            return None
        if estimand == "wall":
            return None if self.starved else self.rate
        # a starved slice counts here (the neighbour's share is what these take out), if the
        # cell ran long enough for its counter to say something (a cell that sleeps by design
        # uses little CPU in every slice, and is not starved)
        if not self.cpu_share or (self.starved and self.cpu_share * self.length_s < MIN_SLICE_CPU_S):
            return None
        if estimand == "cpu":  # the rate over the window's CPU share from its opening. A window
            # mostly opens at SIGCONT (a stopped cell's probe is overdue and writes at once), but
            # a cell launched just before its slice writes its next sample up to a second later,
            # and the whole slice's CPU over the window's count read it at half its rate (an
            # identical candidate at 0.498 in CI). The rate, not the count over that CPU: the
            # count steps by a program's reports, which the rate is timed by (Slicer._measure).
            # Without that reading, the slice's share is taken as even over the slice.
            if self.window_cpu_s and self.window_wall_s:
                return self.rate * self.window_wall_s / self.window_cpu_s
            return self.rate / self.cpu_share
        if estimand == "runq":
            if self.runq_s is None or self.runq_s >= self.length_s:
                return None
            return self.rate * self.length_s / (self.length_s - self.runq_s)
        if estimand == "waits":  # the CPU time over the time without run-queue waits: the share
            # of a unit's time that is work. rate(cpu) / rate(runq), so it falls by exactly what
            # a unit's waits off the CPU (sleep, I/O, locks) add to its time, and a change of
            # the CPU's speed, which moves the work and its time alike, cancels
            if self.runq_s is None or self.runq_s >= self.length_s:
                return None
            return self.cpu_share * self.length_s / (self.length_s - self.runq_s)
        raise ValueError(f"unknown estimand {estimand!r}")


ESTIMANDS = ("wall", "cpu", "runq", "waits")


@dataclass
class Pair:
    block: int
    index: int
    warmup: bool
    first: str  # which side ran first
    base: SliceResult
    cand: SliceResult

    @property
    def log_ratio(self) -> float | None:
        return self.log_ratio_of("wall")

    def log_ratio_of(self, estimand: str) -> float | None:
        """log(candidate / base) of the two slices' rates as `estimand` reads them."""
        base, cand = self.base.adjusted_rate(estimand), self.cand.adjusted_rate(estimand)
        return math.log(cand / base) if base and cand else None

    def to_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "log_ratio": self.log_ratio,
            **{f"{e}_log_ratio": self.log_ratio_of(e) for e in ESTIMANDS[1:]},
        }


@dataclass
class Block:
    index: int
    pairs: list[Pair] = field(default_factory=list)
    launch_s: dict[str, float] = field(default_factory=dict)
    elapsed_s: float = 0.0

    def log_ratios(self, estimand: str = "wall") -> list[float]:
        return [lr for p in self.pairs if not p.warmup and (lr := p.log_ratio_of(estimand)) is not None]

    @property
    def value(self) -> float | None:
        """The block's wall-clock observation: its mean pair log-ratio."""
        return self.value_of("wall")

    def value_of(self, estimand: str) -> float | None:
        """The block's mean pair log-ratio as `estimand` reads the rates."""
        ratios = self.log_ratios(estimand)
        return sum(ratios) / len(ratios) if ratios else None


def counter_of(words: Vocabulary, counters: dict[str, float], declared: str | None = None) -> str | None:
    """The counter a slice's rate counts: the headline Rate's finer `made_of` counter, else
    its counter; with no declared rate the one the cell declared at run time (a program's
    own counter, Probe.declare_rate), else the first it reports, alphabetically."""
    for rate in words.rates:
        for name in (rate.made_of, rate.counter):
            if name and name in counters:
                return name
    if words.rates or not counters:
        return None
    return declared if declared in counters else min(counters)


class Instance:
    """One side's cell process for one block: launched, stopped and continued as a group,
    its JSON lines read as they arrive."""

    def __init__(
        self,
        side: Side,
        cell: Cell,
        key: str,
        run_root: Path,
        spec_extra: dict[str, Any] | None = None,
        own_session: bool = True,
        cpus: frozenset[int] | None = None,
        env_extra: dict[str, str] | None = None,
    ) -> None:
        # absolute: the child runs in the side's tree (cwd), where a relative run directory
        # (`--out results`, the default) does not exist
        self.side, self.key, self.run_root = side, key, run_root.resolve()
        run_root = self.run_root
        self.scratch = run_root / "series" / f".{key}.jsonl"
        self.log = run_root / "logs" / f"{key}.log"
        self.scratch.unlink(missing_ok=True)
        spec = child_spec(cell, **(spec_extra or {}))
        env = child_env(key, run_root)
        env["PYTHONPATH"] = side.pythonpath(os.environ.get("PYTHONPATH"))
        env.update(env_extra or {})
        # the slice's output copied into its log, capped as a cell's (the tail kept)
        self.output = CellLog(self.log, int((cell.log_cap_mb or DEFAULT_CAP_MB) * 1e6))
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "harness.cell", json.dumps(spec), str(self.scratch)],
                cwd=side.root,
                stdin=subprocess.DEVNULL,
                stdout=self.output.write_fd,
                stderr=subprocess.STDOUT,
                # its own session, or (a causal experiment) its own process group in the
                # harness's session: the kernel's autogroup then holds it with the stopper
                start_new_session=own_session,
                process_group=None if own_session else 0,
                env=env,
                # before exec: every process the cell starts inherits the CPUs
                preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus),
            )
        except BaseException:
            self.output.close()
            raise
        self.output.started()
        self.launched = time.monotonic()
        self.ran_to_end = False  # it exited with code 0 and said nothing wrong: failure() sets it
        self.pgid = self.proc.pid
        self.known: dict[int, psutil.Process] = {}
        self.samples: list[Sample] = []
        self.stream = ChildStream()  # what it said: the declared headline counter, its error
        self._reader = Reader(self.scratch)
        self._offset = math.inf  # parent monotonic - child clock, at its smallest seen
        self.stopped = False
        self._stopped_at: float | None = None  # parent monotonic of the SIGSTOP in force
        self.pauses: list[tuple[float, float]] = []  # (SIGSTOP, SIGCONT), parent monotonic

    # ------------------------------------------------------------------ the stream
    def read(self) -> list[Sample]:
        """New samples of the child's stream (complete lines only); they are kept too."""
        messages = self._reader.read()
        now = time.monotonic()
        new = []
        for message in self.stream.add(messages):
            sample = Sample(
                float(message["t"]), dict(message.get("counters") or {}), now, str(message.get("phase", "measure")),
                {name: float(at) for name, at in (message.get("counted") or {}).items()},
            )  # fmt: skip
            self._offset = min(self._offset, now - sample.t)
            new.append(sample)
        self.samples += new
        return new

    def child_time(self, monotonic: float) -> float:
        """A parent time.monotonic() on the child's clock (never later than the truth)."""
        return monotonic - self._offset if math.isfinite(self._offset) else -math.inf

    def failure(self) -> str | None:
        """Why the child is no longer running, or None while it runs."""
        code = None
        if self.stream.error_message is None:
            code = self.proc.poll()
            if code is None:
                return None
            self.read()  # what it wrote before it ended
        error = self.stream.error_message
        if error is not None:
            return f"{self.side.name} ({self.side.describe()}): {error.get('reason')}"
        tail = log_tail(self.log)
        self.ran_to_end = code == 0
        ended = (
            f" (the program ran to its end {time.monotonic() - self.launched:.1f} s after its launch: too short "
            "a run to time-slice; a longer one, more iterations or generations, gives it slices)"
            if self.ran_to_end
            else ""
        )
        return f"{self.side.name} ({self.side.describe()}): the cell exited with code {code}{ended}" + (
            f"; log: {tail}" if tail else ""
        )

    def failed(self) -> CellFailed | None:
        """failure() as the exception to raise, or None while the cell runs. Its side is to
        blame unless the program ran to its end (exit code 0, nothing said wrong): then no side
        failed, the run was only too short to slice (DEAP's onemax example ends in 1.4 s), and
        the A/B says so without blaming either (harness ab's exit 3, not 1)."""
        reason = self.failure()
        if reason is None:
            return None
        return CellFailed(reason, None if self.ran_to_end else self.side.name)

    def sched_times(self) -> dict[tuple[int, int], tuple[float, float]]:
        """(seconds on a CPU, seconds in the run queue) so far of every thread of every live
        process of the cell, by (pid, tid); psutil's CPU time of the whole process, with no
        run-queue time (nan), where the kernel's schedstat cannot be read."""
        out: dict[tuple[int, int], tuple[float, float]] = {}
        for proc in tree(self.proc.pid):
            threads = thread_sched(proc.pid)
            if threads:
                out.update({(proc.pid, tid): times for tid, times in threads.items()})
                continue
            try:
                times = proc.cpu_times()
                out[(proc.pid, 0)] = (times.user + times.system, math.nan)
            except psutil.Error:
                pass
        return out

    # ------------------------------------------------------------------ the group
    def signal(self, sig: int) -> None:
        try:
            os.killpg(self.pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self) -> None:
        self.signal(signal.SIGSTOP)
        self.stopped = True
        self._stopped_at = time.monotonic()

    def wait_stopped(self, timeout_s: float = STOP_TIMEOUT_S) -> float:
        """Wait until every thread of the cell has acted on SIGSTOP; the seconds it took. A
        thread that waits in the run queue when the signal comes runs on until the CPU is
        its again: on a busy machine up to a second, in which it would run beside the other
        side's slice, and the kernel adds the wait to its run-queue time only when it ends."""
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            if all(_stopped(proc.pid) for proc in tree(self.proc.pid)):
                break
            time.sleep(0.001)
        return time.monotonic() - started

    def cont(self) -> None:
        self.signal(signal.SIGCONT)
        self.stopped = False
        if self._stopped_at is not None:
            self.pauses.append((self._stopped_at, time.monotonic()))
            self._stopped_at = None

    def running_s(self, start: float, end: float) -> float:
        """The seconds the cell ran between two times of its clock: the stops between them
        (each SIGSTOP to its SIGCONT, as the parent timed them) left out. A stop's length is
        the parent's, whatever the offset of the clocks; only where it falls uses the offset."""
        stopped = 0.0
        for paused, resumed in self.pauses:
            low, high = max(start, self.child_time(paused)), min(end, self.child_time(resumed))
            stopped += max(high - low, 0.0)
        return end - start - stopped

    def ran_since(self) -> float:
        """When, on its clock, the run before the latest stop began (its launch, at first): a
        count as of then or later was made in this slice or the last one."""
        return self.child_time(self.pauses[-2][1]) if len(self.pauses) >= 2 else -math.inf

    def counted(self) -> bool:
        """Whether the cell has counted any work yet (a sample with a counter above zero)."""
        return any(v > 0 for s in self.samples for v in s.counters.values())

    def wait_started(self, timeout_s: float, poll_s: float, counted: bool = False) -> float:
        """Run alone until the cell's probe writes its first sample, or with `counted` until
        it has counted work (its workload has started; what is left of its warm-up falls in
        the discarded warm-up pairs); returns the seconds it took. The A/B's blocks need
        `counted`: a user's program's probe writes samples from its launch, while its imports
        and envs may take tens of seconds before its first progress line (rl_zoo3 took 30 s
        on the loaded VM), and a block's slices ran out before it printed one. (The causal
        experiment waits for counts itself, and may count system calls instead.)"""
        started = time.monotonic()
        while True:
            self.read()
            if self.counted() if counted else self.samples:
                return time.monotonic() - started
            failed = self.failed()
            if failed is not None:
                raise failed
            if time.monotonic() - started > timeout_s:
                said = "counted no work" if self.samples else "wrote no sample"
                raise CellFailed(
                    f"{self.side.name} ({self.side.describe()}): its probe {said} within {timeout_s:g} s of its start",
                    self.side.name,
                )
            interrupts.check()
            time.sleep(max(poll_s, 0.02))

    def check_group(self) -> None:
        """Every process of the cell must be in its group, or slicing cannot hold it still."""
        self.known.update({p.pid: p for p in tree(self.proc.pid)})
        escaped = []
        for pid, proc in marked_processes(self.run_root, self.key).items():
            self.known.setdefault(pid, proc)
            try:
                if os.getpgid(pid) != self.pgid:
                    escaped.append(proc)
            except ProcessLookupError:
                pass
        if escaped:
            raise CellFailed(
                f"{self.side.name}: processes of the cell left its process group ({describe_processes(escaped)}); "
                "SIGSTOP of the group cannot hold them, so this cell cannot be time-sliced",
                self.side.name,
            )

    def kill(self) -> None:
        """Continue the group (a stopped process ignores SIGTERM until continued), then end
        it, every process seen in it, and whatever carries its marker elsewhere."""
        self.known.update({p.pid: p for p in tree(self.proc.pid)})
        self.cont()
        for proc in alive(self.known):
            try:
                proc.resume()
            except psutil.Error:
                pass
        kill_tree(self.pgid, self.known, grace_s=1.0)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        leftover = {p: h for p, h in marked_processes(self.run_root, self.key).items() if p != self.proc.pid}
        if leftover:
            kill_tree(None, leftover, grace_s=0.5)
        self.output.close()
        self.scratch.unlink(missing_ok=True)


def child_spec(cell: Cell, **extra: Any) -> dict[str, Any]:
    """The spec of a cell's child run until told to stop (a time-sliced instance, a counted
    run): open-ended, no work target, `extra` on top."""
    return {
        "suite": cell.suite,
        # each side fills in its own defaults: a knob the base revision lacks (added at
        # its default since) would otherwise make the base refuse the cell
        "params": explicit_params(cell.suite, cell.params),
        "duration": CHILD_DURATION_S,
        "warmup": CHILD_WARMUP_S,
        "work": None,
        "memory_limit_mb": cell.memory_limit_mb,
        **extra,
    }


def refuse_gpu(inst: Instance, what: str) -> None:
    """A UserError when the instance's processes use a GPU (harness.monitors.gpu_use; `what`
    says why that cannot be measured); a note on stderr where only /proc saw the driver."""
    use, note = gpu_use(p.pid for p in tree(inst.proc.pid))
    if use is not None:
        raise UserError(gpu_refusal(use, what))
    if note is not None:
        print(f"note: {inst.side.name}: {note}", file=sys.stderr, flush=True)


class Slicer:
    """Runs blocks of one cell: base and candidate instances, alternated in slices. Two
    revisions of one cell (harness ab), or one revision's two cells (`cand_cell`: harness
    tune's challenger against its incumbent, the same suite with other params)."""

    def __init__(
        self,
        cell: Cell,
        words: Vocabulary,
        base: Side,
        cand: Side,
        run_root: Path,
        opts: SliceOptions,
        rng: random.Random,
        cand_cell: Cell | None = None,
    ) -> None:
        self.cell, self.words, self.opts, self.rng = cell, words, opts, rng
        self.cells = {"base": cell, "candidate": cand_cell or cell}
        self.sides = {"base": base, "candidate": cand}
        self.run_root = run_root
        self.counter: str | None = None
        self.live: list[Instance] = []
        self._previous: Instance | None = None  # the instance that ran the last slice
        self._shares: dict[str, list[float]] = {}  # CPU share of every slice so far, by side

    def block(self, index: int, pairs: int | None = None) -> Block:
        """Launch fresh processes of both sides, run the block's pairs (`pairs` measured ones,
        else the options'), end the processes."""
        block = Block(index)
        started = time.monotonic()
        order = ["base", "candidate"]
        self.rng.shuffle(order)
        instances: dict[str, Instance] = {}
        cpus, env = self._block_placement()
        try:
            for name in order:  # one at a time: a start-up never overlaps the other's work
                cell = self.cells[name]
                inst = Instance(
                    self.sides[name], cell, f"{cell.id}-{name}-{index}", self.run_root,
                    own_session=self.opts.session == "own", cpus=cpus, env_extra=env,
                )  # fmt: skip
                self.live.append(inst)
                instances[name] = inst
                block.launch_s[name] = inst.wait_started(self.opts.start_timeout_s, self.opts.poll_s, counted=True)
                if index == 0:
                    refuse_gpu(inst, "a time-sliced A/B cannot separate two sides that share it")
                inst.stop()
                inst.wait_stopped()
            total = self.opts.warmup_pairs + (pairs or self.opts.pairs or 2)
            failures = 0
            for i in range(total):
                pair = self._pair(instances, index, i, warmup=i < self.opts.warmup_pairs)
                block.pairs.append(pair)
                measured = pair.base.rate is not None and pair.cand.rate is not None
                failures = 0 if measured else failures + 1
                if self.counter is None and failures >= NO_PROGRESS_SLICES:
                    self._agree_on_counter(instances, final=True)
                if failures >= NO_PROGRESS_SLICES:
                    raise CellFailed(
                        f"{failures} pairs in a row without a rate on a side: the cell counts no "
                        f"{self.counter} within {self.opts.max_slice_s:g} s slices"
                    )
                if i == max(self.opts.warmup_pairs, 1) - 1:
                    for inst in instances.values():  # all its workers are up by now
                        inst.check_group()
        finally:
            self.close()
        block.elapsed_s = time.monotonic() - started
        return block

    def _block_placement(self) -> tuple[frozenset[int] | None, dict[str, str]]:
        """What both sides of a block share: the CPUs they are pinned to, the hash seed."""
        cpus = None
        if self.opts.pin_cpus > 0:
            allowed = sorted(os.sched_getaffinity(0))
            cpus = frozenset(self.rng.sample(allowed, min(self.opts.pin_cpus, len(allowed))))
        env = {}
        if self.opts.shared_hash_seed and "PYTHONHASHSEED" not in os.environ:
            env["PYTHONHASHSEED"] = str(self.rng.randrange(1, 2**32 - 1))
        return cpus, env

    def close(self) -> None:
        """End every live instance (also on Ctrl-C and on errors)."""
        while self.live:
            self.live.pop().kill()

    def _agree_on_counter(self, instances: dict[str, Instance], final: bool) -> None:
        """The counter both sides' slices are measured by, once both have reported one
        (a cell's first samples may have counted nothing yet)."""
        names = {}
        for name, inst in instances.items():
            counters = {k: v for s in inst.samples for k, v in s.counters.items() if v > 0}
            names[name] = counter_of(self.words, counters, inst.stream.declared)
        if names["base"] is not None and names["base"] == names["candidate"]:
            self.counter = names["base"]
        elif None not in names.values() or final:
            raise CellFailed(
                f"the sides do not report the same headline counter (base: {names['base']}, "
                f"candidate: {names['candidate']}); nothing to compare"
            )

    def _pair(self, instances: dict[str, Instance], block: int, index: int, warmup: bool) -> Pair:
        first = "base" if self.rng.random() < 0.5 else "candidate"
        second = "candidate" if first == "base" else "base"
        ran = {name: self._slice(instances[name]) for name in (first, second)}
        if self.counter is None:  # a cell's first samples may have counted nothing yet
            self._agree_on_counter(instances, final=False)
        results = {name: self._measure(result, window, instances[name]) for name, (result, window) in ran.items()}
        self._judge_shares(results)
        return Pair(block, index, warmup, first, results["base"], results["candidate"])

    def _judge_shares(self, results: dict[str, SliceResult]) -> None:
        """Mark a slice starved when its CPU share, relative to its side's median, fell
        below STARVED x its partner's (relative to the partner side's median)."""
        relative = {}
        for side, result in results.items():
            history = self._shares.setdefault(side, [])
            if result.cpu_share is None:
                continue
            if len(history) >= STARVED_HISTORY:
                typical = sorted(history)[len(history) // 2]
                if typical >= STARVED_MIN_SHARE:
                    relative[side] = result.cpu_share / typical
            history.append(result.cpu_share)
        if len(relative) == 2:
            base, cand = relative["base"], relative["candidate"]
            results["base"].starved = base < STARVED * cand
            results["candidate"].starved = cand < STARVED * base

    def _measure(self, result: SliceResult, window: list[Sample], inst: Instance) -> SliceResult:
        """The slice's rate of the agreed counter over its measured window: the growth between
        its first and last samples over the time between the counts they hold. A program that
        prints its progress every 0.2 s has its samples read up to a report late; timed by the
        samples, its 1 s slices read the producers program 7-8 % apart (cv), timed by the
        reports 1-2 % (the samples' `counted`; benchmarks/report_timing.py). A first count
        made before the stop that opened the slice was made while the cell ran (up to that
        stop), so the stop is left out of its time (Instance.running_s); one made before the
        slice's last run began is too old to pair with the other side, and the samples' own
        times are taken."""
        if self.counter is None or _span(window) < self.opts.window_s:
            return result
        first, last = window[0], window[-1]
        result.window_s = last.t - first.t
        count = last.counters.get(self.counter, 0.0) - first.counters.get(self.counter, 0.0)
        start, end = first.as_of(self.counter), last.as_of(self.counter)
        timed = inst.running_s(start, end) if start >= inst.ran_since() and end > start else 0.0
        result.timed_s = timed if timed > 0 else inst.running_s(first.t, last.t)
        rate = count / result.timed_s if result.timed_s > 0 else 0.0
        result.rate = rate if rate > 0 else None
        return result

    def _slice(self, inst: Instance) -> tuple[SliceResult, list[Sample]]:
        """One slice of `inst`: the result (rate still to measure) and its measured window."""
        opts = self.opts
        inst.read()  # anything left from before the stop belongs to the last slice
        # The same side again (pairs AB then BA): it was stopped for microseconds, so its
        # last sample still opens an interval; otherwise only samples from now on do.
        carried = inst is self._previous and bool(inst.samples)
        mark = len(inst.samples) - 1 if carried else len(inst.samples)
        sched_before = inst.sched_times()  # the group is stopped: exact
        # each signal timed by the middle of clock readings either side of it: on a busy
        # machine the harness can lose the CPU between reading the clock and signalling, and a
        # slice timed from before SIGCONT counted up to a second in which the cell was still
        # stopped (neither on a CPU nor in the run queue: at load 15, 5 % of slices > 0.24 s)
        t_asked = time.monotonic()
        inst.cont()
        t_cont = (t_asked + time.monotonic()) / 2
        # the CPU run before the window opened (a window carried from the last slice opened
        # before this one began): read when its first sample is, so that the rate per CPU
        # second counts the window's CPU, not the slice's
        at_opening = None if not carried else sched_before
        opened_at = t_cont if carried else None  # when at_opening was read
        while True:
            interrupts.check()
            time.sleep(opts.poll_s)
            inst.read()
            now = time.monotonic()
            usable = self._usable(inst, mark, t_asked, carried)
            if at_opening is None and usable:
                at_opening, opened_at = inst.sched_times(), time.monotonic()
            if now - t_cont >= opts.slice_s and _span(usable) >= opts.window_s:
                break
            if now - t_cont >= opts.max_slice_s:
                break
            if inst.proc.poll() is not None:
                break
        inst.stop()
        stopping_s = inst.wait_stopped()  # before the other side runs, and before its counters are read
        self._previous = inst
        t_stop = time.monotonic()
        cpu_s, runq_s = slice_sched(sched_before, inst.sched_times())
        failed = inst.failed()
        if failed is not None:
            raise failed
        inst.read()  # lines written before the stop
        usable = self._usable(inst, mark, t_asked, carried)
        share = cpu_s / (t_stop - t_cont) if t_stop > t_cont else None
        result = SliceResult(inst.side.name, t_cont, t_stop - t_cont, None, None, share, runq_s=runq_s)
        result.stopping_s = stopping_s
        if at_opening is not None and opened_at is not None:  # the end is the stopped reading: exact
            result.window_cpu_s = max(cpu_s - slice_sched(sched_before, at_opening)[0], 0.0)
            result.window_wall_s = max(t_stop - opened_at, 0.0)
        return result, usable

    def _usable(self, inst: Instance, mark: int, t_cont: float, carried: bool) -> list[Sample]:
        since = inst.child_time(t_cont) + self.opts.settle_s
        fresh = [s for s in inst.samples[mark + carried :] if s.t >= since]
        return [inst.samples[mark], *fresh] if carried else fresh


def _stopped(pid: int) -> bool:
    """Every thread of `pid` stopped (or the process gone)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as fh:
                raw = fh.read()
        except OSError:
            continue
        if raw[raw.rfind(b")") + 2 : raw.rfind(b")") + 3] not in (b"T", b"t", b"Z", b"X"):
            return False
    return True


def slice_sched(
    before: dict[tuple[int, int], tuple[float, float]], after: dict[tuple[int, int], tuple[float, float]]
) -> tuple[float, float | None]:
    """(CPU seconds of the cell's threads, their run-queue wait) over a slice, from their
    counters read while it was stopped at both ends. The wait is the CPU-weighted mean over
    threads: a thread that ran most is what most of the work waited for, an idle helper
    counts for nothing. None where a thread's run-queue time could not be read."""
    cpu = waited = 0.0
    known = True
    for key, (run, runq) in after.items():
        run0, runq0 = before.get(key, (0.0, 0.0))
        ran = max(run - run0, 0.0)
        cpu += ran
        if math.isnan(runq) or math.isnan(runq0):
            known = False
        else:
            waited += ran * max(runq - runq0, 0.0)
    return cpu, (waited / cpu if cpu > 0 else 0.0) if known else None


def _span(samples: list[Sample]) -> float:
    """Seconds between the first and the last sample (0 with fewer than two)."""
    return samples[-1].t - samples[0].t if len(samples) >= 2 else 0.0
