"""The gate: planted slowdowns are caught, identical runs pass, correctness is exact,
bad input exits 2. Runs are constructed with RunStore (no cells run) except one real sweep."""

from __future__ import annotations

import json

import pytest

from harness.analysis.baselines import load as load_baseline
from harness.analysis.baselines import load_run
from harness.analysis.gating import GateOptions, evaluate, is_throughput, parse_tolerance
from harness.errors import UserError
from harness.runs.record import CellGroup
from tests.conftest import run_dirs
from tests.harness.constructed_runs import SPIN, cells, make_run, record


def gate_of(cand, base, **kw):
    return evaluate(load_run(cand), load_baseline(str(base)), GateOptions(**kw))


def verdicts(result, kind="speed"):
    return {c["label"]: c["verdict"] for c in result["checks"] if c["kind"] == kind}


def test_planted_slowdown_is_caught_and_identical_runs_pass(tmp_path):
    base = make_run(tmp_path / "a", cells(), seed=1)
    same = make_run(tmp_path / "b", cells(), seed=2)
    slow = make_run(tmp_path / "c", cells(1.10), seed=3)
    assert gate_of(base, base)["verdict"] == "pass"
    assert gate_of(same, base)["verdict"] == "pass"
    result = gate_of(slow, base)
    assert result["verdict"] == "fail"
    assert verdicts(result)["unit_size=30000"] == "regression"
    assert verdicts(result)["defaults"] == "ok"


def test_normalize_synthetic_cancels_a_slower_machine(tmp_path):
    base = make_run(tmp_path / "a", cells(), seed=1)
    half = make_run(tmp_path / "b", cells(), speed=0.5, seed=2)
    assert gate_of(half, base)["verdict"] == "fail"
    result = gate_of(half, base, normalize="synthetic")
    assert result["verdict"] == "pass"
    checks = {c["label"]: c for c in result["checks"] if c["kind"] == "speed"}
    assert checks["defaults"]["verdict"] == "reference"
    assert checks["unit_size=30000"]["ratio"] == pytest.approx(1.0, abs=0.05)
    slow_half = make_run(tmp_path / "c", cells(1.10), speed=0.5, seed=3)
    assert verdicts(gate_of(slow_half, base, normalize="synthetic"))["unit_size=30000"] == "regression"


def test_tolerance_and_ignored_params(tmp_path):
    base = make_run(tmp_path / "a", cells(), seed=1)
    slow = make_run(tmp_path / "b", cells(1.10), seed=2)
    assert gate_of(slow, base, tolerance=0.2)["verdict"] == "pass"
    planted = {"ref": (SPIN, 200.0), "tgt": ({**SPIN, "unit_size": 30000, "slowdown": 1.1}, 130 / 1.1)}
    renamed = make_run(tmp_path / "c", planted, seed=3)
    result = gate_of(renamed, base)
    assert {c["verdict"] for c in result["checks"] if c["kind"] == "coverage"} == {"new", "missing"}
    assert gate_of(renamed, base, ignore_params=["slowdown"])["verdict"] == "fail"


def test_correctness_failed_cell_lost_work_and_quality_bound(tmp_path):
    work_ok = record(
        "w", {"game": "kuhn"}, 0, {"work_requested": 100, "work_done": 100, "nash_conv": 0.010}, suite="mccfr", work=100
    )
    base = make_run(tmp_path / "a", cells(), extra=[work_ok])
    lost = record(
        "w", {"game": "kuhn"}, 0, {"work_requested": 100, "work_done": 0, "nash_conv": 0.010}, suite="mccfr", work=100
    )
    worse = record(
        "w", {"game": "kuhn"}, 0, {"work_requested": 100, "work_done": 100, "nash_conv": 0.5}, suite="mccfr", work=100
    )
    failed = record("ref", SPIN, 5, {}, status="error")
    for extra, what in (([lost], "work_done"), ([worse], "nash_conv"), ([work_ok, failed], None)):
        cand = make_run(tmp_path / f"c-{what}", cells(), seed=4, extra=extra)
        result = gate_of(cand, base)
        bad = [c for c in result["checks"] if c["verdict"] == "regression"]
        assert len(bad) == 1 and bad[0]["kind"] == "correctness" and bad[0]["metric"] == what, bad
    assert gate_of(make_run(tmp_path / "ok", cells(), seed=5, extra=[work_ok]), base)["verdict"] == "pass"


