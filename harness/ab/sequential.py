"""The A/B's statistics: an anytime-valid confidence sequence for the median block
log-ratio, and a three-way decision against the tolerance, safe to look at after every block.

The observations are block means: one block is one fresh process of each side, sliced
against each other for a few pairs, and its value is the mean of those pairs'
log(candidate rate / base rate). Blocks, not pairs, are the independent unit: a process
carries its own layout bias (two identical processes differed by 1.8 % over 100 pairs), so
pairs of one block share an offset that only fresh processes average out, and slices of
one process are autocorrelated. Pairing cancels the machine's slow phases, which hit both
sides of a pair alike.

The per-process bias is heavy-tailed on this machine: in a 45-block A/B of a planted 5 %
slowdown, 8 blocks lay 0.08-0.19 from the median of the others, whose spread was ~0.03
(docs/benchmarks.md, "A/B gate"). A test of the mean is at the mercy of those blocks (its
interval widens with every one), so the decision is about the median, with a sign test:
after n blocks, k of them below the boundary, the e-value of "more than half lie below"
against "at most half" is the likelihood ratio of Bernoulli(p) to Bernoulli(1/2) averaged
over p ~ U[1/2, 1], a nonnegative supermartingale while at most half lie below (Ville's
inequality: it ever reaches 1/alpha with probability <= alpha, however often it is looked
at). It needs no model of the noise but independent blocks, and loses little where the
blocks are normal (simulated in tests/harness/test_ab_sequential.py). Inverted over every
boundary it gives the interval: order statistics of the blocks.

The decision is Pinpoint's three-way one (different / same / unknown: significant
difference, or a difference of the given size ruled out, or more data), with the
tolerance as the boundary: "regression" when the whole interval lies below
log(1 - tolerance) (the median block slower beyond the tolerance), "ok" when it lies above
it, otherwise keep going; at the budget, "undecided" with the interval it got. A false
"regression" needs the interval to miss a true median at or above the boundary, a false
"ok" one at or below it: each has probability <= alpha.

The t-mixture confidence sequence for the mean (Lai 1976; the "safe t-test" of Grünwald, de
Heide and Koolen, and Pérez-Ortiz et al. 2022) is kept as `confidence_sequence`: it is what
the A/B first decided by, its interval is still reported next to the median's, and the
simulations compare the two.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

DEFAULT_ALPHA = 0.05
# The slowdown the decision allows; tuned by benchmarks/gate_trial.py (docs/benchmarks.md, "A/B gate").
DEFAULT_TOLERANCE = 0.03
# Prior variance of the standardized effect in the mixture. Small values give a tighter
# interval at many blocks, large ones allow a decision after fewer; 4 is near the best
# width over the 4-20 blocks an A/B gets (docs/benchmarks.md, "A/B gate").
MIXTURE_G = 4.0

Decision = Literal["regression", "ok", "continue"]
DECISIONS = ("regression", "ok", "undecided")


@dataclass(frozen=True)
class Interval:
    """The estimate of the log-ratio (candidate / base: the median of the blocks, or their
    mean for the t-mixture) and its interval, after `n` observations."""

    n: int
    estimate: float
    low: float
    high: float

    @property
    def ratio(self) -> float:
        return math.exp(self.estimate)

    def ratios(self) -> tuple[float, float, float]:
        """(ratio, low, high) as candidate / base rates."""
        return math.exp(self.estimate), math.exp(self.low), math.exp(self.high)

    def to_json(self) -> dict[str, Any]:
        ratio, low, high = self.ratios()
        return {**asdict(self), "ratio": ratio, "ratio_low": low, "ratio_high": high}


def mixture_halfwidth(n: int, sum_squares: float, alpha: float = DEFAULT_ALPHA, g: float = MIXTURE_G) -> float:
    """Half-width of the t-mixture confidence sequence after n observations whose squared
    deviations from their mean sum to `sum_squares`; inf while no mean can be rejected yet.

    With y = x - m, S = sum(y), Q = sum(y^2), the Bayes factor is
    (1 + n g)^(-1/2) * (Q / (Q - g S^2 / (1 + n g)))^(n/2); it reaches 1/alpha exactly when
    d^2 * (K g n / (1 + n g) - (K - 1)) >= (K - 1) * SS / n, with d the distance of m from
    the mean, SS = `sum_squares` and K = (sqrt(1 + n g) / alpha)^(2/n).
    """
    if n < 2 or not 0 < alpha < 1:
        return math.inf
    k = (math.sqrt(1 + n * g) / alpha) ** (2 / n)
    c = k * g * n / (1 + n * g) - (k - 1)
    if c <= 0:
        return math.inf
    return math.sqrt((k - 1) * max(sum_squares, 0.0) / (n * c))


def confidence_sequence(values: Sequence[float], alpha: float = DEFAULT_ALPHA, g: float = MIXTURE_G) -> Interval:
    """The anytime-valid interval for the mean of `values` (block log-ratios)."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if x.size == 0:
        return Interval(0, math.nan, -math.inf, math.inf)
    mean = float(x.mean())
    half = mixture_halfwidth(int(x.size), float(((x - mean) ** 2).sum()), alpha, g)
    return Interval(int(x.size), mean, mean - half, mean + half)


