"""Gunther's Universal Scalability Law fitted to a worker axis, with bootstrap intervals.

    X(N) = lambda N / (1 + sigma (N - 1) + kappa N (N - 1))

lambda is one worker's rate, sigma the share of the work that queues for something shared
(contention: Amdahl's serial fraction), kappa the cost of keeping the workers coherent,
paid per pair of workers, which turns the curve down past its peak N* = sqrt((1 - sigma) /
kappa) (Gunther, Guerrilla Capacity Planning, ch. 4-6; Schwartz, Practical Scalability
Analysis with the USL). The usl R package fits it by nonlinear least squares and bootstraps
the data for intervals; so does this module, with choices of its own, each for a reason:

- The misses are relative (measured / fitted - 1): a shared machine's noise is a percentage
  of the rate, so a 5 % miss at 1 worker and at 16 weigh alike. Written so, the fit is a
  least squares with bounds and no local minimum: N / X(N) = d + b N + c N (N - 1) with
  d = (1 - sigma) / lambda, b = sigma / lambda, c = kappa / lambda, and the bounds sigma in
  [0, 1], kappa >= 0 are exactly d, b, c >= 0. A measured rate's relative miss is
  X_obs (d + b N + c N (N - 1)) / N - 1, linear in (d, b, c): scipy's nonnegative least
  squares solves it exactly, in 25 us. (Gunther's own fit of N / C(N) is this transform
  without the bounds and the weights; fitted in lambda, sigma, kappa directly the surface
  has local minima, and scipy's trust-region solver took 3 ms a refit, 15 s for a
  bootstrap whose refits sat on the kappa = 0 bound.)
- The bootstrap resamples each worker count's own repeats (the counts are the design, the
  repeats the noise), so an interval says how far the repeats' noise moves the fit.
- The model is tested before its numbers are given: a lack-of-fit F test compares how far
  the curve misses each count's mean with how far the count's repeats scatter (pure
  error). A cliff (threads that scale to the core count and fall off it) is not a USL
  curve, and its sigma, kappa and peak would be numbers about a curve that is not there.

Nothing here knows runs or cells: `fit` takes worker counts and their repeats' rates, so a
sweep's scaling groups (harness.analysis.scaling) and a tune's measurements fit alike.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import nnls
from scipy.stats import f as f_distribution

CONFIDENCE = 0.95
RESAMPLES = 400  # bootstrap refits of a group (~30 ms): a 95 % percentile interval's ends settle by then
MIN_COUNTS = 4  # three parameters: a fourth count is the first the model could miss
WARN_COUNTS = 3  # fitted, but untestable: three parameters pass near any three points
LACK_OF_FIT_ALPHA = 0.01  # a curve the repeats reject at this level does not fit
ZERO = 1e-9  # sigma or kappa whose term moves no count's denominator by more than this is 0

FITS = "fits"
NO_FIT = "does not fit"
TOO_FEW = "too few counts"
REFUSED = "not fitted"


@dataclass(frozen=True)
class Usl:
    """One curve: one worker's rate, contention and coherency."""

    rate1: float
    sigma: float
    kappa: float

    def rate(self, workers: float | np.ndarray) -> Any:
        n = np.asarray(workers, dtype=float)
        return self.rate1 * n / (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0))

    @property
    def peak(self) -> float | None:
        """N* = sqrt((1 - sigma) / kappa), the count of the highest rate, and at least one
        worker (with sigma near 1 the formula's peak lies below one: no second worker helps);
        None without kappa (the rate then rises for ever, ever more slowly, toward
        rate1 / sigma)."""
        if self.kappa <= 0:
            return None
        return max(1.0, math.sqrt((1.0 - self.sigma) / self.kappa))


@dataclass(frozen=True)
class Interval:
    """A point estimate and its bootstrap percentile interval (None, None: no interval,
    for want of repeats)."""

    value: float
    low: float | None = None
    high: float | None = None

    def holds(self, x: float) -> bool:
        return self.low is not None and self.high is not None and self.low <= x <= self.high

    def to_json(self) -> dict[str, float | None]:
        return {"value": self.value, "low": self.low, "high": self.high}