def test_missing_cells_and_metrics_fail_unless_allowed(tmp_path):
    mccfr = record("m", {"game": "kuhn"}, 0, {"iterations_per_s": 10.0}, suite="mccfr")
    base = make_run(tmp_path / "a", cells(), extra=[mccfr])
    cand = make_run(tmp_path / "b", {"ref": cells()["ref"]}, seed=2)
    result = gate_of(cand, base)
    assert result["verdict"] == "fail" and result["regressions"] == 0 and result["failures"] == 2
    assert "suite mccfr: in the baseline, not in the run" in result["notes"]
    assert sorted(c["verdict"] for c in result["checks"] if c["kind"] == "coverage") == ["missing", "missing"]
    allowed = gate_of(cand, base, allow_missing=True)
    assert allowed["verdict"] == "pass" and any("--allow-missing" in n for n in allowed["notes"])
    result = gate_of(base, cand)
    assert result["verdict"] == "pass"  # cells new in the run are reported, not failed
    assert "suite mccfr: in the run, not in the baseline (not gated for speed)" in result["notes"]
    renamed = record("m", {"game": "kuhn"}, 0, {"games_per_min": 10.0}, suite="mccfr")
    result = gate_of(make_run(tmp_path / "c", cells(), extra=[renamed]), base)
    dropped = [c for c in result["checks"] if c["verdict"] == "missing" and c["metric"]]
    assert result["verdict"] == "fail" and [c["metric"] for c in dropped] == ["iterations_per_s"]
    assert gate_of(make_run(tmp_path / "d", cells(), extra=[renamed]), base, allow_missing=True)["verdict"] == "pass"


def test_a_renamed_param_no_longer_switches_the_gate_off(cli, tmp_path):
    """Every baseline cell missing from the run (a param renamed): exit 1, not 0."""
    base = make_run(tmp_path / "a", cells(), seed=1)
    renamed = {
        k: ({**params, "unit_size": params.get("unit_size", 20000) + 1}, rate) for k, (params, rate) in cells().items()
    }
    run = make_run(tmp_path / "b", renamed, seed=2)
    result = cli("gate", run, "--baseline", base)
    assert result.exit_code == 1 and "missing" in result.output, result.output
    assert cli("gate", run, "--baseline", base, "--allow-missing").exit_code == 0


def test_throughputs_and_tolerance_parsing():
    cell = CellGroup("c", "demo", {}, None)
    assert is_throughput(cell, "games_per_min") and is_throughput(cell, "units_per_s")
    assert not is_throughput(cell, "batch_mean") and not is_throughput(cell, "iterations_per_s_drift_pct_per_min")
    assert parse_tolerance("10%") == pytest.approx(0.1) and parse_tolerance("0.05") == 0.05
    assert parse_tolerance("2.5 %") == pytest.approx(0.025)


def test_cli_exit_codes_and_files(cli, tmp_path):
    base = make_run(tmp_path / "a", cells(), seed=1)
    slow = make_run(tmp_path / "b", cells(1.10), seed=2)
    bl = tmp_path / "bl"
    result = cli("baseline", "save", base, "--name", "ci", "--dir", bl)
    assert result.exit_code == 0 and (bl / "ci.json").is_file()
    saved = json.loads((bl / "ci.json").read_text())
    assert len(saved["cells"]) == 2 and len(saved["cells"][0]["repeats"]) == 5 and saved["run"]["git_commit"] == "c1"
    assert cli("gate", base, "--baseline", "ci", "--dir", bl).exit_code == 0
    result = cli("gate", slow, "--baseline", "ci", "--dir", bl, "--normalize", "synthetic")
    assert result.exit_code == 1 and "regression" in result.output
    gate = json.loads((slow / "gate.json").read_text())
    assert gate["verdict"] == "fail" and "| regression |" in (slow / "gate.md").read_text()
    assert cli("gate", slow, "--baseline", "ci", "--dir", bl, "--tolerance", "20%").exit_code == 0
    (tmp_path / "corrupt").mkdir()
    (tmp_path / "corrupt" / "run.json").write_text("{not json")
    (base / "cells.jsonl").open("a").write("{broken\n{}\n")
    bad = [
        (["gate", slow, "--baseline", "nosuch", "--dir", bl], "unknown baseline 'nosuch'"),
        (["gate", slow, "--baseline", "ci", "--dir", bl, "--tolerance", "ten"], "--tolerance"),
        (["gate", slow, "--baseline", "ci", "--dir", bl, "--tolerance", "150%"], "below 100%"),
        (["gate", tmp_path / "corrupt", "--baseline", "ci", "--dir", bl], "run.json: not valid JSON"),
        (["gate", base, "--baseline", "ci", "--dir", bl], "cells.jsonl"),
        (["gate", slow, "--baseline", "ci", "--dir", bl, "--metric", "nope_per_s"], "--metric nope_per_s"),
        (["gate", slow, "--baseline", "ci", "--dir", bl, "--normalize", "gpu"], "--normalize 'gpu'"),
        (["baseline", "save", tmp_path / "nothing", "--name", "x", "--dir", bl], "not a run directory"),
    ]
    for args, words in bad:
        result = cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert words in result.output and "Traceback" not in result.output, (args, result.output)


