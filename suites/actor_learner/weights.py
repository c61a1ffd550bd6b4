"""Weights published from learners to the actor through shared memory, with versions.

One flat float32 slot per agent and one int64 version per agent. A learner copies its
flattened parameters into its slot and stamps the version under that agent's lock; the
actor compares versions without the lock (one aligned load) and copies a slot, under
the lock, only when its version changed. Nothing is pickled per publish (the seed sent a
pickled state dict every 10 steps). A lock rather than a seqlock: the copy is a few
microseconds and the actor takes it only after a publish, so contention is negligible,
and it needs no reasoning about memory ordering on weakly ordered CPUs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

UNPUBLISHED = -1


class WeightBoard:
    def __init__(self, agents: int, size: int, ctx: Any) -> None:
        self.agents = agents
        self.size = size
        self._raw = ctx.RawArray("f", agents * size)
        self._raw_versions = ctx.RawArray("q", agents)
        self._locks = [ctx.Lock() for _ in range(agents)]
        self._views()
        self.versions[:] = UNPUBLISHED

    def _views(self) -> None:
        self._slots = np.frombuffer(self._raw, dtype=np.float32).reshape(self.agents, self.size)
        self.versions = np.frombuffer(self._raw_versions, dtype=np.int64)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_slots", "versions")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._views()

    def publish(self, agent: int, flat: np.ndarray, version: int) -> None:
        """Copy `flat` into the agent's slot and stamp `version` (must not go backwards)."""
        if flat.shape != (self.size,):
            raise ValueError(f"expected {self.size} weights, got shape {flat.shape}")
        with self._locks[agent]:
            if version < self.versions[agent]:
                raise ValueError(f"agent {agent}: version {version} < published {self.versions[agent]}")
            self._slots[agent] = flat
            self.versions[agent] = version

    def read(self, agent: int, out: np.ndarray) -> int:
        """Copy the agent's weights into `out`; returns their version."""
        with self._locks[agent]:
            out[:] = self._slots[agent]
            return int(self.versions[agent])
