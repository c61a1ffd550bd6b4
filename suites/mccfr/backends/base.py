"""What an mccfr backend is: where a batch's iterations run, and how its tables meet.

The driver (driver.py) builds a backend as `Backend(game, workers, sync, seed, start_method)`
with `workers` already cut to those that get a share of a batch, calls `start()` once, then
keeps `staleness + 1` batches in flight through two calls:

- `submit(shares, batch)` hands worker w `shares[w]` iterations of batch `batch` and
  returns at once. A worker seeds its iterations with (seed, batch, w), so a run depends
  only on the seed, the worker count and the staleness. `shares` may be shorter than the
  pool (the last batch of a fixed-work run): the workers without a share still receive the
  merged updates.
- `collect()` waits for the oldest submitted batch, merges what its workers report into the
  global tables `regret` and `avg` (in worker order, so the result is deterministic) and
  returns its `BatchResult`.

`close()` always runs (in a `finally:`) and must leave no process, thread or shared-memory
block behind. After the last `collect()`, `regret` and `avg` hold the solution the driver
evaluates. A backend with `single_worker` runs one worker in the main process on the global
tables: the driver ignores `workers`, keeps one batch in flight and reports no sync metrics.

Refuse an unsupported combination in `__init__` with a `SuiteError` (one line, the user's
input). Register a new backend in `backends/__init__.py` (or, from outside the suite, with
`BACKENDS.add` in a HARNESS_PLUGINS module).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    import numpy as np

    from suites.mccfr.games import FlatGame


@dataclass
class BatchResult:
    requested: int
    done: int
    nodes: int
    touched: int
    sync_bytes: int  # replies in plus the update out, once per worker it went to
    busy_s: float  # kernel time summed over the batch's workers
    merge_s: float  # main-process time folding the replies into the global tables


class Backend:
    """The protocol; subclass it (or match it) and register the class."""

    single_worker: ClassVar[bool] = False  # one worker on the global tables: nothing to sync

    regret: np.ndarray  # the global tables, [infosets, MAX_ACTIONS]
    avg: np.ndarray
    workers_started: int = 0  # reported as a metric
    start_method: str = "none"  # how the workers started (fork, spawn, thread, ray), reported
    torch_in_workers: int = 0  # workers that had torch loaded (the driver warns)

    def __init__(self, game: FlatGame, workers: int, sync: str, seed: int, start_method: str) -> None:
        raise NotImplementedError

    def start(self) -> None:
        """Start the workers (and load the compiled kernel) before the clock's warm-up."""
        raise NotImplementedError

    def submit(self, shares: list[int], batch: int) -> None:
        """Hand out one batch; return without waiting for it."""
        raise NotImplementedError

    def collect(self) -> BatchResult:
        """Wait for the oldest batch in flight, merge it into `regret` and `avg`."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop and reap every worker; free what `start` allocated. Safe after a failed start."""
        raise NotImplementedError