@pytest.mark.slow
def test_real_sweep_gated_against_its_own_baseline(cli, tmp_path):
    out = tmp_path / "res"
    args = ("sweep", "--suite", "synthetic", "--set", "workers=1,2", "--duration", "0.3", "--repeats", "1")
    assert cli(*args, "--out", out, "--quiet").exit_code == 0
    (run,) = run_dirs(out)
    assert cli("baseline", "save", run, "--name", "self", "--dir", tmp_path / "bl").exit_code == 0
    result = cli("gate", run, "--baseline", "self", "--dir", tmp_path / "bl", "--normalize", "synthetic")
    assert result.exit_code == 0, result.output
    checks = json.loads((run / "gate.json").read_text())["checks"]
    assert {c["verdict"] for c in checks} == {"ok", "reference"}


def test_history_table_and_chart(cli, tmp_path):
    results = tmp_path / "results"
    for seed, slow in ((1, 1.0), (2, 1.0), (3, 1.25)):
        make_run(results, cells(slow), seed=seed)
    (results / "baselines").mkdir()
    result = cli("history", "--results", results, "--suite", "synthetic", "--html", tmp_path / "h.html")
    assert result.exit_code == 0, result.output
    assert "units_per_s" in result.output and "c1" in result.output and "c3" in result.output
    html = (tmp_path / "h.html").read_text()
    assert "plotly" in html and "unit_size=30000" in html
    assert cli("history", "--results", tmp_path / "none").exit_code == 2
    assert cli("history", "--results", results, "--suite", "mccfr").exit_code == 2