@dataclass(frozen=True)
class Band:
    """The fitted rate at some worker counts and its band (None: no intervals)."""

    workers: np.ndarray
    rate: np.ndarray
    low: np.ndarray | None
    high: np.ndarray | None


@dataclass
class UslFit:
    """What the USL says of one worker axis, or why it says nothing.

    `status` is FITS (numbers follow), NO_FIT (the lack-of-fit test rejects the curve:
    `reason` says where it misses), TOO_FEW (under WARN_COUNTS counts) or REFUSED (data
    the model cannot take: a zero rate). Intervals have no ends and `draws` is None when
    no count has two repeats (nothing says how noisy the rates are).
    """

    status: str
    counts: list[int]
    repeats: list[int]
    means: list[float]  # each count's geometric mean rate
    reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    model: Usl | None = None  # also kept when it does not fit: its misses are the reason
    sigma: Interval | None = None
    kappa: Interval | None = None
    peak: Interval | None = None  # workers
    peak_rate: Interval | None = None
    no_peak: str | None = None  # why there is no peak to quote
    lack_of_fit_p: float | None = None
    confidence: float = CONFIDENCE
    draws: np.ndarray | None = field(default=None, repr=False)  # bootstrap (rate1, sigma, kappa) rows

    @property
    def ok(self) -> bool:
        return self.status == FITS and self.model is not None

    def predict(self, workers: float | Sequence[float] | np.ndarray) -> Band:
        """The fitted rate at these counts and its band: the percentiles of the refitted
        curves, where the mean rate lies (one run lands as far again off it as its noise)."""
        if not self.ok:
            raise ValueError(f"no curve to predict from: the USL {self.status} ({self.reason})")
        assert self.model is not None
        n = np.atleast_1d(np.asarray(workers, dtype=float))
        rate = np.asarray(self.model.rate(n), dtype=float)
        if self.draws is None:
            return Band(n, rate, None, None)
        curves = _curves(self.draws, n)
        alpha = (1.0 - self.confidence) / 2
        return Band(n, rate, np.quantile(curves, alpha, axis=0), np.quantile(curves, 1 - alpha, axis=0))

    def least_certain(self, candidates: Sequence[int]) -> int:
        """The candidate count a measurement would teach the model most about: the one whose
        band is widest relative to its rate. Without a band to read (too few counts, a curve
        that does not fit, single repeats) the candidate farthest from every count measured,
        on the log scale worker counts are usually spaced on."""
        if not candidates:
            raise ValueError("no candidate worker counts")
        cands = [int(c) for c in candidates]
        if self.ok and self.draws is not None:
            band = self.predict(cands)
            assert band.low is not None and band.high is not None
            width = (band.high - band.low) / np.maximum(band.rate, 1e-300)
            return cands[int(np.argmax(width))]
        measured = np.log2(np.asarray(self.counts or [1], dtype=float))
        return max(cands, key=lambda c: float(np.min(np.abs(np.log2(max(c, 1)) - measured))))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status,
            "reason": self.reason,
            "warnings": list(self.warnings),
            "counts": self.counts,
            "repeats": self.repeats,
            "confidence": self.confidence,
            "lack_of_fit_p": self.lack_of_fit_p,
            "no_peak": self.no_peak,
            "rate1": self.model.rate1 if self.model is not None else None,
        }
        for name in ("sigma", "kappa", "peak", "peak_rate"):
            found = getattr(self, name)
            out[name] = found.to_json() if found is not None else None
        return out


