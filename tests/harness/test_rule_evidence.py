"""Every rule of RULES walked over degraded evidence: a finding that rests on a rate whose check
failed, that rested on few reports, on an unchecked guess, on too few units, on no rate at all,
or on an instrument that saw nothing, is refused or marked doubted in its first line.

One run (SINK) makes every rule fire; a rule added later that does not fire on it fails here
until the sink holds its symptom. What a rule rests on is found by taking the evidence away
(the rate, the stack signals, the wait signals) and seeing whether its findings change, not
from what the rule declares: a rule that reads a rate and declares nothing fails the walk
(test_a_rule_that_ignores_a_doubted_rate_fails_the_walk).
"""

from __future__ import annotations

import copy
import sys
import types

import pytest

from harness.diagnosis import diagnose
from harness.diagnosis.findings import Finding
from harness.diagnosis.needs import DOUBTED, Needs, judged
from harness.diagnosis.rules import RULES
from harness.runs.view import build_view
from harness.watch.signals import FROM_STACKS
from harness.watch.waits import FROM_WAITS
from tests.records import make_record

META = {"cpu_cores": 2}
RATE = "episodes_per_s"
PROVENANCE = (
    "episodes_per_s 100/s from `episode` (sentences), a level, 40 sightings; checks: printed episodes_per_s "
    "101/s: 0.99x, agrees"
)
WATCHED = {
    "stacks_samples": 5000,
    "stacks_threads": 12,
    "waits_passes": 300,
    "waits_asleep": 900,
    "waits_unreadable": 0,
}
# one cell's worth of every symptom the per-cell rules read
SYMPTOMS = {
    "work_requested": 100, "work_done": 50,  # LOST_WORK
    "batch_mean": 3.0, "batch_limit": 256,  # SMALL_BATCHES
    "sleep_share": 0.5, "wakeups_hz": 500.0,  # BUSY_WAIT (a sleep-poll loop, from stacks)
    "gil_wait_share": 0.6, "gil_threads": 3.0, "gil_cpu_cores": 1.0,  # GIL_BOUND
    "ipc_share": 0.3, "ipc_share_growth": 1.5, "write_size_growth": 3.0,  # SERIALIZATION
    "worker_cpu_pct": {"11": 1.0, "12": 2.0}, "worker_wait_pct": {"11": 99.0, "12": 98.0},  # IDLE_WORKERS
    "main_cpu_pct": 10.0,  # ... whose progress then rests on the rate alone
    "worker_devices": {"11": "cpu", "12": "cpu"}, "gpu_asked": 1.0,  # NET_OFF_DEVICE
    "server_idle_share": 0.6, "client_wait_share": 0.7,  # PIPELINE_BOUND (from the wait reader)
}  # fmt: skip


def program_cell(workers: int, rate: float, gpu: float, extra: dict | None = None):
    """A cell of a user's program whose headline the readers found and checked."""
    metrics = {
        RATE: rate, "headline_rate": RATE, "headline_provenance": PROVENANCE, "headline_check": "passed",
        f"{RATE}_drift_pct_per_min": -12.0, f"{RATE}_drift_se": 1.5, "measure_s": 60.0,  # DRIFT
        "gpu_util_mean": gpu, **WATCHED, **(extra or {}),
    }  # fmt: skip
    params = {"argv": "python train.py --workers {workers}", "workers": workers}
    return make_record(f"w{workers}", metrics, params, suite="command")


def sink():
    """A run on which every rule fires: a program swept over 1, 2 and 4 workers on 2 cores
    (NEGATIVE_SCALING, GPU_THRASH at a busy GPU, OVERSUBSCRIBED), every per-cell symptom in
    its first cell, and a cell that asked for cuda and left the GPU idle (GPU_IDLE)."""
    return [
        program_cell(1, 100.0, 50.0, SYMPTOMS),
        program_cell(2, 60.0, 95.0),
        program_cell(4, 30.0, 97.0),
        make_record("gpu", {"gpu_util_mean": 1.0, "gpu_pids": [10]}, {"device": "cuda", "workers": 1}),
    ]


