"""Every rule walked over two more ways a cell can fail to measure the program, the gate
(harness.diagnosis.needs) holding each: a cell that had no measured window (the run ended
during warm-up) feeds no rule that reads its window, and a comparison across worker counts
on a machine whose other users took half its cores or more is marked doubted, with the
numbers. The sink is test_rule_evidence's run, on which every rule fires.
"""

from __future__ import annotations

import pytest

from harness.diagnosis import diagnose
from harness.diagnosis.needs import DOUBTED, needs_of
from harness.diagnosis.rules import RULES
from harness.runs import crowding
from harness.runs.view import build_view
from tests.harness.test_rule_evidence import META, degraded, kept, marked, raw, setting, sink
from tests.records import make_record

NO_WINDOW = setting(measure_s=0.0, warmup_reason="the run ended during warm-up")
CROWDED = setting(cpu_others_mean=160.0, cpu_util_mean=37.0)  # gensim's cells: 154-156 % of 200 taken
QUIET = setting(cpu_others_mean=40.0, cpu_util_mean=180.0)


def name_of(rule) -> str:
    return rule.__module__.rsplit(".", 1)[1]


@pytest.mark.parametrize("rule", RULES, ids=name_of)
def test_a_cell_with_no_measured_window_feeds_no_rule_that_reads_the_window(rule):
    healthy = raw(rule, sink())
    assert healthy, f"{name_of(rule)} does not fire on the sink"
    found = kept(rule, degraded(NO_WINDOW))  # every program cell all warm-up (the GPU cell keeps its window)
    program = {"w1", "w2", "w4"}
    if needs_of(rule).window:
        assert not [f.hint for f in found if set(f.cells) & program]
    else:  # counts of the whole run, the cells' asks, the devices: the same findings
        assert found == raw(rule, degraded(NO_WINDOW)) == healthy


def test_deaps_cell_that_ended_in_warm_up_says_why_pipeline_bound_was_not_judged():
    """DEAP's onemax_mp.py ends in 2.7 s: its sweep cell (measure_s 0) fed PIPELINE_BOUND
    'server-bound: the server idles 0 %, clients wait 50 %' from its start-up."""
    metrics = {
        "measure_s": 0.0, "warmup_s": 3.07, "warmup_reason": "the run ended during warm-up", "wall_s": 3.07,
        "server_idle_share": 0.0, "client_wait_share": 0.5, "waits_passes": 16, "waits_asleep": 40,
        "waits_unreadable": 0, "stacks_samples": 390, "stacks_threads": 9,
    }  # fmt: skip
    view = build_view(
        [make_record("bc40a3434e", metrics, {"argv": "python onemax_mp.py", "workers": 1}, suite="command")], META
    )
    assert diagnose(view) == []
    (line,) = view.refused_lines()
    assert line.startswith(
        "not judged: PIPELINE_BOUND [bc40a3434e]: it reads the measured window, and cell bc40a3434e had none"
    )
    with_window = build_view([make_record("c", {**metrics, "measure_s": 20.0}, {"workers": 1}, suite="command")], META)
    assert [f.rule for f in diagnose(with_window)] == ["PIPELINE_BOUND"]


def spans_worker_counts(finding) -> bool:
    return len({c for c in finding.cells if c.startswith("w")}) > 1


@pytest.mark.parametrize("rule", RULES, ids=name_of)
def test_a_comparison_across_worker_counts_on_a_crowded_machine_is_marked(rule):
    comparing = [f for f in raw(rule, sink()) if spans_worker_counts(f)]
    assert not comparing or needs_of(rule).free_cores, (
        f"{name_of(rule)} compares worker counts: declare free_cores=True"
    )
    crowded = [f for f in kept(rule, degraded(CROWDED)) if spans_worker_counts(f)]
    assert all(marked(f) for f in crowded), [f.hint for f in crowded if not marked(f)]
    assert kept(rule, degraded(QUIET)) == raw(rule, degraded(QUIET))  # cores left for the program: untouched


