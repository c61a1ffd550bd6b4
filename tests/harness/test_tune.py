"""harness tune: knob ranges, what limits an incumbent, the order of proposals, the decision,
the state's round trip, and (slow) a real tune on the synthetic suite."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from harness.ab.sequential import Interval
from harness.errors import UserError
from harness.model.vocabulary import Advice, Move, Vocabulary
from harness.report.tune import trail_rows
from harness.tune import evidence as evidence_module
from harness.tune import search as search_module
from harness.tune.bottleneck import read_limit, symptom_of
from harness.tune.duel import BETTER, WORSE, Duel, gain_decider
from harness.tune.result import TuneOptions, TuneState
from harness.tune.search import Tuner
from harness.tune.space import Knob, check, moves_for, parse_knob

# ------------------------------------------------------------------ ranges


def test_ranges_lists_and_log_ranges_parse_in_order():
    assert parse_knob("workers=1..16:log").values == (1, 2, 4, 8, 16)
    assert parse_knob("workers=3..20:log").values == (3, 6, 12, 20)
    assert parse_knob("n=2..8:2").values == (2, 4, 6, 8)
    assert parse_knob("n=1..3").values == (1, 2, 3)
    assert parse_knob("lr=2,0.5,1").values == (0.5, 1, 2)
    wait = parse_knob("wait=poll,event@learner")
    assert wait.values == ("poll", "event") and not wait.ordered and wait.group == "learner"


@pytest.mark.parametrize(
    "text, says",
    [
        ("workers", "NAME=RANGE"),
        ("workers=4", "one value is a --set"),
        ("workers=8..1", "low to high"),
        ("workers=0..8:log", "starts above 0"),
        ("x=1..100000", "more than 256"),
        ("x=0.5..2", "integers"),
        ("x=a,,b", "empty value"),
        ("x=a,a", "twice"),
    ],
)
def test_bad_ranges_name_what_is_allowed(text, says):
    with pytest.raises(UserError, match=says):
        parse_knob(text)


def test_steps_move_along_the_range_and_stop_at_its_ends():
    knob = parse_knob("w=1..16:log")
    assert knob.step(4, "up") == 8 and knob.step(4, "down") == 2 and knob.step(16, "up") is None
    assert knob.step(3, "up") == 4 and knob.step(3, "down") == 2  # from outside the range: the nearest
    assert knob.step(0, "down") is None and knob.step(4, "up", 2) == 16


def test_values_are_checked_by_the_suites_params():
    from suites.synthetic import SUITE

    (knob,) = check([parse_knob("workers=1,2")], "synthetic", SUITE.params, {})
    assert knob.values == (1, 2)
    with pytest.raises(UserError, match="workers"):
        check([parse_knob("workers=-1,2")], "synthetic", SUITE.params, {})
    with pytest.raises(UserError, match="given twice"):
        check([parse_knob("workers=1,2"), parse_knob("workers=3,4")], "synthetic", SUITE.params, {})


# ------------------------------------------------------------------ what limits the incumbent


def causal_doc(**verdicts: str) -> dict:
    return {"sensitivity": [{"group": g, "verdict": v, "estimate": 0.5} for g, v in verdicts.items()]}


def test_only_critical_groups_limit_and_unknown_verdicts_are_noted():
    limit = read_limit(causal_doc(server="critical", workers="unknown", main="slack"), [], {"cpu_util_mean": 50}, 2)
    assert limit.groups == ["server"]
    assert any("workers unknown" in n for n in limit.notes)
    assert not limit.saturated


def test_the_machine_is_the_limit_only_when_every_group_is_slack_and_the_cores_busy():
    busy = {"cpu_util_mean": 150.0, "cpu_others_mean": 40.0}
    assert read_limit(causal_doc(main="slack", workers="competes"), [], busy, 2).saturated
    assert not read_limit(causal_doc(main="slack", workers="unknown"), [], busy, 2).saturated
    assert not read_limit(None, [], busy, 2).saturated  # no experiment: not called
    assert not read_limit(causal_doc(main="slack"), [], {"cpu_util_mean": 60.0}, 2).saturated


def test_findings_give_their_symptoms_most_severe_first():
    findings = [
        {"rule": "SMALL_BATCHES", "severity": "info", "evidence": {}},
        {"rule": "BUSY_WAIT", "severity": "warning", "evidence": {"remedy_key": "busy_wait.poll"}},
    ]
    assert [symptom_of(f) for f in findings] == ["small_batches", "busy_wait.poll"]
    assert read_limit(None, findings, {}, 2).symptoms == ["busy_wait.poll", "small_batches"]


def test_moves_come_from_relieves_then_the_remedies_advice():
    words = Vocabulary(
        relieves={"server": (Move("max_batch", "up"),)},
        remedies={"server": (Advice("gather=share", {"gather": "share"}), Advice("already", {"inflight": 2}))},
    )
    moves = moves_for(words, "server", {"inflight": 2})
    assert [(m.knob, m.toward) for m in moves] == [("max_batch", "up"), ("gather", "share")]


# ------------------------------------------------------------------ proposals


def tuner(knobs: list[Knob], words: Vocabulary, start: dict, tmp_path: Path) -> Tuner:
    from harness.runs.store import RunStore

    state = TuneState("synthetic", {}, knobs, start, TuneOptions())
    store = RunStore.create(tmp_path, "tune", {})
    return Tuner(state, lambda values: None, words, store, cores=2, announce=lambda _: None)


def test_proposals_follow_the_limit_then_every_knob(tmp_path):
    knobs = [parse_knob("workers=1..8:log"), parse_knob("max_batch=16..256:log"), parse_knob("gather=full,share")]
    words = Vocabulary(workers="workers", relieves={"server": (Move("max_batch", "up"), Move("gather", "share"))})
    t = tuner(knobs, words, {"workers": 2, "max_batch": 64, "gather": "full"}, tmp_path)
    limit = read_limit(causal_doc(server="critical"), [], {"cpu_util_mean": 50}, 2)
    trials = t.propose({"workers": 2, "max_batch": 64, "gather": "full"}, limit, None)
    said = [(x.knob, x.value, x.why.split(" (")[0]) for x in trials]
    assert said[:2] == [("max_batch", 128, "relieves server"), ("gather", "share", "relieves server")]
    assert ("workers", 4, "every knob in turn") in said and ("workers", 1, "every knob in turn") in said
    assert len(said) == len({(k, str(v)) for k, v, _ in said})  # nothing proposed twice


def test_a_saturated_machine_gets_no_move_that_adds_work(tmp_path):
    knobs = [parse_knob("workers=1..8:log"), parse_knob("inflight=1..4")]
    words = Vocabulary(workers="workers", relieves={"main": (Move("inflight", "up", adds_work=True),)})
    t = tuner(knobs, words, {"workers": 2, "inflight": 2}, tmp_path)
    limit = read_limit(causal_doc(main="slack"), [{"rule": "X", "severity": "info"}], {"cpu_util_mean": 190.0}, 2)
    assert limit.saturated
    trials = t.propose({"workers": 2, "inflight": 2}, limit, None)
    assert ("workers", 4) not in [(x.knob, x.value) for x in trials]
    assert ("inflight", 3) not in [(x.knob, x.value) for x in trials]
    assert ("workers", 1) in [(x.knob, x.value) for x in trials]  # fewer workers is still a move


# ------------------------------------------------------------------ decisions and the end


def test_the_decision_needs_the_interval_on_one_side_of_the_gain_worth_taking():
    decide = gain_decider(0.03)
    assert decide(Interval(4, 0.2, 0.05, 0.3)) == BETTER
    assert decide(Interval(4, -0.2, -0.4, 0.01)) == WORSE  # cannot be a 3 % gain
    assert decide(Interval(4, 0.01, -0.1, 0.2)) == "continue"
    assert decide(Interval(2, 0.5, -math.inf, math.inf)) == "continue"
    # faster for sure, but maybe by less than 3 %: not yet adopted (the edge at 1 adopted it)
    assert decide(Interval(8, 0.045, 0.005, 0.085)) == "continue"
    # faster for sure, and by less than 3 % for sure: not worth a change, and the trail says why
    faster_by_little = Interval(20, 0.015, 0.004, 0.025)
    assert decide(faster_by_little) == WORSE
    from harness.tune.duel import too_small

    assert "faster, by less than the 3 %" in (too_small(WORSE, faster_by_little, 0.03) or "")
    assert too_small(WORSE, Interval(4, -0.2, -0.4, -0.01), 0.03) is None  # slower is simply worse
    assert "if faster at all" in (too_small(WORSE, Interval(9, 0.002, -0.1, 0.08), 0.1) or "")
    # --min-gain 0: any decided gain is adopted
    assert gain_decider(0.0)(Interval(8, 0.045, 0.005, 0.085)) == BETTER


def fake_duel(decisions: dict[str, str]):
    """A duel that answers from a table keyed by the challenger's slowdown (no processes)."""

    def duel(incumbent, challenger, run_root, opts, min_gain, words=None, stop_futile=True):
        decision = decisions[str(challenger["slowdown"])]
        interval = Interval(7, 0.3, 0.1, 0.5) if decision == BETTER else Interval(7, -0.3, -0.5, -0.1)
        return Duel(decision, interval, 7, 1.0, "units_per_s", "")

    return duel


