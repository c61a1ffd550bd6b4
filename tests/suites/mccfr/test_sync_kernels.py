"""The sync kernels hand rows over in ascending order and keep each row's sum in worker order."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from suites.mccfr.sync_kernels import merge_changes, sorted_rows

WIDTH = 3

# table sizes on both sides of the kernels' scan-or-sort switch (count * 32 > size)
table_sizes = st.sampled_from([8, 64, 4096])


@settings(max_examples=60, deadline=None)
@given(size=table_sizes, data=st.data())
def test_sorted_rows_lists_the_flagged_rows_in_order_and_clears_them(size, data):
    touched = data.draw(st.lists(st.integers(0, size - 1), unique=True, max_size=min(size, 200)))
    flags = np.zeros(size, np.uint8)
    flags[touched] = 1
    listed = np.zeros(size, np.int64)
    listed[: len(touched)] = touched  # first-touch order
    out = np.full(len(touched), -1, np.int64)

    sorted_rows(flags, listed, len(touched), out)

    assert out.tolist() == sorted(touched)
    assert not flags.any()


@settings(max_examples=60, deadline=None)
@given(size=table_sizes, workers=st.integers(1, 4), data=st.data())
def test_merge_sums_each_row_in_worker_order_and_lists_rows_ascending(size, workers, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    parts = []
    for _ in range(workers):
        rows = data.draw(st.lists(st.integers(0, size - 1), unique=True, max_size=min(size, 100)))
        rows = np.array(sorted(rows), np.int64)
        parts.append((rows, rng.normal(size=(rows.size, WIDTH)), rng.normal(size=(rows.size, WIDTH))))
    rows = np.concatenate([p[0] for p in parts])
    d_regret = np.concatenate([p[1] for p in parts]).reshape(-1, WIDTH)
    d_avg = np.concatenate([p[2] for p in parts]).reshape(-1, WIDTH)
    regret = rng.normal(size=(size, WIDTH))
    avg = rng.normal(size=(size, WIDTH))
    expected_sums: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for i, r in enumerate(rows.tolist()):  # worker order, left to right
        if r in expected_sums:
            expected_sums[r] = (expected_sums[r][0] + d_regret[i], expected_sums[r][1] + d_avg[i])
        else:
            expected_sums[r] = (d_regret[i].copy(), d_avg[i].copy())
    expected_regret, expected_avg = regret.copy(), avg.copy()
    for r, (s_regret, s_avg) in expected_sums.items():
        expected_regret[r] += s_regret
        expected_avg[r] += s_avg
    slot = np.zeros(size, np.int64)
    union = np.empty(rows.size, np.int64)
    sum_regret = np.empty((rows.size, WIDTH))
    sum_avg = np.empty((rows.size, WIDTH))

    count = merge_changes(rows, d_regret, d_avg, regret, avg, slot, union, sum_regret, sum_avg)

    assert union[:count].tolist() == sorted(expected_sums)
    for k, r in enumerate(union[:count].tolist()):
        assert np.array_equal(sum_regret[k], expected_sums[r][0])  # bit for bit: same order
        assert np.array_equal(sum_avg[k], expected_sums[r][1])
    assert np.array_equal(regret, expected_regret)
    assert np.array_equal(avg, expected_avg)
    assert not slot.any()