def program_records(records):
    return [r for r in records if r.suite == "command"]


def degraded(change):
    """The sink with `change(metrics)` applied to every program cell."""
    records = copy.deepcopy(sink())
    for rec in program_records(records):
        change(rec.metrics)
    return records


def setting(**values):
    return lambda m: m.update(values)


def no_rate(m):
    for name in [n for n in m if n.startswith(RATE) or n.startswith("headline_")]:
        del m[name]


def dropping(names):
    def drop(m):
        for name in names:
            m.pop(name, None)

    return drop


# what the harness can be left with, each of which a finding resting on it must not hide
RATE_DOUBTS = {
    "check failed": setting(headline_check="failed"),
    "few reports": setting(headline_check="few reports"),
    "unchecked guess": setting(
        headline_check="unchecked", headline_provenance=PROVENANCE.replace("a level", "increments per report")
    ),
    "too few units": setting(**{f"{RATE}_valid": 0}),
    "no rate": no_rate,
}
BLIND = {
    "no stack samples": (setting(stacks_samples=0, stacks_threads=0), FROM_STACKS),
    "no wait read": (setting(waits_asleep=900, waits_unreadable=900), FROM_WAITS),
}


def raw(rule, records) -> list[Finding]:
    return rule(build_view(records, META))


def kept(rule, records) -> list[Finding]:
    return judged(rule, build_view(records, META))


def marked(finding: Finding) -> bool:
    return finding.hint.startswith(f"{DOUBTED} (") and bool(finding.evidence.get(DOUBTED))


def violations(rule) -> list[str]:
    """What the rule gets wrong over the degraded runs (empty: nothing)."""
    name = rule.__module__.rsplit(".", 1)[1]
    healthy = raw(rule, sink())
    if not healthy:
        return [f"{name} does not fire on the sink: give the sink its symptom"]
    out = []
    if kept(rule, sink()) != healthy:
        out.append(f"{name}: a healthy finding was refused or marked")
    if raw(rule, degraded(no_rate)) != healthy:  # it rests on the rate
        for doubt, change in RATE_DOUBTS.items():
            loud = [f.hint for f in kept(rule, degraded(change)) if not marked(f)]
            if loud:
                out.append(f"{name}, {doubt}: not refused nor marked: {loud[0]}")
    for doubt, (change, signals) in BLIND.items():
        without = raw(rule, degraded(dropping(signals)))
        if without != healthy:  # it rests on that instrument
            # honest: refused or marked, or what it finds without the instrument (other evidence, said so)
            loud = [f.hint for f in kept(rule, degraded(change)) if not marked(f) and f not in without]
            if loud:
                out.append(f"{name}, {doubt}: not refused nor marked: {loud[0]}")
    return out


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.__module__.rsplit(".", 1)[1])
def test_every_rule_refuses_or_marks_what_rests_on_doubted_evidence(rule):
    assert violations(rule) == []


def test_a_rule_that_ignores_a_doubted_rate_fails_the_walk():
    """A rule planted with no declared needs that compares the headline across cells."""
    module = types.ModuleType("tests.harness.planted_rule")
    module.NEEDS = Needs()

    def check(view):
        cells = view.cells
        rate = view.rate(cells)
        values = [c.median(rate) for c in cells if rate and c.median(rate)]
        if len(values) > 1 and values[-1] < values[0]:
            return [Finding("PLANTED", "warning", [c.id for c in cells], f"{rate} falls", {"rate": rate})]
        return []

    check.__module__ = module.__name__
    module.check = check
    sys.modules[module.__name__] = module
    try:
        found = violations(check)
        assert any("check failed: not refused nor marked" in v for v in found), found
        module.NEEDS = Needs(rate="compared")  # declared: the gate holds it
        assert violations(check) == []
    finally:
        del sys.modules[module.__name__]


