"""The A/B's sequential test keeps its error rates when it is looked at after every block.

The decision reads clipped bets (harness.ab.sequential.clipped_sequence); the sign test on
the median it replaced, and the mean's t-mixture, are still computed and reported, and tested
here as the intervals they are.

Simulated, not measured: thousands of A/Bs of 40 blocks each, on i.i.d. normal block means,
and through the whole chain the slicer produces (a machine whose speed wanders as an AR(1)
process from slice to slice, heavy-tailed slice noise, a layout bias per process, random
pair order, blocks of pair means), and with the heavy tail of per-process bias this machine
showed (some processes 10-20 % off). A naive fixed-n t interval recomputed after every block
is checked too: it must fail the same test, or the test would prove nothing. The decision
reads the median's sign test; the mean's t-mixture is tested as the interval it reports.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from harness.ab.sequential import (
    DEFAULT_ALPHA,
    MIXTURE_G,
    Interval,
    blocks_to_decide,
    boundary,
    clip_scales,
    clipped_sequence,
    confidence_sequence,
    decide,
    evidence,
    median_sequence,
    mixture_halfwidth,
    sign_log_evidence,
    welch_interval,
)

TRIALS = 2000
LOOKS = 40
ALPHA = DEFAULT_ALPHA
# Monte Carlo slack: three standard errors of a rate alpha over TRIALS trials.
SLACK = 3 * math.sqrt(ALPHA * (1 - ALPHA) / TRIALS)


def bayes_factor(x: np.ndarray, m: float, g: float = MIXTURE_G) -> float:
    """The t-mixture Bayes factor against "mean m", straight from its definition."""
    y = x - m
    n, s, q = y.size, y.sum(), (y**2).sum()
    return (1 + n * g) ** -0.5 * (q / (q - g * s**2 / (1 + n * g))) ** (n / 2)


def sequences(x: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of the confidence sequence after each look, for every row of x."""
    n = np.arange(1, x.shape[1] + 1)
    mean = np.cumsum(x, axis=1) / n
    ss = np.maximum(np.cumsum(x**2, axis=1) - n * mean**2, 0.0)
    coef = np.array([mixture_halfwidth(int(k), 1.0, alpha) for k in n])
    half = np.where(np.isinf(coef), np.inf, np.nan_to_num(coef, posinf=0.0) * np.sqrt(ss))
    return mean - half, mean + half


def test_the_interval_is_where_the_bayes_factor_reaches_one_over_alpha():
    rng = np.random.default_rng(0)
    for n in (4, 7, 20):
        x = rng.normal(0.01, 0.02, n)
        iv = confidence_sequence(x)
        assert bayes_factor(x, iv.high) == pytest.approx(1 / ALPHA, rel=1e-6)
        assert bayes_factor(x, iv.low) == pytest.approx(1 / ALPHA, rel=1e-6)
        assert bayes_factor(x, iv.estimate) < 1 / ALPHA
    assert math.isinf(confidence_sequence([0.1, 0.2]).high)  # two blocks cannot decide
    assert confidence_sequence([]).n == 0


def test_coverage_holds_under_repeated_looks_where_a_naive_t_interval_fails():
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 1.0, (TRIALS, LOOKS))
    low, high = sequences(x)
    ever_missed = ((low > 0) | (high < 0)).any(axis=1).mean()
    assert ever_missed <= ALPHA + SLACK, ever_missed
    # the same data, a fixed-n 95 % t interval after every block from the third on
    n = np.arange(1, LOOKS + 1)
    mean = np.cumsum(x, axis=1) / n
    sd = np.sqrt(np.maximum(np.cumsum(x**2, axis=1) - n * mean**2, 0) / np.maximum(n - 1, 1))
    t = stats.t.ppf(1 - ALPHA / 2, np.maximum(n - 1, 1))
    naive = (np.abs(mean) > t * sd / np.sqrt(n))[:, 2:].any(axis=1).mean()
    assert naive > 3 * ALPHA, naive  # the repeated-looks problem is real, and this test sees it