def test_gensims_scaling_drop_on_a_full_machine_says_the_numbers():
    """word2vec, 1 and 2 threads: 9.29 -> 7.68 epochs/s (0.83x), one repeat each, while the
    rest of the 2-core machine used 154 % and 156 %: drawn as contention with no doubt."""
    cells = [
        make_record(f"g{n}", {"epochs_per_s": rate, "cpu_others_mean": others, "cpu_util_mean": own, "measure_s": 30.0},
                    {"argv": "python -m gensim.scripts.word2vec_standalone -threads {workers}", "workers": n},
                    suite="command")
        for n, rate, others, own in ((1, 9.292, 154.0, 38.0), (2, 7.677, 156.0, 36.0))
    ]  # fmt: skip
    (finding,) = [f for f in diagnose(cells, META) if f.rule == "NEGATIVE_SCALING"]
    assert finding.hint.startswith(
        f"{DOUBTED} (the rest of the machine used 154 %, 156 % of its 200 % during cells g1, g2; the program used "
        "38 %, 36 %: more workers had no free core to run on"
    )
    assert "epochs_per_s falls from 9.29 at 1 workers to 7.68 at 2" in finding.hint
    for cell in cells:
        cell.metrics["cpu_others_mean"] = 30.0
    (quiet,) = [f for f in diagnose(cells, META) if f.rule == "NEGATIVE_SCALING"]
    assert not quiet.hint.startswith(DOUBTED)


def test_crowding_reads_the_share_of_the_machines_cores():
    view = build_view(
        [make_record("a", {"cpu_others_mean": 3100.0}), make_record("b", {"cpu_others_mean": 100.0})], META
    )
    cells = view.cells
    assert crowding.crowding(cells, 64) is None  # 31 of 64 cores: the program had 33
    assert crowding.crowding(cells, 2).startswith("the rest of the machine used 3100 %, 100 % of its 200 %")
    assert crowding.crowding(build_view([make_record("c", {})], META).cells, 2) is None  # not recorded: no word
    assert crowding.unmeasured(build_view([make_record("d", {"measure_s": 12.0})], META).cells) == []
    old = make_record("e", {"warmup_reason": "the run ended during warm-up"})  # a record without measure_s
    assert crowding.unmeasured(build_view([old], META).cells) == ["e"]


# ------------------------------------------------------------------ SERIALIZATION's floor
NEAT = {"ipc_share": 0.4947, "ipc_share_growth": 1.79, "write_size_growth": 124.0, "ipc_role": "server",
        "stacks_samples": 4000, "stacks_threads": 9}  # fmt: skip


def serialization(metrics: dict) -> list:
    record = make_record("5db8acbd56", {"measure_s": 30.0, **metrics}, {"workers": 2}, suite="command")
    return [f for f in diagnose([record], META) if f.rule == "SERIALIZATION"]


def roles_using(**cores: float) -> dict:
    return {"watch_roles": {role: {"processes": 1, "cpu_cores": c} for role, c in cores.items()}}


def test_serialization_blames_no_process_the_program_hardly_spends_time_in():
    """neat-python's driver at 2 workers: 49 % of its busy time pickling, while it used 0.037
    of a core (15 % of the program's), 80 % blocked on the pool whose workers computed 78-81 %
    of theirs (the recorded roles: the capture wrapper was `main`, the driver `server`)."""
    neat = roles_using(main=0.009, server=0.037, workers=0.2, harness=0.012)
    assert serialization({**NEAT, **neat}) == []
    live = roles_using(main=0.03, workers=0.187, helper=0.013, harness=0.018)  # roles fixed, at load 20
    assert serialization({**NEAT, "ipc_role": "main", **live}) == []
    # tests/programs/full_state.py's main at load 7: 0.197 cores got, 72 % of the program's
    (full,) = serialization({**NEAT, "ipc_role": "main", **roles_using(main=0.197, workers=0.077)})
    assert "49 % of the busy time (0.197 cores, 72 % of the program's CPU)" in full.hint
    (alone,) = serialization({**NEAT, **roles_using(server=0.9, workers=4.0)})  # a core's worth, beside 4 busy
    assert alone.evidence["role_cores"] == 0.9
    assert serialization(NEAT)  # a suite's own signals, no roles to go by: as before
