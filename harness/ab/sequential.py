"""The A/B's statistics: an anytime-valid confidence sequence for the centre of the block
log-ratios, from clipped bets, and a three-way decision against the tolerance, safe to look
at after every block.

The observations are block means: one block is one fresh process of each side, sliced
against each other for a few pairs, and its value is the mean of those pairs'
log(candidate rate / base rate), per estimand (the wall-clock rate, or the rate per CPU
second and without run-queue waits: harness.ab.slicing). Blocks, not pairs, are the
independent unit: a process carries its own layout bias (two identical processes differed by
1.8 % over 100 pairs), so pairs of one block share an offset that only fresh processes
average out. Pairing cancels the machine's slow phases, which hit both sides of a pair alike.

The per-process bias is heavy-tailed on this machine: in a 45-block A/B of a planted 5 %
slowdown, 8 blocks lay 0.08-0.19 from the median of the others, whose spread was ~0.03 (the
2026-11-23 campaign: 11 % of spin's blocks beyond 3 robust sds). A test of the mean is at the
mercy of those blocks (its interval widens with every one). So the test bets: before each
block a bettor stakes a fraction f of its wealth on "this block lies above m", and wins or
loses f x d, d = (value - m) / c clipped to [-1, 1], c set by the blocks before this one only
(CLIP_K robust sds): the bulk of the blocks is bet on by its distance, a process 20 % off is
one full bet. Its wealth, mixed over f (BET_FRACTIONS, BET_WEIGHTS), is a nonnegative
supermartingale while E[d | the past] <= 0, which holds whenever the block is symmetric
about a true log-ratio at or below m, whatever its tails and scale: and an A/B's blocks are
symmetric about the truth when each side's fresh processes draw their bias from one
distribution and the pair order is random. By Ville's inequality it ever reaches 1/alpha with
probability <= alpha, however often it is looked at; likewise the bettor on "below m". The
interval is every m neither bettor has won at; with several estimands its low end needs
every estimand's bettor, its high end the mean of their wealths (a mean of test martingales
is one). The sign test on the median (what decided until 2026-11-26, still computed as
`median_sequence` and reported) is this at c = 0 with a uniform mixture over f; the
distances and the tilt of the mixture towards bold bets made decisions sooner in simulation
and on the campaign's recorded blocks (docs/records/2026-11-26-gate-decides.md).

The decision is Pinpoint's three-way one (different / same / unknown), with the tolerance as
the boundary: "regression" when the whole interval lies below log(1 - tolerance), "ok" when
it lies above it, otherwise keep going; at the budget, "undecided" with the interval it got.
A false "regression" needs the interval to miss a true log-ratio at or above the boundary, a
false "ok" one at or below it: each has probability <= alpha (simulated in
tests/harness/test_ab_sequential.py, with heavy and two-point tails).

The t-mixture confidence sequence for the mean (Lai 1976; the "safe t-test" of Grünwald, de
Heide and Koolen, and Pérez-Ortiz et al. 2022) is kept as `confidence_sequence`: it is what
the A/B first decided by, its interval is still reported, and the simulations compare it.
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


# ---------------------------------------------------------------- the clipped bets (the decision)

# The bets' fractions: a mixture over (0, 1) with density 2 f (a Beta(2, 1) prior), as a fixed
# grid with fixed weights. A mixture of test martingales with weights fixed in advance is one;
# the grid's midpoints keep every factor 1 + f d above zero for d >= -1. The tilt towards
# bold bets lets 6 blocks all on one side decide (7 with a uniform mixture, the sign test's)
# and decided more A/Bs within 20 blocks in every model tried (the record of 2026-11-26).
BET_FRACTIONS = (np.arange(32) + 0.5) / 32
BET_WEIGHTS = BET_FRACTIONS / BET_FRACTIONS.sum()
# A block is clipped at CLIP_K robust standard deviations of the blocks before it (1.4826 x
# their median absolute deviation): the bulk of the blocks is bet on by its distance, a process
# 20 % off counts as one full bet, no more. With this machine's tails (11 % of spin blocks
# beyond 3 robust sds) a small k did best and larger ones lost to the sign test (k = 0.5 to
# 2.5 simulated and replayed: docs/records/2026-11-26-gate-decides.md).
CLIP_K = 0.5
CLIP_FLOOR = 0.002  # a scale under 0.2 % of the log-ratio: the blocks are that close, clip there
PAST_FOR_SCALE = 2  # blocks before a scale is estimated; before that a block is bet by its sign


def clip_scales(values: np.ndarray, k: float = CLIP_K) -> np.ndarray:
    """The clipping scale of every block from the blocks before it only (so every bet is
    placed before its block is seen): next_scale of those. Rows are A/Bs (a 1-D array is
    one A/B); nan values (no rate) are left out."""
    x = np.atleast_2d(np.asarray(values, dtype=float))
    out = np.zeros_like(x)
    finite = bool(np.isfinite(x).all())
    for i in range(PAST_FOR_SCALE, x.shape[1]):
        out[:, i] = next_scale(x[:, :i], k, finite)
    return out.reshape(np.shape(values))


def next_scale(past: np.ndarray, k: float = CLIP_K, finite: bool = False) -> np.ndarray | float:
    """The scale the next block is clipped at, from the blocks so far (rows of A/Bs, or one
    A/B's 1-D values): k x 1.4826 x their median absolute deviation, at least CLIP_FLOOR; 0
    (a sign bet) while fewer than PAST_FOR_SCALE have a value. `finite`: the caller knows
    there is no nan (np.median is ten times faster than np.nanmedian)."""
    x = np.atleast_2d(np.asarray(past, dtype=float))
    median = np.median if finite else np.nanmedian
    with np.errstate(all="ignore"):
        middle = median(x, axis=1, keepdims=True)
        spread = 1.4826 * median(np.abs(x - middle), axis=1)
    enough = np.sum(np.isfinite(x), axis=1) >= PAST_FOR_SCALE
    out = np.where(enough, np.maximum(k * np.nan_to_num(spread), CLIP_FLOOR), 0.0)
    return out if np.ndim(past) > 1 else float(out[0])


def bets(values: np.ndarray, scales: np.ndarray, m: float) -> np.ndarray:
    """Each block's bet that the log-ratio lies above m: (value - m) / scale clipped to
    [-1, 1] (its sign where the scale is 0); 0 for a block without a value."""
    x = np.asarray(values, dtype=float)
    c = np.asarray(scales, dtype=float)
    with np.errstate(all="ignore"):
        d = np.where(c > 0, np.clip((x - m) / np.where(c > 0, c, 1.0), -1.0, 1.0), np.sign(x - m))
    return np.nan_to_num(d)


def log_wealth(bet: np.ndarray, weights: np.ndarray = BET_WEIGHTS) -> np.ndarray:
    """log of the mixture's wealth after each block (last axis), for bets in [-1, 1]: the
    BET_WEIGHTS-weighted mean over BET_FRACTIONS f of prod(1 + f d)."""
    d = np.asarray(bet, dtype=float)
    grown = np.cumsum(np.log1p(d[..., None] * BET_FRACTIONS), axis=-2)
    return _logsumexp(grown + np.log(weights), axis=-1)


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    """log(sum(exp(x))) along `axis`, without overflow (scipy's is several times slower on
    the simulations' arrays)."""
    top = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(top, axis=axis) + np.log(np.sum(np.exp(x - top), axis=axis))


def clipped_sequence(
    series: Sequence[Sequence[float | None]] | Sequence[float | None], alpha: float = DEFAULT_ALPHA
) -> Interval:
    """The anytime-valid interval the decision reads, from clipped bets on the blocks'
    log-ratios; `series` is one estimand's block values, or several estimands' of the same
    blocks (None or nan where a block has none).

    Its low end is where every estimand's bettor on "the blocks lie above m" has reached
    1/alpha (the highest m all of them rule out from below); its high end where the mean of
    the estimands' bettors on "below m" has (a mean of test martingales is one). So "ok"
    (low above the boundary) needs every estimand to clear it, "regression" (high below it)
    the evidence of them together. Both wealths are monotone in m: each end is one root.
    The estimate is the lowest of the estimands' Huber locations at their last scale."""
    from scipy.optimize import brentq

    rows = np.atleast_2d(np.array([[np.nan if v is None else v for v in row] for row in _as_rows(series)], dtype=float))
    rows[~np.isfinite(rows)] = np.nan
    present = np.isfinite(rows).any(axis=0)
    rows = rows[:, present]
    n = int(rows.shape[1])
    if n == 0:
        return Interval(0, math.nan, -math.inf, math.inf)
    scales = clip_scales(rows)
    needed = math.log(1 / alpha)
    reach = 2 * float(max(np.nanmax(scales), CLIP_FLOOR))
    lo_m, hi_m = float(np.nanmin(rows)) - reach, float(np.nanmax(rows)) + reach

    def below(m: float) -> float:
        wealth = log_wealth(-bets(rows, scales, m))[:, -1]
        return float(logsumexp_mean(wealth)) - needed

    lows = []
    for x, c in zip(rows, scales, strict=True):
        above = lambda m, x=x, c=c: float(log_wealth(bets(x, c, m))[-1]) - needed  # noqa: E731
        lows.append(brentq(above, lo_m, hi_m, xtol=1e-7) if above(lo_m) >= 0 else -math.inf)
    high = brentq(below, lo_m, hi_m, xtol=1e-7) if below(hi_m) >= 0 else math.inf
    estimate = min(huber_location(x[np.isfinite(x)]) for x in rows if np.isfinite(x).any())
    return Interval(n, estimate, min(lows), high)


def evidence(
    values: np.ndarray, m: float, k: float = CLIP_K, weights: np.ndarray = BET_WEIGHTS
) -> tuple[np.ndarray, np.ndarray]:
    """The two bettors' log wealth after each block against the boundary m, for arrays of
    A/Bs: `values` is (A/Bs, estimands, blocks) or (A/Bs, blocks) for one estimand.
    Returns (below, above): "below m" the mean of the estimands' wealths, "above m" the
    least of them, as clipped_sequence's two ends read them (the decision at m: regression
    where below reaches log(1/alpha), ok where above does). `k` and `weights` (over
    BET_FRACTIONS) are the decision's unless a comparison asks for others."""
    x = np.asarray(values, dtype=float)
    if x.ndim == 2:
        x = x[:, None, :]
    x = np.where(np.isfinite(x), x, np.nan)
    scales = clip_scales(x.reshape(-1, x.shape[-1]), k).reshape(x.shape)
    up = bets(x, scales, m)
    below = _logsumexp(log_wealth(-up, weights), axis=1) - math.log(x.shape[1])
    above = log_wealth(up, weights).min(axis=1)
    return below, above


def _as_rows(series: Sequence[Sequence[float | None]] | Sequence[float | None]) -> list[Sequence[float | None]]:
    """One estimand's values as a list of one row; several estimands' as they are."""
    if len(series) and isinstance(series[0], (list, tuple, np.ndarray)):
        return list(series)  # type: ignore[arg-type]
    return [series]  # type: ignore[list-item]


def logsumexp_mean(logs: np.ndarray) -> float:
    """log of the mean of exp(logs), computed without overflow."""
    return float(_logsumexp(np.asarray(logs, dtype=float), axis=0) - math.log(len(logs)))


def huber_location(values: np.ndarray) -> float:
    """The m at which the clipped deviations of `values` sum to 0, at the scale the next
    block would be clipped at (the median where that scale is 0)."""
    from scipy.optimize import brentq

    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return math.nan
    scale = float(clip_scales(np.append(x, np.nan))[-1])
    if scale <= 0 or x.size < 2:
        return float(np.median(x))
    total = lambda m: float(np.clip((x - m) / scale, -1, 1).sum())  # noqa: E731
    return float(brentq(total, float(x.min()) - scale, float(x.max()) + scale, xtol=1e-9))


@functools.cache
def blocks_to_decide(alpha: float = DEFAULT_ALPHA) -> int:
    """The fewest blocks that can decide at all: the clipped bets' wealth when every block
    lies a full bet on one side first reaches 1/alpha there (6 at 95 %, 4 at 80 %; the sign
    test needed 7 at 95 %). Fewer blocks leave the interval infinite whatever they measured,
    so a budget that ends earlier can only end undecided."""
    needed = math.log(1 / alpha)
    n = 1
    while log_wealth(np.ones(n))[-1] < needed:
        n += 1
    return n


def medians_to_decide(alpha: float = DEFAULT_ALPHA) -> int:
    """The fewest blocks (or rounds) that give `median_sequence` a finite interval: every one
    on one side reaches 1/alpha there (7 at 95 %). What harness causal reads its sensitivities
    by, where the A/B now decides by the clipped bets (`blocks_to_decide`)."""
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