def sign_log_evidence(k: int, n: int) -> float:
    """log e-value that more than half of the blocks lie on one side, when k of n did: the
    likelihood ratio of Bernoulli(p) against Bernoulli(1/2), p ~ U[1/2, 1]; in closed form
    2^(n+1) * B(k+1, n-k+1) * I_(1/2)(n-k+1, k+1) (I the regularized incomplete beta)."""
    from scipy.special import betainc, betaln

    if n <= 0:
        return 0.0
    tail = float(betainc(n - k + 1, k + 1, 0.5))
    return (n + 1) * math.log(2) + float(betaln(k + 1, n - k + 1)) + math.log(max(tail, 1e-300))


def median_sequence(values: Sequence[float], alpha: float = DEFAULT_ALPHA) -> Interval:
    """The anytime-valid interval for the median of `values` (block log-ratios): every m
    that neither sign test rejects. With j the fewest blocks on one side of m that reach
    1/alpha after n blocks, it runs from the j-th largest block to the j-th smallest."""
    x = np.sort(np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float))
    n = int(x.size)
    if n == 0:
        return Interval(0, math.nan, -math.inf, math.inf)
    middle = float(np.median(x))
    needed = math.log(1 / alpha)
    j = next((k for k in range(1, n + 1) if sign_log_evidence(k, n) >= needed), None)
    if j is None:
        return Interval(n, middle, -math.inf, math.inf)
    return Interval(n, middle, float(x[n - j]), float(x[j - 1]))


@functools.cache
def blocks_to_decide(alpha: float = DEFAULT_ALPHA) -> int:
    """The fewest blocks that can decide at all: the sign test's evidence when every block
    lies on one side first reaches 1/alpha there (7 at 95 %, 4 at 80 %). Fewer blocks leave
    the interval infinite whatever they measured, so a budget that ends earlier can only
    end undecided."""
    needed = math.log(1 / alpha)
    n = 1
    while sign_log_evidence(n, n) < needed:
        n += 1
    return n


def boundary(tolerance: float) -> float:
    """The log-ratio a slowdown of exactly `tolerance` has."""
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must lie in [0, 1), got {tolerance}")
    return math.log1p(-tolerance)


def decide(interval: Interval, tolerance: float) -> Decision:
    """regression / ok / continue: where the whole interval lies against the boundary."""
    edge = boundary(tolerance)
    if interval.high < edge:
        return "regression"
    if interval.low > edge:
        return "ok"
    return "continue"


def final(decision: Decision) -> str:
    """What a decision is called once the budget is spent."""
    return "undecided" if decision == "continue" else decision


def welch_interval(base: Sequence[float], cand: Sequence[float], confidence: float = 1 - DEFAULT_ALPHA) -> Interval:
    """Fixed-sample interval of mean log(cand) - mean log(base) (Welch's t), for two sets of
    independent repeats seen once (harness compare): n is the smaller side; with fewer than
    two values on a side the interval is infinite (one number is not a distribution)."""
    from scipy import stats

    a = np.log([v for v in base if v is not None and math.isfinite(v) and v > 0])
    b = np.log([v for v in cand if v is not None and math.isfinite(v) and v > 0])
    n = int(min(a.size, b.size))
    if n == 0:
        return Interval(0, math.nan, -math.inf, math.inf)
    mean = float(b.mean() - a.mean())
    if n < 2:
        return Interval(n, mean, -math.inf, math.inf)
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    if se == 0:
        return Interval(n, mean, mean, mean)
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * se
    return Interval(n, mean, mean - half, mean + half)
