"""`harness tune SUITE --knob NAME=RANGE ...` / `harness tune --knob NAME=RANGE ... -- CMD {NAME}`:
which settings to run with, found by moving the knobs that relieve what the evidence says
limits the program, each move decided by an A/B (harness.tune)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from harness.commands import options
from harness.errors import UserError

if TYPE_CHECKING:
    from harness.commands.program import Program
    from harness.running.matrix import Cell, Overrides
    from harness.tune.result import TuneOptions


EXITS = options.exit_codes(
    """
    0 a result: the winner, or the start kept and why
    2 bad input, a cell that cannot be time-sliced, or a start that measures no rate
    """
)


@options.command(cls=options.ProgramTail, epilog=EXITS)
def tune(
    ctx: typer.Context,
    suite: str = typer.Argument(None, help="suite name (or your program after --)"),
    knob: list[str] = typer.Option(
        None,
        "--knob",
        help="a setting to tune: NAME=RANGE, or NAME=RANGE@GROUP; RANGE a list (1,2,4 or event,poll), an integer range "
        "(1..16, 2..64:2) or a log range (1..1024:log); @GROUP: the process group it acts on; repeatable",
    ),  # fmt: skip
    set_: list[str] = typer.Option(
        None,
        "--set",
        help="k=v: a fixed setting, or a knob's starting value (default: the suite's default); repeatable",
    ),
    budget: float = typer.Option(1200.0, "--budget", help="seconds for the whole tune, the final A/B included"),
    min_gain: float = typer.Option(
        0.03,
        "--min-gain",
        help="the smallest gain worth a change of settings: a challenger is adopted when its A/B shows it "
        "at least this much faster than the incumbent, dropped when it shows less (0: any decided gain)",
    ),
    duel_budget: float = typer.Option(150.0, "--duel-budget", help="seconds one challenger's A/B may take"),
    evidence: float = typer.Option(8.0, "--evidence", help="measured seconds of the incumbent's diagnosed cell"),
    screen: float = typer.Option(
        2.0,
        "--screen",
        help="measured seconds of each screen reading (one short reading of a setting before any A/B; a whole "
        "screen's first rung), at most --evidence's; a program whose progress comes in bursts gets --evidence's",
    ),
    causal_budget: float = typer.Option(
        60.0, "--causal-budget", help="seconds of the causal experiment on each incumbent (0: findings only)"
    ),
    objective: str = typer.Option(
        None,
        "--objective",
        help="the counter to maximise, e.g. moves (default: the suite's headline rate's), or time-to-target: the "
        "time to --target, each challenger raced against the incumbent in whole runs",
    ),
    target: str = typer.Option(
        None, "--target", help="with --objective time-to-target: the quality target, e.g. accuracy>=0.9"
    ),
    target_every: float = options.TargetEveryOpt,
    target_cap: float = typer.Option(
        120.0, "--target-cap", help="with --objective time-to-target: the most seconds one run may take to reach it"
    ),
    confidence: float = typer.Option(
        0.95, "--confidence", help="the final A/B's confidence (1 - its error rate), as harness ab's"
    ),
    step_confidence: float = typer.Option(
        0.8, "--step-confidence", help="each challenger's A/B's confidence (the final A/B checks the winner)"
    ),
    seed: int = typer.Option(
        None, "--seed", help="seed of the A/Bs' pair orders and the causal periods (default: a random one)"
    ),
    resume: Path = typer.Option(None, "--resume", help="continue the tune in this run directory (its tune.json)"),
    out: Path = options.OutOpt,
    quiet: bool = typer.Option(False, "--quiet", help="only the result"),
    progress: list[str] = options.ProgressOpt,
    progress_file: list[str] = options.ProgressFileOpt,
) -> int:
    """Which settings to run with. A space the budget can read whole is screened whole (every
    setting once, its leaders again in longer readings, A/Bs among the last few); a larger one
    is searched step by step: what limits the incumbent (findings, a causal experiment when the
    readings do not already say), the moves that relieve it and those a model of every reading
    predicts, each adopted only when an A/B decides it faster. It ends with the winner's A/B
    against the start."""
    from harness.tune.result import TuneOptions

    opts = TuneOptions(
        budget_s=budget, min_gain=min_gain, duel_budget_s=duel_budget, evidence_s=evidence, screen_s=screen,
        causal_budget_s=causal_budget, objective=objective, seed=seed, final_alpha=1 - confidence,
        step_alpha=1 - step_confidence, target=target, target_every=target_every, target_cap_s=target_cap,
    )  # fmt: skip
    check_options(opts)
    program = options.program_of(ctx, progress, progress_file)
    return main(suite, knob, set_, program, opts, resume, out, quiet)


def check_options(opts: TuneOptions) -> None:
    from harness.tune.result import TIME_TO_TARGET

    if opts.budget_s <= 0:
        raise UserError(f"--budget {opts.budget_s:g}: seconds for the whole tune, > 0")
    if not 0 <= opts.min_gain < 1:
        raise UserError(f"--min-gain {opts.min_gain:g}: a share, 0 <= it < 1 (0.03 = 3 %)")
    if opts.duel_budget_s <= 0:
        raise UserError(f"--duel-budget {opts.duel_budget_s:g}: seconds, > 0")
    if opts.evidence_s <= 0:
        raise UserError(f"--evidence {opts.evidence_s:g}: measured seconds, > 0")
    if opts.screen_s <= 0:
        raise UserError(f"--screen {opts.screen_s:g}: measured seconds, > 0")
    for flag, alpha in (("--confidence", opts.final_alpha), ("--step-confidence", opts.step_alpha)):
        if not 0 < alpha < 1:
            raise UserError(f"{flag} {1 - alpha:g}: a probability strictly between 0 and 1 (0.95 = 95 %)")
    if opts.causal_budget_s < 0:
        raise UserError(f"--causal-budget {opts.causal_budget_s:g}: seconds, >= 0 (0: no causal experiment)")
    if opts.races and not opts.target:
        raise UserError(
            f"--objective {TIME_TO_TARGET} needs the target to reach: --target METRIC<=V or METRIC>=V "
            "(a quality metric the suite declares, or one your program logs)"
        )
    if opts.target and not opts.races:
        raise UserError(
            f"--target {opts.target}: a target is what --objective {TIME_TO_TARGET} races to; add that objective "
            "(without it the tune maximises a rate)"
        )
    if opts.target_cap_s <= 0:
        raise UserError(f"--target-cap {opts.target_cap_s:g}: seconds, > 0")


def overrides_for(suite: str | None, sets: dict[str, Any], program: Program | None, label: str) -> Overrides:
    from harness.commands.sweep import build_overrides

    flat = [f"{k}={v}" for k, v in sets.items()]
    return build_overrides(suite, None, None, flat, {"repeats": 1}, label, program)


def race_overrides(base: Overrides, opts: TuneOptions) -> Overrides:
    """The tune's cells as a race runs them: to the target, at most its cap."""
    from dataclasses import replace

    return replace(base, target=opts.target, target_every=opts.target_every, duration=opts.target_cap_s)


