"""Causal verdicts replayed on recorded experiments (the calibration corpus's fast tier).

Each fixture in data/causal/ is a real `harness causal` run on a program of
tests/programs/causal/ (or the issue's pipeline), cut by `benchmarks/causal_campaign.py
fixture` to its periods: what was slowed, each period's rate and reports, the share held,
the dose, each group's CPU and run-queue time. The fixture keeps the verdicts the live run
printed and the truth the program was built with. Replayed here:

- the verdicts follow from the periods alone (the live computation is the one tested);
- none contradicts the truth (`unknown` never does);
- the same data degraded the ways issue 43 met them (free periods that saw no report, a
  group that barely runs, rounds whose periods held too few reports) turn the verdicts to
  `unknown`, and the conclusion names no bottleneck.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest

from harness.causal.periods import FREE
from harness.causal.result import CausalResult
from harness.causal.rounds import observations
from harness.causal.sensitivity import estimate
from harness.report.causal import conclusion

DATA = Path(__file__).parent / "data" / "causal"
FIXTURES = sorted(DATA.glob("*.json.gz"))


def replay(data: dict) -> dict[str, str]:
    """The verdicts recomputed from the recorded periods: group -> verdict."""
    result = CausalResult.from_json(data)
    values, result.lost = observations(result.periods, result.options.fraction)
    idle = set(result.idle)
    result.sensitivities = [
        estimate(name, values.get(name, [])) for name in dict.fromkeys([*values, *result.lost]) if name not in idle
    ]
    return {j.group: j.verdict for j in result.judgements()}, result


def recorded(data: dict) -> dict[str, str]:
    return {s["group"]: s["verdict"] for s in [*data["sensitivity"], *(data.get("unmeasured") or [])]}


@pytest.fixture(params=FIXTURES, ids=[p.name.removesuffix(".json.gz") for p in FIXTURES])
def data(request) -> dict:
    return json.loads(gzip.decompress(request.param.read_bytes()))


def test_there_are_recorded_experiments_of_several_kinds():
    assert len(FIXTURES) >= 4


def test_the_verdicts_follow_from_the_recorded_periods(data):
    verdicts, _ = replay(data)
    assert verdicts == recorded(data)


def test_no_recorded_verdict_contradicts_the_programs_truth(data):
    verdicts, _ = replay(data)
    for group, truth in data["truth"]["groups"].items():
        assert verdicts.get(group, "unknown") in (truth, "unknown"), (group, verdicts)


def test_free_periods_that_saw_no_report_leave_every_verdict_unknown(data):
    """The issue's pipeline at 0.5 s periods: 34 of 173 free periods counted nothing, and the
    verdicts were printed beneath that line all the same."""
    degraded = copy.deepcopy(data)
    free = [p for p in degraded["periods"] if p["group"] == FREE]
    for p in free[:: max(1, len(free) // (len(free) // 5 + 1))]:
        p["reports"], p["rate"] = 0, None
        p["counts"], p["rates"] = dict.fromkeys(p.get("counts") or {}, 0), dict.fromkeys(p.get("rates") or {})
    verdicts, result = replay(degraded)
    assert set(verdicts.values()) == {"unknown"}, verdicts
    as_json = result.to_json()
    assert conclusion(as_json)[0].startswith("no bottleneck named:")


def test_a_group_that_barely_runs_is_unknown_whatever_its_interval(data):
    """The issue's Ray 'server' group (its runtime's daemons, 0.02 cores) was called critical."""
    degraded = copy.deepcopy(data)
    group = next(iter(data["truth"]["groups"]))
    for p in degraded["periods"]:
        if group in p["cpu_cores"]:
            p["cpu_cores"][group] = 0.002
    verdicts, _ = replay(degraded)
    assert verdicts[group] == "unknown"


def test_rounds_whose_periods_held_too_few_reports_are_lost_and_say_so(data):
    degraded = copy.deepcopy(data)
    group = next(iter(data["truth"]["groups"]))
    slowed = [p for p in degraded["periods"] if p["group"] == group]
    for p in slowed[::2]:
        p["reports"] = 3
        p["counts"] = dict.fromkeys(p.get("counts") or {}, 3)  # through every proxy too
    verdicts, result = replay(degraded)
    assert verdicts[group] in ("unknown", "critical")  # a critical reading without those rounds understates
    assert result.lost[group][0] >= len(slowed) // 2
    reason = next(j.reason for j in result.judgements() if j.group == group)
    if verdicts[group] == "unknown":  # the rounds lost, or an interval the fewer rounds left wide
        assert "fewer than 5 reports" in reason or "wider than" in reason, reason


def _replayer():
    """benchmarks/causal_replay.py, loaded by path (benchmarks/ is no package); registered
    before it runs, as its dataclass needs its module."""
    import importlib.util
    import sys

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "causal_replay.py"
    spec = importlib.util.spec_from_file_location("causal_replay", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("causal_replay", module)
    spec.loader.exec_module(module)
    return sys.modules["causal_replay"]


def test_a_tunes_futile_stop_keeps_the_bottleneck_and_settles_nothing_new(data):
    """Replayed with harness tune's stopping (futile_for), an experiment that settled its
    built-in bottleneck as critical still has by the time it stops; what it has settled then
    is what the whole run settled for those groups (a settled group leaves the rounds: a
    futile stop only ends the open ones sooner), in no more rounds.
    benchmarks/causal_replay.py prints the same."""
    from harness.tune.bottleneck import ACTED_ON

    replayer = _replayer()
    tune, spent = replayer.replay(data, ACTED_ON), replayer.replay(data, ())
    for group, reading in tune.readings.items():
        assert spent.readings.get(group) == reading, (group, tune.describe(), spent.describe())
    truth = data["truth"]["groups"]
    for group in (g for g, v in truth.items() if v == "critical" and spent.readings.get(g) == "critical"):
        assert tune.readings.get(group) == "critical", tune.describe()
    assert tune.rounds <= spent.rounds
