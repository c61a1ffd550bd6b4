"""The one factory of made-up records for tests: exact numbers, no cell has to run."""

from __future__ import annotations

from typing import Any

from harness.runs.record import Record


def make_record(
    cell_id: str = "c",
    metrics: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    *,
    suite: str = "demo",
    repeat: int = 0,
    status: str = "ok",
    reason: str | None = None,
    work: int | None = None,
    duration: float | None = 5.0,
    **extra: Any,
) -> Record:
    """A record as the runner would store it; a failed one gets a reason unless given."""
    if status != "ok" and reason is None:
        reason = "injected failure"
    return Record(
        id=cell_id,
        suite=suite,
        params=dict(params or {}),
        repeat=repeat,
        status=status,
        reason=reason,
        started="2026-01-01T00:00:00Z",
        ended="2026-01-01T00:00:01Z",
        budget={"duration": None if work is not None else duration, "warmup": 0.0, "work": work, "timeout": 60},
        metrics=dict(metrics or {}),
        **extra,
    )
