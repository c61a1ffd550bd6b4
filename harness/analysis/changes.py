"""Where a metric's history changed: E-divisive means with a permutation test (Matteson
and James 2014), the method Hunter (DataStax) and MongoDB's CI use on nightly series.

A series is one machine's and one cell's per-run medians in time order. The energy
statistic of a split compares the distances across it with those within each side (the
second side may end early, so a level that goes and comes back is found too); the best
split of a segment is kept when no more than `alpha` of random re-orderings of the
segment reach as high a best split (the p-value, with the seeded permutations counted in),
and each side is searched again. Each side must hold `min_size` runs, so one odd run is
not a change and a series needs at least 2 x min_size runs to show one. Runs of different
machines are never mixed: their levels differ by more than most regressions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MIN_SIZE = 3
ALPHA = 0.05
PERMUTATIONS = 199
SEED = 0


@dataclass(frozen=True)
class Change:
    index: int  # first run of the new level
    before: float  # median of the runs since the previous change
    after: float  # median of the runs up to the next change
    p_value: float

    @property
    def relative(self) -> float:
        return self.after / self.before - 1 if self.before else float("nan")


def _best_split(x: np.ndarray, min_size: int) -> tuple[int, float]:
    """(tau, statistic): the split of x that maximizes the energy statistic between x[:tau]
    and x[tau:kappa] over every kappa (Matteson and James's e.divisive; letting the second
    side end before the segment does finds a level that goes and comes back)."""
    n = x.size
    dist = np.abs(x[:, None] - x[None, :])
    cum = np.zeros((n + 1, n + 1))
    cum[1:, 1:] = dist.cumsum(0).cumsum(1)

    def block(a, b, c, d):  # sum of dist[a:b, c:d]
        return cum[b, d] - cum[a, d] - cum[b, c] + cum[a, c]

    tau, kappa = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    valid = (tau >= min_size) & (kappa - tau >= min_size)
    if not valid.any():
        return -1, -np.inf
    t, k = tau[valid], kappa[valid]
    m, r = t.astype(float), (k - t).astype(float)
    zero = np.zeros_like(t)
    across = block(zero, t, t, k) / (m * r)
    within_a = block(zero, t, zero, t) / (m * (m - 1))
    within_b = block(t, k, t, k) / (r * (r - 1))
    q = (m * r / (m + r)) * (2 * across - within_a - within_b)
    best = int(np.argmax(q))
    return int(t[best]), float(q[best])


def change_points(
    values: Sequence[float],
    min_size: int = MIN_SIZE,
    alpha: float = ALPHA,
    permutations: int = PERMUTATIONS,
    seed: int = SEED,
) -> list[Change]:
    """The significant changes of level in `values`, in order."""
    x = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    found: list[tuple[int, float]] = []

    def search(lo: int, hi: int) -> None:
        segment = x[lo:hi]
        if segment.size < 2 * min_size or np.ptp(segment) == 0:
            return
        k, q = _best_split(segment, min_size)
        hits = sum(_best_split(rng.permutation(segment), min_size)[1] >= q for _ in range(permutations))
        p = (hits + 1) / (permutations + 1)
        if p > alpha:
            return
        found.append((lo + k, p))
        search(lo, lo + k)
        search(lo + k, hi)

    search(0, x.size)
    found.sort()
    edges = [0, *(i for i, _ in found), x.size]
    return [
        Change(i, float(np.median(x[edges[j] : i])), float(np.median(x[i : edges[j + 2]])), p)
        for j, (i, p) in enumerate(found)
    ]
