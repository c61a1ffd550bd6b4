"""selfplay-harness: benchmark and profile parallel game solvers and self-play training."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["load"]

if TYPE_CHECKING:
    from harness.runs.results import load


def __getattr__(name: str) -> Any:
    # `harness.load` imports pandas on first use only: `import harness` (every cell's child
    # process, the CLI's start-up) stays light.
    if name == "load":
        from harness.runs.results import load

        return load
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
