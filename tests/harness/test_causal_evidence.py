"""A causal verdict rests on its evidence (issue 43): periods long enough for the program's
cadence and adapted as Coz adapts its experiments, a budget refused up front when it cannot
hold the rounds, an I/O proxy chosen only where it tracks the counter, verdicts gated by the
data's caveats, and Ray's runtime left out of the groups."""

from __future__ import annotations

import math

import pytest

from harness.ab.sequential import medians_to_decide
from harness.causal import cadence as cad
from harness.causal.periods import FREE, Period
from harness.causal.plan import ROUNDS_PLANNED, Plan, refusal
from harness.causal.proxy import Mark, choose, drifted, halves, marks_at, tracking
from harness.causal.rounds import crowding, fewest_reports, observations
from harness.causal.sensitivity import estimate
from harness.causal.verdicts import Evidence, judge
from harness.watch import roles


def steps(every: float, until: float, per: float = 10.0, start: float = 0.0) -> list[tuple[float, float]]:
    """A counter sampled every 50 ms that steps by `per` every `every` seconds."""
    out, t = [], start
    while t <= until:
        out.append((round(t, 3), per * math.floor(t / every + 1e-9)))
        t += 0.05
    return out


# ------------------------------------------------------------------ cadence
def test_reports_are_the_moments_the_counter_changed_and_the_cadence_their_gap():
    reports = cad.reports_of(steps(0.5, 5.0))
    assert [r.t for r in reports[:3]] == pytest.approx([0.5, 1.0, 1.5])
    assert cad.cadence(reports) == pytest.approx(0.5, abs=0.01)
    assert cad.cadence(reports[:3]) is None  # too few reports to trust a cadence


def test_a_bursty_counter_has_the_cadence_of_its_bursts_not_of_its_lines():
    """Bursts of 10 lines 50 ms apart every 2 s (a 1.55 s gap between bursts): a random
    moment falls in that gap 3 times in 4, so the cadence is near it, not near 50 ms."""
    series, count = [], 0
    for burst in range(6):
        for k in range(10):
            count += 1
            series.append((2.0 * burst + 0.05 * k, count))
    every = cad.cadence(cad.reports_of([(0.0, 0), *series]))
    assert 1.1 < every < 1.55


def test_a_period_holds_five_reports_and_coz_rule_adapts_it():
    assert cad.period_for(0.5, 0.1, 0.5) == pytest.approx(0.1 + 6 * 0.5)
    assert cad.period_for(0.01, 0.1, 0.5) == 0.5  # the floor: a dense counter keeps short periods
    assert cad.next_period(3.1, 4, 0.5, 0.5, 0.1) == pytest.approx(6.2)  # too few reports: twice as long
    assert cad.next_period(3.1, 6, 0.5, 0.5, 0.1) == pytest.approx(3.1)
    assert cad.next_period(6.2, 12, 0.5, 0.5, 0.1) == pytest.approx(3.1)  # more than twice: half
    assert cad.next_period(3.1, 12, 0.5, 0.5, 0.1) == pytest.approx(3.1)  # half would hold under 5 reports
    assert cad.next_period(0.5, 40, 0.5, 0.01, 0.1) == 0.5  # never below the floor


def test_a_window_rate_brackets_reports_instead_of_cutting_steps():
    """A counter stepping 10 every 0.5 s (20/s): a 0.4 s window reads a step or none when
    interpolated; between reports the rate is right, and a window with one report has none."""
    reports = cad.reports_of(steps(0.5, 10.0))
    rate, n = cad.window_rate(reports, 1.1, 4.2)
    assert n == 6 and rate == pytest.approx(20.0)
    assert cad.window_rate(reports, 1.1, 1.5) == (None, 1)


def test_the_lower_bound_on_a_cadence_counts_the_open_gap():
    reports = cad.reports_of(steps(4.0, 9.0))
    assert cad.cadence_at_least(reports, 15.0) == pytest.approx(7.0, abs=0.06)


