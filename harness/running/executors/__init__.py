"""Where cells run: `local` (one after another on this machine) or `ray` (a cluster)."""

from __future__ import annotations

from harness.errors import UserError
from harness.running.executors.base import Executor

EXECUTORS = ("local", "ray")


def get_executor(name: str, address: str | None = None, attempts: int = 3, grace_s: float = 30.0) -> Executor:
    """`attempts` and `grace_s` are the Ray executor's (harness.running.executors.ray): the
    attempts of a cell-repeat whose node is lost, and the grace beyond a cell's longest time."""
    if name == "local":
        from harness.running.executors.local import LocalExecutor

        return LocalExecutor()
    if name == "ray":
        try:
            from harness.running.executors.ray import RayExecutor, prepare_environment

            prepare_environment(grace_s)
            import ray  # noqa: F401 - the extra is there
        except ImportError as exc:
            raise UserError(f'--executor ray needs Ray: pip install -e ".[ray]" ({exc})') from None
        return RayExecutor(address=address, attempts=attempts, grace_s=grace_s)
    raise UserError(f"unknown executor {name!r}; allowed: {', '.join(EXECUTORS)}")
