"""The CI gate: a run compared with a baseline, one verdict per check, an exit code.

Correctness checks are exact: every cell-repeat finished ok; work done equals work
requested; quality metrics (exploitability, NashConv) of cells run at a fixed amount of
work stay within the bound stored in the baseline. Speed checks compare each cell's
repeats with the baseline's through the ratio of medians and its bootstrap interval
(harness.stats): a regression only when the whole interval lies beyond the tolerance,
so noise alone, which widens the interval, cannot fail the gate.

`normalize="synthetic"` divides every throughput by the synthetic spin cell's units/s
from the same run (repeat by repeat where it can: the sweep runs repeat-major, so repeat
r of every cell ran close together in time). Machines of different speed, or one machine
under different load, then compare in units of "spin work".
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness import baseline as baselines
from harness.baseline import ok_values
from harness.errors import UserError
from harness.labels import cell_label, suite_defaults
from harness.stats import direction, ratio_of_medians, verdict
from harness.store import write_json_atomic

# Tuned by benchmarks/gate_trial.py (docs/benchmarks.md, "CI gate trial").
DEFAULT_TOLERANCE = 0.02
DEFAULT_CONFIDENCE = 0.95
PAIRED = True  # divide by the reference's same repeat, not its median
REFERENCE_METRIC = "units_per_s"
NORMALIZERS = ("synthetic",)
GATE_JSON = "gate.json"
GATE_MD = "gate.md"


def parse_tolerance(text: str | float) -> float:
    """'10%', '10 %' or '0.1' -> 0.1. A bare number >= 1 is refused (10 would be 1000 %)."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise UserError(f"--tolerance {text!r}: write a percentage such as 10% (or a fraction such as 0.1)") from None
    if not raw.endswith("%") and value >= 1:
        raise UserError(f"--tolerance {text!r}: a bare number is a fraction; did you mean {raw}%?")
    if not 0 <= value < 1 or not np.isfinite(value):
        raise UserError(f"--tolerance {text!r}: must be at least 0% and below 100%")
    return value


@dataclass
class GateOptions:
    tolerance: float = DEFAULT_TOLERANCE
    metrics: list[str] | None = None  # None: every throughput both sides have
    normalize: str | None = None
    confidence: float = DEFAULT_CONFIDENCE
    ignore_params: list[str] = field(default_factory=list)  # match cells as if these keys were equal


@dataclass
class Check:
    kind: str  # correctness | speed | coverage
    suite: str
    cell: str
    label: str
    metric: str | None
    verdict: str  # ok | regression | improvement | new | missing | skipped | reference
    baseline: float | None = None
    candidate: float | None = None
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    p_value: float | None = None
    note: str = ""


def is_throughput(metric: str) -> bool:
    """A rate of work over the measured window: what --normalize divides."""
    return direction(metric) == "higher" and metric.endswith(("_per_s", "_per_min"))


# ---------------------------------------------------------------------- matching
def match_key(cell: dict[str, Any], ignore: list[str]) -> str:
    params = {k: v for k, v in cell["params"].items() if k not in ignore}
    return json.dumps([cell["suite"], params], sort_keys=True, default=str)


