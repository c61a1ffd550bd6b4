"""The USL fit (harness.analysis.usl): known curves recovered, intervals that hold the truth,
Amdahl's law seen as no peak, a cliff refused, too few counts said."""

import numpy as np
import pytest

from harness.analysis import usl

COUNTS = [1, 2, 4, 8, 16, 32]


def draw(rng, truth: usl.Usl, counts=COUNTS, repeats=3, noise=0.05) -> dict[int, list[float]]:
    """Rates of a known curve with lognormal noise: a shared machine's noise is relative."""
    return {n: list(truth.rate(n) * np.exp(rng.normal(0.0, noise, repeats))) for n in counts}


def test_an_exact_curve_is_recovered():
    truth = usl.Usl(100.0, 0.05, 0.002)
    found = usl.fit({n: [float(truth.rate(n))] * 2 for n in COUNTS})
    assert found.ok and found.lack_of_fit_p == pytest.approx(1.0)
    assert found.model.rate1 == pytest.approx(100.0, rel=1e-6)
    assert found.model.sigma == pytest.approx(0.05, rel=1e-6)
    assert found.model.kappa == pytest.approx(0.002, rel=1e-6)
    assert found.peak.value == pytest.approx(np.sqrt(0.95 / 0.002), rel=1e-6)


def test_noisy_repeats_give_intervals_around_the_truth_and_a_peak():
    truth = usl.Usl(100.0, 0.05, 0.002)
    found = usl.fit(draw(np.random.default_rng(3), truth))
    assert found.status == usl.FITS and found.draws is not None
    assert found.sigma.holds(0.05) and found.kappa.holds(0.002)
    assert found.kappa.low > 0 and found.no_peak is None
    assert found.peak.holds(truth.peak) and found.peak.low < found.peak.value < found.peak.high
    assert found.peak_rate.holds(float(truth.rate(truth.peak)))
    assert found.to_json()["peak"]["value"] == found.peak.value


def test_amdahl_data_has_kappa_holding_zero_and_no_peak():
    truth = usl.Usl(100.0, 0.1, 0.0)
    found = usl.fit(draw(np.random.default_rng(5), truth))
    assert found.ok and found.kappa.low == 0.0 and found.kappa.holds(0.0)
    assert found.peak is None and found.no_peak == "kappa's interval holds 0"


def test_a_cliff_at_the_core_count_does_not_fit():
    """Threads that scale to the 2 cores and lose half past them: tight repeats, no USL curve."""
    rates = {1: 100.0, 2: 198.0, 3: 101.0, 4: 99.0, 6: 97.0, 8: 95.0}
    rng = np.random.default_rng(0)
    found = usl.fit({n: list(r * np.exp(rng.normal(0.0, 0.01, 3))) for n, r in rates.items()}, cores=2)
    assert found.status == usl.NO_FIT and not found.ok
    assert found.lack_of_fit_p < usl.LACK_OF_FIT_ALPHA
    assert "a break at the core count (2)" in found.reason and "repeats spread" in found.reason
    assert found.sigma is None and found.kappa is None and found.peak is None
    with pytest.raises(ValueError, match="does not fit"):
        found.predict([4])


def test_a_superlinear_step_does_not_fit_and_is_named():
    """The threads backend on the loaded 2-core VM: 22 moves/s at 1 worker, 107 at 2 (more
    threads won more of the shared CPU), then flat (2026-11-26 sweep, rounded)."""
    rates = {1: [20.0, 22.0, 25.0], 2: [95.0, 107.0, 120.0], 3: [50.0, 55.0, 60.0], 4: [50.0, 53.0, 56.0]}
    found = usl.fit(rates | {6: [55.0, 59.0, 64.0], 8: [90.0, 98.0, 105.0]}, cores=2)
    assert found.status == usl.NO_FIT
    assert "the rate per worker rises from 1 to 2 workers, which no USL curve does" in found.reason
    assert "core count" not in found.reason


def test_a_peak_is_never_below_one_worker():
    assert usl.Usl(10.0, 1.0, 0.1).peak == 1.0  # fully serial, coherency: one worker is best
    assert usl.Usl(10.0, 0.5, 0.0).peak is None


def test_counts_the_model_needs():
    truth = usl.Usl(50.0, 0.1, 0.01)
    two = usl.fit(draw(np.random.default_rng(1), truth, counts=[1, 2]))
    assert two.status == usl.TOO_FEW and "needs 4 (3 with a warning)" in two.reason and two.model is None
    three = usl.fit(draw(np.random.default_rng(1), truth, counts=[1, 2, 4]))
    assert three.ok and three.lack_of_fit_p is None
    assert any("3 worker counts only" in w for w in three.warnings)
    stalled = usl.fit({1: [10.0], 2: [0.0], 4: [5.0], 8: [4.0]})
    assert stalled.status == usl.REFUSED and "no finite throughput at 2 workers" in stalled.reason


