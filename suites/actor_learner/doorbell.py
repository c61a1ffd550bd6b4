"""Waking a learner without waiting for it to wake.

`multiprocessing.Event.set()` looks like a cheap signal, but its `Condition.notify_all`
blocks until every process sleeping in `wait()` has woken and acknowledged. The actor
sets an event per agent after every epoch, the learners it wakes share the other cores,
so the actor, the critical path, waited for the scheduler to run each learner: about
1.6 ms per set on the 2-core machine, 40 % of the actor's wall time
(docs/benchmarks.md, "Actor-learner"). A counting semaphore says the same thing and its
`release()` returns at once.
"""

from __future__ import annotations

from typing import Any


class Doorbell:
    """Rings are counted, so a ring between a waiter's last check and its `wait` is not
    lost; `wait` swallows the rings that piled up while the waiter was busy."""

    def __init__(self, ctx: Any) -> None:
        self._rings = ctx.Semaphore(0)

    def ring(self) -> None:
        self._rings.release()

    def wait(self, timeout: float) -> bool:
        """Block until rung or `timeout` s pass; True when rung."""
        rung = self._rings.acquire(timeout=timeout)
        while self._rings.acquire(False):
            pass
        return rung
