"""Splitting a fixed amount of work over workers without losing any of it.

`total // workers` per worker silently drops `total % workers` units and gives
every worker zero when workers > total; the first of the classic failures (docs/architecture.md).
Every suite splits its work through `split_work` so that cannot happen.
"""

from __future__ import annotations

import os


def usable_cores() -> int:
    """Cores this process may run on (affinity-aware, unlike os.cpu_count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def resolve_workers(workers: int) -> int:
    """`workers = 0` means one per usable core."""
    if workers < 0:
        raise ValueError(f"workers must be >= 0 (0 = one per core), got {workers}")
    return workers or usable_cores()


def split_work(total: int, workers: int) -> list[int]:
    """Shares of `total` units for up to `workers` workers, none lost.

    The first `total % workers` workers get one unit more than the others, and workers
    whose share would be zero are left out: the result's length is how many workers to
    start, and its sum is always `total`.
    """
    if total < 0:
        raise ValueError(f"total work must be >= 0, got {total}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    base, extra = divmod(total, workers)
    shares = [base + 1 if i < extra else base for i in range(workers)]
    return [share for share in shares if share > 0]