def adopted_before_its_final(tmp_path) -> Tuner:
    """A tuner of slowdown 1, 2, 4 from 4 whose one step adopted 2: its final A/B is next."""
    t = tuner([parse_knob("slowdown=1,2,4")], Vocabulary(), {"slowdown": 4}, tmp_path)
    t.make_cell = lambda values: values
    t.state.best = {"slowdown": 2}
    t.state.steps.append(search_module.Step(0, {"slowdown": 4}, 0.0))
    return t


def test_a_final_ab_that_does_not_confirm_keeps_the_start(tmp_path, monkeypatch):
    t = adopted_before_its_final(tmp_path)
    monkeypatch.setattr(search_module, "duel", fake_duel({"2": WORSE}))
    t.final()
    assert t.state.best == {"slowdown": 4}
    assert t.state.conclusion.startswith("the start stays: the final A/B did not confirm slowdown=2")


def test_the_final_ab_ends_no_later_than_a_grid_would_have_but_gets_its_fewest_blocks(tmp_path, monkeypatch):
    from harness.ab.sequential import blocks_to_decide

    t = adopted_before_its_final(tmp_path)
    t._block_s = [10.0]
    budgets = []

    def duel(incumbent, challenger, run_root, opts, min_gain, words=None, stop_futile=True):
        budgets.append(opts.budget_s)
        return Duel(BETTER, Interval(7, 0.3, 0.1, 0.5), 7, 1.0, "units_per_s", "")

    monkeypatch.setattr(search_module, "duel", duel)
    monkeypatch.setattr(t, "grid_s", lambda: 500.0)
    monkeypatch.setattr(t, "elapsed", lambda: 300.0)
    t.final()  # the budget leaves more (a 1200 s --budget), the grid 200 s
    fewest = blocks_to_decide(t.state.options.final_alpha) * 10.0
    monkeypatch.setattr(t, "elapsed", lambda: 490.0)
    t.final()  # the grid's time nearly spent: the fewest blocks that can decide
    assert budgets == [200.0, fewest]


def test_the_state_survives_its_json(tmp_path):
    state = TuneState("synthetic", {"kind": "spin"}, [parse_knob("slowdown=1,2,4")], {"slowdown": 4}, TuneOptions())
    state.steps.append(search_module.Step(0, {"slowdown": 4}, 0.0))
    state.steps[0].trials.append(
        search_module.Trial("slowdown", 2, "every knob in turn", {"slowdown": 2}, {"decision": "better"})
    )
    again = TuneState.from_json(json.loads(json.dumps(state.to_json())))
    assert again.to_json() == state.to_json()
    assert again.tried() == {"slowdown=2"}
    assert 'params = { kind = "spin", slowdown = 4 }' in again.spec_snippet()
    assert again.command_line() == "harness sweep --suite synthetic --set kind=spin --set slowdown=4"


# ------------------------------------------------------------------ the command