# ------------------------------------------------------------------ the plan and the refusal
def test_a_budget_that_cannot_hold_the_rounds_names_the_one_that_would():
    """The issue's Ray trainer reported a move every 9-18 s: 60+ s periods, no round fits."""
    plan = Plan(period_s=cad.period_for(12.0, 0.1, 0.5), groups=2, elapsed_s=40.0, budget_s=180.0)
    assert not plan.enough and plan.rounds_fit == 0
    assert plan.budget_needed_s >= 40 + ROUNDS_PLANNED * 4 * 72
    text = refusal(plan, "moves", 12.0, False, "")
    assert f"--budget {plan.budget_needed_s:.0f}" in text and "--io-counter" in text and "every 12 s" in text
    cadence_half_s = Plan(period_s=cad.period_for(0.5, 0.1, 0.5), groups=2, elapsed_s=6.0, budget_s=180.0)
    assert cadence_half_s.enough and cadence_half_s.rounds_fit == 13  # the pipeline fits at default


# ------------------------------------------------------------------ the proxy
def test_a_group_whose_calls_track_the_counter_is_chosen_and_one_that_does_not_is_not():
    marks = [Mark(100.0 * k, {1: 210 * k + 30 * (k % 2), 2: 5 * k * k + 30 * k, 3: k}) for k in range(5)]
    found = {t.group: t for t in tracking(marks, {"envs": [1], "noisy": [2], "quiet": [3]})}
    # a burst read late moves calls between intervals (2.4, 1.8, ...): the halves agree
    assert found["envs"].tracks and found["envs"].halves == pytest.approx((2.1, 2.1))
    assert not found["noisy"].tracks  # 0.4 then 0.6 calls per unit: not the work
    assert "quiet" not in found  # 2 calls in each half say nothing
    assert choose(list(found.values())).group == "envs"
    assert tracking(marks[:1], {"envs": [1]}) == []


def test_the_proxy_drifted_when_its_halves_disagree():
    io = [(float(t), 3.0 * t) for t in range(21)]
    steady = [(float(t), 1.0 * t) for t in range(0, 21, 2)]
    assert halves(io, steady) == pytest.approx([3.0, 3.0]) and not drifted(halves(io, steady))
    slower = [(float(t), t if t <= 10 else 10 + 2.0 * (t - 10)) for t in range(0, 21, 2)]
    assert drifted(halves(io, slower))


# ------------------------------------------------------------------ rounds and verdicts
def period(round_: int, group: str, rate: float | None, reports: int = 6, fraction: float | None = 0.5) -> Period:
    return Period(round_, group, 1, 0.0, ended=1.0, rate=rate, reports=reports,
                  fraction=None if group == FREE else fraction)  # fmt: skip


def test_a_round_with_a_period_of_too_few_reports_gives_no_observation_and_is_counted_lost():
    periods = [period(0, FREE, 100.0), period(0, "a", 50.0), period(0, FREE, 100.0), period(1, "a", 60.0, reports=3),
               period(1, FREE, 100.0)]  # fmt: skip
    values, lost = observations(periods, 0.5)
    assert values == {"a": [pytest.approx(1.0)]} and lost == {"a": (1, 2)}
    assert fewest_reports(periods, 1) == 3


def evidence(**kw) -> Evidence:
    base = {"fraction": 0.5, "width": 0.15, "free_without_progress": (0, 40), "utilisation": {"a": 0.8, "b": 0.3},
            "held": {"a": 0.5, "b": 0.5}, "kept": {"a": 0.5, "b": 0.95}, "waiting": {"b": 0.6}}  # fmt: skip
    return Evidence(**{**base, **kw})


CRITICAL = estimate("a", [0.95, 1.0, 0.97, 1.02, 0.99, 0.98, 1.01, 0.96, 1.0, 0.99, 0.98, 1.0, 0.97, 1.01, 0.99, 1.0])
SLACK = estimate("b", [0.0, 0.02, -0.01, 0.03, 0.01, 0.0, -0.02, 0.01, 0.02, 0.0, 0.01, -0.01, 0.0, 0.02, 0.01, 0.0])


def verdicts(found, **kw) -> dict[str, tuple[str, str]]:
    return {j.group: (j.verdict, j.reason) for j in judge(found, kw.pop("idle", []), evidence(**kw))}


def test_narrow_intervals_with_clean_data_keep_their_reading():
    assert verdicts([CRITICAL, SLACK]) == {
        "a": ("critical", pytest.approx("on the critical path: the program goes as fast as it does")),
        "b": ("slack", "has slack: speeding it up buys nothing"),
    }