def test_pyperf_export_and_compare_to(cli, tmp_path):
    import subprocess
    import sys

    from harness.report.pyperf import convert

    assert convert("iterations_per_s", 400.0) == (0.0025, "second")
    assert convert("games_per_min", 30.0) == (2.0, "second")
    assert convert("wait_ms_p95", 5.0) == (0.005, "second")
    assert convert("units_per_s", 0.0) is None
    a, b = make_run(tmp_path / "a", cells(), seed=1), make_run(tmp_path / "b", cells(1.25), seed=2)
    for run, name in ((a, "a.json"), (b, "b.json")):
        result = cli("export", run, "--pyperf", tmp_path / name)
        assert result.exit_code == 0, result.output
    out = subprocess.run(
        [sys.executable, "-m", "pyperf", "compare_to", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--table"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "synthetic[unit_size=30000] units_per_s (time per unit)" in out.stdout
    assert "1.25x slower" in out.stdout
    assert cli("export", a).exit_code == 2  # no format named


def test_compare_fail_on_regression_exit_codes(cli, tmp_path):
    """compare --fail-on regression: 1 slower beyond the tolerance, 0 within it, 3 when the
    repeats cannot tell (one each), 2 on a bad value; without the flag it never fails."""
    base = make_run(tmp_path / "a", cells(), seed=1)
    same = make_run(tmp_path / "b", cells(), seed=2)
    slow = make_run(tmp_path / "c", cells(1.10), seed=3)
    once_a = make_run(tmp_path / "d", cells(), repeats=1, seed=4)
    once_b = make_run(tmp_path / "e", cells(), repeats=1, seed=5)
    result = cli("compare", base, slow, "--fail-on", "regression")
    assert result.exit_code == 1 and "1 throughput(s) slower beyond 3 %" in result.output, result.output
    assert cli("compare", base, slow, "--fail-on", "regression", "--tolerance", "15%").exit_code == 0
    assert cli("compare", base, same, "--fail-on", "regression").exit_code == 0
    assert cli("compare", once_a, once_b, "--fail-on", "regression").exit_code == 3
    assert cli("compare", base, slow).exit_code == 0
    bad = cli("compare", base, slow, "--fail-on", "slower")
    assert bad.exit_code == 2 and "allowed: regression" in bad.output


def test_history_keys_runs_by_machine_and_marks_the_change(cli, tmp_path):
    """Eight nightly runs on one machine, the target 25 % slower from the fifth on, and
    three runs of another machine at half the speed: two tables, two lines per cell in the
    chart, one change point, at the fifth run of the first machine, and none elsewhere."""
    results = tmp_path / "results"
    first = {"hostname": "ci-1", "cpu_model": "EPYC", "gpus": []}
    other = {"hostname": "laptop", "cpu_model": "M2", "gpus": [{"name": "RTX 4090"}]}
    for night in range(8):
        started = {"started": f"2026-11-{10 + night:02d}T02:00:00Z", "git_commit": f"n{night}"}
        make_run(results, cells(1.25 if night >= 4 else 1.0), seed=night, meta={**first, **started})
    for night in range(3):
        started = {"started": f"2026-11-{10 + night:02d}T03:00:00Z", "git_commit": f"m{night}"}
        make_run(results, cells(), speed=0.5, seed=20 + night, meta={**other, **started})
    result = cli("history", "--results", results, "--suite", "synthetic", "--html", tmp_path / "h.html")
    assert result.exit_code == 0, result.output
    assert "on ci-1 / EPYC / no GPU" in result.output and "on laptop / M2 / RTX 4090" in result.output
    assert "1 change point(s) over 2 machine(s)" in result.output
    from harness.analysis.trend import collect

    _, rows = collect(results, "synthetic", None)
    changed = [r for r in rows if r["change"] is not None]
    assert len(changed) == 1 and changed[0]["commit"] == "n4" and changed[0]["machine"].startswith("ci-1")
    assert changed[0]["change"] == pytest.approx(-0.2, abs=0.02) and "unit_size=30000" in changed[0]["cell"]
    html = (tmp_path / "h.html").read_text()
    assert "@ ci-1" in html and "@ laptop" in html and "change points" in html


def test_speed_checks_from_an_ab(tmp_path):
    """gate --against: each cell's speed check is its A/B decision; a failure of the base's
    cell is not the candidate's regression, the candidate's is; refused cells are skipped."""
    run = load_run(make_run(tmp_path / "a", cells(), seed=1))
    by_label = {c.label: c.id for c in run.cells}
    ref, tgt = by_label["defaults"], by_label["unit_size=30000"]

    def ab_result(cid, decision, low=0.9, high=1.1, **extra):
        interval = {"ratio": (low + high) / 2, "ratio_low": low, "ratio_high": high}
        return {"cell": cid, "decision": decision, "metric": "units_per_s", "interval": interval, "reason": "r",
                "elapsed_s": 30.0, "ab_blocks": [], **extra}  # fmt: skip

    def speed(ab, **kw):
        result = evaluate(run, None, GateOptions(tolerance=0.03, **kw), ab)
        return result["verdict"], {c["label"]: c["verdict"] for c in result["checks"] if c["kind"] == "speed"}

    assert speed([ab_result(ref, "ok", 0.98, 1.02), ab_result(tgt, "ok", 1.05, 1.10)]) == (
        "pass", {"defaults": "ok", "unit_size=30000": "improvement"})  # fmt: skip
    assert speed([ab_result(ref, "ok"), ab_result(tgt, "regression", 0.85, 0.9)])[0] == "fail"
    assert speed([ab_result(ref, "ok"), ab_result(tgt, "undecided")]) == (
        "undecided", {"defaults": "ok", "unit_size=30000": "undecided"})  # fmt: skip
    base_failed = ab_result(tgt, "error", failed_side="base")
    assert speed([ab_result(ref, "ok"), base_failed]) == ("pass", {"defaults": "ok", "unit_size=30000": "skipped"})
    cand_failed = ab_result(tgt, "error", failed_side="candidate")
    assert speed([ab_result(ref, "ok"), cand_failed])[0] == "fail"
    unmeasured = ab_result(tgt, "error", failed_side=None)  # neither side to blame (no rates)
    assert speed([ab_result(ref, "ok"), unmeasured])[0] == "undecided"
    refused = {"cell": tgt, "refused": "device=cuda", "decision": "skipped"}
    assert speed([ab_result(ref, "ok"), refused])[1]["unit_size=30000"] == "skipped"
    with pytest.raises(UserError, match="--normalize"):
        speed([ab_result(ref, "ok")], normalize="synthetic")
    with pytest.raises(UserError, match="nothing to gate against"):
        evaluate(run, None, GateOptions())