def test_bad_input_exits_2_before_anything_runs(cli, tmp_path):
    for args, says in [
        (["tune", "synthetic"], "at least one --knob"),
        (["tune", "synthetic", "--knob", "workers=1"], "one value is a --set"),
        (["tune", "synthetic", "--knob", "nope=1,2"], "nope"),
        (["tune", "synthetic", "--knob", "slowdown=1,2", "--screen", "0"], "--screen 0: measured seconds"),
        (["tune", "synthetic", "--knob", "workers=1,2", "--set", "slowdown=1,2"], "one value"),
        (["tune", "synthetic", "--knob", "workers=1,2", "--budget", "0"], "--budget"),
    ]:
        result = cli(*args, "--out", tmp_path)
        assert result.exit_code == 2, (args, result.output)
        assert says in result.output, (args, result.output)
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_a_tune_finds_the_faster_setting_and_confirms_it(cli, tmp_path):
    result = cli(
        "tune", "synthetic", "--set", "slowdown=4", "--set", "workers=1", "--knob", "slowdown=1,4", "--causal-budget", "0",
        "--evidence", "1", "--budget", "200", "--confidence", "0.8", "--seed", "1", "--out", tmp_path, "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    doc = json.loads((run / "tune.json").read_text())
    assert doc["state"] == "finished" and doc["best"] == {"slowdown": 1.0}, doc["conclusion"]
    assert doc["fixed"] == {"workers": 1} and "workers = 1," in doc["spec"]  # typed, not the text "1"
    assert doc["final"]["decision"] == "better" and doc["final"]["low"] > 2.0
    assert "slowdown=1.0 runs" in result.output and (run / "report.html").is_file()


# ------------------------------------------------------------------ the worker axis


def test_the_worker_axis_starts_from_counts_spread_along_it_with_the_current_one():
    from harness.tune.workers import first_counts

    knob = parse_knob("workers=1..32:log")
    assert first_counts(knob, 1) == [1, 4, 8, 32] or first_counts(knob, 1) == [1, 4, 16, 32]
    assert 2 in first_counts(knob, 2) and len(first_counts(knob, 2)) == 4
    assert first_counts(parse_knob("workers=1..3"), 2) == [1, 2, 3]


def test_the_model_proposes_its_peak_and_says_so():
    from harness.analysis import usl
    from harness.tune.workers import proposal

    rates = {
        n: [10 * n / (1 + 0.05 * (n - 1) + 0.02 * n * (n - 1)) * f for f in (0.98, 1.02)] for n in (1, 2, 4, 8, 16)
    }
    found = usl.fit(rates)
    knob = parse_knob("workers=1..16:log")
    value, why = proposal(found, knob, 1)
    assert value == 8 and why.startswith("the scaling model's peak")  # N* = sqrt(0.95 / 0.02) = 6.9
    assert proposal(found, knob, 8) is None  # already there: nothing new to try
    flat = usl.fit({n: [10 * n * f for f in (0.98, 1.02)] for n in (1, 2, 4, 8)})
    value, why = proposal(flat, parse_knob("workers=1..8:log"), 2)
    assert value == 8 and "no peak" in why


# ------------------------------------------------------------------ a program's tune (-- CMD): what real ones taught


def test_a_programs_set_start_is_typed_as_its_knob(tmp_path):
    from harness.commands.tune import starting_values
    from harness.program import Params

    knobs = [parse_knob("steps=16..256:log"), parse_knob("mode=fast,slow")]
    start, notes = starting_values(knobs, Params, {"steps": "32", "mode": "slow"})
    assert start == {"steps": 32, "mode": "slow"} and isinstance(start["steps"], int) and not notes
    assert parse_knob("lr=0.5,1,2").typed("1.5") == 1.5  # outside the range: still a number
    state = TuneState("command", {}, knobs, start, TuneOptions(), program=["python", "t.py", "{steps}"])
    assert "steps = 32" in state.spec_snippet()  # a TOML number, not the text "32"


def test_a_programs_progress_patterns_survive_resume_and_reach_the_winners_command(tmp_path):
    state = TuneState(
        "command", {}, [parse_knob("envs=1..4:log")], {"envs": 1}, TuneOptions(), program=["python", "t.py", "{envs}"]
    )
    state.progress, state.progress_files = ["frames=After (?P<frames>\\d+)  frames"], ["runs/**"]
    again = TuneState.from_json(json.loads(json.dumps(state.to_json())))
    assert again.progress == state.progress and again.progress_files == ["runs/**"]
    line = again.command_line()
    assert line == (
        "harness sweep --set envs=1 --progress 'frames=After (?P<frames>\\d+)  frames' --progress-file 'runs/**' "
        "-- python t.py '{envs}'"
    )  # the pattern's double space kept
    assert 'progress_files = "runs/**"' in again.spec_snippet()


def test_a_tunes_ab_decides_on_the_wall_clock_rate(monkeypatch):
    """Its sides differ in the cores they use: the rate per CPU second would be their
    efficiency (self-play's server with 4 games a worker: 1.11-1.20x by its blocks' wall rates,
    decided 0.778x per CPU second and without run-queue waits)."""
    from harness.ab.experiment import ABOptions, CellAB
    from harness.tune import duel as duel_module

    seen = {}

    def run_cell(incumbent, base, cand, run_root, opts, **kw):
        seen["estimands"] = opts.estimands
        return CellAB(cell=None, label="x", decision="undecided")  # type: ignore[arg-type]

    monkeypatch.setattr(duel_module, "run_cell", run_cell)
    duel_module.duel(None, None, Path("."), ABOptions(), 0.03)  # type: ignore[arg-type]
    assert seen["estimands"] == ("wall",)


def test_an_ab_that_measured_nothing_says_so():
    from harness.ab.experiment import CellAB
    from harness.ab.slicing import Block
    from harness.tune.duel import undecided_reason

    got = CellAB(cell=None, label="x", blocks=[Block(i) for i in range(3)], elapsed_s=40.0)  # type: ignore[arg-type]
    assert undecided_reason(got).startswith("no block of 3 measured a rate on both sides")
    got.interval, got.metric = Interval(4, 0.01, -0.1, 0.2), "frames_per_s"
    assert "still holds the smallest gain worth taking" in undecided_reason(got)


def test_an_ab_launch_waits_for_counted_work_not_the_first_sample(monkeypatch):
    from harness.ab.slicing import Instance, Sample

    inst = Instance.__new__(Instance)  # no process: its stream is fed by hand
    arriving = [[Sample(0.1, {}, 0.0)], [Sample(1.1, {"steps": 0.0}, 0.0)], [Sample(2.1, {"steps": 64.0}, 0.0)]]
    inst.samples = []

    def read():
        new = arriving.pop(0) if arriving else []
        inst.samples += new
        return new

    monkeypatch.setattr(inst, "read", read)
    monkeypatch.setattr(inst, "failure", lambda: None)
    inst.wait_started(5.0, 0.0, counted=True)
    assert not arriving and inst.counted()  # it read on until the third sample, the first with a count
    arriving[:] = [[Sample(0.1, {}, 0.0)]]
    inst.samples = []
    inst.wait_started(5.0, 0.0)  # the causal experiment's: the first sample
    assert inst.samples and not inst.counted()


def test_the_worker_axis_measures_a_count_once_and_stops_when_most_give_no_rate(monkeypatch, tmp_path):
    from harness.tune import workers

    measured: list[int] = []

    def fake_measure(make_cell, incumbent, knob, counts, store, duration, rates, announce):
        for count in counts:
            measured.append(int(count))
            rates.setdefault(int(count), [])
            if count == 1:  # only one count ever prints progress in its window
                rates[1] += [10.0, 11.0]

    monkeypatch.setattr(workers, "measure", fake_measure)
    found, rates = workers.model_the_axis(
        None, {"workers": 1}, parse_knob("workers=1..32:log"), None, 1.0, 2, lambda _: None
    )  # type: ignore[arg-type]
    assert len(measured) == len(set(measured)) == workers.FIRST_COUNTS  # none again, none more
    assert rates == {1: [10.0, 11.0]} and not found.ok and workers.said(found).startswith("no USL fit")


def record(rate: float | None, status: str = "ok", warnings: list[str] | None = None):
    from harness.runs.record import Record

    metrics = {"wall_s": 18.0, **({"steps_per_s": rate} if rate is not None else {})}
    return Record("c", "command", {}, 0, status, metrics=metrics, warnings=warnings or [])


def test_a_program_that_counted_nothing_is_measured_again_with_time_to_start(monkeypatch, tmp_path):
    from harness.runs.store import RunStore
    from harness.tune import evidence
    from harness.tune.search import Tuner

    ran = []

    class Runner:
        def __init__(self, store):
            pass

        def run(self, cell, repeat):
            ran.append(cell)
            return record(None if len(ran) == 1 else 25.0)

    monkeypatch.setattr(evidence, "CellRunner", Runner)
    store = RunStore.create(tmp_path, "tune", {})
    cell = parse_cell_of_program()
    found = evidence.gather(cell, store, 0, None, 2, lambda _: None)
    assert [c.steady_max for c in ran] == [cell.steady_max, evidence.STARTUP_CAP_S]
    assert ran[1].timeout >= ran[1].duration + evidence.STARTUP_CAP_S and found.cell.steady_max == 60.0
    assert evidence.counted(found.record)

    state = TuneState("command", {}, [parse_knob("envs=1,2")], {"envs": 1}, TuneOptions(causal_budget_s=0))
    tuner = Tuner(state, lambda values: cell, Vocabulary(), store, cores=2, announce=lambda _: None)
    state.steps.append(search_module.Step(0, {"envs": 1}, 0.0))
    monkeypatch.setattr(
        search_module,
        "gather",
        lambda *a, **k: evidence.Evidence(
            record(None, warnings=["no progress counter recognised in 17 lines of output: say where"]),
            [], None, None, read_limit(None, [], {}, 2), 1.0, cell,
        ),
    )  # fmt: skip
    with pytest.raises(UserError, match=r"the start \(envs=1\) measured none: no progress counter recognised"):
        tuner.evidence(state.steps[0])


def test_the_tunes_causal_experiment_may_stop_once_it_can_settle_nothing_the_tune_uses(monkeypatch, tmp_path):
    """A tune acts on critical, slack and competes only (read_limit): its experiment is told
    so (futile_for), so that it does not spend the search's seconds on groups that can only
    end between (MCCFR's start: the whole 60 s on +0.69 [+0.58, +0.75])."""
    from harness.runs.store import RunStore
    from harness.tune import evidence
    from harness.tune.bottleneck import ACTED_ON

    store = RunStore.create(tmp_path, "tune", {})
    cell = parse_cell_of_program()
    state = TuneState("command", {}, [parse_knob("envs=1,2")], {"envs": 1}, TuneOptions(causal_budget_s=45))
    tuner = Tuner(state, lambda values: cell, Vocabulary(), store, cores=2, announce=lambda _: None)
    state.steps.append(search_module.Step(1, {"envs": 1}, 0.0))
    asked = []

    def gather(cell, store, index, causal, cores, announce):
        asked.append(causal)
        return evidence.Evidence(record(25.0), [], None, None, read_limit(None, [], {}, 2), 1.0, cell)

    monkeypatch.setattr(search_module, "gather", gather)
    tuner.evidence(state.steps[0])
    assert asked[0].budget_s == 45 and tuple(asked[0].futile_for) == ACTED_ON
    assert set(ACTED_ON) == {"critical", "slack", "competes"}


def test_a_causal_experiment_that_refuses_is_a_note_not_the_end_of_the_tune(monkeypatch, tmp_path):
    """CleanRL's C4: the experiment refused its 60 s (the program's cadence needed 70): the
    tune went on from the findings, where it had exited 2."""
    from harness.causal import experiment
    from harness.causal.result import CausalOptions
    from harness.runs.store import RunStore
    from harness.tune import evidence

    class Runner:
        def __init__(self, store):
            pass

        def run(self, cell, repeat):
            return record(25.0)

    class Refusing:
        def __init__(self, *args, **kwargs):
            pass

        def run(self):
            raise UserError("--budget 60: the program reports global_step every 0.43 s; Give --budget 70 or more")

    monkeypatch.setattr(evidence, "CellRunner", Runner)
    monkeypatch.setattr(experiment, "Experiment", Refusing)
    store = RunStore.create(tmp_path, "tune", {})
    found = evidence.gather(parse_cell_of_program(), store, 0, CausalOptions(budget_s=60), 2, lambda _: None)
    assert found.causal is None and "Give --budget 70" in found.causal_error
    assert any("the causal experiment failed: --budget 60" in note for note in found.limit.notes)


def test_the_final_reserve_is_its_fewest_blocks_until_something_is_adopted(tmp_path):
    from harness.ab.sequential import blocks_to_decide

    t = tuner([parse_knob("slowdown=1,2,4")], Vocabulary(), {"slowdown": 4}, tmp_path)
    t._block_s = [70.0]
    assert t.final_reserve() == 0.0  # before the first step: its evidence runs first
    t.state.steps.append(search_module.Step(0, {"slowdown": 4}, 0.0))
    fewest = blocks_to_decide(t.state.options.final_alpha) * 70.0
    assert t.final_reserve() == fewest  # nothing adopted: a winner must be confirmable, no more
    t.state.best = {"slowdown": 2}
    assert t.final_reserve() == search_module.FINAL_MARGIN * fewest


def parse_cell_of_program():
    from harness.running.matrix import Cell

    return Cell("command", {"argv": "python t.py"}, 8.0, 0.0, None, 1, 75.0, "c")


def test_a_resumed_step_keeps_its_evidence_and_redoes_only_the_cut_ab(tmp_path, monkeypatch):
    knobs = [parse_knob("slowdown=1,2,4")]
    t = tuner(knobs, Vocabulary(), {"slowdown": 2}, tmp_path)
    t.make_cell = lambda values: values
    step = search_module.Step(0, {"slowdown": 2}, 0.0, limit=read_limit(None, [], {}, 2).to_json())
    worse = {"decision": WORSE, "seconds": 80.0, "block_count": 4}
    step.trials += [
        search_module.Trial("slowdown", 4, "every knob in turn", {"slowdown": 4}, worse),
        search_module.Trial("slowdown", 1, "every knob in turn", {"slowdown": 1}, None),  # cut by the Ctrl-C
    ]
    t.state.steps.append(step)
    t = Tuner(t.state, lambda values: values, Vocabulary(), t.store, cores=2, announce=lambda _: None)
    assert t.block_s() == 20.0  # the trail's blocks, not the guess
    monkeypatch.setattr(search_module, "duel", fake_duel({"1": WORSE}))
    monkeypatch.setattr(
        Tuner, "evidence", lambda self, step: pytest.fail("the resumed step's evidence was gathered again")
    )
    assert t.search() == "converged"
    assert len(t.state.steps) == 1 and [(x.value, x.decision) for x in step.trials] == [(4, WORSE), (1, WORSE)]


def test_a_program_whose_progress_comes_in_bursts_gets_slices_that_span_them(tmp_path):
    from harness.ab.slicing import SliceOptions
    from harness.tune.duel import MAX_SLICE_S, SAMPLE_S, SLICE_CYCLES, slicing_for
    from harness.tune.evidence import report_gap

    # CleanRL's C1 evidence cell, as its series has it: global_step flat for 3.2 s while it learned
    rows = [(33.6, "warmup", 100), (35.25, "measure", 239), (36.33, "measure", 239), (37.37, "measure", 239)]
    rows += [(38.42, "measure", 326), (39.52, "measure", 494), (41.59, "measure", 543), (43.31, "stopped", 729)]
    (tmp_path / "series").mkdir()
    lines = ["t_s,phase,metric,value", *(f"{t},{phase},global_step,{v}" for t, phase, v in rows), "36.0,,cpu,1"]
    (tmp_path / "series" / "c-0.csv").write_text("\n".join(lines) + "\n")
    rec = record(60.8)
    rec.metrics["global_step_per_s"] = rec.metrics.pop("steps_per_s")
    rec.series = "series/c-0.csv"
    assert report_gap(tmp_path, rec) == pytest.approx(38.42 - 35.25)
    assert slicing_for(1.6).slice_s == pytest.approx(SLICE_CYCLES * (1.6 + SAMPLE_S))
    assert slicing_for(3.17).slice_s == slicing_for(30).slice_s == MAX_SLICE_S
    assert slicing_for(3.17).max_slice_s > slicing_for(3.17).slice_s
    assert slicing_for(0.9) == slicing_for(None) == SliceOptions()  # a program that reports often: the A/B's own
    # a counter that grew at every sample, read a sample period apart with its jitter: not bursts
    assert slicing_for(1.018) == SliceOptions()
    assert report_gap(tmp_path, record(None)) is None
    # the actor-learner's evidence cell: env_steps steadily at every 1 s sample, then the level
    # held to the cell's end (a stopped row 1.8 s later): no gap between reports, the A/B's own slices
    rows = [(6.80, "measure", 108000), *((7.81 + i, "measure", 140500 + 37000 * i) for i in range(8))]
    rows += [(14.81 + 0.001, "stopped", 140500 + 37000 * 7), (16.64, "stopped", 140500 + 37000 * 7)]
    lines = ["t_s,phase,metric,value", *(f"{t},{phase},global_step,{v}" for t, phase, v in rows)]
    (tmp_path / "series" / "c-0.csv").write_text("\n".join(lines) + "\n")
    assert report_gap(tmp_path, rec) is None
    assert slicing_for(report_gap(tmp_path, rec)) == SliceOptions()
    # a 1 s evidence window holds one sample interval: grown, it is no gap (1.013 s read as one
    # gave the end-to-end tune test 6 s slices)
    lines = [
        "t_s,phase,metric,value",
        "5.0,measure,global_step,1000",
        "6.013,measure,global_step,1130",
        "6.013,stopped,global_step,1130",
    ]
    (tmp_path / "series" / "c-0.csv").write_text("\n".join(lines) + "\n")
    assert report_gap(tmp_path, rec) is None
    lines = [
        "t_s,phase,metric,value",
        "5.0,measure,global_step,1000",
        "6.013,measure,global_step,1000",
        "6.013,stopped,global_step,1000",
    ]
    (tmp_path / "series" / "c-0.csv").write_text("\n".join(lines) + "\n")
    assert report_gap(tmp_path, rec) == pytest.approx(1.013)  # it stood still: a gap
    # the same samples with one standing still: a gap of two samples
    rows[4] = (rows[4][0], "measure", rows[3][2])
    lines = ["t_s,phase,metric,value", *(f"{t},{phase},global_step,{v}" for t, phase, v in rows)]
    (tmp_path / "series" / "c-0.csv").write_text("\n".join(lines) + "\n")
    assert report_gap(tmp_path, rec) == pytest.approx(2.0)


# ------------------------------------------------------------------ the screen


def test_spread_keeps_both_ends_and_ahead_runs_nearest_first():
    from harness.tune.screen import ahead, spread

    knob = parse_knob("batch=25,50,100,200,400,800")
    assert ahead(knob, 100, "up") == [200, 400, 800] and ahead(knob, 100, "down") == [50, 25]
    assert ahead(knob, 800, "up") == []
    assert spread([1, 2, 3, 4, 5, 6, 7], 4) == [1, 3, 5, 7] and spread([1, 2], 4) == [1, 2]


class Values(dict):
    """A stand-in tuner's cell: its values, measured as a program that started at once (a
    reading that counted nothing is not measured again for its start-up)."""

    steady_max = 60.0


def stand_in_tuner(tmp_path, monkeypatch, knobs, words, start, critical, rate, decide, label, evidence_rate=False):
    """A tune whose processes are tables: readings from `rate(params)`, each A/B's decision
    from `decide(incumbent, challenger)`, the evidence's limit `critical` (and, with
    `evidence_rate`, its reading of the incumbent). Returns the tuner and what was read, each
    reading as `label(params)` says it."""
    t = tuner(knobs, words, start, tmp_path)
    t.make_cell = lambda values: values
    read: list = []

    class Runner:
        def __init__(self, store):
            pass

        def run(self, cell, repeat):
            read.append(label(cell))
            return record(rate(cell))

    def duel(incumbent, challenger, run_root, opts, min_gain, words=None, stop_futile=True):
        decision = decide(incumbent, challenger)
        interval = Interval(7, 0.3, 0.1, 0.5) if decision == BETTER else Interval(7, -0.3, -0.5, -0.1)
        return Duel(decision, interval, 7, 1.0, "iters_per_s", "")

    def evidence(self, step):
        step.limit = read_limit(causal_doc(**{critical: "critical"}), [], {"cpu_util_mean": 50}, 2).to_json()
        if evidence_rate:
            step.metric, step.rate = "iters_per_s", rate(step.incumbent)
            self._readings[search_module.key_of(step.incumbent)] = (step.metric, step.rate)
        return search_module.Limit.from_json(step.limit)

    monkeypatch.setattr(evidence_module, "CellRunner", Runner)  # the tune runs its cells through evidence.kept_run
    monkeypatch.setattr(Tuner, "measured_cell", lambda self, values, seconds=None: Values(values))
    monkeypatch.setattr(Tuner, "evidence", evidence)
    monkeypatch.setattr(search_module, "duel", duel)
    return t, read


def screening_tuner(tmp_path, monkeypatch, decisions: dict[int, str], rates: dict[int, float]):
    """A tune of batch=25..400 whose main is critical and relieved by a larger batch, with
    readings and A/Bs from tables (no processes); the readings taken are listed."""
    words = Vocabulary(relieves={"main": (Move("batch", "up"),)})
    return stand_in_tuner(
        tmp_path, monkeypatch, [parse_knob("batch=25,50,100,200,400")], words, {"batch": 25}, "main",
        lambda p: rates[p["batch"]], lambda _, challenger: decisions.get(challenger["batch"], WORSE),
        lambda p: p["batch"],
    )  # fmt: skip


def interacting_rate(p: dict) -> float:
    """MCCFR at batch 400 on 2026-11-27 (docs/records/2026-11-27-tune-edge.md), as a table:
    delta sync with staleness 1 runs 1.3x, and neither move alone gains."""
    r = 100.0 * (1.0 if p["batch"] == 400 else 0.8)
    if p["sync"] == "delta" and p["staleness"] == 1:
        return 1.3 * r
    return r * {"full": 0.9, "shared": 1.0, "delta": 1.0}[p["sync"]] * {0: 1.0, 1: 0.97, 2: 1.0}[p["staleness"]]


def test_after_every_single_move_loses_moves_of_two_knobs_are_read_and_the_best_is_tried(tmp_path, monkeypatch):
    knobs = [parse_knob("sync=full,shared,delta"), parse_knob("batch=25,50,100,200,400"), parse_knob("staleness=0,1,2")]
    words = Vocabulary(relieves={"workers": (Move("staleness", "up"),)})
    best = {"sync": "delta", "batch": 400, "staleness": 1}
    t, read = stand_in_tuner(
        tmp_path, monkeypatch, knobs, words, {"sync": "shared", "batch": 400, "staleness": 0}, "workers",
        interacting_rate, lambda incumbent, challenger: BETTER if challenger == best != incumbent else WORSE, dict,
        evidence_rate=True,
    )  # fmt: skip
    assert t.search() == "converged"
    first = t.state.steps[0]
    singles = [x for x in first.trials if not x.joint]
    assert singles and all(x.decision == WORSE for x in singles)  # no single move gains
    paired = first.trials[first.adopted]
    assert paired.joint and paired.value == {"sync": "delta", "staleness": 1} and paired.decision == BETTER
    assert "two knobs together, read 1.30x" in paired.why
    # each pair read once: the categorical knob's other values with the values ahead of each
    # other knob (the batch down from 400: 200, 50, 25 of four, spread; staleness up: 1, 2)
    pairs = [r for r in read if r["sync"] != "shared" and (r["batch"], r["staleness"]) != (400, 0)]
    assert sorted(json.dumps(r, sort_keys=True) for r in pairs[:10]) == sorted(
        json.dumps({"sync": s_, "batch": b, "staleness": st}, sort_keys=True)
        for s_ in ("full", "delta")
        for b, st in ((200, 0), (50, 0), (25, 0), (400, 1), (400, 2))
    )
    assert t.state.best == best
    # from there nothing reads above the incumbent: no pair is A/B'd, and the conclusion says what was looked at
    last = t.state.steps[-1]
    assert last.adopted is None and not any(x.joint for x in last.trials)
    assert t.state.conclusion.startswith("no move from sync=delta batch=400 staleness=1 was decided better")
    # ... and that moves of two knobs were read, none above it (the trail has a row for them:
    # a campaign's self-play tune read six, none above, and neither its trail nor its conclusion said so)
    assert "moves of two knobs, one reading each" in t.state.conclusion
    assert last.pairs and last.pairs["said"].endswith("none read above it: none A/B'd")
    assert first.pairs and "A/B'd: sync=delta staleness=1" in first.pairs["said"]
    rows = trail_rows(t.state.to_json())
    marked = [i for i, r in enumerate(rows) if r[3] == "moves of two knobs"]
    assert len(marked) == 2 and rows[marked[0] + 1][3].startswith("sync=delta staleness=1 (adopted)")


def test_a_screen_proposes_its_best_reading_before_the_one_step_move(tmp_path, monkeypatch):
    rates = {25: 10.0, 50: 20.0, 100: 40.0, 200: 70.0, 400: 90.0}
    t, read = screening_tuner(tmp_path, monkeypatch, {400: BETTER}, rates)
    assert t.search() == "converged"
    first = t.state.steps[0]
    assert read[:5] == [25, 50, 100, 200, 400]  # the incumbent, then every value ahead once, in order
    assert (first.trials[0].value, first.trials[0].decision) == (400, BETTER)  # 25 -> 400 in one A/B
    assert first.trials[0].why.endswith("the screen's best reading") and first.trials[0].screen["rates"][-1] == 90.0
    assert t.state.best == {"batch": 400} and len(first.trials) == 1


def test_a_screened_value_that_loses_its_ab_leaves_the_one_step_move_to_follow(tmp_path, monkeypatch):
    # 400 read best (a lucky reading) but its A/B says worse: 50 is tried next, not screened again
    rates = {25: 10.0, 50: 20.0, 100: 15.0, 200: 12.0, 400: 30.0}
    t, read = screening_tuner(tmp_path, monkeypatch, {50: BETTER}, rates)
    t.search()
    first = t.state.steps[0]
    assert [(x.value, x.decision) for x in first.trials] == [(400, WORSE), (50, BETTER)]
    assert read[:5] == [25, 50, 100, 200, 400]
    # from 50, the screen read 100 below 50: the climb does not continue first; the next step's
    # screen of what is ahead of 50 and untried (100, 200) takes the readings it already has
    second = t.state.steps[1]
    assert second.trials and second.trials[0].why != "continues batch up"
    assert second.trials[0].screen["rates"] == [15.0, 12.0] and read == [25, 50, 100, 200, 400]


def test_no_screen_when_the_budget_holds_no_ab_after_it(tmp_path, monkeypatch):
    rates = {25: 10.0, 50: 20.0, 100: 40.0, 200: 70.0, 400: 90.0}
    t, read = screening_tuner(tmp_path, monkeypatch, {50: BETTER}, rates)
    t._cell_s = 400.0  # a slow program: its A/B fits the budget, four readings beside it do not
    t.search()
    assert read == [] and t.state.steps[0].trials[0].value == 50


def test_a_budget_spent_before_any_block_says_its_block_length_was_guessed(tmp_path):
    t = tuner([parse_knob("slowdown=1,2,4")], Vocabulary(), {"slowdown": 4}, tmp_path)
    assert "at a guessed 15 s a block" in t.out_of_budget()
    t._block_s = [42.0]
    assert "at 42 s a block" in t.out_of_budget() and "guessed" not in t.out_of_budget()


def test_a_screen_with_one_rate_orders_nothing_and_reads_values_as_numbers():
    from harness.tune.screen import Screen

    lone = Screen("steps", [64, 128, 256], [None, 415.2, None])
    assert lone.best() is None  # rl_zoo3's steps screen: one reading is not an order
    assert Screen("steps", [64, 128], [300.0, 415.2]).best() == 128
    assert Screen("lr", [0.5, 1], [1.0, 2.0]).read(1.0) == 2.0  # 1 and 1.0 are one value


# ------------------------------------------------------------------ futility


def replay(ratios: list[float], min_gain: float = 0.03, per_block_s: float = 15.0, budget_s: float = 150.0):
    """The block count at which a challenger's A/B recorded in the seeds campaign (0ba8279)
    would have been given up (None: never), its ratios read as every estimand's."""
    from harness.ab.sequential import clipped_sequence
    from harness.tune.duel import futility

    give_up = futility(min_gain, alpha=0.2)
    logs = [math.log(r) for r in ratios]
    for n in range(1, len(logs) + 1):
        if give_up([logs[:n]], clipped_sequence([logs[:n]], 0.2), n, budget_s / per_block_s):
            return n
    return None


def test_a_challenger_too_close_to_decide_is_given_up_and_a_gain_is_not():
    # MCCFR staleness 1 -> 2, undecided after 12 blocks and 145 s: given up by the seventh
    stale = [0.993, 1.268, 1.244, 1.099, 0.973, 0.994, 1.172, 1.274, 0.975, 1.009, 1.121, 1.301]
    assert (n := replay(stale, per_block_s=12.1)) is not None and n <= 7
    # self-play games 1 -> 4 at 16 leaves, undecided after 10 blocks
    games = [1.106, 0.923, 1.04, 0.895, 1.075, 0.923, 1.0, 0.959, 1.072, 1.015]
    assert (n := replay(games, per_block_s=15.2)) is not None and n <= 7
    # staleness 0 -> 1, decided better (1.046x) after 10 blocks: never given up on the way
    assert replay([1.064, 1.433, 1.157, 1.206, 1.344, 1.261, 1.118, 1.185, 1.198, 1.21], per_block_s=14.4) is None
    # a decided 4x is never given up, nor anything before FUTILE_AFTER blocks
    assert replay([4.18, 5.244, 3.983, 3.923, 4.1, 4.0]) is None
    assert replay([1.0, 1.01, 0.99, 1.0]) is None


# ------------------------------------------------------------------ the survey


def surveying_tuner(tmp_path, monkeypatch, rate, better):
    """MCCFR's shape: staleness relieves the critical workers, batch and sync are every knob in
    turn. Readings from `rate(params)`, the incumbent's from its evidence; A/Bs "better" for
    the params `better` accepts, else worse. Returns the tuner and the readings' params."""
    knobs = [parse_knob("sync=full,delta"), parse_knob("batch=25,50,100,200,400"), parse_knob("staleness=0,1,2")]
    words = Vocabulary(relieves={"workers": (Move("staleness", "up"),)})
    start = {"sync": "full", "batch": 25, "staleness": 0}
    return stand_in_tuner(
        tmp_path, monkeypatch, knobs, words, start, "workers", rate,
        lambda incumbent, challenger: BETTER if better(challenger) and not better(incumbent) else WORSE, dict,
        evidence_rate=True,
    )  # fmt: skip


def mccfr_rate(p: dict) -> float:
    return p["batch"] * (1.5 if p["sync"] == "delta" else 1.0) * (1.3 if p["staleness"] == 1 else 1.0)


def test_knobs_that_each_read_above_the_incumbent_are_tried_together_first(tmp_path, monkeypatch):
    best = {"sync": "delta", "batch": 400, "staleness": 1}
    t, read = surveying_tuner(tmp_path, monkeypatch, mccfr_rate, lambda p: p == best)
    t.search()
    first = t.state.steps[0]
    joint = first.trials[0]
    # every proposed knob read once before any A/B, in the evidence's order (staleness first)
    assert [p for p in read[:2]] == [{"sync": "full", "batch": 25, "staleness": s} for s in (1, 2)]
    assert joint.joint and joint.value == {"staleness": 1, "sync": "delta", "batch": 400}
    assert joint.decision == BETTER and first.adopted == 0 and len(first.trials) == 1
    assert joint.said() == "batch=400 sync=delta staleness=1" and "batch=400 16.00x" in joint.why  # highest first
    assert t.state.best == {"sync": "delta", "batch": 400, "staleness": 1}
    from harness.report.tune import trail_rows

    assert trail_rows(t.state.to_json())[0][3] == "batch=400 sync=delta staleness=1 (adopted)"


def test_a_lone_knob_above_the_incumbent_goes_before_the_evidences_order(tmp_path, monkeypatch):
    # only the batch reads 20 % above: it goes first, before staleness (which relieves the
    # critical group); when it loses, the evidence's order follows
    def rate(p):
        return p["batch"] * (1.1 if p["staleness"] == 1 else 1.0)

    t, read = surveying_tuner(tmp_path, monkeypatch, rate, lambda p: False)
    t.search()
    tried = [(x.knob, x.value) for x in t.state.steps[0].trials]
    # the model of every reading puts the two together (batch 400 and staleness 1 each read
    # above their knob's others): read 1.1x batch 400's, it goes first, then batch 400
    assert tried[0] == ("batch+staleness", {"batch": 400, "staleness": 1})
    assert "the model of" in t.state.steps[0].trials[0].why
    assert tried[1] == ("batch", 400) and ("staleness", 1) in tried[2:]
    pattern = [x for x in t.state.steps[0].trials if x.joint and "two knobs" not in x.why and "model" not in x.why]
    assert not pattern  # no pattern move: one knob read 20 % above


def test_with_no_reading_of_the_incumbent_the_moves_that_read_go_first_highest_first(tmp_path, monkeypatch):
    # rl_zoo3 at 8 envs (Z4): the incumbent's reading gave no rate, batch 512 read 1867 steps/s,
    # and every knob in turn spent the step on other knobs; now the highest reading goes first
    start = {"sync": "full", "batch": 25, "staleness": 0}

    def rate(p):
        return None if p == start else p["batch"] * (1.1 if p["staleness"] == 1 else 1.0)

    t, read = surveying_tuner(tmp_path, monkeypatch, rate, lambda p: p["batch"] == 400)
    t.search()
    tried = [(x.knob, x.value) for x in t.state.steps[0].trials]
    assert tried[0] == ("batch", 400) and t.state.steps[0].adopted == 0, tried
    assert not t.state.steps[0].trials[0].joint  # nothing read above an incumbent that read nothing


def test_a_reading_that_counted_nothing_is_measured_again_for_its_start_up():
    """rl_zoo3 at 8 envs prints its first table 20-30 s after launch: nine 14 s screen cells of
    Z5's step 2 read "no rate". Like the evidence, a reading that counted nothing is measured
    again with the start-up cap."""
    from harness.running.matrix import Cell
    from harness.tune.evidence import STARTUP_CAP_S, measure_until_counted

    ran, said = [], []

    def run(cell):
        ran.append(cell.steady_max)
        return record(415.2 if cell.steady_max >= STARTUP_CAP_S else None)

    cell = Cell("command", {"workers": 8}, 4.0, 0.0, None, 1, 60.0, steady_max=10.0)
    used, got = measure_until_counted(cell, run, said.append, "  the reading of workers=8")
    assert ran == [10.0, STARTUP_CAP_S] and got.metrics["steps_per_s"] == 415.2
    assert used.steady_max == STARTUP_CAP_S and used.timeout >= 4.0 + STARTUP_CAP_S
    assert said and said[0].startswith("    the reading of workers=8 counted nothing in its window")
    ran.clear()
    measure_until_counted(used, run, said.append, "again")  # a cell with the cap: once
    assert ran == [STARTUP_CAP_S]
    failed = measure_until_counted(cell, lambda c: record(None, status="error"), said.append, "x")[1]
    assert failed.status == "error"  # a failure is not a slow start: not run again


def test_a_screen_reading_that_needed_its_start_up_gives_it_to_the_tunes_later_cells(tmp_path, monkeypatch):
    from harness.running.matrix import Cell
    from harness.tune.evidence import STARTUP_CAP_S
    from harness.tune.result import Step

    t = tuner([parse_knob("batch=32..512:log")], Vocabulary(), {"batch": 32}, tmp_path)
    t.make_cell = lambda values: Cell("command", dict(values), 8.0, 0.0, None, 1, 60.0, steady_max=10.0)
    caps = []

    class Runner:
        def __init__(self, store):
            pass

        def run(self, cell, repeat):
            caps.append(cell.steady_max)
            return record(300.0 if cell.steady_max >= STARTUP_CAP_S else None)

    monkeypatch.setattr(evidence_module, "CellRunner", Runner)  # the tune runs its cells through evidence.kept_run
    step = Step(1, {"batch": 32}, 0.0)
    assert t.reading({"batch": 512}, step) == ("steps_per_s", 300.0)
    assert t.reading({"batch": 256}, step) == ("steps_per_s", 300.0)
    assert caps == [10.0, STARTUP_CAP_S, STARTUP_CAP_S]  # the second reading started with the cap


def test_a_reading_refused_by_its_provenance_orders_nothing():
    """A screen reading, a worker-axis point and an incumbent's rate come from record_rate: a
    window with too few units to mean anything gives no rate, so no order or fit rests on it."""
    from harness.runs.view import record_rate

    assert record_rate(record(415.2)) == ("steps_per_s", 415.2)
    thin = record(415.2)
    thin.metrics["steps_per_s_valid"] = 0
    assert record_rate(thin) == ("steps_per_s", None)
    assert record_rate(record(415.2, status="error")) == (None, None)
