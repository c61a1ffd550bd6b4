"""The tune's plan and its whole screen (harness.tune.plan, harness.tune.halving), on readings
made up for the purpose: which settings are read, in what order, compared with what, and when
an A/B is spent."""

from __future__ import annotations

import math

import pytest

from harness.ab.sequential import Interval
from harness.tune import halving, plan
from harness.tune.duel import BEHIND, BETTER, TIE, Duel
from harness.tune.result import key_of
from harness.tune.space import parse_knob

KNOBS = [parse_knob("workers=1..5"), parse_knob("batch=16..256:log")]
START = {"workers": 1, "batch": 256}


def true_rate(p: dict) -> float:
    """An interior best at workers 3, batch 64, a cliff at batch 256."""
    cliff = 0.4 if p["batch"] >= 256 else 1.0
    return 1000.0 * (1 - 0.02 * abs(p["workers"] - 3)) * (1 - 0.02 * abs(math.log2(p["batch"] / 64))) * cliff


class Clock:
    def __init__(self) -> None:
        self.t = 0.0


def run_halving(state, read_rate=true_rate, duels=None, room=1e9, drift=0.0):
    clock, reads, compared = Clock(), [], []

    def read(params, window):
        clock.t += window + 4
        reads.append((dict(params), window))
        return "rows_per_s", read_rate(params) * (1 - drift * clock.t)

    def compare(incumbent, challenger):
        compared.append((incumbent, challenger))
        decision, ratio = (duels or {}).get(key_of(challenger), (BETTER, 1.1))
        interval = Interval(4, math.log(ratio), math.log(ratio) - 0.01, math.log(ratio) + 0.01)
        return Duel(decision, interval, 4, 40.0, "rows_per_s", "")

    search = halving.Halving(
        state, plan.settings(KNOBS), START, 2.0, read=read, compare=compare, reading_s=lambda w: w + 4,
        room=lambda: room, elapsed=lambda: clock.t, announce=lambda _: None, save=lambda: None,
    )  # fmt: skip
    winner, sure = search.run()
    return winner, sure, reads, compared


def test_a_plan_screens_whole_what_the_budget_can_read_and_says_what_a_grid_costs():
    made = plan.make_plan(KNOBS, budget_s=1200, window_s=2.0, reading_s=6.0)
    assert made.settings == 25 and made.mode == plan.WHOLE
    # the start again every DRIFT_EVERY; the AGAIN leaders a second time, and the start after them
    assert made.screen_s == pytest.approx((25 + 4 + plan.AGAIN + 1) * 6.0)
    assert made.grid_s == pytest.approx(25 * (plan.GRID_WINDOW_S + 4.0))
    assert "screened whole" in made.said() and "grid" in made.said()
    big = [parse_knob("a=1..16"), parse_knob("b=1..16")]
    assert plan.make_plan(big, budget_s=1200, window_s=2.0, reading_s=6.0).mode == plan.STEPS
    few = plan.make_plan([parse_knob("workers=1..4")], budget_s=1200, window_s=2.0, reading_s=6.0)
    assert few.screen_s == pytest.approx((4 + 1) * 6.0) and "twice" not in few.said()  # no leaders to read again
    assert f"the {plan.AGAIN} leaders twice" in made.said()


def test_a_plan_for_steps_that_a_warm_launch_could_turn_whole_is_timed_again():
    cold = plan.make_plan(KNOBS, budget_s=300, window_s=2.0, reading_s=8.0)  # 29 readings: 232 s of 300
    assert cold.mode == plan.STEPS and plan.first_launch_may_decide(cold)
    warm = plan.make_plan(KNOBS, budget_s=300, window_s=2.0, reading_s=4.0)
    assert warm.mode == plan.WHOLE and not plan.first_launch_may_decide(warm)
    big = [parse_knob("a=1..16"), parse_knob("b=1..16")]  # past the budget at any launch: steps as planned
    assert not plan.first_launch_may_decide(plan.make_plan(big, budget_s=300, window_s=2.0, reading_s=4.0))


