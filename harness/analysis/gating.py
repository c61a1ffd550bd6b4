"""The CI gate: a run compared with a baseline, one verdict per check.

Correctness checks are exact: every cell-repeat finished ok; work done equals work
requested; quality metrics that a suite's vocabulary lets be gated at fixed work stay
within the bound stored in the baseline. Speed checks compare each cell's repeats with
the baseline's through the ratio of medians and its bootstrap interval (harness.model.stats): a
regression only when the whole interval lies beyond the tolerance, so noise alone, which
widens the interval, cannot fail the gate.

With an A/B (`harness gate RUN --against REV`, harness.ab) the speed checks come from the
A/B's decisions instead of the baseline's repeats: each cell of the run was time-sliced
against the same cell of REV, and its check is regression / ok / undecided as the
sequential test decided it. A baseline, when given too, still supplies the quality bounds
and the list of cells that must be present.

A cell of the baseline that the run lacks, or a metric the baseline has and the run no
longer reports, fails the gate (a renamed param must not silently switch it off) unless
`allow_missing`.

`normalize=SUITE` divides every throughput by that suite's reference cell (its vocabulary's
`reference`, e.g. a CPU spin cell) from the same run, repeat by repeat where it can: the
sweep runs repeat-major, so repeat r of every cell ran close together in time. Machines of
different speed, or one machine under different load, then compare in units of the
reference's work.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from harness.analysis.baselines import Snapshot
from harness.errors import UserError
from harness.model.registry import discover, vocabulary_of
from harness.model.stats import ratio_of_medians, verdict
from harness.runs.record import CellGroup, explicit_params

# Tuned by benchmarks/gate_trial.py (docs/benchmarks.md, "CI gate trial").
DEFAULT_TOLERANCE = 0.02
DEFAULT_CONFIDENCE = 0.95
PAIRED = True  # divide by the reference's same repeat, not its median
GATE_VERDICTS = ("pass", "fail", "undecided")
TIME_TO_TARGET = "time_to_target_s"  # gated like a throughput: lower is better


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


def parse_metrics(texts: list[str] | None) -> list[str] | None:
    """Repeated --metric values, each possibly a comma or space separated list."""
    return [m for text in texts or [] for m in re.split(r"[,\s]+", text) if m] or None


def normalizers() -> list[str]:
    """Suites whose vocabulary names a reference cell: what --normalize accepts."""
    suites, _ = discover()
    return sorted(name for name, suite in suites.items() if suite.words.reference is not None)


@dataclass
class GateOptions:
    tolerance: float = DEFAULT_TOLERANCE
    metrics: list[str] | None = None  # None: every throughput both sides have
    normalize: str | None = None  # a suite with a reference cell
    confidence: float = DEFAULT_CONFIDENCE
    ignore_params: list[str] = field(default_factory=list)  # match cells as if these keys were equal
    allow_missing: bool = False  # baseline cells or metrics absent from the run: reported, not failed


@dataclass
class Check:
    kind: str  # correctness | speed | coverage
    suite: str
    cell: str
    label: str
    metric: str | None
    verdict: str  # ok | regression | improvement | new | missing | skipped | reference | undecided
    baseline: float | None = None
    candidate: float | None = None
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    p_value: float | None = None
    note: str = ""


def is_throughput(cell: CellGroup, metric: str) -> bool:
    """A rate of work over the measured window: what normalization divides."""
    return cell.vocabulary.direction(metric) == "higher" and metric.endswith(("_per_s", "_per_min"))


# ---------------------------------------------------------------------- matching
def match_key(cell: CellGroup, ignore: list[str]) -> str:
    """A cell is the same cell in a baseline and a run when its explicit params agree (those
    not at the suite's defaults here): a knob added since the baseline was saved, at its
    default, does not make the baseline's cell go missing; a changed default does."""
    import json

    params = {k: v for k, v in explicit_params(cell.suite, cell.params).items() if k not in ignore}
    return json.dumps([cell.suite, params], sort_keys=True, default=str)


def _index(cells: list[CellGroup], ignore: list[str], side: str) -> dict[str, CellGroup]:
    out: dict[str, CellGroup] = {}
    for cell in cells:
        key = match_key(cell, ignore)
        if key in out:
            raise UserError(
                f"{side}: cells {out[key].id} and {cell.id} are the same once "
                f"{', '.join(ignore)} is ignored; drop --ignore-param or split the sweep"
            )
        out[key] = cell
    return out


# ---------------------------------------------------------------------- normalization
def find_reference(cells: list[CellGroup], suite: str) -> CellGroup | None:
    """The suite's reference cell among these: matching its vocabulary's reference params,
    finished ok with the reference metric, fewest differences from `prefer` first."""
    reference = vocabulary_of(suite).reference
    if reference is None:
        return None
    found = []
    for cell in cells:
        if cell.suite != suite or not reference.matches(cell.params) or not cell.by_repeat(reference.metric):
            continue
        found.append((reference.distance(cell.params), cell.id, cell))
    return min(found, key=lambda f: f[:2])[2] if found else None


def normalized(values: dict[int, float], reference: dict[int, float], paired: bool = PAIRED) -> list[float]:
    """Values divided by the reference's same repeat (paired; its median where that repeat
    is missing) or by the reference's median."""
    median = float(np.median(list(reference.values())))
    return [v / (reference.get(r, median) if paired else median) for r, v in values.items()]


# ---------------------------------------------------------------------- checks
def correctness_checks(cell: CellGroup, base: CellGroup | None, bounds: dict[str, Any]) -> list[Check]:
    suite, cid, label = cell.suite, cell.id, cell.label
    checks = []
    failed = [r for r in cell.records if not r.ok]
    n = len(cell.records)
    if failed:
        first = failed[0]
        checks.append(
            Check(
                "correctness", suite, cid, label, None, "regression",
                note=f"{len(failed)}/{n} repeats failed; repeat {first.repeat}: {first.status}: {first.reason}",
            )
        )  # fmt: skip
    else:
        checks.append(Check("correctness", suite, cid, label, None, "ok", note=f"{n}/{n} repeats ok"))
    lost = [
        r
        for r in cell.ok
        if "work_requested" in r.metrics and r.metrics.get("work_done") != r.metrics["work_requested"]
    ]
    if lost:
        m = lost[0].metrics
        checks.append(
            Check(
                "correctness", suite, cid, label, "work_done", "regression",
                baseline=m["work_requested"], candidate=m.get("work_done"),
                note=f"{len(lost)} repeats did not do the work requested (requested {m['work_requested']}, done {m.get('work_done')})",
            )
        )  # fmt: skip
    elif any("work_requested" in r.metrics for r in cell.records):
        checks.append(Check("correctness", suite, cid, label, "work_done", "ok", note="work done == requested"))
    cell_bounds = bounds.get(base.id, {}) if base is not None else {}
    for metric, bound in sorted(cell_bounds.items()):
        if not cell.fixed_work:
            checks.append(
                Check("correctness", suite, cid, label, metric, "skipped", baseline=bound,
                      note="baseline bound holds at fixed work; this cell ran for a duration")
            )  # fmt: skip
            continue
        lower = cell.vocabulary.direction(metric) != "higher"
        values = cell.values(metric)
        if not values:
            verdict_, worst, note = "regression", None, f"{metric} not reported"
        else:
            worst = max(values) if lower else min(values)
            verdict_ = "ok" if (worst <= bound if lower else worst >= bound) else "regression"
            note = f"worst repeat {worst:.4g} vs bound {bound:.4g}"
        checks.append(
            Check("correctness", suite, cid, label, metric, verdict_, baseline=bound, candidate=worst, note=note)
        )
    return checks


def speed_metrics(base: CellGroup, cand: CellGroup, opts: GateOptions) -> list[str]:
    """The metrics gated for speed: those asked for, else every throughput and the time to
    a quality target, where both sides have them."""
    if opts.metrics:
        return [m for m in opts.metrics if base.by_repeat(m) and cand.by_repeat(m)]
    names: dict[str, None] = {}
    for rec in cand.records:
        for m in rec.metrics:
            if (is_throughput(cand, m) or m == TIME_TO_TARGET) and base.by_repeat(m):
                names.setdefault(m, None)
    return list(names)


def _dropped_metrics(base: CellGroup, cand: CellGroup, opts: GateOptions) -> list[str]:
    wanted = opts.metrics or [m for r in base.records for m in r.metrics if is_throughput(base, m)]
    return [m for m in dict.fromkeys(wanted) if base.by_repeat(m) and not cand.by_repeat(m)]


def speed_check(
    base: CellGroup,
    cand: CellGroup,
    metric: str,
    opts: GateOptions,
    refs: tuple[dict[int, float], dict[int, float]] | None,
) -> Check:
    b_vals, c_vals = base.by_repeat(metric), cand.by_repeat(metric)
    higher = cand.vocabulary.direction(metric) == "higher"
    scaled = refs is not None and is_throughput(cand, metric)
    if scaled:
        b, c = normalized(b_vals, refs[0]), normalized(c_vals, refs[1])
    else:
        b, c = list(b_vals.values()), list(c_vals.values())
    interval = ratio_of_medians(b, c, confidence=opts.confidence)
    if interval is None:
        return Check("speed", cand.suite, cand.id, cand.label, metric, "skipped", note="baseline median is 0")
    word = verdict(interval, higher_is_better=higher, tolerance=opts.tolerance)
    notes = []
    if scaled:
        notes.append("normalized")
    if min(len(b), len(c)) < 2:
        notes.append("1 repeat: point estimate")
    return Check(
        "speed",
        cand.suite,
        cand.id,
        cand.label,
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


def ab_check(cand: CellGroup, ab: dict[str, Any] | None, opts: GateOptions) -> Check:
    """The speed check of one cell from its A/B result (harness.ab.experiment.CellAB.to_json)."""
    suite, cid, label = cand.suite, cand.id, cand.label
    if ab is None:
        return Check("speed", suite, cid, label, None, "skipped", note="not A/B'd")
    if ab.get("refused"):
        return Check("speed", suite, cid, label, None, "skipped", note=f"not A/B'd: {ab['refused']}")
    metric, decision = ab.get("metric"), ab["decision"]
    if decision == "error":
        if ab.get("failed_side") == "base":
            return Check(
                "speed", suite, cid, label, metric, "skipped", note=f"the base revision's cell failed: {ab['reason']}"
            )
        if ab.get("failed_side") == "candidate":
            return Check("speed", suite, cid, label, metric, "regression", note=f"the A/B failed: {ab['reason']}")
        return Check("speed", suite, cid, label, metric, "undecided", note=f"the A/B could not measure: {ab['reason']}")
    interval = ab.get("interval") or {}
    blocks = ab.get("ab_blocks") or []
    pairs = sum(1 for b in blocks for p in b["pairs"] if not p["warmup"] and p["log_ratio"] is not None)
    ratio, low, high = interval.get("ratio"), interval.get("ratio_low"), interval.get("ratio_high")
    verdict_ = {"regression": "regression", "ok": "ok", "undecided": "undecided"}[decision]
    if verdict_ == "ok" and low is not None and low > 1 + opts.tolerance:
        verdict_ = "improvement"
    timing = f"A/B: {len(blocks)} blocks, {pairs} pairs, {ab.get('elapsed_s', 0):.0f} s"
    note = timing + ("; " + ab["reason"] if decision == "undecided" else "")
    if ab.get("measure") == "instructions":  # a counted A/B: its reason names the counts and the waits
        note = f"counted A/B, {ab.get('elapsed_s', 0):.0f} s: {ab['reason']}"
    return Check("speed", suite, cid, label, metric, verdict_, ratio=ratio, low=low, high=high, note=note)


def failing(check: Check | dict[str, Any], opts: GateOptions) -> bool:
    """Whether a check fails the gate: a regression, or something missing unless allowed."""
    verdict_ = check.verdict if isinstance(check, Check) else check["verdict"]
    return verdict_ == "regression" or (verdict_ == "missing" and not opts.allow_missing)


def _validate_metrics(opts: GateOptions, cells: list[CellGroup]) -> None:
    if not opts.metrics:
        return
    seen = {m: c for c in cells for r in c.records for m in r.metrics}
    for metric in opts.metrics:
        if metric not in seen:
            sample = ", ".join(sorted(m for m, c in seen.items() if c.vocabulary.direction(m))[:12])
            raise UserError(f"--metric {metric}: no cell of the run reports it (metrics with a direction: {sample})")
        if seen[metric].vocabulary.direction(metric) is None:
            raise UserError(
                f"--metric {metric}: neither its suite nor its name says whether higher or lower is better "
                "(rates *_per_s, times *_ms, rss and mem sizes, declared quality metrics ... do); pick another metric"
            )


def _references(
    run: Snapshot, base: Snapshot, suite: str
) -> tuple[tuple[dict[int, float], dict[int, float]] | None, set[str]]:
    """(reference values of the baseline and the run, ids of the reference cells); None
    for the values when the run's reference cell failed (speed checks are then skipped)."""
    allowed = normalizers()
    if suite not in allowed:
        raise UserError(f"--normalize {suite!r}: allowed: suites with a reference cell: {', '.join(allowed) or 'none'}")
    metric = vocabulary_of(suite).reference.metric  # type: ignore[union-attr]  # checked above
    ref_run, ref_base = find_reference(run.cells, suite), find_reference(base.cells, suite)
    if ref_base is None:
        raise UserError(
            f"--normalize {suite}: the baseline has no reference cell of suite {suite} that finished ok; "
            "save a baseline from a sweep with one, or drop --normalize"
        )
    if ref_run is None:
        return None, set()
    return (ref_base.by_repeat(metric), ref_run.by_repeat(metric)), {ref_run.id, ref_base.id}


def evaluate(
    run: Snapshot, base: Snapshot | None, opts: GateOptions, ab: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Every check of `run` against `base` (quality bounds, coverage and, without an A/B,
    speed) and against the A/B's results `ab` (speed), when given."""
    if not 0 < opts.confidence < 1:
        raise UserError(f"--confidence {opts.confidence}: must lie between 0 and 1 (e.g. 0.95)")
    if base is None and ab is None:
        raise UserError("nothing to gate against: give --baseline NAME, --against REV, or both")
    if ab is not None and opts.normalize is not None:
        raise UserError(
            "--normalize divides by a reference cell of the same run; an A/B (--against) pairs slices instead: drop one"
        )
    _validate_metrics(opts, run.cells)
    run_idx = _index(run.cells, opts.ignore_params, "run")
    base_idx = _index(base.cells, opts.ignore_params, "baseline") if base is not None else {}
    bounds = base.bounds if base is not None else {}
    ab_by_cell = {r["cell"]: r for r in ab or []}
    refs, reference_ids, unnormalizable = None, set(), False
    if opts.normalize is not None and base is not None:
        refs, reference_ids = _references(run, base, opts.normalize)
        # A failed reference cell is a correctness regression already; the speed checks
        # cannot be normalized, so they are skipped rather than compared raw.
        unnormalizable = refs is None
    checks: list[Check] = []
    for key, cand in run_idx.items():
        base_cell = base_idx.get(key)
        checks.extend(correctness_checks(cand, base_cell, bounds))
        if ab is not None:
            if cand.ok and len(cand.ok) == len(cand.records):
                checks.append(ab_check(cand, ab_by_cell.get(cand.id), opts))
            continue
        if base_cell is None:
            checks.append(Check("coverage", cand.suite, cand.id, cand.label, None, "new", note="not in the baseline"))
            continue
        if cand.id in reference_ids and refs is not None:
            metric = vocabulary_of(cand.suite).reference.metric  # type: ignore[union-attr]
            checks.append(
                Check("speed", cand.suite, cand.id, cand.label, metric, "reference",
                      baseline=float(np.median(list(refs[0].values()))),
                      candidate=float(np.median(list(refs[1].values()))),
                      note="normalization reference, raw, not gated")
            )  # fmt: skip
            continue
        for metric in speed_metrics(base_cell, cand, opts):
            if unnormalizable and is_throughput(cand, metric):
                checks.append(
                    Check("speed", cand.suite, cand.id, cand.label, metric, "skipped",
                          note="the run has no ok reference cell to normalize by")
                )  # fmt: skip
                continue
            checks.append(speed_check(base_cell, cand, metric, opts, refs))
        if cand.ok:
            for metric in _dropped_metrics(base_cell, cand, opts):
                checks.append(
                    Check("coverage", cand.suite, cand.id, cand.label, metric, "missing",
                          note="the baseline has this metric, the run does not report it (renamed? save a new baseline)")
                )  # fmt: skip
    for key, base_cell in base_idx.items():
        if key not in run_idx:
            checks.append(
                Check("coverage", base_cell.suite, base_cell.id, base_cell.label, None, "missing",
                      note="in the baseline, not in the run (params renamed? --ignore-param KEY, or save a new baseline)")
            )  # fmt: skip
    run_suites = {c.suite for c in run.cells}
    base_suites = {c.suite for c in base.cells} if base is not None else run_suites
    notes = [
        f"suite {s}: in the run, not in the baseline (not gated for speed)" for s in sorted(run_suites - base_suites)
    ]
    notes += [f"suite {s}: in the baseline, not in the run" for s in sorted(base_suites - run_suites)]
    missing = sum(c.verdict == "missing" for c in checks)
    if missing and opts.allow_missing:
        notes.append(f"{missing} missing cell(s) or metric(s) allowed by --allow-missing")
    failures = sum(failing(c, opts) for c in checks)
    undecided = sum(c.verdict == "undecided" for c in checks)
    verdict_ = GATE_VERDICTS[1] if failures else GATE_VERDICTS[2] if undecided else GATE_VERDICTS[0]
    return {
        "verdict": verdict_,
        "regressions": sum(c.verdict == "regression" for c in checks),
        "failures": failures,
        "undecided": undecided,
        "improvements": sum(c.verdict == "improvement" for c in checks),
        "options": asdict(opts),
        "baseline": {"name": base.name, "source": base.source, **_run_facts(base.run)} if base is not None else None,
        "run": {"source": run.source, **_run_facts(run.run)},
        "notes": notes,
        "checks": [asdict(c) for c in checks],
    }


def _run_facts(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: meta.get(k) for k in ("git_commit", "git_dirty", "started", "hostname", "cpu_model")}