def _index(cells: list[dict[str, Any]], ignore: list[str], side: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for cell in cells:
        key = match_key(cell, ignore)
        if key in out:
            raise UserError(
                f"{side}: cells {out[key]['id']} and {cell['id']} are the same once "
                f"{', '.join(ignore)} is ignored; drop --ignore-param or split the sweep"
            )
        out[key] = cell
    return out


# ---------------------------------------------------------------------- normalization
def find_reference(cells: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The synthetic spin cell to normalize by: slowdown 1, no fault, preferably one
    worker and otherwise default params (the fewest differences wins)."""
    defaults = suite_defaults("synthetic") or {}
    wanted = {**defaults, "kind": "spin", "workers": 1}
    found = []
    for cell in cells:
        p = cell["params"]
        if cell["suite"] != "synthetic" or p.get("kind") != "spin":
            continue
        if float(p.get("slowdown", 1.0)) != 1.0 or p.get("fail", "none") != "none":
            continue
        if not ok_values(cell, REFERENCE_METRIC):
            continue
        distance = sum(p.get(k) != v for k, v in wanted.items())
        found.append((distance, cell["params"].get("workers", 1), cell["id"], cell))
    return min(found, key=lambda f: f[:3])[3] if found else None


def normalized(
    values: dict[int, float], reference: dict[int, float], metric: str, paired: bool = PAIRED
) -> list[float]:
    """Throughputs divided by the reference's same repeat (paired; its median where that
    repeat is missing) or by the reference's median; other metrics unchanged."""
    if not is_throughput(metric):
        return list(values.values())
    median = float(np.median(list(reference.values())))
    return [v / (reference.get(r, median) if paired else median) for r, v in values.items()]


# ---------------------------------------------------------------------- checks
def correctness_checks(cell: dict[str, Any], base: dict[str, Any] | None, bounds: dict[str, Any]) -> list[Check]:
    suite, cid, label = cell["suite"], cell["id"], cell_label(cell["suite"], cell["params"])
    checks = []
    failed = [r for r in cell["repeats"] if r["status"] != "ok"]
    n = len(cell["repeats"])
    if failed:
        first = failed[0]
        checks.append(
            Check(
                "correctness", suite, cid, label, None, "regression",
                note=f"{len(failed)}/{n} repeats failed; repeat {first['repeat']}: {first['status']}: {first.get('reason')}",
            )
        )  # fmt: skip
    else:
        checks.append(Check("correctness", suite, cid, label, None, "ok", note=f"{n}/{n} repeats ok"))
    lost = [
        r
        for r in cell["repeats"]
        if r["status"] == "ok"
        and "work_requested" in r["metrics"]
        and r["metrics"].get("work_done") != r["metrics"]["work_requested"]
    ]
    if lost:
        r = lost[0]["metrics"]
        checks.append(
            Check(
                "correctness", suite, cid, label, "work_done", "regression",
                baseline=r["work_requested"], candidate=r.get("work_done"),
                note=f"{len(lost)} repeats did not do the work requested (requested {r['work_requested']}, done {r.get('work_done')})",
            )
        )  # fmt: skip
    elif any("work_requested" in r["metrics"] for r in cell["repeats"]):
        checks.append(Check("correctness", suite, cid, label, "work_done", "ok", note="work done == requested"))
    cell_bounds = bounds.get(base["id"], {}) if base is not None else {}
    for metric, bound in sorted(cell_bounds.items()):
        if not baselines.fixed_work(cell):
            checks.append(
                Check("correctness", suite, cid, label, metric, "skipped", baseline=bound,
                      note="baseline bound holds at fixed work; this cell ran for a duration")
            )  # fmt: skip
            continue
        values = list(ok_values(cell, metric).values())
        if not values:
            verdict_, worst, note = "regression", None, f"{metric} not reported"
        else:
            worst = max(values)
            verdict_ = "ok" if worst <= bound else "regression"
            note = f"worst repeat {worst:.4g} vs bound {bound:.4g}"
        checks.append(
            Check("correctness", suite, cid, label, metric, verdict_, baseline=bound, candidate=worst, note=note)
        )
    return checks


def speed_metrics(base: dict[str, Any], cand: dict[str, Any], opts: GateOptions) -> list[str]:
    if opts.metrics:
        return [m for m in opts.metrics if ok_values(base, m) and ok_values(cand, m)]
    names: dict[str, None] = {}
    for rep in cand["repeats"]:
        for m in rep["metrics"]:
            if is_throughput(m) and ok_values(base, m):
                names.setdefault(m, None)
    return list(names)


def _dropped_metrics(base: dict[str, Any], cand: dict[str, Any], opts: GateOptions) -> list[str]:
    wanted = opts.metrics or [m for r in base["repeats"] for m in r["metrics"] if is_throughput(m)]
    return [m for m in dict.fromkeys(wanted) if ok_values(base, m) and not ok_values(cand, m)]


def speed_check(
    base: dict[str, Any],
    cand: dict[str, Any],
    metric: str,
    opts: GateOptions,
    refs: tuple[dict[int, float], dict[int, float]] | None,
) -> Check:
    suite, label = cand["suite"], cell_label(cand["suite"], cand["params"])
    b_vals, c_vals = ok_values(base, metric), ok_values(cand, metric)
    higher = direction(metric) == "higher"
    if refs is not None:
        b, c = normalized(b_vals, refs[0], metric), normalized(c_vals, refs[1], metric)
    else:
        b, c = list(b_vals.values()), list(c_vals.values())
    interval = ratio_of_medians(b, c, confidence=opts.confidence)
    if interval is None:
        return Check("speed", suite, cand["id"], label, metric, "skipped", note="baseline median is 0")
    word = verdict(interval, higher_is_better=higher, tolerance=opts.tolerance)
    notes = []
    if refs is not None and is_throughput(metric):
        notes.append("normalized")
    if min(len(b), len(c)) < 2:
        notes.append("1 repeat: point estimate")
    return Check(
        "speed",
        suite,
        cand["id"],
        label,
        metric,
        {"worse": "regression", "better": "improvement", "same": "ok"}[word],
        baseline=float(np.median(b)),
        candidate=float(np.median(c)),
        ratio=interval["ratio"],
        low=interval["low"],
        high=interval["high"],
        p_value=interval.get("p_value"),
        note="; ".join(notes),
    )


def _validate_metrics(opts: GateOptions, cells: list[dict[str, Any]]) -> None:
    if not opts.metrics:
        return
    seen = {m for c in cells for r in c["repeats"] for m in r["metrics"]}
    for metric in opts.metrics:
        if metric not in seen:
            sample = ", ".join(sorted(m for m in seen if direction(m))[:12])
            raise UserError(f"--metric {metric}: no cell of the run reports it (metrics with a direction: {sample})")
        if direction(metric) is None:
            raise UserError(
                f"--metric {metric}: its name does not say whether higher or lower is better "
                "(rates *_per_s, times *_ms, rss and mem sizes, exploitability ... do); pick another metric"
            )


def evaluate(run: dict[str, Any], base: dict[str, Any], opts: GateOptions) -> dict[str, Any]:
    """Every check of `run` against `base` (both shaped like baseline.load_run's result)."""
    if opts.normalize is not None and opts.normalize not in NORMALIZERS:
        raise UserError(f"--normalize {opts.normalize!r}: allowed: {', '.join(NORMALIZERS)}")
    if not 0 < opts.confidence < 1:
        raise UserError(f"--confidence {opts.confidence}: must lie between 0 and 1 (e.g. 0.95)")
    _validate_metrics(opts, run["cells"])
    run_idx = _index(run["cells"], opts.ignore_params, "run")
    base_idx = _index(base["cells"], opts.ignore_params, "baseline")
    refs = None
    reference_ids: set[str] = set()
    unnormalizable = False
    if opts.normalize == "synthetic":
        ref_run, ref_base = find_reference(run["cells"]), find_reference(base["cells"])
        if ref_base is None:
            raise UserError(
                "--normalize synthetic: the baseline has no synthetic kind=spin cell (slowdown=1, fail=none) "
                "that finished ok; save a baseline from a sweep with one, or drop --normalize"
            )
        if ref_run is not None:
            refs = (ok_values(ref_base, REFERENCE_METRIC), ok_values(ref_run, REFERENCE_METRIC))
            reference_ids = {ref_run["id"], ref_base["id"]}
        else:
            # A failed spin cell is a correctness regression already; the speed checks
            # cannot be normalized, so they are skipped rather than compared raw.
            unnormalizable = True
    checks: list[Check] = []
    for key, cand in run_idx.items():
        base_cell = base_idx.get(key)
        checks.extend(correctness_checks(cand, base_cell, base.get("bounds", {})))
        label = cell_label(cand["suite"], cand["params"])
        if base_cell is None:
            checks.append(Check("coverage", cand["suite"], cand["id"], label, None, "new", note="not in the baseline"))
            continue
        if cand["id"] in reference_ids and refs is not None:
            checks.append(
                Check("speed", cand["suite"], cand["id"], label, REFERENCE_METRIC, "reference",
                      baseline=float(np.median(list(refs[0].values()))),
                      candidate=float(np.median(list(refs[1].values()))),
                      note="normalization reference, raw, not gated")
            )  # fmt: skip
            continue
        for metric in speed_metrics(base_cell, cand, opts):
            if unnormalizable and is_throughput(metric):
                checks.append(
                    Check("speed", cand["suite"], cand["id"], label, metric, "skipped",
                          note="the run has no ok synthetic spin cell to normalize by")
                )  # fmt: skip
                continue
            checks.append(speed_check(base_cell, cand, metric, opts, refs))
        if any(r["status"] == "ok" for r in cand["repeats"]):
            for metric in _dropped_metrics(base_cell, cand, opts):
                checks.append(
                    Check("coverage", cand["suite"], cand["id"], label, metric, "missing",
                          note="the baseline has this metric, the run does not report it (renamed? save a new baseline)")
                )  # fmt: skip
    for key, base_cell in base_idx.items():
        if key not in run_idx:
            label = cell_label(base_cell["suite"], base_cell["params"])
            checks.append(
                Check("coverage", base_cell["suite"], base_cell["id"], label, None, "missing", note="in the baseline, not in the run")
            )  # fmt: skip
    run_suites = {c["suite"] for c in run["cells"]}
    base_suites = {c["suite"] for c in base["cells"]}
    notes = [
        f"suite {s}: in the run, not in the baseline (not gated for speed)" for s in sorted(run_suites - base_suites)
    ]
    notes += [f"suite {s}: in the baseline, not in the run" for s in sorted(base_suites - run_suites)]
    regressions = sum(c.verdict == "regression" for c in checks)
    return {
        "verdict": "fail" if regressions else "pass",
        "regressions": regressions,
        "improvements": sum(c.verdict == "improvement" for c in checks),
        "options": asdict(opts),
        "baseline": {"name": base.get("name"), "source": base.get("source"), **_run_facts(base.get("run") or {})},
        "run": {"source": run.get("source"), **_run_facts(run.get("run") or {})},
        "notes": notes,
        "checks": [asdict(c) for c in checks],
    }


def _run_facts(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: meta.get(k) for k in ("git_commit", "git_dirty", "started", "hostname", "cpu_model")}


def cmd_gate(
    run_dir: Path,
    baseline_name: str,
    baseline_dir: Path,
    tolerance: str | None,
    metrics: list[str] | None,
    normalize: str | None,
    confidence: float,
    ignore_params: list[str] | None,
) -> int:
    from harness.report.gate import render_gate, write_markdown

    opts = GateOptions(
        tolerance=parse_tolerance(tolerance) if tolerance is not None else DEFAULT_TOLERANCE,
        metrics=[m for text in metrics or [] for m in re.split(r"[,\s]+", text) if m] or None,
        normalize=normalize,
        confidence=confidence,
        ignore_params=list(ignore_params or []),
    )
    base = baselines.load(baseline_name, baseline_dir)
    run = baselines.load_run(run_dir)
    result = evaluate(run, base, opts)
    render_gate(result)
    write_json_atomic(run_dir / GATE_JSON, result)
    write_markdown(run_dir / GATE_MD, result)
    print(
        f"gate {result['verdict']}: {result['regressions']} regression(s); written: {run_dir / GATE_JSON}, {run_dir / GATE_MD}"
    )
    return 1 if result["regressions"] else 0
