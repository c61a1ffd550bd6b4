"""The row-level work of delta/full sync, as numba loops: one pass over each list of rows.

On a large game a batch changes hundreds of thousands of rows scattered over tables of
tens of megabytes. Every list of rows these kernels walk is in ascending row order, so
each pass moves forward through memory: the prefetcher streams it and each page is
entered once. In first-touch order the same passes cost a cache and TLB miss per row:
3.4x more in all at batch 100000 on the 2 M-information-set variant (docs/benchmarks.md,
"Sorted rows and shared-memory rows"), and a cost that followed how many rows a batch
touched, so delta's rate drifted with the policy's spread. The floating-point operations on each row, and their order, are exactly
what the protocol in worker.py describes, so every backend still gives the same tables.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def sorted_rows(flags, listed, count, out):
    """Write the `count` flagged rows to out[:count] in ascending order and clear their
    flags. `listed[:count]` names them in first-touch order; when they are a large share
    of the table, one scan of the flags is cheaper than sorting the list."""
    if count * 32 > flags.size:
        k = 0
        for r in range(flags.size):
            if flags[r]:
                flags[r] = 0
                out[k] = r
                k += 1
    else:
        out[:count] = np.sort(listed[:count])
        for i in range(count):
            flags[out[i]] = 0


@njit(cache=True, nogil=True)
def take_changes(rows, regret, avg, base_regret, base_avg, d_regret, d_avg):
    """d[i] = table[rows[i]] - base[rows[i]], then base[rows[i]] = table[rows[i]]."""
    width = regret.shape[1]
    for i in range(rows.size):
        r = rows[i]
        for a in range(width):
            d_regret[i, a] = regret[r, a] - base_regret[r, a]
            d_avg[i, a] = avg[r, a] - base_avg[r, a]
            base_regret[r, a] = regret[r, a]
            base_avg[r, a] = avg[r, a]


@njit(cache=True, nogil=True)
def apply_update(rows, d_regret, d_avg, own_rows, own_regret, own_avg, regret, avg, base_regret, base_avg):
    """Add the merged change, take back the worker's own part of it, and re-base the rows."""
    width = regret.shape[1]
    for i in range(rows.size):
        r = rows[i]
        for a in range(width):
            regret[r, a] += d_regret[i, a]
            avg[r, a] += d_avg[i, a]
    for j in range(own_rows.size):
        r = own_rows[j]
        for a in range(width):
            regret[r, a] -= own_regret[j, a]
            avg[r, a] -= own_avg[j, a]
    for i in range(rows.size):
        r = rows[i]
        for a in range(width):
            base_regret[r, a] = regret[r, a]
            base_avg[r, a] = avg[r, a]


@njit(cache=True, nogil=True)
def merge_changes(rows, d_regret, d_avg, regret, avg, slot, union, sum_regret, sum_avg):
    """Sum the changes per row (rows concatenated in worker order, ascending and distinct
    within a worker), add each sum to the tables, and return how many distinct rows there
    were: union[:count] lists them in ascending order and sum_*[:count] hold their sums,
    each added up in worker order. `slot` is all zeros on entry and on exit."""
    width = regret.shape[1]
    count = 0
    for i in range(rows.size):
        r = rows[i]
        if slot[r] == 0:
            slot[r] = 1
            union[count] = r
            count += 1
    if count * 32 > slot.size:
        k = 0
        for r in range(slot.size):
            if slot[r] != 0:
                union[k] = r
                k += 1
    else:
        union[:count] = np.sort(union[:count])
    for k in range(count):
        slot[union[k]] = -(k + 1)  # negative: no change summed into this row yet
    for i in range(rows.size):
        r = rows[i]
        k = slot[r]
        if k < 0:
            k = -k - 1
            slot[r] = k + 1
            for a in range(width):
                sum_regret[k, a] = d_regret[i, a]
                sum_avg[k, a] = d_avg[i, a]
        else:
            k -= 1
            for a in range(width):
                sum_regret[k, a] += d_regret[i, a]
                sum_avg[k, a] += d_avg[i, a]
    for k in range(count):
        r = union[k]
        slot[r] = 0
        for a in range(width):
            regret[r, a] += sum_regret[k, a]
            avg[r, a] += sum_avg[k, a]
    return count


def empty_rows(width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.zeros(0, np.int64), np.zeros((0, width)), np.zeros((0, width))
