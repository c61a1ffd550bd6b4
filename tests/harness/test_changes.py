"""Change points in a history: a step and a dip are found where they are; noise alone is
flagged about as often as the test's level says."""

from __future__ import annotations

import numpy as np
import pytest

from harness.analysis.changes import ALPHA, change_points


def test_a_step_and_a_dip_are_found_where_they_are():
    rng = np.random.default_rng(1)
    step = np.r_[100 * (1 + rng.normal(0, 0.01, 5)), 80 * (1 + rng.normal(0, 0.01, 5))]
    (change,) = change_points(step)
    assert change.index == 5 and abs(change.relative + 0.2) < 0.02 and change.p_value <= ALPHA
    dip = np.r_[
        100 * (1 + rng.normal(0, 0.01, 6)), 90 * (1 + rng.normal(0, 0.01, 6)), 100 * (1 + rng.normal(0, 0.01, 6))
    ]
    assert [c.index for c in change_points(dip)] == [6, 12]
    assert change_points([5.0] * 10) == [] and change_points([1.0, 2.0]) == []


@pytest.mark.slow
def test_noise_alone_is_rarely_a_change():
    rng = np.random.default_rng(2)
    flagged = np.mean([bool(change_points(rng.normal(0, 1, 12), seed=i)) for i in range(150)])
    assert flagged <= ALPHA + 0.05, flagged
