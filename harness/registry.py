"""Finding suites through the `harness.suites` entry-point group.

The built-in suites register the same way as a team's own package would, so nothing in
the harness names a suite.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import entry_points

from harness.errors import UserError
from harness.probe import Suite

GROUP = "harness.suites"


@cache
def discover() -> tuple[dict[str, Suite], dict[str, str]]:
    """Loaded suites by name, and the suites whose entry point failed to load with why."""
    suites: dict[str, Suite] = {}
    broken: dict[str, str] = {}
    for ep in entry_points(group=GROUP):
        try:
            obj = ep.load()
        except Exception as exc:  # a broken third-party suite must not take the CLI down
            broken[ep.name] = f"{type(exc).__name__}: {exc}"
            continue
        if not isinstance(obj, Suite):
            broken[ep.name] = f"{ep.value} is a {type(obj).__name__}, not a harness.probe.Suite"
            continue
        suites[ep.name] = obj
    return suites, broken


def get_suite(name: str) -> Suite:
    suites, broken = discover()
    if name in suites:
        return suites[name]
    if name in broken:
        raise UserError(f"suite {name!r} could not be loaded: {broken[name]}")
    raise UserError(f"unknown suite {name!r}; available: {', '.join(sorted(suites)) or 'none'}")
