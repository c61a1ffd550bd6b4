"""Statistics over measured numbers: drift slopes, medians, bootstrap intervals, weighted
quantiles.

Repeats give a distribution and comparisons are made on ratios of medians with
bootstrap intervals, never on single numbers (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

DRIFT_BLOCK = 10  # samples per block for the autocorrelation-aware standard error, at least ...
DRIFT_BLOCK_S = 10.0  # ... and seconds per block at least (a log printing 400 rates a second)
HIST_MAX_DISTINCT = 512  # integer-valued weighted values with at most this many values get a histogram


class Drift(NamedTuple):
    """A rate's least-squares slope, % of its mean per minute, its standard error, and the
    degrees of freedom that error rests on (a few blocks' worth: judge it by Student's t)."""

    slope_pct_per_min: float
    se: float
    dof: int


def drift_pct_per_min(times_s: Sequence[float], rates: Sequence[float]) -> Drift | None:
    """Least-squares slope of `rates` against `times_s`, as % of the mean rate per minute,
    with its standard error in the same unit. None when there is too little to fit.

    The standard error is the larger of the plain fit's and that of the same fit on means of
    consecutive blocks of DRIFT_BLOCK samples spanning DRIFT_BLOCK_S at least (with at least
    3 blocks). One-second rates on a shared VM are autocorrelated (0.4-0.5 at lags of 1-8 s,
    benchmarks/machine_noise.py), and the plain fit, which assumes independent samples, then
    understates the error about 3x, so a slow wander of the machine would pass for a drift of
    the workload. Blocks are as long in time whatever the sampling: a tqdm bar's it/s read 400
    times a second in 10-sample blocks of 25 ms gave Lightning's flat-but-phased rate a slope
    of -31.6 %/min with a standard error of 3.3 (DRIFT), 20 with 10 s blocks."""
    t = np.asarray(times_s, dtype=float)
    r = np.asarray(rates, dtype=float)
    if t.size < 3 or np.ptp(t) <= 0:
        return None
    mean = float(r.mean())
    if mean <= 0:
        return None
    slope, stderr = _line_fit(t, r)
    dof = t.size - 2
    size = max(DRIFT_BLOCK, round(DRIFT_BLOCK_S * (t.size - 1) / float(np.ptp(t))))
    blocks = t.size // size
    if blocks >= 3:
        used = blocks * size
        block_t = t[:used].reshape(blocks, size).mean(axis=1)
        block_r = r[:used].reshape(blocks, size).mean(axis=1)
        _, block_stderr = _line_fit(block_t, block_r)
        if np.isfinite(block_stderr) and block_stderr > stderr:
            stderr, dof = block_stderr, blocks - 2
    scale = 60.0 * 100.0 / mean
    return Drift(slope * scale, stderr * scale, dof)


def t_quantile(dof: int, level: float = 0.975) -> float:
    """Student's t quantile (scipy.special, imported here only: the harness's own process
    asks for it when a drift's error rests on a few blocks)."""
    from scipy.special import stdtrit

    return float(stdtrit(dof, level))


def _line_fit(t: np.ndarray, v: np.ndarray) -> tuple[float, float]:
    """Least-squares slope of `v` on `t` and its standard error (what scipy.stats.linregress
    gives), in closed form with numpy: the CPU monitor and the log-rate monitor fit in the
    harness's own process at every cell's end, and importing scipy.stats there cost 1.5 s per
    command (the test suite ran 100 s longer). At least 3 points, `t` not constant."""
    dt = t - t.mean()
    sxx = float(dt @ dt)
    slope = float(dt @ (v - v.mean())) / sxx
    residuals = v - v.mean() - slope * dt
    return slope, (float(residuals @ residuals) / (t.size - 2) / sxx) ** 0.5


def rise(times_s: Sequence[float], values: Sequence[float]) -> tuple[float, float] | None:
    """How much higher a series ends than it starts, from its least-squares line (slope
    times the span), with the standard error in the same unit; None with too little to fit."""
    t = np.asarray(times_s, dtype=float)
    v = np.asarray(values, dtype=float)
    if t.size < 3 or np.ptp(t) <= 0:
        return None
    slope, stderr = _line_fit(t, v)
    span = float(np.ptp(t))
    return slope * span, stderr * span


BOOTSTRAP_RESAMPLES = 2000