@pytest.mark.parametrize(
    ("change", "group", "says"),
    [
        ({"free_without_progress": (5, 40)}, "a", "5 of 40 periods with nothing slowed saw no report"),
        ({"proxy_drifted": True}, "b", "differ between the halves"),
        ({"utilisation": {"a": 0.004, "b": 0.3}}, "a", "under 1% of a core"),
        ({"held": {"a": 0.1, "b": 0.5}}, "a", "its stops took 0.10 of its CPU"),
        ({"dose": {"a": 0.9, "b": 0.5}}, "a", "its stops took 0.90 of its CPU, far from the 0.5 asked"),
        ({"lost": {"b": (5, 16)}}, "b", "5 of its 16 rounds had a period with fewer than 5 reports"),
        ({"lost": {"a": (5, 16)}}, "a", "on the critical path"),  # a critical reading without them understates
    ],
)  # fmt: skip
def test_a_caveat_turns_a_verdict_to_unknown_with_its_reason(change, group, says):
    found = verdicts([CRITICAL, SLACK], **change)
    assert found[group][0] == ("critical" if says == "on the critical path" else "unknown") and says in found[group][1]


def test_a_wide_or_short_or_between_interval_is_unknown_and_says_which():
    wide = estimate("a", [0.2, 1.4, 0.9, 0.1, 1.2, 0.5, 1.3, 0.4, 0.8, 1.1, 0.3, 0.7, 1.0, 0.6, 0.95, 0.85])
    short = estimate("a", [1.0, 1.0, 1.0])
    between = estimate("a", [0.45 + 0.01 * (k % 5) for k in range(20)])
    assert "wider than +-0.15" in verdicts([wide])["a"][1]
    need = medians_to_decide(0.05)  # the median's sign test: 7 rounds at 95 %
    assert verdicts([short])["a"] == ("unknown", f"3 round(s) measured; an interval needs {need}")
    assert "lies in no verdict's range" in verdicts([between])["a"][1]
    assert verdicts([], idle=["daemon"], utilisation={"daemon": 0.002})["daemon"][0] == "unknown"


def test_a_group_that_kept_its_cpu_waiting_on_nothing_is_unknown_unless_it_reads_critical():
    """Its slowdown did not happen: slack cannot be told; a critical reading stands."""
    assert verdicts([SLACK], kept={"b": 0.95}, waiting={})["b"][0] == "unknown"
    assert verdicts([SLACK], kept={"b": 0.95}, waiting={"b": 0.8})["b"][0] == "slack"  # it waits: it has slack
    assert verdicts([CRITICAL], kept={"a": 0.95}, waiting={})["a"][0] == "critical"


def test_the_conclusion_names_no_bottleneck_while_a_caveat_stands():
    from harness.report.causal import conclusion

    s = {"group": "a", "estimate": 1.0, "low": 0.9, "high": 1.1, "verdict": "critical", "n": 16}
    assert conclusion({"sensitivity": [s], "caveats": ["34 of 173 periods with nothing slowed saw no report"]}) == [
        "no bottleneck named: 34 of 173 periods with nothing slowed saw no report"
    ]
    unknown = {**s, "verdict": "unknown"}
    assert conclusion({"sensitivity": [unknown], "caveats": []}) == []


# ------------------------------------------------------------------ Ray
RAY_TREE = {
    1: ["python", "train.py"],
    2: ["/site-packages/ray/core/src/ray/gcs/gcs_server", "--log_dir=/tmp/ray"],
    3: ["/site-packages/ray/core/src/ray/raylet/raylet", "--raylet_socket_name=/tmp/ray/s"],
    4: ["python", "-u", "/site-packages/ray/autoscaler/_private/monitor.py", "--logs-dir=/tmp"],
    5: ["python", "/site-packages/ray/dashboard/dashboard.py", "--host=127.0.0.1"],
    6: ["python", "-u", "/site-packages/ray/_private/log_monitor.py", "--session-dir=/tmp"],
    7: ["ray::DashboardAgent", "", ""],
    8: ["ray::RuntimeEnvAgent", ""],
    9: ["ray::IDLE", ""],
    10: ["python", "/site-packages/ray/_private/workers/default_worker.py", "--node-ip-address=1"],
    11: ["ray::Player.play", "", ""],
    12: ["ray::Player", ""],
    13: ["ray::Learner.train", ""],
}


