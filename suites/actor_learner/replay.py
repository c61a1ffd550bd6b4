"""A replay ring buffer in shared memory: one writer (the actor), one reader (a learner).

Rows are fixed-width float32 transitions in a `RawArray`; a lock guards every write and
every sample, so a reader never sees a row half written (a torn transition). The total
number of rows ever written sits in a shared int64 that readers may peek at without
the lock (an aligned 8-byte load is atomic), which is all waiting and throttling need.
The seed this suite reproduces sampled without the lock.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class ReplayRing:
    """`capacity` rows of `width` float32 values; the oldest row is overwritten first."""

    def __init__(self, capacity: int, width: int, ctx: Any) -> None:
        if capacity < 1 or width < 1:
            raise ValueError(f"capacity and width must be >= 1, got {capacity} and {width}")
        self.capacity = capacity
        self.width = width
        self._raw = ctx.RawArray("f", capacity * width)
        self._raw_written = ctx.RawArray("q", 1)
        self._lock = ctx.Lock()
        self._views()

    def _views(self) -> None:
        self._rows = np.frombuffer(self._raw, dtype=np.float32).reshape(self.capacity, self.width)
        self._written = np.frombuffer(self._raw_written, dtype=np.int64)

    # pickled only when a process is started (spawn/forkserver): ship the shared objects
    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_rows", "_written")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._views()

    @property
    def written(self) -> int:
        """Rows written since creation (monotonic; read without the lock)."""
        return int(self._written[0])

    def __len__(self) -> int:
        return min(self.written, self.capacity)

    def write(self, rows: np.ndarray) -> None:
        """Append rows (shape [n, width]); when n exceeds capacity only the last rows survive."""
        n = len(rows)
        if n == 0:
            return
        if rows.ndim != 2 or rows.shape[1] != self.width:
            raise ValueError(f"rows must have shape [n, {self.width}], got {rows.shape}")
        with self._lock:
            written = int(self._written[0])
            if n > self.capacity:
                rows, written, n = rows[n - self.capacity :], written + n - self.capacity, self.capacity
            start = written % self.capacity
            first = min(n, self.capacity - start)
            self._rows[start : start + first] = rows[:first]
            if first < n:
                self._rows[: n - first] = rows[first:]
            self._written[0] = written + n

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
        """`n` rows drawn uniformly with replacement (a copy) and the written count at that moment."""
        with self._lock:
            written = int(self._written[0])
            size = min(written, self.capacity)
            if size == 0:
                raise ValueError("cannot sample from an empty replay buffer")
            rows = self._rows[rng.integers(0, size, n)]
        return rows, written
