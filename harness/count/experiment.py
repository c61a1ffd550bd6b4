"""A cell's count A/B: `runs` counted runs of each side (harness.count.window), two at a
time (a base and a candidate together: counts do not depend on the machine's load, and the
pair shares whatever the machine does), judged by harness.count.verdict, and for a
regression the functions whose own instructions per unit grew most (harness.count.functions).

What is counted for a cell: the user's program (the `command` suite) run directly under
callgrind in the side's tree, its progress read from its output lines with the cell's
--progress patterns; a suite's cell, `python -m harness.cell` under callgrind with its probe
printing the cell's headline counter as the harness's own JSON lines (Probe `marks`), which
the hook marks like any line: the running harness's cell and probe, each side's own suite
(this_harness). Returns data (CountAB); printing is the command's business.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.ab.revisions import Side
from harness.ab.slicing import child_spec
from harness.cell.processes import PACKAGE_ROOT
from harness.count import callgrind
from harness.count.functions import Growth, growth, window_costs
from harness.count.verdict import DEFAULT_COUNT_TOLERANCE, CountVerdict, judge
from harness.count.window import Counted, CountFailed, Plan, counted_run
from harness.errors import UserError
from harness.model.registry import get_suite
from harness.running.matrix import Cell
from harness.runs.record import cell_label

RUN_TIMEOUT_S = 600.0
SIDE_DIRS = {"base": "base", "candidate": "cand"}  # run directories' names, of one length
NO_SAMPLES_S = 24 * 3600.0  # a counted suite cell's sample period: none in any run
PILOT_HALF_S = 0.5  # a pilot's half, at least, under valgrind with nothing counted (~20x slower than native)


@dataclass
class CountOptions:
    tolerance: float = DEFAULT_COUNT_TOLERANCE
    runs: int = 2  # counted runs per side in the program's own layout (two: their agreement is evidence)
    layouts: int = 2  # memory layouts each side is counted in: one more run a side in each past the first
    lines: int = 1  # progress lines that advanced the counter, at least, in each half
    warmup_lines: int = 1  # such lines before the window may open
    # and a half lasts at least this long natively (the hardware counters' pilot; callgrind's
    # pilot runs under valgrind, PILOT_HALF_S): the window's units are then the same in every
    # run of both sides
    min_half_s: float = 0.02
    timeout_s: float = RUN_TIMEOUT_S
    parallel: int = field(default_factory=lambda: max(1, min(2, len(os.sched_getaffinity(0)))))
    tool: str = "callgrind"  # or "perf": hardware counters, natively (harness.count.hardware)

    def plan(self) -> Plan:
        return Plan(
            warmup_lines=self.warmup_lines, min_half_lines=self.lines, min_half_s=self.min_half_s,
            timeout_s=self.timeout_s,
        )  # fmt: skip


@dataclass
class Target:
    """What a counted run of one side runs."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    progress: str = ""


@dataclass
class CountAB:
    """A cell's count A/B: every run, the verdict, where the work grew."""

    cell: Cell
    label: str
    base: list[Counted] = field(default_factory=list)
    candidate: list[Counted] = field(default_factory=list)
    verdict: CountVerdict | None = None
    growth: list[Growth] = field(default_factory=list)
    error: str | None = None
    failed_side: str | None = None
    elapsed_s: float = 0.0
    plan: Plan | None = None  # the window every run counted (the native pilot's)

    @property
    def counter(self) -> str | None:
        runs = self.base + self.candidate
        return runs[0].counter if runs else None

    def to_json(self) -> dict[str, Any]:
        return {
            "counter": self.counter,
            "verdict": self.verdict.to_json() if self.verdict else None,
            "error": self.error,
            "failed_side": self.failed_side,
            "elapsed_s": self.elapsed_s,
            "plan": self.plan.to_json() if self.plan else None,
            "runs": {"base": [r.to_json() for r in self.base], "candidate": [r.to_json() for r in self.candidate]},
            "growth": [g.to_json() for g in self.growth],
        }


