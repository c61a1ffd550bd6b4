import numpy as np
import pytest

from harness.model.stats import drift_pct_per_min, ratio_of_medians, rise, verdict


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
    slope, se = drift_pct_per_min(t, rates)
    plain = linregress(t, rates).stderr * 6000 / rates.mean()
    assert se > 2 * plain
    independent = 100.0 + rng.normal(0, 5.0, t.size)
    _, se_independent = drift_pct_per_min(t, independent)
    assert se_independent < 1.6 * linregress(t, independent).stderr * 6000 / independent.mean()


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
    assert drift_pct_per_min(short, v[:25]) == pytest.approx((plain.slope * scale, plain.stderr * scale))
