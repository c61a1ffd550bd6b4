"""Short, stable names for cells: the params that differ from their suite's defaults."""

from __future__ import annotations

from functools import cache
from typing import Any

from harness.errors import UserError


@cache
def suite_defaults(suite: str) -> dict[str, Any] | None:
    from harness.registry import get_suite

    try:
        model = get_suite(suite).params
    except UserError:
        return None  # a baseline may name a suite this checkout does not have
    return model().model_dump(mode="json")


def cell_label(suite: str, params: dict[str, Any]) -> str:
    """'kind=spin,workers=2': the params not at their defaults (all of them when the suite
    is not installed), sorted, so the same cell gets the same label in every run."""
    defaults = suite_defaults(suite)
    shown = {k: v for k, v in params.items() if defaults is None or defaults.get(k, object()) != v}
    return ",".join(f"{k}={v}" for k, v in sorted(shown.items())) or "defaults"
