"""Where cells run: `local` (one after another on this machine) or `ray` (a cluster)."""

from __future__ import annotations

from harness.errors import UserError
from harness.running.executors.base import Executor

EXECUTORS = ("local", "ray")


def get_executor(name: str, address: str | None = None) -> Executor:
    if name == "local":
        from harness.running.executors.local import LocalExecutor

        return LocalExecutor()
    if name == "ray":
        try:
            from harness.running.executors.ray import RayExecutor
        except ImportError as exc:
            raise UserError(f'--executor ray needs Ray: pip install -e ".[ray]" ({exc})') from None
        return RayExecutor(address=address)
    raise UserError(f"unknown executor {name!r}; allowed: {', '.join(EXECUTORS)}")