def simulated_ab(
    rng: np.random.Generator,
    mu: float,
    *,
    trials: int = TRIALS,
    blocks: int = LOOKS,
    pairs: int = 4,
    phi: float = 0.9,
    phase_sd: float = 0.08,
    slice_sd: float = 0.02,
    process_sd: float = 0.015,
    heavy: bool = False,
    outlier_share: float = 0.0,
    outlier_sd: float = 0.15,
) -> np.ndarray:
    """Block means of pair log-ratios as the slicer makes them, for `trials` A/Bs: the
    machine's log speed wanders as AR(1) from slice to slice (phase_sd stationary, phi per
    slice), each slice adds noise (normal or t with 3 df), each process a layout bias, the
    candidate is exp(mu) times the base, and the side that runs first is drawn per pair; with
    `outlier_share`, that share of processes gets a further N(0, outlier_sd) bias."""
    out = np.empty((trials, blocks))
    phase = rng.normal(0, phase_sd, trials)
    innovation = math.sqrt(1 - phi**2) * phase_sd
    for b in range(blocks):
        bias_base, bias_cand = rng.normal(0, process_sd, (2, trials))
        if outlier_share:
            hit = rng.random((2, trials)) < outlier_share
            bias_base += hit[0] * rng.normal(0, outlier_sd, trials)
            bias_cand += hit[1] * rng.normal(0, outlier_sd, trials)
        ratios = np.zeros(trials)
        for _ in range(pairs):
            slices = []
            for _ in range(2):
                phase = phi * phase + innovation * rng.normal(size=trials)
                noise = (
                    rng.standard_t(3, trials) * slice_sd / math.sqrt(3) if heavy else rng.normal(0, slice_sd, trials)
                )
                slices.append(phase + noise)
            base_first = rng.random(trials) < 0.5
            base = np.where(base_first, slices[0], slices[1]) + bias_base
            cand = np.where(base_first, slices[1], slices[0]) + bias_cand + mu
            ratios += cand - base
        out[:, b] = ratios / pairs
    return out


