"""Where cells run: `local` (one after another on this machine) or `ray` (a cluster)."""

from __future__ import annotations

from harness.errors import UserError
from harness.running.executors.base import Executor

EXECUTORS = ("local", "ray")


def get_executor(
    name: str, address: str | None = None, attempts: int | None = None, grace_s: float | None = None
) -> Executor:
    """`attempts` and `grace_s` are the Ray executor's (harness.running.executors.ray): the
    attempts of a cell-repeat whose node is lost, and the grace beyond a cell's longest time
    (None: its defaults)."""
    if name == "local":
        from harness.running.executors.local import LocalExecutor

        return LocalExecutor()
    if name == "ray":
        try:
            from harness.running.executors.ray import (
                DEFAULT_ATTEMPTS,
                DEFAULT_GRACE_S,
                RayExecutor,
                prepare_environment,
            )

            attempts = DEFAULT_ATTEMPTS if attempts is None else attempts
            grace_s = DEFAULT_GRACE_S if grace_s is None else grace_s
            prepare_environment(grace_s)
            import ray  # noqa: F401 - the extra is there
        except ImportError as exc:
            raise UserError(f'--executor ray needs Ray: pip install -e ".[ray]" ({exc})') from None
        return RayExecutor(address=address, attempts=attempts, grace_s=grace_s)
    raise UserError(f"unknown executor {name!r}; allowed: {', '.join(EXECUTORS)}")
