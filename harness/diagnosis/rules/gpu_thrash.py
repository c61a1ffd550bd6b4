"""GPU_THRASH (warning): the GPU is busy while the work per worker collapses.

Over cells that differ only in their worker count: `gpu_util_mean` above BUSY_UTIL_PCT at
more workers while the headline rate per worker falls below PER_WORKER_RATIO of the
fewest-workers cell's: many processes with a CUDA context each keep the GPU switching
contexts instead of computing. Evidence adds `gpu_procs_peak` and `gpu_mem_peak_mb`.
"""

from __future__ import annotations

from harness.diagnosis.findings import Finding
from harness.diagnosis.needs import COMPARED, Needs
from harness.runs.view import RunView

RULE = "GPU_THRASH"
NEEDS = Needs(rate=COMPARED, free_cores=True)  # worker counts compared: the cores must be the program's
BUSY_UTIL_PCT = 90.0
PER_WORKER_RATIO = 0.5
REMEDY = "share one net per GPU (an inference server batching every worker's requests)"


def check(view: RunView) -> list[Finding]:
    out = []
    for members in view.scaling_groups():
        rate = view.rate([c for _, c in members])
        if rate is None:
            continue
        base_workers, base = members[0]
        base_rate = base.median(rate)
        if not base_rate:
            continue
        for workers, cell in members[1:]:
            util, value = cell.median("gpu_util_mean"), cell.median(rate)
            if util is None or value is None or util <= BUSY_UTIL_PCT or workers <= base_workers:
                continue
            per_worker = (value / workers) / (base_rate / base_workers)
            if per_worker >= PER_WORKER_RATIO:
                continue
            procs = cell.median("gpu_procs_peak")
            contexts = f", {procs:.0f} processes on the GPU" if procs else ""
            out.append(
                Finding(
                    RULE,
                    "warning",
                    [base.id, cell.id],
                    f"GPU {util:.0f} % busy at {workers} workers{contexts}, yet {rate} per worker is "
                    f"{per_worker:.2f}x that of {base_workers} workers: the GPU is busy switching contexts, not "
                    f"computing; {cell.vocabulary.remedy('gpu_thrash', REMEDY)}",
                    {
                        "rate": rate,
                        "gpu_util_mean": util,
                        "gpu_procs_peak": procs,
                        "gpu_mem_peak_mb": cell.median("gpu_mem_peak_mb"),
                        "change": {
                            "metric": rate,
                            "before": base_rate,
                            "before_at": base_workers,
                            "after": value,
                            "after_at": workers,
                            "at": cell.vocabulary.workers,
                        },
                        "per_worker_ratio": per_worker,
                    },
                )
            )
    return out