def test_rays_runtime_is_a_helper_and_its_actors_are_grouped_by_class():
    """The issue's self-play trainer: its 'server' was Ray's daemons (0.02 cores), called critical."""
    parents = {1: 0, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1}
    procs = {pid: roles.Proc(pid, parents.get(pid, 3), cmd, float(pid)) for pid, cmd in RAY_TREE.items()}
    assigned = roles.assign(procs, {})
    assert assigned[1] == roles.MAIN
    assert all(assigned[pid] == roles.HELPER for pid in range(2, 11))
    assert assigned[11] == assigned[12] == roles.WORKERS and assigned[13] == roles.SERVER
    assert roles.ray_title(["ray::Learner.train", ""]) == "Learner" and roles.ray_title(["python"]) is None


def crowded(round_: int, group: str, rate: float, share: float, dose: float | None = None) -> Period:
    """A period whose program ran `share` of its runnable time (one core wanted)."""
    return Period(round_, group, 1, 0.0, ended=1.0, rate=rate, reports=6, fraction=None if group == FREE else 0.5,
                  dose=dose, cpu_cores={"a": share}, queued_cores={"a": 1 - share})  # fmt: skip


def test_rates_are_compared_at_equal_crowding_and_divided_by_the_dose_the_stops_gave():
    """A neighbour's burst halves the CPU the program gets in a slowed period: its rate halves
    with it, which is the machine, not the group (read 0 where the raw rates read 1); a
    critical group at availability 0.5, stopped as long as it ran, lost a third of its CPU
    (its dose), not half, and its rate fell by a third: sensitivity 1."""
    burst = [crowded(0, FREE, 100.0, 0.8), crowded(0, "b", 50.0, 0.4, dose=0.5), crowded(0, FREE, 100.0, 0.8)]
    values, _ = observations(burst, 0.5)
    assert values["b"] == [pytest.approx(0.0)]
    critical = [crowded(0, FREE, 60.0, 0.5), crowded(0, "a", 40.0, 0.5, dose=1 / 3), crowded(0, FREE, 60.0, 0.5)]
    values, _ = observations(critical, 0.5)
    assert values["a"] == [pytest.approx(1.0)]


def test_a_group_whose_stops_change_the_crowding_is_unknown():
    """A poller stopped frees a core: the workers run more of their runnable time, which the
    rates read at equal crowding hide; the verdict says so instead of 'slack'."""
    periods = [crowded(k, g, 100.0, share) for k in range(8) for g, share in ((FREE, 0.5), ("b", 0.9))]
    periods.append(crowded(8, FREE, 100.0, 0.5))
    assert crowding(periods)["b"] == pytest.approx(1.8)
    assert "changed how much CPU the program got" in verdicts([SLACK], crowding={"b": 1.8})["b"][1]
    assert verdicts([SLACK], crowding={"b": 1.1})["b"][0] == "slack"


def test_with_several_proxies_a_slowed_group_is_measured_through_another_groups_calls():
    """A slack producer's own writes pause with its stops and refill its queue after: through
    them it read +0.34; through the consumer's reads it reads what the program did."""

    def p(group: str, own: float, other: float) -> Period:
        return Period(0, group, 1, 0.0, ended=1.0, rate=own, reports=6, fraction=None if group == FREE else 0.5,
                      rates={"main": own, "consume": other}, counts={"main": 6, "consume": 6})  # fmt: skip

    periods = [p(FREE, 100.0, 100.0), p("main", 70.0, 100.0), p(FREE, 100.0, 100.0), p("consume", 50.0, 50.0),
               p(FREE, 100.0, 100.0)]  # fmt: skip
    values, _ = observations(periods, 0.5)
    assert values == {"main": [pytest.approx(0.0)], "consume": [pytest.approx(1.0)]}


def test_calls_at_each_report_are_read_at_its_time_from_the_readings_that_saw_every_stage():
    """The first reading came before the consumer was started: it must not drop the consumer."""
    series = [(0.0, {1: 0}), *((float(t), {1: 10 * t, 2: 20 * t}) for t in range(1, 8))]
    marks = marks_at([(1.5, 15.0), (3.5, 35.0), (5.5, 55.0), (7.5, 75.0)], series)
    assert [m.calls for m in marks] == [{1: 15, 2: 30}, {1: 35, 2: 70}, {1: 55, 2: 110}]


