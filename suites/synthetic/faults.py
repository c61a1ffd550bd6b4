"""Faults injected on purpose so the runner's failure paths run on real cells."""

from __future__ import annotations

import os
import time


class InjectedFailure(RuntimeError):
    pass


def hang_forever() -> None:
    """Named so that a stack dump of a hung cell points here."""
    while True:
        time.sleep(1)


def inject(kind: str) -> None:
    if kind == "raise":
        raise InjectedFailure("injected failure (fail=raise)")
    if kind == "hang":
        hang_forever()
    if kind == "exit":
        os._exit(3)
