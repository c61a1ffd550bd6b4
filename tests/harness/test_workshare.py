import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.model.workshare import resolve_workers, split_work, usable_cores


@given(total=st.integers(0, 100_000), workers=st.integers(1, 1024))
def test_no_unit_is_lost_and_no_idle_worker_is_started(total, workers):
    shares = split_work(total, workers)
    assert sum(shares) == total
    assert len(shares) == min(total, workers)
    assert all(s > 0 for s in shares)
    assert max(shares, default=0) - min(shares, default=0) <= 1
    assert shares == sorted(shares, reverse=True)  # the first total % workers get one more


def test_the_integer_division_trap():
    assert split_work(100, 128) == [1] * 100
    assert split_work(10, 3) == [4, 3, 3]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        split_work(-1, 2)
    with pytest.raises(ValueError):
        split_work(5, 0)
    with pytest.raises(ValueError):
        resolve_workers(-1)


def test_zero_workers_means_one_per_core():
    assert resolve_workers(0) == usable_cores() >= 1
    assert resolve_workers(7) == 7
