"""Which way is better for a metric: higher, lower, or unknown (None).

The name carries the answer (DESIGN.md names metrics with their unit): rates and batch
sizes are better higher; times, latencies, memory and distances from equilibrium are
better lower. Metrics whose good direction depends on the workload (CPU and GPU
utilisation, drift slopes, work accounting) return None, so a gate never guesses.
"""

from __future__ import annotations

import re
from typing import Literal

Direction = Literal["higher", "lower"]

# Checked in order; the first pattern that matches decides.
_RULES: tuple[tuple[str, Direction | None], ...] = (
    (r"_drift_pct_per_min$", None),  # a slope: either sign can be bad
    (r"^work_(done|requested)$", None),  # correctness, compared exactly
    (r"_util(_|$)", None),  # busy is good or bad depending on what it is busy with
    (r"^(cpu|gpu)_(procs|pids|monitor)", None),
    (r"_per_(s|min|h)$", "higher"),
    (r"^batch(_size)?_(mean|p50|p95|max|min)$", "higher"),
    (r"^mean_return$", "higher"),
    (r"^(exploitability|nash_conv)(_|$)", "lower"),
    (r"(^|_)(ms|us|ns|s)(_|$)", "lower"),  # wall_s, wait_ms_p95, queue_rtt_us_p50
    (r"(^|_)(mb|gb|bytes)(_|$)", "lower"),  # rss_peak_mb, gpu_mem_peak_mb
    (r"^policy_lag", "lower"),
)


def direction(metric: str) -> Direction | None:
    """'higher' or 'lower' is better for `metric`; None when the name does not say."""
    for pattern, answer in _RULES:
        if re.search(pattern, metric):
            return answer
    return None


def is_throughput(metric: str) -> bool:
    """A rate of work over the measured window (what --normalize divides)."""
    return direction(metric) == "higher" and bool(re.search(r"_per_(s|min|h)$", metric))
