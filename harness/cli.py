"""The `harness` command line. Parses arguments and hands off to harness.commands.<name>.main.

Command modules are imported when their command runs, so `harness --help` stays quick.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
import typer.core

from harness.errors import UserError
from harness.runs.store import DEFAULT_RESULTS

app = typer.Typer(
    help="Benchmark and profile parallel game solvers and self-play training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def user_errors_exit_2(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            code = fn(*args, **kwargs)
        except UserError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
        raise typer.Exit(code or 0)

    return wrapper


def _version(value: bool) -> None:
    if value:
        from harness import __version__

        print(f"harness {__version__}")
        raise typer.Exit(0)


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="print the harness's version and exit"
    ),
) -> None:
    """Benchmark and profile parallel game solvers and self-play training."""


class ProgramTail(typer.core.TyperCommand):
    """A command that takes your program after `--` (`harness sweep --workers 1,4 -- python
    train.py --n {workers}`): everything after the first `--` is kept whole in
    `ctx.meta[PROGRAM]`, so the program's own flags are never read as the harness's."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if "--" in args:
            cut = args.index("--")
            ctx.meta[PROGRAM] = args[cut + 1 :]
            args = args[:cut]
        return super().parse_args(ctx, args)


PROGRAM = "harness.program_argv"
ProgressOpt = typer.Option(
    None, "--progress", help="with -- CMD: a regex with named groups for progress the readers miss, e.g. "
    "'After (?P<frames>\\d+) frames'; repeatable",
)  # fmt: skip
ProgressFileOpt = typer.Option(
    None, "--progress-file", help="with -- CMD: a CSV or TensorBoard event file (glob, or a log directory) the "
    "program writes its progress to; repeatable",
)  # fmt: skip


def program_of(ctx: typer.Context, progress: list[str] | None, progress_files: list[str] | None) -> Any:
    """The program after `--` with its progress readers, or None; --progress without a
    program is a UserError."""
    from harness.commands.program import Program

    return Program.from_cli(ctx.meta.get(PROGRAM), progress, progress_files)


SetOpt = typer.Option(None, "--set", help="k=v or k=v1,v2 (a list is a sweep axis); repeatable")
DurationOpt = typer.Option(None, "--duration", help="measured seconds per cell (with --target: the cap, default 120)")
WarmupOpt = typer.Option(None, "--warmup", help="seconds excluded from rates: the floor of the automatic warm-up")
SteadyOpt = typer.Option(
    None, "--steady", help="auto (default): measure once the rate has settled; off: --warmup is fixed"
)
SteadyMaxOpt = typer.Option(None, "--steady-max", help="the most an automatic warm-up may last (default 10 s)")
TargetOpt = typer.Option(
    None,
    "--target",
    help="run each cell until a quality target is met, e.g. accuracy>=0.9 (quality metrics: harness suites)",
)
TargetEveryOpt = typer.Option(None, "--target-every", help="measured seconds between quality checks (default 0.5)")
WorkOpt = typer.Option(None, "--work", help="fixed work units instead of a duration")
TimeoutOpt = typer.Option(None, "--timeout", help="deadline per cell in seconds (default warmup+duration+60)")
OutOpt = typer.Option(DEFAULT_RESULTS, "--out", help="directory that receives run directories")
MemoryOpt = typer.Option(
    None, "--memory-limit", help="end a cell whose process tree uses more than this many MB (PSS summed; a watchdog)"
)


@app.command()
@user_errors_exit_2
def suites() -> int:
    """List every suite with its parameters (type, allowed values, default, unit)."""
    from harness.commands import suites as command

    return command.main()


@app.command()
@user_errors_exit_2
def run(
    suite: str = typer.Argument(..., help="suite name (see `harness suites`)"),
    set_: list[str] = SetOpt,
    duration: float = DurationOpt,
    warmup: float = WarmupOpt,
    steady: str = SteadyOpt,
    steady_max: float = SteadyMaxOpt,
    target: str = TargetOpt,
    target_every: float = TargetEveryOpt,
    work: int = WorkOpt,
    timeout: float = TimeoutOpt,
    json_: bool = typer.Option(False, "--json", help="print the cell's record as JSON"),
    out: Path = OutOpt,
    memory_limit: float = MemoryOpt,
) -> int:
    """Run one cell and print its metrics."""
    from harness.commands import run as command

    budget = {"duration": duration, "warmup": warmup, "steady": steady, "steady_max": steady_max, "target": target,
              "target_every": target_every, "work": work, "timeout": timeout, "memory_limit_mb": memory_limit}  # fmt: skip
    return command.main(suite, set_, budget, json_, out)