def test_every_setting_is_read_once_in_a_seeded_order_the_start_between_them():
    state = {"order_seed": 7}
    winner, sure, reads, _ = run_halving(state)
    rung0 = state["rungs"][0]["readings"]
    others = [r["params"] for r in rung0 if not r["reference"] and not r.get("again")]
    assert sorted(map(key_of, others)) == sorted(key_of(p) for p in plan.settings(KNOBS) if p != START)
    starts = [i for i, r in enumerate(rung0) if r["reference"]]
    assert starts[0] == 0 and starts[-1] == len(rung0) - 1
    assert len(starts) == 1 + math.ceil(24 / plan.DRIFT_EVERY) + 1  # and once after the leaders' second look
    assert [p for p, w in reads if w == 2.0] == [r["params"] for r in rung0]
    again = run_halving({"order_seed": 7})[2]
    assert [key_of(p) for p, _ in again] == [key_of(p) for p, _ in reads]  # the same seed, the same order
    assert winner == {"workers": 3, "batch": 64}
    assert state["rungs"][1]["window_s"] == 4.0  # leaders read again for twice the window


def test_readings_are_compared_relative_to_the_start_read_around_them():
    # the machine slows as the screen goes on: a setting read late reads low raw, not relative
    slow = [halving.Reading(START, 100.0 * (1 - 0.004 * t), t, True) for t in (0, 50, 100)]
    early, late = {"workers": 2, "batch": 64}, {"workers": 3, "batch": 64}
    got = halving.relative([*slow, halving.Reading(early, 200.0 * 0.98, 5), halving.Reading(late, 210.0 * 0.62, 95)])
    assert got[key_of(late)] > got[key_of(early)]  # raw, 130 against 196
    state = {"order_seed": 3}
    winner, *_ = run_halving(state, drift=0.001)
    assert winner == {"workers": 3, "batch": 64}


def test_an_ab_only_between_leaders_read_within_the_noise():
    far = {"workers": 3, "batch": 64}

    def rates(p):  # one clear leader: every other setting at most half its rate
        return 2000.0 if p == far else 0.5 * true_rate(p)

    winner, sure, _, compared = run_halving({"order_seed": 1}, read_rate=rates)
    assert winner == far and compared == []
    assert "beyond the readings' noise" in sure


def test_a_leader_behind_its_runner_up_by_ab_swaps_and_a_tie_is_said():
    ahead = {"workers": 3, "batch": 32}

    def rates(p):  # two settings read within noise of each other at the top
        return 1010.0 if p == {"workers": 3, "batch": 64} else (1000.0 if p == ahead else 0.5 * true_rate(p))

    winner, sure, _, compared = run_halving(
        {"order_seed": 2}, read_rate=rates, duels={key_of({"workers": 3, "batch": 64}): (BEHIND, 0.9)}
    )
    assert compared and winner == ahead and "ahead of workers=3 batch=64, which led the readings" in sure
    winner, sure, _, _ = run_halving(
        {"order_seed": 2}, read_rate=rates, duels={key_of({"workers": 3, "batch": 64}): (TIE, 1.01)}
    )
    assert winner == {"workers": 3, "batch": 64} and "ties with workers=3 batch=32" in sure


def test_a_resumed_screen_reads_no_setting_twice():
    state = {"order_seed": 5}
    run_halving(state)
    cut = {
        "order_seed": 5,
        "rungs": [dict(state["rungs"][0], readings=state["rungs"][0]["readings"][:10])],
        "duels": [],
    }
    _, _, reads, _ = run_halving(cut)
    assert len([1 for p, w in reads if w == 2.0]) == len(state["rungs"][0]["readings"]) - 10
    # cut during the leaders' second look: the leader not yet read again, then the start
    rung0 = state["rungs"][0]
    assert rung0["readings"][-2].get("again") and rung0["readings"][-1]["reference"]
    cut = {"order_seed": 5, "rungs": [dict(rung0, readings=rung0["readings"][:-2])], "duels": []}
    _, _, reads, _ = run_halving(cut)
    assert [(key_of(p), w) for p, w in reads if w == 2.0] == [(key_of(rung0["again"][-1]), 2.0), (key_of(START), 2.0)]


def test_survivors_keep_at_most_one_in_four_and_prune_below_the_noise():
    scores = {str(i): 1.0 - 0.01 * i for i in range(20)}
    assert len(halving.survivors(scores, sd=0.5)) == 5
    assert halving.survivors({"a": 1.0, "b": 0.5, "c": 0.4, "d": 0.3}, sd=0.03) == ["a", "b"]
    assert halving.noise([halving.Reading({}, 100.0, t, True) for t in range(2)]) == halving.NOISE_FLOOR
    # two readings of the start 67 % apart: that one difference is the noise, not the floor
    apart = halving.noise([halving.Reading({}, 57.0, 0, True), halving.Reading({}, 95.0, 30, True)])
    assert apart == pytest.approx(math.log(95 / 57) / math.sqrt(2))
    assert halving.survivors({"a": 7.0, "b": 3.2, "c": 2.6}, sd=apart) == ["a", "b", "c"]  # within its band
    assert halving.band(apart) > 7.0 / 3.2


