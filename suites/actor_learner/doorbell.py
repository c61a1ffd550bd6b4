"""Waking a learner without waiting for it to wake.

`multiprocessing.Event.set()` looks like a cheap signal, but its `Condition.notify_all`
blocks until every process sleeping in `wait()` has woken and acknowledged. The actor
sets an event per agent after every epoch, the learners it wakes share the other cores,
so the actor, the critical path, waited for the scheduler to run each learner: about
1.6 ms per set on the 2-core machine, 40 % of the actor's wall time
(docs/benchmarks.md, "Actor-learner"). A counting semaphore says the same thing and its
`release()` returns at once.

Both bells have one interface, `ring()` for the actor and `wait(timeout, ready)` for a
learner, so `wait=event` and the `wait=mp_event` pitfall differ only here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Doorbell:
    """Rings are counted, so a ring between a waiter's last check and its `wait` is not
    lost; `wait` swallows the rings that piled up while the waiter was busy."""

    def __init__(self, ctx: Any) -> None:
        self._rings = ctx.Semaphore(0)

    def ring(self) -> None:
        self._rings.release()

    def wait(self, timeout: float, ready: Callable[[], bool] | None = None) -> bool:
        """Block until rung or `timeout` s pass; True when rung. (`ready` is not needed:
        no ring is lost, so there is nothing to re-check.)"""
        rung = self._rings.acquire(timeout=timeout)
        while self._rings.acquire(False):
            pass
        return rung


class EventBell:
    """A `multiprocessing.Event` behind the same interface: `ring()` is `set()`, which
    blocks until every sleeping waiter has woken."""

    def __init__(self, ctx: Any) -> None:
        self._event = ctx.Event()

    def ring(self) -> None:
        self._event.set()

    def wait(self, timeout: float, ready: Callable[[], bool] | None = None) -> bool:
        """Clear, re-check `ready`, then wait: a set() between the two is not lost."""
        self._event.clear()
        if ready is not None and ready():
            return True
        return self._event.wait(timeout)


def bell(wait: str, ctx: Any) -> Doorbell | EventBell:
    """The bell for `Params.wait` ("event" or "mp_event")."""
    return EventBell(ctx) if wait == "mp_event" else Doorbell(ctx)