def test_one_repeat_per_count_fits_without_intervals_and_says_so():
    truth = usl.Usl(100.0, 0.05, 0.01)
    found = usl.fit(draw(np.random.default_rng(2), truth, repeats=1))
    assert found.ok and found.draws is None and found.lack_of_fit_p is None
    assert found.sigma.low is None and not found.kappa.holds(found.kappa.value)
    assert any("one repeat per count" in w for w in found.warnings)
    band = found.predict([4, 64])
    assert band.low is None and band.rate[0] == pytest.approx(float(found.model.rate(4)))


def test_the_band_brackets_the_curve_and_widens_past_the_counts_measured():
    found = usl.fit(draw(np.random.default_rng(4), usl.Usl(100.0, 0.05, 0.002), counts=[1, 2, 4, 8]))
    band = found.predict([4, 8, 16, 64])
    assert np.all(band.low <= band.rate) and np.all(band.rate <= band.high)
    relative = (band.high - band.low) / band.rate
    assert relative[-1] > relative[1] > 0
    assert found.least_certain([3, 6, 64]) == 64


def test_a_peak_past_the_counts_measured_is_called_an_extrapolation():
    truth = usl.Usl(100.0, 0.02, 0.01)  # peak at 9.9
    found = usl.fit(draw(np.random.default_rng(4), truth, counts=[1, 2, 3, 4, 6, 8], noise=0.02))
    assert found.peak is not None and found.peak.value > 8
    assert any("past the largest count measured (8): an extrapolation" in w for w in found.warnings)


def test_least_certain_without_a_band_is_the_count_farthest_from_those_measured():
    too_few = usl.fit({1: [10.0], 2: [19.0]})
    assert too_few.least_certain([3, 4, 16]) == 16
    assert too_few.least_certain([3]) == 3
    with pytest.raises(ValueError):
        too_few.least_certain([])


def coverage(truth: usl.Usl, draws: int, resamples: int, counts=COUNTS) -> dict[str, float]:
    rng = np.random.default_rng(11)
    held = {"sigma": 0, "kappa": 0, "kappa_zero": 0, "peak": 0, "quoted": 0}
    for i in range(draws):
        found = usl.fit(draw(rng, truth, counts), resamples=resamples, seed=i)
        if not found.ok:
            continue  # a rejected fit holds nothing: it counts against coverage
        held["sigma"] += found.sigma.holds(truth.sigma)
        held["kappa"] += found.kappa.holds(truth.kappa)
        held["kappa_zero"] += found.kappa.holds(0.0)
        if found.peak is not None and truth.peak is not None:
            held["quoted"] += 1
            held["peak"] += found.peak.holds(truth.peak)
    return {k: v / draws for k, v in held.items()} | {"peak_of_quoted": held["peak"] / max(held["quoted"], 1)}


def test_intervals_hold_the_truth_in_most_draws_fast():
    """A smaller copy of the acceptance test below (seeded: the same draws every run)."""
    got = coverage(usl.Usl(100.0, 0.05, 0.002), draws=30, resamples=150)
    assert got["sigma"] >= 0.85 and got["kappa"] >= 0.85, got


@pytest.mark.slow
def test_intervals_hold_the_truth_in_90_percent_of_200_draws():
    """Issue 44's acceptance: sigma 0.05, kappa 0.002 (peak at 21.8) over 1-32 workers, three
    repeats with 5 % noise; and Amdahl's law (kappa 0), whose kappa interval holds 0. With 200
    resamples a fit (half the default: 18 s instead of 35 on the shared 2-core VM); at 400 the
    same draws held sigma, kappa and the peak in 93.5, 96.5 and 96.5 %, Amdahl's sigma and
    kappa in 92.5 and 96 % (docs/records/2026-11-26-scaling-model.md)."""
    got = coverage(usl.Usl(100.0, 0.05, 0.002), draws=200, resamples=200)
    assert got["sigma"] >= 0.9 and got["kappa"] >= 0.9 and got["peak_of_quoted"] >= 0.9, got
    assert got["quoted"] >= 0.9, got  # the peak lies within the counts: it is quoted nearly always
    amdahl = coverage(usl.Usl(100.0, 0.1, 0.0), draws=200, resamples=200)
    assert amdahl["sigma"] >= 0.9 and amdahl["kappa_zero"] >= 0.9 and amdahl["quoted"] <= 0.1, amdahl