def fit(
    data: Mapping[int, Sequence[float]],
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    cores: int | None = None,
) -> UslFit:
    """The USL fitted to `data` (worker count -> its repeats' rates), tested, bootstrapped.

    `cores`, when given, is named in a misfit's reason (a break at the core count is the
    usual cause). Seeded, so a report says the same every time it is written.
    """
    counts = sorted(int(n) for n, values in data.items() if len(values) > 0)
    if any(n < 1 for n in counts):
        raise ValueError(f"worker counts must be 1 or more, got {counts}")
    values = [np.asarray(data[n], dtype=float) for n in counts]
    repeats = [len(v) for v in values]
    stalled = [n for n, v in zip(counts, values, strict=True) if not np.all(np.isfinite(v) & (v > 0))]
    means = [float(np.exp(np.log(v).mean())) if n not in stalled else 0.0 for n, v in zip(counts, values, strict=True)]
    out = UslFit(TOO_FEW, counts, repeats, means, confidence=confidence)
    if stalled:
        out.status = REFUSED
        out.reason = f"no finite throughput at {_workers(stalled)}: the USL does not model a stall"
        return out
    if len(counts) < WARN_COUNTS:
        out.reason = f"{_counted(len(counts))}: the USL needs {MIN_COUNTS} ({WARN_COUNTS} with a warning)"
        return out
    if len(counts) < MIN_COUNTS:
        out.warnings.append(
            f"{_counted(len(counts))} only: a curve of three parameters through three points is untested; "
            f"measure {MIN_COUNTS} or more"
        )
    n = np.asarray(counts, dtype=float)
    logs = [np.log(v) for v in values]
    point = _fit_rows(n, values)
    if point is None:
        out.status = REFUSED
        out.reason = "no curve with sigma in [0, 1] and kappa >= 0 has a finite one-worker rate through these rates"
        return out
    out.model, out.status = point, FITS
    pure_dof = sum(r - 1 for r in repeats)
    if pure_dof == 0:
        out.warnings.append(
            "one repeat per count: no intervals and no test of the fit (the repeats' scatter is both); run --repeats 3"
        )
        _intervals(out, n)
        return out
    residuals = [v - v.mean() for v in logs]
    out.lack_of_fit_p = _lack_of_fit(n, logs, point, pure_dof)
    if out.lack_of_fit_p is not None and out.lack_of_fit_p < LACK_OF_FIT_ALPHA:
        out.status = NO_FIT
        out.reason = _misfit_reason(counts, logs, point, out.lack_of_fit_p, cores)
        return out
    out.draws = _bootstrap(n, logs, residuals, resamples, seed)
    _intervals(out, n)
    if out.kappa is not None and out.kappa.holds(0.0):
        _widen_sigma(out, _bootstrap(n, logs, residuals, resamples, seed, coherency=False))
    return out


def _counted(k: int) -> str:
    return f"{k} worker count{'s' if k != 1 else ''}"


def _workers(counts: Sequence[int]) -> str:
    return f"{', '.join(map(str, counts))} worker{'s' if counts[-1] != 1 else ''}"


def _fit_rows(n: np.ndarray, values: Sequence[np.ndarray]) -> Usl | None:
    """The least squares of every repeat's relative miss (`values`: each count's repeats);
    None when the fit leaves no one-worker rate."""
    counts = np.concatenate([np.full(len(v), c) for c, v in zip(n, values, strict=True)])
    found = _solve(counts, np.concatenate(values)[None, :], float(n.max()))[0]
    return Usl(*(float(v) for v in found)) if np.all(np.isfinite(found)) else None


def _solve(counts: np.ndarray, measured: np.ndarray, top: float, coherency: bool = True) -> np.ndarray:
    """Each row of `measured` (one rate per entry of `counts`) fitted by scipy's nonnegative
    least squares in (d, b, c) (the module's docstring) -> rows of (rate1, sigma, kappa);
    a row of NaN where the fit leaves no one-worker rate (d = b = 0: only the coherency
    term, a curve infinite at one worker). Without `coherency`, Amdahl's law (c = 0)."""
    columns = [np.ones_like(counts), counts] + ([counts * (counts - 1.0)] if coherency else [np.zeros_like(counts)])
    terms = np.column_stack(columns) / counts[:, None]
    target = np.ones_like(counts)
    out = np.full((len(measured), 3), np.nan)
    for i, row in enumerate(measured):
        design = row[:, None] * terms
        scale = design.max(axis=0)  # columns of 1 and of N(N - 1) differ 10^4-fold at 128 workers
        scale[scale == 0] = 1.0
        d, b, c = nnls(design / scale, target)[0] / scale
        if d + b <= 0:
            continue
        sigma, kappa = b / (d + b), c / (d + b)
        # rounding's leftovers (5e-17) are zeros: a term that moves no count's rate by 1e-9
        out[i] = (
            1.0 / (d + b),
            sigma if sigma * (top - 1.0) > ZERO else 0.0,
            kappa if kappa * top * (top - 1.0) > ZERO else 0.0,
        )
    return out


