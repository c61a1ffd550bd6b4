"""Rules over a run's records -> findings: the classic failures of parallel training, named.

Each rule reads metric names from DESIGN.md's table and generic suite params (`workers`
(or `agents`/`actors`), `backend`, `device`, `max_batch`, `leaves`, `timeout_ms`), never
one suite's internals, and every finding carries its severity, the cells, the evidence
numbers and one line naming the remedy. What each rule reads:

- LOST_WORK (error): `work_requested`, `work_done` of cells that finished ok.
- DRIFT (warning): `<rate>_drift_pct_per_min` and `<rate>_drift_se` (probe, from the 1 s
  series; the se also from 10 s block means, so a machine that wanders is not a drift); slope < -2 %/min and |slope| > 2 se in most repeats, over a measured window
  (`measure_s`) of >= 10 s. Duration-mode cells only: a fixed-work run ends with its
  slowest workers finishing alone, a ramp-down by construction.
- GPU_IDLE (warning): param `device` starting with "cuda"; `gpu_util_mean`, `gpu_pids`,
  `gpu_other_pids`, `gpu_reason`, and the suite's optional `worker_devices` (a list of
  device strings, or a {pid: device} map).
- GPU_THRASH (warning): `gpu_util_mean` > 90 % while the throughput per worker falls below
  half of the fewest-workers cell of the same suite and other params.
- SMALL_BATCHES (warning): `batch_mean` (or `batch_size_mean`) against the suite's
  `batch_limit` metric if it reports one, else param `max_batch` (where a `backend` param
  exists, only for a backend whose name says "server").
- NEGATIVE_SCALING (warning): the suite's throughput over cells that differ only in the
  worker count; lower with more workers beyond noise (bootstrap interval of the ratio of
  medians when both sides have >= 2 repeats, else a fixed margin).
- BUSY_WAIT (warning): `<role>_wait_cpu_s` against `<role>_wait_s` (or `wait_s`): CPU
  seconds burned per second spent waiting; or `wait_share` (share of the time the suite
  says its processes wait) with `cpu_util_mean` near every process being busy; or
  `publish_share` (share of the time spent publishing weights) >= 0.2; or learners that
  spin instead of waiting: `replay_ratio` >= 2 with `learner_cpu_s` >= 2 x `main_cpu_s`
  (the actor's), the seed's unthrottled learners re-training on stale samples.
- OVERSUBSCRIBED (info): the suite's `resources_for(params).cpus` against run.json's
  `cpu_cores`.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.stats import ratio_of_medians, verdict
from harness.store import RunStore

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}

DRIFT_PCT_PER_MIN = -2.0  # a slope below this ...
DRIFT_SIGMAS = 2.0  # ... and this many standard errors from zero
# ... over a window long enough to fit: 1 s rate points, and a slope's standard error from
# 3-4 points (1-2 degrees of freedom) calls noise significant far too often
DRIFT_MIN_MEASURE_S = 10.0
GPU_IDLE_UTIL_PCT = 5.0
GPU_BUSY_UTIL_PCT = 90.0
THRASH_PER_WORKER_RATIO = 0.5
SMALL_BATCH_SHARE = 0.25
SCALING_TOLERANCE = 0.05  # with repeats: the interval's upper end must lie below 1 - this
SCALING_MARGIN = 0.15  # single repeats: the ratio must lie below 1 - this (shared machines are noisy)
BUSY_WAIT_CPU_PER_WAIT_S = 0.05  # a waiting process burning >= 5 % of a core polls instead of blocking
BUSY_WAIT_MIN_WAIT_S = 0.5
BUSY_WAIT_SHARE = 0.5
BUSY_PUBLISH_SHARE = 0.2  # a fifth of the time spent publishing weights: publish less often
BUSY_SPIN_REPLAY_RATIO = 2.0  # samples trained per sample collected
BUSY_SPIN_CPU_FACTOR = 2.0  # learner CPU over the actor's
BUSY_WAIT_BUSY_FRACTION = 0.8

WORKER_KEYS = ("workers", "agents", "actors")
# The throughput a suite is judged by: the first of these it reports, else its first `_per_s`.
RATE_PREFERENCE = (
    "iterations_per_s",
    "games_per_s",
    "env_steps_per_s",
    "nn_evals_per_s",
    "updates_per_s",
    "moves_per_s",
    "units_per_s",
    "round_trips_per_s",
)


@dataclass
class Finding:
    rule: str
    severity: str  # error | warning | info
    cells: list[str]
    hint: str  # one line: the symptom with its numbers, then the remedy
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass
class CellView:
    """One cell over its repeats: numbers are medians over the repeats that finished ok."""

    id: str
    suite: str
    params: dict[str, Any]
    records: list[dict[str, Any]]

    @property
    def ok(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("status") == "ok"]

    def values(self, metric: str) -> list[float]:
        out = []
        for rec in self.ok:
            value = _number(rec.get("metrics", {}).get(metric))
            if value is not None:
                out.append(value)
        return out

    def median(self, metric: str) -> float | None:
        values = self.values(metric)
        return statistics.median(values) if values else None

    def first(self, metric: str) -> Any:
        for rec in self.ok:
            value = rec.get("metrics", {}).get(metric)
            if value is not None:
                return value
        return None

    def metric_names(self) -> set[str]:
        return {name for rec in self.ok for name in rec.get("metrics", {})}

    @property
    def fixed_work(self) -> bool:
        return any((rec.get("budget") or {}).get("work") is not None for rec in self.records)


@dataclass
class Context:
    cells: list[CellView]
    cores: int

    def workers(self, cell: CellView) -> tuple[str, int] | None:
        """The worker-count param and its value (0 = one per core)."""
        for key in WORKER_KEYS:
            value = cell.params.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return key, value if value > 0 else self.cores
        return None

    def rate(self, cells: list[CellView]) -> str | None:
        names = set().union(*(c.metric_names() for c in cells)) if cells else set()
        for name in RATE_PREFERENCE:
            if name in names:
                return name
        rates = sorted(n for n in names if n.endswith("_per_s"))
        return rates[0] if rates else None

    def scaling_groups(self) -> list[tuple[str, list[tuple[int, CellView]]]]:
        """Cells that differ only in their worker count, sorted by it."""
        groups: dict[str, list[tuple[int, CellView]]] = {}
        for cell in self.cells:
            found = self.workers(cell)
            if found is None or not cell.ok:
                continue
            key, count = found
            rest = {k: v for k, v in cell.params.items() if k != key}
            group = json.dumps({"suite": cell.suite, "key": key, "params": rest}, sort_keys=True, default=str)
            groups.setdefault(group, []).append((count, cell))
        return [(key, sorted(members, key=lambda m: m[0])) for key, members in groups.items() if len(members) > 1]


def _cell_views(records: list[dict[str, Any]]) -> list[CellView]:
    views: dict[str, CellView] = {}
    for rec in records:
        view = views.get(rec["id"])
        if view is None:
            view = views[rec["id"]] = CellView(rec["id"], rec["suite"], rec.get("params", {}), [])
        view.records.append(rec)
    return list(views.values())


def _fmt(x: float) -> str:
    return f"{x:.3g}"


# ---------------------------------------------------------------------------- rules
def lost_work(ctx: Context) -> list[Finding]:
    out = []
    for cell in ctx.cells:
        for rec in cell.ok:
            m = rec.get("metrics", {})
            requested, done = _number(m.get("work_requested")), _number(m.get("work_done"))
            if requested is None or done is None or done >= requested:
                continue
            out.append(
                Finding(
                    "LOST_WORK",
                    "error",
                    [cell.id],
                    f"{done:.0f} of {requested:.0f} work units done ({requested - done:.0f} lost, repeat "
                    f"{rec.get('repeat')}): split work with split_work(total, workers) so the first total % "
                    "workers get one more, and check that no worker exits before its share is done",
                    {"work_requested": requested, "work_done": done, "repeat": rec.get("repeat")},
                )
            )
    return out


def drift(ctx: Context) -> list[Finding]:
    out = []
    suffix = "_drift_pct_per_min"
    for cell in ctx.cells:
        measure_s = cell.median("measure_s")
        if cell.fixed_work or (measure_s is not None and measure_s < DRIFT_MIN_MEASURE_S):
            continue
        drifting = {}
        for name in sorted(n for n in cell.metric_names() if n.endswith(suffix)):
            rate = name[: -len(suffix)]
            fits = []
            for rec in cell.ok:
                m = rec.get("metrics", {})
                slope, se = _number(m.get(name)), _number(m.get(f"{rate}_drift_se"))
                if slope is not None:
                    fits.append((slope, se))
            if not fits:
                continue
            significant = [s < DRIFT_PCT_PER_MIN and se is not None and abs(s) > DRIFT_SIGMAS * se for s, se in fits]
            slope = statistics.median(s for s, _ in fits)
            ses = [se for _, se in fits if se is not None]
            if slope < DRIFT_PCT_PER_MIN and 2 * sum(significant) >= len(fits) and sum(significant):
                drifting[rate] = {
                    "slope_pct_per_min": slope,
                    "se": statistics.median(ses) if ses else None,
                    "repeats_significant": sum(significant),
                    "repeats": len(fits),
                }
        if not drifting:
            continue
        # name the suite's headline rate when it drifts, else the rate that falls fastest
        primary = ctx.rate([cell])
        worst = primary if primary in drifting else min(drifting, key=lambda r: drifting[r]["slope_pct_per_min"])
        w = drifting[worst]
        se = f" ± {_fmt(w['se'])}" if w["se"] is not None else ""
        out.append(
            Finding(
                "DRIFT",
                "warning",
                [cell.id],
                f"{worst} falls {_fmt(w['slope_pct_per_min'])} %/min{se} over the measured window: something "
                "grows with time (state sent whole each batch, a growing buffer or table); send deltas or bound "
                "what each message carries, and check the series CSV for where it starts",
                {"rates": drifting, "measure_s": measure_s},
            )
        )
    return out


def _worker_devices(value: Any) -> tuple[dict[str, str], bool]:
    """`worker_devices` as {key: device}, and whether the keys are PIDs (a {pid: device} map)
    rather than positions in a list."""
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}, all(str(k).isdigit() for k in value)
    if isinstance(value, list | tuple):
        return {str(i): str(v) for i, v in enumerate(value)}, False
    return {}, False


def gpu_idle(ctx: Context) -> list[Finding]:
    out = []
    for cell in ctx.cells:
        device = cell.params.get("device")
        if not (isinstance(device, str) and device.startswith("cuda")) or not cell.ok:
            continue
        util = cell.median("gpu_util_mean")
        gpu_pids = {int(p) for rec in cell.ok for p in (rec.get("metrics", {}).get("gpu_pids") or [])}
        other_pids = {int(p) for rec in cell.ok for p in (rec.get("metrics", {}).get("gpu_other_pids") or [])}
        devices, by_pid = _worker_devices(cell.first("worker_devices"))
        evidence: dict[str, Any] = {"device": device, "gpu_util_mean": util, "gpu_pids": sorted(gpu_pids)}
        symptoms = []
        if util is None:
            reason = cell.first("gpu_reason")
            symptoms.append(f"no GPU was sampled ({reason or 'no GPU monitor'}) yet the cell ran")
            evidence["gpu_reason"] = reason
        elif util < GPU_IDLE_UTIL_PCT:
            symptoms.append(f"GPU {util:.1f} % busy")
        off_gpu = sorted(k for k, v in devices.items() if not v.startswith("cuda"))
        if off_gpu:
            evidence["worker_devices"] = devices
            symptoms.append(f"workers on {', '.join(sorted({devices[k] for k in off_gpu}))}")
        on_cuda = {int(k) for k, v in devices.items() if v.startswith("cuda")} if by_pid else set()
        # PIDs only compare when the cell's processes were found on the GPU at all: in a
        # container NVML may list host PIDs, which then show up as gpu_other_pids instead
        missing = sorted(on_cuda - gpu_pids) if gpu_pids else []
        if util is not None and not gpu_pids and not other_pids and not cell.first("gpu_pids_note"):
            symptoms.append("no process of the cell in the GPU's process list")
        elif missing:
            evidence["missing_pids"] = missing
            symptoms.append(f"{len(missing)} worker PIDs missing from the GPU's process list")
        if symptoms:
            out.append(
                Finding(
                    "GPU_IDLE",
                    "warning",
                    [cell.id],
                    f"device={device} but {'; '.join(symptoms)}: build each worker's net on the device "
                    "(spawn start method, .to(device) in the worker) or evaluate on one GPU process behind an "
                    "inference server",
                    evidence,
                )
            )
    return out


def gpu_thrash(ctx: Context) -> list[Finding]:
    out = []
    for _, members in ctx.scaling_groups():
        rate = ctx.rate([c for _, c in members])
        if rate is None:
            continue
        base_workers, base = members[0]
        base_rate = base.median(rate)
        if not base_rate:
            continue
        for workers, cell in members[1:]:
            util, value = cell.median("gpu_util_mean"), cell.median(rate)
            if util is None or value is None or util <= GPU_BUSY_UTIL_PCT or workers <= base_workers:
                continue
            per_worker = (value / workers) / (base_rate / base_workers)
            if per_worker >= THRASH_PER_WORKER_RATIO:
                continue
            procs = cell.median("gpu_procs_peak")
            contexts = f", {procs:.0f} processes on the GPU" if procs else ""
            out.append(
                Finding(
                    "GPU_THRASH",
                    "warning",
                    [base.id, cell.id],
                    f"GPU {util:.0f} % busy at {workers} workers{contexts}, yet {rate} per worker is "
                    f"{per_worker:.2f}x that of {base_workers} workers: the GPU is busy switching contexts, not "
                    "computing; share one net per GPU (an inference server batching every worker's requests)",
                    {
                        "rate": rate,
                        "gpu_util_mean": util,
                        "gpu_procs_peak": procs,
                        "gpu_mem_peak_mb": cell.median("gpu_mem_peak_mb"),
                        "workers": {base_workers: base_rate, workers: value},
                        "per_worker_ratio": per_worker,
                    },
                )
            )
    return out


def small_batches(ctx: Context) -> list[Finding]:
    out = []
    for cell in ctx.cells:
        mean_name = next((n for n in ("batch_mean", "batch_size_mean") if cell.values(n)), None)
        if mean_name is None:
            continue
        limit, source = cell.median("batch_limit"), "batch_limit"
        if limit is None:
            limit, source = _number(cell.params.get("max_batch")), "max_batch"
            backend = cell.params.get("backend")
            if backend is not None and "server" not in str(backend):
                continue  # max_batch is a server knob; other backends batch by other rules
        mean = cell.median(mean_name)
        if not limit or limit <= 1 or mean is None or mean >= SMALL_BATCH_SHARE * limit:
            continue
        remedies = [
            text
            for key, text in (
                ("workers", "more workers"),
                ("leaves", "more leaves per search"),
                ("timeout_ms", "a longer timeout_ms"),
            )
            if key in cell.params
        ] or ["more requests in flight per batch"]
        remedy = ", ".join(remedies[:-1]) + (" or " if len(remedies) > 1 else "") + remedies[-1]
        out.append(
            Finding(
                "SMALL_BATCHES",
                "warning",
                [cell.id],
                f"batch mean {_fmt(mean)} of max {limit:.0f}: {remedy}",
                {
                    mean_name: mean,
                    source: limit,
                    "batch_p95": cell.median(mean_name.replace("_mean", "_p95")),
                    **{k: cell.params[k] for k in ("workers", "leaves", "timeout_ms") if k in cell.params},
                },
            )
        )
    return out


def negative_scaling(ctx: Context) -> list[Finding]:
    out = []
    for _, members in ctx.scaling_groups():
        rate = ctx.rate([c for _, c in members])
        if rate is None:
            continue
        drops = []
        for j, (workers, cell) in enumerate(members):
            earlier = [(w, c) for w, c in members[:j] if w < workers and c.median(rate)]
            value = cell.median(rate)
            if not earlier or value is None:
                continue
            best_w, best = max(earlier, key=lambda m: m[1].median(rate) or 0.0)
            base_values, values = best.values(rate), cell.values(rate)
            interval = ratio_of_medians(base_values, values)
            if interval is None:
                continue
            if len(base_values) >= 2 and len(values) >= 2:
                lower = verdict(interval, higher_is_better=True, tolerance=SCALING_TOLERANCE) == "worse"
            else:
                lower = interval["ratio"] < 1 - SCALING_MARGIN
            if lower:
                drops.append((best_w, best, workers, cell, interval))
        if not drops:
            continue
        best_w, best, workers, cell, interval = min(drops, key=lambda d: d[4]["ratio"])
        backend = members[0][1].params.get("backend")
        via = f" with backend={backend}" if backend is not None else ""
        out.append(
            Finding(
                "NEGATIVE_SCALING",
                "warning",
                sorted({d[1].id for d in drops} | {d[3].id for d in drops}),
                f"{rate} falls from {_fmt(best.median(rate))} at {best_w} workers to {_fmt(cell.median(rate))} at "
                f"{workers}{via} ({interval['ratio']:.2f}x): more workers only add contention (the GIL for "
                f"threads, IPC, cores); run {best_w} workers, or a backend that shares less",
                {
                    "rate": rate,
                    "medians": {str(w): c.median(rate) for w, c in members},
                    "drops": [
                        {"from_workers": d[0], "to_workers": d[2], **{k: d[4][k] for k in ("ratio", "low", "high")}}
                        for d in drops
                    ],
                },
            )
        )
    return out


def busy_wait(ctx: Context) -> list[Finding]:
    out = []
    for cell in ctx.cells:
        names = cell.metric_names()
        evidence: dict[str, Any] = {}
        symptom = None
        remedy = "block on an event, condition or queue instead of polling (wait=event where the suite offers it)"
        for cpu_name in sorted(n for n in names if n.endswith("wait_cpu_s")):
            role = cpu_name[: -len("wait_cpu_s")]
            wait_name = f"{role}wait_s" if f"{role}wait_s" in names else "wait_s"
            wait, cpu = cell.median(wait_name), cell.median(cpu_name)
            if wait is None or cpu is None or wait < BUSY_WAIT_MIN_WAIT_S:
                continue
            per_s = cpu / wait
            if per_s >= BUSY_WAIT_CPU_PER_WAIT_S:
                evidence = {wait_name: wait, cpu_name: cpu, "cpu_per_wait_s": per_s}
                who = role.rstrip("_") + "s" if role else "processes"
                symptom = f"{who} burned {_fmt(cpu)} CPU s in {_fmt(wait)} s of waiting ({100 * per_s:.0f} % of a core)"
                break
        publish = cell.median("publish_share")
        if symptom is None and publish is not None and publish >= BUSY_PUBLISH_SHARE:
            evidence = {"publish_share": publish}
            symptom = f"{100 * publish:.0f} % of the time goes to publishing weights"
            remedy = "publish less often (a larger publish interval) or publish only what changed"
        share, util = cell.median("wait_share"), cell.median("cpu_util_mean")
        procs = cell.median("cpu_procs_peak")
        if symptom is None and share is not None and util is not None and procs:
            busy = util / 100.0 / min(procs, ctx.cores)
            if share >= BUSY_WAIT_SHARE and busy >= BUSY_WAIT_BUSY_FRACTION:
                evidence = {"wait_share": share, "cpu_util_mean": util, "cpu_procs_peak": procs, "busy_fraction": busy}
                symptom = (
                    f"processes wait {100 * share:.0f} % of the time yet keep {100 * busy:.0f} % of their cores busy"
                )
        # Learners that never wait can still spin: re-training on stale samples as fast as
        # they can (the seed's unthrottled learners), starving the actor that feeds them.
        ratio, learner_cpu = cell.median("replay_ratio"), cell.median("learner_cpu_s")
        actor_cpu = cell.median("main_cpu_s")
        if symptom is None and ratio is not None and learner_cpu is not None and actor_cpu:
            if ratio >= BUSY_SPIN_REPLAY_RATIO and learner_cpu >= BUSY_SPIN_CPU_FACTOR * actor_cpu:
                evidence = {"replay_ratio": ratio, "learner_cpu_s": learner_cpu, "main_cpu_s": actor_cpu}
                symptom = (
                    f"learners spin on stale data: replay ratio {ratio:.1f} and {_fmt(learner_cpu)} CPU s "
                    f"against the actor's {_fmt(actor_cpu)}"
                )
                remedy = "train only as new data arrives (throttle=true) so the actor keeps its CPU"
        if symptom is None:
            continue
        ctx_vol = cell.median("cpu_ctx_vol")
        if ctx_vol is not None:
            evidence["cpu_ctx_vol"] = ctx_vol
        out.append(
            Finding(
                "BUSY_WAIT",
                "warning",
                [cell.id],
                f"{symptom}: {remedy}",
                evidence,
            )
        )
    return out


def oversubscribed(ctx: Context) -> list[Finding]:
    from harness.errors import UserError
    from harness.registry import get_suite

    asks: dict[str, int] = {}
    for cell in ctx.cells:
        cpus = None
        try:
            suite = get_suite(cell.suite)
            cpus = suite.resources_for(suite.params.model_validate(cell.params)).cpus
        except (UserError, ValueError, TypeError):
            found = ctx.workers(cell)  # the suite cannot be loaded here: its worker count
            cpus = found[1] if found else None
        if cpus is not None and cpus > ctx.cores:
            asks[cell.id] = cpus
    if not asks:
        return []
    most = max(asks.values())
    return [
        Finding(
            "OVERSUBSCRIBED",
            "info",
            sorted(asks),
            f"{len(asks)} {'cells ask' if len(asks) > 1 else 'cell asks'} for up to {most} CPUs on {ctx.cores} "
            "cores: their rates measure contention "
            f"as well as the workload; compare scaling up to {ctx.cores} workers",
            {"cpus": asks, "cpu_cores": ctx.cores},
        )
    ]


RULES: list[Callable[[Context], list[Finding]]] = [
    lost_work,
    drift,
    gpu_idle,
    gpu_thrash,
    small_batches,
    negative_scaling,
    busy_wait,
    oversubscribed,
]


def diagnose(records: list[dict[str, Any]], meta: dict[str, Any] | None = None) -> list[Finding]:
    """Every rule over a run's records (run.json's `meta` gives the core count)."""
    from harness.workshare import usable_cores

    cores = int((meta or {}).get("cpu_cores") or usable_cores())
    ctx = Context(_cell_views(records), cores)
    findings = [f for rule in RULES for f in rule(ctx)]
    return sorted(findings, key=lambda f: SEVERITY_ORDER.get(f.severity, 9))


def diagnose_store(store: RunStore) -> list[Finding]:
    return diagnose(store.records(), store.meta())


def cmd_diagnose(run_dir: Path, as_json: bool) -> int:
    from harness.report.terminal import render_findings

    findings = diagnose_store(RunStore.open(run_dir))
    if as_json:
        print(json.dumps([f.to_json() for f in findings], indent=2, default=str))
    else:
        render_findings(findings)
    return 0