def target(cell: Cell, side: Side, scratch: Path) -> Target:
    """The counted run's command for `cell` on `side` (the module's docstring says what)."""
    from harness.probe import SuiteError
    from harness.program import NAME
    from harness.program.launch import build_argv

    env = {"PYTHONPATH": side.pythonpath(os.environ.get("PYTHONPATH"))}
    if cell.suite == NAME:
        params = get_suite(NAME).params.model_validate(cell.params)
        if params.progress_files.strip():
            raise UserError(
                "--measure instructions marks the program's progress in the lines it writes; progress read from "
                "files (--progress-file) cannot mark a window: measure time, or have the program print its progress"
            )
        try:
            argv = build_argv(params)
        except SuiteError as exc:
            raise UserError(str(exc)) from None
        return Target(argv, side.root, env, params.progress)
    counter = headline_counter(cell)
    # nothing the probe does on a timer inside the window: its steady test of the warm-up
    # (a trend fit every period) and its samples ran more often the longer a window took,
    # and the actor-learner's identical runs counted 0.5 % apart beside other work (40 s
    # against 52 s); a fixed warm-up and no samples (the marks are the counted run's reading)
    spec = child_spec(cell, marks=counter, steady="off", sample_s=NO_SAMPLES_S)
    # -P: `python -m` puts its working directory (the side's tree) first on sys.path, and a base
    # from before counting then ran its own cell, whose probe never marks: its pilot counted
    # 280,000 env steps in 520 s and never opened a window. Without it, the path below decides.
    argv = [sys.executable, "-P", "-m", "harness.cell", json.dumps(spec), str(scratch / "samples.jsonl")]
    env["PYTHONPATH"] = os.pathsep.join([str(this_harness(scratch.parent)), env["PYTHONPATH"]])
    return Target(argv, side.root, env)


def runs_a_side(opts: CountOptions) -> int:
    """Counted runs of each side: `runs` in the program's own layout, one in each other layout."""
    return opts.runs + opts.layouts - 1


def layout_of(i: int, opts: CountOptions) -> int:
    """The memory layout of a side's run `i` (0-based): 0 for the first `runs`, then 1, 2..."""
    return max(0, i - opts.runs + 1)


def run_label(side: str, i: int, layout: int) -> str:
    return f"{side} {i + 1}" + (f" (layout {layout})" if layout else "")


def run_dir(side: str, i: int) -> str:
    """A counted run's directory, of the same length for both sides: a suite's cell gets a path
    in it on its command line, and paths of different lengths moved the allocator's work (the
    actor-learner's identical revisions counted 1.0012 apart as base-1 against candidate-1)."""
    return f"{SIDE_DIRS[side]}-{i + 1}"


def this_harness(where: Path) -> Path:
    """A directory holding only `harness`, a link to the running harness's package, put first
    on a suite cell's PYTHONPATH: both sides' cells then run this harness's cell, probe and
    marks (a base revision from before counting could not mark), and each side's own suites
    (they come from its tree, next on the path). One directory for both sides: the paths the
    two count through have the same length."""
    folder = where / "harness-here"
    link = folder / "harness"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        link.symlink_to(Path(PACKAGE_ROOT) / "harness", target_is_directory=True)
    except FileExistsError:  # the other side's run, started at the same time, made it
        pass
    return folder


def headline_counter(cell: Cell) -> str:
    """The counter a suite's cell is counted by: its headline rate's finer counter, else its own."""
    words = get_suite(cell.suite).words
    if not words.rates:
        raise UserError(f"suite {cell.suite} declares no rate: nothing to count instructions per unit of")
    rate = words.rates[0]
    return rate.made_of or rate.counter