@app.command(cls=ProgramTail)
@user_errors_exit_2
def sweep(
    ctx: typer.Context,
    spec: Path = typer.Argument(None, help="sweep spec (TOML); flags override it; -- CMD ...: your program"),
    suite: str = typer.Option(None, "--suite", help="run only this suite's entries (or just this suite)"),
    workers: str = typer.Option(None, "--workers", help="comma list, e.g. 4,8,32,128 (0 = one per core)"),
    backend: str = typer.Option(None, "--backend", help="comma list, e.g. processes,server"),
    set_: list[str] = SetOpt,
    duration: float = DurationOpt,
    warmup: float = WarmupOpt,
    steady: str = SteadyOpt,
    steady_max: float = SteadyMaxOpt,
    target: str = TargetOpt,
    target_every: float = TargetEveryOpt,
    work: int = WorkOpt,
    repeats: int = typer.Option(None, "--repeats", help="repeats of every cell"),
    out: Path = OutOpt,
    label: str = typer.Option(None, "--label", help="name in the run directory"),
    resume: Path = typer.Option(None, "--resume", help="finish this run directory's missing cells"),
    timeout: float = TimeoutOpt,
    quiet: bool = typer.Option(False, "--quiet", help="plain lines, failures only"),
    executor: str = typer.Option("local", "--executor", help="local or ray"),
    address: str = typer.Option(None, "--address", help="Ray cluster address (with --executor ray)"),
    memory_limit: float = MemoryOpt,
    force: bool = typer.Option(
        False, "--force", help="with --resume: resume a run measured at another commit (noted in run.json)"
    ),
    retry_failed: bool = typer.Option(
        False, "--retry-failed", help="with --resume: run failed cells again (their failed records stay as history)"
    ),
    progress: list[str] = ProgressOpt,
    progress_file: list[str] = ProgressFileOpt,
) -> int:
    """Run a matrix of cells (or your program after --, every axis filling its {placeholder});
    exit 0 if all are ok, 1 if any failed, 2 on bad input, 130 on Ctrl-C."""
    from harness.commands import sweep as command

    program = program_of(ctx, progress, progress_file)
    budget = {"duration": duration, "warmup": warmup, "steady": steady, "steady_max": steady_max, "target": target,
              "target_every": target_every, "work": work, "repeats": repeats, "timeout": timeout,
              "memory_limit_mb": memory_limit}  # fmt: skip
    overrides = command.build_overrides(suite, workers, backend, set_, budget, label, program)
    return command.main(spec, overrides, out, resume, quiet, executor, address, force, retry_failed)


@app.command()
@user_errors_exit_2
def report(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    csv: bool = typer.Option(False, "--csv", help="(re)write summary.csv and cells.csv"),
    html: bool = typer.Option(False, "--html", help="(re)write report.html (self-contained, opens offline)"),
    markdown: bool = typer.Option(False, "--markdown", help="write summary.md (for CI step summaries)"),
) -> int:
    """Print a run's table; --csv, --html, --markdown write those reports into the run directory."""
    from harness.commands import report as command

    return command.main(run_dir, csv, html, markdown)


@app.command()
@user_errors_exit_2
def compare(
    run_a: Path = typer.Argument(..., help="baseline run directory (A)"),
    run_b: Path = typer.Argument(..., help="candidate run directory (B)"),
    html: bool = typer.Option(False, "--html", help="also write compare-<A>.html into B's directory"),
    fail_on: str = typer.Option(
        None, "--fail-on", help="regression: exit 1 if a throughput of B is slower beyond --tolerance, 3 if undecided"
    ),
    tolerance: str = typer.Option(None, "--tolerance", help="with --fail-on: slowdown allowed (default 3%)"),
) -> int:
    """Ratio B/A of medians per matched cell and metric, with a bootstrap 95% interval."""
    from harness.commands import compare as command

    return command.main(run_a, run_b, html, fail_on, tolerance)