def test_a_group_read_through_its_own_calls_is_unknown_unless_critical():
    assert "through its own read/write calls" in verdicts([SLACK], through_itself=frozenset({"b"}))["b"][1]
    assert verdicts([CRITICAL], through_itself=frozenset({"a"}))["a"][0] == "critical"


def test_a_narrow_interval_that_straddles_a_bound_is_measured_on_and_one_between_them_leaves():
    """Anytime-valid: an interval wholly between slack's and critical's ranges cannot honestly
    reach either, so its rounds go to the others; one across critical's bound might."""
    from harness.causal.sensitivity import beyond_every_verdict, settled

    assert settled(CRITICAL, 0.15) and settled(SLACK, 0.15)
    across = estimate("a", [0.62 + 0.02 * (k % 9) for k in range(30)])  # 0.62 .. 0.78
    assert across.halfwidth <= 0.15 and across.median.low < 0.7 < across.median.high
    assert not settled(across, 0.15) and not beyond_every_verdict(across)
    hair_below = estimate("a", [0.69 + 0.001 * (k % 7) for k in range(30)])
    assert beyond_every_verdict(hair_below) and settled(hair_below, 0.15)
    assert hair_below.reading == "between"


TUNE_READS = ("critical", "slack", "competes")
ACROSS = [0.60 + 0.02 * (k % 9) for k in range(14)]  # 0.60 .. 0.76, median 0.66: narrow, across critical's 0.7


def test_a_narrow_interval_across_a_bound_is_futile_when_the_rounds_left_cannot_settle_it():
    """MCCFR's workers in a tune's experiment read +0.62 [+0.53, +0.73] after 14 rounds:
    projected over the rounds the budget held, still across critical's bound, or between:
    nothing a tune acts on; many more rounds of a group centred above the bound settle it."""
    from harness.causal.sensitivity import could_settle

    across = estimate("w", ACROSS)
    assert across.halfwidth <= 0.15 and across.median.low < 0.7 < across.median.high
    assert not could_settle(ACROSS, 10, 0.15, TUNE_READS)
    assert could_settle(ACROSS, 40, 0.15, (*TUNE_READS, "between"))  # harness causal reads between too
    assert not could_settle(ACROSS, 200, 0.15, TUNE_READS)  # centred below the bound: never critical
    above = [0.64 + 0.03 * (k % 9) for k in range(14)]  # 0.64 .. 0.88, median 0.73
    assert not could_settle(above, 2, 0.15, TUNE_READS)
    assert could_settle(above, 200, 0.15, TUNE_READS)


def test_a_wide_interval_is_not_projected():
    """A pipeline's main stage, critical by construction, read [-0.31, +1.18] after 16 rounds
    and [+0.84, +1.09] after 37: a wide interval's early tails say little of its rounds to come."""
    from harness.causal.sensitivity import could_settle

    wide = [1.0, 1.05, -0.3, 0.98, 1.1, -0.2, 1.02, 0.4, 1.0, 1.08, 0.97, -0.25, 1.01, 0.2, 1.04, 0.99]
    assert estimate("m", wide).halfwidth > 0.15
    assert could_settle(wide, 0, 0.15, TUNE_READS)
    assert could_settle([0.9, 1.0], 0, 0.15, TUNE_READS)  # fewer rounds than an interval needs: no interval


def test_only_a_caller_that_names_what_it_acts_on_stops_a_futile_experiment():
    """harness causal spends the budget it was given; harness tune's experiment (futile_for)
    stops once no group could settle into a reading the tune uses."""
    from harness.causal.experiment import Experiment
    from harness.causal.result import CausalOptions
    from harness.tune.bottleneck import ACTED_ON

    open_group = [estimate("w", ACROSS)]

    def experiment(opts: CausalOptions) -> Experiment:
        e = Experiment.__new__(Experiment)
        e.opts, e.period_s, e._values = opts, 0.5, {"w": ACROSS}
        return e

    assert not experiment(CausalOptions())._futile(open_group, 20.0)
    assert experiment(CausalOptions(futile_for=ACTED_ON))._futile(open_group, 20.0)
    assert not experiment(CausalOptions(futile_for=ACTED_ON))._futile([CRITICAL], 20.0)  # settled: nothing open