def pilot(cell: Cell, side: Side, here: Path, opts: CountOptions, found: dict[str, str] | None = None) -> Plan:
    """Where every counted run's window lies, in the program's units, and caches warm: the
    side's program run once under valgrind with nothing counted ("warm"), its window placed by
    the options' lines and seconds. Placed in each run by time instead, the windows of a
    program whose units differ (a solver's sampled iterations) held different units, and two
    runs of one revision differed by 0.7 %. Warm: MCCFR's numba kernels, compiled inside the
    first counted run of a fresh worktree and loaded from numba's cache by the second, counted
    2.2 % apart; compiled here, every counted run loads them (numba compiles for the CPU
    valgrind shows, not the host's: a cache written natively would not be used)."""
    out = here / f"pilot-{side.name}"
    out.mkdir(parents=True, exist_ok=True)
    tgt = target(cell, side, out)
    tool = "warm" if opts.tool == "callgrind" else "none"
    plan = replace(opts.plan(), min_half_s=PILOT_HALF_S if tool == "warm" else opts.min_half_s)
    run = counted_run(tgt.argv, tgt.cwd, out, plan, f"{side.name} pilot", tgt.env, tgt.progress, tool=tool,
                      found=found)  # fmt: skip
    return replace(run.plan, timeout_s=opts.timeout_s, min_half_s=opts.min_half_s)


def count_cell(
    cell: Cell,
    base: Side,
    cand: Side,
    root: Path,
    opts: CountOptions,
    on_run: Callable[[Counted], None] | None = None,
    found: dict[str, str] | None = None,
) -> CountAB:
    """Both sides' counted runs of `cell`, two at a time, and their verdict."""
    if opts.tool == "callgrind":
        found = found or callgrind.tools()
    result = CountAB(cell, cell_label(cell.suite, cell.params))
    started = time.monotonic()
    sides = {"base": base, "candidate": cand}
    jobs = [(name, i, layout_of(i, opts)) for i in range(runs_a_side(opts)) for name in ("base", "candidate")]
    here = root / "count" / cell.id

    def one(job: tuple[str, int, int]) -> tuple[str, Counted | str]:
        name, i, layout = job
        out = here / run_dir(name, i)
        out.mkdir(parents=True, exist_ok=True)
        tgt = target(cell, sides[name], out)
        try:
            run = counted_run(
                tgt.argv, tgt.cwd, out, result.plan or opts.plan(), run_label(name, i, layout), tgt.env, tgt.progress,
                found=found, tool=opts.tool, layout=layout,
            )  # fmt: skip
        except CountFailed as exc:
            return name, f"{name} ({sides[name].describe()}): {exc}; its output: {out / 'output.log'}"
        if on_run is not None:
            on_run(run)
        return name, run

    with ThreadPoolExecutor(opts.parallel) as pool:  # both sides' pilots: the base's places the window
        pilots = {name: pool.submit(pilot, cell, side, here, opts, found) for name, side in sides.items()}
    failed = [(name, f.exception()) for name, f in pilots.items() if f.exception() is not None]
    if failed:
        for _, exc in failed:
            if not isinstance(exc, CountFailed):
                raise exc
        result.elapsed_s = time.monotonic() - started
        result.error = "; ".join(f"{name} ({sides[name].describe()}), its pilot run: {exc}" for name, exc in failed)
        result.failed_side = failed[0][0] if len(failed) == 1 else None
        return result
    result.plan = pilots["base"].result()
    with ThreadPoolExecutor(opts.parallel) as pool:
        done = list(pool.map(one, jobs))
    result.elapsed_s = time.monotonic() - started
    failures = [(name, why) for name, why in done if isinstance(why, str)]
    for name, run in done:
        if isinstance(run, Counted):
            (result.base if name == "base" else result.candidate).append(run)
    if failures:
        sides_failed = {name for name, _ in failures}
        result.failed_side = sides_failed.pop() if len(sides_failed) == 1 else None
        result.error = "; ".join(why for _, why in failures)
        return result
    result.verdict = judge(result.base, result.candidate, opts.tolerance)
    if result.verdict.decision in ("regression", "undecided") and opts.tool == "callgrind":  # dumps: callgrind's
        b, c = result.base[0], result.candidate[0]
        result.growth = growth(
            window_costs(here / run_dir("base", 0)),
            sum(b.units),
            window_costs(here / run_dir("candidate", 0)),
            sum(c.units),
        )
    return result
