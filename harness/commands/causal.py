"""`harness causal SUITE [--set k=v ...]` / `harness causal -- CMD`: which group of the
program's processes limits its throughput, measured by slowing each in turn
(harness.causal.experiment); the result in the terminal and in causal.json."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from harness.commands import options
from harness.errors import UserError

if TYPE_CHECKING:
    from harness.causal.result import CausalOptions, CausalResult
    from harness.commands.program import Program
    from harness.runs.store import RunStore

CAUSAL_JSON = "causal.json"


EXITS = options.exit_codes(
    """
    0 the experiment ran (unknown is a verdict)
    1 the program's cell failed, or the stopper did
    2 bad input, or a --budget too small for how often the program reports (the message names one that would do)
    """
)


@options.command(cls=options.ProgramTail, epilog=EXITS)
def causal(
    ctx: typer.Context,
    suite: str = typer.Argument(None, help="suite name (or your program after --)"),
    set_: list[str] = options.SetOpt,
    group: list[str] = typer.Option(
        None,
        "--group",
        help="a group of your own: NAME=PIDS (comma list) or NAME=REGEX over the command line; "
        "repeatable (default: the roles main, workers, server, one group per other job and per Ray actor class; "
        "multiprocessing's helpers and Ray's daemons only if a group of yours takes them)",
    ),  # fmt: skip
    mode: str = typer.Option(
        "debt",
        "--mode",
        help="debt: each process of a slowed group stopped f/(1-f) s for every s it ran on a CPU "
        "(its code 1/(1-f) times slower); duty: the whole group stopped f of every cycle",
    ),  # fmt: skip
    fraction: float = typer.Option(
        0.5,
        "--fraction",
        help="share of its busy time (debt) or of its time (duty) a slowed group is stopped (0.05-0.9)",
    ),
    cycle_ms: float = typer.Option(
        20.0, "--cycle-ms", help="how often the stopper stops (a duty cycle: one stop plus one run), ms (2-1000)"
    ),
    period: float = typer.Option(
        0.5,
        "--period",
        help="the shortest period (nothing or one group slowed), seconds; a period holds at least 5 reports of the "
        "throughput, so a program that reports less often gets longer ones, adapted round by round (Coz's rule)",
    ),
    settle: float = typer.Option(0.1, "--settle", help="seconds at the start of a period left out of its rate"),
    budget: float = typer.Option(
        180.0,
        "--budget",
        help="seconds for the whole experiment, launch included; refused up front (exit 2, naming the budget that "
        "would do) where the program reports too seldom for 10 rounds in it and no group's calls track its counter",
    ),
    width: float = typer.Option(
        0.15,
        "--width",
        help="stop once every sensitivity's interval is within +- this; a wider one gives the verdict `unknown`",
    ),
    warmup: float = typer.Option(
        0.0, "--warmup", help="seconds the program runs before its groups are read (it may start processes late)"
    ),
    io_counter: str = typer.Option(
        None,
        "--io-counter",
        help="count this group's read and write system calls as the throughput, for a program "
        "that logs its progress only every few seconds (an env worker makes one round trip per step); checked "
        "against the program's own counter (without it, a group whose calls tracked the counter through the "
        "warm-up is chosen where the counter is too sparse for the budget)",
    ),  # fmt: skip
    control: bool = typer.Option(
        False, "--control", help="also slow a sleeping process of the harness's own: the method's bias (a placebo)"
    ),
    seed: int = typer.Option(None, "--seed", help="seed of the periods' order (default: a random one)"),
    out: Path = options.OutOpt,
    quiet: bool = typer.Option(False, "--quiet", help="no line every 10 s"),
    progress: list[str] = options.ProgressOpt,
    progress_file: list[str] = options.ProgressFileOpt,
) -> int:
    """Which group of processes limits the throughput, and what speeding it up would buy:
    slow each group in turn with SIGSTOP and SIGCONT and measure the loss. A verdict
    (critical, slack, competes) only where the interval is narrow and the data hold;
    otherwise `unknown`, with the reason."""
    from harness.causal.result import CausalOptions

    opts = CausalOptions(mode=mode, fraction=fraction, cycle_s=cycle_ms / 1000, period_s=period, settle_s=settle, budget_s=budget,
                         width=width, seed=seed, control=control, io_group=io_counter, warmup_s=warmup)  # fmt: skip
    return main(suite, set_, options.program_of(ctx, progress, progress_file), opts, group, out, quiet)


def check_options(opts: CausalOptions) -> None:
    """Bad values as UserErrors naming what is allowed (exit 2), before anything starts."""
    if opts.mode not in ("debt", "duty"):
        raise UserError(f"--mode {opts.mode}: debt or duty")
    if not 0.05 <= opts.fraction <= 0.9:
        raise UserError(f"--fraction {opts.fraction:g}: the share of its time a group is stopped, 0.05..0.9")
    if not 0.002 <= opts.cycle_s <= 1.0:
        raise UserError(f"--cycle-ms {1000 * opts.cycle_s:g}: one stop plus one run, 2..1000 ms")
    if not opts.period_s > 2 * opts.settle_s or opts.settle_s < 0:
        raise UserError(f"--period {opts.period_s:g}: must exceed twice --settle ({opts.settle_s:g} s)")
    if not opts.budget_s > 0:
        raise UserError(f"--budget {opts.budget_s:g}: seconds for the whole experiment, > 0")
    if not opts.width > 0:
        raise UserError(f"--width {opts.width:g}: the interval half-width to stop at, > 0")
    if opts.warmup_s < 0:
        raise UserError(f"--warmup {opts.warmup_s:g}: seconds, >= 0")


def main(
    suite: str | None,
    sets: list[str] | None,
    program: Program | None,
    opts: CausalOptions,
    groups: list[str] | None,
    out: Path,
    quiet: bool,
) -> int:
    from harness.ab.slicing import CellFailed
    from harness.causal.experiment import Experiment
    from harness.causal.groups import parse_rules
    from harness.causal.stopper import StopperDied
    from harness.commands.sweep import build_overrides
    from harness.model.registry import get_suite
    from harness.program import NAME as COMMAND_SUITE
    from harness.report.causal import render_causal
    from harness.running import interrupts, metadata
    from harness.running.matrix import Spec, apply_overrides, expand
    from harness.runs.store import RunStore, utc_now

    check_options(opts)
    rules = parse_rules(groups)
    if suite is None and program is None:
        raise UserError(
            "nothing to slow: give a suite (harness causal selfplay --set workers=8) or your program after --"
        )
    overrides = build_overrides(suite, None, None, sets, {}, "causal", program)
    cells = expand(apply_overrides(Spec(), overrides))
    if len(cells) != 1:
        raise UserError(f"harness causal takes one cell; these settings give {len(cells)} (one value per --set key)")
    (cell,) = cells
    meta = {
        **metadata.collect(sys.argv),
        "label": "causal",
        "started": utc_now(),
        "kind": "causal",
        "cells": [cell.to_json()],
    }
    store = RunStore.create(out, "causal", meta)
    announce = (lambda _: None) if quiet else print
    experiment = Experiment(
        cell, get_suite(cell.suite).words, store.root, opts, rules, suite_cell=cell.suite != COMMAND_SUITE,
        announce=announce,
    )  # fmt: skip
    try:
        with interrupts.deferred():  # Ctrl-C acts at the experiment's safe points; every group is continued
            result = experiment.run()
    except KeyboardInterrupt:
        store.update_meta(ended=utc_now(), state="interrupted")
        print("causal: stopped by Ctrl-C or SIGTERM; every process was continued, the program ended", file=sys.stderr)
        return 130
    except (CellFailed, StopperDied) as exc:
        store.update_meta(ended=utc_now(), state="failed", reason=str(exc))
        print(f"causal: {exc}", file=sys.stderr)
        return 1
    except UserError as exc:  # the options cannot work for this program (a budget too small for its cadence)
        store.update_meta(ended=utc_now(), state="refused", reason=str(exc))
        raise
    write(store, result)
    store.update_meta(ended=utc_now(), state="finished")
    words = get_suite(cell.suite).words
    render_causal(result.to_json(), remedy=lambda symptom, default: words.remedy(symptom, default, cell.params))
    print(f"written: {store.root / CAUSAL_JSON}")
    return 0


def write(store: RunStore, result: CausalResult) -> None:
    """causal.json, whole or not at all (a full disk is the harness's StorageError, exit 74)."""
    from harness.runs.files import write_json_atomic

    write_json_atomic(store.root / CAUSAL_JSON, result.to_json(), "the causal experiment's result")