def test_the_model_of_every_reading_predicts_a_setting_never_read():
    from harness.tune import sampler

    knobs = [parse_knob("backend=processes,server"), parse_knob("leaves=1..16:log"), parse_knob("games=1..8:log")]
    # readings one knob at a time from one incumbent: leaves 16 and the server each read well
    base = {"backend": "processes", "leaves": 1, "games": 1}
    read = [(base, 100.0), ({**base, "leaves": 16}, 300.0), ({**base, "leaves": 4}, 200.0)]
    read += [({**base, "backend": "server"}, 150.0), ({**base, "games": 8}, 95.0)]
    model = sampler.fit(knobs, read)
    (best, predicted), *_ = sampler.best_unread(model, {key_of(p) for p, _ in read}, 3)
    assert best == {"backend": "server", "leaves": 16, "games": 1}
    assert math.exp(predicted - model.predict(base)) > 2.0
    assert sampler.fit(knobs, read[:1]) is None
    assert sampler.differs(best, base) == ["backend", "leaves"]


def test_the_winners_reading_over_the_start_is_kept_for_the_final_ab():
    state = {"order_seed": 4}
    winner, *_ = run_halving(state)
    assert state["winner_over_start"] == pytest.approx(true_rate(winner) / true_rate(START))


def test_leaders_whose_rungs_disagree_are_ab_d():
    # the leader of the last rung read below the runner-up in rung 0: the readings cannot say
    w5, w3 = {"workers": 5, "batch": 64}, {"workers": 3, "batch": 64}
    seen: dict = {}

    def rates(p):
        seen[key_of(p)] = seen.get(key_of(p), 0) + 1
        if p == w5:  # 970 in rung 0's two readings, 1300 in rung 1's
            return 970.0 if seen[key_of(p)] <= 2 else 1300.0
        if p in ({"workers": 4, "batch": 64}, {"workers": 2, "batch": 64}, {"workers": 3, "batch": 32}):
            return 950.0
        return 1000.0 if p == w3 else 0.3 * true_rate(p)

    state = {"order_seed": 6}
    winner, sure, _, compared = run_halving(state, read_rate=rates)
    assert len(state["rungs"]) == 2 and compared == [(w3, w5)], sure


def test_a_screen_reads_its_leaders_twice_and_takes_their_noise_when_the_start_s_understates_it():
    # the start (one process) reads steady; every other setting's second reading is 20 % off its
    # first: the producers program's multi-process settings read 10 % apart from one screen to the next
    seen: dict = {}

    def rates(p):
        seen[key_of(p)] = seen.get(key_of(p), 0) + 1
        return true_rate(p) * (1.2 if p != START and seen[key_of(p)] == 2 else 1.0)

    state = {"order_seed": 8}
    run_halving(state, read_rate=rates)
    rung0 = state["rungs"][0]["readings"]
    first = {key_of(r["params"]): r["rate"] for r in rung0 if not r["reference"] and not r.get("again")}
    again = [r for r in rung0 if r.get("again")]
    top = sorted(first, key=lambda k: -first[k])[: plan.AGAIN]
    assert [key_of(r["params"]) for r in again] == top and rung0[-1]["reference"]
    assert state["noise_sd"] == pytest.approx(math.log(1.2) / math.sqrt(2), rel=0.05)
    steady = [r for r in rung0 if not r.get("again")]
    assert halving.noise([halving.Reading(r["params"], r["rate"], r["at_s"], r["reference"]) for r in steady]) == (
        halving.NOISE_FLOOR
    )


def test_no_second_look_where_the_screen_read_no_more_than_its_leaders_or_the_budget_has_no_room():
    small = [parse_knob("workers=1..3")]
    state = {"order_seed": 1, "rungs": []}
    search = halving.Halving(
        state, plan.settings(small), {"workers": 1}, 2.0, read=lambda p, w: ("rows_per_s", 100.0 * p["workers"]),
        compare=lambda a, b: None, reading_s=lambda w: w + 4, room=lambda: 1e9, elapsed=lambda: 0.0,
        announce=lambda _: None, save=lambda: None,
    )  # fmt: skip
    search.run()
    assert state["rungs"][0]["again"] == [] and not any(r.get("again") for r in state["rungs"][0]["readings"])
    state = {"order_seed": 2}
    run_halving(state, room=10.0)
    assert state["rungs"][0]["again"] == []