def cell_maker(base: Overrides) -> Any:
    """values -> the one Cell with the fixed settings and these knob values."""
    from dataclasses import replace

    from harness.running.matrix import Spec, apply_overrides, expand

    def make(values: dict[str, Any]) -> Cell:
        axes = {**base.axes, **{k: [v] for k, v in values.items()}}
        (cell,) = expand(apply_overrides(Spec(), replace(base, axes=axes)))
        return cell

    return make


def starting_values(knobs: list[Any], model: type, sets: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """Each knob's start: its --set value, else the suite's default, else its range's first value."""
    start, notes = {}, []
    fields = getattr(model, "model_fields", {})
    for knob in knobs:
        if knob.name in sets:
            start[knob.name] = knob.typed(sets[knob.name])
        elif knob.name in fields and not fields[knob.name].is_required():
            start[knob.name] = fields[knob.name].default
        else:
            start[knob.name] = knob.values[0]
            notes.append(
                f"{knob.name} starts at {knob.values[0]}, its range's first value (--set {knob.name}=V to choose)"
            )
    return start, notes


def main(
    suite: str | None,
    knob_texts: list[str] | None,
    set_texts: list[str] | None,
    program: Program | None,
    opts: TuneOptions,
    resume: Path | None,
    out: Path,
    quiet: bool,
) -> int:
    from harness.ab.experiment import refusal
    from harness.model.params import parse_assignments, validate
    from harness.model.registry import get_suite
    from harness.model.workshare import usable_cores
    from harness.report.tune import render_tune
    from harness.running import interrupts, metadata
    from harness.runs.store import RunStore, utc_now
    from harness.tune.result import TUNE_JSON, TuneState
    from harness.tune.search import Tuner
    from harness.tune.space import check, parse_knob

    if resume is not None:
        if knob_texts or set_texts or suite or program:
            raise UserError("--resume continues a tune as it was started: give no suite, --knob, --set or program")
        store = RunStore.open(resume)
        path = store.root / TUNE_JSON
        if not path.is_file():
            raise UserError(f"--resume {resume}: no {TUNE_JSON} there (not a tune's run directory)")
        import json

        state = TuneState.from_json(json.loads(path.read_text()))
        if state.state == "finished":
            raise UserError(f"--resume {resume}: this tune finished; its result is in {path}")
        state.state = "running"
        prog = prog_of(state)
        base = overrides_for(None if prog else state.suite, state.fixed, prog, "tune")
    else:
        if suite is None and program is None:
            raise UserError(
                "nothing to tune: give a suite (harness tune selfplay --knob leaves=1..16:log) or your program after --"
            )
        if not knob_texts:
            raise UserError("nothing to move: give at least one --knob NAME=RANGE (e.g. --knob workers=1..8)")
        sets: dict[str, str] = {}
        for key, values in parse_assignments(set_texts).items():
            if len(values) > 1:
                raise UserError(f"--set {key}: one value (a range to tune is a --knob {key}=...)")
            sets[key] = values[0]
        knobs = [parse_knob(text) for text in knob_texts]
        names = {k.name for k in knobs}
        fixed = {k: v for k, v in sets.items() if k not in names}
        base = overrides_for(suite, fixed, program, "tune")
        suite_name = base.suite or ""
        model = get_suite(suite_name).params
        fixed_params = {k: v[0] for k, v in base.axes.items()}
        knobs = check(knobs, suite_name, model, fixed_params)
        start, notes = starting_values(knobs, model, sets)
        typed = validate(suite_name, model, {**fixed_params, **start}).model_dump(mode="json")
        start = {k: typed[k] for k in start}
        fixed = {k: typed.get(k, v) for k, v in fixed.items()}  # `--set workers=4`: 4 in the spec, not "4"
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        state = TuneState(suite_name, fixed, knobs, start, opts, program=list(program.argv) if program else None)
        if program is not None:
            state.progress, state.progress_files = list(program.progress), list(program.progress_files)
        meta = {**metadata.collect(sys.argv), "label": f"tune-{suite_name}", "started": utc_now(), "kind": "tune"}
        store = RunStore.create(out, f"tune-{suite_name}", meta)
    make_cell = cell_maker(base)
    first = make_cell(state.start)
    race_cell = None
    if state.options.races:  # the target's suite and metric checked when its cells are made
        race_cell = cell_maker(race_overrides(base, state.options))
        race_cell(state.start)
    why = refusal(first)
    if why and race_cell is None:
        raise UserError(f"harness tune decides by time-sliced A/Bs, and this cell cannot be sliced: {why}")
    if why and state.options.causal_budget_s > 0:
        print(f"note: no causal experiment (it stops processes the way an A/B slices them): {why}", file=sys.stderr)
        state.options.causal_budget_s = 0.0
    words = get_suite(first.suite).words
    if state.options.objective is not None and not state.options.races:
        words = objective_words(words, state.options.objective)
    announce = (lambda _: None) if quiet else print
    tuner = Tuner(state, make_cell, words, store, usable_cores(), announce, race_cell)
    print(f"tune: run directory {store.root}")
    try:
        with interrupts.deferred():  # Ctrl-C at safe points; the A/B's and experiment's processes are ended
            tuner.run()
    except KeyboardInterrupt:
        state.state = "interrupted"
        tuner.save()
        store.update_meta(ended=utc_now(), state="interrupted")
        print(
            f"tune: stopped by Ctrl-C; the best so far and the trail are in {store.root / TUNE_JSON}", file=sys.stderr
        )
        print(f"continue it with: harness tune --resume {store.root}", file=sys.stderr)
        return 130
    store.update_meta(ended=utc_now(), state="finished")
    render_tune(state.to_json())
    write_report(store)
    return 0


def write_report(store: Any) -> None:
    """report.html (the tune's section, then the incumbents' measured cells) and the CSVs."""
    from harness.commands.common import run_view, write_reports

    paths = write_reports(store, run_view(store, store.records()), html=True)
    print("reports: " + ", ".join(str(p) for p in paths))


def prog_of(state: Any) -> Program | None:
    """The program a tune's state was started on (None: a suite)."""
    if state.program is None:
        return None
    from harness.commands.program import Program as ProgramOf

    return ProgramOf(state.program, tuple(state.progress), tuple(state.progress_files))


def objective_words(words: Any, counter: str) -> Any:
    """The vocabulary with `counter` as the rate an A/B slices by."""
    from dataclasses import replace

    from harness.model.vocabulary import Rate

    name = counter.removesuffix("_per_s")
    return replace(words, rates=(Rate(name),))
