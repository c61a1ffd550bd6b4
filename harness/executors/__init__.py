"""Where cells run: `local` (one after another on this machine) or `ray` (a cluster)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from harness.matrix import Cell
from harness.store import RunStore

Job = tuple[Cell, int]  # a cell and its repeat index
OnStart = Callable[[Cell, int], None]
OnRecord = Callable[[dict[str, Any]], None]


class Executor(Protocol):
    def run(self, jobs: list[Job], store: RunStore, on_start: OnStart, on_record: OnRecord) -> None:
        """Run every job; call on_record with each finished record (the driver stores it)."""
        ...


def get_executor(name: str, address: str | None = None) -> Executor:
    from harness.errors import UserError

    if name == "local":
        from harness.executors.local import LocalExecutor

        return LocalExecutor()
    if name == "ray":
        try:
            from harness.executors.ray import RayExecutor
        except ImportError as exc:
            raise UserError(f'--executor ray needs Ray: pip install -e ".[ray]" ({exc})') from None
        return RayExecutor(address=address)
    raise UserError(f"unknown executor {name!r}; allowed: local, ray")