@app.command()
@user_errors_exit_2
def diagnose(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    json_: bool = typer.Option(False, "--json", help="print the findings as JSON"),
    fail_on: str = typer.Option(
        None, "--fail-on", help="error, warning or info: exit 1 when a finding at or above it exists (for CI)"
    ),
) -> int:
    """Findings over a run: lost work, drift, idle or thrashing GPU, small batches, scaling, busy waits."""
    from harness.commands import diagnose as command

    return command.main(run_dir, json_, fail_on)


baseline_app = typer.Typer(help="Save runs as baselines for `harness gate`.", no_args_is_help=True)
app.add_typer(baseline_app, name="baseline")
BaselineDirOpt = typer.Option(Path("results/baselines"), "--dir", help="where baselines are kept")


@baseline_app.command("save")
@user_errors_exit_2
def baseline_save(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    name: str = typer.Option(..., "--name", help="baseline name: written as DIR/NAME.json"),
    directory: Path = BaselineDirOpt,
    bound_slack: float = typer.Option(0.10, "--bound-slack", help="quality bounds = worst repeat x (1 + this)"),
) -> int:
    """Freeze a run's per-repeat metrics and metadata into a baseline file."""
    from harness.commands import baseline as command

    return command.save_main(run_dir, name, directory, bound_slack)


@app.command()
@user_errors_exit_2
def profile(
    suite: str = typer.Argument(..., help="suite name (see `harness suites`)"),
    set_: list[str] = SetOpt,
    duration: float = DurationOpt,
    warmup: float = WarmupOpt,
    timeout: float = TimeoutOpt,
    rate: int = typer.Option(100, "--rate", help="py-spy samples per second"),
    native: bool = typer.Option(False, "--native", help="also sample C/C++ frames (torch, numpy)"),
    flamegraph: bool = typer.Option(
        False, "--flamegraph", help="also write a flamegraph SVG (runs the cell a second time)"
    ),
    out: Path = OutOpt,
) -> int:
    """Run one cell under py-spy (all its processes); write a speedscope profile into the run."""
    from harness.commands import profile as command

    return command.main(suite, set_, duration, warmup, timeout, rate, native, flamegraph, out)


@app.command()
@user_errors_exit_2
def gate(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    baseline: str = typer.Option(
        None, "--baseline", help="baseline name (in --dir), a baseline .json, or a run directory"
    ),
    against: str = typer.Option(
        None, "--against", help="REV: A/B every ok cell of the run against this revision (speed checks)"
    ),
    directory: Path = BaselineDirOpt,
    tolerance: str = typer.Option(
        None, "--tolerance", help="e.g. 3% (default: see docs/benchmarks.md, CI gate trial and A/B gate)"
    ),
    metric: list[str] = typer.Option(
        None, "--metric", help="metrics to speed-gate against the baseline (default: every throughput); repeatable"
    ),
    normalize: str = typer.Option(
        None, "--normalize", help="SUITE: divide throughputs by that suite's reference cell of the same run"
    ),
    confidence: float = typer.Option(0.95, "--confidence", help="interval confidence; with --against, 1 - error rate"),
    ignore_param: list[str] = typer.Option(None, "--ignore-param", help="match cells as if this param were equal"),
    allow_missing: bool = typer.Option(
        False, "--allow-missing", help="a baseline cell or metric missing from the run is reported, not failed"
    ),
    budget: float = typer.Option(None, "--budget", help="with --against: A/B seconds per cell (default 180)"),
    slice_s: float = typer.Option(None, "--slice", help="with --against: minimum slice length in seconds"),
    pairs: int = typer.Option(None, "--pairs", help="with --against: measured pairs per launch"),
    warmup_pairs: int = typer.Option(None, "--warmup-pairs", help="with --against: pairs discarded per launch"),
    min_blocks: int = typer.Option(
        None, "--min-blocks", help="with --against: blocks run whatever the budget (default: the fewest that can decide)"
    ),
    seed: int = typer.Option(None, "--seed", help="with --against: seed of the pair orders"),
) -> int:
    """Gate a run: exit 1 on a regression or a missing cell, 3 when an A/B stayed undecided, 0 on pass, 2 on bad input."""
    from harness.commands import ab as ab_command
    from harness.commands import gate as command

    ab_opts = ab_command.build_options(None, budget, confidence, slice_s, None, pairs, seed, warmup_pairs, min_blocks)
    return command.main(
        run_dir, baseline, directory, tolerance, metric, normalize, confidence, ignore_param, allow_missing,
        against, ab_opts,
    )  # fmt: skip