def ratio_of_medians(
    baseline: Sequence[float],
    candidate: Sequence[float],
    confidence: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> dict[str, float] | None:
    """candidate median / baseline median with a bootstrap percentile interval.

    Each side is resampled with replacement on its own (the repeats are independent runs),
    and the ratio of the resampled medians gives the interval. With a single repeat on a
    side the interval collapses to the point: one number is not a distribution, and the
    caller should say so rather than call it significant. Seeded, so a report is stable.
    """
    a = np.asarray([x for x in baseline if x is not None and np.isfinite(x)], dtype=float)
    b = np.asarray([x for x in candidate if x is not None and np.isfinite(x)], dtype=float)
    if a.size == 0 or b.size == 0 or np.median(a) == 0:
        return None
    rng = np.random.default_rng(seed)
    med_a = np.median(rng.choice(a, size=(resamples, a.size), replace=True), axis=1)
    med_b = np.median(rng.choice(b, size=(resamples, b.size), replace=True), axis=1)
    valid = med_a != 0
    ratios = med_b[valid] / med_a[valid]
    alpha = (1 - confidence) / 2
    out = {
        "ratio": float(np.median(b) / np.median(a)),
        "low": float(np.quantile(ratios, alpha)),
        "high": float(np.quantile(ratios, 1 - alpha)),
        "n_baseline": float(a.size),
        "n_candidate": float(b.size),
    }
    if a.size >= 3 and b.size >= 3:
        from scipy.stats import mannwhitneyu

        out["p_value"] = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return out


def verdict(interval: dict[str, float], higher_is_better: bool, tolerance: float = 0.0) -> str:
    """better / worse / same: only when the whole interval lies beyond the tolerance."""
    if interval["low"] > 1 + tolerance:
        return "better" if higher_is_better else "worse"
    if interval["high"] < 1 - tolerance:
        return "worse" if higher_is_better else "better"
    return "same"


def spread_pct(values: Sequence[float]) -> float | None:
    """(max - min) / median in %, or None with fewer than two values or a zero median."""
    if len(values) < 2:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return 100.0 * (ordered[-1] - ordered[0]) / abs(median) if median else None


def weighted_quantiles(values: Sequence[float], weights: Sequence[float], qs: Sequence[float]) -> list[float]:
    """For each q in [0, 1], the smallest value whose cumulative weight reaches q of the total
    (the inverted CDF: numpy's `percentile(..., weights=w, method="inverted_cdf")`, which
    numpy before 2.0 lacks); always one of the values, never an interpolation between two
    batch sizes. Values of weight <= 0 are left out; [] when no weight is left."""
    v, w = _weighted(values, weights)
    return _inverted_cdf(v, np.cumsum(w), qs) if v.size else []


def weighted_summary(name: str, values: Sequence[float], weights: Sequence[float]) -> dict[str, Any]:
    """`<name>_count` (the total weight), `_mean`, `_p50`, `_p95`, `_max`, and `_hist`
    ({value: weight}) when the values are at most HIST_MAX_DISTINCT distinct integers: the
    summary of an observed quantity (a probe's observations, the torch hook's batch sizes).
    Values of weight <= 0 are left out; only `_count` 0 when nothing is left."""
    v, w = _weighted(values, weights)
    if v.size == 0:
        return {f"{name}_count": 0}
    cumulative = np.cumsum(w)
    total = float(cumulative[-1])
    p50, p95 = _inverted_cdf(v, cumulative, (0.50, 0.95))
    out: dict[str, Any] = {
        f"{name}_count": total,
        f"{name}_mean": float(np.dot(v, w) / total),
        f"{name}_p50": p50,
        f"{name}_p95": p95,
        f"{name}_max": float(v[-1]),
    }
    distinct, inverse = np.unique(v, return_inverse=True)
    if distinct.size <= HIST_MAX_DISTINCT and np.all(distinct == np.round(distinct)):
        counts = np.bincount(inverse, weights=w)
        out[f"{name}_hist"] = {str(int(d)): float(c) for d, c in zip(distinct, counts, strict=True)}
    return out


def _weighted(values: Sequence[float], weights: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """The values of positive weight and their weights, sorted by value (stable)."""
    v, w = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    keep = w > 0
    v, w = v[keep], w[keep]
    order = np.argsort(v, kind="stable")
    return v[order], w[order]


def _inverted_cdf(v: np.ndarray, cumulative: np.ndarray, qs: Sequence[float]) -> list[float]:
    """The quantiles of sorted values `v` with cumulative weights `cumulative`."""
    total = float(cumulative[-1])
    return [float(v[min(int(np.searchsorted(cumulative, q * total)), v.size - 1)]) for q in qs]


def spread_summary(values: Sequence[float]) -> dict[str, float]:
    """count, quartiles and extremes: evidence over many processes, not one row each."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return {"count": 0}
    q = np.quantile(x, [0.0, 0.25, 0.5, 0.75, 1.0])
    return {
        "count": int(x.size),
        **{k: round(float(v), 3) for k, v in zip(("min", "p25", "median", "p75", "max"), q, strict=True)},
    }
