import numpy as np
import pytest

from harness.model.stats import (
    drift_pct_per_min,
    ratio_of_medians,
    rise,
    verdict,
    weighted_quantiles,
    weighted_summary,
)


def test_ratio_interval_brackets_a_clear_slowdown():
    rng = np.random.default_rng(1)
    base = 100 + rng.normal(0, 1, 7)
    slow = 80 + rng.normal(0, 1, 7)
    r = ratio_of_medians(base, slow)
    assert r["low"] <= r["ratio"] <= r["high"] < 0.9
    assert r["p_value"] < 0.01
    assert verdict(r, higher_is_better=True, tolerance=0.1) == "worse"
    assert verdict(r, higher_is_better=False, tolerance=0.1) == "better"


def test_overlapping_samples_are_the_same():
    r = ratio_of_medians([10, 11, 9, 10], [10.2, 9.8, 10.5, 9.9])
    assert r["low"] < 1 < r["high"]
    assert verdict(r, higher_is_better=True) == "same"


def test_degenerate_inputs():
    assert ratio_of_medians([], [1.0]) is None
    assert ratio_of_medians([0.0], [1.0]) is None
    single = ratio_of_medians([2.0], [3.0])
    assert single["low"] == single["high"] == pytest.approx(1.5)
    assert drift_pct_per_min([0, 1], [1, 2]) is None


def test_drift_error_widens_for_autocorrelated_rates():
    """A machine that wanders slowly (AR(1) noise, no trend) must not look like a drift."""
    from scipy.stats import linregress

    rng = np.random.default_rng(0)
    t = np.arange(300.0)
    wander = np.zeros(t.size)
    for i in range(1, t.size):
        wander[i] = 0.9 * wander[i - 1] + rng.normal(0, 2.0)
    rates = 100.0 + wander
    slope, se, _ = drift_pct_per_min(t, rates)
    plain = linregress(t, rates).stderr * 6000 / rates.mean()
    assert se > 2 * plain
    independent = 100.0 + rng.normal(0, 5.0, t.size)
    _, se_independent, _ = drift_pct_per_min(t, independent)
    assert se_independent < 1.6 * linregress(t, independent).stderr * 6000 / independent.mean()


def test_drift_blocks_span_seconds_however_dense_the_rates():
    """A tqdm bar's it/s read 400 times a second, flat but in 10 s phases of the host (Lightning
    DDP under harness watch: 230, 216, 172, 224 it/s): blocks of ten 2.5 ms samples saw thousands
    of independent points and called the phases a drift of -30 %/min at 9 standard errors."""
    rng = np.random.default_rng(2)
    t = np.arange(0.0, 40.0, 0.0025)
    phases = np.array([230.0, 216.0, 172.0, 224.0])[(t // 10).astype(int)]
    rates = phases + rng.normal(0, 20.0, t.size)
    slope, se, dof = drift_pct_per_min(t, rates)
    assert dof == 2  # 4 blocks of 10 s
    assert slope < -10 and abs(slope) < 2 * se  # a slope, but not one the phases cannot explain
    one_hz = np.arange(60.0)
    series = 100.0 + rng.normal(0, 5.0, one_hz.size)
    block_t, block_r = one_hz.reshape(6, 10).mean(axis=1), series.reshape(6, 10).mean(axis=1)
    from scipy.stats import linregress

    expected = max(linregress(one_hz, series).stderr, linregress(block_t, block_r).stderr) * 6000 / series.mean()
    assert drift_pct_per_min(one_hz, series)[1] == pytest.approx(expected)  # 1 s rates: blocks of 10, as before


def test_rise_is_the_least_squares_slope_times_the_span_with_its_error():
    """Closed form in numpy (no scipy import in the harness's process): the same numbers as
    scipy.stats.linregress."""
    from scipy.stats import linregress

    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(0, 10, 30))
    v = 3 * t + rng.normal(0, 2, 30)
    fit = linregress(t, v)
    value, se = rise(t, v)
    assert value == pytest.approx(fit.slope * np.ptp(t)) and se == pytest.approx(fit.stderr * np.ptp(t))
    assert rise([0, 1], [1, 2]) is None and rise([1, 1, 1], [1, 2, 3]) is None
    short = t[:25]  # under three blocks of 10: the plain fit alone, as linregress gives it
    plain = linregress(short, v[:25])
    scale = 6000 / v[:25].mean()
    assert drift_pct_per_min(short, v[:25]) == pytest.approx((plain.slope * scale, plain.stderr * scale, 23))


def test_weighted_quantiles_by_hand():
    # batch sizes 1, 4, 8 seen 6, 3 and 1 times: cumulative weights 6, 9, 10 of 10
    values, weights = [8.0, 1.0, 4.0], [1.0, 6.0, 3.0]
    assert weighted_quantiles(values, weights, [0.0, 0.5, 0.6, 0.61, 0.9, 0.91, 1.0]) == [1, 1, 1, 4, 4, 8, 8]
    out = weighted_summary("batch", values, weights)
    assert out == {
        "batch_count": 10.0,
        "batch_mean": 2.6,  # (6 + 12 + 8) / 10
        "batch_p50": 1.0,
        "batch_p95": 8.0,
        "batch_max": 8.0,
        "batch_hist": {"1": 6.0, "4": 3.0, "8": 1.0},
    }


def test_weighted_quantiles_match_numpys_inverted_cdf():
    if np.lib.NumpyVersion(np.__version__) < "2.0.0":
        pytest.skip("numpy's weighted percentile came with numpy 2.0")
    rng = np.random.default_rng(7)
    for _ in range(50):
        values = rng.integers(1, 300, size=int(rng.integers(1, 40))).astype(float)
        weights = rng.exponential(1.0, size=values.size)
        qs = [0.05, 0.25, 0.5, 0.9, 0.95]
        expected = np.percentile(values, [100 * q for q in qs], weights=weights, method="inverted_cdf")
        assert weighted_quantiles(values, weights, qs) == list(expected)


def test_weighted_summary_leaves_out_what_has_no_weight():
    assert weighted_summary("wait", [], []) == {"wait_count": 0}
    assert weighted_summary("wait", [1.0, 2.0], [0.0, -1.0]) == {"wait_count": 0}
    out = weighted_summary("wait", [0.25, 9.0, 0.5], [2.0, 0.0, 2.0])
    assert out["wait_max"] == 0.5 and out["wait_p50"] == 0.25 and "wait_hist" not in out  # not integers
    many = weighted_summary("batch", list(range(600)), [1.0] * 600)
    assert "batch_hist" not in many and many["batch_p50"] == 299.0  # too many distinct values for a histogram