ToleranceOpt = typer.Option(
    None, "--tolerance", help="slowdown allowed, e.g. 3% (default: docs/benchmarks.md, A/B gate)"
)
BudgetOpt = typer.Option(None, "--budget", help="A/B seconds per cell before it is called undecided (default 180)")
ABConfidenceOpt = typer.Option(0.95, "--confidence", help="A/B: 1 - each decision's error rate")
SliceOpt = typer.Option(None, "--slice", help="A/B: minimum slice length in seconds (default 1)")
SettleOpt = typer.Option(None, "--settle", help="A/B: seconds after SIGCONT not measured (default 0)")
PairsOpt = typer.Option(None, "--pairs", help="A/B: measured pairs per launch of fresh processes (default 2)")
WarmupPairsOpt = typer.Option(None, "--warmup-pairs", help="A/B: pairs discarded after each launch (default 1)")
MinBlocksOpt = typer.Option(
    None, "--min-blocks", help="A/B: blocks run whatever the budget (default: the fewest that can decide, 7 at 95 %)"
)
SeedOpt = typer.Option(None, "--seed", help="A/B: seed of the pair orders (default: drawn and recorded)")


@app.command(cls=ProgramTail)
@user_errors_exit_2
def ab(
    ctx: typer.Context,
    base_rev: str = typer.Argument(..., help="the base revision (commit, branch, tag: HEAD~1, origin/main)"),
    rest: list[str] = typer.Argument(None, help="[CAND_REV] (default: the working tree) [SPEC.toml]"),
    suite: str = typer.Option(None, "--suite", help="this suite's cells (or its entries of the spec)"),
    workers: str = typer.Option(None, "--workers", help="comma list: one cell per value"),
    backend: str = typer.Option(None, "--backend", help="comma list: one cell per value"),
    set_: list[str] = SetOpt,
    tolerance: str = ToleranceOpt,
    budget: float = BudgetOpt,
    confidence: float = ABConfidenceOpt,
    slice_s: float = SliceOpt,
    settle: float = SettleOpt,
    pairs: int = PairsOpt,
    warmup_pairs: int = WarmupPairsOpt,
    min_blocks: int = MinBlocksOpt,
    seed: int = SeedOpt,
    out: Path = OutOpt,
    label: str = typer.Option(None, "--label", help="name in the A/B's directory"),
    quiet: bool = typer.Option(False, "--quiet", help="no line per block"),
    progress: list[str] = ProgressOpt,
    progress_file: list[str] = ProgressFileOpt,
) -> int:
    """A/B two revisions on this machine, time-sliced (your program after --, run in each
    revision's worktree): exit 0 no regression, 1 regression, 3 undecided, 2 bad input."""
    from harness.commands import ab as command

    opts = command.build_options(tolerance, budget, confidence, slice_s, settle, pairs, seed, warmup_pairs, min_blocks)
    program = program_of(ctx, progress, progress_file)
    return command.main(base_rev, rest, suite, workers, backend, set_, opts, out, label, quiet, program)


@app.command()
@user_errors_exit_2
def history(
    suite: str = typer.Option(None, "--suite", help="only this suite's cells"),
    metric: str = typer.Option(None, "--metric", help="default: the suite's headline rate"),
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="directory holding run directories"),
    html: Path = typer.Option(None, "--html", help="chart path (default RESULTS/history-SUITE-METRIC.html)"),
) -> int:
    """Every run's median of a metric in time order, with its git commit: table and HTML chart."""
    from harness.commands import history as command

    return command.main(suite, metric, results, html)