def _lack_of_fit(n: np.ndarray, logs: list[np.ndarray], model: Usl, pure_dof: int) -> float | None:
    """The p-value of the lack-of-fit F test on the log scale: the curve's misses of the
    counts' means (k - 3 degrees of freedom) against the repeats' scatter about them (pure
    error). None when the curve has no freedom left to miss (3 counts)."""
    lof_dof = len(n) - 3
    if lof_dof < 1:
        return None
    fitted = np.log(model.rate(n))
    lof = float(sum(len(v) * (v.mean() - f) ** 2 for v, f in zip(logs, fitted, strict=True)))
    pure = float(sum(np.sum((v - v.mean()) ** 2) for v in logs))
    if pure <= 0:
        return 1.0 if lof <= 1e-18 else 0.0
    statistic = (lof / lof_dof) / (pure / pure_dof)
    return float(f_distribution.sf(statistic, lof_dof, pure_dof))


def _misfit_reason(counts: list[int], logs: list[np.ndarray], model: Usl, p: float, cores: int | None) -> str:
    """Where the curve misses most, by how much, against how far that count's repeats
    scatter; and what the misses look like: a rate per worker that rises (superlinear: the
    USL's terms only take away), or a break at the core count."""
    means = np.asarray([v.mean() for v in logs])
    n = np.asarray(counts, dtype=float)
    misses = means - np.log(model.rate(n))
    worst = int(np.argmax(np.abs(misses)))
    values = np.exp(logs[worst])
    spread = 100.0 * float(np.ptp(values) / np.median(values))
    off = 100.0 * math.expm1(float(misses[worst]))
    said = (
        f"the rate at {_workers([counts[worst]])} lies {abs(off):.0f} % {'above' if off > 0 else 'below'} the curve "
        f"where its {len(values)} repeats spread {spread:.0f} % (lack-of-fit test p {p:.2g})"
    )
    per_worker = np.diff(means - np.log(n))
    rising = [i for i, step in enumerate(per_worker) if step > math.log(1.1)]
    if rising:
        i = rising[0]
        said += (
            f"; the rate per worker rises from {counts[i]} to {counts[i + 1]} workers, which no USL curve does "
            "(on a shared machine more threads also win more of its CPU)"
        )
    elif cores is not None and counts[0] <= cores < counts[-1]:
        below = max(c for c in counts if c <= cores)
        above = min(c for c in counts if c > cores)
        if counts[worst] in (below, above):
            said += f"; a break at the core count ({cores}) is no USL curve"
    return said


def _bootstrap(
    n: np.ndarray,
    logs: list[np.ndarray],
    residuals: list[np.ndarray],
    resamples: int,
    seed: int,
    coherency: bool = True,
) -> np.ndarray:
    """Refits with each count's repeats resampled with replacement, as (rate1, sigma, kappa)
    rows.

    Two corrections keep the intervals honest with the three repeats a sweep has. A
    resample of n values varies (n - 1) / n as much as the values do: each count's
    residuals (about its mean, on the log scale) are spread by sqrt(n / (n - 1)) first. And
    three repeats' scatter is itself a guess of two degrees of freedom, often a small one;
    kappa rests mostly on the largest counts, so their guesses alone would set its interval:
    a count scattering less than all counts pooled is spread to the pooled scatter (the
    coverage each correction buys: docs/records/2026-11-26-scaling-model.md). A count with
    one repeat borrows the pooled residuals."""
    rng = np.random.default_rng(seed)
    spread = [r * math.sqrt(len(r) / (len(r) - 1)) if len(r) > 1 else None for r in residuals]
    pooled = np.concatenate([s for s in spread if s is not None])
    pooled_sd = math.sqrt(float(np.mean(pooled**2)))
    drawn = []
    for v, s in zip(logs, spread, strict=True):
        own_sd = math.sqrt(float(np.mean(s**2))) if s is not None else 0.0
        source = pooled if own_sd == 0 else s * max(1.0, pooled_sd / own_sd)
        drawn.append(np.exp(v.mean() + rng.choice(source, size=(resamples, len(v)), replace=True)))
    counts = np.concatenate([np.full(len(v), c) for c, v in zip(n, logs, strict=True)])
    found = _solve(counts, np.concatenate(drawn, axis=1), float(n.max()), coherency)
    return found[np.all(np.isfinite(found), axis=1)]