def test_a_scaling_drop_from_a_failed_check_is_refused_and_from_few_reports_marked():
    """The issue's trainer: at 2 workers the step counter's check failed (0.39x) and
    NEGATIVE_SCALING was still drawn from it."""
    view = build_view(degraded(setting(headline_check="failed")), META)
    names = {f.rule for f in diagnose(view)}
    assert not names & {"NEGATIVE_SCALING", "GPU_THRASH", "DRIFT"}
    # refused, not silent: "unknown" is an answer, said beside the findings
    said = view.refused_lines()
    assert any(line.startswith("not judged: NEGATIVE_SCALING [") and "check failed" in line for line in said), said
    few = [f for f in diagnose(degraded(setting(headline_check="few reports")), META) if f.rule == "NEGATIVE_SCALING"]
    (finding,) = few
    assert finding.hint.startswith(f"{DOUBTED} ({RATE}: it rests on few reports in its window (cells w1, w2, w4))")
    assert "falls from 100 at 1 workers" in finding.hint
    idle = [f for f in diagnose(degraded(setting(headline_check="failed")), META) if f.rule == "IDLE_WORKERS"]
    assert idle and idle[0].hint.startswith(f"{DOUBTED} ({RATE}: its check failed")  # progress only: marked


def test_only_the_cells_a_doubt_stands_in_are_doubted():
    records = sink()
    records[2].metrics["headline_check"] = "failed"  # w4 only
    found = diagnose(records, META)
    assert "NEGATIVE_SCALING" not in {f.rule for f in found}  # its drop runs through w4
    drifts = {f.cells[0]: f for f in found if f.rule == "DRIFT"}
    assert set(drifts) == {"w1", "w2"} and not any(f.hint.startswith(DOUBTED) for f in drifts.values())


# ------------------------------------------------------------------ the one judgement of a rate
def headline(check: str, provenance: str = PROVENANCE, **more):
    return make_record("c", {RATE: 10.0, "headline_rate": RATE, "headline_provenance": provenance,
                             "headline_check": check, **more}, suite="command")  # fmt: skip


def test_a_rates_doubt_says_why_and_in_which_cells():
    from harness.runs.provenance import doubt

    assert doubt(RATE, [headline("passed")]) is None
    assert doubt(RATE, [headline("failed")]) == provenance_doubt(True, "its check failed: no counter passed")
    assert doubt(RATE, [headline("few reports")]).refuse is False
    summed = headline("unchecked", PROVENANCE.replace("a level", "increments per report"))
    assert "per-report increments summed" in doubt(RATE, [summed]).why
    restarted = headline("unchecked", PROVENANCE.replace("40 sightings", "40 sightings, 3 restarts"))
    assert "restarted 3x" in doubt(RATE, [restarted]).why  # an evaluation's `episode 0..9`
    assert doubt(RATE, [headline("unchecked")]) is None  # a plain running total, nothing to check it by
    beside = headline("unchecked", printed_it_per_s=3.3)  # `step=N 3.3 it/s`: units the readers did not pair
    assert "printed it_per_s, which nothing paired with it (it reads 3x that)" in doubt(RATE, [beside]).why
    assert doubt("games_per_min", [make_record("c", {"games_per_min": 6.0, "games_per_s_valid": 0})]).refuse
    assert doubt("games_per_s", [make_record("c", {"games_per_s": 6.0})]) is None  # a suite's own count
    aside = headline(
        "passed", progress_set_aside="step: read faster than printed it_per_s: 2.5x; frames: its readings drop"
    )
    assert doubt("step_per_s", [aside]).refuse and doubt("frames_per_s", [aside]).refuse
    assert doubt("epoch_per_s", [aside]) is None
    assert (
        doubt(RATE, [make_record("c", {"headline_check": "failed", "headline_provenance": "x"}, status="error")])
        is None
    )


def provenance_doubt(refuse: bool, why: str):
    from harness.runs.provenance import Doubt

    return Doubt(refuse, f"{RATE}: {why} (cell c)")


def test_the_table_marks_an_unchecked_guess_beside_the_rate():
    from harness.runs.provenance import cell_note

    summed = headline("unchecked", PROVENANCE.replace("a level", "increments per report"))
    assert cell_note([summed]) == "unchecked guess"
    assert cell_note([headline("unchecked")]) is None