@app.command()
@user_errors_exit_2
def export(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    pyperf: Path = typer.Option(None, "--pyperf", help="write a pyperf BenchmarkSuite JSON here"),
    bmf: Path = typer.Option(None, "--bmf", help="write Bencher Metric Format JSON here (bencher run --adapter json)"),
    github_action: Path = typer.Option(
        None,
        "--github-action",
        help="write github-action-benchmark JSON here (tool customBiggerIsBetter for rates, "
        "customSmallerIsBetter when every --metric is lower-is-better)",
    ),
    metric: list[str] = typer.Option(None, "--metric", help="metrics to export (default: every rate); repeatable"),
) -> int:
    """Export a run for other tools and dashboards: pyperf, Bencher (BMF), github-action-benchmark."""
    from harness.commands import export as command

    return command.main(run_dir, {"pyperf": pyperf, "bmf": bmf, "github_action": github_action}, metric)


@app.command()
@user_errors_exit_2
def doctor(
    seconds: float = typer.Option(20.0, "--seconds", help="length of the noise reading (2-600 s)"),
    out: Path = OutOpt,
    json_: bool = typer.Option(False, "--json", help="print the reading as JSON"),
) -> int:
    """This machine's facts (governor, load, steal, SMT, isolated CPUs, GPUs) and how noisy it is."""
    from harness.commands import doctor as command

    return command.main(seconds, out, json_)


@app.command()
@user_errors_exit_2
def limits(
    parts: str = typer.Option(None, "--parts", help="ipc and SUITE.NAME limit benchmarks (default: all)"),
    set_: list[str] = typer.Option(None, "--set", help="k=v option of the suites' limit benchmarks; repeatable"),
    device: str = typer.Option(None, "--device", help="where a limit benchmark runs (cpu or cuda), if it has one"),
    sizes: str = typer.Option(None, "--sizes", help="comma list of sizes (default: each benchmark's own)"),
    message_bytes: int = typer.Option(64, "--message-bytes", help="IPC payload per round trip"),
    fast: bool = typer.Option(False, "--fast", help="pyperf --fast: rough numbers, half the time"),
    pyperf_args: str = typer.Option(None, "--pyperf-args", help="extra pyperf options, e.g. '--rigorous'"),
    out: Path = OutOpt,
) -> int:
    """pyperf micro benchmarks: IPC round trips and the suites' limits (e.g. a net's evals/s per batch)."""
    from harness.commands import limits as command

    return command.main(parts, set_, device, sizes, message_bytes, fast, pyperf_args, out)


@app.command(context_settings={"allow_interspersed_args": False})
@user_errors_exit_2
def watch(
    command: list[str] = typer.Argument(None, help="the program and its arguments, after --"),
    pid: int = typer.Option(None, "--pid", help="attach to this running process (and its children) instead"),
    duration: float = typer.Option(
        None, "--duration", help="seconds to watch (default: until the command exits; 30 with --pid)"
    ),
    rate: int = typer.Option(
        200, "--rate", help="stack samples per second over the whole process tree (at most 100 per process)"
    ),
    rate_regex: str = typer.Option(
        None, "--rate-regex", help="regex for rate lines in the log: group (?P<value>), optional (?P<unit>) (?P<per>)"
    ),
    torch_hook: bool = typer.Option(
        True, "--torch-hook/--no-torch-hook", help="record torch module calls' batch and device"
    ),
    batch_limit: int = typer.Option(
        None, "--batch-limit", help="the largest batch the program could use (SMALL_BATCHES)"
    ),
    out: Path = OutOpt,
    quiet: bool = typer.Option(False, "--quiet", help="plain lines: findings and paths only"),
) -> int:
    """Watch a program you did not change: where its time goes, its IPC, GIL, batches; findings."""
    from harness.commands import watch as command_

    return command_.main(command, pid, duration, rate, rate_regex, torch_hook, batch_limit, out, quiet)


if __name__ == "__main__":
    app()