def _curves(draws: np.ndarray, n: np.ndarray) -> np.ndarray:
    rate1, sigma, kappa = (draws[:, i : i + 1] for i in range(3))
    return rate1 * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))


def _intervals(out: UslFit, n: np.ndarray) -> None:
    """sigma and kappa, and the peak and its rate where kappa's interval excludes 0."""
    model = out.model
    assert model is not None
    if out.draws is None or len(out.draws) == 0:
        out.sigma, out.kappa = Interval(model.sigma), Interval(model.kappa)
        if model.peak is None:
            out.no_peak = "kappa is 0, nothing measured turns down"
        else:
            out.peak, out.peak_rate = Interval(model.peak), Interval(float(model.rate(model.peak)))
        _past(out, n)
        return
    alpha = (1.0 - out.confidence) / 2
    qs = (alpha, 1.0 - alpha)
    sigmas, kappas = out.draws[:, 1], out.draws[:, 2]
    out.sigma = Interval(model.sigma, *(float(q) for q in np.quantile(sigmas, qs)))
    out.kappa = Interval(model.kappa, *(float(q) for q in np.quantile(kappas, qs)))
    if (out.kappa.low is not None and out.kappa.low <= 0) or model.peak is None:
        out.no_peak = "kappa's interval holds 0"
        return
    peaks = np.full(len(kappas), np.inf)
    np.divide(1.0 - sigmas, kappas, out=peaks, where=kappas > 0)
    peaks = np.maximum(np.sqrt(peaks), 1.0)
    # each refit's rate at its own peak; at its limit rate1 / sigma where it has none
    finite = np.where(np.isfinite(peaks), peaks, 1.0)
    limits = np.full(len(sigmas), np.inf)
    np.divide(out.draws[:, 0], sigmas, out=limits, where=sigmas > 0)
    rates = np.where(
        np.isfinite(peaks),
        out.draws[:, 0] * finite / (1.0 + sigmas * (finite - 1.0) + kappas * finite * (finite - 1.0)),
        limits,
    )
    peak_lo, peak_hi = np.quantile(peaks, qs, method="inverted_cdf")
    rate_lo, rate_hi = np.quantile(rates, qs, method="inverted_cdf")
    if not (np.isfinite(peak_hi) and np.isfinite(rate_hi)):  # over alpha of the refits never turn down
        out.no_peak = "kappa's interval barely leaves 0, the peak has no upper bound"
        return
    out.peak = Interval(model.peak, float(peak_lo), float(peak_hi))
    out.peak_rate = Interval(float(model.rate(model.peak)), float(rate_lo), float(rate_hi))
    _past(out, n)


def _widen_sigma(out: UslFit, amdahl: np.ndarray) -> None:
    """When kappa's interval holds 0 the data cannot tell the USL from Amdahl's law, and
    sigma's interval spans what both say. Fitted with kappa free, kappa > 0 takes some of
    the bend sigma would explain (the two trade off), so on data with no kappa the USL's
    sigma runs low and its interval held the truth in 88 % of 200 draws; with Amdahl's
    refits beside it, in 92.5 % (docs/records/2026-11-26-scaling-model.md)."""
    if out.sigma is None or out.sigma.low is None or out.sigma.high is None or len(amdahl) == 0:
        return
    alpha = (1.0 - out.confidence) / 2
    low, high = np.quantile(amdahl[:, 1], (alpha, 1.0 - alpha))
    out.sigma = Interval(out.sigma.value, min(out.sigma.low, float(low)), max(out.sigma.high, float(high)))


def _past(out: UslFit, n: np.ndarray) -> None:
    if out.peak is not None and out.peak.value > n.max():
        out.warnings.append(f"the peak lies past the largest count measured ({int(n.max())}): an extrapolation")