def sign_sequences(x: np.ndarray, tolerance: float, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """(regression, ok) after each look, for every row of x: the sign tests at the boundary
    (what median_sequence's interval against the boundary decides)."""
    edge = boundary(tolerance)
    looks = x.shape[1]
    table = np.array([[sign_log_evidence(k, n) for k in range(looks + 1)] for n in range(looks + 1)])
    n = np.arange(1, looks + 1)
    below, above = np.cumsum(x < edge, axis=1), np.cumsum(x > edge, axis=1)
    needed = math.log(1 / alpha)
    return table[n, below] >= needed, table[n, above] >= needed


def first_decisions(reg: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(decided regression, decided ok, the look that decided) per trial."""
    never = reg.shape[1] + 1
    first_reg = np.where(reg.any(axis=1), reg.argmax(axis=1), never)
    first_ok = np.where(ok.any(axis=1), ok.argmax(axis=1), never)
    return first_reg < first_ok, first_ok < first_reg, np.minimum(first_reg, first_ok)


def decisions(x: np.ndarray, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """(decided regression, decided ok) per trial, as the A/B decides: clipped bets."""
    regression, ok, _ = clipped_decisions(x, tolerance)
    return regression, ok


def clipped_decisions(x: np.ndarray, tolerance: float, alpha: float = ALPHA):
    """(regression, ok, the look that decided) per trial from the clipped bets' evidence at
    the boundary; x is (trials, blocks) or (trials, estimands, blocks)."""
    below, above = evidence(x, boundary(tolerance))
    needed = math.log(1 / alpha)
    return first_decisions(below >= needed, above >= needed)


def sign_decisions(x: np.ndarray, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """The same by the median's sign test (what the A/B decided by before)."""
    regression, ok, _ = first_decisions(*sign_sequences(x, tolerance))
    return regression, ok


def t_decisions(x: np.ndarray, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """The same by the mean's t-mixture interval (what the A/B first decided by)."""
    low, high = sequences(x)
    edge = boundary(tolerance)
    regression, ok, _ = first_decisions(high < edge, low > edge)
    return regression, ok


@pytest.mark.parametrize(
    "noise",
    [
        {},
        {"heavy": True},
        {"phi": 0.5, "phase_sd": 0.05},
        {"phi": 0.98, "phase_sd": 0.15, "process_sd": 0.03},
        {"outlier_share": 0.15},
    ],
    ids=["ar1-normal", "ar1-heavy-tails", "ar1-fast", "ar1-slow-big-bias", "outlier-processes"],
)
def test_error_rates_at_the_tolerance_hold_with_a_look_after_every_block(noise):
    """A true slowdown of exactly the tolerance is the hardest case for both errors."""
    rng = np.random.default_rng(2)
    tolerance = 0.03
    x = simulated_ab(rng, boundary(tolerance), **noise)
    regression, ok = decisions(x, tolerance)
    assert regression.mean() <= ALPHA + SLACK  # a false alarm needs a slowdown beyond the tolerance
    assert ok.mean() <= ALPHA + SLACK  # a false pass needs one within it


def test_identical_code_passes_and_a_ten_percent_slowdown_is_caught():
    rng = np.random.default_rng(3)
    same = simulated_ab(rng, 0.0, trials=500)
    regression, ok = decisions(same, 0.03)
    assert regression.mean() == 0 and ok.mean() > 0.9
    slow = simulated_ab(rng, math.log(1 / 1.10), trials=500)
    regression, ok = decisions(slow, 0.03)
    assert regression.mean() > 0.95 and ok.mean() == 0


def test_outlier_processes_cost_the_mean_decisions_the_clipped_bets_keep():
    # the heavy tail of per-process bias seen in the campaign's first A/B (8 of 45 blocks
    # 0.08-0.19 off the rest): the mean's interval widens with every outlier, a clipped bet
    # counts it as one full bet
    rng = np.random.default_rng(4)
    same = simulated_ab(rng, 0.0, trials=500, outlier_share=0.15)
    slow = simulated_ab(rng, math.log(1 / 1.10), trials=500, outlier_share=0.15)
    assert decisions(same, 0.03)[1].mean() > t_decisions(same, 0.03)[1].mean() + 0.1
    assert decisions(slow, 0.03)[0].mean() > 0.95
    assert decisions(same, 0.03)[0].mean() == 0


def test_clipped_bets_decide_sooner_than_the_sign_test_where_blocks_are_normal():
    """The sign test is the clipped bets' limit at a zero scale: where the bulk of the blocks
    is normal the distances carry evidence the signs lose."""
    rng = np.random.default_rng(6)
    same = simulated_ab(rng, 0.0, trials=1000, blocks=20)
    clipped_ok = clipped_decisions(same, 0.03)[1].mean()
    sign_ok = sign_decisions(same, 0.03)[1].mean()
    assert clipped_ok > sign_ok + 0.03, (clipped_ok, sign_ok)


@pytest.mark.parametrize("shape", ["normal", "t2", "two-point-outliers"])
def test_clipped_bets_keep_their_error_rates_on_symmetric_blocks_of_any_tail(shape):
    """Blocks symmetric about the truth, at the boundary, a look after every block: any
    decision is an error. Two-point outliers (processes exactly 0.2 off, both ways) are
    symmetric but not unimodal, where a bet that redescends would fail; a clipped one may not."""
    rng = np.random.default_rng(7)
    edge = boundary(0.03)
    if shape == "normal":
        noise = rng.normal(0, 0.03, (TRIALS, LOOKS))
    elif shape == "t2":
        noise = 0.02 * rng.standard_t(2, (TRIALS, LOOKS))
    else:
        noise = rng.normal(0, 0.01, (TRIALS, LOOKS)) + 0.2 * rng.choice([-1, 0, 0, 0, 1], (TRIALS, LOOKS))
    regression, ok, _ = clipped_decisions(edge + noise, 0.03)
    assert regression.mean() <= ALPHA + SLACK and ok.mean() <= ALPHA + SLACK


def test_two_estimands_ok_needs_both_and_a_regression_in_either_is_seen():
    """The decision reads the rate per CPU second and the rate without run-queue waits: a
    candidate that only waits more shows in the second alone; it must never be called ok,
    and is caught as a regression."""
    rng = np.random.default_rng(8)
    cpu = rng.normal(0.0, 0.02, (500, 30))  # per CPU second: unchanged
    runq = rng.normal(math.log(1 / 1.10), 0.02, (500, 30))  # it waits 10 % more
    x = np.stack([cpu, runq], axis=1)
    regression, ok, _ = clipped_decisions(x, 0.03)
    assert ok.mean() == 0 and regression.mean() > 0.95
    # identical code, the two estimands close to each other: ok, never a regression
    same = rng.normal(0.0, 0.02, (500, 1, 30)) + rng.normal(0, 0.005, (500, 2, 30))
    regression, ok, _ = clipped_decisions(same, 0.03)
    assert regression.mean() == 0 and ok.mean() > 0.95
    # at the boundary in both: either error at most alpha
    at_edge = boundary(0.03) + rng.normal(0.0, 0.02, (TRIALS, 1, LOOKS)) + rng.normal(0, 0.01, (TRIALS, 2, LOOKS))
    regression, ok, _ = clipped_decisions(at_edge, 0.03)
    assert regression.mean() <= ALPHA + SLACK and ok.mean() <= ALPHA + SLACK


def test_the_interval_decides_as_the_evidence_at_the_boundary_does():
    rng = np.random.default_rng(9)
    edge = boundary(0.03)
    for _ in range(30):
        n = int(rng.integers(5, 25))
        x = rng.normal(rng.uniform(-0.08, 0.03), 0.03, (1, 2, n))
        below, above = evidence(x, edge)
        expected = (
            "regression" if below[0, -1] >= math.log(20) else "ok" if above[0, -1] >= math.log(20) else "continue"
        )
        assert decide(clipped_sequence([list(x[0, 0]), list(x[0, 1])]), 0.03) == expected


def test_a_block_is_clipped_by_the_blocks_before_it_only():
    x = np.array([0.01, -0.02, 0.03, 0.0, 0.5, -0.01])
    scales = clip_scales(x)
    assert scales[0] == scales[1] == 0  # no past spread yet: sign bets
    changed = x.copy()
    changed[4:] = [9.0, 9.0]
    assert np.array_equal(clip_scales(changed)[:5], scales[:5])  # a block's scale ignores it and what follows
    iv = clipped_sequence([0.3, -0.4] + [0.001 * (i - 14) for i in range(28)])
    assert -0.02 <= iv.low <= 0.0 <= iv.high <= 0.02  # two far-off blocks do not widen it


def test_sign_evidence_is_the_mixture_it_names():
    from scipy import integrate

    for k, n in ((0, 1), (3, 5), (7, 7), (12, 20)):
        direct, _ = integrate.quad(lambda p, k=k, n=n: 2 * (2 * p) ** k * (2 * (1 - p)) ** (n - k), 0.5, 1)
        assert sign_log_evidence(k, n) == pytest.approx(math.log(direct), rel=1e-9)
    # seven blocks on one side are the fewest that reach 1/alpha = 20: (2^8 - 1) / 8 = 31.9
    assert sign_log_evidence(6, 6) < math.log(20) < sign_log_evidence(7, 7)


def test_the_median_interval_and_its_coverage_under_repeated_looks():
    assert math.isinf(median_sequence([0.1] * 6).high)  # six blocks cannot decide
    iv = median_sequence([-0.05] * 7)
    assert (iv.estimate, iv.low, iv.high) == (-0.05, -0.05, -0.05)
    x = [0.3, -0.4] + [0.001 * (i - 14) for i in range(28)]  # 28 blocks within 0.014 of 0, two far off
    iv = median_sequence(x)
    assert -0.014 <= iv.low <= 0.0 <= iv.high <= 0.014  # order statistics: the outliers are not its ends
    assert confidence_sequence(x).high - confidence_sequence(x).low > 5 * (iv.high - iv.low)  # the mean's are
    rng = np.random.default_rng(5)
    x = rng.standard_t(2, (TRIALS, LOOKS))  # heavy tails, median 0
    reg, ok = sign_sequences(x, 0.0)  # the boundary at the true median: any decision is an error
    assert (reg | ok).any(axis=1).mean() <= 2 * ALPHA + SLACK


@pytest.mark.parametrize(("alpha", "fewest", "sign_fewest"), [(0.05, 6, 7), (0.2, 4, 4), (0.01, 9, 9)])
def test_no_budget_can_decide_before_the_fewest_blocks_a_test_needs(alpha, fewest, sign_fewest):
    """Blocks all far on one side: one block short of `fewest` the interval is still infinite,
    at `fewest` it is not (why the A/B runs that many whatever its budget); the clipped bets'
    tilted mixture needs one block fewer than the sign test at 95 %."""
    assert blocks_to_decide(alpha) == fewest
    for sequence, n in ((clipped_sequence, fewest), (median_sequence, sign_fewest)):
        assert not math.isfinite(sequence([0.5] * (n - 1), alpha).low)
        assert decide(sequence([0.5 + 0.01 * i for i in range(n)], alpha), 0.03) == "ok"


def test_decide_and_the_interval_in_ratios():
    edge = boundary(0.05)
    assert decide(Interval(5, -0.2, -0.3, edge - 1e-9), 0.05) == "regression"
    assert decide(Interval(5, 0.0, edge + 1e-9, 0.1), 0.05) == "ok"
    assert decide(Interval(5, -0.05, -0.1, 0.0), 0.05) == "continue"
    ratio, low, high = Interval(5, math.log(0.9), math.log(0.8), math.log(1.0)).ratios()
    assert (ratio, low, high) == pytest.approx((0.9, 0.8, 1.0))
    with pytest.raises(ValueError):
        boundary(1.0)


def test_welch_interval_for_two_sets_of_repeats():
    assert math.isinf(welch_interval([100.0], [90.0]).high)  # one repeat a side: no interval
    iv = welch_interval([100, 101, 99, 100], [90, 91, 89, 90])
    ratio, low, high = iv.ratios()
    assert ratio == pytest.approx(0.9, abs=0.002) and low < 0.9 < high < 0.92
    assert decide(iv, 0.03) == "regression" and decide(welch_interval([100, 101, 99], [100, 99, 101]), 0.03) == "ok"
